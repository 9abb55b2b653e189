"""Hostile and messy input (input side): one named test per row of the issue's table.

Every reader gives a one-line `path:line: reason` and never a traceback; one bad file never stops the
others; every JSON evalkit prints or stores is standard JSON.
"""

import json
import os
import sqlite3
import threading

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError
from evalkit.scoring import score_trajectory
from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, trajectory, write_jsonl
from evalkit.trajectory.reader import parse_trajectory, read_trajectory


def _strict_json(text: str):
    """A parser that refuses NaN / Infinity, as JavaScript's JSON.parse and jq do."""

    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _run(tmp_path, recs, name="r.jsonl"):
    path = tmp_path / name
    write_jsonl(path, recs)
    return path


def _score_text(text: str, path="f.jsonl", warn=None):
    return score_trajectory(parse_trajectory(path, text.encode("utf-8"), warn))


def _err(data: bytes) -> InputError:
    with pytest.raises(InputError) as exc:
        parse_trajectory("f.jsonl", data)
    return exc.value


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _with_control(control):
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="ctl")
    call = next(r for r in recs if r["type"] == "tool_call")
    call["args"]["control"] = control
    return recs


# --- args.control that is not a string --------------------------------------------------------


@pytest.mark.parametrize(
    "control",
    [["apu_gen"], {"name": "apu_gen"}, 7, True, 1.5, None],
    ids=["list", "dict", "int", "bool", "float", "null"],
)
def test_non_string_control_is_scored_as_an_extraneous_command(control):
    card = _score_text(dumps_jsonl(_with_control(control)))
    (row,) = card.commands
    assert row.class_ == "extraneous" and row.subtype == "uncatalogued_in_gt"
    assert row.control == (None if control is None else json.dumps(control, separators=(",", ":")))
    assert card.vector.coverage == 0.0


def test_non_string_control_never_equals_the_same_string(tmp_path):
    # a list ["ext_pwr"] and its JSON text '["ext_pwr"]' are different controls
    sc = a320_scenario()
    sc["ground_truth"]["procedure"][1]["actions"][1]["control"] = '["ext_pwr"]'
    recs = trajectory(sc, [cmd("ext_pwr", 1)], run_id="ctl")
    next(r for r in recs if r["type"] == "tool_call")["args"]["control"] = ["ext_pwr"]
    card = _score_text(dumps_jsonl(recs))
    assert card.commands[0].class_ == "extraneous"


def test_non_string_control_batch_is_stored_whole(tmp_path):
    for i, control in enumerate((["a"], {"b": 1}, 3, False)):
        recs = _with_control(control)
        recs[0]["run_id"] = f"ctl-{i}"
        _run(tmp_path, recs, f"c{i}.jsonl")
    db = tmp_path / "s.db"
    result = invoke("score", str(tmp_path), "--db", str(db), "--format", "jsonl")
    assert result.exit_code == 0, result.output
    assert sqlite3.connect(db).execute("select count(*) from scorecards").fetchone()[0] == 4


# --- NaN / Infinity / 1e400 ---------------------------------------------------------------------


def _non_finite_text() -> str:
    recs = trajectory(a320_scenario(), [cmd("apu_gen", 0), cmd("apu_gen", 1)], run_id="nf")
    text = dumps_jsonl(recs)
    # a recorder written in Python (json.dumps) writes these literally
    text = text.replace('"value": 0}', '"value": NaN}', 1).replace('"value": 1}', '"value": 1e400}', 1)
    return text.replace('"sim_time": 0.0', '"sim_time": -Infinity', 1)


def test_non_finite_numbers_are_read_and_counted():
    card = _score_text(_non_finite_text())
    assert card.informative.non_finite_numbers >= 3
    assert card.informative.sim_time_used is None


def test_nan_command_value_matches_nothing():
    recs = trajectory(a320_scenario(), [cmd("apu_gen", float("nan"))], run_id="nan")
    card = _score_text(dumps_jsonl(recs))  # json.dumps writes NaN
    assert [r.class_ for r in card.commands] == ["extraneous"]


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_number_in_a_scenario_action_is_refused_since_it_can_never_match(value):
    sc = a320_scenario()
    sc["ground_truth"]["procedure"][0]["actions"][0]["value"] = value
    with pytest.raises(InputError, match=r"^f\.jsonl:1: .*actions\.0: value: holds a non-finite number"):
        _score_text(dumps_jsonl(trajectory(sc, [cmd("apu_gen", value)], run_id="nf")))


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_non_finite_numbers_are_written_as_null(tmp_path, fmt):
    (tmp_path / "nf.jsonl").write_text(_non_finite_text())
    db = tmp_path / "s.db"
    result = invoke("score", str(tmp_path), "--db", str(db), "--format", fmt)
    assert result.exit_code == 0, result.output
    out = result.stdout
    docs = [_strict_json(out)] if fmt == "json" else [_strict_json(line) for line in out.splitlines()]
    assert docs
    values = [c["value"] for c in (docs[0][0] if fmt == "json" else docs[0])["commands"]]
    assert None in values
    agg = invoke("score", str(tmp_path), "--no-db", "--format", fmt, "--aggregate")
    for line in [agg.stdout] if fmt == "json" else agg.stdout.splitlines():
        _strict_json(line)
    conn = sqlite3.connect(db)
    for (text,) in conn.execute(
        "select card from scorecards union all select bundle from bundles "
        "union all select args from commands union all select value from commands where value is not null"
    ):
        _strict_json(text)


# --- nesting ---------------------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_100k_deep_last_line_is_an_error_not_a_dropped_line():
    lines = dumps_jsonl(trajectory(a320_scenario(), [], run_id="d", final=False)).splitlines()
    lines.append('{"type": "final", "reason": "agent_done", "done_payload": ' + _deep(100_000) + "}")
    e = _err("\n".join(lines).encode())
    assert e.line == len(lines) and "nested deeper than 200" in e.message


def test_100k_deep_last_line_cut_short_is_half_written():
    lines = dumps_jsonl(trajectory(a320_scenario(), [], run_id="d", final=False)).splitlines()
    lines.append('{"type": "final", "done_payload": ' + "[" * 100_000)
    warnings = []
    traj = parse_trajectory("f.jsonl", "\n".join(lines).encode(), warnings.append)
    assert traj.dropped_last_line and "half-written" in warnings[0]


def test_150_deep_line_mid_file_is_read():
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="d150")
    call = next(r for r in recs if r["type"] == "tool_call")
    call["result"] = json.loads(_deep(150))
    card = _score_text(dumps_jsonl(recs))
    assert card.status == "scored" and card.commands[0].class_ == "matched_required"


def test_300_deep_line_mid_file_names_the_limit():
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="d600")
    lines = dumps_jsonl(recs).splitlines()
    idx = next(i for i, r in enumerate(recs) if r["type"] == "tool_call")
    lines[idx] = lines[idx][:-1] + ', "deep": ' + _deep(300) + "}"
    e = _err("\n".join(lines).encode())
    assert e.line == idx + 1 and "nested deeper than 200" in e.message


def test_huge_integer_is_an_error_at_its_line():
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="big")
    lines = dumps_jsonl(recs).splitlines()
    idx = next(i for i, r in enumerate(recs) if r["type"] == "tool_call")
    lines[idx] = lines[idx].replace('"value": 1', '"value": ' + "9" * 5000, 1)
    e = _err("\n".join(lines).encode())
    assert e.line == idx + 1 and "integer too large" in e.message


# --- duplicate keys ---------------------------------------------------------------------------------


def test_duplicate_key_is_an_error_naming_the_key_at_its_line():
    lines = dumps_jsonl(trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="dup")).splitlines()
    idx = next(i for i, line in enumerate(lines) if '"tool_call"' in line)
    lines[idx] = lines[idx].replace('"type": "tool_call"', '"type": "tool_call", "type": "final"', 1)
    e = _err("\n".join(lines).encode())
    assert e.line == idx + 1 and 'duplicate key "type"' in e.message


# --- strict types of what feeds the score ----------------------------------------------------------


def _mutate(rtype, **changes):
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="t")
    idx = next(i for i, r in enumerate(recs) if r["type"] == rtype)
    for key, value in changes.items():
        if key == "adapter_model":
            recs[idx]["adapter"]["model"] = value
        else:
            recs[idx][key] = value
    return idx, dumps_jsonl(recs).encode()


def test_is_error_string_no_is_rejected():
    idx, data = _mutate("tool_call", is_error="no")
    e = _err(data)
    assert e.line == idx + 1 and e.message.startswith("tool_call.is_error:")


def test_tool_calls_used_string_is_rejected():
    idx, data = _mutate("final", tool_calls_used="8")
    e = _err(data)
    assert e.line == idx + 1 and e.message.startswith("final.tool_calls_used:")


def test_model_object_is_rejected():
    idx, data = _mutate("meta", adapter_model={"name": "x"})
    e = _err(data)
    assert e.line == 1 and "adapter.model must be a string" in e.message


@pytest.mark.parametrize(
    "rtype,field,value",
    [("tool_call", "name", 5), ("tool_call", "step", 1.0), ("final", "reason", 1), ("meta", "run_id", 42)],
)
def test_other_score_fields_are_strict(rtype, field, value):
    idx, data = _mutate(rtype, **{field: value})
    e = _err(data)
    assert e.line == idx + 1 and e.message.startswith(f"{rtype}.{field}:")


def test_success_check_string_is_rejected():
    recs = trajectory(a320_scenario(), [], run_id="t")
    recs[-1]["success_eval"]["final_state"][0]["passed"] = "true"
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == len(recs) and "final.success_eval.final_state.0.passed" in e.message


# --- trajectory structure -------------------------------------------------------------------------


def test_events_after_harness_error_are_an_error():
    recs = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="h")
    idx = next(i for i, r in enumerate(recs) if r["type"] == "tool_call")
    recs.insert(idx, {"type": "harness_error", "error": "simulator crashed"})
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == idx + 2 and "after the 'harness_error' of line" in e.message


def test_agent_done_after_harness_error_is_an_error():
    recs = trajectory(a320_scenario(), [], run_id="h")
    recs.insert(len(recs) - 1, {"type": "harness_error", "error": "simulator crashed"})
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == len(recs) and e.message.startswith("final.reason: 'agent_done' after the 'harness_error'")
    recs[-1]["reason"] = "harness_error"
    assert _score_text(dumps_jsonl(recs)).informative.final_reason == "harness_error"


def test_same_run_id_in_two_files_counts_once_in_aggregates_and_database(tmp_path):
    sc = a320_scenario()
    _run(tmp_path, trajectory(sc, [cmd("ext_pwr", 1)], run_id="same", passed=False), "a.jsonl")
    _run(tmp_path, trajectory(sc, [cmd("ext_pwr", 1)], run_id="same", passed=True), "b.jsonl")
    db = tmp_path / "s.db"
    result = invoke("score", str(tmp_path), "--db", str(db), "--format", "json", "--aggregate")
    assert result.exit_code == 0
    assert "run_id 'same' was already read" in result.stderr and "replaces it" in result.stderr
    (group,) = json.loads(result.stdout)["groups"]
    assert group["n"] == 1 and group["pass_rate"] == 1.0  # the last one read, b.jsonl
    stored = sqlite3.connect(db).execute("select all_passed from scorecards").fetchall()
    assert stored == [(1,)]


def test_same_scenario_id_with_different_ground_truth_is_two_groups(tmp_path):
    one = a320_scenario()
    two = a320_scenario()
    two["ground_truth"]["procedure"][1]["actions"][1]["value"] = 0
    _run(tmp_path, trajectory(one, [cmd("ext_pwr", 1)], run_id="r1"), "a.jsonl")
    _run(tmp_path, trajectory(two, [cmd("ext_pwr", 1)], run_id="r2"), "b.jsonl")
    result = invoke("score", str(tmp_path), "--no-db", "--format", "json", "--aggregate")
    assert result.exit_code == 0
    assert "scenario 'elec-apu-gen-fault' occurs with different content" in result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert len(groups) == 2
    hashes = {g["scenario_hash"] for g in groups}
    assert len(hashes) == 2
    assert {g["scenario_id"] for g in groups} == {f"elec-apu-gen-fault@{h}" for h in hashes}
    assert {g["coverage_mean"] for g in groups} == {0.25, 0.0}


def test_same_scenario_twice_is_one_group(tmp_path):
    for i in range(2):
        _run(tmp_path, trajectory(a320_scenario(), [], run_id=f"r{i}"), f"{i}.jsonl")
    result = invoke("score", str(tmp_path), "--no-db", "--format", "json", "--aggregate")
    (group,) = json.loads(result.stdout)["groups"]
    assert group["scenario_id"] == "elec-apu-gen-fault" and group["n"] == 2
    assert "different content" not in result.stderr


# --- only regular files, size limit -----------------------------------------------------------------


def test_fifo_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    outcome = {}
    worker = threading.Thread(
        target=lambda: outcome.setdefault("result", invoke("score", str(fifo), "--no-db")), daemon=True
    )
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the reader so the test process can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    result = outcome["result"]
    assert result.exit_code == 1
    assert f"{fifo}: cannot read: a FIFO, not a regular file" in result.stderr


def test_dev_zero_is_an_error():
    with pytest.raises(InputError) as exc:
        read_trajectory("/dev/zero")
    assert str(exc.value) == "/dev/zero: cannot read: a character device, not a regular file"


def test_file_over_the_size_limit_is_a_clear_error(tmp_path, monkeypatch):
    path = _run(tmp_path, trajectory(a320_scenario(), [], run_id="s"))
    monkeypatch.setenv("EVALKIT_MAX_FILE_BYTES", "100")
    with pytest.raises(InputError) as exc:
        read_trajectory(path)
    assert "larger than the 100-byte limit" in str(exc.value) and "EVALKIT_MAX_FILE_BYTES" in str(exc.value)
    monkeypatch.delenv("EVALKIT_MAX_FILE_BYTES")
    assert read_trajectory(path).meta.run_id == "s"


# --- the other readers ---------------------------------------------------------------------------------


def test_100k_deep_json_to_annotations_import(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"item_id": "a", "rater": "x", "dimension": "d", "value": ' + _deep(100_000) + "}\n")
    result = invoke("annotations", "import", str(path), "--db", str(tmp_path / "s.db"))
    assert result.exit_code == 1
    assert result.stderr.strip().endswith(f"{path}:1: invalid JSON: nested deeper than 200 levels")


def test_huge_number_in_a_ratings_csv(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("item_id,rater,dimension,value\na,x,d," + "9" * 5000 + "\n")
    result = invoke("annotations", "import", str(path), "--db", str(tmp_path / "s.db"))
    assert result.exit_code == 1 and "integer too large" in result.stderr


def _good_verdicts(tmp_path):
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "examples" / "verdicts" / "demo_classifier_zero_shot.json"
    good = tmp_path / "b_good.json"
    good.write_bytes(src.read_bytes())
    return good


def test_100k_deep_json_to_verdicts_still_scores_the_good_file(tmp_path):
    _good_verdicts(tmp_path)
    (tmp_path / "a_deep.json").write_text(_deep(100_000))
    result = invoke("verdicts", str(tmp_path))
    assert result.exit_code == 1
    assert "files scored 1, files with errors 1" in result.stdout
    assert "a_deep.json:1: invalid JSON: nested deeper than 200 levels" in result.stderr


def test_5000_digit_number_to_verdicts_still_scores_the_good_file(tmp_path):
    _good_verdicts(tmp_path)
    (tmp_path / "a_big.json").write_text('{"model": "m", "rows": [' + "9" * 5000 + "]}")
    result = invoke("verdicts", str(tmp_path))
    assert result.exit_code == 1
    assert "files scored 1, files with errors 1" in result.stdout
    assert "a_big.json:1: invalid JSON: integer too large" in result.stderr


def test_100k_deep_json_to_import_taubench(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('[{"task_id": 1, "traj": ' + _deep(100_000) + "}]")
    result = invoke("import", "taubench", str(path), "--out", str(tmp_path / "out"), "--model", "m")
    assert result.exit_code == 1
    assert f"{path}:1: not valid JSON: nested deeper than 200 levels" in result.stderr
    assert not list((tmp_path / "out").glob("*.jsonl")) if (tmp_path / "out").exists() else True


def test_duplicate_key_to_import_openai_messages(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"id": "a", "id": "b", "messages": [], "expected_actions": []}\n')
    result = invoke("import", "openai-messages", str(path), "--out", str(tmp_path / "out"), "--model", "m")
    assert result.exit_code == 1 and f'{path}:1: not valid JSON: duplicate key "id"' in result.stderr
