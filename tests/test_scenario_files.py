"""Scenario files (--scenarios): runs that name their scenario, embedded ones winning, every format."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.engines.pipeline import score_files
from evalkit.errors import InputError
from evalkit.trajectory.builders import call, trajectory, write_jsonl
from evalkit.trajectory.scenario_files import load_scenarios


def score(paths, warn=None, scenarios=None):
    """The files' cards and one line per bad file, as `evalkit score` reports them."""
    cards, errors = score_files(paths, warn=warn, scenarios=scenarios).collect()
    return cards, [str(error) for error in errors]


SC = {
    "id": "refund-b22",
    "command_tools": ["issue_refund"],
    "ground_truth": {"procedure": [{"block": "b", "actions": [{"tool": "issue_refund", "args": {"order_id": "B22"}}]}]},
    "success": {"final_state": [{"var": "ok", "op": "==", "value": True}]},
}
CALLS = [call("issue_refund", {"order_id": "B22"})]


def named_run(tmp_path, name="r", scenario_id="refund-b22"):
    records = trajectory(SC, CALLS, run_id=name, tool_surface=["issue_refund"])
    del records[0]["scenario"]
    records[0]["scenario_id"] = scenario_id
    return write_jsonl(tmp_path / f"{name}.jsonl", records)


def test_a_run_naming_its_scenario_takes_it_from_a_json_list(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC, dict(SC, id="other")]))
    cards, errors = score([named_run(tmp_path)], scenarios=[tmp_path / "tasks.json"])
    assert errors == [] and cards[0].vector.coverage == 1.0 and cards[0].scenario_id == "refund-b22"


def test_the_scenario_hash_of_a_file_scenario_equals_the_embedded_one(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps(SC))
    embedded = write_jsonl(tmp_path / "e.jsonl", trajectory(SC, CALLS, run_id="e", tool_surface=["issue_refund"]))
    cards, _ = score([named_run(tmp_path), embedded], scenarios=[tmp_path / "tasks.json"])
    assert cards[0].scenario_hash == cards[1].scenario_hash


def test_jsonl_and_toml_scenario_files(tmp_path):
    (tmp_path / "tasks.jsonl").write_text(json.dumps(SC) + "\n")
    assert "refund-b22" in load_scenarios([tmp_path / "tasks.jsonl"])
    (tmp_path / "tasks.toml").write_text("""
[[scenarios]]
id = "t1"
[scenarios.ground_truth]
procedure = [{block = "b", actions = [{tool = "x", args = {a = 1}}]}]
""")
    assert "t1" in load_scenarios([tmp_path / "tasks.toml"])
    (tmp_path / "one.toml").write_text('id = "t2"\n[ground_truth]\nprocedure = []\n')
    assert "t2" in load_scenarios([tmp_path / "one.toml"])


def test_a_scenarios_wrapper_object_is_a_list(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps({"scenarios": [SC]}))
    assert len(load_scenarios([tmp_path / "tasks.json"])) == 1


def test_an_embedded_scenario_that_differs_wins_with_a_warning_naming_both(tmp_path):
    changed = json.loads(json.dumps(SC))
    changed["ground_truth"]["procedure"][0]["actions"][0]["args"]["order_id"] = "A1"
    (tmp_path / "tasks.json").write_text(json.dumps([changed]))
    run = write_jsonl(tmp_path / "e.jsonl", trajectory(SC, CALLS, run_id="e", tool_surface=["issue_refund"]))
    warnings: list[str] = []
    cards, _ = score([run], warn=warnings.append, scenarios=[tmp_path / "tasks.json"])
    assert cards[0].vector.coverage == 1.0  # the embedded scenario was scored
    assert len(warnings) == 1 and f'{run}:1: warning: the embedded scenario "refund-b22"' in warnings[0]
    assert f"{tmp_path / 'tasks.json'}:1" in warnings[0] and "the embedded one is scored" in warnings[0]


def test_an_identical_embedded_scenario_gives_no_warning(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC]))
    run = write_jsonl(tmp_path / "e.jsonl", trajectory(SC, CALLS, run_id="e", tool_surface=["issue_refund"]))
    warnings: list[str] = []
    score([run], warn=warnings.append, scenarios=[tmp_path / "tasks.json"])
    assert warnings == []


def test_a_run_naming_a_missing_scenario_is_an_error(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC]))
    cards, errors = score([named_run(tmp_path, scenario_id="nope")], scenarios=[tmp_path / "tasks.json"])
    assert cards == [] and errors == [
        f'{tmp_path / "r.jsonl"}:1: meta.scenario_id: no scenario "nope" in the scenario file(s) given'
    ]


def test_a_run_naming_a_scenario_without_scenario_files_is_an_error(tmp_path):
    cards, errors = score([named_run(tmp_path)])
    assert cards == [] and "pass the file that holds it (--scenarios FILE)" in errors[0]


def test_a_repeated_id_is_an_error_naming_both(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC, SC], indent=1))
    with pytest.raises(
        InputError,
        match=r'tasks.json:\d+: scenario.id: "refund-b22" is already the id of the scenario at .*tasks.json:2',
    ):
        load_scenarios([tmp_path / "tasks.json"])


def test_a_bad_scenario_file_is_an_error_naming_the_line_of_the_key(tmp_path):
    bad = json.loads(json.dumps(SC))
    bad["ground_truth"]["forbiden_actions"] = []
    (tmp_path / "tasks.json").write_text(json.dumps([SC, bad], indent=2))
    with pytest.raises(InputError) as info:
        load_scenarios([tmp_path / "tasks.json"])
    text = (tmp_path / "tasks.json").read_text().split("\n")
    line = next(i for i, t in enumerate(text, 1) if "forbiden_actions" in t)
    assert str(info.value) == (
        f'{tmp_path / "tasks.json"}:{line}: scenario.ground_truth: unknown key "forbiden_actions" '
        '(did you mean "forbidden_actions"?)'
    )


def test_cli_score_with_scenarios(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC]))
    run = named_run(tmp_path)
    result = CliRunner().invoke(
        cli, ["score", str(run), "--scenarios", str(tmp_path / "tasks.json"), "--no-db", "--format", "jsonl"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[0])["vector"]["coverage"] == 1.0


def test_cli_score_with_a_bad_scenarios_file_exits_1(tmp_path):
    (tmp_path / "tasks.json").write_text('[{"id": 3}]')
    result = CliRunner().invoke(
        cli, ["score", str(named_run(tmp_path)), "--scenarios", str(tmp_path / "tasks.json"), "--no-db"]
    )
    assert result.exit_code == 1 and "tasks.json:1: scenario.id: Input should be a valid string" in result.stderr


def test_a_scenario_file_given_with_a_problem_says_that_nothing_is_scored_and_where_to_see_every_problem(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC, {"id": 3}]))
    run = named_run(tmp_path)
    db = tmp_path / "e.db"
    result = CliRunner().invoke(cli, ["score", str(run), "--scenarios", str(tmp_path / "tasks.json"), "--db", str(db)])
    assert result.exit_code == 1 and not db.exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {tmp_path / 'tasks.json'}:1: scenario.id: Input should be a valid string")
    assert line.endswith(
        "; nothing is scored while a scenario file given has a problem ('evalkit check' lists every one)"
    )


def test_a_misspelt_scenario_id_is_an_error_with_did_you_mean(tmp_path):
    (tmp_path / "tasks.json").write_text(json.dumps([SC]))
    run = named_run(tmp_path, scenario_id="refund-b2")
    result = CliRunner().invoke(cli, ["score", str(run), "--scenarios", str(tmp_path / "tasks.json"), "--no-db"])
    assert result.exit_code == 1
    assert (
        f'{run}:1: meta.scenario_id: no scenario "refund-b2" in the scenario file(s) given (did you mean "refund-b22"?)'
        in result.stderr
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [("2026-12-31", "2026-12-31"), ("2026-12-31T09:30:00Z", "2026-12-31T09:30:00+00:00"), ("09:30:00", "09:30:00")],
)
def test_a_toml_date_is_an_error_at_its_line_saying_to_quote_it_not_a_traceback(tmp_path, value, text):
    # the date was carried into the scenario and every JSON encoding of it raised
    path = tmp_path / "tasks.toml"
    path.write_text(
        'id = "pay"\n\n[[ground_truth.procedure]]\nblock = "b"\n'
        f'actions = [{{ tool = "get_invoice", args = {{ invoice_id = "INV-1", due = {value} }} }}]\n'
    )
    checked = CliRunner().invoke(cli, ["check", str(path)])
    assert checked.exit_code == 1
    assert checked.stdout == (
        f"{path}:5: scenario.ground_truth.procedure[0].actions[0].args.due: the TOML date or time {text} has no "
        f'JSON form, and runs send dates as text: quote it ("{text}")\n'
    )
    assert "Traceback" not in checked.output
    with pytest.raises(InputError, match="the TOML date or time"):
        load_scenarios([path])
