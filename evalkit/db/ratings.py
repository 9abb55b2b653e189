"""Imported ratings (``evalkit annotations import``): the writer and the typed reader.

``value`` is stored as JSON text. Re-importing replaces the ratings with the same
``(item_id, rater, dimension)``; one file is one transaction.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from evalkit.db.connect import Database, open_write
from evalkit.db.judge import label_value


class Rating(NamedTuple):
    """One rating (a tuple: the audit holds one per judge value, 10^6 at scale)."""

    item_id: str
    rater: str
    rater_kind: str
    dimension: str
    value: Any
    confidence: float | None
    source: str  # "ratings" (imported) or "annotations" (evalkit judge)


def write_ratings(path: str | os.PathLike[str], rows: Iterable[Any], source: str) -> None:
    """Upsert rows (objects with item_id, rater, rater_kind, dimension, value, confidence) in one
    transaction: all of them or none."""
    write_rating_values(
        path, [(r.item_id, r.rater, r.rater_kind, r.dimension, r.value, r.confidence) for r in rows], source
    )


def write_rating_values(path: str | os.PathLike[str], rows: Iterable[tuple], source: str) -> None:
    """:func:`write_ratings` for rows given as ``(item_id, rater, rater_kind, dimension, value,
    confidence)`` tuples (what ``evalkit import``'s workers compute)."""
    values = [(*r[:4], json.dumps(r[4]), r[5], source) for r in rows]
    db = open_write(path)
    try:
        with db.transaction() as conn:
            conn.executemany(
                """INSERT INTO ratings (item_id, rater, rater_kind, dimension, value, confidence, source)
                   VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (item_id, rater, dimension) DO UPDATE SET
                     rater_kind = excluded.rater_kind, value = excluded.value,
                     confidence = excluded.confidence, source = excluded.source""",
                values,
            )
    finally:
        db.close()


def read_ratings(db: Database, kind: str | None = None) -> list[Rating]:
    """Imported ratings ordered by (item, rater, dimension); ``kind`` keeps one rater kind."""
    sql = "SELECT item_id, rater, rater_kind, dimension, value, confidence FROM ratings"
    args: tuple = ()
    if kind is not None:
        sql += " WHERE rater_kind = ?"
        args = (kind,)
    return [
        Rating(
            str(r["item_id"]),
            r["rater"],
            r["rater_kind"],
            r["dimension"],
            label_value(r["value"]),
            r["confidence"],
            "ratings",
        )
        for r in db.rows(sql + " ORDER BY item_id, rater, dimension", args)
    ]


def imported_judges(db: Database) -> list[str]:
    """The raters of imported ratings of the judge kind (not judges that ran here)."""
    return [r[0] for r in db.rows("SELECT DISTINCT rater FROM ratings WHERE rater_kind = 'judge' ORDER BY 1")]


def stored_labels(
    path: str | os.PathLike[str], dimensions: Iterable[str], replaced: Iterable[tuple[str, str, str]] = ()
) -> dict[str, set[Any]]:
    """The labels stored for each of ``dimensions`` (imported ratings and judge values), for a file
    about to be imported to be checked against; {} when the database does not exist yet. A label
    that only ratings the file replaces (``replaced``: their ``(item_id, rater, dimension)``) hold
    is not counted: the import that corrects it removes it."""
    from evalkit.db.connect import open_readonly

    if not os.path.exists(path):
        return {}
    wanted = json.dumps(sorted(set(dimensions)))
    keys = json.dumps(sorted(set(replaced)))
    out: dict[str, set[Any]] = {}
    with open_readonly(path) as db:
        # how many ratings hold each label, less the ratings being replaced (each read by its key)
        held: dict[tuple[str, str], int] = {}
        sql = (
            "SELECT dimension, value, count(*) FROM ratings WHERE dimension IN (SELECT value FROM json_each(?)) "
            "GROUP BY dimension, value"
        )
        for dimension, value, n in db.tuples(sql, [wanted]):
            held[(dimension, value)] = n
        sql = (
            "SELECT r.dimension, r.value FROM json_each(?) AS k JOIN ratings AS r"
            " ON r.item_id = json_extract(k.value, '$[0]') AND r.rater = json_extract(k.value, '$[1]')"
            " AND r.dimension = json_extract(k.value, '$[2]')"
        )
        for dimension, value in db.tuples(sql, [keys]) if held else ():
            if (dimension, value) in held:
                held[(dimension, value)] -= 1
        rows = [(dimension, value) for (dimension, value), n in held.items() if n > 0]
        sql = (
            "SELECT DISTINCT dimension, value FROM annotation_values"
            " WHERE dimension IN (SELECT value FROM json_each(?))"
        )
        for dimension, value in rows + list(db.tuples(sql, [wanted])):
            label = label_value(value)
            if isinstance(label, (str, int, float)):
                out.setdefault(dimension, set()).add(label)
    return out


def stored_dimensions(path: str | os.PathLike[str]) -> set[str]:
    """The dimensions the database holds ratings or judge values of (none when it does not exist yet)."""
    from evalkit.db.connect import open_readonly

    if not os.path.exists(path):
        return set()
    with open_readonly(path) as db:
        sql = "SELECT DISTINCT dimension FROM ratings UNION SELECT DISTINCT dimension FROM annotation_values"
        return {r[0] for r in db.tuples(sql) if isinstance(r[0], str)}


def stored_runs(path: str | os.PathLike[str]) -> set[str]:
    """The run ids the database holds scorecards for (none when it does not exist yet)."""
    from evalkit.db.connect import open_readonly

    if not os.path.exists(path):
        return set()
    with open_readonly(path) as db:
        return {r[0] for r in db.tuples("SELECT run_id FROM scorecards")}
