"""Runs whose tool calls were recorded without their arguments (an OpenTelemetry trace taken with
content capture off: the importer records them as ``{}`` and names them in
``final.done_payload.otel``) score as calls that match no argument rule. `evalkit check` and
`evalkit score` say so once per scenario, counted across batches and worker processes, the first
such run in input order named."""

from __future__ import annotations

import json

from click.testing import CliRunner
from coding_corpus import SCENARIO, TOOLS

from evalkit.cli import cli
from evalkit.trajectory.builders import call, trajectory, write_jsonl

RUNS = 600  # more than two batches of files: the notes cross worker processes
UNRECORDED = (7, 301, 550)


def _corpus(directory):
    (directory / "scenarios.json").write_text(json.dumps([SCENARIO]))
    for i in range(RUNS):
        bare = i in UNRECORDED
        calls = [
            call("edit_file", {} if bare else {"path": "src/app.py", "patch": "p"}),
            call("run_tests", {} if bare else {"target": "tests/"}, result={"passed": True, "failed": 0}),
        ]
        records = trajectory(SCENARIO, calls, run_id=f"run-{i:04d}", model="m", tool_surface=TOOLS)
        del records[0]["scenario"]
        records[0]["scenario_id"] = SCENARIO["id"]
        if bare:
            records[-1]["done_payload"] = {
                "otel": {"tools_without_arguments": ["edit_file", "run_tests"], "unmapped": {"tool_arguments": 2}}
            }
        write_jsonl(directory / f"run-{i:04d}.jsonl", records)


def test_check_and_score_name_the_runs_recorded_without_arguments_once_across_workers(tmp_path):
    _corpus(tmp_path)
    expected = (
        f"3 of the {RUNS} runs hold 6 tool call(s) recorded without their arguments (edit_file, run_tests; "
        f"the first: {tmp_path / 'run-0007.jsonl'}): they are scored as calls with no arguments"
    )
    checked = CliRunner().invoke(cli, ["check", str(tmp_path), "--strict"])
    assert checked.exit_code == 2
    assert [line for line in checked.stdout.splitlines() if expected in line], checked.stdout
    for workers in ("1", "2"):
        scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", workers])
        assert scored.exit_code == 0, scored.stderr[-500:]
        said = [line for line in scored.stderr.splitlines() if "recorded without their arguments" in line]
        assert len(said) == 1 and expected in said[0], (workers, said)


def test_runs_that_recorded_every_argument_give_no_such_warning(tmp_path):
    _corpus(tmp_path)
    for i in UNRECORDED:
        (tmp_path / f"run-{i:04d}.jsonl").unlink()
    checked = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert "recorded without" not in checked.output
