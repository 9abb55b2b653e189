"""evalkit/db: one schema with `PRAGMA user_version` migrations (a file lacking a table or column
gets it on the first write, readers see it as empty or NULL meanwhile); read-only readers never
write; no module outside evalkit/db opens a connection."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from evalkit.db import (
    TABLES,
    DbError,
    open_readonly,
    open_write,
    read_annotations,
    read_cards,
    read_ratings,
    read_scorecards,
)
from evalkit.db.scores import Store
from evalkit.engines.pipeline import score_files

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# The schema evalkit wrote before evalkit/db existed: score tables through sqlite-utils, the judge's
# own DDL (user_version 0 throughout). Copied here on purpose: it is the input to migrate.
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
    return [c for c in score_files([EXAMPLES]) if not isinstance(c, Exception)]


def test_missing_columns_are_added_by_migration_and_overlaid_for_readers(tmp_path, cards):
    """An annotations table from before `rationale`/`created_at`: readers see them as NULL without
    the file changing; the first writer adds them."""
    db = tmp_path / "older.db"
    with Store(db) as store:
        store.save_many(cards[:2])
    conn = sqlite3.connect(db)
    conn.executescript(
        "PRAGMA user_version = 0; DROP TABLE annotations; CREATE TABLE annotations (annotation_id TEXT PRIMARY KEY, run_id TEXT,"
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


def test_score_files_batches_and_warns_on_duplicate_run_id(tmp_path, cards):
    src = next(EXAMPLES.rglob("*.jsonl"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / src.name).write_bytes(src.read_bytes())
    (tmp_path / "b" / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    warnings = []
    with Store(tmp_path / "e.db") as store:
        got, errors = score_files(
            [tmp_path / "a", tmp_path / "b"], store=store, warn=warnings.append, batch=1
        ).collect()
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
