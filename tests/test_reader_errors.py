"""Bad inputs: a clear `path:line: reason`, never a traceback; other files still scored."""

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.errors import InputError
from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, trajectory, write_jsonl
from evalkit.trajectory.reader import parse_trajectory

GOOD = trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="good")


def _err(data: bytes) -> InputError:
    with pytest.raises(InputError) as exc:
        parse_trajectory("f.jsonl", data)
    return exc.value


def test_empty_file():
    e = _err(b"")
    assert str(e).startswith("f.jsonl: empty file")
    assert "empty" in str(_err(b"\n\n  \n"))


def test_non_json_line_mid_file():
    lines = dumps_jsonl(GOOD).splitlines()
    lines.insert(2, "{not json")
    e = _err("\n".join(lines).encode())
    assert e.line == 3 and str(e).startswith("f.jsonl:3: not valid JSON")


def test_missing_meta():
    e = _err(dumps_jsonl(GOOD[1:]).encode())
    assert e.line == 1 and "first record must be 'meta'" in e.message


def test_meta_without_scenario():
    recs = [dict(GOOD[0])] + GOOD[1:]
    del recs[0]["scenario"]
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == 1 and e.message.startswith("meta.scenario: Field required")


def test_wrong_field_types():
    recs = [dict(r) for r in GOOD]
    idx = next(i for i, r in enumerate(recs) if r["type"] == "tool_call")
    recs[idx]["args"] = "ext_pwr=1"
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == idx + 1 and e.message.startswith("tool_call.args:")
    recs = [dict(r) for r in GOOD]
    recs[-1]["success_eval"] = {"all_passed": "maybe"}
    e = _err(dumps_jsonl(recs).encode())
    assert e.line == len(recs) and "final.success_eval.all_passed" in e.message


def test_unknown_record_type_is_tolerated():
    recs = GOOD[:2] + [{"type": "camera_frame", "jpeg": "..."}] + GOOD[2:]
    traj = parse_trajectory("f.jsonl", dumps_jsonl(recs).encode())
    assert traj.unknown_records == 1 and traj.final is not None


def test_invalid_utf8():
    data = dumps_jsonl(GOOD).encode()
    lines = data.split(b"\n")
    lines[1] = lines[1].replace(b"APU_GEN_FAULT", b"APU_\xff_FAULT")
    e = _err(b"\n".join(lines))
    assert e.line == 2 and "invalid UTF-8" in e.message


def test_record_that_is_not_an_object():
    e = _err(dumps_jsonl(GOOD[:1]).encode() + b"[1, 2]\n" + dumps_jsonl(GOOD[1:]).encode())
    assert e.line == 2 and "JSON object" in e.message


def test_forbidden_action_without_severity_names_the_field():
    sc = a320_scenario()
    del sc["ground_truth"]["forbidden_actions"][0]["severity"]
    e = _err(dumps_jsonl(trajectory(sc, [], run_id="x")).encode())
    assert e.line == 1 and "forbidden_actions[0] has no severity" in e.message


def test_directory_with_good_and_bad_files(tmp_path):
    write_jsonl(tmp_path / "a_good.jsonl", GOOD)
    (tmp_path / "b_bad.jsonl").write_text('{"type": "meta"}\n')
    (tmp_path / "sub").mkdir()
    write_jsonl(tmp_path / "sub" / "c_good.jsonl", trajectory(a320_scenario(), [], run_id="c", passed=False))
    (tmp_path / "notes.txt").write_text("ignored")
    res = CliRunner().invoke(cli, ["score", str(tmp_path), "--format", "jsonl", "--no-db"])
    assert res.exit_code == 1
    ids = [json.loads(line)["run_id"] for line in res.stdout.splitlines()]
    assert ids == ["good", "c"]
    assert f"{tmp_path / 'b_bad.jsonl'}:1: meta.run_id: Field required" in res.stderr
    assert "Traceback" not in res.stderr and isinstance(res.exception, SystemExit)  # an exit code, not a crash
