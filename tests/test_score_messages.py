"""What `evalkit score` says about scenario and record mistakes: each distinct error once with how
many files it affects, no empty tables, scenario files never read as runs, an embedded scenario
compared with the file's by content."""

from __future__ import annotations

import json

from click.testing import CliRunner
from coding_corpus import SCENARIO, mistaken, write_corpus

from evalkit.cli import cli


def score(*args):
    return CliRunner().invoke(cli, ["score", *map(str, args), "--no-db"])


def test_one_scenario_error_is_said_once_with_how_many_runs_it_affects(tmp_path):
    write_corpus(tmp_path, text=json.dumps(mistaken(lambda s: s.update(sucess=s.pop("success")))))
    result = score(tmp_path)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    problem = f'{tmp_path / "scenarios.json"}:1: scenario: unknown key "sucess" (did you mean "success"?)'
    assert errors == [
        f"error: {problem}",
        'error: 5 more file(s) with the same error: scenario: unknown key "sucess" (did you mean "success"?)',
    ]
    assert "6 file(s) could not be scored" in result.stderr
    assert "By scenario and model" not in result.stdout  # no empty tables


def test_every_error_is_printed_with_verbose(tmp_path):
    write_corpus(tmp_path, text=json.dumps(mistaken(lambda s: s.update(sucess=s.pop("success")))))
    result = score(tmp_path, "-v")
    assert sum(line.startswith("error:") for line in result.stderr.splitlines()) == 6


def test_a_scenarios_jsonl_beside_the_runs_is_their_scenario_file_not_a_run(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "scenarios.json").unlink()
    (tmp_path / "scenarios.jsonl").write_text(json.dumps(SCENARIO) + "\n")
    result = score(tmp_path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == 6


def test_a_file_of_scenarios_among_the_runs_is_named_for_what_it_is(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "tasks.jsonl").write_text(json.dumps(SCENARIO) + "\n")
    result = score(tmp_path)
    assert result.exit_code == 1
    assert (
        f"error: {tmp_path / 'tasks.jsonl'}:1: a scenario, not a run: pass its file with --scenarios "
        "(or name it scenarios.jsonl)"
    ) in result.stderr.splitlines()


def _embed(tmp_path, scenario):
    for run in tmp_path.glob("*.jsonl"):
        records = [json.loads(line) for line in run.read_text().splitlines()]
        del records[0]["scenario_id"]
        records[0]["scenario"] = scenario
        # written as an importer writes: keys sorted
        run.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def test_an_embedded_scenario_written_in_another_key_order_is_the_same_scenario(tmp_path):
    tasks = write_corpus(tmp_path)
    _embed(tmp_path, SCENARIO)
    result = score(tmp_path, "--scenarios", tasks)
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_an_embedded_scenario_that_differs_is_said_once(tmp_path):
    tasks = write_corpus(tmp_path)
    _embed(tmp_path, mistaken(lambda s: s.update(title="another title")))
    result = score(tmp_path, "--scenarios", tasks)
    lines = [line for line in result.stderr.splitlines() if "embedded scenario" in line]
    assert len(lines) == 2, result.stderr
    assert ': warning: the embedded scenario "fix-null-check"' in lines[0]
    assert lines[1].startswith('warning: 5 more run(s) where the embedded scenario "fix-null-check"')
