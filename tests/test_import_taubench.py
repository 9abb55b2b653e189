"""tau-bench importer: mapping, edge cases of issue 5, and import → score → aggregate end to end."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from importer_helpers import cards_by_run, import_ok

from evalkit.aggregate.groups import aggregate
from evalkit.importers import ImportFormatError, import_files
from evalkit.importers.formats.taubench import IMPORTER, infer_domain
from evalkit.scoring import score_trajectory
from evalkit.trajectory.reader import read_trajectory

FIX = Path(__file__).parent / "fixtures" / "taubench"
AIRLINE = FIX / "airline_results.json"
RETAIL = FIX / "retail_results.json"
BAD = FIX / "bad_arguments.json"
MODEL = "openai/gpt-4o"


def _import(tmp_path: Path, *paths: Path, **options) -> Path:
    out = tmp_path / "out"
    import_ok("taubench", paths, out, model=options.pop("model", MODEL), **options)
    return out


def _run(out: Path, task: str, trial: int, domain: str = "airline"):
    (path,) = [
        p for p in out.glob("*.jsonl") if read_trajectory(p).meta.run_id == f"tau-{domain}-{task}:{MODEL}:trial{trial}"
    ]
    return path


def test_each_task_is_a_scenario_and_each_trial_a_run_of_the_model(tmp_path):
    out = _import(tmp_path, AIRLINE)
    cards = cards_by_run(out)
    assert len(cards) == 9
    assert {c.scenario_id for c in cards.values()} == {"tau-airline-0", "tau-airline-1", "tau-airline-2"}
    assert {c.model for c in cards.values()} == {MODEL}
    assert all(c.status == "scored" for c in cards.values())
    # all_passed is tau-bench's success test on the record's reward
    rewards = {(str(r["task_id"]), r["trial"]): r["reward"] for r in json.loads(AIRLINE.read_text())}
    for card in cards.values():
        task, trial = card.run_id.split(":")[0].rsplit("-", 1)[1], int(card.run_id.rsplit("trial", 1)[1])
        assert card.vector.all_passed == (abs(rewards[(task, trial)] - 1) <= 1e-6)


def test_null_reward_info_is_a_failed_scored_run(tmp_path):
    out = _import(tmp_path, AIRLINE)
    path = _run(out, "1", 2)
    traj = read_trajectory(path)
    assert traj.final.reason == "budget_tool_calls"
    checks = traj.final.success_eval.final_state
    assert [(c.var, c.passed) for c in checks] == [("tau_bench.data_hash", False), ("tau_bench.output", False)]
    card = score_trajectory(read_trajectory(path))
    assert card.status == "scored"
    assert card.vector.all_passed is False
    assert card.vector.end_state == 0.0
    assert card.scalar == 0.0
    # it counts as a failure among the scored runs of its group, not as a missing run
    group = next(g for g in aggregate(cards_by_run(out).values())["groups"] if g["scenario_id"] == "tau-airline-1")
    assert (group["n"], group["n_scored"], group["pass_rate"]) == (3, 3, pytest.approx(1 / 3))


def test_outputs_based_reward_becomes_one_check_per_output_plus_the_data_hash(tmp_path):
    out = _import(tmp_path, AIRLINE)
    scenario = read_trajectory(_run(out, "1", 0)).meta.scenario
    assert scenario.success.final_state == [
        {"var": "tau_bench.data_hash", "op": "==", "value": "hash after replaying the gold actions"},
        {"var": "tau_bench.output", "op": "in_reply", "value": "327"},
    ]
    # outputs-only task: its gold actions are all reads, so nothing is required
    assert scenario.required() == []
    passed = score_trajectory(read_trajectory(_run(out, "1", 0)))
    assert passed.vector.all_passed is True and passed.vector.end_state == 1.0 and passed.vector.coverage is None
    failed = read_trajectory(_run(out, "1", 1)).final.success_eval
    # the output was not found, so the reward is 0; the hash outcome is hidden and counts as not passed
    assert [(c.value, c.passed) for c in failed.final_state] == [
        ("hash after replaying the gold actions", False),
        ("327", False),
    ]
    assert failed.all_passed is False


def test_outputs_reward_with_all_outputs_found_but_reward_zero_fails_the_hash(tmp_path):
    records = json.loads(AIRLINE.read_text())
    rec = next(r for r in records if r["task_id"] == 1 and r["trial"] == 0)
    rec["reward"] = 0.0
    rec["info"]["reward_info"]["reward"] = 0.0
    src = tmp_path / "edited.json"
    src.write_text(json.dumps([rec]))
    (run,) = IMPORTER.convert(str(src), model=MODEL)
    final = run[-1]["success_eval"]
    assert [(c["var"], c["passed"]) for c in final["final_state"]] == [
        ("tau_bench.data_hash", False),
        ("tau_bench.output", True),
    ]
    assert final["all_passed"] is False


def test_legacy_arguments_become_required_actions(tmp_path):
    raw = json.loads(AIRLINE.read_text())
    gold = next(r for r in raw if r["task_id"] == 2)["info"]["task"]["actions"]
    assert all("arguments" in a and "kwargs" not in a for a in gold)  # the fixture really is legacy
    out = _import(tmp_path, AIRLINE)
    scenario = read_trajectory(_run(out, "2", 0)).meta.scenario
    (block,) = scenario.ground_truth.procedure
    assert [(a.tool, a.args) for a in block.actions] == [
        (
            "update_reservation_baggages",
            {"reservation_id": "L4MB8D", "total_baggages": 2, "nonfree_baggages": 0, "payment_id": "credit_card_4405"},
        )
    ]
    # trial 1 sent the same arguments in another key order: still a match
    for trial in range(3):
        card = score_trajectory(read_trajectory(_run(out, "2", trial)))
        assert card.vector.coverage == 1.0
        assert [c.class_ for c in card.commands] == ["matched_required"]


def test_invalid_json_tool_arguments_is_a_clear_error_naming_the_record(tmp_path):
    out = tmp_path / "out"
    result = import_files("taubench", [BAD, AIRLINE], out, model=MODEL)
    (error,) = result.errors
    assert isinstance(error, ImportFormatError)
    text = str(error)
    assert text.startswith(f"{BAD}:")
    assert "record 1 (task_id 0, trial 3)" in text
    assert "cancel_reservation" in text and "not valid JSON" in text
    assert "\n" not in text
    # the line is where record 1 starts in the file
    lines = BAD.read_text().splitlines()
    assert error.line is not None and lines[error.line - 1].strip() == "{"
    assert sum(1 for ln in lines[: error.line] if ln.startswith("  {")) == 2
    # nothing from the bad file was written, the good file was imported fully
    assert str(BAD) not in result.written
    written = sorted(p.name for p in out.glob("*"))
    assert len(written) == 9 and written == sorted(Path(p).name for p in result.written[str(AIRLINE)])


def test_pass_hat_k_checked_by_hand(tmp_path):
    """Fixture: task 0 passes 2 of 3 trials, task 1 passes 1 of 3, task 2 passes 3 of 3.

    pass^1 = (2/3 + 1/3 + 3/3) / 3 = 2/3
    pass^2 = (C(2,2)/C(3,2) + C(1,2)/C(3,2) + C(3,2)/C(3,2)) / 3 = (1/3 + 0 + 1) / 3 = 4/9
    pass^3 = (0 + 0 + 1) / 3 = 1/3
    """
    out = _import(tmp_path, AIRLINE)
    agg = aggregate(cards_by_run(out).values())
    (model,) = agg["models"]
    assert model["model"] == MODEL
    assert model["pass_hat_k"] == pytest.approx([2 / 3, 4 / 9, 1 / 3], abs=1e-12)
    by_scenario = {g["scenario_id"]: g["pass_hat_k"] for g in agg["groups"]}
    assert by_scenario == {
        "tau-airline-0": pytest.approx([2 / 3, 1 / 3, 0.0]),
        "tau-airline-1": pytest.approx([1 / 3, 0.0, 0.0]),
        "tau-airline-2": pytest.approx([1.0, 1.0, 1.0]),
    }


def test_pass_hat_k_equals_tau_bench_display_metrics(tmp_path):
    """The rollup equals tau-bench's own formula (run.display_metrics) applied to the raw file."""
    raw = json.loads(AIRLINE.read_text())
    trials = len({r["trial"] for r in raw})
    c: dict[int, int] = {}
    for r in raw:
        c[r["task_id"]] = c.get(r["task_id"], 0) + (1 if 1 - 1e-6 <= r["reward"] <= 1 + 1e-6 else 0)
    reference = [
        sum(math.comb(ci, k) / math.comb(trials, k) for ci in c.values()) / len(c) for k in range(1, trials + 1)
    ]
    (model,) = aggregate(cards_by_run(_import(tmp_path, AIRLINE)).values())["models"]
    assert model["pass_hat_k"] == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize(
    "reward,passed", [(1.0, True), (0.9999995, True), (1.0000009, True), (0.999998, False), (0.0, False)]
)
def test_success_is_reward_one_within_1e_6(tmp_path, reward, passed):
    rec = json.loads(AIRLINE.read_text())[1]
    rec["reward"] = reward
    src = tmp_path / "r.json"
    src.write_text(json.dumps([rec]))
    (run,) = IMPORTER.convert(str(src), model=MODEL)
    assert run[-1]["success_eval"]["all_passed"] is passed


def test_reimport_is_byte_identical(tmp_path):
    first = _import(tmp_path / "a", AIRLINE, RETAIL)
    # same content from another directory and another working name: same bytes
    copy_dir = tmp_path / "elsewhere"
    copy_dir.mkdir()
    shutil.copy(AIRLINE, copy_dir / AIRLINE.name)
    shutil.copy(RETAIL, copy_dir / RETAIL.name)
    second = _import(tmp_path / "b", copy_dir / AIRLINE.name, copy_dir / RETAIL.name)
    names = sorted(p.name for p in first.glob("*.jsonl"))
    assert names == sorted(p.name for p in second.glob("*.jsonl")) and len(names) == 11
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    # re-importing into the same directory rewrites the same files, nothing added
    again = import_files("taubench", [AIRLINE, RETAIL], first, model=MODEL)
    assert not again.errors and sorted(p.name for p in first.glob("*")) == names


def test_run_ids_are_derived_from_domain_task_trial_and_model(tmp_path):
    out = _import(tmp_path, AIRLINE, RETAIL)
    ids = sorted(read_trajectory(p).meta.run_id for p in out.glob("*.jsonl"))
    assert ids == sorted(
        [f"tau-airline-{t}:{MODEL}:trial{k}" for t in range(3) for k in range(3)]
        + [f"tau-retail-5:{MODEL}:trial{k}" for k in range(2)]
    )
    other = _import(tmp_path / "other", AIRLINE, model="anthropic/claude-x")
    assert {read_trajectory(p).meta.run_id.split(":")[1] for p in other.glob("*.jsonl")} == {"anthropic/claude-x"}


def test_commands_are_database_writes_and_gold_reads_are_not_required(tmp_path):
    out = _import(tmp_path, AIRLINE)
    traj = read_trajectory(_run(out, "0", 0))
    scenario = traj.meta.scenario
    assert "get_reservation_details" not in scenario.commands()
    assert {"cancel_reservation", "book_reservation", "update_reservation_baggages"} <= scenario.commands()
    assert "transfer_to_human_agents" not in scenario.commands()
    assert [(a.tool, a.args) for _, _, a in scenario.required()] == [
        ("cancel_reservation", {"reservation_id": "QX7R2P"})
    ]
    # the full gold list, reads included, stays in the scenario for humans and judges
    assert [g["tool"] for g in scenario.model_extra["tau_bench"]["gold_actions"]] == [
        "get_reservation_details",
        "cancel_reservation",
    ]
    card = score_trajectory(read_trajectory(_run(out, "0", 0)))
    assert card.informative.reads == 1 and card.informative.commands == 1
    assert card.vector.coverage == 1.0 and card.vector.extraneous == 0 and card.scalar == 1.0
    # trial 2 also changed the baggage: an extraneous command, and tau-bench's hash check failed
    bad = score_trajectory(read_trajectory(_run(out, "0", 2)))
    assert [(c.tool, c.class_) for c in bad.commands] == [
        ("update_reservation_baggages", "extraneous"),
        ("cancel_reservation", "matched_required"),
    ]
    assert bad.vector.all_passed is False and bad.vector.end_state == 0.0


def test_domain_is_inferred_from_tool_names_or_given(tmp_path):
    assert infer_domain(["get_user_details", "cancel_reservation"]) == "airline"
    assert infer_domain(["think", "get_order_details"]) == "retail"
    assert infer_domain(["think", "calculate"]) is None
    assert infer_domain(["cancel_reservation", "get_order_details"]) is None
    out = _import(tmp_path, RETAIL)
    assert {read_trajectory(p).meta.scenario.id for p in out.glob("*.jsonl")} == {"tau-retail-5"}
    forced = _import(tmp_path / "forced", RETAIL, domain="retail")
    assert {read_trajectory(p).meta.scenario.id for p in forced.glob("*.jsonl")} == {"tau-retail-5"}


def test_domain_that_cannot_be_inferred_asks_for_the_flag(tmp_path):
    rec = {
        "task_id": 3,
        "trial": 0,
        "reward": 1.0,
        "traj": [],
        "info": {
            "task": {
                "user_id": "u",
                "instruction": "x",
                "outputs": [],
                "actions": [{"name": "think", "kwargs": {"thought": "hm"}}],
            },
            "reward_info": {"reward": 1.0, "info": {"r_actions": 1.0, "gt_data_hash": "h"}, "actions": []},
        },
    }
    src = tmp_path / "x.json"
    src.write_text(json.dumps([rec]))
    with pytest.raises(ImportFormatError, match="--domain"):
        IMPORTER.convert(str(src), model=MODEL)
    (run,) = IMPORTER.convert(str(src), model=MODEL, domain="telecom")
    assert run[0]["scenario"]["id"] == "tau-telecom-3"


def test_crashed_episode_is_a_failed_run_with_the_task_of_another_trial(tmp_path):
    out = _import(tmp_path, RETAIL)
    path = _run(out, "5", 1, domain="retail")
    traj = read_trajectory(path)
    assert traj.final.reason == "harness_error"
    assert traj.final.done_payload["tau_bench"]["error"].startswith("RateLimitError")
    assert traj.meta.scenario == read_trajectory(_run(out, "5", 0, domain="retail")).meta.scenario
    card = score_trajectory(read_trajectory(path))
    assert card.status == "scored" and card.vector.all_passed is False and card.vector.coverage == 0.0


def test_crashed_episode_without_any_task_definition_is_an_error(tmp_path):
    rec = json.loads(RETAIL.read_text())[1]
    src = tmp_path / "crash.json"
    src.write_text(json.dumps([rec]))
    with pytest.raises(ImportFormatError, match=r"record 0 \(task_id 5, trial 1\): no task definition"):
        IMPORTER.convert(str(src), model=MODEL, domain="retail")


def test_model_is_required(tmp_path):
    result = import_files("taubench", [AIRLINE], tmp_path / "o")
    (error,) = result.errors
    assert "--model" in str(error)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: r.update(reward="1"), "reward must be a finite number"),
        (lambda r: r.update(task_id=None), "task_id must be"),
        (lambda r: r["info"].update(reward_info=[]), "reward_info must be an object or null"),
        (lambda r: r["traj"].append({"role": "narrator", "content": "x"}), "unknown role 'narrator'"),
        (lambda r: r["info"]["task"]["actions"].append({"kwargs": {}}), r"info.task.actions\[2\] needs a name"),
    ],
)
def test_bad_records_name_file_and_record(tmp_path, mutate, message):
    records = json.loads(AIRLINE.read_text())[:2]
    mutate(records[1])
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(records, indent=2))
    with pytest.raises(ImportFormatError, match=message) as info:
        IMPORTER.convert(str(src), model=MODEL)
    assert str(info.value).startswith(f"{src}:") and "record 1" in str(info.value)


def test_duplicate_task_and_trial_is_an_error(tmp_path):
    rec = json.loads(AIRLINE.read_text())[0]
    src = tmp_path / "dup.json"
    src.write_text(json.dumps([rec, rec], indent=2))
    with pytest.raises(ImportFormatError, match="already occurs in record 0"):
        IMPORTER.convert(str(src), model=MODEL)


@pytest.mark.parametrize(
    "content,message",
    [
        ("", "empty file"),
        ("{}", "expected a JSON list"),
        ("[1,", "not valid JSON"),
        ("[] x", "unexpected data"),
        ("[]", "no results"),
    ],
)
def test_not_a_result_file(tmp_path, content, message):
    src = tmp_path / "x.json"
    src.write_text(content)
    with pytest.raises(ImportFormatError, match=message):
        IMPORTER.convert(str(src), model=MODEL)


def test_example_file_reproduces_its_documented_pass_k(tmp_path):
    example = Path(__file__).parent.parent / "examples" / "taubench" / "tool-calling-example-model-retail.json"
    out = tmp_path / "out"
    result = import_files("taubench", [example], out, model="example/model")
    assert not result.errors and result.runs == 4
    (model,) = aggregate(cards_by_run(out).values())["models"]
    assert model["pass_hat_k"] == pytest.approx([0.75, 0.5])  # as examples/taubench/README.md says


def test_react_and_act_transcripts_are_scored_like_tool_calls(tmp_path):
    """tau-bench's act/react agents write `Action: {json}` and get `API output: ...` back as a user turn."""
    rec = json.loads(AIRLINE.read_text())[1]
    assert rec["task_id"] == 0 and rec["reward"] == 1.0
    action = 'Thought:\nI should look it up.\nAction:\n{"name": "get_reservation_details", "arguments": {"reservation_id": "QX7R2P"}}'
    rec["traj"] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "Cancel QX7R2P please."},
        {"role": "assistant", "content": action},
        {"role": "user", "content": 'API output: {"reservation_id": "QX7R2P"}'},
        {
            "role": "assistant",
            "content": 'Action:\n{"name": "cancel_reservation", "arguments": {"reservation_id": "QX7R2P"}}',
        },
        {"role": "user", "content": "API output: Error: reservation is not cancellable"},
        {
            "role": "assistant",
            "content": 'Action:\n{"name": "cancel_reservation", "arguments": {"reservation_id": "QX7R2P"}}',
        },
        {"role": "user", "content": 'API output: {"status": "cancelled"}'},
        {"role": "assistant", "content": 'Action:\n{"name": "respond", "arguments": {"content": "Cancelled."}}'},
        {"role": "user", "content": "###STOP###"},
    ]
    src = tmp_path / "react.json"
    src.write_text(json.dumps([rec]))
    out = _import(tmp_path, src)
    (path,) = out.glob("*.jsonl")
    traj = read_trajectory(path)
    calls = [(e.name, e.args, e.result, e.is_error) for e in traj.events if e.type == "tool_call"]
    assert calls == [
        ("get_reservation_details", {"reservation_id": "QX7R2P"}, '{"reservation_id": "QX7R2P"}', False),
        ("cancel_reservation", {"reservation_id": "QX7R2P"}, "Error: reservation is not cancellable", True),
        ("cancel_reservation", {"reservation_id": "QX7R2P"}, '{"status": "cancelled"}', False),
    ]
    assert [e.text for e in traj.events if e.type == "nudge"] == ["Cancel QX7R2P please.", "###STOP###"]
    card = score_trajectory(read_trajectory(path))
    assert card.vector.coverage == 1.0 and card.informative.errored_commands == 1 and card.informative.reads == 1
    assert card.vector.all_passed is True
