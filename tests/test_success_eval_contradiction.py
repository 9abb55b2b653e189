"""A harness's success_eval that says against itself (all_passed true while a check failed, or
false while every check passed) is warned about at the final record's line by check and score;
the run's pass stays all_passed, its end state the share of checks passed. Runs an importer wrote
follow their source's own success test and are not warned about."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.trajectory.builders import call, trajectory, write_jsonl

SCENARIO = {
    "id": "retire",
    "command_tools": ["terminate_instance"],
    "ground_truth": {"procedure": [{"block": "b", "actions": [{"tool": "terminate_instance", "args": {"id": "i-1"}}]}]},
    "success": {"final_state": [{"var": "a", "op": "==", "value": 1}, {"var": "b", "op": "==", "value": "up"}]},
}


def run_file(tmp_path, passed: list[bool], all_passed: bool, versions: dict | None = None):
    records = trajectory(
        SCENARIO, [call("terminate_instance", {"id": "i-1"})], run_id="r", tool_surface=["terminate_instance"]
    )
    final = records[-1]
    final["success_eval"] = {
        "final_state": [dict(c, passed=p) for c, p in zip(SCENARIO["success"]["final_state"], passed)],
        "ecam_clear_of": [],
        "all_passed": all_passed,
    }
    if versions is not None:
        records[0]["versions"] = versions
    path = tmp_path / "r.jsonl"
    write_jsonl(path, records)
    return path, len(records)


def test_all_passed_true_with_a_failed_check_is_warned_about_and_the_numbers_stay(tmp_path):
    path, last = run_file(tmp_path, [True, False], True)
    scored = CliRunner().invoke(cli, ["score", str(path), "--no-db", "--format", "jsonl"])
    assert scored.exit_code == 0
    assert scored.stderr.splitlines() == [
        f'{path}:{last}: warning: final.success_eval.all_passed is true, but final_state[1] (b == "up") failed: '
        "the run counts as passed (all_passed decides the pass; the end state is the share of checks passed)"
    ]
    card = json.loads(scored.stdout)
    assert card["vector"]["all_passed"] is True and card["vector"]["end_state"] == 0.5
    checked = CliRunner().invoke(cli, ["check", str(path), "--strict"])
    assert checked.exit_code == 2 and scored.stderr.splitlines()[0] in checked.stdout.splitlines()


def test_all_passed_false_with_every_check_passed_is_warned_about(tmp_path):
    path, last = run_file(tmp_path, [True, True], False)
    scored = CliRunner().invoke(cli, ["score", str(path), "--no-db", "--format", "jsonl"])
    assert scored.stderr.splitlines() == [
        f"{path}:{last}: warning: final.success_eval.all_passed is false, but all 2 checks passed: "
        "the run counts as failed (all_passed decides the pass)"
    ]


@pytest.mark.parametrize(("passed", "all_passed"), [([True, True], True), ([True, False], False)])
def test_a_consistent_success_eval_is_not_warned_about(tmp_path, passed, all_passed):
    path, _ = run_file(tmp_path, passed, all_passed)
    assert CliRunner().invoke(cli, ["check", str(path), "--strict"]).exit_code == 0


def test_an_imported_run_follows_its_source_and_is_not_warned_about(tmp_path):
    path, _ = run_file(tmp_path, [True, False], True, versions={"importer": "tau2"})
    scored = CliRunner().invoke(cli, ["score", str(path), "--no-db", "--format", "jsonl"])
    assert scored.exit_code == 0 and scored.stderr == ""


def test_checks_under_a_key_evalkit_does_not_read_are_warned_about_since_the_end_state_is_all_passed(tmp_path):
    # a harness that writes its checks as success_eval.checks: evalkit reads none of them, so the
    # end state comes from all_passed alone; said at the final line, not a silent 1.0
    path, last = run_file(tmp_path, [True, False], True)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    success = records[-1]["success_eval"]
    records[-1]["success_eval"] = {"all_passed": True, "checks": success.pop("final_state")}
    write_jsonl(path, records)
    scored = CliRunner().invoke(cli, ["score", str(path), "--no-db", "--format", "jsonl"])
    assert scored.exit_code == 0
    assert scored.stderr.splitlines()[0] == (
        f"{path}:{last}: warning: final.success_eval.checks: evalkit does not read this key; the checks go in "
        "final_state ([{var, op, value, passed}]) and ecam_clear_of, so this run's end state is all_passed alone "
        "(docs/trajectory-format.md)"
    )
    assert json.loads(scored.stdout)["vector"]["end_state"] == 1.0
    checked = CliRunner().invoke(cli, ["check", str(path), "--strict"])
    assert checked.exit_code == 2 and scored.stderr.splitlines()[0] in checked.stdout.splitlines()
    # beside checks it reads, another key is the harness's own (not warned about)
    first = dict(SCENARIO["success"]["final_state"][0], passed=True)
    records[-1]["success_eval"] = {"all_passed": True, "final_state": [first], "notes": {"by": "harness"}}
    write_jsonl(path, records)
    assert "evalkit does not read" not in CliRunner().invoke(cli, ["check", str(path)]).output
