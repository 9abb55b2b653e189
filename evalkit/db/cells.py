"""What a stored cell may hold, and what a reader sees when it holds something else.

A database can be schema-valid and still hold odd cells: a hand edit, another tool, an older
bug (``cost_usd = 'n/a'``, a NULL rubric id, a blob in a text column, ``1e308`` tokens). The
read-only connection (:func:`evalkit.db.open_readonly`) reads every evalkit table through a TEMP
view built here, so no reader (audit, report, ``cache stats``) ever sees a value of the wrong
kind, and :func:`odd_cells` names, once per table and column, what was read as missing. One
reader scans a file's own table and applies the same rules itself: the judge-value read
(:func:`evalkit.db.judge.read_judge_columns`, 10^6 values at 10^5 runs, where the view's CASE per
cell is a third of its SQLite work).

The rule per column, from its declared type in :data:`evalkit.db.schema.TABLES`:

- **key** columns (the primary key, and ``run_id``, ``judge_model``, ``rubric_id``,
  ``dimension``, ``probe``, ``item_id``, ``rater``, ``rater_kind``: what readers group and join
  by) must hold text (an ``INTEGER`` key: an integer). A row whose key holds anything else
  (NULL, a blob) cannot be attributed: it is left out of the view.
- ``TEXT``: text; a number reads as its text; a blob reads as NULL.
- ``INTEGER`` (counts, flags, indexes, versions): an integer from 0 to 2**53; anything else
  (text, a fraction, a negative or larger number) reads as NULL.
- ``REAL``: a finite number (an amount, ``cost_usd`` and ``latency_ms``: from 0 to 2**53, so
  that sums stay finite; a share, a score, its parts and a confidence: from 0 to 1); anything
  else reads as NULL.

2**53 is the largest integer a float holds exactly: every kept number survives a float
conversion, and a sum of a million of them is still finite. NaN cannot be stored (SQLite stores
NULL); infinities fail the range. JSON columns are text here; their readers decode them with
:func:`loads`, strict JSON: ``NaN`` and ``Infinity`` are not JSON, so a cell holding them is read
as text that is not JSON, as any other.
Enumerations (``status``) are text: an unknown status is not ``ok``, and readers say so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evalkit.db.schema import TABLES

MAX_EXACT = 2**53
KEY_COLUMNS = frozenset({"run_id", "judge_model", "rubric_id", "dimension", "probe", "item_id", "rater", "rater_kind"})
AMOUNT_COLUMNS = frozenset({"cost_usd", "latency_ms"})
# shares: a score, its parts and a confidence are fractions from 0 to 1
FRACTION_COLUMNS = frozenset({"scalar", "coverage", "order_score", "end_state", "confidence", "second_share"})
MAX_FLOAT = "1.7976931348623157e308"


def _kind(declared: str) -> str:
    return declared.split()[0].upper() if declared.strip() else "TEXT"


def keys_of(table: Any) -> tuple[str, ...]:
    return tuple(c for c in table.column_names if c in table.pk or c in KEY_COLUMNS)


def _q(column: str) -> str:
    return f'"{column}"'


def real_range(column: str) -> tuple[Any, Any]:
    """The numbers a REAL column may hold, as SQL literals (ints, or the largest float's text)."""
    if column in FRACTION_COLUMNS:
        return 0, 1
    if column in AMOUNT_COLUMNS:
        return 0, MAX_EXACT
    return f"-{MAX_FLOAT}", MAX_FLOAT


def _valid(column: str, declared: str) -> str:
    """SQL that is true when the cell holds what its column may hold (false for NULL)."""
    c, kind = _q(column), _kind(declared)
    if kind == "INTEGER":
        return f"(typeof({c}) = 'integer' AND {c} BETWEEN 0 AND {MAX_EXACT})"
    if kind == "REAL":
        low, high = real_range(column)
        return f"(typeof({c}) IN ('integer', 'real') AND {c} BETWEEN {low} AND {high})"
    return f"(typeof({c}) IN ('text', 'integer', 'real'))"


def _read_as(column: str, declared: str) -> str:
    c = _q(column)
    if _kind(declared) in ("INTEGER", "REAL"):
        return f"CASE WHEN {_valid(column, declared)} THEN {c} END"
    return f"CASE WHEN typeof({c}) = 'text' THEN {c} WHEN typeof({c}) IN ('integer', 'real') THEN CAST({c} AS TEXT) END"


def _key_ok(column: str, declared: str) -> str:
    # an integer key (a command's idx, a replicate) is a count or an index: in range, like any integer
    return _valid(column, declared) if _kind(declared) == "INTEGER" else f"typeof({_q(column)}) = 'text'"


def clean_view(table: Any, present: dict[str, tuple]) -> str:
    """``CREATE TEMP VIEW`` reading ``main.<table>`` with odd cells as NULL, rows with an odd key
    left out, and columns missing from an older file as NULL."""
    declared = dict(table.columns)
    cols = []
    keys = keys_of(table)
    for col in table.column_names:
        if col not in present:
            cols.append(f"NULL AS {_q(col)}")
        elif col in keys:
            cols.append(_q(col))
        else:
            cols.append(f"{_read_as(col, declared[col])} AS {_q(col)}")
    where = " AND ".join(_key_ok(c, declared[c]) for c in keys if c in present) or "1"
    return f'CREATE TEMP VIEW "{table.name}" AS SELECT {", ".join(cols)} FROM main."{table.name}" WHERE {where}'


def overlay(conn: Any, present: dict[str, dict[str, tuple]]) -> None:
    """On a read-only connection, make an older file look current without writing it: a missing
    table becomes an empty TEMP table, every other table is shadowed by a TEMP view that reads
    NULL for columns it lacks and for odd cells (:func:`clean_view`; TEMP names are looked up
    before the file's own)."""
    for name, table in TABLES.items():
        if name not in present:
            conn.execute(table.ddl(temp=True))
        else:
            conn.execute(clean_view(table, present[name]))


def _what(column: str) -> str:
    """SQL describing an odd cell for :func:`_describe`: its type, ``-`` when negative, ``f`` when
    a fraction (evaluated only where the cell is odd)."""
    c = _q(column)
    return (
        f"typeof({c}) || CASE WHEN typeof({c}) IN ('integer', 'real') THEN "
        f"(CASE WHEN {c} < 0 THEN '-' ELSE '' END) || (CASE WHEN {c} != round({c}) THEN 'f' ELSE '' END) ELSE '' END"
    )


def _describe(what: str) -> str:
    kind = what.rstrip("-f")
    if kind in ("null", "blob", "text"):
        return {"null": "NULL", "blob": "a blob", "text": "text"}[kind]
    if "-" in what:
        return "a negative number"
    return "a fraction" if "f" in what else "a number out of range"


def _odd(column: str, declared: str, key: bool) -> str:
    """SQL that is true when the cell is odd: a key that is not :func:`_key_ok`, any other cell
    that is not NULL and not :func:`_valid`. A text cell is odd only as a blob (``typeof`` has five
    answers), which ``typeof`` tells without reading the value: a large JSON cell is not loaded."""
    if key:
        return f"NOT ({_key_ok(column, declared)})"
    if _kind(declared) in ("INTEGER", "REAL"):
        return f"({_q(column)} IS NOT NULL AND NOT {_valid(column, declared)})"
    return f"typeof({_q(column)}) = 'blob'"


def odd_cells(db: Any, clean: Iterable[str] = ()) -> list[str]:
    """One line per (table, column) of ``db`` (a :class:`~evalkit.db.connect.Database`) holding
    odd cells: how many rows, what the first one holds (rows in key order), and what readers do
    with it (read it as missing, or leave the row out). Reads the file's own tables, not the views;
    the tables named in ``clean`` are known to hold no odd cell (a reader scanned them) and are not
    scanned again."""
    return odd_lines(odd_cells_by_table(db, clean))


def odd_lines(by_table: dict[str, list[str]]) -> list[str]:
    """:func:`odd_cells_by_table`'s lines (of one or more scans) in :func:`odd_cells`' order."""
    return [line for name in TABLES for line in by_table.get(name, ())]


def plain_tables(db: Any, by_table: dict[str, list[str]], scanned: Iterable[str]) -> set[str]:
    """The tables among ``scanned`` (present in the file) that read the same from the file itself
    as through their views: :func:`odd_cells_by_table` found no odd cell there (``by_table``), the
    file has every column, and each text column has text affinity (a number stored there is text
    already, as the view would read it)."""
    out = set()
    tables = {r[0] for r in db.rows("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    for name in scanned:
        if name in by_table or name not in TABLES or name not in tables:
            continue
        have = {r[1]: str(r[2] or "").upper() for r in db.rows(f'PRAGMA main.table_info("{name}")')}
        table = TABLES[name]
        if not have or any(c not in have for c in table.column_names):
            continue
        if all(
            "INT" not in have[c] and any(k in have[c] for k in ("CHAR", "CLOB", "TEXT"))
            for c, declared in table.columns
            if _kind(declared) not in ("INTEGER", "REAL")
        ):
            out.add(name)
    return out


def odd_cells_by_table(db: Any, clean: Iterable[str] = ()) -> dict[str, list[str]]:
    """:func:`odd_cells`' lines by table (the tables with odd cells alone, in its order)."""
    clean = set(clean)
    present = {r[0] for r in db.rows("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    out: dict[str, list[str]] = {}
    for name, table in TABLES.items():
        if name not in present or name in clean:
            continue
        have = {r[1]: r[2] for r in db.rows(f'PRAGMA main.table_info("{name}")')}
        declared = dict(table.columns)
        keys = [c for c in keys_of(table) if c in have]
        checks = []
        for col in table.column_names:
            if col not in have:
                continue
            checks.append((col, _odd(col, declared[col], col in keys)))
        if not checks:
            continue
        where = " OR ".join(bad for _, bad in checks)
        # most files hold no odd cell: a scan that stops at the first one, in file order (no sort
        # by key), tells whether the table needs the ordered read below
        if db.one(f'SELECT 1 FROM main."{name}" WHERE {where} LIMIT 1') is None:
            continue
        select = ", ".join(f"CASE WHEN {bad} THEN {_what(col)} END" for col, bad in checks)
        named = [c for c in table.pk if c in have] or ["rowid"]
        order = ", ".join(_q(c) if c != "rowid" else c for c in named)
        sql = (
            f"SELECT {', '.join(_q(c) if c != 'rowid' else c for c in named)}, {select} "
            f'FROM main."{name}" WHERE {where} ORDER BY {order}'
        )
        counts: dict[str, int] = {}
        first: dict[str, tuple[Any, str]] = {}
        for row in db.rows(sql):
            ident, whats = tuple(row)[: len(named)], tuple(row)[len(named) :]
            for (col, _), what in zip(checks, whats):
                if what is None:
                    continue
                counts[col] = counts.get(col, 0) + 1
                first.setdefault(col, (ident, what))
        for col, _ in checks:
            if col not in counts:
                continue
            ident, what = first[col]
            row_name = ", ".join(f"{k}={_show(v)}" for k, v in zip(named, ident))
            action = "the row is left out" if col in keys else "read as missing"
            more = f" (and {counts[col] - 1} more rows)" if counts[col] > 1 else ""
            out.setdefault(name, []).append(
                f"{name}.{col}: row {row_name} holds {_describe(what)}, "
                f"not {_expected(col, declared[col], col in keys)}; "
                f"{action}{more}"
            )
    return out


def _expected(column: str, declared: str, key: bool) -> str:
    kind = _kind(declared)
    if kind == "INTEGER":
        return "an integer" + ("" if key else " from 0 to 2**53")
    if kind == "REAL":
        if column in FRACTION_COLUMNS:
            return "a number from 0 to 1"
        return "a number from 0 to 2**53" if column in AMOUNT_COLUMNS else "a finite number"
    return "text"


def _show(value: Any) -> str:
    """A row's key as it is shown in a warning: short, one line (the console sanitizes the rest)."""
    if isinstance(value, (bytes, bytearray)):
        return f"<blob of {len(value)} bytes>"
    if value is None:
        return "NULL"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_not_json)  # one decoder for every cell (json.loads makes one a call)


def loads(text: str | bytes) -> Any:
    """A JSON cell decoded as strict JSON (RFC 8259: no ``NaN``/``Infinity``); raises
    ``ValueError`` (``json.JSONDecodeError`` is one) for anything else, a cell nested deeper than
    Python's decoder goes included."""
    try:
        if isinstance(text, str):
            if text.startswith("\ufeff"):  # as json.loads
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
            return _STRICT.decode(text)
        return json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise ValueError("nested too deep to decode") from None
