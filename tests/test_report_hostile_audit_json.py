"""`evalkit audit --format json` is the document docs/audit.md draws: every top-level key of the
drawn skeleton is present and no other, every key of an entry is one the skeleton names, and the
output is valid strict JSON, byte-identical for the same database, also on a database with odd
cells (whose warnings are in ``warnings``, not on stdout)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
import report_fixtures as rf
from click.testing import CliRunner

from evalkit.cli import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "audit.md"
DATA_KEYED = {
    "scorecard_statuses",
    "rater_kinds",
    "mapping",
    "bootstrap",
    "per_human",
}  # keys are data, or drawn elsewhere


def _skeleton() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The JSON document")
    block = text[start:].split("```", 2)[1]
    return block


def _documented_top_level() -> list[str]:
    return re.findall(r'^  "(\w+)"', _skeleton(), flags=re.M)


def _documented_names() -> set[str]:
    return set(re.findall(r"\b[a-z_0-9]+\b", _skeleton()))  # quoted or drawn bare ({band, low, ...})


def _keys(value, parent: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if parent not in DATA_KEYED:
                out.add(k)
            out |= _keys(v, k if parent not in DATA_KEYED else parent)
    elif isinstance(value, list):
        for v in value:
            out |= _keys(v, parent)
    return out


def _audit_json(db: Path, *extra: str) -> tuple[str, str]:
    res = CliRunner().invoke(
        cli, ["audit", "--db", str(db), "--format", "json", "--resamples", "5", *extra], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    return rf.build_db(tmp_path_factory.mktemp("audit-json"), humans=True)


def test_audit_json_top_level_keys_are_the_documented_ones_in_order(db):
    out, _ = _audit_json(db)
    assert list(json.loads(out)) == _documented_top_level()


@pytest.mark.parametrize("extra", [(), ("--jury",), ("--by", "scenario"), ("--judge", "judge-small")])
def test_audit_json_every_key_is_documented(db, extra):
    out, _ = _audit_json(db, *extra)
    undocumented = _keys(json.loads(out)) - _documented_names()
    # slice keys and Stat keys are drawn by name; labels and judge names are data under DATA_KEYED
    assert undocumented <= {"key", "value", "reason"}, sorted(undocumented)


def test_audit_json_is_strict_and_deterministic_with_odd_cells(db, tmp_path):
    odd = tmp_path / "odd.db"
    odd.write_bytes(db.read_bytes())
    con = sqlite3.connect(odd)
    con.execute("UPDATE judge_calls SET cost_usd = 'n/a' WHERE rowid = 1")
    con.execute("UPDATE annotation_values SET value = 'NaN' WHERE rowid = 2")
    con.commit()
    con.close()
    first, err = _audit_json(odd)
    second, _ = _audit_json(odd)
    assert first == second
    doc = json.loads(first, parse_constant=lambda c: pytest.fail(f"{c} in the audit JSON"))
    assert [w.split(":")[0] for w in doc["warnings"]] == ["judge_calls.cost_usd"]
    assert "warning: judge_calls.cost_usd: row cache_key=" in err
