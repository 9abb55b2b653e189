"""The Python API as a notebook uses it: a wrong argument is a ValueError naming it at the call
(never a search of the whole disk, an AttributeError from inside, or a silently ignored value), the
documented keywords work, and a loop left by an exception still writes what it read."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import evalkit

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "examples" / "support"
GOOD = SUPPORT / "support-gpt-x-skipped-approval.jsonl"  # names its scenario: needs scenarios.json


def _runs(folder: Path, n: int) -> Path:
    """``n`` copies of a run naming its scenario, each with its own run_id; the scenario file apart."""
    folder.mkdir()
    lines = GOOD.read_text(encoding="utf-8").splitlines()
    for i in range(n):
        meta = json.loads(lines[0])
        meta["run_id"] = f"run-{i:03d}"
        (folder / f"run-{i:03d}.jsonl").write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def runs(tmp_path):
    scenarios = tmp_path / "scenarios.json"
    shutil.copy(SUPPORT / "scenarios.json", scenarios)
    return _runs(tmp_path / "runs", 6), scenarios


@pytest.mark.parametrize(
    "call",
    [
        lambda runs, sc: evalkit.score_files(str(runs), scenarios=[sc]),
        lambda runs, sc: evalkit.score_files(runs, scenarios=[sc]),
        lambda runs, sc: evalkit.check_paths(str(runs)),
        lambda runs, sc: evalkit.load_scenarios(str(sc)),
    ],
    ids=["score_files-str", "score_files-Path", "check_paths-str", "load_scenarios-str"],
)
def test_one_path_given_where_a_list_is_expected_is_a_value_error_naming_the_argument(runs, call):
    # a str iterated is its characters: "/" was a recursive search of the whole file system
    with pytest.raises(ValueError, match=r"^(paths|scenarios): give a list of paths, not one path"):
        call(*runs)


def test_one_scenario_file_given_as_a_string_is_a_value_error_naming_scenarios(runs):
    folder, scenarios = runs
    with pytest.raises(ValueError, match=r"^scenarios: give a list of paths"):
        evalkit.score_files([folder], scenarios=str(scenarios))
    with pytest.raises(ValueError, match=r"^scenarios: give a list of paths"):
        evalkit.check_paths([folder], scenarios=str(scenarios))


def test_an_in_memory_object_among_the_paths_is_a_value_error_saying_it_is_not_a_path(runs):
    folder, scenarios = runs
    traj = evalkit.read_trajectory(folder / "run-000.jsonl", scenarios=[scenarios])
    with pytest.raises(ValueError, match=r"^paths: Trajectory is not a path"):
        evalkit.score_files([traj], scenarios=[scenarios])
    with pytest.raises(ValueError, match=r"^paths: dict is not a path"):
        evalkit.score_files([{"type": "meta"}])


def test_check_paths_takes_the_documented_scenarios_keyword(runs):
    folder, scenarios = runs
    report = evalkit.check_paths([folder], scenarios=[scenarios])
    assert report.problems == [] and report.runs == 6


def test_read_trajectory_takes_scenario_files_as_score_files_does(runs):
    folder, scenarios = runs
    by_files = evalkit.read_trajectory(folder / "run-001.jsonl", scenarios=[scenarios])
    by_set = evalkit.read_trajectory(folder / "run-001.jsonl", scenarios=evalkit.load_scenarios([scenarios]))
    card = evalkit.score_trajectory(by_files)
    assert card.to_json_dict() == evalkit.score_trajectory(by_set).to_json_dict()
    assert card.scenario_id == "refund-damaged-b22"


def test_a_loop_left_by_an_exception_inside_with_store_writes_the_cards_it_read(runs, tmp_path):
    # the generator's finally must run when the loop is left, while the store is still open: not
    # at a later garbage collection (cards lost, a traceback printed as an unraisable exception)
    folder, scenarios = runs
    db = tmp_path / "evalkit.db"
    with pytest.raises(KeyboardInterrupt):
        with evalkit.Store(db) as store:
            for i, _card in enumerate(evalkit.score_files([folder], store=store, scenarios=[scenarios], batch=4)):
                if i == 4:
                    raise KeyboardInterrupt
    with sqlite3.connect(db) as conn:
        (count,) = conn.execute("select count(*) from scorecards").fetchone()
    assert count >= 5


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": "2"}, "workers"),
        ({"batch": 0}, "batch"),
        ({"output": "csv", "encoding": "utf-9"}, "encoding"),
        ({"output": "table", "columns": ("run_id", "scalr")}, "columns"),
    ],
)
def test_a_bad_score_files_option_is_a_value_error_naming_it_at_the_call(runs, options, named):
    # workers=0 was scored with one worker, "2" a TypeError and an unknown encoding a LookupError
    # from inside a worker; an unknown column "tuple.index(x): x not in tuple"
    folder, scenarios = runs
    with pytest.raises(ValueError, match=rf"^{named}: "):
        evalkit.score_files([folder], scenarios=[scenarios], **options)


def test_compare_models_refuses_an_aggregate_without_error_bars_and_takes_the_documented_keyword(runs):
    # an aggregate asked for as "shown" has no group se: the comparison was a plain t on the
    # scenario means, another p-value than evalkit compare prints for the same runs
    folder, scenarios = runs
    full = evalkit.score_files([folder], scenarios=[scenarios], aggregate="full")
    full.collect()
    shown = evalkit.score_files([folder], scenarios=[scenarios], aggregate="shown")
    shown.collect()
    assert evalkit.compare_models(aggregate=full.aggregate)["rows"] == []  # one model: nothing to pair
    with pytest.raises(ValueError, match=r"^aggregate: its groups have no error bars"):
        evalkit.compare_models(shown.aggregate)
    with pytest.raises(ValueError, match=r"^aggregate: not an aggregate"):
        evalkit.compare_models({})


def test_one_judge_model_given_as_a_string_is_a_value_error_before_anything_is_sent(runs, tmp_path, monkeypatch):
    # a str was read as its characters: every run judged by models "o", "p", "e", "n", ...
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    folder, scenarios = runs
    db = tmp_path / "evalkit.db"
    with evalkit.Store(db) as store:
        evalkit.score_files([folder], store=store, scenarios=[scenarios]).collect()
    with pytest.raises(ValueError, match=r"^models: give a list of names, not one name"):
        evalkit.judge_db(str(db), "openai/judge-x", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"^models: give a list of names"):
        evalkit.run_probes(str(db), "openai/judge-x", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"^probes: give a list of names"):
        evalkit.run_probes(str(db), ["openai/judge-x"], probes="identity", api_base="http://127.0.0.1:9/v1")
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from judge_calls").fetchone() == (0,)


def test_judge_db_on_a_database_that_does_not_exist_is_a_db_error_and_creates_nothing(tmp_path):
    # it created an empty database and returned a result of 0 runs; evalkit judge exits 2
    from evalkit.db import DbError

    db = tmp_path / "typo.db"
    with pytest.raises(DbError, match=r"typo\.db: no such database file"):
        evalkit.judge_db(str(db), ["openai/judge-x"])
    assert not db.exists()


def test_import_files_given_one_path_is_a_value_error_naming_paths(tmp_path):
    with pytest.raises(ValueError, match=r"^paths: give a list of paths, not one path"):
        evalkit.import_files("taubench", str(tmp_path / "results.json"), tmp_path / "out", model="m")
