"""A run that names its scenario finds it in a scenarios.json (or .toml) beside it when no
--scenarios file is given; an explicit --scenarios wins; a bad or missing file is a one-line error."""

from __future__ import annotations

import json

from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.engines.pipeline import score_files
from evalkit.trajectory.builders import call, trajectory, write_jsonl


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


def named_run(folder, name="r", scenario_id="refund-b22", args=None):
    records = trajectory(
        SC, [call("issue_refund", args or {"order_id": "B22"})], run_id=name, tool_surface=["issue_refund"]
    )
    del records[0]["scenario"]
    records[0]["scenario_id"] = scenario_id
    folder.mkdir(parents=True, exist_ok=True)
    return write_jsonl(folder / f"{name}.jsonl", records)


def test_a_named_run_takes_its_scenario_from_scenarios_json_beside_it(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([SC]))
    cards, errors = score([named_run(tmp_path)])
    assert errors == [] and cards[0].vector.coverage == 1.0 and cards[0].scenario_id == "refund-b22"


def test_scenarios_toml_beside_the_run(tmp_path):
    (tmp_path / "scenarios.toml").write_text(
        'id = "t1"\ncommand_tools = ["issue_refund"]\n[ground_truth]\nprocedure = []\n'
    )
    cards, errors = score([named_run(tmp_path, scenario_id="t1")])
    assert errors == [] and cards[0].scenario_id == "t1"


def test_the_file_beside_a_run_in_a_subdirectory_is_its_own(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([SC]))
    run = named_run(tmp_path / "sub")
    cards, errors = score([run])
    assert cards == [] and len(errors) == 1 and "--scenarios" in errors[0]


def test_an_explicit_scenarios_file_wins_over_the_one_beside_the_run(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([SC]))
    other = tmp_path / "other" / "tasks.json"
    other.parent.mkdir()
    other.write_text(
        json.dumps(
            [
                dict(
                    SC,
                    ground_truth={
                        "procedure": [{"block": "b", "actions": [{"tool": "issue_refund", "args": {"order_id": "X"}}]}]
                    },
                )
            ]
        )
    )
    cards, _ = score([named_run(tmp_path)], scenarios=[other])
    assert cards[0].vector.coverage == 0.0


def test_an_id_missing_from_the_file_beside_the_run_names_the_file(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([SC]))
    cards, errors = score([named_run(tmp_path, scenario_id="nope")])
    assert cards == [] and errors == [
        f'{tmp_path / "r.jsonl"}:1: meta.scenario_id: no scenario "nope" in '
        f"{tmp_path / 'scenarios.json'} (the scenario file beside the run)"
    ]


def test_a_bad_file_beside_the_run_is_its_error_for_that_run(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([{**SC, "ground_truth": {"procedur": []}}]))
    res = CliRunner().invoke(cli, ["score", str(named_run(tmp_path)), "--no-db"])
    assert res.exit_code == 1
    assert (
        f'{tmp_path / "scenarios.json"}:1: scenario.ground_truth: unknown key "procedur" (did you mean "procedure"?)'
        in res.stderr
    )


def test_the_file_is_read_again_when_it_changes(tmp_path):
    (tmp_path / "scenarios.json").write_text(json.dumps([SC]))
    assert score([named_run(tmp_path)])[0][0].vector.coverage == 1.0
    (tmp_path / "scenarios.json").write_text(
        json.dumps(
            [
                dict(
                    SC,
                    ground_truth={
                        "procedure": [{"block": "b", "actions": [{"tool": "issue_refund", "args": {"order_id": "Z"}}]}]
                    },
                )
            ]
        )
        + "\n" * 3
    )
    assert score([named_run(tmp_path)])[0][0].vector.coverage == 0.0
