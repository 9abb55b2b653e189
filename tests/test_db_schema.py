"""evalkit/db: one schema with `PRAGMA user_version` migrations; files made before versioning open
and are migrated; read-only readers never write; stored rows are the ones the old sqlite-utils
writer produced; no module outside evalkit/db opens a connection."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from evalkit.api import Store, iter_scorecards, score_into
from evalkit.db import (
    SCHEMA_VERSION,
    TABLES,
    DbError,
    open_readonly,
    open_write,
    read_annotations,
    read_cards,
    read_ratings,
    read_scorecards,
)
from evalkit.trajectory.bundle import bundle_json
from evalkit.trajectory.values import compact_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# The schema evalkit wrote before evalkit/db existed: score tables through sqlite-utils, the judge's
# own DDL (user_version 0 throughout). Copied here on purpose: it is the input to migrate.
OLD_SCORE_TABLES = {
    "runs": (
        {
            "run_id": str,
            "path": str,
            "scenario_id": str,
            "scenario_title": str,
            "model": str,
            "provider": str,
            "ts_utc": str,
            "final_reason": str,
            "status": str,
            "bundle_hash": str,
        },
        "run_id",
    ),
    "scorecards": (
        {
            "run_id": str,
            "scenario_id": str,
            "model": str,
            "status": str,
            "scalar": float,
            "coverage": float,
            "order_score": float,
            "end_state": float,
            "all_passed": int,
            "safety_dangerous": int,
            "safety_anti_procedure": int,
            "extraneous": int,
            "bundle_hash": str,
            "card": str,
        },
        "run_id",
    ),
    "commands": (
        {
            "run_id": str,
            "idx": int,
            "step": int,
            "call_index": int,
            "tool": str,
            "control": str,
            "value": str,
            "args": str,
            "class": str,
            "subtype": str,
            "severity": str,
        },
        ("run_id", "idx"),
    ),
    "bundles": ({"bundle_hash": str, "bundle": str}, "bundle_hash"),
}
OLD_JUDGE_DDL = """
CREATE TABLE IF NOT EXISTS judge_calls (
    cache_key TEXT PRIMARY KEY, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT,
    rubric_version INTEGER, rubric_hash TEXT, params TEXT, request TEXT, raw_response TEXT,
    status TEXT NOT NULL, error TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,
    cost_usd REAL, latency_ms REAL, attempts INTEGER, started_at TEXT, finished_at TEXT
);
CREATE TABLE IF NOT EXISTS annotations (
    annotation_id TEXT PRIMARY KEY, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT,
    rubric_version INTEGER, rubric_hash TEXT, blind INTEGER, replicate INTEGER, status TEXT NOT NULL,
    annotation TEXT, rationale TEXT, cost_usd REAL, latency_ms REAL, prompt_tokens INTEGER,
    completion_tokens INTEGER, cache_key TEXT, created_at TEXT
);
CREATE TABLE IF NOT EXISTS annotation_values (
    annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT, dimension TEXT, value TEXT,
    confidence REAL, blind INTEGER, replicate INTEGER, PRIMARY KEY (annotation_id, dimension)
);
"""


def old_store(path: Path, cards) -> None:
    """The pre-evalkit/db writer, as it was: sqlite-utils tables and INSERT OR REPLACE rows."""
    db = sqlite_utils.Database(path)
    db.enable_wal()
    for name, (columns, pk) in OLD_SCORE_TABLES.items():
        db[name].create(columns, pk=pk, if_not_exists=True)
    db["commands"].create_index(["run_id"], if_not_exists=True)
    with db.conn:
        for card in cards:
            data = card.to_json_dict(with_bundle=False)
            v = card.vector
            rows = {
                "runs": [
                    {
                        "run_id": card.run_id,
                        "path": card.path,
                        "scenario_id": card.scenario_id,
                        "scenario_title": card.judge_bundle.get("title"),
                        "model": card.model,
                        "provider": card.provenance.provider,
                        "ts_utc": card.provenance.ts_utc,
                        "final_reason": card.informative.final_reason,
                        "status": card.status,
                        "bundle_hash": card.bundle_hash,
                    }
                ],
                "scorecards": [
                    {
                        "run_id": card.run_id,
                        "scenario_id": card.scenario_id,
                        "model": card.model,
                        "status": card.status,
                        "scalar": card.scalar,
                        "coverage": v.coverage,
                        "order_score": v.order,
                        "end_state": v.end_state,
                        "all_passed": None if v.all_passed is None else int(v.all_passed),
                        "safety_dangerous": v.safety_dangerous,
                        "safety_anti_procedure": v.safety_anti_procedure,
                        "extraneous": v.extraneous,
                        "bundle_hash": card.bundle_hash,
                        "card": compact_json(data),
                    }
                ],
                "commands": [
                    {
                        "run_id": card.run_id,
                        "idx": r["index"],
                        "step": r["step"],
                        "call_index": r["call_index"],
                        "tool": r["tool"],
                        "control": r["control"],
                        "value": None if r["value"] is None else compact_json(r["value"]),
                        "args": compact_json(r["args"]),
                        "class": r["class"],
                        "subtype": r["subtype"],
                        "severity": r["severity"],
                    }
                    for r in data["commands"]
                ],
                "bundles": [{"bundle_hash": card.bundle_hash, "bundle": bundle_json(card.judge_bundle)}],
            }
            for table, table_rows in rows.items():
                for row in table_rows:
                    cols = list(row)
                    db.conn.execute(
                        f"INSERT OR REPLACE INTO [{table}] ({', '.join(f'[{c}]' for c in cols)}) "
                        f"VALUES ({', '.join('?' for _ in cols)})",
                        [row[c] for c in cols],
                    )
    db.conn.executescript(OLD_JUDGE_DDL)
    db.close()


def dump(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {
            t: [tuple((type(v).__name__, v) for v in row) for row in conn.execute(f'SELECT * FROM "{t}" ORDER BY 1, 2')]
            for t in ("runs", "scorecards", "commands", "bundles")
        }
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def cards():
    return [c for c in iter_scorecards([EXAMPLES]) if not isinstance(c, Exception)]


def test_stored_rows_identical_to_the_old_writer(tmp_path, cards):
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    old_store(old, cards)
    with Store(new) as store:
        store.save_many(cards)
    assert dump(new) == dump(old)  # values and their SQLite types, row for row
    conn = sqlite3.connect(new)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_old_database_is_migrated_on_first_write(tmp_path, cards):
    db = tmp_path / "old.db"
    old_store(db, cards)
    before = dump(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()
    open_write(db).close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert set(TABLES) <= tables  # the ratings table was added
    assert dump(db) == before
    with Store(db) as store:
        assert [c.run_id for c in store.iter_scorecards()] == sorted(c.run_id for c in cards if c.bundle_hash)


def test_missing_columns_are_added_by_migration_and_overlaid_for_readers(tmp_path, cards):
    """An annotations table from before `rationale`/`created_at`: readers see them as NULL without
    the file changing; the first writer adds them."""
    db = tmp_path / "older.db"
    old_store(db, cards[:2])
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP TABLE annotations; CREATE TABLE annotations (annotation_id TEXT PRIMARY KEY, run_id TEXT,"
        " bundle_hash TEXT, judge_model TEXT, rubric_id TEXT, rubric_version INTEGER, rubric_hash TEXT,"
        " blind INTEGER, replicate INTEGER, status TEXT NOT NULL, annotation TEXT);"
    )
    conn.execute(
        "INSERT INTO annotations VALUES ('a1', ?, ?, 'openai/j', 'r', 1, 'rh', 1, 0, 'ok', ?)",
        (
            cards[0].run_id,
            cards[0].bundle_hash,
            json.dumps({"outcome": "pass", "confidence": 0.75, "rationale": "from the JSON"}),
        ),
    )
    conn.execute(
        "INSERT INTO annotation_values VALUES ('a1', ?, 'openai/j', 'r', 'outcome', '\"pass\"', NULL, 1, 0)",
        (cards[0].run_id,),
    )
    conn.commit()
    conn.close()
    before = digest(db)
    with open_readonly(db) as ro:
        values = list(read_annotations(ro, judge="j"))
        assert [(v.value, v.confidence, v.rationale) for v in values] == [("pass", 0.75, "from the JSON")]
        assert read_ratings(ro) == []  # a table the file does not have reads as empty
        assert len(list(read_cards(ro))) == 2
    assert digest(db) == before
    open_write(db).close()
    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(annotations)")]
    conn.close()
    assert {"rationale", "created_at"} <= set(cols) and set(TABLES["annotations"].column_names) <= set(cols)


def test_readonly_open_never_writes(tmp_path, cards):
    db = tmp_path / "e.db"
    with Store(db) as store:
        store.save_many(cards)
    before = digest(db)
    with open_readonly(db) as ro:
        assert len(list(read_scorecards(ro))) == len(cards)
        with pytest.raises(DbError):
            with ro.transaction():
                pass
        with pytest.raises(DbError, match="readonly|read-only"):
            list(ro.rows("INSERT INTO bundles VALUES ('x', 'y')"))
    assert digest(db) == before


def test_readonly_open_of_missing_file_creates_nothing(tmp_path):
    with pytest.raises(DbError, match="no such database file"):
        open_readonly(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_score_into_batches_and_warns_on_duplicate_run_id(tmp_path, cards):
    src = next(EXAMPLES.rglob("*.jsonl"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / src.name).write_bytes(src.read_bytes())
    (tmp_path / "b" / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    warnings, errors = [], []
    with Store(tmp_path / "e.db") as store:
        got = list(score_into([tmp_path / "a", tmp_path / "b"], store, errors.append, warnings.append, batch=1))
        stored = list(store.iter_scorecards())
    assert len(got) == 2 and got[0].run_id == got[1].run_id
    assert [c.run_id for c in stored] == [got[0].run_id]
    assert len(errors) == 1 and "bad.jsonl" in str(errors[0])
    assert [w for w in warnings if "already read from" in w] == [
        f"{got[1].path}: warning: run_id {got[1].run_id!r} was already read from {got[0].path}; "
        "this one replaces it in the aggregates and the database"
    ]


def test_no_module_outside_evalkit_db_opens_a_connection():
    pattern = re.compile(r"sqlite3\.connect|sqlite_utils\.Database\(|import sqlite3")
    offenders = []
    for package in ("evalkit", "judges"):
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("evalkit/db/"):
                continue
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(rel)
    assert offenders == []
