"""Human reviews (``evalkit view``): the ``reviews``, ``review_ratings`` and ``adjudications`` tables.

A review is one reviewer's answer on one run: ratings on the rubric's dimensions and outcome, a
verdict on each judge-versus-mechanical disagreement of the run (:data:`VERDICTS`) and a note,
with who and when. The tables are append-only (triggers refuse UPDATE and DELETE): an edit is a
new review that names the one it ``supersedes``, so the history is kept. A reviewer's *current*
review of a run is their latest.

Blindness is kept per rating, because it is what makes a rating count: a rating is blind when it
was given while the judge's and the mechanical scores were hidden. An edit made after the reveal
keeps a rating's blindness when its value did not change, and loses it when it did.

How the run was chosen is kept with each review (``reviews.design``, :data:`DESIGNS`):
``random`` or ``stratified`` (served by the label-next queue from a recorded sample, ``sample_id``),
``disagreement`` (served by the disagreement queue) or ``by_hand`` (anything else; also a review
without a design). An edit made by hand keeps the design of the review it supersedes: the run was
chosen the first time. `evalkit estimate` uses a label only where its method allows its design.

Queues also keep *claims* (``review_claims``): a reviewer holds a run for a while (:data:`CLAIM_MINUTES`)
so that the queue serves it to nobody else meanwhile; saving a review of it releases it.

What the audit reads (:func:`read_review_ratings`, :func:`read_adjudications`): the current
reviews of runs whose transcript is still the one reviewed (a run re-scored since, with another
bundle, makes its reviews *stale*, as it does annotations). Their blind ratings are ``human``
ratings with the reviewer as rater, exactly like imported ones; their non-blind ratings are left
out and counted (as non-blind judge annotations are).

:class:`ReviewTables` is the only writer; its connection may write these three tables and no
other (an SQLite authorizer refuses the rest), so the view that holds it cannot change a score.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evalkit.db.connect import Database, open_write
from evalkit.db.judge import label_value, now_utc
from evalkit.db.ratings import Rating

VERDICTS = ("judge_right", "mechanical_right", "both_wrong", "ground_truth_wrong", "unclear")
REVIEW_TABLES = frozenset({"reviews", "review_ratings", "adjudications"})
QUEUE_TABLES = frozenset({"review_claims", "label_samples", "label_sample_runs"})
DESIGNS = ("random", "stratified", "disagreement", "by_hand")
SAMPLE_DESIGNS = ("random", "stratified")
CLAIM_MINUTES = 15
SOURCE = "reviews"  # Rating.source of a rating given in a review

# SQL, true for a review whose run now has another transcript than the one reviewed.
STALE = (
    "EXISTS (SELECT 1 FROM scorecards s WHERE s.run_id = r.run_id AND r.bundle_hash IS NOT NULL "
    "AND s.bundle_hash != r.bundle_hash)"
)
# SQL, true for each reviewer's latest review of a run: its revision (1, 2, ... per run and
# reviewer) is the highest.
CURRENT = (
    "NOT EXISTS (SELECT 1 FROM reviews n WHERE n.run_id = r.run_id AND n.reviewer = r.reviewer "
    "AND n.revision > r.revision)"
)


@dataclass(frozen=True)
class Review:
    review_id: str
    run_id: str
    reviewer: str
    rubric_id: str | None
    blind: bool
    note: str
    created_at: str
    revision: int
    supersedes: str | None
    bundle_hash: str | None
    design: str = "by_hand"
    sample_id: str | None = None
    ratings: dict[str, Any] = field(default_factory=dict)
    blind_ratings: tuple[str, ...] = ()  # the dimensions rated blind
    verdicts: dict[str, str] = field(default_factory=dict)
    current: bool = True
    stale: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "review_id": self.review_id,
            "run_id": self.run_id,
            "reviewer": self.reviewer,
            "rubric": self.rubric_id,
            "blind": self.blind,
            "note": self.note,
            "created_at": self.created_at,
            "revision": self.revision,
            "supersedes": self.supersedes,
            "design": self.design,
            "sample": self.sample_id,
            "ratings": dict(self.ratings),
            "blind_ratings": list(self.blind_ratings),
            "verdicts": dict(self.verdicts),
            "current": self.current,
            "stale": self.stale,
        }


@dataclass(frozen=True)
class Adjudication:
    run_id: str
    reviewer: str
    pairing: str
    verdict: str
    blind: bool
    created_at: str


def _only_review_tables(action: int, arg1: str | None, arg2: str | None, dbname: str | None, source: str | None) -> int:
    if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE) and dbname == "main":
        return sqlite3.SQLITE_OK if arg1 in REVIEW_TABLES | QUEUE_TABLES else sqlite3.SQLITE_DENY
    if action in (
        sqlite3.SQLITE_CREATE_TABLE,
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_ALTER_TABLE,
        sqlite3.SQLITE_CREATE_INDEX,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_CREATE_TRIGGER,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_CREATE_VIEW,
        sqlite3.SQLITE_DROP_VIEW,
    ):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class ReviewTables:
    """The review tables of one database file, open for appending reviews, claiming runs and
    recording label samples (and nothing else)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = str(path)
        self.database = open_write(self.path)  # migrates an older file: the review tables appear
        self.database.conn.set_authorizer(_only_review_tables)

    def close(self) -> None:
        self.database.close()

    def add(
        self,
        run_id: str,
        reviewer: str,
        *,
        rubric_id: str | None,
        ratings: dict[str, Any],
        verdicts: dict[str, str],
        note: str,
        blind: bool,
        bundle_hash: str | None,
        design: str = "by_hand",
        sample_id: str | None = None,
    ) -> Review:
        """Append one review (the caller has validated its fields) in one transaction; it supersedes
        the reviewer's current review of the run (whose design an edit by hand keeps) and releases
        the run's claim. Returns the stored review."""
        bad = sorted(set(verdicts.values()) - set(VERDICTS))
        if bad:
            raise ValueError(f"unknown verdict {bad[0]!r} (one of {', '.join(VERDICTS)})")
        if design not in DESIGNS:
            raise ValueError(f"unknown design {design!r} (one of {', '.join(DESIGNS)})")
        review_id = uuid.uuid4().hex
        db = self.database
        with db.transaction() as conn:
            current = list(
                db.query(
                    "SELECT r.review_id, r.revision, r.design, r.sample_id FROM reviews r WHERE r.run_id = ? "
                    f"AND r.reviewer = ? AND {CURRENT}",
                    (run_id, reviewer),
                )
            )
            prev = current[0] if current else None
            if design == "by_hand" and prev is not None and prev["design"] in DESIGNS:
                design, sample_id = prev["design"], prev["sample_id"]
            before = (
                {}
                if prev is None
                else {
                    r["dimension"]: (label_value(r["value"]), bool(r["blind"]))
                    for r in db.rows_where(
                        "review_ratings", "review_id = ?", [prev["review_id"]], select="dimension, value, blind"
                    )
                }
            )
            created = now_utc()
            db.utils.table("reviews").insert(
                {
                    "review_id": review_id,
                    "run_id": run_id,
                    "reviewer": reviewer,
                    "rubric_id": rubric_id,
                    "blind": int(blind),
                    "note": note,
                    "created_at": created,
                    "revision": 1 if prev is None else int(prev["revision"]) + 1,
                    "supersedes": None if prev is None else prev["review_id"],
                    "bundle_hash": bundle_hash,
                    "design": design,
                    "sample_id": sample_id if design in SAMPLE_DESIGNS else None,
                }
            )
            db.utils.table("review_ratings").insert_all(
                {
                    "review_id": review_id,
                    "run_id": run_id,
                    "reviewer": reviewer,
                    "dimension": dim,
                    "value": json.dumps(value),
                    "blind": int(blind or (dim in before and before[dim][1] and before[dim][0] == value)),
                }
                for dim, value in ratings.items()
            )
            db.utils.table("adjudications").insert_all(
                {
                    "review_id": review_id,
                    "run_id": run_id,
                    "reviewer": reviewer,
                    "pairing": pairing,
                    "verdict": verdict,
                    "blind": int(blind),
                    "created_at": created,
                }
                for pairing, verdict in verdicts.items()
            )
            conn.execute("DELETE FROM review_claims WHERE run_id = ? AND reviewer = ?", (run_id, reviewer))
        reviews = read_reviews(self.database, run_id=run_id)
        return next(r for r in reviews if r.review_id == review_id)

    def claim_first(
        self, candidates: Iterable[str], reviewer: str, minutes: float = CLAIM_MINUTES, *, now: datetime | None = None
    ) -> str | None:
        """Claim for ``reviewer`` the first of ``candidates`` (in order) that no other reviewer holds
        now, for ``minutes``; one the reviewer holds already is theirs again. The run id, or None.
        One transaction: two processes never claim the same run."""
        at = now or datetime.now(UTC)
        stamp, until = _stamp(at), _stamp(at + timedelta(minutes=minutes))
        db = self.database
        with db.transaction():
            held = {
                r["run_id"]: r["reviewer"]
                for r in db.rows_where("review_claims", "expires_at > ?", [stamp], select="run_id, reviewer")
            }
            for run_id in candidates:
                if held.get(run_id, reviewer) == reviewer:
                    db.utils.table("review_claims").insert(
                        {"run_id": run_id, "reviewer": reviewer, "claimed_at": stamp, "expires_at": until},
                        replace=True,
                    )
                    return run_id
        return None

    def create_sample(
        self,
        design: str,
        seed: int,
        run_ids: list[str],
        *,
        size: int | None,
        dimension: str | None = None,
        m0: int | None = None,
        m1: int | None = None,
        model: str | None = None,
        scenario: str | None = None,
        created_by: str | None = None,
        second_share: float | None = None,
    ) -> str:
        """Record a label sample: ``run_ids`` (the runs in scope, in any order) put in the seeded
        random order the queue serves; ``second_share`` of its runs get a second reviewer's rating
        (:func:`second_rating`); its id."""
        if design not in SAMPLE_DESIGNS:
            raise ValueError(f"unknown sample design {design!r} (one of {', '.join(SAMPLE_DESIGNS)})")
        order = sorted(run_ids)
        random.Random(seed).shuffle(order)
        sample_id = uuid.uuid4().hex[:12]
        with self.database.transaction():
            self.database.utils.table("label_samples").insert(
                {
                    "sample_id": sample_id,
                    "design": design,
                    "seed": seed,
                    "size": size,
                    "stratified_on": dimension,
                    "m0": m0,
                    "m1": m1,
                    "model": model,
                    "scenario": scenario,
                    "runs": len(order),
                    "created_at": now_utc(),
                    "created_by": created_by,
                    "second_share": second_share,
                }
            )
            self.database.utils.table("label_sample_runs").insert_all(
                [("sample_id", "position", "run_id"), *((sample_id, i, run) for i, run in enumerate(order))]
            )
        return sample_id


def second_rating(seed: int, run_id: str, share: float) -> bool:
    """Whether a sample's run is one of the ``share`` that get a second reviewer's rating: a draw
    from the sample's seed and the run (uniform, independent of the order and of any rating)."""
    if not share:
        return False
    digest = hashlib.sha256(f"{seed}:second:{run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def active_claims(db: Database, *, now: datetime | None = None) -> dict[str, tuple[str, str]]:
    """run → (reviewer, expires_at) of the claims not yet expired."""
    stamp = _stamp(now or datetime.now(UTC))
    return {
        str(r["run_id"]): (r["reviewer"], r["expires_at"])
        for r in db.rows_where("review_claims", "expires_at > ?", [stamp], select="run_id, reviewer, expires_at")
    }


def read_samples(db: Database) -> list[dict[str, Any]]:
    """The label samples, oldest first."""
    return list(
        db.rows_where(
            "label_samples",
            select="sample_id, design, seed, size, stratified_on AS dimension, m0, m1, model, scenario, runs, "
            "created_at, created_by, coalesce(second_share, 0) AS second_share",
            order_by="created_at, sample_id",
        )
    )


def read_review_designs(db: Database) -> dict[tuple[str, str], str]:
    """(run, reviewer) → how the run was chosen (:data:`DESIGNS`) for each current review that is
    not stale; a review without a design is ``by_hand``."""
    return {
        (str(r["run_id"]), r["reviewer"]): r["design"] if r["design"] in DESIGNS else "by_hand"
        for r in db.query(f"SELECT r.run_id, r.reviewer, r.design FROM reviews r WHERE {CURRENT} AND NOT {STALE}")
    }


def read_reviews(db: Database, run_id: str | None = None, *, current_only: bool = False) -> list[Review]:
    """Reviews, newest first (all of them, or one run's), each with its ratings and verdicts."""
    where = []
    args: list[Any] = []
    if run_id is not None:
        where.append("r.run_id = ?")
        args.append(run_id)
    if current_only:
        where.append(CURRENT)
    sql = (
        f"SELECT r.*, {CURRENT} AS is_current, {STALE} AS is_stale FROM reviews r"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY r.created_at DESC, r.revision DESC, r.review_id"
    )
    heads = list(db.query(sql, args))
    if not heads:
        return []
    ids = [h["review_id"] for h in heads]
    ratings: dict[str, dict[str, Any]] = {i: {} for i in ids}
    blind: dict[str, list[str]] = {i: [] for i in ids}
    verdicts: dict[str, dict[str, str]] = {i: {} for i in ids}
    wanted = set(ids)
    where_run = None if run_id is None else "run_id = ?"
    run_args = [] if run_id is None else [run_id]
    for row in db.rows_where(
        "review_ratings",
        where_run,
        run_args,
        select="review_id, dimension, value, blind",
        order_by="review_id, dimension",
    ):
        if row["review_id"] in wanted:
            ratings[row["review_id"]][row["dimension"]] = label_value(row["value"])
            if row["blind"]:
                blind[row["review_id"]].append(row["dimension"])
    for row in db.rows_where(
        "adjudications", where_run, run_args, select="review_id, pairing, verdict", order_by="review_id, pairing"
    ):
        if row["review_id"] in wanted:
            verdicts[row["review_id"]][row["pairing"]] = row["verdict"]
    return [
        Review(
            review_id=h["review_id"],
            run_id=h["run_id"],
            reviewer=h["reviewer"],
            rubric_id=h["rubric_id"],
            blind=bool(h["blind"]),
            note=h["note"] or "",
            created_at=h["created_at"] or "",
            revision=int(h["revision"] or 0),
            supersedes=h["supersedes"],
            bundle_hash=h["bundle_hash"],
            design=h["design"] if h["design"] in DESIGNS else "by_hand",
            sample_id=h["sample_id"],
            ratings=ratings[h["review_id"]],
            blind_ratings=tuple(blind[h["review_id"]]),
            verdicts=verdicts[h["review_id"]],
            current=bool(h["is_current"]),
            stale=bool(h["is_stale"]),
        )
        for h in heads
    ]


def read_review_ratings(db: Database) -> tuple[list[Rating], int]:
    """The blind ratings of current reviews that are not stale, as ``human`` ratings (the reviewer
    as rater), ordered by (item, rater, dimension); and how many non-blind ones were left out."""
    # sqlite3 rows: `evalkit review export` reads this and imports nothing heavy (no sqlite-utils)
    rows = list(
        db.rows(
            "SELECT v.run_id, v.reviewer, v.dimension, v.value, v.blind FROM review_ratings v "
            f"JOIN reviews r ON r.review_id = v.review_id WHERE {CURRENT} AND NOT {STALE} "
            "ORDER BY v.run_id, v.reviewer, v.dimension"
        )
    )
    kept = [Rating(str(r[0]), r[1], "human", r[2], label_value(r[3]), None, SOURCE) for r in rows if r[4]]
    return kept, len(rows) - len(kept)


def read_adjudications(db: Database) -> list[Adjudication]:
    """The verdicts of current reviews that are not stale, ordered by (pairing, run, reviewer)."""
    return [
        Adjudication(
            str(r["run_id"]), r["reviewer"], r["pairing"], r["verdict"], bool(r["blind"]), r["created_at"] or ""
        )
        for r in db.query(
            "SELECT a.run_id, a.reviewer, a.pairing, a.verdict, a.blind, a.created_at FROM adjudications a "
            f"JOIN reviews r ON r.review_id = a.review_id WHERE {CURRENT} AND NOT {STALE} "
            "ORDER BY a.pairing, a.run_id, a.reviewer"
        )
    ]


def reviewed_run_ids(db: Database, run_ids: Iterable[str] | None = None) -> set[str]:
    """The runs that have at least one review (of any transcript)."""
    if run_ids is None:
        return {str(r["run_id"]) for r in db.rows_where("reviews", select="DISTINCT run_id")}
    ids = list(run_ids)
    out: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        out |= {
            str(r["run_id"])
            for r in db.rows_where(
                "reviews", f"run_id IN ({', '.join('?' for _ in chunk)})", chunk, select="DISTINCT run_id"
            )
        }
    return out
