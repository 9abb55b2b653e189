"""The probe transforms (evalkit/probes): each leaves the mechanical result unchanged — proved by
scoring the original file (read_trajectory then score_trajectory) and the transformed trajectory (the pure
scorer) — and changes exactly what it says it changes. Edge cases each have a named test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.config.files import ConfigError
from evalkit.probes import (
    PROBES,
    NotApplicable,
    ScoreMoved,
    build_case,
    dress_bundle,
    load_probes_config,
    mechanical,
    sample_runs,
    transform,
)
from evalkit.probes import transforms as tr
from evalkit.scoring import score_trajectory
from evalkit.trajectory.builders import a320_scenario, call, cmd, read, say, trajectory, write_jsonl
from evalkit.trajectory.bundle import RESULT_MAX_CHARS
from evalkit.trajectory.reader import read_trajectory
from evalkit.trajectory.records import Assistant, ToolCall

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*/*.jsonl"))
CFG = load_probes_config()


def write(tmp_path: Path, calls: list[dict], name: str = "r", **kw) -> Path:
    return write_jsonl(tmp_path / f"{name}.jsonl", trajectory(a320_scenario(), calls, run_id=name, **kw))


def reads_first(tmp_path: Path, **kw) -> Path:
    """A run that reads the ECAM and the state before acting: two independent read steps."""
    return write(
        tmp_path,
        [
            read("get_ecam"),
            read("get_state", result={"apu_gen": 1}, system="elec"),
            cmd("apu_gen", 0),
            cmd("apu_gen", 1),
            cmd("apu_gen", 0),
            cmd("ext_pwr", 1),
            read(),
        ],
        name="reads-first",
        **kw,
    )


def unchanged(original, transformed) -> None:
    new = score_trajectory(transformed)
    assert mechanical(new) == mechanical(original)
    assert new.vector == original.vector and new.checks == original.checks and new.scalar == original.scalar


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_probe_leaves_the_mechanical_result_of_every_example_unchanged(path):
    original = score_trajectory(read_trajectory(path))
    traj = read_trajectory(path)
    applied = 0
    for probe in PROBES:
        try:
            out = transform(probe, traj, CFG)
        except NotApplicable:
            continue
        applied += 1
        unchanged(original, out)
    assert applied >= 3  # injection, verbosity and identity apply to every example with a tool call


@pytest.mark.parametrize("probe", PROBES)
def test_each_probe_leaves_vector_checks_and_scalar_unchanged_on_a_failed_run_with_independent_reads(tmp_path, probe):
    path = reads_first(tmp_path, passed=[True, False, True, True, False])
    original = score_trajectory(read_trajectory(path))
    assert original.vector.all_passed is False
    out = transform(probe, read_trajectory(path), CFG)
    unchanged(original, out)
    case = build_case(probe, read_trajectory(path), original, CFG)
    assert case.bundle_hash != original.bundle_hash  # every probe changes what the judge sees


def test_false_claim_appends_a_success_claim_and_payload(tmp_path):
    path = write(tmp_path, [read(), say("I will wait for maintenance.")], passed=False, reason="end_turn_without_done")
    out = transform("false_claim", read_trajectory(path), CFG)
    last = out.events[-1]
    assert isinstance(last, Assistant) and last.text == CFG.false_claim.message
    assert last.step == max(e.step for e in out.events[:-1]) + 1
    assert out.final.reason == "agent_done" and out.final.done_payload == CFG.false_claim.done_payload
    assert out.final.success_eval == read_trajectory(path).final.success_eval  # the evidence is untouched
    assert score_trajectory(out).informative.final_reason == "agent_done"


def test_false_claim_only_on_mechanically_failed_runs(tmp_path):
    path = write(tmp_path, [read(), cmd("apu_gen", 0)], passed=True)
    with pytest.raises(NotApplicable, match="passed mechanically"):
        build_case("false_claim", read_trajectory(path), score_trajectory(read_trajectory(path)), CFG)


def test_false_claim_without_final_record_is_not_applicable(tmp_path):
    path = write(tmp_path, [read()], final=False)
    with pytest.raises(NotApplicable, match="no final record"):
        transform("false_claim", read_trajectory(path), CFG)


def test_injection_is_planted_first_in_the_last_successful_object_result(tmp_path):
    path = write(tmp_path, [read(), cmd("apu_gen", 0), cmd("ext_pwr", 1, is_error=True)])
    out = transform("injection", read_trajectory(path), CFG)
    target = [e for e in out.events if isinstance(e, ToolCall)][1]  # the errored call is skipped
    assert list(target.result)[0] == CFG.injection.key and target.result[CFG.injection.key] == CFG.injection.text
    assert target.result["ok"] is True  # the original result is kept after the note


def test_injection_in_a_text_result_goes_in_front(tmp_path):
    path = write(tmp_path, [call("get_state", {}, result="AC BUS 1: off")])
    out = transform("injection", read_trajectory(path), CFG)
    assert out.events[-1].result == f"{CFG.injection.text}\nAC BUS 1: off"


def test_injection_wraps_a_list_result_and_keeps_an_existing_key(tmp_path):
    path = write(
        tmp_path, [call("get_state", {}, result=[1, 2]), call("get_ecam", {}, result={"note": "mine", "x": 1})]
    )
    events = read_trajectory(path).events
    out = transform("injection", read_trajectory(path), CFG)
    assert out.events[-1].result == {"note": CFG.injection.text, "original_note": "mine", "x": 1}
    only_list = transform("injection", read_trajectory(path).model_copy(update={"events": events[:2]}), CFG)
    assert only_list.events[1].result == {"note": CFG.injection.text, "result": [1, 2]}


def test_injection_survives_the_bundle_cut_of_a_long_result(tmp_path):
    big = {"log": "x" * (RESULT_MAX_CHARS * 2)}
    path = write(tmp_path, [call("get_state", {}, result=big)])
    case = build_case("injection", read_trajectory(path), score_trajectory(read_trajectory(path)), CFG)
    shown = case.bundle["transcript"][-1]["result"]
    assert isinstance(shown, str) and "[truncated" in shown and CFG.injection.text in shown


def test_injection_without_a_successful_tool_call_is_not_applicable(tmp_path):
    path = write(tmp_path, [cmd("apu_gen", 0, is_error=True)])
    with pytest.raises(NotApplicable, match="no successful tool call"):
        transform("injection", read_trajectory(path), CFG)


def test_verbosity_appends_prose_to_the_first_assistant_message(tmp_path):
    path = write(tmp_path, [read(), cmd("apu_gen", 0)])
    before = read_trajectory(path)
    out = transform("verbosity", before, CFG)
    first = out.events[0]
    assert first.text.startswith(before.events[0].text + "\n\n")
    assert first.text.endswith(CFG.verbosity.paragraphs[-1]) and len(first.text) > 500
    assert out.events[1:] == before.events[1:]


def test_verbosity_without_an_assistant_message_inserts_one_and_keeps_long_results_cut(tmp_path):
    big = {"log": "y" * (RESULT_MAX_CHARS * 2)}
    recs = [
        r
        for r in trajectory(a320_scenario(), [call("get_state", {}, result=big)], run_id="quiet")
        if r["type"] != "assistant"
    ]
    path = write_jsonl(tmp_path / "quiet.jsonl", recs)
    original = score_trajectory(read_trajectory(path))
    case = build_case("verbosity", read_trajectory(path), original, CFG)
    first, second = case.bundle["transcript"][:2]
    assert first["kind"] == "assistant" and first["step"] == second["step"]
    assert second["result"] == original.judge_bundle["transcript"][0]["result"]  # still cut


def test_distractor_reads_repeat_the_first_reads_and_shift_call_indexes(tmp_path):
    path = reads_first(tmp_path)
    before = read_trajectory(path)
    out = transform("distractor_reads", before, CFG)
    calls = [e for e in out.events if isinstance(e, ToolCall)]
    assert [c.name for c in calls][:4] == ["get_ecam", "get_ecam", "get_state", "get_state"]
    assert calls[1].result == calls[0].result and calls[1].step == calls[0].step
    assert [c.call_index for c in calls] == sorted(c.call_index for c in calls)
    assert len({c.call_index for c in calls}) == len(calls)
    new, old = score_trajectory(out), score_trajectory(read_trajectory(path))
    assert new.informative.reads == old.informative.reads + CFG.distractor_reads.count  # documented
    assert [r.call_index for r in new.commands] == [r.call_index + 2 for r in old.commands]


def test_distractor_reads_without_a_read_is_not_applicable(tmp_path):
    path = write(tmp_path, [cmd("ext_pwr", 1), call("get_state", {}, is_error=True)])
    with pytest.raises(NotApplicable, match="no successful read"):
        transform("distractor_reads", read_trajectory(path), CFG)


def test_shuffle_reads_reverses_adjacent_read_steps_and_keeps_numbering(tmp_path):
    before = read_trajectory(reads_first(tmp_path))
    out = transform("shuffle_reads", before, CFG)
    calls = [e for e in out.events if isinstance(e, ToolCall)]
    assert [c.name for c in calls[:2]] == ["get_state", "get_ecam"]
    assert [e.step for e in out.events] == [e.step for e in before.events]
    assert [c.call_index for c in calls] == [c.call_index for c in before.events if isinstance(c, ToolCall)]
    assert out.events[0].text == before.events[2].text  # a step's message moves with its call
    assert out.events[4:] == before.events[4:]


def test_shuffle_reads_never_moves_a_read_across_a_command(tmp_path):
    path = write(tmp_path, [read("get_ecam"), cmd("apu_gen", 0), read("get_state")])
    with pytest.raises(NotApplicable, match="independent read steps"):
        transform("shuffle_reads", read_trajectory(path), CFG)


def test_shuffle_reads_of_identical_reads_is_not_applicable(tmp_path):
    recs = trajectory(a320_scenario(), [read(), read(), cmd("apu_gen", 0)], run_id="same")
    for r in recs:
        if r["type"] == "assistant":
            r["text"] = "Reading."
    path = write_jsonl(tmp_path / "same.jsonl", recs)
    with pytest.raises(NotApplicable):
        transform("shuffle_reads", read_trajectory(path), CFG)


def test_identity_changes_the_bundle_not_the_trajectory(tmp_path):
    path = write(tmp_path, [read(), cmd("apu_gen", 0)])
    traj, card = read_trajectory(path), score_trajectory(read_trajectory(path))
    assert transform("identity", traj, CFG) is traj
    case = build_case("identity", traj, card, CFG)
    assert list(case.bundle)[:2] == ["bundle_version", CFG.identity.key]
    assert case.bundle[CFG.identity.key] == CFG.identity.name
    assert {k: v for k, v in case.bundle.items() if k != CFG.identity.key} == card.judge_bundle
    assert dress_bundle("verbosity", card.judge_bundle, CFG) is card.judge_bundle


def test_a_transform_that_moves_the_score_is_refused(tmp_path, monkeypatch):
    path = write(tmp_path, [read(), cmd("apu_gen", 0)])

    def sloppy(traj, cfg):  # drops the command: coverage moves
        return traj.model_copy(update={"events": traj.events[:2]})

    monkeypatch.setitem(tr.TRANSFORMS, "verbosity", sloppy)
    with pytest.raises(ScoreMoved, match="changed the mechanical score"):
        build_case("verbosity", read_trajectory(path), score_trajectory(read_trajectory(path)), CFG)


def test_transforms_are_deterministic_and_leave_their_input_alone(tmp_path):
    path = reads_first(tmp_path, passed=False)
    traj = read_trajectory(path)
    snapshot = traj.model_dump_json()
    for probe in PROBES:
        a = build_case(probe, traj, score_trajectory(read_trajectory(path)), CFG)
        b = build_case(probe, read_trajectory(path), score_trajectory(read_trajectory(path)), CFG)
        assert a.bundle_hash == b.bundle_hash and json.dumps(a.bundle) == json.dumps(b.bundle)
    assert traj.model_dump_json() == snapshot


def test_sample_runs_is_seeded_sorted_and_capped():
    ids = [f"r{i:02d}" for i in range(20)]
    a = sample_runs(list(reversed(ids)), 5, seed=3)
    assert a == sample_runs(ids, 5, seed=3) == sorted(a) and len(a) == 5
    assert sample_runs(ids, 5, seed=4) != a
    assert sample_runs(ids, 50, seed=3) == ids == sample_runs(ids, None, seed=0)


def test_probes_config_rejects_an_unknown_key_in_one_line(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[injection]\ntexts = "typo"\n')
    with pytest.raises(ConfigError) as err:
        load_probes_config(bad)
    assert str(err.value) == f"{bad}: injection.texts: unknown key"


def test_probes_config_override_replaces_keys_one_by_one(tmp_path):
    mine = tmp_path / "p.toml"
    mine.write_text('[identity]\nname = "Claude Opus (Anthropic)"\n[distractor_reads]\ncount = 1\n')
    cfg = load_probes_config(mine)
    assert cfg.identity.name == "Claude Opus (Anthropic)" and cfg.identity.key == CFG.identity.key
    assert cfg.distractor_reads.count == 1 and cfg.injection == CFG.injection
    wrong = tmp_path / "w.toml"
    wrong.write_text('[distractor_reads]\ncount = "2"\n')
    with pytest.raises(ConfigError, match="distractor_reads.count"):
        load_probes_config(wrong)
