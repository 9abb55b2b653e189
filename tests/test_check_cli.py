"""`evalkit check`: every problem of scenario files and runs, one line each; exit 1 when any."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.trajectory.builders import call, trajectory, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
GOOD = {"id": "g", "ground_truth": {"procedure": [{"block": "b", "actions": [{"tool": "t", "args": {}}]}]}}


def run(*args):
    return CliRunner().invoke(cli, ["check", *map(str, args)])


def test_a_good_scenario_file_exits_0(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([GOOD]))
    result = run(tmp_path / "tasks.json")
    assert result.exit_code == 0 and result.stdout == ""
    assert "checked 1 scenario(s) (1 file(s)) and 0 run(s): no problems" in result.stderr


def test_every_problem_is_reported_with_its_line_and_exit_1(tmp_path):
    text = """[
  {"id": "a", "ground_truth": {"procedure": [], "forbiden_actions": []}},
  {"id": "b",
   "sucess": {},
   "ground_truth": {
     "procedure": [{"block": "x", "actions": [
        {"tool": "send", "arguments": {"a": 1}}]}],
     "args_match": {"mode": "contans"}
   }
  }
]
"""
    (tmp_path / "tasks.json").write_text(text)
    result = run(tmp_path / "tasks.json")
    p = tmp_path / "tasks.json"
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f'{p}:2: scenario.ground_truth: unknown key "forbiden_actions" (did you mean "forbidden_actions"?)',
        f'{p}:4: scenario: unknown key "sucess" (did you mean "success"?)',
        f'{p}:7: scenario.ground_truth.procedure[0].actions[0]: unknown key "arguments" (did you mean "args"?)',
        f'{p}:8: scenario.ground_truth.args_match.mode: unknown mode "contans" (did you mean "contains"?) '
        "(one of exact, contains, within, ignore)",
    ]
    assert "4 problem(s)" in result.stderr


def test_the_cockpit_examples_have_no_problems_and_one_warning_their_crashed_recorder():
    result = run(ROOT / "examples" / "a320")
    assert result.exit_code == 0 and result.stderr.endswith("9 run(s): 1 warning(s)\n"), result.stderr
    (said,) = result.stdout.splitlines()
    assert said.startswith(f"{ROOT / 'examples' / 'a320' / 'a320-gemini-2.5-flash-crashed-recorder.jsonl'}:7: warning:")


def test_a_run_with_a_bad_embedded_scenario_lists_its_problems(tmp_path):
    sc = {"id": "s", "ground_truth": {"procedure": [], "forbiden_actions": [], "optionl_actions": []}}
    path = write_jsonl(tmp_path / "r.jsonl", trajectory(sc, [call("t")], run_id="r"))
    result = run(path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f'{path}:1: meta.scenario.ground_truth: unknown key "forbiden_actions" (did you mean "forbidden_actions"?); '
        'unknown key "optionl_actions" (did you mean "optional_actions"?)'
    ]


def test_a_run_whose_approval_tool_is_off_the_surface_is_a_problem(tmp_path):
    sc = {"id": "s", "ground_truth": {"gated_actions": [{"tool": "refund", "approval": {"tool": "ask"}}]}}
    path = write_jsonl(tmp_path / "r.jsonl", trajectory(sc, [call("refund")], run_id="r", tool_surface=["refund"]))
    result = run(path)
    assert result.exit_code == 1 and '"ask" is not on the tool surface' in result.stdout


def test_a_misspelt_approval_tool_off_the_surface_says_which_surface_tool_was_meant(tmp_path):
    sc = {"id": "s", "ground_truth": {"gated_actions": [{"tool": "refund", "approval": {"tool": "request_aproval"}}]}}
    records = trajectory(sc, [call("refund")], run_id="r", tool_surface=["refund", "request_approval"])
    result = run(write_jsonl(tmp_path / "r.jsonl", records))
    assert result.exit_code == 1
    assert result.stdout.rstrip().endswith(
        '"request_aproval" is not on the tool surface, so no call can approve the gated tool '
        '(did you mean "request_approval"?)'
    )


def test_runs_naming_a_scenario_are_checked_against_the_scenario_files(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([GOOD]))
    records = trajectory(GOOD, [call("t")], run_id="r", tool_surface=["t"])
    del records[0]["scenario"]
    records[0]["scenario_id"] = "g"
    path = write_jsonl(tmp_path / "runs" / "r.jsonl", records)
    assert run(path, "--scenarios", tmp_path / "tasks.json").exit_code == 0
    result = run(path)
    assert result.exit_code == 1 and "--scenarios FILE" in result.stdout


def test_a_jsonl_of_scenarios_is_checked_as_scenarios(tmp_path):
    (tmp_path / "tasks.jsonl").write_text(
        json.dumps(GOOD) + "\n" + json.dumps({"id": "x", "ground_truth": {"zz": 1}}) + "\n"
    )
    result = run(tmp_path / "tasks.jsonl")
    assert (
        result.exit_code == 1
        and result.stdout == f'{tmp_path / "tasks.jsonl"}:2: scenario.ground_truth: unknown key "zz"\n'
    )


def test_an_unreadable_scenario_file_is_one_problem(tmp_path):
    (tmp_path / "tasks.json").write_text("[{")
    result = run(tmp_path / "tasks.json")
    assert result.exit_code == 1 and result.stdout.startswith(f"{tmp_path / 'tasks.json'}:1: not valid JSON")


def test_an_empty_run_file_is_a_problem_not_a_crash(tmp_path):
    from click.testing import CliRunner

    from evalkit.cli import cli

    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "blank.jsonl").write_text("\n\n")
    res = CliRunner().invoke(cli, ["check", str(tmp_path / "empty.jsonl"), str(tmp_path / "blank.jsonl")])
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "empty.jsonl" in res.output and "blank.jsonl" in res.output


def test_an_id_twice_in_the_scenario_file_beside_the_runs_is_a_problem_as_score_finds_it(tmp_path):
    # check said "no problems" while score refused every run of the file
    (tmp_path / "scenarios.json").write_text(json.dumps([GOOD, GOOD], indent=1))
    records = trajectory(GOOD, [call("t")], run_id="r", tool_surface=["t"])
    del records[0]["scenario"]
    records[0]["scenario_id"] = "g"
    write_jsonl(tmp_path / "r.jsonl", records)
    want = f'{tmp_path / "scenarios.json"}:18: scenario.id: "g" is already the id of the scenario at {tmp_path / "scenarios.json"}:2'
    result = run(tmp_path)
    assert result.exit_code == 1 and result.stdout == want + "\n"
    scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db"])
    assert scored.exit_code == 1 and want in scored.stderr
