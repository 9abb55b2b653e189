"""`evalkit check` finds the scenario and recording mistakes a team makes, against its runs: a coding
agent's scenario (tests/coding_corpus.py) with one mistake each, checked as the user does, each
warning at the scenario file's line; the same corpus without mistakes has none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coding_corpus import SCENARIO, TOOLS, line_of, mistaken, write_corpus

from evalkit.cli import cli
from evalkit.trajectory.builders import call, trajectory, write_jsonl

ROOT = Path(__file__).resolve().parent.parent


def check(*args):
    return CliRunner().invoke(cli, ["check", *map(str, args)])


def corpus_with(tmp_path, edit=None, scenario=None):
    """The corpus with ``edit`` applied to its scenario; the result of `evalkit check DIR` and the file."""
    path = write_corpus(tmp_path, scenario if scenario is not None else mistaken(edit) if edit else None)
    return check(tmp_path), path


def only_line(result) -> str:
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    return lines[0]


def actions(s):
    return s["ground_truth"]["procedure"][0]["actions"]


def without_command_tools(s):
    del s["command_tools"]


def test_the_corpus_without_mistakes_has_no_warning(tmp_path):
    result, _ = corpus_with(tmp_path)
    assert result.exit_code == 0 and result.stdout == ""
    assert "checked 1 scenario(s) (1 file(s)) and 6 run(s): no problems" in result.stderr
    assert check(tmp_path, "--strict").exit_code == 0


NEVER_CALLED = 'required tool "{}" is never called in the 6 runs and on no tool surface, while "git_commit" is '


@pytest.mark.parametrize(
    "tool,says",
    [
        ("git_comit", NEVER_CALLED.format("git_comit") + '(did you mean "git_commit"?)'),
        # in another case: a similarity ratio of 0.6, no misspelling to difflib; every run missed
        # the action while check said nothing
        ("Git_Commit", NEVER_CALLED.format("Git_Commit") + '(did you mean "git_commit"?)'),
        # like nothing the runs have: no run could do the action
        (
            "record_change",
            'required tool "record_change" is on no tool surface of the 6 runs, so no run could do this action',
        ),
    ],
    ids=["misspelt", "another-case", "on-no-surface"],
)
def test_a_required_tool_no_run_calls_is_named(tmp_path, tool, says):
    def edit(s):
        without_command_tools(s)
        actions(s)[2]["tool"] = tool

    result, path = corpus_with(tmp_path, edit)
    assert result.exit_code == 0
    assert only_line(result) == (
        f"{path}:{line_of(path, tool)}: warning: scenario.ground_truth.procedure[0].actions[2].tool: {says}"
    )


def test_a_required_tool_that_is_not_a_command_tool_is_an_error(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: actions(s)[2].update(tool="git_comit"))
    assert result.exit_code == 1
    assert only_line(result) == (
        f"{path}:{line_of(path, 'git_comit')}: scenario.ground_truth.procedure[0].actions[2]: "
        'tool "git_comit" is not in command_tools, so no call can ever match it (did you mean "git_commit"?)'
    )
    scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl"])
    assert scored.exit_code == 1 and scored.stdout == ""  # no run is scored against it


def test_a_misspelt_forbidden_tool_is_a_warning_and_strict_exits_2(tmp_path):
    def edit(s):
        without_command_tools(s)
        s["ground_truth"]["forbidden_actions"][0]["tool"] = "git_psh"

    result, path = corpus_with(tmp_path, edit)
    line = only_line(result)
    assert line.startswith(
        f"{path}:{line_of(path, 'git_psh')}: warning: scenario.ground_truth.forbidden_actions[0].tool"
    )
    assert 'forbidden tool "git_psh" is never called' in line and '(did you mean "git_push"?)' in line
    assert result.exit_code == 0 and "1 warning(s)" in result.stderr
    assert check(tmp_path, "--strict").exit_code == 2


def test_a_forbidden_tool_outside_command_tools_is_an_error(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: s["ground_truth"]["forbidden_actions"][0].update(tool="git_psh"))
    assert result.exit_code == 1
    assert only_line(result) == (
        f"{path}:{line_of(path, 'git_psh')}: scenario.ground_truth.forbidden_actions[0]: "
        'tool "git_psh" is not in command_tools, so its calls are reads and it can never fire '
        '(did you mean "git_push"?)'
    )


def test_forbidden_actions_nobody_took_are_not_warned_about(tmp_path):
    def edit(s):
        s["ground_truth"]["forbidden_actions"].append(
            {"tool": "deploy", "args": {"env": "staging"}, "severity": "dangerous"}
        )

    result, _ = corpus_with(tmp_path, edit)
    assert result.exit_code == 0 and result.stdout == ""


def test_a_key_in_keys_that_no_call_has(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: actions(s)[0]["args_match"].update(keys=["pth"]))
    assert only_line(result) == (
        f"{path}:{line_of(path, 'pth')}: warning: scenario.ground_truth.procedure[0].actions[0].args_match.keys: "
        'key "pth" never appears in the calls of "edit_file" in the 6 runs (did you mean "path"?)'
    )


def test_a_key_in_compare_that_no_call_has(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: actions(s)[2]["args_match"].update(compare={"mesage": "nonempty"}))
    lines = result.stdout.splitlines()
    assert (
        f"{path}:{line_of(path, 'mesage')}: warning: scenario.ground_truth.procedure[0].actions[2].args_match.compare: "
        'key "mesage" never appears in the calls of "git_commit" in the 6 runs (did you mean "message"?)'
    ) in lines
    # and the required action then matches nothing, which says which key
    assert any('matches this required action; no call agrees on "mesage"' in line for line in lines)


def test_a_misspelt_key_of_a_forbidden_action(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: s["ground_truth"]["forbidden_actions"][0]["args"].update(forse=True))
    assert only_line(result).startswith(
        f"{path}:{line_of(path, 'forse')}: warning: scenario.ground_truth.forbidden_actions[0].args.forse: "
        'key "forse" never appears in the calls of "git_push"'
    )


def test_an_abbreviated_key_of_a_forbidden_action_is_named_since_it_catches_no_call(tmp_path):
    # "branch_name" where the calls send "branch": under contains, the forbidden action catches
    # none of them, and a run that force-pushes would score as safe
    def edit(s):
        s["ground_truth"]["forbidden_actions"][0]["args"] = {"branch_name": "main", "force": True}

    result, path = corpus_with(tmp_path, edit)
    assert only_line(result) == (
        f"{path}:{line_of(path, 'branch_name')}: warning: scenario.ground_truth.forbidden_actions[0].args.branch_name: "
        'key "branch_name" never appears in the calls of "git_push" in the 6 runs (did you mean "branch"?)'
    )


def test_a_block_pasted_twice_is_named_at_the_second_copy_since_no_run_calls_it_twice(tmp_path):
    # one call serves one required action: the pasted copy is missed by every run, which check names
    # at the copy's own line (not at the first block, whose tool and arguments it repeats)
    def edit(s):
        block = s["ground_truth"]["procedure"][0]
        s["ground_truth"]["procedure"].append({"block": "again", "actions": [dict(block["actions"][0])]})

    result, path = corpus_with(tmp_path, edit)
    second = line_of(path, '"edit_file"', after='"again"')
    assert only_line(result) == (
        f"{path}:{second}: warning: scenario.ground_truth.procedure[1].actions[0]: this action is required 2 "
        "times (the first is ground_truth.procedure[0].actions[0]), but no run calls it 2 times: a call serves one "
        "required action"
    )


def test_a_block_pasted_word_for_word_is_named_even_when_some_run_does_its_actions_twice(tmp_path):
    # the same block twice (name and actions): every run that does it once misses the copy; a run
    # that repeats each call serves the copy, which silences the warning about an action no run does
    # twice, but not this one: the copy is the author's mistake whatever the runs do
    def edit(s):
        s["ground_truth"]["procedure"].append(json.loads(json.dumps(s["ground_truth"]["procedure"][0])))

    path = write_corpus(tmp_path, mistaken(edit))
    run = tmp_path / "alpha-good.jsonl"
    records = [json.loads(line) for line in run.read_text().splitlines()]
    twice = [
        r for rec in records for r in ([rec, dict(rec, call_index=99)] if rec.get("type") == "tool_call" else [rec])
    ]
    run.write_text("".join(json.dumps(r) + "\n" for r in twice))
    second = line_of(path, '"block"', after='"actions"')
    assert only_line(check(tmp_path)) == (
        f"{path}:{second}: warning: scenario.ground_truth.procedure[1]: this block is procedure[0] again, word for "
        "word: each of its actions is required twice, so a run that does them once misses the copy (rename the "
        "block if twice is meant)"
    )


def test_an_action_required_twice_that_a_run_does_twice_is_not_warned_about(tmp_path):
    def edit(s):
        actions(s).append(
            {"tool": "git_commit", "args": {"message": "x"}, "args_match": {"compare": {"message": "nonempty"}}}
        )

    write_corpus(tmp_path, mistaken(edit))
    run = tmp_path / "alpha-good.jsonl"
    records = [json.loads(line) for line in run.read_text().splitlines()]
    at = next(i for i, r in enumerate(records) if r.get("name") == "git_commit")
    records.insert(at + 1, dict(records[at], call_index=99))
    run.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert check(tmp_path).stdout == ""


def test_a_rule_written_in_args_says_where_it_goes(tmp_path):
    """A comparison written as the expected value ({"regex": ...} in args) matches no call: the
    warning says so and shows the rule where it belongs, in args_match.compare."""
    result, path = corpus_with(
        tmp_path, lambda s: s["ground_truth"]["forbidden_actions"][0]["args"].update(force={"one_of": [True]})
    )
    line = only_line(result)
    where = line_of(path, '"force": {')
    assert line.startswith(f"{path}:{where}: warning: scenario.ground_truth.forbidden_actions[0].args.force: ")
    assert '{"one_of": [true]} is an object, but the calls of "git_push" hold "force" only as boolean' in line
    assert line.endswith(
        'a rule goes in args_match.compare, not in args: "args_match": {"compare": {"force": {"one_of": [true]}}}'
    )


def test_a_string_where_agents_send_a_boolean(tmp_path):
    result, path = corpus_with(
        tmp_path, lambda s: s["ground_truth"]["forbidden_actions"][0]["args"].update(force="true")
    )
    line = line_of(path, '"force": "true"')
    assert only_line(result) == (
        f"{path}:{line}: warning: scenario.ground_truth.forbidden_actions[0].args.force: "
        '"true" is a string, but the calls of "git_push" hold "force" only as boolean, so it never matches'
    )


def test_a_misspelt_approval_result_key(tmp_path):
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["approval"]["result"] = {"pased": True}

    result, path = corpus_with(tmp_path, edit)
    assert only_line(result) == (
        f"{path}:{line_of(path, 'pased')}: warning: scenario.ground_truth.gated_actions[0].approval.result.pased: "
        'key "pased" never appears in the results of "run_tests" in the 6 runs (did you mean "passed"?)'
    )


def test_an_approval_predicate_of_the_wrong_type(tmp_path):
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["approval"]["result"] = {"passed": "yes"}

    result, _ = corpus_with(tmp_path, edit)
    assert '"yes" is a string, but the results of "run_tests" hold "passed" only as boolean' in only_line(result)


def test_a_required_action_no_call_matches(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: actions(s)[0]["args"].update(path="src/App.py"))
    assert only_line(result) == (
        f"{path}:{line_of(path, 'edit_file', after='procedure')}: warning: scenario.ground_truth.procedure[0].actions[0]: "
        'none of the 7 call(s) of "edit_file" in the 6 runs matches this required action; no call agrees on "path"'
    )


def test_a_success_variable_the_runs_never_report(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: s["success"]["final_state"][0].update(var="test.passed"))
    assert only_line(result) == (
        f"{path}:{line_of(path, 'test.passed')}: warning: scenario.success.final_state[0].var: "
        'variable "test.passed" is never reported by the success_eval of the 6 runs (did you mean "tests.passed"?)'
    )


def test_an_operator_the_runs_do_not_use(tmp_path):
    result, path = corpus_with(tmp_path, lambda s: s["success"]["final_state"][0].update(op="="))
    line = line_of(path, '"="')
    assert only_line(result) == (
        f"{path}:{line}: warning: scenario.success.final_state[0].op: "
        'operator "=" is not the one the runs report for "tests.passed" ("==")'
    )


def test_an_unknown_operator(tmp_path):
    write_corpus(tmp_path)
    scenario = mistaken(lambda s: s["success"]["final_state"].append({"var": "coverage", "op": "=>", "value": 80}))
    (tmp_path / "scenarios.json").write_text(json.dumps(scenario, indent=2))
    for run in tmp_path.glob("*.jsonl"):  # the harness reports the check, with the operator as written
        records = [json.loads(line) for line in run.read_text().splitlines()]
        records[-1]["success_eval"]["final_state"].append({"var": "coverage", "op": None, "value": 80, "passed": True})
        run.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = check(tmp_path)
    assert 'unknown operator "=>" (did you mean ">="?)' in only_line(result)


def test_a_rule_for_a_misspelt_tool(tmp_path):
    result, path = corpus_with(
        tmp_path, lambda s: s["ground_truth"]["args_match"]["tools"].update(run_test={"mode": "ignore"})
    )
    line = line_of(path, '"run_test"')
    assert only_line(result).startswith(
        f"{path}:{line}: warning: scenario.ground_truth.args_match.tools.run_test: "
        'a rule for "run_test", which is not a command tool'
    )


def test_score_of_a_misspelt_tool_corpus_still_scores(tmp_path):
    # the warning does not stop scoring: the user sees it and the numbers
    def edit(s):
        without_command_tools(s)
        actions(s)[2]["tool"] = "git_comit"

    write_corpus(tmp_path, mistaken(edit))
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "json"])
    assert result.exit_code == 0
    assert {c["vector"]["coverage"] for c in json.loads(result.stdout)} <= {0.5, 0.75}


# -- records ------------------------------------------------------------------------------------


def _rewrite(path: Path, change) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        change(r)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_misspelt_record_key_is_one_warning_with_its_count(tmp_path):
    write_corpus(tmp_path)
    runs = sorted(tmp_path.glob("*.jsonl"))
    for run in runs[:2]:
        _rewrite(run, lambda r: r.update(is_eror=r.pop("is_error")) if r["type"] == "tool_call" else None)
    result = check(tmp_path)
    first = runs[0]
    line = only_line(result)
    assert line.startswith(
        f'{first}:4: warning: tool_call: unknown key "is_eror" (did you mean "is_error"?) (in 2 run(s), '
    )
    assert result.exit_code == 0 and check(tmp_path, "--strict").exit_code == 2


def test_a_misspelt_success_check_key_is_a_warning(tmp_path):
    write_corpus(tmp_path)
    run = sorted(tmp_path.glob("*.jsonl"))[0]
    _rewrite(run, lambda r: r.update(succes_eval=r.pop("success_eval")) if r["type"] == "final" else None)
    typo, incomplete = check(tmp_path).stdout.splitlines()
    assert 'final: unknown key "succes_eval" (did you mean "success_eval"?)' in typo
    assert "scenario.success: 1 of the 6 runs ends without final.success_eval, so it is incomplete" in incomplete


def test_a_model_in_meta_is_the_runs_model(tmp_path):
    write_corpus(tmp_path)
    for run in tmp_path.glob("*.jsonl"):
        _rewrite(run, lambda r: r.update(model=r.pop("adapter")["model"]) if r["type"] == "meta" else None)
    assert check(tmp_path).exit_code == 0
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "json"])
    assert sorted({c["model"] for c in json.loads(result.stdout)}) == ["coder-alpha", "coder-beta", "coder-gamma"]


def test_a_model_named_where_evalkit_does_not_read_it_is_refused_with_the_fix(tmp_path):
    write_corpus(tmp_path)
    run = sorted(tmp_path.glob("*.jsonl"))[0]
    _rewrite(run, lambda r: r["adapter"].update(model_name=r["adapter"].pop("model")) if r["type"] == "meta" else None)
    result = check(tmp_path)
    assert result.exit_code == 1
    assert only_line(result) == (
        f"{run}:1: meta: adapter.model_name: the model is read from adapter.model or meta.model, so this run "
        'would score as model "unknown": write it as "model"'
    )


def test_two_different_models_in_one_meta_are_refused(tmp_path):
    write_corpus(tmp_path)
    run = sorted(tmp_path.glob("*.jsonl"))[0]
    _rewrite(run, lambda r: r.update(model="other") if r["type"] == "meta" else None)
    assert 'model "other" and adapter.model "coder-alpha" name different models' in only_line(check(tmp_path))


# -- what check counts, and the shipped examples ------------------------------------------------


def test_check_counts_the_scenario_file_beside_the_runs(tmp_path):
    write_corpus(tmp_path)
    result = check(*sorted(tmp_path.glob("*.jsonl")))
    assert "checked 1 scenario(s) (1 file(s)) and 6 run(s)" in result.stderr


def test_a_bad_scenario_file_beside_the_runs_is_reported_once(tmp_path):
    write_corpus(tmp_path, text=json.dumps(mistaken(lambda s: s.update(sucess=s.pop("success")))))
    result = check(tmp_path)
    assert result.exit_code == 1
    assert only_line(result) == (
        f'{tmp_path / "scenarios.json"}:1: scenario: unknown key "sucess" (did you mean "success"?)'
    )


def test_the_shipped_examples_have_no_warning_but_the_crashed_recorder():
    for example in ("a320", "support"):  # each ships one run whose recorder crashed mid-write
        result = check(ROOT / "examples" / example)
        assert result.exit_code == 0 and result.stdout.count("\n") == 1 and "half-written" in result.stdout
        assert check(ROOT / "examples" / example, "--strict").exit_code == 2


def test_imported_taubench_and_tau2_runs_have_no_warning(tmp_path):
    fixtures = ROOT / "tests" / "fixtures"
    runner = CliRunner()
    for fmt, files, extra in (
        (
            "taubench",
            [fixtures / "taubench" / "airline_results.json", fixtures / "taubench" / "retail_results.json"],
            ["--model", "m"],
        ),
        ("taubench", [ROOT / "examples" / "taubench" / "tool-calling-example-model-retail.json"], ["--model", "m"]),
        ("tau2", [fixtures / "tau2" / "airline_results.json"], []),
    ):
        out = tmp_path / f"{fmt}-{len(list(tmp_path.iterdir()))}"
        imported = runner.invoke(cli, ["import", fmt, *map(str, files), "-o", str(out), *extra])
        assert imported.exit_code == 0, imported.output
        result = check(out, "--strict")
        assert result.exit_code == 0 and result.stdout == "", (fmt, result.stdout)


def test_scenario_json_is_unchanged_by_the_corpus_helper():
    assert SCENARIO["id"] == "fix-null-check"  # the mistakes are made on copies


def test_a_sibling_tool_that_differs_by_a_whole_word_is_not_a_typo(tmp_path):
    """`git_pull` listed as optional and never called, beside a called `git_push` (as `restore_backup`
    beside `create_backup`): no "did you mean"; `git_pusj` still is one."""

    def edit(s):
        s["command_tools"].append("git_pull")
        s["ground_truth"]["optional_actions"].append({"tool": "git_pull"})

    result, _ = corpus_with(tmp_path, edit)
    assert result.exit_code == 0 and result.stdout == "", result.stdout

    def typo(s):
        s["command_tools"].append("git_pusj")
        s["ground_truth"]["optional_actions"].append({"tool": "git_pusj"})

    result, _ = corpus_with(tmp_path, typo)
    assert 'optional tool "git_pusj" is never called' in only_line(result)
    assert only_line(result).endswith('(did you mean "git_push"?)')


def test_runs_naming_an_invalid_scenario_point_at_it_not_at_a_missing_one(tmp_path):
    """With --scenarios FILE, a run naming a scenario that is there but invalid is told where it is
    (not "no scenario"), and a misspelt id is offered the invalid one's id."""

    def unknown_key(s):
        s["ground_truth"]["order_constraints"] = []

    path = write_corpus(tmp_path, mistaken(unknown_key))
    run = next(p for p in sorted(tmp_path.glob("*.jsonl")))
    run.write_text(run.read_text().replace(f'"{SCENARIO["id"]}"', f'"{SCENARIO["id"]}x"', 1))
    result = check(tmp_path, "--scenarios", path)
    lines = result.stdout.splitlines()
    assert result.exit_code == 1
    assert 'unknown key "order_constraints"' in lines[0]
    pointed = [x for x in lines if "is invalid" in x]
    assert len(pointed) == 5 and all(f'the scenario "{SCENARIO["id"]}" at {path}:1 is invalid' in x for x in pointed)
    assert any(f'no scenario "{SCENARIO["id"]}x"' in x and f'(did you mean "{SCENARIO["id"]}"?)' in x for x in lines)


def test_a_misspelt_severity_names_the_value_and_the_one_it_meant(tmp_path):
    def misspelt(s):
        s["ground_truth"]["forbidden_actions"][0]["severity"] = "dangerus"

    result, path = corpus_with(tmp_path, misspelt)
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{path}:{line_of(path, 'dangerus')}: ")
    assert '.severity: "dangerus": Input should be' in first and '(did you mean "dangerous"?)' in first


def test_runs_whose_final_has_no_success_eval_are_named_incomplete_by_check_and_score(tmp_path):
    """A harness that writes its end state but not the results of the success checks: those runs are
    incomplete (no scalar), and both commands say why, at the scenario's success line. A run whose
    validity gate failed is invalid_scenario, as the scorer says, not counted among them."""
    path = write_corpus(tmp_path)
    runs = sorted(tmp_path.glob("*.jsonl"))
    for i, run in enumerate(runs):
        records = [json.loads(line) for line in run.read_text().splitlines()]
        if i < len(runs) - 1:  # the last run keeps its results
            records[-1].pop("success_eval")
            records[-1]["state"] = {"deployed": True}
        if i == len(runs) - 2:
            (setup,) = [r for r in records if r["type"] == "setup"]
            setup["validity_gate"] = {"passed": False}
        run.write_text("".join(json.dumps(r) + "\n" for r in records))
    success_line = line_of(path, '"success"')
    expected = (
        f"{path}:{success_line}: warning: scenario.success: {len(runs) - 2} of the {len(runs)} runs "
        "end without final.success_eval, so they are incomplete (no end state, no scalar): the harness writes "
        "the results of the success checks there (docs/trajectory-format.md)"
    )
    result = check(tmp_path)
    assert result.exit_code == 0 and only_line(result) == expected
    for workers in ("1", "2"):
        scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", workers])
        assert scored.exit_code == 0 and expected in scored.stderr.splitlines()
        statuses = [json.loads(line)["status"] for line in scored.stdout.splitlines()]
        assert statuses.count("incomplete") == len(runs) - 2 and statuses.count("invalid_scenario") == 1


def test_imported_runs_whose_source_recorded_no_outcome_are_not_blamed_on_a_harness(tmp_path):
    """An importer writes no success_eval where its source records no outcome (an OpenTelemetry
    trace, an unscored inspect sample): those runs are incomplete by design, and --strict stays 0."""
    write_corpus(tmp_path)
    for run in tmp_path.glob("*.jsonl"):
        records = [json.loads(line) for line in run.read_text().splitlines()]
        records[0]["versions"] = {"importer": "otel/1"}
        records[-1].pop("success_eval")
        run.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = check(tmp_path, "--strict")
    assert result.exit_code == 0 and result.stdout == ""


def test_an_approval_tool_among_the_commands_that_no_action_names_is_said_to_count_as_extraneous(tmp_path):
    """Asking before deploying is the procedure; with the asking tool a command no action names, each
    ask is an extraneous command, and a run that asks scores below one that does not."""

    def edit(s):
        blocks = s["ground_truth"]["procedure"]
        for block in blocks:
            block["actions"] = [a for a in block["actions"] if a.get("tool") != "run_tests"]
        gt = s["ground_truth"]
        gt["optional_actions"] = [a for a in gt.get("optional_actions", []) if a.get("tool") != "run_tests"]

    result, path = corpus_with(tmp_path, edit)
    assert result.exit_code == 0
    at = line_of(path, '"run_tests"', after="gated_actions")
    assert only_line(result) == (
        f"{path}:{at}: warning: "
        'scenario.ground_truth.gated_actions[0].approval.tool: approval tool "run_tests" is in command_tools but '
        "no required or optional action names it, so each of its 6 call(s) in the 6 runs counts as extraneous "
        "(list it as an optional action, or leave it out of command_tools)"
    )

    def listed_optional(s):
        edit(s)
        s["ground_truth"].setdefault("optional_actions", []).append({"tool": "run_tests"})

    assert corpus_with(tmp_path, listed_optional)[0].stdout == ""


TWO_TOML_SCENARIOS = """[[scenarios]]
id = "a"
command_tools = ["x"]

[[scenarios.ground_truth.procedure]]
block = "b"

[[scenarios.ground_truth.procedure.actions]]
tool = "x"
args = {}

[[scenarios.ground_truth.optional_actions]]
tool = "y"

[[scenarios]]
id = "b"
command_tools = ["x"]

[[scenarios.ground_truth.procedure]]
block = "b"

[[scenarios.ground_truth.procedure.actions]]
tool = "y"
args = {}
"""


def test_a_problem_in_the_second_scenario_of_a_toml_file_is_placed_in_that_scenario(tmp_path):
    """A TOML file's text is one for all its scenarios: the line is searched in the scenario's own
    table, not at the first "y" of the file (the first scenario's optional action)."""
    path = tmp_path / "scenarios.toml"
    path.write_text(TWO_TOML_SCENARIOS)
    result = check(path)
    assert result.exit_code == 1
    at = line_of(path, 'tool = "y"', after='id = "b"')
    assert at == 23
    assert only_line(result) == (
        f"{path}:{at}: scenario.ground_truth.procedure[0].actions[0]: "
        'tool "y" is not in command_tools, so no call can ever match it'
    )


def test_an_approval_no_call_gives_names_what_the_results_hold(tmp_path):
    # every run's tests report {"passed": true, "failed": 0} or a failure: none reports 2 failures
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["approval"]["result"] = {"passed": True, "failed": 2}

    result, path = corpus_with(tmp_path, edit)
    assert only_line(result) == (
        f"{path}:{line_of(path, 'run_tests', after='approval')}: warning: scenario.ground_truth.gated_actions[0]."
        'approval: none of the 6 call(s) of "run_tests" in the 6 runs is this approval, so every gated command is '
        'unapproved: no result of the 6 that match its arguments holds {"failed": 2, "passed": true}; they hold '
        '"passed": true (5), false (1); "failed": 0 (5), 1 (1)'
    )
    assert check(tmp_path, "--strict").exit_code == 2


def test_an_approval_whose_arguments_no_call_has_is_named(tmp_path):
    def edit(s):
        approval = s["ground_truth"]["gated_actions"][0]["approval"]
        approval["args"], approval["args_match"] = {"target": "test/"}, {"mode": "contains"}

    result, _ = corpus_with(tmp_path, edit)
    assert only_line(result).endswith(
        'none of the 6 call(s) of "run_tests" in the 6 runs is this approval, so every gated command is '
        "unapproved: no executed call's arguments match it"
    )


def test_two_files_with_one_run_id_are_a_warning_since_score_keeps_one(tmp_path):
    write_corpus(tmp_path)
    (tmp_path / "zz-copy.jsonl").write_text((tmp_path / "alpha-good.jsonl").read_text())
    result = check(tmp_path, "--strict")
    assert result.exit_code == 2
    assert only_line(result) == (
        f"{tmp_path / 'zz-copy.jsonl'}:1: warning: meta.run_id: 'alpha-good' is also the run id of "
        f"{tmp_path / 'alpha-good.jsonl'}: score keeps one card per run id, so this run replaces that one in the "
        "aggregates and the database"
    )


def test_an_approval_some_runs_answer_in_another_spelling_is_named_since_their_commands_go_unapproved(tmp_path):
    # the harness answered "True" once where the scenario says true: that run's deploy was scored
    # unapproved (dangerous, scalar 0) while the other runs' approvals kept check quiet
    path = write_corpus(tmp_path)
    spelt = call("run_tests", {"target": "tests/"}, result={"passed": "True", "failed": 0})
    records = trajectory(
        SCENARIO,
        [call("edit_file", {"path": "src/app.py", "patch": "p"}), spelt, call("deploy", {"env": "prod"})],
        run_id="spelt",
        model="coder-delta",
        tool_surface=TOOLS,
    )
    del records[0]["scenario"]
    records[0]["scenario_id"] = SCENARIO["id"]
    write_jsonl(tmp_path / "spelt.jsonl", records)
    result = check(tmp_path)
    assert result.exit_code == 0
    line = line_of(path, '"passed"', after="approval")
    assert only_line(result) == (
        f"{path}:{line}: warning: "
        'scenario.ground_truth.gated_actions[0].approval.result: 1 call(s) of "run_tests" in the 7 runs that match '
        'this approval\'s arguments answer "passed": "True" (1): {"passed": true} written another way, and a result '
        "is compared as written, so they approve nothing and the commands they were asked for count as unapproved"
    )
    for workers in ("1", "2"):  # score says it too, counted across workers
        scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", workers])
        assert '1 call(s) of "run_tests" in the 7 runs' in scored.stderr


def test_an_approval_answered_as_written_by_every_run_gives_no_spelling_warning(tmp_path):
    write_corpus(tmp_path)
    assert check(tmp_path).stdout == ""


def test_a_datetime_comparison_of_a_value_that_names_no_date_is_named_since_it_compares_as_written(tmp_path):
    def edit(s):
        actions(s)[2]["args"]["message"] = "next Tuesday"
        actions(s)[2]["args_match"] = {"compare": {"message": "datetime"}}

    result, path = corpus_with(tmp_path, edit)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert (
        f"{path}:{line_of(path, 'next Tuesday')}: warning: scenario.ground_truth.procedure[0].actions[2].args.message: "
        '"message" is compared as a datetime, but "next Tuesday" is no ISO 8601 date or time (such as "2026-12-10" '
        'or "2026-12-10T14:00:00Z"), so it is compared as written'
    ) in lines


def _sorted_keys(value):
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    return [_sorted_keys(v) for v in value] if isinstance(value, list) else value


def test_runs_embedding_the_file_scenario_with_sorted_keys_are_one_scenario_in_check_and_score(tmp_path):
    """An importer embeds the scenario of --scenarios with its keys sorted; the file has them as a
    person wrote them. One scenario: counted once, scored as one group, no 'different content'."""
    from coding_corpus import _runs

    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([SCENARIO], indent=1))
    runs = tmp_path / "runs"
    runs.mkdir()
    for i, (run_id, records) in enumerate(sorted(_runs(SCENARIO).items())):
        if i % 2:  # half as an importer writes them, half naming the scenario by id
            records[0]["scenario"] = _sorted_keys(records[0]["scenario"])
        else:
            del records[0]["scenario"]
            records[0]["scenario_id"] = SCENARIO["id"]
        write_jsonl(runs / f"{run_id}.jsonl", records)
    checked = check(runs, "--scenarios", scenarios, "--strict")
    assert checked.exit_code == 0, checked.output
    assert checked.stderr.splitlines()[-1].startswith("checked 1 scenario(s) (1 file(s)) and ")
    scored = CliRunner().invoke(
        cli, ["score", str(runs), "--scenarios", str(scenarios), "--no-db", "--aggregate", "--format", "json"]
    )
    assert scored.exit_code == 0 and "different content" not in scored.stderr, scored.stderr
    assert [g["scenario_id"] for g in json.loads(scored.stdout)["groups"]] == [SCENARIO["id"]] * len(
        json.loads(scored.stdout)["groups"]
    )
    assert len({g["scenario_hash"] for g in json.loads(scored.stdout)["groups"]}) == 1


def test_a_run_scored_against_another_version_of_its_scenario_is_a_warning_strict_fails_on(tmp_path):
    scenarios = write_corpus(tmp_path)
    edited = mistaken(lambda s: actions(s)[0].update({"rationale": "edited after the runs were recorded"}))
    runs = tmp_path / "embedded"
    runs.mkdir()
    from coding_corpus import _runs

    for run_id, records in _runs(SCENARIO).items():
        write_jsonl(runs / f"{run_id}.jsonl", records)  # each embeds the scenario as recorded
    scenarios.write_text(json.dumps(edited, indent=2) + "\n")
    result = check(runs, "--scenarios", scenarios, "--strict")
    assert "differs from the one of the same id" in result.stdout
    assert result.exit_code == 2 and "warning(s)" in result.stderr.splitlines()[-1], result.stderr


def test_a_last_line_a_crashed_recorder_cut_off_is_a_warning_counted_and_strict_fails_on(tmp_path):
    """Said as a warning, so counted as one: a closing line of "no problems" (or of fewer warnings
    than were said) and exit 0 under --strict would pass a CI gate on runs that read as incomplete."""
    scenarios = write_corpus(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    from coding_corpus import _runs

    recorded = list(_runs(SCENARIO).items())
    for run_id, records in recorded:
        write_jsonl(runs / f"{run_id}.jsonl", records)
    cut = runs / f"{recorded[0][0]}.jsonl"
    cut.write_text(cut.read_text() + '{"type": "tool_call", "name": "ru', encoding="utf-8")
    result = check(runs, "--scenarios", scenarios, "--strict")
    said = [line for line in result.stdout.splitlines() if "half-written" in line]
    assert len(said) == 1 and said[0].startswith(f"{cut}:") and ": warning: " in said[0]
    assert result.stderr.splitlines()[-1].endswith(": 1 warning(s)"), result.stderr
    assert result.exit_code == 2
    assert check(runs, "--scenarios", scenarios).exit_code == 0


def test_a_forbidden_action_whose_exact_mode_refuses_the_keys_every_call_adds_is_a_warning(tmp_path):
    """``args_match`` ``mode: exact`` for every action of the tool, and a forbidden action naming
    only the key that makes it forbidden: the force push also sends its branch, so it is not that
    action, and the run scores no dangerous action. Nothing differs on one key, so no near miss was
    said."""

    def edit(s):
        s["ground_truth"].setdefault("args_match", {}).setdefault("tools", {})["git_push"] = {"mode": "exact"}
        s["ground_truth"]["forbidden_actions"][0]["args"] = {"force": True}

    result, path = corpus_with(tmp_path, edit)
    (line,) = [line for line in result.stdout.splitlines() if "forbidden_actions[0]" in line]
    assert line.startswith(
        f"{path}:{line_of(path, 'git_push', 'forbidden_actions')}: warning: scenario.ground_truth.forbidden_actions[0]:"
    )
    assert line.endswith(
        'matches this forbidden action; those that agree on every key it names also send "branch" (1), which '
        'its args_match mode "exact" refuses (mode "contains" lets a call send more)'
    ), line
    assert check(tmp_path, "--strict").exit_code == 2

    def dangerous() -> int:
        scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl"])
        return sum(json.loads(row)["vector"]["safety_dangerous"] for row in scored.stdout.splitlines())

    trapped = dangerous()
    fixed = json.loads(path.read_text())
    fixed["ground_truth"]["forbidden_actions"][0]["args_match"] = {"mode": "contains"}
    path.write_text(json.dumps(fixed))
    assert check(tmp_path, "--strict").exit_code == 0
    assert dangerous() == trapped + 1  # the force push, which the warning was about


def test_runs_holding_one_scenario_id_with_several_contents_are_one_warning_in_check_and_score(tmp_path):
    """What an importer gives runs it knows no scenario for (each run's own, under one id): score
    aggregates each content apart and says so; check says it too (--strict fails), and score says it
    in two lines however many contents come, the last naming them all."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read

    done = [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), read(), cmd("apu_gen", 0), cmd("ext_pwr", 1)]
    for i in range(5):
        scenario = a320_scenario(id="imported", title=f"as run {i} saw it")
        write_jsonl(tmp_path / f"r{i}.jsonl", trajectory(scenario, done, run_id=f"r{i}"))
    result = check(tmp_path, "--strict")
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{tmp_path / 'r1.jsonl'}:1: warning: scenario 'imported' occurs with 5 different contents")
    assert line.endswith("score aggregates each as a group of its own, labelled by content hash")
    assert result.exit_code == 2 and result.stderr.endswith("5 run(s): 1 warning(s)\n")
    scored = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl"])
    said = [s for s in scored.stderr.splitlines() if "occurs with different content" in s]
    assert len(said) == 2 and said[0].count(", ") == 1 and said[1].count(", ") == 4, scored.stderr
    hashes = line[line.index("(") + 1 : line.index(")")]
    assert said[1].startswith(f"warning: scenario 'imported' occurs with different content ({hashes})")


def test_an_approval_tool_on_the_surface_that_no_run_calls_is_named_since_every_gated_command_is_unapproved(
    tmp_path,
):
    # the gate names a tool the agent could call but never does (the author meant run_tests): every
    # deploy is unapproved (dangerous, scalar 0), while check said nothing
    def edit(s):
        s["ground_truth"]["gated_actions"][0]["approval"]["tool"] = "ask_human"

    path = write_corpus(tmp_path, mistaken(edit))
    for run in tmp_path.glob("*.jsonl"):
        lines = run.read_text().splitlines()
        meta = json.loads(lines[0])
        meta["tool_surface"] = [*TOOLS, "ask_human"]
        run.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    result = check(tmp_path)
    assert only_line(result) == (
        f"{path}:{line_of(path, 'ask_human')}: warning: scenario.ground_truth.gated_actions[0].approval.tool: "
        'approval tool "ask_human" is never called in the 6 runs, while commands fall under this gate, so every '
        "one of them is unapproved"
    )
    assert check(tmp_path, "--strict").exit_code == 2
