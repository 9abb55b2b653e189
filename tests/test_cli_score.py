"""`evalkit score` end to end: formats, database, determinism, exit codes, gates.

The command runs in-process through click's runner (the same entry point, argument parsing, exit
codes and streams); the two real executables, `python -m evalkit` and the console script, are run
as processes by test_python_dash_m_and_console_script_agree."""

import contextlib
import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlite_utils
from click.testing import CliRunner

from evalkit.cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(*args, stdin=None, cwd=None):
    """``evalkit ARGS`` in-process: ``returncode``, ``stdout`` and ``stderr`` like a finished process."""
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        res = CliRunner().invoke(cli, list(args), input=stdin)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return SimpleNamespace(returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)


def run_process(*args):
    return subprocess.run([sys.executable, "-m", "evalkit", *args], capture_output=True, text=True)


def test_examples_score_with_table_and_db(tmp_path):
    proc = run("score", str(EXAMPLES / "a320"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "By model (each scenario weighted equally)" in proc.stdout
    assert "half-written" in proc.stderr  # the crashed-recorder example
    db = sqlite_utils.Database(tmp_path / "evalkit.db")
    assert db["scorecards"].count == 9 and db["runs"].count == 9
    assert db["commands"].count == sum(len(json.loads(r["card"])["commands"]) for r in db["scorecards"].rows)


def test_rescoring_upserts_without_duplicates(tmp_path):
    db_path = tmp_path / "s.db"
    for _ in range(2):
        assert run("score", str(EXAMPLES), "--db", str(db_path), "--format", "jsonl").returncode == 0
    db = sqlite_utils.Database(db_path)
    assert db["scorecards"].count == 16
    assert (
        db.execute("select count(*) from (select distinct run_id, idx from commands)").fetchone()[0]
        == db["commands"].count
    )


def test_two_runs_give_byte_identical_json(tmp_path):
    a = run("score", str(EXAMPLES), "--format", "json", "--no-db")
    b = run("score", str(EXAMPLES), "--format", "json", "--no-db")
    assert a.returncode == 0 and a.stdout == b.stdout
    cards = json.loads(a.stdout)
    assert len(cards) == 16 and list(cards[0])[:5] == ["run_id", "scenario_id", "model", "path", "status"]
    agg_a = run("score", str(EXAMPLES), "--format", "json", "--aggregate", "--no-db")
    agg_b = run("score", str(EXAMPLES), "--format", "json", "--aggregate", "--no-db")
    assert agg_a.stdout == agg_b.stdout and set(json.loads(agg_a.stdout)) == {
        "include_errors",
        "uncertainty",
        "groups",
        "models",
    }


def test_jsonl_one_card_per_line_and_contract_fields():
    proc = run("score", str(EXAMPLES / "support"), "--format", "jsonl", "--no-db")
    lines = proc.stdout.splitlines()
    assert len(lines) == 7
    card = json.loads(lines[0])
    assert set(card["vector"]) == {
        "coverage",
        "order",
        "end_state",
        "all_passed",
        "safety_dangerous",
        "safety_anti_procedure",
        "extraneous",
    }
    assert set(card["checks"]) == {
        "reached_goal",
        "used_only_expected_tools",
        "correct_order",
        "no_redundant_calls",
        "approvals_respected",
    }
    assert {
        "run_id",
        "scenario_id",
        "model",
        "path",
        "status",
        "scalar",
        "commands",
        "informative",
        "bundle_hash",
        "judge_bundle",
    } <= set(card)
    assert card["commands"][0]["class"] == "matched_required"


def test_csv_and_markdown_formats():
    proc = run("score", str(EXAMPLES / "support"), "--format", "csv", "--no-db")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["run_id"].removeprefix("support-gpt-x-") for r in rows] == [
        "closed-account",
        "crashed-recorder",
        "free-text",
        "good",
        "refund-before-approval",
        "skipped-approval",
        "wrong-amount",
    ]
    assert rows[0]["dangerous"] == "1" and rows[0]["scalar"] == "0.0"
    assert rows[5]["anti_proc"] == "1" and rows[5]["scalar"] == "0.43333333333333335"  # the approval skipped
    agg = run("score", str(EXAMPLES / "support"), "--format", "csv", "--aggregate", "--no-db")
    assert agg.stdout.splitlines()[0].startswith("scenario_id,model,n,n_scored")
    md = run("score", str(EXAMPLES / "support"), "--format", "markdown", "--no-db")
    assert "| run_id |" in md.stdout and "## By model" in md.stdout


def test_stdin_dash():
    data = (EXAMPLES / "support" / "support-gpt-x-good.jsonl").read_text()
    proc = run("score", "-", "--format", "jsonl", "--no-db", stdin=data)
    assert proc.returncode == 0 and json.loads(proc.stdout)["path"] == "<stdin>"


def test_usage_errors_exit_two(tmp_path):
    assert run("score", str(tmp_path / "missing.jsonl"), "--no-db").returncode == 2
    assert run("score", str(tmp_path), "--no-db").returncode == 2  # no *.jsonl inside
    assert run("score", str(EXAMPLES), "--format", "xml", "--no-db").returncode == 2


def test_out_file(tmp_path):
    out = tmp_path / "cards.jsonl"
    proc = run("score", str(EXAMPLES / "support"), "--format", "jsonl", "--no-db", "--out", str(out))
    assert proc.returncode == 0 and proc.stdout == "" and len(out.read_text().splitlines()) == 7


@pytest.mark.parametrize(
    "flag,value,expect",
    [
        ("--fail-under", "0.5", 3),
        ("--fail-under", "0.3", 0),
        ("--min-pass-rate", "0.8", 3),
        ("--min-pass-rate", "0.7", 0),
    ],
)
def test_quality_gates(flag, value, expect):
    proc = run("score", str(EXAMPLES), flag, value, "--aggregate", "--no-db")
    assert proc.returncode == expect
    if expect:
        gate_lines = [l for l in proc.stderr.splitlines() if l.startswith("gate failed")]
        assert len(gate_lines) == 1 and flag in gate_lines[0]


def test_python_dash_m_and_console_script_agree():
    import shutil

    exe = shutil.which("evalkit") or str(Path(sys.executable).with_name("evalkit"))
    a = subprocess.run(
        [exe, "score", str(EXAMPLES / "support"), "--format", "jsonl", "--no-db"], capture_output=True, text=True
    )
    b = run_process("score", str(EXAMPLES / "support"), "--format", "jsonl", "--no-db")
    c = run("score", str(EXAMPLES / "support"), "--format", "jsonl", "--no-db")
    assert a.returncode == 0 and a.stdout == b.stdout == c.stdout


def test_duplicate_run_id_is_warned(tmp_path):
    from evalkit.trajectory.builders import a320_scenario, cmd, trajectory, write_jsonl

    for name in ("a", "b"):
        write_jsonl(tmp_path / f"{name}.jsonl", trajectory(a320_scenario(), [cmd("ext_pwr", 1)], run_id="same"))
    proc = run("score", str(tmp_path), "--db", str(tmp_path / "x.db"), "--format", "jsonl")
    assert proc.returncode == 0
    assert f"{tmp_path / 'b.jsonl'}: warning: run_id 'same' was already read from {tmp_path / 'a.jsonl'}" in proc.stderr
    assert sqlite_utils.Database(tmp_path / "x.db")["scorecards"].count == 1
