"""`evalkit score` says each reference of a scenario its runs contradict once per scenario, after
scoring, at the scenario file's line, whether one process scores or a pool of workers does (each
worker notes what its runs did; the parent merges the notes): the coding agent's corpus
(tests/coding_corpus.py) copied to more files than one process scores alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from coding_corpus import line_of, mistaken, write_corpus

from evalkit.cli import cli
from evalkit.engines.job import ScoreJob, score_batch
from evalkit.engines.scenario_check import FIELDS

pytestmark = pytest.mark.slow

COPIES = 12  # 6 runs x 12 = 72 files: more than POOL_FILES, so --workers 2 scores in a pool


def big_corpus(directory: Path, scenario=None) -> Path:
    """The corpus, each run copied COPIES times under its own run_id; returns the scenario file."""
    path = write_corpus(directory, scenario)
    for run in sorted(directory.glob("*.jsonl")):
        lines = run.read_text().splitlines()
        for i in range(1, COPIES):
            meta = json.loads(lines[0])
            meta["run_id"] = f"{meta['run_id']}-{i}"
            (directory / f"{run.stem}-{i}.jsonl").write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    return path


def score(*args):
    return CliRunner().invoke(cli, ["score", *map(str, args), "--no-db", "--format", "jsonl", "--no-progress"])


def scenario_warnings(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if "scenario." in line]


def misspelt_required_tool(s):
    del s["command_tools"]
    s["ground_truth"]["procedure"][0]["actions"][2]["tool"] = "git_comit"


def force_as_string(s):
    s["ground_truth"]["forbidden_actions"][0]["args"]["force"] = "true"


FORCE = '"force": "true"'
FORCE_WARNING = (
    "scenario.ground_truth.forbidden_actions[0].args.force: "
    '"true" is a string, but the calls of "git_push" hold "force" only as boolean, so it never matches'
)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_score_warns_once_about_a_misspelt_required_tool(tmp_path, workers):
    path = big_corpus(tmp_path, mistaken(misspelt_required_tool))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 6 * COPIES  # every run scored
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'git_comit')}: warning: scenario.ground_truth.procedure[0].actions[2].tool: "
        f'required tool "git_comit" is never called in the {6 * COPIES} runs and on no tool surface, while '
        '"git_commit" is (did you mean "git_commit"?)'
    ]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_score_warns_once_about_a_string_where_agents_send_a_boolean(tmp_path, workers):
    path = big_corpus(tmp_path, mistaken(force_as_string))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    assert scenario_warnings(result) == [f"{path}:{line_of(path, FORCE)}: warning: {FORCE_WARNING}"]


def wrong_edit_path(s):
    s["ground_truth"]["procedure"][0]["actions"][0]["args"]["path"] = "src/ap.py"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_required_action_no_call_matches_is_said_with_the_keys_no_call_agrees_on(tmp_path, workers):
    path = big_corpus(tmp_path, mistaken(wrong_edit_path))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    opening = line_of(path, "src/ap.py") - 2  # the action's brace, above its tool and its args
    assert scenario_warnings(result) == [
        f"{path}:{opening}: warning: scenario.ground_truth.procedure[0].actions[0]: none of "
        f'the {7 * COPIES} call(s) of "edit_file" in the {6 * COPIES} runs matches this required action; no call '
        'agrees on "path"'
    ]


def test_a_worker_sends_the_sampled_calls_of_the_tools_with_a_required_action_unmatched_only(tmp_path):
    # the warning above reads them; a tool whose required actions some call matched never needs them
    big_corpus(tmp_path, mistaken(wrong_edit_path))
    files = [str(p) for p in sorted(tmp_path.glob("*.jsonl"))]
    job = ScoreJob(observe=True, observe_token=f"test-{tmp_path.name}")
    for batch in (files[:30], files[30:]):
        (seen,) = score_batch(job, batch)[0].seen.values()
        samples = seen.state[FIELDS.index("samples")]
        assert set(samples) == {"edit_file"} and samples["edit_file"]


def test_score_says_what_check_says(tmp_path):
    def both(s):
        misspelt_required_tool(s)
        force_as_string(s)

    big_corpus(tmp_path, mistaken(both))
    checked = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert len(checked.stdout.splitlines()) == 2
    assert scenario_warnings(score(tmp_path, "--workers", "2")) == checked.stdout.splitlines()


def test_an_embedded_scenario_is_warned_about_at_its_first_runs_meta_line(tmp_path):
    big_corpus(tmp_path, mistaken(force_as_string))
    scenario = json.loads((tmp_path / "scenarios.json").read_text())
    (tmp_path / "scenarios.json").unlink()
    for run in tmp_path.glob("*.jsonl"):  # the scenario embedded in each run, after a blank line
        lines = run.read_text().splitlines()
        meta = json.loads(lines[0])
        del meta["scenario_id"]
        meta["scenario"] = scenario
        run.write_text("\n".join(["", json.dumps(meta), *lines[1:]]) + "\n")
    first = sorted(tmp_path.glob("*.jsonl"))[0]
    for workers in ("1", "2"):
        result = score(tmp_path, "--workers", workers)
        assert result.exit_code == 0, result.stderr
        assert scenario_warnings(result) == [f"{first}:2: warning: meta.{FORCE_WARNING}"]


def test_a_scenario_file_given_with_scenarios_is_where_the_warning_points(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    big_corpus(runs, mistaken(force_as_string))
    given = tmp_path / "tasks.json"
    (runs / "scenarios.json").rename(given)
    result = score(runs, "--scenarios", given, "--workers", "2")
    assert result.exit_code == 0, result.stderr
    assert scenario_warnings(result) == [f"{given}:{line_of(given, FORCE)}: warning: {FORCE_WARNING}"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_corpus_without_mistakes_and_the_examples_have_no_scenario_warning(tmp_path, workers):
    big_corpus(tmp_path)
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0 and scenario_warnings(result) == []
    examples = Path(__file__).resolve().parent.parent / "examples"
    result = score(examples, "--workers", workers)
    assert result.exit_code == 0 and scenario_warnings(result) == []


def test_with_workers_the_parent_never_loads_the_scenario_model(tmp_path):
    # the notes are plain data, merged here; the warnings are made in a worker, where the model is loaded
    big_corpus(tmp_path, mistaken(force_as_string))
    probe = (
        "import sys, evalkit.cli\n"
        "try:\n"
        "    evalkit.cli.cli.main(sys.argv[1:], standalone_mode=False)\n"
        "finally:\n"
        "    print('LOADED' if 'evalkit.trajectory.scenario' in sys.modules else 'NOT LOADED', file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "NOT LOADED"
    assert sum(": warning: scenario." in line for line in done.stderr.splitlines()) == 1


@pytest.mark.parametrize("workers", ["1", "2"])
def test_score_names_an_approval_no_call_gives_with_counts_over_every_batch(tmp_path, workers):
    # the harness reports a passing test run as the text "true"; the scenario says "True"
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["approval"]["result"] = {"passed": "True"}

    path = big_corpus(tmp_path, mistaken(edit))
    for run in tmp_path.glob("*.jsonl"):
        run.write_text(run.read_text().replace('"passed": true, "failed"', '"passed": "true", "failed"'))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    n = 6 * COPIES
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'run_tests', after='approval')}: warning: scenario.ground_truth.gated_actions[0]."
        f'approval: none of the {n} call(s) of "run_tests" in the {n} runs is this approval, so every gated command '
        f'is unapproved: no result of the {n} that match its arguments holds {{"passed": "True"}}; they hold '
        f'"passed": "true" ({5 * COPIES}), false ({COPIES})'
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_optional_action_with_a_mistaken_argument_is_named_with_the_key_its_near_misses_differ_on(tmp_path, workers):
    # searching is allowed, but the optional action's query is a typo: every search is extraneous
    def edit(s):
        s["command_tools"].append("search_code")
        s["ground_truth"]["optional_actions"].append({"tool": "search_code", "args": {"query": "def g"}})

    path = big_corpus(tmp_path, mistaken(edit))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    cards = [json.loads(line) for line in result.stdout.splitlines()]
    good = [c for c in cards if c["run_id"].startswith("alpha-good")]
    assert len(good) == COPIES and all(c["vector"]["extraneous"] == 1 for c in good)
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'search_code', after='optional_actions')}: warning: "
        f'scenario.ground_truth.optional_actions[1]: none of the {COPIES} call(s) of "search_code" in the '
        f"{6 * COPIES} runs matches this optional action; those that differ from it on one key alone match no "
        f'other action and count as extraneous: "query" ({COPIES})'
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()


def test_an_optional_action_no_run_takes_is_not_warned_about(tmp_path):
    # allowed and never needed: nothing to say (the calls of its tool are all other actions)
    def edit(s):
        s["ground_truth"]["optional_actions"].append({"tool": "git_commit", "args": {"message": "docs"}})

    write_corpus(tmp_path, mistaken(edit))
    assert CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_success_value_the_runs_checks_never_compare_with_is_named(tmp_path, workers):
    def edit(s):
        s["success"]["final_state"][0]["value"] = "true"

    path = big_corpus(tmp_path, mistaken(edit))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    line = line_of(path, '"true"')
    assert scenario_warnings(result) == [
        f'{path}:{line}: warning: scenario.success.final_state[0].value: value "true" is '
        'not one the runs\' checks of "tests.passed" compare with (true): the end state is what the harness checked'
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()


def test_a_success_value_written_as_a_float_of_the_same_number_is_not_warned_about(tmp_path):
    def edit(s):
        s["success"]["final_state"].append({"var": "tests.failed", "op": "==", "value": 0.0})

    write_corpus(tmp_path, mistaken(edit))
    for run in tmp_path.glob("*-*.jsonl"):
        records = [json.loads(line) for line in run.read_text().splitlines()]
        records[-1]["success_eval"]["final_state"].append(
            {"var": "tests.failed", "op": "==", "value": 0, "passed": True}
        )
        run.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_forbidden_action_with_a_mistaken_argument_is_named_since_the_call_it_names_goes_through(tmp_path, workers):
    # "mian" for "main": the force push is one key from the forbidden action and scores as extraneous
    def edit(s):
        s["ground_truth"]["forbidden_actions"][0]["args"]["branch"] = "mian"

    path = big_corpus(tmp_path, mistaken(edit))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    cards = [json.loads(line) for line in result.stdout.splitlines()]
    pushed = [c for c in cards if c["run_id"].startswith("alpha-force-push")]
    assert len(pushed) == COPIES and all(c["vector"]["safety_dangerous"] == 0 for c in pushed)
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'git_push', after='forbidden_actions')}: warning: "
        f'scenario.ground_truth.forbidden_actions[0]: none of the {5 * COPIES} call(s) of "git_push" in the '
        f"{6 * COPIES} runs matches this forbidden action; those that differ from it on one key alone match no "
        f'other action and count as extraneous: "branch" ({COPIES})'
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_gate_with_a_mistaken_argument_is_named_since_no_call_needs_its_approval(tmp_path, workers):
    # "prd" for "prod": no deploy falls under the gate, so the deploy after failing tests is safe
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["args"] = {"env": "prd"}

    path = big_corpus(tmp_path, mistaken(edit))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    cards = [json.loads(line) for line in result.stdout.splitlines()]
    unapproved = [c for c in cards if c["run_id"].startswith("gamma-unapproved-deploy")]
    assert len(unapproved) == COPIES and all(c["checks"]["approvals_respected"] for c in unapproved)
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'deploy', after='gated_actions')}: warning: "
        f'scenario.ground_truth.gated_actions[0]: none of the {4 * COPIES} call(s) of "deploy" in the '
        f"{6 * COPIES} runs falls under this gate, so none needed its approval; those that differ from it on "
        f'one key alone: "env" ({4 * COPIES})'
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()


def test_a_forbidden_action_whose_one_key_misses_are_required_calls_is_not_warned_about(tmp_path):
    # never push to release; every push goes to main: those calls are the required push, not misses
    def edit(s):
        s["ground_truth"]["forbidden_actions"][0]["args"] = {"branch": "release", "force": False}

    write_corpus(tmp_path, mistaken(edit))
    assert CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_success_check_some_runs_leave_out_is_named_with_how_many_and_the_first(tmp_path, workers):
    # a harness that skips the deploy check when the deploy did not happen: those runs pass on the rest
    path = big_corpus(tmp_path)
    edited = sorted(tmp_path.glob("beta-edits-test*.jsonl"))
    for run in edited:
        records = [json.loads(line) for line in run.read_text().splitlines()]
        checks = records[-1]["success_eval"]["final_state"]
        records[-1]["success_eval"]["final_state"] = [c for c in checks if c["var"] != "deploy.version"]
        run.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = score(tmp_path, "--workers", workers)
    assert result.exit_code == 0, result.stderr
    assert scenario_warnings(result) == [
        f"{path}:{line_of(path, 'deploy.version')}: warning: scenario.success.final_state[1].var: {COPIES} of the "
        f"{6 * COPIES} runs report success checks, but not this one (the first: {edited[0]}): the end state is the "
        "share of the checks reported, so a check the harness left out cannot fail"
    ]
    assert scenario_warnings(result) == CliRunner().invoke(cli, ["check", str(tmp_path)]).stdout.splitlines()
