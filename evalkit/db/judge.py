"""The judge's tables: the call cache (``judge_calls``), ``annotations`` and ``annotation_values``.

:class:`JudgeTables` is the judge layer's writer (``evalkit.judges.store.JudgeStore`` is this class).
Every finished call is written in one short ``BEGIN IMMEDIATE`` transaction (call row +
annotation + values), so a killed process leaves either all of a call or none of it, and two
processes can share the file. Writes are upserts on deterministic keys: re-running never
duplicates rows.

Rules kept here:
- a failure never overwrites a stored success (neither the cached call nor the annotation);
- only ``status = 'ok'`` calls are cache hits (:meth:`JudgeTables.get_ok`); failures are retried;
- scorecard tables are never touched.

The readers below (:func:`read_annotations`, :func:`read_call_costs`, …) take a read-only
:class:`~evalkit.db.connect.Database` and are what the audit and the report use.

A *stale* annotation judged a transcript that is gone: its run was re-scored since (same run id,
new transcript), so its ``bundle_hash`` is no longer the run's ``scorecards.bundle_hash``. The
readers of annotations leave stale ones out, so that no pairing, rater, drift check or report
figure pairs an old answer with a new score; :func:`read_stale_annotations` names them. (The next
``evalkit judge`` asks again: the bundle is part of the cache key.) Calls and their cost
(:func:`read_call_costs`) stay: they were made and paid for.
"""

from __future__ import annotations

import json
import math
import operator
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import repeat
from typing import Any, NamedTuple

from evalkit.db.cells import MAX_EXACT, loads, real_range
from evalkit.db.connect import Database, DbError, describe, open_readonly, open_write, paused_gc
from evalkit.db.names import resolve_judge
from evalkit.db.schema import TABLES

CALL_COLUMNS = TABLES["judge_calls"].column_names
ANNOTATION_COLUMNS = TABLES["annotations"].column_names
# What :meth:`JudgeTables.stats` counts per judge model, rubric and status (then the cost), in order.
CACHE_COUNTS = ("calls", "batch_calls", "prompt_tokens", "cached_tokens", "completion_tokens")


def stale(alias: str) -> str:
    """SQL, true for a stale annotation (its run's current scorecard has another bundle); ``alias``
    qualifies the annotation's columns (``a.`` or ``annotations.``: unqualified, they would name the
    scorecard's). An annotation without a scorecard, or with either hash unknown, is not stale
    (``!=`` with NULL is not true)."""
    return f"EXISTS (SELECT 1 FROM scorecards s WHERE s.run_id = {alias}run_id AND s.bundle_hash != {alias}bundle_hash)"


def now_utc() -> str:
    """The time a row is written, UTC to the millisecond (``...T12:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _upsert(table: str, columns: tuple[str, ...], key: str, where: str = "") -> str:
    cols = ", ".join(columns)
    marks = ", ".join("?" for _ in columns)
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != key)
    return f"INSERT INTO {table} ({cols}) VALUES ({marks}) ON CONFLICT({key}) DO UPDATE SET {updates}" + (
        f" WHERE {where}" if where else ""
    )


def failed_call_key(call: dict) -> str:
    """The key a failed call is kept under: its cache key and when it started. Each failure is a
    row of its own, never replaced by the call that asks again (what it cost stays counted), and
    never served from the cache (only an ``ok`` row of the cache key is)."""
    return f"{call['cache_key']}~{call.get('started_at') or ''}~{call.get('attempts') or 0}"


def _write_call(conn, call: dict) -> None:
    """Store one finished call: a success upserts the cache row of its key (a refresh replaces it);
    a failure is a row of its own (:func:`failed_call_key`)."""
    row = call if call.get("status") == "ok" else dict(call, cache_key=failed_call_key(call))
    conn.execute(_upsert("judge_calls", CALL_COLUMNS, "cache_key"), [row.get(c) for c in CALL_COLUMNS])


def _keeps_stored(existing: tuple | None, row: dict) -> bool:
    """``existing`` (the stored annotation's status and cache key, or None) stays rather than ``row``:
    a success is never lost to a failure, and the same answer is already there."""
    return existing is not None and existing[0] == "ok" and (row["status"] != "ok" or existing[1] == row["cache_key"])


def _stored(conn, table: str, columns: tuple[str, ...], ann_id: str) -> dict:
    """The stored annotation row ``ann_id`` of ``table``, as a dict of ``columns``."""
    return dict(zip(columns, conn.execute(f"SELECT * FROM {table} WHERE annotation_id = ?", (ann_id,)).fetchone()))


class JudgeTables:
    """The judge tables of one database file, open for writing (or read-only for statistics)."""

    # where the annotations go, and the order iter_annotations reads them in (ProbeTables: its own)
    annotation_table = "annotations"
    annotation_columns = ANNOTATION_COLUMNS
    annotation_order = "run_id, judge_model, rubric_id, blind, replicate, annotation_id"

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False):
        self.path = str(path)
        self.database = open_readonly(self.path) if readonly else open_write(self.path, synchronous="NORMAL")

    @property
    def conn(self):
        return self.database.conn

    def close(self) -> None:
        self.database.close()

    # -- reads ------------------------------------------------------------------------------
    def get_ok(self, key: str) -> dict | None:
        row = self.database.one("SELECT * FROM judge_calls WHERE cache_key = ? AND status = 'ok'", (key,))
        return {c: row[c] for c in CALL_COLUMNS} if row else None

    def get_annotation(self, ann_id: str) -> dict | None:
        row = self.database.one(f"SELECT * FROM {self.annotation_table} WHERE annotation_id = ?", (ann_id,))
        return {c: row[c] for c in self.annotation_columns} if row else None

    def judged_runs(self, model: str, rubric_id: str, rubric_version: int, blind: bool) -> list[str]:
        """Runs with an ok primary (replicate 0) annotation of their current bundle, sorted."""
        return [
            r[0]
            for r in self.database.rows(
                "SELECT DISTINCT run_id FROM annotations WHERE judge_model = ? AND rubric_id = ? "
                "AND rubric_version = ? AND blind = ? AND replicate = 0 AND status = 'ok' "
                f"AND NOT {stale('annotations.')} "
                "ORDER BY run_id",
                (model, rubric_id, rubric_version, int(bool(blind))),
            )
        ]

    def iter_annotations(self) -> Iterator[dict]:
        for row in self.database.rows(f"SELECT * FROM {self.annotation_table} ORDER BY {self.annotation_order}"):
            yield {c: row[c] for c in self.annotation_columns}

    # -- the one write path -----------------------------------------------------------------
    def record(
        self,
        call: dict,
        ann: dict,
        values: dict | None,
        confidence: float | None,
        replicate_tag: str,
        write_call: bool = True,
    ) -> dict:
        """Store one finished call and its annotation atomically; returns the annotation row.

        `call` holds judge_calls columns; `ann` holds annotations columns except the replicate
        number, which is assigned here (0 for the primary answer, else reused for the same
        replicate tag or the next free number) inside the same transaction.
        """
        if call.get("status") != "ok" and ann.get("cache_key") == call.get("cache_key"):
            ann = dict(ann, cache_key=failed_call_key(call))  # the failed call's own row
        with self.database.transaction() as conn:
            if write_call:
                _write_call(conn, call)
            return self._write_annotation(conn, ann, values, confidence, replicate_tag)

    def _write_annotation(self, conn, ann: dict, values: dict | None, confidence: float | None, tag: str) -> dict:
        """The annotation half of :meth:`record`, inside its transaction (a subclass redirects it)."""
        existing = conn.execute(
            "SELECT replicate, status, cache_key FROM annotations WHERE annotation_id = ?", (ann["annotation_id"],)
        ).fetchone()
        if tag == "0":
            replicate = 0
        elif existing is not None:
            replicate = existing[0]
        else:
            replicate = conn.execute(
                "SELECT COALESCE(MAX(replicate), 0) + 1 FROM annotations WHERE run_id = ? AND "
                "judge_model = ? AND rubric_id = ? AND rubric_version = ? AND blind = ?",
                (ann["run_id"], ann["judge_model"], ann["rubric_id"], ann["rubric_version"], ann["blind"]),
            ).fetchone()[0]
        row = dict(ann, replicate=replicate)
        if not _keeps_stored(None if existing is None else (existing[1], existing[2]), row):
            conn.execute(
                _upsert("annotations", ANNOTATION_COLUMNS, "annotation_id"),
                [row.get(c) for c in ANNOTATION_COLUMNS],
            )
            conn.execute("DELETE FROM annotation_values WHERE annotation_id = ?", (row["annotation_id"],))
            if row["status"] == "ok" and values:
                for dim, value in values.items():
                    if dim in ("confidence", "rationale"):
                        continue
                    conn.execute(
                        "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, "
                        "dimension, value, confidence, blind, replicate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            row["annotation_id"],
                            row["run_id"],
                            row["judge_model"],
                            row["rubric_id"],
                            dim,
                            json.dumps(value),
                            confidence if dim == "outcome" else None,
                            row["blind"],
                            replicate,
                        ),
                    )
        else:
            row = _stored(conn, "annotations", ANNOTATION_COLUMNS, ann["annotation_id"])
        return row

    def record_call(self, call: dict) -> None:
        """Store a call that produced no annotation (a fatal error); never replaces a success."""
        with self.database.transaction() as conn:
            _write_call(conn, call)

    # -- the output mode that worked, per (judge model, api base) ------------------------------
    def remembered_mode(self, model: str, api_base: str | None) -> str | None:
        row = self.database.one(
            "SELECT output_mode FROM judge_output_modes WHERE judge_model = ? AND api_base = ?", (model, api_base or "")
        )
        return row[0] if row else None

    def remember_mode(self, model: str, api_base: str | None, mode: str) -> None:
        now = now_utc()
        with self.database.transaction() as conn:
            conn.execute(
                "INSERT INTO judge_output_modes (judge_model, api_base, output_mode, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(judge_model, api_base) DO UPDATE SET output_mode = excluded.output_mode, "
                "updated_at = excluded.updated_at",
                (model, api_base or "", mode, now),
            )

    def output_modes(self) -> list[dict]:
        keys = ("judge_model", "api_base", "output_mode", "updated_at")
        return [
            dict(zip(keys, tuple(r)))
            for r in self.database.rows(
                "SELECT judge_model, api_base, output_mode, updated_at FROM judge_output_modes "
                "ORDER BY judge_model, api_base"
            )
        ]

    # -- cache maintenance ------------------------------------------------------------------
    def stats(self) -> list[dict]:
        """Cached calls per judge model, rubric and status: how many (of which answered by a provider
        batch), prompt tokens (of which read from the provider's prompt cache), completion tokens,
        and cost (as billed: cached input and batches at their own prices)."""
        keys = ("judge_model", "rubric_id", "rubric_version", "status", *CACHE_COUNTS, "cost_usd")
        rows = self.database.rows(
            "SELECT judge_model, rubric_id, rubric_version, status, COUNT(*), COUNT(batch_id), "
            "COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(cached_tokens), 0), "
            "COALESCE(SUM(completion_tokens), 0), SUM(cost_usd) FROM judge_calls "
            "GROUP BY judge_model, rubric_id, rubric_version, status "
            "ORDER BY judge_model, rubric_id, rubric_version, status"
        )
        return [dict(zip(keys, tuple(r))) for r in rows]

    def judge_models(self) -> list[str]:
        """The judges this file knows: every model in the cache or the annotations, sorted."""
        return judge_models(self.database)

    def clear(self, model: str | None = None, rubric: str | None = None) -> int:
        """Delete cached calls (annotations stay: they are results, not cache). ``model`` is
        resolved like every judge name (:func:`evalkit.db.names.resolve_judge`): an unknown or
        ambiguous name raises ``JudgeNotStored``."""
        where, args = judge_filter(self.database, model or None, rubric or None)
        sql = "DELETE FROM judge_calls" + where_sql(where)
        with self.database.transaction() as conn:
            return conn.execute(sql, args).rowcount


# ---------------------------------------------------------------------------------------------
# readers


class StoredCards:
    """The ScoreCards of the database file ``path`` in run_id order with their judge bundles, as
    :func:`evalkit.db.scores.read_scorecards` reads them, a page of ``page`` runs at a time, each
    page one short read: a judge run over 10^5 runs holds neither every card nor a read
    transaction (which would keep the judge's own writes from being checkpointed out of the WAL).
    Iterable more than once (one pass per judge); a stored card that is not a ScoreCard raises
    DbError."""

    sorted_by_run_id = True  # the judge streams it as it comes, judge after judge

    def __init__(self, path: str | os.PathLike[str], page: int = 256):
        self.path = str(path)
        self.page = page

    def __iter__(self) -> Iterator[Any]:
        from evalkit.db.scores import _card

        database = open_readonly(self.path)
        try:
            after = None
            while True:
                rows = list(
                    database.rows(
                        "SELECT s.run_id, s.card, b.bundle FROM scorecards s "
                        "JOIN bundles b ON b.bundle_hash = s.bundle_hash "
                        + ("" if after is None else "WHERE s.run_id > ? ")
                        + "ORDER BY s.run_id LIMIT ?",
                        (self.page,) if after is None else (after, self.page),
                    )
                )
                for row in rows:
                    card = _card(row["run_id"], row["card"], row["bundle"])
                    if isinstance(card, str):
                        raise DbError(
                            database.path, f"scorecards row {row['run_id']!r}: stored card is not a ScoreCard ({card})"
                        )
                    yield card
                if len(rows) < self.page:
                    return
                after = rows[-1]["run_id"]
        finally:
            database.close()

    def judgeable(self, statuses: tuple[str, ...]) -> int:
        """How many stored runs have one of ``statuses`` and a judge bundle (the progress bar's total)."""
        database = open_readonly(self.path)
        try:
            marks = ", ".join("?" for _ in statuses)
            row = database.one(
                "SELECT COUNT(*) FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash "
                f"WHERE s.status IN ({marks}) AND s.bundle_hash != '' AND b.bundle NOT IN ('', '{{}}')",
                statuses,
            )
            return int(row[0]) if row else 0
        finally:
            database.close()


def judge_models(db: Database) -> list[str]:
    return [
        r[0]
        for r in db.rows(
            "SELECT judge_model FROM judge_calls WHERE judge_model IS NOT NULL UNION "
            "SELECT judge_model FROM annotations WHERE judge_model IS NOT NULL ORDER BY 1"
        )
    ]


def label_value(raw: Any) -> Any:
    """A stored value (JSON text) as a label: decoded, a non-JSON string taken literally,
    integral floats as integers (3.0 == 3, as the importer normalises), a number beyond a float's
    range (``1e400``) as its text, like ``NaN`` (no scale holds it, and no statistic may read it as
    infinity), and a structured value (object/array) as its canonical JSON text so that it is still
    a hashable label."""
    v = raw
    if isinstance(raw, str):
        try:
            v = loads(raw)
        except ValueError:
            v = raw
    if isinstance(v, float):
        if not math.isfinite(v):
            return raw if isinstance(raw, str) else repr(v)
        if v.is_integer():
            return int(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return v


class JudgeValue(NamedTuple):
    """One dimension of one ok annotation (a tuple: an audit at 10^5 runs holds over 10^6 of them;
    the strings of one annotation are shared by its values)."""

    annotation_id: str
    run_id: str
    judge_model: str
    rubric_id: str
    dimension: str
    value: Any
    confidence: float | None
    blind: bool
    replicate: int
    rationale: str
    created_at: str


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x:
        return None  # not a number (or NaN): no forecast
    return float(x) if isinstance(x, float) else x


def _tuples(db: Database, sql: str, args: Any = ()) -> Iterator[tuple]:
    """Rows of a query as plain tuples (cheaper than ``sqlite3.Row`` over millions of rows)."""
    try:
        yield from db.conn.execute(sql, args)
    except sqlite3.Error as exc:
        raise DbError(db.path, describe(exc)) from None


def read_annotations(
    db: Database, judge: str | None = None, rubric: str | None = None, runs: list[str] | None = None
) -> Iterator[JudgeValue]:
    """Values of ``ok`` annotations that are not stale, ordered so that later answers come last
    (created_at, id, dimension): :func:`read_judge_columns`' values one at a time."""
    yield from read_judge_columns(db, judge, rubric, runs)


READ_CHUNK = 10_000  # annotation_values rows decoded at a time (their tuples are let go chunk by chunk)


def read_bundle_hashes(db: Database, runs: list[str] | None = None) -> dict[str, str]:
    """run_id → bundle_hash of every scorecard that has one (of ``runs`` alone, when given), in one
    scan of the scorecards."""
    return dict(
        _tuples(
            db,
            "SELECT run_id, bundle_hash FROM scorecards WHERE bundle_hash IS NOT NULL"
            + ("" if runs is None else " AND run_id IN (SELECT value FROM json_each(?))"),
            () if runs is None else (json.dumps(list(runs)),),
        )
    )


def read_judge_columns(
    db: Database,
    judge: str | None = None,
    rubric: str | None = None,
    runs: list[str] | None = None,
    bundles: dict[str, str] | None = None,
    plain: bool = False,
) -> JudgeColumns:
    """:func:`read_annotations`' values as :class:`JudgeColumns`. ``judge`` is resolved by
    :func:`~evalkit.db.names.resolve_judge` (full model string or the part after the provider
    prefix); an unknown name raises ``JudgeNotStored``. ``runs``, when given, keeps those runs'
    annotations only (read through the indexes). ``bundles``: :func:`read_bundle_hashes` (of the
    same ``runs``), when the caller has read them. ``plain``: the file's ``annotations`` table reads
    as its view does (:func:`evalkit.db.cells.plain_tables`), and is read itself.

    A value's own run, judge, rubric, blind and replicate columns win over its annotation's; an
    empty blind or replicate column reads its annotation's. The annotation row backs up what a
    value lacks: its rationale column (else the annotation JSON's), and an outcome's confidence
    (without a number in the value's column, the JSON's ``confidence``)."""
    import numpy as np  # the audit's read: never on the score path

    where, args = judge_filter(db, judge, rubric, ["(a.status IS NULL OR a.status = 'ok')"], column="a.")
    if runs is not None:
        where.append("a.run_id IN (SELECT value FROM json_each(?))")
        args.append(json.dumps(list(runs)))
    with paused_gc():
        # each run's current bundle, in one scan of the scorecards: an annotation of another bundle
        # is stale (what :func:`stale` says with a subquery per annotation)
        current = read_bundle_hashes(db, runs) if bundles is None else bundles
        # one row per annotation, the JSON with it where the rationale column is empty; a stale one
        # is counted for its run (read_stale_annotations' counts) and its values are left out
        heads = []
        stale_runs: dict[str, int] = {}
        texts: dict[str, str] = {}  # equal rationales and times held once (a batch shares both)
        for head in _tuples(
            db,
            "SELECT a.annotation_id, a.rationale, CASE WHEN a.rationale IS NULL THEN a.annotation END, "
            f"COALESCE(a.created_at, ''), a.blind, a.replicate, a.run_id, a.bundle_hash "
            f"FROM {'main.' if plain else ''}annotations a WHERE {' AND '.join(where)}",
            args,
        ):
            if head[7] is not None and current.get(head[6], head[7]) != head[7]:
                stale_runs[head[6]] = stale_runs.get(head[6], 0) + 1
            else:  # its run and bundle let go (10^5 hashes held through the read)
                rationale, created = head[1], head[3]
                if rationale is not None:
                    rationale = texts.setdefault(rationale, rationale)
                heads.append((head[0], rationale, head[2], texts.setdefault(created, created), head[4], head[5]))
        del current
        heads.sort(key=operator.itemgetter(3, 0))  # by time, then id: both text (a key; a time or '')
        rank = dict(zip(map(operator.itemgetter(0), heads), range(len(heads))))
        # the file's own table is read where it has every column (a third less SQLite work than its
        # view's CASE per cell) and its cells are cleaned here as the view cleans them; a key or a
        # value that is not text (rare: the view leaves the row out or renders the number) has the
        # chunks read again through the view
        own_table = runs is None and set(_VALUE_COLUMNS) <= {
            r[1] for r in db.conn.execute('PRAGMA main.table_info("annotation_values")')
        }
        while True:
            clean = own_table  # no odd cell seen (evalkit.db.cells.odd_cells need not scan the table)
            codes = [_Codes() for _ in range(5)]  # run, judge, rubric, dimension, stored value text
            parts: list[list[Any]] = [[] for _ in range(9)]
            sql = f"SELECT {', '.join(_VALUE_COLUMNS)} FROM {'main.' if own_table else ''}annotation_values" + (
                "" if runs is None else " WHERE annotation_id IN (SELECT value FROM json_each(?))"
            )
            for rows in _chunks(db, sql, () if runs is None else (json.dumps(list(rank)),)):
                n = len(rows)
                ann, *named, conf, blind, replicate = [list(map(get, rows)) for get in _COLUMNS]  # not zip(*rows)
                del rows
                clean = clean and _TEXT.issuperset(map(type, ann))
                parts[0].append(np.fromiter(map(rank.get, ann, repeat(-1)), np.int32, n))
                for k, column in enumerate(named):
                    parts[1 + k].append(_codes(column, codes[k], np))
                if own_table:
                    cells = [_real_cells(conf, np, "confidence"), _count_cells(blind, np), _count_cells(replicate, np)]
                    clean = clean and all(ok for _, ok in cells)
                    conf, blind, replicate = (c for c, _ in cells)
                parts[6].append(np.array(conf, dtype=float))  # NULL reads as NaN
                # -1 where the value has no blind or replicate of its own (its annotation's is taken)
                own = np.array(blind, dtype=float)
                parts[7].append(np.where(np.isnan(own), -1, own != 0).astype(np.int8))
                own = np.array(replicate, dtype=float)
                parts[8].append(np.where(np.isnan(own), -1, own).astype(np.int64))
                del ann, named, conf, blind, replicate
            if own_table and not (
                all(type(k) is str for index in codes[:4] for k in index)
                and all(k is None or type(k) is str for k in codes[4])
            ):
                own_table = False
                continue
            break
        dtypes = (np.int32,) * 6 + (float, np.int8, np.int64)
        ann_at, run, judge_at, rubric_at, dim, raw, conf, blind, replicate = (
            np.concatenate(parts[k]) if parts[k] else np.zeros(0, dtype=dtypes[k]) for k in range(9)
        )
        del parts
        keep = np.flatnonzero(ann_at >= 0)
        dims = list(codes[3])
        # answer order: annotation rank, then dimension (stable: equal keys keep the stored order)
        dim_place = np.argsort(np.array(dims, dtype=object)).argsort() if dims else np.zeros(0, np.int64)
        # one stable sort of one key: the order of np.lexsort((dimension place, rank))
        keep = keep[np.argsort(ann_at[keep].astype(np.int64) * max(len(dims), 1) + dim_place[dim[keep]], kind="stable")]
        ann_at, run, judge_at, rubric_at, dim, raw, conf, blind, replicate = (
            c[keep] for c in (ann_at, run, judge_at, rubric_at, dim, raw, conf, blind, replicate)
        )
        del keep
        # the ranks are sorted now: each distinct one starts a run of equal ones (np.unique's arrays)
        starts = np.ones(len(ann_at), dtype=bool)
        np.not_equal(ann_at[1:], ann_at[:-1], out=starts[1:])
        used = ann_at[starts]
        annotation = (np.cumsum(starts, dtype=np.int32) - 1).astype(np.int32)
        del starts
        head_blind = np.array([bool(heads[i][4]) for i in used.tolist()], dtype=bool)
        head_replicate = np.array([heads[i][5] or 0 for i in used.tolist()], dtype=np.int64)
        blind = np.where(blind >= 0, blind == 1, head_blind[annotation])
        replicate = np.where(replicate >= 0, replicate, head_replicate[annotation])
        docs: dict[int, Any] = {}

        def doc_of(i: int) -> Any:
            if i not in docs:
                head = heads[i]
                text = head[2] if head[1] is None else _annotation_json(db, head[0])
                try:
                    docs[i] = loads(text) if isinstance(text, str) else text
                except ValueError:
                    docs[i] = text
            return docs[i]

        rationales = []
        for i in used.tolist():
            text = heads[i][1]
            if text is None:
                doc = doc_of(i)
                text = doc.get("rationale") if isinstance(doc, dict) and isinstance(doc.get("rationale"), str) else ""
            rationales.append(texts.setdefault(text, text) if text else "")
        # the rubric's single `confidence` belongs to `outcome` (procedure_v1): without a number in
        # its column, the annotation JSON's
        if "outcome" in codes[3]:
            for k in np.flatnonzero(np.isnan(conf) & (dim == codes[3]["outcome"])).tolist():
                doc = doc_of(int(used[annotation[k]]))
                c = _number(doc.get("confidence")) if isinstance(doc, dict) else None
                if c is not None:
                    conf[k] = float(c)
        labels: dict[tuple[type, Any], int] = {}
        label_of = np.array(
            [labels.setdefault((type(v), v), len(labels)) for v in map(label_value, codes[4])], dtype=np.int32
        )
        return JudgeColumns(
            annotation=annotation,
            run=run,
            judge=judge_at,
            rubric=rubric_at,
            dimension=dim,
            value=label_of[raw] if len(raw) else np.zeros(0, np.int32),
            confidence=conf,
            blind=blind.astype(bool),
            replicate=replicate,
            annotation_ids=[heads[i][0] for i in used.tolist()],
            rationales=rationales,
            created=[heads[i][3] for i in used.tolist()],
            runs=list(codes[0]),
            judges=list(codes[1]),
            rubrics=list(codes[2]),
            dimensions=dims,
            labels=[v for _, v in labels],
            stale={str(r): stale_runs[r] for r in sorted(stale_runs)},
            values_clean=clean,
        )


_VALUE_COLUMNS = (
    "annotation_id",
    "run_id",
    "judge_model",
    "rubric_id",
    "dimension",
    "value",
    "confidence",
    "blind",
    "replicate",
)
_COLUMNS = [operator.itemgetter(k) for k in range(9)]  # each column of a row of annotation_values
_NUMBERS = frozenset({int, float, type(None)})
_TEXT = frozenset({str})


def _real_cells(cells: list[Any], np: Any, column: str) -> tuple[Any, bool]:
    """A REAL column's stored cells as the clean view reads them (:mod:`evalkit.db.cells`): a number
    in the column's range (:func:`~evalkit.db.cells.real_range`), else NaN (NULL); and whether each
    cell was NULL or such a number (none odd)."""
    low, high = (float(x) for x in real_range(column))
    if _NUMBERS.issuperset(map(type, cells)):
        out = np.array(cells, dtype=float)
        with np.errstate(invalid="ignore"):
            odd = (out < low) | (out > high)  # NaN (NULL) compares false: not odd
        if not odd.any():
            return out, True
        out[odd] = math.nan
        return out, False
    kept = [c if type(c) in (int, float) and low <= c <= high else None for c in cells]
    return np.array(kept, dtype=float), False


def _count_cells(cells: list[Any], np: Any) -> tuple[Any, bool]:
    """An INTEGER column's stored cells as the clean view reads them: an integer from 0 to 2**53,
    else NaN (NULL); and whether none was odd (False may also say that one was 2**53 exactly)."""
    if {int, type(None)}.issuperset(map(type, cells)):
        out = np.array(cells, dtype=float)
        if not ((out < 0) | (out >= MAX_EXACT)).any():  # at 2**53 and beyond a float is not exact
            return out, True
    return np.array([c if type(c) is int and 0 <= c <= MAX_EXACT else None for c in cells], dtype=float), False


class _Codes(dict):
    """Item → code, the distinct items in order of first sight: a new item gets the next code."""

    def __missing__(self, item: Any) -> int:
        code = self[item] = len(self)
        return code


def _codes(column: list[Any], index: _Codes, np: Any) -> Any:
    """Each item's code in ``index`` (new ones are added)."""
    return np.fromiter(map(index.__getitem__, column), np.int32, len(column))


def _chunks(db: Database, sql: str, args: Any = ()) -> Iterator[list[tuple]]:
    """A query's rows, :data:`READ_CHUNK` at a time."""
    try:
        cursor = db.conn.execute(sql, args)
        while rows := cursor.fetchmany(READ_CHUNK):
            yield rows
            del rows  # let go before the next chunk is fetched
    except sqlite3.Error as exc:
        raise DbError(db.path, describe(exc)) from None


def _annotation_json(db: Database, annotation_id: str) -> Any:
    """The ``annotation`` column of one annotation (its JSON text, as the view reads it)."""
    for row in _tuples(db, "SELECT annotation FROM annotations WHERE annotation_id = ?", (annotation_id,)):
        return row[0]
    return None


class JudgeColumns:
    """Judge values (:class:`JudgeValue`) as columns, in answer order: an audit at 10^5 runs holds
    10^6 values that share few runs, judges, rubrics, dimensions and labels, so each of those is a
    code into the list of the distinct ones (``run`` into ``runs``, ``value`` into ``labels``, ...),
    and an annotation's id, rationale and time are held once (``annotation`` into
    ``annotation_ids``, ``rationales``, ``created``). ``confidence`` is NaN where there is none.
    ``stale`` is :func:`read_stale_annotations` under the read's filters (run_id → its stale ``ok``
    annotations, in run-id order): the read tells them apart from the values it keeps.
    ``values_clean``: the read scanned the file's whole ``annotation_values`` table and met no odd
    cell there (:func:`evalkit.db.cells.odd_cells` has nothing to say of it). Iterating
    gives the values as :class:`JudgeValue` tuples."""

    __slots__ = (
        "annotation",
        "run",
        "judge",
        "rubric",
        "dimension",
        "value",
        "confidence",
        "blind",
        "replicate",
        "annotation_ids",
        "rationales",
        "created",
        "runs",
        "judges",
        "rubrics",
        "dimensions",
        "labels",
        "stale",
        "values_clean",
    )

    def __init__(self, **columns: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, columns[name])

    @classmethod
    def of(cls, values: Iterable[JudgeValue]) -> JudgeColumns:
        """The columns of ``values`` (in their order); their labels must be hashable."""
        import numpy as np  # the audit's read: never on the score path

        values = list(values)
        index: list[dict[Any, int]] = [{} for _ in range(6)]
        annotation, run, judge, rubric, dimension, value = (
            np.array([ix.setdefault(k, len(ix)) for k in keys], dtype=np.int32)
            for ix, keys in zip(
                index,
                (
                    ((v.annotation_id, v.rationale, v.created_at) for v in values),
                    (v.run_id for v in values),
                    (v.judge_model for v in values),
                    (v.rubric_id for v in values),
                    (v.dimension for v in values),
                    ((type(v.value), v.value) for v in values),
                ),
            )
        )
        heads = list(index[0])
        return cls(
            annotation=annotation,
            run=run,
            judge=judge,
            rubric=rubric,
            dimension=dimension,
            value=value,
            confidence=np.array([math.nan if v.confidence is None else v.confidence for v in values], dtype=float),
            blind=np.array([bool(v.blind) for v in values], dtype=bool),
            replicate=np.array([v.replicate for v in values], dtype=np.int64),
            annotation_ids=[h[0] for h in heads],
            rationales=[h[1] for h in heads],
            created=[h[2] for h in heads],
            runs=list(index[1]),
            judges=list(index[2]),
            rubrics=list(index[3]),
            dimensions=list(index[4]),
            labels=[v for _, v in index[5]],
            stale={},
            values_clean=False,
        )

    def __len__(self) -> int:
        return len(self.run)

    def __iter__(self) -> Iterator[JudgeValue]:
        import numpy as np  # the audit's read: never on the score path

        return self.at(np.arange(len(self)))

    def at(self, rows: Any) -> Iterator[JudgeValue]:
        """The values at ``rows`` (an array of positions in answer order), one at a time."""
        ids, rationales, created = self.annotation_ids, self.rationales, self.created
        names = (self.runs, self.judges, self.rubrics, self.dimensions, self.labels)
        new = tuple.__new__
        for start in range(0, len(rows), READ_CHUNK):  # a chunk's codes as Python objects at a time
            part = rows[start : start + READ_CHUNK]
            coded = [
                map(held.__getitem__, column[part].tolist())
                for held, column in zip(names, (self.run, self.judge, self.rubric, self.dimension, self.value))
            ]
            for a, run, judge, rubric, dim, label, c, blind, replicate in zip(
                self.annotation[part].tolist(),
                *coded,
                self.confidence[part].tolist(),
                self.blind[part].tolist(),
                self.replicate[part].tolist(),
            ):
                yield new(
                    JudgeValue,
                    (
                        ids[a],
                        run,
                        judge,
                        rubric,
                        dim,
                        label,
                        None if c != c else c,
                        blind,
                        replicate,
                        rationales[a],
                        created[a],
                    ),
                )

    def distinct_annotations(self, rows: Any = None) -> int:
        """How many distinct annotation ids the values at ``rows`` (a mask or positions; all when None) have."""
        import numpy as np  # the audit's read: never on the score path

        codes = self.annotation if rows is None else self.annotation[rows]
        return len({self.annotation_ids[a] for a in np.unique(codes).tolist()})


@dataclass
class CallCosts:
    """One judge model's calls in call order, as columns (200,000 calls at 10^5 runs)."""

    judge_model: str
    cost_usd: list[float | None] = field(default_factory=list)
    latency_ms: list[float | None] = field(default_factory=list)
    prompt_tokens: list[int | None] = field(default_factory=list)
    # of prompt_tokens, read from the provider's prompt cache
    cached_tokens: list[int | None] = field(default_factory=list)
    batch: list[bool] = field(default_factory=list)  # answered by a provider batch (billed at the batch rate)


def read_call_costs(
    db: Database, judge: str | None = None, rubric: str | None = None, plain: Iterable[str] = ()
) -> tuple[str, list[CallCosts]]:
    """Per-call cost/latency: from the judge cache (every call, failed ones too) when it has
    rows, else from the annotations. Returns (source table, one :class:`CallCosts` per judge model
    in model order). Call order is (started or created time, key): the columns are text, so
    SQLite's binary order is Python's string order. The tables named in ``plain`` read as their
    views do (:func:`evalkit.db.cells.plain_tables`) and are read themselves."""
    where, args = judge_filter(db, judge, rubric)
    plain = set(plain)
    for table, ts, key in (("judge_calls", "started_at", "cache_key"), ("annotations", "created_at", "annotation_id")):
        sql = (
            f"SELECT judge_model, cost_usd, latency_ms, prompt_tokens, cached_tokens, batch_id IS NOT NULL "
            f"FROM {'main.' if table in plain else ''}{table}{where_sql(where)} "
            f"ORDER BY judge_model, COALESCE({ts}, ''), {key}"
        )
        models: list[CallCosts] = []
        calls = CallCosts("")
        for model, cost, latency, prompt, cached, batch in _tuples(db, sql, args):
            if not models or model != calls.judge_model:
                calls = CallCosts(model)
                models.append(calls)
            calls.cost_usd.append(cost)
            calls.latency_ms.append(latency)
            calls.prompt_tokens.append(prompt)
            calls.cached_tokens.append(cached)
            calls.batch.append(batch == 1)
        if not models:
            continue  # an empty cache (e.g. after `evalkit cache clear`): fall back to annotations
        return table, models
    return "", []


def judge_filter(
    db: Database, judge: str | None = None, rubric: str | None = None, where: list[str] | None = None, column: str = ""
) -> tuple[list[str], list[Any]]:
    """SQL conditions and their arguments: ``where`` plus one judge (resolved by
    :func:`~evalkit.db.names.resolve_judge`: full model string or the part after the provider
    prefix; an unknown name raises ``JudgeNotStored``) and one rubric. ``column`` prefixes the
    column names (a table alias such as ``a.``)."""
    where, args = list(where or []), []
    if judge is not None:
        where.append(f"{column}judge_model = ?")
        args.append(resolve_judge(judge, judge_models(db), db.path))
    if rubric is not None:
        where.append(f"{column}rubric_id = ?")
        args.append(rubric)
    return where, args


def where_sql(conditions: list[str]) -> str:
    """`` WHERE a AND b`` (or nothing) for :func:`judge_filter`'s conditions."""
    return " WHERE " + " AND ".join(conditions) if conditions else ""


def read_annotation_rows(db: Database, judge: str | None = None) -> list[dict[str, Any]]:
    """Every annotation (ok or not) that is not stale, ordered by judge model, rubric, created_at,
    id; ``judge`` keeps one judge (resolved by :func:`~evalkit.db.names.resolve_judge`)."""
    where, args = judge_filter(db, judge, where=[f"NOT {stale('annotations.')}"])
    return [
        {c: row[c] for c in ANNOTATION_COLUMNS}
        for row in db.rows(
            f"SELECT * FROM annotations{where_sql(where)} ORDER BY judge_model, rubric_id, created_at, annotation_id",
            args,
        )
    ]


def stale_annotation_ids(db: Database) -> list[str]:
    """The ids of every stale annotation (:func:`stale`), of any judge and status."""
    return [row[0] for row in db.tuples(f"SELECT a.annotation_id FROM annotations a WHERE {stale('a.')}")]


def primary_values_filter(
    db: Database, judge: str | None = None, stale_ids: list[str] | None = None
) -> tuple[list[str], list]:
    """The WHERE terms and arguments that pick the primary values from ``annotation_values``: the
    replicate-0 value of every annotation that is not stale, of ``judge`` when given.
    ``stale_ids``: :func:`stale_annotation_ids`, when the caller has read them."""
    if stale_ids is None:
        where, args = judge_filter(
            db,
            judge,
            where=[
                "replicate = 0",
                f"annotation_id NOT IN (SELECT a.annotation_id FROM annotations a WHERE {stale('a.')})",
            ],
        )
        return where, args
    where, args = judge_filter(
        db, judge, where=["replicate = 0", "annotation_id NOT IN (SELECT value FROM json_each(?))"]
    )
    return where, [json.dumps(stale_ids), *args]


def read_primary_values(db: Database, judge: str | None = None) -> Iterator[tuple[str, str, str, Any]]:
    """(judge_model, rubric_id, dimension, decoded value) of every primary (replicate 0) value of
    an annotation that is not stale."""
    from evalkit.db.scores import decode_json

    where, args = primary_values_filter(db, judge)
    for row in db.rows(
        f"SELECT judge_model, rubric_id, dimension, value FROM annotation_values{where_sql(where)}", args
    ):
        yield row[0], row[1], row[2], decode_json(row[3])


def read_stale_annotations(db: Database, judge: str | None = None, rubric: str | None = None) -> dict[str, int]:
    """run_id → how many of its ``ok`` annotations are stale (judged a bundle the run no longer
    has), sorted by run id; ``judge``/``rubric`` filter as in :func:`read_annotations`."""
    where, args = judge_filter(db, judge, rubric, ["(a.status IS NULL OR a.status = 'ok')", stale("a.")], column="a.")
    return {
        str(r[0]): r[1]
        for r in db.rows(
            f"SELECT a.run_id, COUNT(*) FROM annotations a{where_sql(where)} GROUP BY a.run_id ORDER BY a.run_id", args
        )
    }
