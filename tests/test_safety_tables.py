"""`evalkit score`'s table view fits $COLUMNS (or 120) by choosing columns, the vector and safety first;
--wide shows every column (the runs table as before); csv and json are always complete."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from safety_helpers import EXAMPLES

from evalkit.cli import cli
from evalkit.present.score_output import GROUP_COLUMNS, fit_columns, terminal_width

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "safety"


def score(*args, columns: str | None = "120"):
    env = {"COLUMNS": columns} if columns is not None else {"COLUMNS": ""}
    result = CliRunner().invoke(cli, ["score", str(EXAMPLES), "--no-db", "--workers", "1", *args], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title)
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


@pytest.mark.parametrize("columns", ["120", "150", "100"])
def test_default_table_view_keeps_within_columns(columns):
    for line in score(columns=columns).splitlines():
        assert len(line) <= int(columns), line


def test_without_columns_the_width_is_120(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == 120
    for bad in ("", "0", "-5", "wide"):
        monkeypatch.setenv("COLUMNS", bad)
        assert terminal_width() == 120
    monkeypatch.setenv("COLUMNS", "87")
    assert terminal_width() == 87
    assert max(map(len, score(columns="").splitlines())) <= 120


def test_the_vector_and_safety_come_first():
    text = score()
    runs = _section(text, "Runs")[1].split()
    assert runs == ["run_id", "coverage", "order", "end_state", "all_passed", "dangerous", "anti_proc", "scalar"]
    groups = _section(text, "By scenario and model")[1].split()
    assert {"scenario_id", "model", "pass_rate", "safe_pass_rate", "unsafe_rate", "coverage_mean"} <= set(groups)
    models = _section(text, "By model (each scenario weighted equally)")[1].split()
    assert models[:1] == ["model"] and {"pass_rate", "safe_pass_rate", "unsafe_rate"} <= set(models)
    assert models.index("safe_pass_rate") == models.index("pass_rate") + 1  # beside the pass rate
    assert "left out to fit 120 columns" in text and "--wide" in text


def test_wide_shows_every_column_and_the_runs_table_as_before():
    text = score("--wide")
    before = (FIXTURES / "runs_table_before.txt").read_text(encoding="utf-8").rstrip("\n").splitlines()
    assert _section(text, "Runs") == before
    groups = _section(text, "By scenario and model")[1].split()
    assert set(groups) == set(GROUP_COLUMNS)
    assert "left out" not in text


def test_csv_and_json_are_complete_whatever_the_width():
    rows = list(csv.reader(io.StringIO(score("--aggregate", "--format", "csv", columns="40"))))
    assert rows[0] == list(GROUP_COLUMNS)
    doc = json.loads(score("--aggregate", "--format", "json", columns="40"))
    assert "safe_pass_hat_k_ci" in doc["models"][0] and "unsafe_rate_ci" in doc["groups"][0]
    runs = list(csv.reader(io.StringIO(score("--format", "csv", columns="40"))))
    assert len(runs[0]) == 12


def test_table_view_is_the_same_whatever_the_workers():
    one = CliRunner().invoke(cli, ["score", str(EXAMPLES), "--no-db", "--workers", "1"], env={"COLUMNS": "100"})
    two = CliRunner().invoke(cli, ["score", str(EXAMPLES), "--no-db", "--workers", "2"], env={"COLUMNS": "100"})
    assert one.stdout == two.stdout


def test_fit_columns_keeps_the_first_priority_even_when_too_wide():
    assert fit_columns(("a", "b"), (50, 5), ("a", "b"), 10) == ("a",)
    assert fit_columns(("a", "b", "c"), (4, 9, 3), ("c", "b", "a"), 10) == ("a", "c")
