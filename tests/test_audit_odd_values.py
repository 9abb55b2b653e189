"""A schema-valid database with odd values in its cells (a NULL rubric id, ``cost_usd = 'n/a'``,
``1e308``, negative token counts, blobs, non-JSON text in JSON columns, unknown statuses): the
audit (every format) and the report (the dict as JSON, HTML, markdown) treat them as missing,
name each table/column/row in a warning, and never raise.

The base database is real: the example trajectories scored through the Store, then judged
through the judge layer's own writer (tests/report_fixtures.py), with human ratings imported.
The expected warnings come from the rule in evalkit/db/cells.py's docstring, re-stated here in
Python (:func:`odd`), not from the SQL that implements it.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest
import report_fixtures as rf
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.agreement.audit import build_audit
from evalkit.agreement.audit_output import RENDERERS
from evalkit.cli import cli
from evalkit.db import open_readonly
from evalkit.db.cells import AMOUNT_COLUMNS, keys_of, odd_cells
from evalkit.db.schema import TABLES
from evalkit.report import build_report, render_html, render_markdown

pytestmark = pytest.mark.slow

MAX_EXACT = 2**53
COLUMNS = [(t.name, c, kind) for t in TABLES.values() for c, kind in t.columns]


@pytest.fixture(scope="module")
def base_db(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("odd-base")
    return rf.build_db(tmp, humans=True)


def _copy(base: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "odd.db"
    shutil.copyfile(base, db)
    return db


def _set(db: Path, table: str, column: str, value, row: int | None = None) -> bool:
    """Set one cell (the ``row``-th by rowid) or the whole column; False when SQLite refuses it
    (NOT NULL, a duplicate key): the file would not be schema-valid."""
    con = sqlite3.connect(db)
    try:
        where = (
            ""
            if row is None
            else (
                f' WHERE rowid = (SELECT rowid FROM "{table}" ORDER BY rowid LIMIT 1 OFFSET '
                f'(? % MAX(1, (SELECT COUNT(*) FROM "{table}"))))'
            )
        )
        args = (value,) if row is None else (value, row)
        cur = con.execute(f'UPDATE "{table}" SET "{column}" = ?{where}', args)
        con.commit()
        return cur.rowcount > 0
    except sqlite3.IntegrityError:
        return False
    finally:
        con.close()


def odd(table: str, column: str, declared: str, value) -> bool:
    """The documented rule: is this stored value one a reader must treat as missing?"""
    kind = declared.split()[0]
    key = column in keys_of(TABLES[table])
    if value is None:
        return key
    if kind == "INTEGER":
        return not (isinstance(value, int) and 0 <= value <= MAX_EXACT)
    if kind == "REAL":
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return True
        return column in AMOUNT_COLUMNS and not 0 <= value <= MAX_EXACT
    return isinstance(value, bytes) or (key and not isinstance(value, str))


def _stored(db: Path) -> list[tuple[str, str, str, object]]:
    con = sqlite3.connect(db)
    con.text_factory = bytes  # a blob and text must stay apart: read the type too
    out = []
    try:
        for table, column, declared in COLUMNS:
            for kind, value in con.execute(f'SELECT typeof("{column}"), "{column}" FROM "{table}"'):
                if kind == b"text":
                    value = value.decode("utf-8", "replace")
                out.append((table, column, declared, value))
    finally:
        con.close()
    return out


def _expected_warnings(db: Path) -> set[str]:
    return {f"{t}.{c}:" for t, c, d, v in _stored(db) if odd(t, c, d, v)}


def _run_all(db: Path) -> tuple[dict, dict]:
    """Audit in every format and the report in every form; returns (audit, report)."""
    audit = build_audit(db, n_resamples=3)
    for render in RENDERERS.values():
        assert isinstance(render(audit), str)
    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    json.dumps(report, allow_nan=False)  # the report dict is JSON, as documented
    render_html(report)
    render_markdown(report)
    return audit, report


def _assert_named(db: Path, audit: dict, report: dict) -> None:
    for prefix in _expected_warnings(db):
        assert any(w.startswith(prefix) for w in audit["warnings"]), (prefix, audit["warnings"])
        assert any(w.startswith(prefix) for w in report["warnings"]), (prefix, report["warnings"])
    for w in audit["warnings"] + report["warnings"]:
        assert "\n" not in w and len(w) < 400


ODD_VALUES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "n/a",
            "NaN",
            "Infinity",
            "-Infinity",
            "",
            "not json {",
            "[[[",
            "bogus_status",
            "ok",
            "scored",
            '{"confidence": NaN}',
            "[1, 2]",
            "null",
        ]
    ),
    st.text(max_size=6),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([10**18, -1, 0, 2**53 + 1, 1e308, -1e308, float("inf"), float("-inf"), 1.5, -0.5]),
    st.floats(allow_nan=False),
    st.binary(max_size=4),
)
EDITS = st.lists(
    st.tuples(st.sampled_from(COLUMNS), st.integers(0, 200), ODD_VALUES, st.booleans()), min_size=1, max_size=5
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_odd_cells_anywhere_are_missing_with_a_warning_never_a_crash(base_db, tmp_path_factory, edits):
    db = _copy(base_db, tmp_path_factory.mktemp("odd"))
    for (table, column, _), row, value, whole_column in edits:
        _set(db, table, column, value, None if whole_column else row)
    audit, report = _run_all(db)
    _assert_named(db, audit, report)
    with open_readonly(db) as conn:  # the whole file scanned, whichever reader the report took them from
        lines = odd_cells(conn)
    assert report["warnings"][: len(lines)] == lines


# -- each case the issue names, through the command line --------------------------------------


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


CASES = {
    "null_rubric_id": ("annotations", "rubric_id", None),
    "cost_text_na": ("judge_calls", "cost_usd", "n/a"),
    "cost_huge": ("judge_calls", "cost_usd", 1e308),
    "cost_negative": ("annotations", "cost_usd", -1),
    "cost_nan_text": ("judge_calls", "latency_ms", "NaN"),
    "tokens_negative": ("annotations", "prompt_tokens", -5),
    "tokens_huge": ("annotations", "completion_tokens", 2**63 - 1),
    "replicate_fraction": ("annotation_values", "replicate", 1.5),
    "dimension_blob": ("annotation_values", "dimension", b"\x00\xff"),
    "model_blob": ("scorecards", "model", b"\xff"),
    # a score is a fraction: 1e308 summed over runs overflowed the report's exact sums
    "scalar_huge": ("scorecards", "scalar", 1e308),
    "coverage_above_one": ("scorecards", "coverage", 1.5),
    "confidence_above_one": ("annotation_values", "confidence", 7.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_named_odd_value_cli_exits_0_and_warns(base_db, tmp_path, case):
    table, column, value = CASES[case]
    db = _copy(base_db, tmp_path)
    assert _set(db, table, column, value, row=1)
    prefix = f"warning: {table}.{column}: row "
    for fmt in ("table", "json", "markdown", "csv"):
        res = _cli("audit", "--db", str(db), "--format", fmt, "--resamples", "3")
        assert res.exit_code == 0, res.output
        assert prefix in res.stderr, res.stderr
    if fmt == "json":
        assert any(w.startswith(f"{table}.{column}: ") for w in json.loads(res.stdout)["warnings"])
    out = tmp_path / "r.html"
    res = _cli("report", "--db", str(db), "--html", str(out), "--markdown", str(tmp_path / "r.md"))
    assert res.exit_code == 0, res.output
    assert prefix in res.stderr and out.is_file()


def test_null_rubric_id_row_is_left_out_not_counted(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    before = build_audit(base_db, n_resamples=0)["counts"]["annotations"]
    assert _set(db, "annotations", "rubric_id", None, row=0)
    audit = build_audit(db, n_resamples=0)
    assert audit["counts"]["annotations"] == before - 1
    [w] = [w for w in audit["warnings"] if w.startswith("annotations.rubric_id:")]
    assert "holds NULL" in w and "the row is left out" in w


def test_cost_na_is_missing_not_zero(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    assert _set(db, "judge_calls", "cost_usd", "n/a")  # every call
    costs = build_audit(db, n_resamples=0)["judge_costs"]
    assert costs and all(c["n_with_cost"] == 0 and c["cost_total_usd"] is None for c in costs)
    assert all(c["n_with_latency"] == c["n_calls"] for c in costs)  # the other column is untouched


def test_nan_text_in_json_value_column_is_a_literal_label_not_a_float(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    assert _set(db, "annotation_values", "value", "NaN")
    assert _set(db, "ratings", "value", "Infinity")
    audit, report = _run_all(db)
    json.loads(RENDERERS["json"](audit))  # strict JSON: a NaN float would not survive allow_nan=False


def test_non_json_card_reads_as_missing_signals_in_audit_and_is_left_out_of_report(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    assert _set(db, "scorecards", "card", "not json {", row=0)
    audit, report = _run_all(db)
    assert any(w.startswith("scorecards.card: row run_id=") and "not a JSON object" in w for w in audit["warnings"])
    assert any(w.startswith("scorecards.card: row run_id=") and "the run is left out" in w for w in report["warnings"])
    assert report["counts"]["runs"] == audit["counts"]["scorecards"] - 1


def test_unknown_status_values(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    assert _set(db, "scorecards", "status", "exploded", row=0)
    assert _set(db, "annotations", "status", "maybe", row=0)
    assert _set(db, "annotation_values", "value", '"perhaps"', row=0)  # an outcome off every scale
    audit, report = _run_all(db)
    assert audit["counts"]["scorecard_statuses"].get("exploded") == 1


def test_empty_strings_everywhere_in_text_columns(base_db, tmp_path):
    db = _copy(base_db, tmp_path)
    for table, column, declared in COLUMNS:
        if declared.split()[0] == "TEXT" and column not in TABLES[table].pk:
            _set(db, table, column, "", row=0)
    _run_all(db)


def test_clean_database_has_no_warnings(base_db):
    audit, report = _run_all(base_db)
    assert audit["warnings"] == [] and report["warnings"] == []
