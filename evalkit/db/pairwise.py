"""Pairwise verdicts: which of two answers (``a``, ``b``) a rater preferred, the writer and the reader.

One row per (pair, rater, dimension, order shown): ``shown`` is ``ab`` (a was shown first), ``ba``,
or ``''`` for a verdict given without an order (a human's or a gold label). ``verdict`` is ``a``,
``b`` or ``tie`` in the pair's own frame whatever the order, NULL when a judge gave no verdict.
Written by ``evalkit annotations import`` (pair rows) and ``evalkit judge --pairwise``; read by the
audit's pairwise section. Rewriting the same key replaces the row; one call is one transaction.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from evalkit.db.connect import Database, DbError, open_write
from evalkit.db.judge import JudgeTables, read_bundle_hashes

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
    out = []
    for data in db.rows_where(
        "pairwise_verdicts",
        None if rater is None else "rater = ?",
        [] if rater is None else [rater],
        select=", ".join(COLUMNS),
        order_by="pair_id, rater, dimension, shown",
    ):
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


def read_judged_lengths(
    db: Database, bundles: dict[str, str] | None = None, sizes: dict[str, int] | None = None
) -> dict[str, int]:
    """run_id → characters of the judge bundle of every run with an annotation (what the judge read).
    ``bundles``: each scorecard's bundle hash (:func:`~evalkit.db.judge.read_bundle_hashes`), when
    the caller has read them; ``sizes``: :func:`read_bundle_sizes`, when the caller has them. The
    bundles' lengths, the runs' hashes and the judged runs are read apart and matched here: a join
    looks each bundle up through its view's index, at a third more than the scans."""
    size = dict(db.tuples(SIZES)) if sizes is None else sizes
    if bundles is None:
        bundles = read_bundle_hashes(db)
    judged = [run for (run,) in db.tuples("SELECT DISTINCT run_id FROM annotations")]
    return {str(run): size[bundles[run]] for run in judged if run in bundles and bundles[run] in size}


TEXT_BUNDLE = "typeof(bundle) = 'text'"
SIZES = f"SELECT bundle_hash, length(bundle) FROM bundles WHERE {TEXT_BUNDLE}"


def read_bundle_sizes(db: Database) -> dict[str, int] | None:
    """bundle_hash → characters of each text bundle, as :func:`read_judged_lengths` reads them, in
    one row (one JSON object: a statement that returns few rows runs beside the caller's thread,
    :class:`~evalkit.db.connect.Beside`). None when the object does not hold exactly the hashes
    a row-by-row read gives (a hash that is not valid UTF-8 or holds a NUL, a file too large for
    one value, any error): the caller reads them row by row, which fails as such a read fails."""
    try:
        row = next(
            db.tuples(
                "SELECT json_group_object(bundle_hash, length(bundle)), count(*), "
                f"sum(length(CAST(bundle_hash AS BLOB))) FROM bundles WHERE {TEXT_BUNDLE}"
            )
        )
        sizes = json.loads(row[0])
        whole = len(sizes) == row[1] and sum(len(k.encode()) for k in sizes) == (row[2] or 0)
    except (DbError, ValueError, TypeError, AttributeError, StopIteration):
        return None
    if not whole or not all(type(v) is int for v in sizes.values()):
        return None
    return sizes


@dataclass(frozen=True)
class PairCandidate:
    run_id: str
    model: str
    scenario_id: str
    status: str
    bundle_hash: str  # '' when the run has no judge bundle


def read_pair_candidates(db: Database) -> list[PairCandidate]:
    """Every scored run in run-id order, with what pairing needs (no bundle is read)."""
    return [
        PairCandidate(
            str(r["run_id"]),
            str(r["model"] or ""),
            str(r["scenario_id"] or ""),
            str(r["status"] or ""),
            str(r["bundle_hash"] or ""),
        )
        for r in db.query(
            "SELECT s.run_id AS run_id, s.model AS model, s.scenario_id AS scenario_id, s.status AS status, "
            "CASE WHEN b.bundle IS NULL OR b.bundle IN ('', '{}') THEN '' ELSE s.bundle_hash END AS bundle_hash "
            "FROM scorecards s LEFT JOIN bundles b ON b.bundle_hash = s.bundle_hash ORDER BY s.run_id"
        )
    ]


def read_bundle(db: Database, bundle_hash: str) -> str | None:
    """The stored judge bundle (its canonical JSON text) of ``bundle_hash``, or None."""
    row = db.one("SELECT bundle FROM bundles WHERE bundle_hash = ?", (bundle_hash,))
    return None if row is None else str(row[0])


class PairwiseTables(JudgeTables):
    """The judge's writer (cache, output modes) whose answers become ``pairwise_verdicts`` rows.

    Before a work item runs, :meth:`expect` says which pair and order its annotation id stands for
    and how to read its answer (``verdicts(values)``: dimension → ``a``/``b``/``tie`` in the pair's
    frame). An ``ok`` answer writes one row per dimension in the call's transaction, replacing the
    same (pair, rater, dimension, shown); a failed call writes no verdict (it is in ``judge_calls``
    with its error, and the next run asks again), so a failure never replaces a verdict."""

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False):
        super().__init__(path, readonly=readonly)
        self._slots: dict[str, tuple[PairVerdict, Callable[[dict], dict[str, str]]]] = {}

    def expect(self, annotation_id: str, template: PairVerdict, verdicts: Callable[[dict], dict[str, str]]) -> None:
        """``template`` holds the row's pair, order, rater and lengths; dimension and verdict come
        from the answer."""
        self._slots[annotation_id] = (template, verdicts)

    def judged_runs(self, model: str, rubric_id: str, rubric_version: int, blind: bool) -> list[str]:
        return []  # drift replicates are not drawn from pairwise answers

    def _write_annotation(self, conn, ann: dict, values: dict | None, confidence: float | None, tag: str) -> dict:
        template, verdicts = self._slots[ann["annotation_id"]]
        if ann["status"] == "ok" and values:
            rows = [
                replace(
                    template,
                    dimension=dimension,
                    verdict=verdict,
                    rationale=values.get("rationale"),
                    cache_key=ann.get("cache_key"),
                )
                for dimension, verdict in verdicts(values).items()
            ]
            write_in(conn, [tuple(getattr(r, c) for c in COLUMNS) for r in rows])
        return {"replicate": 0, "status": ann["status"], "annotation": ann.get("annotation")}
