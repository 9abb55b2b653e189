"""`evalkit import --workers`: a worker checks and serialises its inputs' ratings (the key and the
line of ratings.jsonl), so the parent only merges lines, sorts and renames; the ratings file is byte
for byte the one made from the rows in the parent, merged with an existing file the same way; a row
that does not pass is refused by the parent as before."""

from __future__ import annotations

import pytest

from evalkit.importers import Converted, FunctionImporter, import_files
from evalkit.importers.job import ImportJob, convert_one
from evalkit.importers.ratings_file import encode_rating, store_ratings
from evalkit.trajectory.builders import a320_scenario, trajectory


def rows(prefix, n=4):
    return [
        {
            "item_id": f"{prefix}-{i}",
            "rater": "inspect:match",
            "rater_kind": "mechanical",
            "dimension": "accuracy",
            "value": i / 3,
            **({"confidence": 0.5} if i % 2 else {}),
        }
        for i in range(n)
    ]


def importer(ratings_of):
    def convert(path, **_):
        name = path.rsplit("/", 1)[-1].split(".")[0]
        return Converted([trajectory(a320_scenario(), [], run_id=f"{name}-{i}") for i in range(2)], ratings_of(name))

    return FunctionImporter("rated", convert)


def test_a_worker_ships_its_ratings_as_keys_and_lines(tmp_path):
    src = tmp_path / "a.json"
    src.write_text("{}")
    done = convert_one(ImportJob(importer(rows), {}, str(tmp_path / "out"), "t"), str(src))
    assert done.ratings == [encode_rating(r) for r in rows("a")]
    assert all(isinstance(key, tuple) and line.startswith("{") for key, line in done.ratings)


def test_encoded_ratings_write_the_bytes_rows_write_merged_with_an_existing_file(tmp_path):
    for way in ("rows", "encoded"):
        out = tmp_path / way
        store_ratings(rows("old", 6), out)  # an earlier import: some replaced, some kept
        new = rows("old", 3) + rows("new")
        store_ratings(new if way == "rows" else [encode_rating(r) for r in new], out)
    assert (tmp_path / "rows" / "ratings.jsonl").read_bytes() == (tmp_path / "encoded" / "ratings.jsonl").read_bytes()


def test_ratings_from_the_pool_are_the_ratings_of_one_worker(tmp_path):
    inputs = []
    for i in range(12):
        inputs.append(tmp_path / f"in{i:02d}.json")
        inputs[-1].write_text("{}")
    results = {w: import_files(importer(rows), inputs, tmp_path / f"w{w}", workers=w) for w in (1, 2)}
    assert results[1].ratings == results[2].ratings == 48
    assert (tmp_path / "w1" / "ratings.jsonl").read_bytes() == (tmp_path / "w2" / "ratings.jsonl").read_bytes()


def test_a_rating_that_does_not_pass_is_refused_by_the_parent_as_before(tmp_path):
    from pydantic import ValidationError

    def bad(name):
        return rows(name, 2) + [
            {"item_id": f"{name}-x", "rater": "r", "rater_kind": "model", "dimension": "d", "value": 1}
        ]

    src = tmp_path / "a.json"
    src.write_text("{}")
    done = convert_one(ImportJob(importer(bad), {}, str(tmp_path / "out"), "t"), str(src))
    assert isinstance(done.ratings[-1], dict) and isinstance(done.ratings[0], tuple)
    with pytest.raises(ValidationError, match="rater_kind"):
        store_ratings(done.ratings, tmp_path / "out")
    with pytest.raises(ValidationError, match="rater_kind"):
        store_ratings(bad("a"), tmp_path / "out2")


def test_notes_of_many_inputs_merge_in_one_pass():
    """Each input's path is looked up once among the paths merged so far, not compared with each."""
    from evalkit.importers.notes import Note, merge

    compared = []

    class Path(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            compared.append(1)
            return str.__eq__(self, other)

    notes = [Note("k", "{where}: {items}", {f"t{i % 3}"}, 1, [Path(f"p{i % 500}")]) for i in range(2000)]
    merged = merge(notes)
    assert [(m.paths[:3], len(m.paths), m.lines, m.items) for m in merged] == [
        (["p0", "p1", "p2"], 500, 2000, {"t0", "t1", "t2"})
    ]
    assert len(compared) < 5 * len(notes)


def db_ratings(path):
    import sqlite3

    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM ratings ORDER BY item_id, rater, dimension").fetchall()


def test_the_database_written_from_the_workers_rows_is_the_ratings_file_imported(tmp_path):
    """The pool's workers send each rating's database row with its line; the parent writes the
    database from them, and it holds exactly what `evalkit annotations import` of the merged file
    stores, rows that replace an earlier import's and rows an earlier import left included."""
    from evalkit.agreement.ratings import import_ratings

    inputs = []
    for i in range(6):
        inputs.append(tmp_path / f"in{i}.json")
        inputs[-1].write_text("{}")
    out = tmp_path / "out"
    store_ratings(rows("in0", 6), out)  # an earlier import: in0-0..3 replaced, in0-4/5 kept
    result = import_files(importer(rows), inputs, out, db=tmp_path / "w.db", workers=2)
    assert not result.errors and result.ratings == 24
    import_ratings(tmp_path / "file.db", out / "ratings.jsonl")
    stored = db_ratings(tmp_path / "w.db")
    assert len(stored) == 26 and stored == db_ratings(tmp_path / "file.db")


def test_a_rating_without_a_worker_row_is_stored_from_its_line_checked_again(tmp_path):
    """Rows given as dicts or encoded lines alone (the API's store_ratings) have no worker row: stored all the same."""
    store_ratings(rows("a"), tmp_path / "out", tmp_path / "a.db")
    store_ratings([encode_rating(r) for r in rows("b")], tmp_path / "out", tmp_path / "a.db")
    assert [r[0] for r in db_ratings(tmp_path / "a.db")] == [f"{p}-{i}" for p in "ab" for i in range(4)]
