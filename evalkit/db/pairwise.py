"""Pairwise verdicts: which of two answers (``a``, ``b``) a rater preferred, the writer and the reader.

One row per (pair, rater, dimension, order shown): ``shown`` is ``ab`` (a was shown first), ``ba``,
or ``''`` for a verdict given without an order (a human's or a gold label). ``verdict`` is ``a``,
``b`` or ``tie`` in the pair's own frame whatever the order, NULL when a judge gave no verdict.
Written by ``evalkit annotations import`` (pair rows) and ``evalkit judge --pairwise``; read by the
audit's pairwise section. Rewriting the same key replaces the row; one call is one transaction.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from evalkit.db.connect import Database, open_write

COLUMNS = (
    "pair_id",
    "a",
    "b",
    "shown",
    "rater",
    "rater_kind",
    "dimension",
    "verdict",
    "a_length",
    "b_length",
    "rationale",
    "cache_key",
    "source",
)


@dataclass(frozen=True)
class PairVerdict:
    pair_id: str
    a: str
    b: str
    shown: str  # "ab", "ba" or "" (no order: a human or gold verdict)
    rater: str
    rater_kind: str
    dimension: str
    verdict: str | None  # "a" | "b" | "tie" in the pair's frame; None: no verdict
    a_length: int | None = None
    b_length: int | None = None
    rationale: str | None = None
    cache_key: str | None = None
    source: str | None = None


def write_pair_verdicts(path: str | os.PathLike[str], rows: Iterable[PairVerdict]) -> int:
    """Upsert ``rows`` in one transaction (all or none); the number written."""
    values = [tuple(getattr(r, c) for c in COLUMNS) for r in rows]
    db = open_write(path)
    try:
        with db.transaction() as conn:
            write_in(conn, values)
    finally:
        db.close()
    return len(values)


def write_in(conn, values: list[tuple]) -> None:
    """Upsert column tuples (in :data:`COLUMNS` order) on an open write transaction."""
    cols = ", ".join(COLUMNS)
    marks = ", ".join("?" for _ in COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[4:] if c not in ("rater", "dimension"))
    conn.executemany(
        f"INSERT INTO pairwise_verdicts ({cols}) VALUES ({marks}) "
        f"ON CONFLICT (pair_id, rater, dimension, shown) DO UPDATE SET a = excluded.a, b = excluded.b, {updates}",
        values,
    )


def read_pair_verdicts(db: Database, rater: str | None = None) -> list[PairVerdict]:
    """Every stored verdict ordered by (pair, rater, dimension, shown); ``rater`` keeps one rater."""
    sql = f"SELECT {', '.join(COLUMNS)} FROM pairwise_verdicts"
    args: tuple = ()
    if rater is not None:
        sql += " WHERE rater = ?"
        args = (rater,)
    out = []
    for r in db.rows(sql + " ORDER BY pair_id, rater, dimension, shown", args):
        data = {c: r[c] for c in COLUMNS}
        for c in ("pair_id", "a", "b", "rater", "rater_kind", "dimension"):
            data[c] = str(data[c])
        data["shown"] = str(data["shown"] or "")
        data["verdict"] = data["verdict"] if data["verdict"] in ("a", "b", "tie") else None
        for c in ("a_length", "b_length"):
            data[c] = data[c] if isinstance(data[c], int) and not isinstance(data[c], bool) else None
        out.append(PairVerdict(**data))
    return out


@dataclass(frozen=True)
class PairedRun:
    model: str | None
    scenario_id: str | None
    length: int | None  # characters of the run's judge bundle (what a judge reads)


def read_paired_runs(db: Database) -> dict[str, PairedRun]:
    """run_id → model, scenario and judge-bundle length of every scored run (the pairwise section
    knows a pair's runs by these)."""
    return {
        str(r["run_id"]): PairedRun(r["model"], r["scenario_id"], r["length"])
        for r in db.rows(
            "SELECT s.run_id AS run_id, s.model AS model, s.scenario_id AS scenario_id, "
            "length(b.bundle) AS length FROM scorecards s LEFT JOIN bundles b ON b.bundle_hash = s.bundle_hash"
        )
    }
