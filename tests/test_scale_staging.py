"""A worker's batch of database rows travels as a staging database (the rows already inserted into
SQLite tables of the scores' column types, serialised): the parent attaches it and copies the rows
with INSERT ... SELECT, decoding none of them. The database is row for row what executemany of the
same rows stores, whatever the batches and a run_id read twice (in one batch or across two)."""

from __future__ import annotations

import sqlite3

import pytest
from engine_helpers import make_corpus
from test_scale_identical import dump

from evalkit.db import scores
from evalkit.db.scores import BatchRows, StagedRows, Store, batch_rows, stage_rows
from evalkit.engines.job import ScoreJob, score_batch
from evalkit.engines.worker import score_one


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    corpus = make_corpus(tmp_path_factory.mktemp("corpus"), n=30)
    files = [corpus / "part-0" / f"run-{i:04d}.jsonl" for i in range(8)] + [corpus / "part-2" / "run-0055a-dup.jsonl"]
    return [score_one(ScoreJob(db_rows=True), str(f)).rows for f in files]


def stored(path, batches):
    with Store(path) as store:
        store.save_batches(batches)
    return dump(path)


def test_a_batch_of_several_files_ships_as_a_staging_database(tmp_path):
    corpus = make_corpus(tmp_path, n=8)
    files = sorted(str(p) for p in (corpus / "part-0").glob("run-000?.jsonl"))
    job = ScoreJob(db_rows=True)
    (batch,) = score_batch(job, files)
    several = batch.pieces.rows
    assert isinstance(several, StagedRows) and isinstance(several.data, bytes)
    assert len(several.run_ids) == len(files) == 8
    one = score_batch(job, files[:1])[0].pieces.rows
    assert isinstance(one, BatchRows)  # in this process, one file a batch: nothing to ship


def test_staged_rows_store_what_executemany_stores(cards, tmp_path):
    plain = stored(tmp_path / "plain.db", [batch_rows(cards)])
    staged = stored(tmp_path / "staged.db", [stage_rows(batch_rows(cards))])
    assert staged == plain and len(plain["runs"]) == 8  # run-0001 read twice: the later card kept


def test_a_run_id_read_again_in_a_later_staged_batch_keeps_only_the_later_commands(cards, tmp_path):
    first, later = cards[:4], cards[4:]  # run-0001 in the first, again (fewer commands) at the end
    assert len(cards[1]["commands"]) > len(cards[-1]["commands"])
    reference = stored(tmp_path / "one-by-one.db", [batch_rows([c]) for c in cards])
    ways = {
        "staged": [stage_rows(batch_rows(first)), stage_rows(batch_rows(later))],
        "mixed": [batch_rows(first), stage_rows(batch_rows(later))],
        "mixed the other way": [stage_rows(batch_rows(first)), batch_rows(later[:2]), batch_rows(later[2:])],
    }
    for name, batches in ways.items():
        assert stored(tmp_path / f"{name}.db", batches) == reference, name
    assert len([r for r in reference["commands"] if r[0] == "run-0001"]) == len(cards[-1]["commands"])


def test_staged_rows_keep_every_value_exactly(tmp_path):
    rows = {
        "runs": [("r", "p", "s", "t", "m", None, None, None, "scored", "h")],
        "scorecards": [("r", "s", "m", "scored", 0.1 + 0.2, 1, 2.5e-310, None, 1, 0, 0, 3, "h", '{"é":1}')],
        "commands": [
            ("r", 0, 1, 2, "tool", "c", "1.0", "{}", "read", None, None),
            ("r", 1, 2, None, "t\u2028", "c", None, "[]", "cmd", "x", "high"),
        ],
        "bundles": [("h", '{"b":"\\u0000 ü"}')],
    }
    assert stored(tmp_path / "s.db", [stage_rows(batch_rows([rows]))]) == stored(
        tmp_path / "p.db", [batch_rows([rows])]
    )


def test_a_parent_without_deserialize_reads_the_rows_back(cards, tmp_path, monkeypatch):
    reference = stored(tmp_path / "plain.db", [batch_rows(cards), batch_rows(cards[:2])])
    staged = [stage_rows(batch_rows(cards)), stage_rows(batch_rows(cards[:2]))]
    monkeypatch.setattr(scores, "_can_deserialize", lambda conn: False)
    assert stored(tmp_path / "file.db", staged) == reference


def test_a_staging_database_that_is_not_one_is_a_database_error(tmp_path):
    from evalkit.db import DbError

    bad = StagedRows(["r"], b"not a database at all" * 300, 10)
    with Store(tmp_path / "x.db") as store, pytest.raises(DbError, match="x.db"):
        store.save_batches([bad])
    assert sqlite3.connect(tmp_path / "x.db").execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_staging_database_laid_out_otherwise_is_refused(tmp_path):
    from evalkit.db import DbError

    other = sqlite3.connect(":memory:")
    other.execute("CREATE TABLE runs (run_id TEXT, path TEXT)")
    other.execute("INSERT INTO runs VALUES ('r', 'p')")
    other.commit()
    with Store(tmp_path / "x.db") as store, pytest.raises(DbError, match="not laid out"):
        store.save_batches([StagedRows(["r"], other.serialize(), 10)])
