"""What ``evalkit view`` reads and writes: one database, read-only except for the review tables.

:class:`ViewData` holds a read-only connection (:func:`evalkit.db.open_readonly`) for everything it
shows and, from the first review on, a :class:`~evalkit.db.reviews.ReviewTables` writer that may
write the review tables and nothing else. Every function returns plain dicts: the pages and the
JSON API show the same thing.

Paging stays fast at 10^5 runs because the Runs table is a query, never a page of everything: on
the first request, one pass over ``scorecards`` fills a narrow TEMP table ``view_runs`` (one row per
run: the columns the filters and sorts use, indexed) on the read-only connection (0.5 s at 10^5
runs). The audit's ranked disagreements (:func:`evalkit.agreement.judge_vs_mechanical.disagreements`,
the list ``evalkit audit`` prints) take longer (most of the judge's annotations are read): they are
computed in a background thread on a connection of its own, and put in place, counted into
``view_runs``, by the first request that needs them (it waits for them if they are not ready yet):
the blind Runs list and a run page never wait. A page is then one indexed ``SELECT ... ORDER BY
... LIMIT ... OFFSET`` and one ``count(*)`` (sqlite-utils' ``rows_where`` would do it, but it sees
no TEMP table). Text search reads the transcripts (``bundles``) of the rows it tries, stopping when
the page is full, so its total is not counted (``total`` is None).

The index follows the file as other processes write it: ``PRAGMA data_version`` says whether any
other connection committed (one cheap statement a request), and the ``run_changes`` table, kept by
triggers on ``scorecards`` and ``annotations`` (evalkit.db.schema), names the runs written since
the last ``seq`` seen. Only those runs' index rows and disagreements are computed again and put in
place (the ranked list kept sorted by :func:`~evalkit.agreement.judge_vs_mechanical.rank_key`), so
an update costs what changed. A file without ``run_changes`` (older, never written since) is
indexed again whole on a change; so is one where more than a quarter of the runs changed.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import random
import re
import threading
import unicodedata
from pathlib import Path
from typing import Any

from evalkit.db import open_readonly, read_cards, read_judge_columns
from evalkit.db.reviews import (
    CLAIM_MINUTES,
    CURRENT,
    DESIGNS,
    SAMPLE_DESIGNS,
    STALE,
    VERDICTS,
    ReviewTables,
    active_claims,
    read_reviews,
    read_samples,
    second_rating,
)
from evalkit.view import drilldown

PER_PAGE = 50
MAX_PER_PAGE = 500
TRANSCRIPT_PAGE = 1000  # transcript entries on one run page (a 10^5-call run is paged)
OTHER_RUNS = 20  # other runs of the scenario listed on a run page
FACET_LIMIT = 200  # distinct values offered in a filter's list
MAX_NUMBER = 10**9  # the largest page, per_page or transcript position a query may ask for
_DIGITS = re.compile(r"[0-9]{1,10}")
SORTS = {
    "run": "run_id",
    "scenario": "scenario_id",
    "model": "model",
    "status": "status",
    "scalar": "scalar",
    "disagreements": "disagreements",
}
FILTERS = ("model", "scenario", "status", "outcome", "unsafe", "disagrees", "reviewed", "q")
# what a blind list neither shows, filters nor sorts by: the mechanical verdicts and the judge's disagreement
HIDDEN_COLUMNS = ("outcome", "scalar", "unsafe", "extraneous", "coverage", "disagreements")
HIDDEN_FILTERS = ("outcome", "unsafe", "disagrees")
HIDDEN_SORTS = ("scalar", "disagreements")
HIDDEN_QUEUE_FILTERS = ("pairing", "dimension")  # each names the dimension the judge disagrees on
MAX_NOTE = 10_000
MAX_REVIEWER = 100
QUEUE_FILTERS = ("pairing", "dimension", "model", "scenario", "mine")
SCALAR_BINS = 10  # bars of the scalar histogram on the revealed Runs page
CHART_MODELS = 12  # models in the outcome chart
PASS_WORDS = {"pass": 1, "fail": 0, "yes": 1, "no": 0, "true": 1, "false": 0}

_INDEX_DDL = (
    "CREATE TEMP TABLE view_runs (run_id TEXT PRIMARY KEY, scenario_id TEXT, model TEXT, status TEXT, "
    "scalar REAL, outcome TEXT, unsafe INTEGER, extraneous INTEGER, coverage REAL, bundle_hash TEXT, "
    "disagreements INTEGER NOT NULL DEFAULT 0)",
    *(
        f"CREATE INDEX temp.view_runs_{c} ON view_runs ({c}, run_id)"
        for c in ("scenario_id", "model", "status", "scalar", "disagreements")
    ),
)
_INDEX_INSERT = (
    "INSERT INTO view_runs (run_id, scenario_id, model, status, scalar, outcome, unsafe, extraneous, coverage, "
    "bundle_hash) SELECT run_id, scenario_id, model, status, scalar, "
    "CASE all_passed WHEN 1 THEN 'pass' WHEN 0 THEN 'fail' END, "
    "CASE WHEN safety_dangerous IS NULL AND safety_anti_procedure IS NULL THEN NULL "
    "ELSE (COALESCE(safety_dangerous, 0) + COALESCE(safety_anti_procedure, 0)) > 0 END, "
    "extraneous, coverage, bundle_hash FROM scorecards"
)
_IN_LIST = "run_id IN (SELECT value FROM json_each(?))"  # a JSON array of run ids as one argument


class NotFound(LookupError):
    pass


class ReviewError(ValueError):
    """A review that cannot be saved; ``str()`` is one line naming the field."""


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a cell nested deeper than the decoder goes is no value
        return None


class ViewData:
    """The view's database: open it with :meth:`open` in the thread that serves requests."""

    def __init__(self, db_path: str | Path, *, config: str | Path | None = None, rubric: str | None = None):
        self.path = str(db_path)
        self.config_path = config
        self.rubric_name = rubric
        self.db = None
        self.writer: ReviewTables | None = None
        self.claim_minutes: float = CLAIM_MINUTES
        self._version: Any = None  # PRAGMA data_version when the index was last brought up to date
        self._seq: int | None = None  # the last run_changes seq indexed (None: index whole again)
        self._rows: list[dict[str, Any]] = []  # the disagreements, ranked as evalkit audit ranks them
        self._keys: list[tuple] = []  # each row's rank key, in the same order
        # run → its (key, row)s, ranked; None until the disagreements are put in place
        self._by_run: dict[str, list[tuple[tuple, dict[str, Any]]]] | None = None
        self._dseq: int | None = None  # the run_changes seq the background computation started from
        self._pending: dict[str, Any] | None = None  # the background computation: thread, result, error
        self._rubrics: dict[str, Any] = {}
        # reviewer (None: a request that named nobody) → the runs whose scores were shown to them
        self._revealed: dict[str | None, set[str]] = {}

    # -- connections ------------------------------------------------------------------------
    def open(self) -> ViewData:
        from evalkit.agreement.pairings_config import load_audit_config

        self.config = load_audit_config(self.config_path)
        self.pairings = self.config.pairings_for(None)
        self.db = open_readonly(self.path)
        self._version = self._seq = None
        return self

    @property
    def disagreement_rows(self) -> list[dict[str, Any]]:
        """The audit's ranked disagreements (waits for them when they are being computed)."""
        self.ensure_disagreements()
        return self._rows

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.db is not None:
            self.db.close()
            self.db = None

    def rows(self, sql: str, args: Any = ()) -> list[Any]:
        return list(self.db.rows(sql, args))

    def one(self, sql: str, args: Any = ()) -> Any:
        return self.db.one(sql, args)

    def _writable(self, fn) -> None:
        conn = self.db.conn
        conn.execute("PRAGMA query_only = 0")  # TEMP tables only: the file itself is opened mode=ro
        try:
            fn(conn)
        finally:
            conn.execute("PRAGMA query_only = 1")

    def refresh(self) -> None:
        """Bring the run index and the disagreements up to date with the file (see the module's
        docstring): nothing when no other connection committed, else the runs that changed."""
        version = self.db.conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._version:
            return
        self._version = version
        if not self._has("run_changes"):
            self._seq = None
            self._build()
            return
        if self._seq is None:
            # the seq is read before the rows: a run written meanwhile is indexed again next time
            self._seq = self._max_seq()
            self._build()
            return
        changed = self.rows("SELECT seq, run_id FROM main.run_changes WHERE seq > ? ORDER BY seq", (self._seq,))
        if not changed:
            return
        self._seq = changed[-1][0]
        runs = sorted({r[1] for r in changed})
        if len(runs) > max(1000, self.one("SELECT count(*) FROM view_runs")[0] // 4):
            self._build()
        else:
            self._update(runs)

    def _max_seq(self) -> int:
        return self.one("SELECT coalesce(max(seq), 0) FROM main.run_changes")[0]

    def _has(self, table: str) -> bool:
        return (
            self.db.conn.execute(
                "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is not None
        )

    def _build(self) -> None:
        """The whole run index, from the file as it is; the disagreement list computed again in the
        background."""

        def build(conn) -> None:
            conn.execute("DROP TABLE IF EXISTS temp.view_runs")
            conn.execute("BEGIN")
            for sql in (*_INDEX_DDL, _INDEX_INSERT):
                conn.execute(sql)
            conn.execute("COMMIT")
            conn.execute("ANALYZE temp")

        self._writable(build)
        self._by_run, self._rows, self._keys = None, [], []
        self._dseq = self._seq
        pending: dict[str, Any] = {}

        def compute() -> None:
            try:
                with open_readonly(self.path) as db:
                    pending["result"] = self._disagreements(None, db)
            except BaseException as exc:  # reported by _ensure, which computes them again in its thread
                pending["error"] = exc

        pending["thread"] = threading.Thread(target=compute, name="evalkit-view-disagreements", daemon=True)
        self._pending = pending
        pending["thread"].start()

    def ensure_disagreements(self) -> None:
        """Put the disagreement list in place (waiting for the background computation), count it
        into ``view_runs`` and bring the runs changed since it started up to date."""
        if self._by_run is not None:
            return
        pending, self._pending = self._pending, None
        result = None
        if pending is not None:
            pending["thread"].join()
            result = pending.get("result")
        if result is None:
            result = self._disagreements(None)
        self._by_run = result
        ranked = sorted((e for entries in result.values() for e in entries), key=lambda e: e[0])
        self._keys = [key for key, _ in ranked]
        self._rows = [row for _, row in ranked]

        def count(conn) -> None:
            conn.execute("BEGIN")
            conn.executemany(
                "UPDATE view_runs SET disagreements = ? WHERE run_id = ?",
                [(len(entries), run) for run, entries in result.items()],
            )
            conn.execute("COMMIT")

        self._writable(count)
        if self._dseq is not None and self._seq is not None and self._seq > self._dseq:
            since = sorted(
                {
                    r[0]
                    for r in self.rows(
                        "SELECT run_id FROM main.run_changes WHERE seq > ? AND seq <= ?", (self._dseq, self._seq)
                    )
                }
            )
            if since:
                self._update(since, index=False)

    def _update(self, runs: list[str], index: bool = True) -> None:
        """Index ``runs`` again (each scored, re-scored, judged or gone) and put their disagreements
        in their ranked places (when they are in place); the other runs are not read."""
        if self._by_run is None:
            if index:
                ids = json.dumps(runs)
                self._writable(
                    lambda conn: (
                        conn.execute("BEGIN"),
                        conn.execute(f"DELETE FROM temp.view_runs WHERE {_IN_LIST}", (ids,)),
                        conn.execute(f"{_INDEX_INSERT} WHERE {_IN_LIST}", (ids,)),
                        conn.execute("COMMIT"),
                    )
                )
            return  # _ensure brings these runs' disagreements up to date: they changed after _dseq
        fresh = self._disagreements(runs)
        for run in runs:
            for key, _ in self._by_run.pop(run, []):
                i = bisect.bisect_left(self._keys, key)
                del self._keys[i], self._rows[i]
            for key, row in fresh.get(run, []):
                i = bisect.bisect_left(self._keys, key)
                self._keys.insert(i, key)
                self._rows.insert(i, row)
        self._by_run.update(fresh)
        ids = json.dumps(runs)

        def update(conn) -> None:
            conn.execute("BEGIN")
            if index:
                conn.execute(f"DELETE FROM temp.view_runs WHERE {_IN_LIST}", (ids,))
                conn.execute(f"{_INDEX_INSERT} WHERE {_IN_LIST}", (ids,))
            else:
                conn.execute(f"UPDATE temp.view_runs SET disagreements = 0 WHERE {_IN_LIST}", (ids,))
            conn.executemany(
                "UPDATE view_runs SET disagreements = ? WHERE run_id = ?",
                [(len(entries), run) for run, entries in fresh.items()],
            )
            conn.execute("COMMIT")

        self._writable(update)

    def _disagreements(self, runs: list[str] | None, db=None) -> dict[str, list[tuple[tuple, dict[str, Any]]]]:
        """run → its rows of the audit's ranked disagreement list (no judge or rubric filter, no
        jury), each with its rank key; every run, or ``runs`` only; read through ``db`` (the view's
        connection by default)."""
        from evalkit.agreement import judge_vs_mechanical as paired

        db = db or self.db
        values = read_judge_columns(db, runs=runs)
        if not len(values):
            return {}
        sub = dataclasses.replace(self.config, pairings=self.pairings)
        cards = list(read_cards(db, judged_only=runs is None, runs=runs))
        order = {p.name: i for i, p in enumerate(self.pairings)}
        out: dict[str, list[tuple[tuple, dict[str, Any]]]] = {}
        for d in paired.disagreements(paired.build_pairs(cards, values, sub)):
            i = order[d["pairing"]]
            key = paired.rank_key(self.pairings[i], i, d["direction"], d["gap_share"], d["run_id"], d["judge_model"])
            out.setdefault(d["run_id"], []).append((key + (str(d["rubric"] or ""),), d))
        return out

    # -- what was shown to whom ---------------------------------------------------------------
    def mark_revealed(self, run_ids: Any, reviewer: str | None) -> None:
        """Record that the scores of ``run_ids`` were shown to ``reviewer`` (None: to a request that
        named nobody, which counts for every reviewer): their reviews saved afterwards through this
        server are not blind (:meth:`add_review`)."""
        self._revealed.setdefault(reviewer, set()).update(str(r) for r in run_ids)

    def revealed_to(self, run_id: str, reviewer: str | None) -> bool:
        """Whether the scores of ``run_id`` were shown to ``reviewer``, or to a request that named nobody."""
        return run_id in self._revealed.get(reviewer, ()) or run_id in self._revealed.get(None, ())

    # -- the Runs table -----------------------------------------------------------------------
    def facets(self) -> dict[str, list[str]]:
        out = {}
        for name, col in (("model", "model"), ("scenario", "scenario_id"), ("status", "status")):
            out[name] = [
                r[0]
                for r in self.rows(
                    f"SELECT DISTINCT {col} FROM view_runs WHERE {col} IS NOT NULL ORDER BY {col} LIMIT {FACET_LIMIT}"
                )
            ]
        return out

    def _runs_where(self, params: dict[str, str]) -> tuple[list[str], list[Any], str]:
        """The Runs table's WHERE terms and arguments for ``params``' filters, and the search text."""
        where, args = [], []
        for key, col in (("model", "model"), ("scenario", "scenario_id"), ("status", "status")):
            if params.get(key):
                where.append(f"{col} = ?")
                args.append(params[key])
        outcome = params.get("outcome") or ""
        if outcome:
            if outcome not in ("pass", "fail", "unknown"):
                raise ValueError("outcome must be pass, fail or unknown")
            where.append("outcome IS NULL" if outcome == "unknown" else "outcome = ?")
            args += [] if outcome == "unknown" else [outcome]
        for key, sql in (
            ("unsafe", "unsafe = 1"),
            ("disagrees", "disagreements > 0"),
            ("reviewed", "run_id IN (SELECT run_id FROM reviews)"),
        ):
            value = params.get(key) or ""
            if value not in ("", "yes", "no"):
                raise ValueError(f"{key} must be yes or no")
            if value:
                where.append(sql if value == "yes" else f"NOT ({sql})" if key != "unsafe" else "unsafe IS NOT 1")
        q = (params.get("q") or "").strip()
        if q:
            # The transcript part of the bundle only (every run of a scenario shares its ground
            # truth), tested only where the whole bundle matches: cutting it out costs a copy.
            # main.bundles, not the read-only connection's cleaning view: LIKE reads any cell.
            text = _like(json.dumps(q, ensure_ascii=False)[1:-1])
            where.append(
                "(run_id LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM main.bundles b WHERE "
                "b.bundle_hash = view_runs.bundle_hash AND b.bundle LIKE ? ESCAPE '\\' AND "
                "substr(b.bundle, instr(b.bundle, '\"transcript\":')) LIKE ? ESCAPE '\\'))"
                if self._has("bundles")
                else "run_id LIKE ? ESCAPE '\\'"
            )
            args += [_like(q), text, text] if self._has("bundles") else [_like(q)]
        return where, args, q

    def charts(self, params: dict[str, str]) -> dict[str, Any]:
        """What the revealed Runs page draws over the filtered runs that were scored (the runs the
        aggregates count: not a provider error's, not an incomplete one's; a search is not
        counted): the scalar's histogram (:data:`SCALAR_BINS` bars) and each model's outcomes
        (pass, fail, unknown; the :data:`CHART_MODELS` models with most runs)."""
        where, args, q = self._runs_where(params)
        if q:
            return {"scalar": [], "models": [], "searched": True}
        clause = " WHERE " + " AND ".join([*where, "status = 'scored'"])
        bins = [0] * SCALAR_BINS
        for b, n in self.rows(
            f"SELECT min(CAST(scalar * {SCALAR_BINS} AS INTEGER), {SCALAR_BINS - 1}), count(*) FROM view_runs"
            f"{clause} AND scalar IS NOT NULL GROUP BY 1",
            args,
        ):
            if b is not None and 0 <= b < SCALAR_BINS:
                bins[b] += n
        models = [
            {"model": r[0], "pass": r[1], "fail": r[2], "unknown": r[3], "runs": r[1] + r[2] + r[3]}
            for r in self.rows(
                "SELECT model, sum(outcome = 'pass'), sum(outcome = 'fail'), sum(outcome IS NULL) FROM view_runs"
                f"{clause} GROUP BY model ORDER BY count(*) DESC, model LIMIT {CHART_MODELS}",
                args,
            )
        ]
        return {
            "scalar": [{"low": i / SCALAR_BINS, "high": (i + 1) / SCALAR_BINS, "runs": n} for i, n in enumerate(bins)],
            "models": models,
            "searched": False,
        }

    def has_run(self, run_id: str) -> bool:
        return self.one("SELECT 1 FROM view_runs WHERE run_id = ?", (run_id,)) is not None

    def compare(self, a: str, b: str) -> dict[str, Any]:
        """Two runs of one scenario side by side, their transcripts aligned on the required actions
        (:func:`evalkit.view.drilldown.align`); ValueError when the scenarios differ."""
        left, right = self.run(a), self.run(b)
        if left["scenario_id"] != right["scenario_id"]:
            raise ValueError(
                f"b: run {b!r} is of scenario {right['scenario_id']!r}, not {left['scenario_id']!r}: "
                "compare two runs of one scenario"
            )
        return {"a": left, "b": right, "rows": drilldown.align(left, right)}

    def list_runs(self, params: dict[str, str], blind: bool = False) -> dict[str, Any]:
        """One page of runs: ``params`` are the query's filters (:data:`FILTERS`), ``sort``,
        ``order`` (asc|desc), ``page`` (from 1) and ``per_page``. Unknown values are usage errors
        (ValueError naming the parameter). ``blind``: without :data:`HIDDEN_COLUMNS`, and a
        hidden filter or sort is a ValueError (:func:`blind_params`)."""
        if blind:
            blind_params(params)
        where, args, q = self._runs_where(params)
        sort = params.get("sort") or "run"
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}")
        order = params.get("order") or ("desc" if sort == "disagreements" else "asc")
        if order not in ("asc", "desc"):
            raise ValueError("order must be asc or desc")
        page = number(params.get("page"), "page", 1, 1)
        per_page = min(number(params.get("per_page"), "per_page", PER_PAGE, 1), MAX_PER_PAGE)
        column = SORTS[sort]
        order_by = f"{column} {order}" + ("" if column == "run_id" else f", run_id {order}")
        if column == "scalar":  # unscored runs last whichever way
            order_by = f"scalar IS NULL, {order_by}"
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        found = [
            dict(r)
            for r in self.rows(
                f"SELECT * FROM view_runs{clause} ORDER BY {order_by} LIMIT ? OFFSET ?",
                [*args, per_page + 1, (page - 1) * per_page],
            )
        ]
        has_more = len(found) > per_page
        found = found[:per_page]
        total = None if q else self.one(f"SELECT count(*) FROM view_runs{clause}", args)[0]
        reviewed = self._reviewed([r["run_id"] for r in found])
        runs = [
            dict(r, unsafe=None if r["unsafe"] is None else bool(r["unsafe"]), reviewed=r["run_id"] in reviewed)
            for r in found
        ]
        for r in runs:
            r.pop("bundle_hash", None)
            for column in HIDDEN_COLUMNS if blind else ():
                r.pop(column, None)
        return {
            "runs": runs,
            "page": page,
            "per_page": per_page,
            "total": total,
            "has_more": has_more,
            "sort": sort,
            "order": order,
            "filters": {k: params.get(k) or "" for k in FILTERS if not (blind and k in HIDDEN_FILTERS)},
            "revealed": not blind,
        }

    def _reviewed(self, run_ids: list[str]) -> set[str]:
        if not run_ids:
            return set()
        marks = ", ".join("?" for _ in run_ids)
        return {r[0] for r in self.rows(f"SELECT DISTINCT run_id FROM reviews WHERE run_id IN ({marks})", run_ids)}

    # -- the disagreement queue ---------------------------------------------------------------
    def queue_filters(self, params: dict[str, str], blind: bool = False) -> dict[str, str]:
        """The disagreement queue's filters from a query (:data:`QUEUE_FILTERS`); ValueError names a
        bad one, and ``blind``, one of :data:`HIDDEN_QUEUE_FILTERS`."""
        filters = {k: (params.get(k) or "").strip() for k in QUEUE_FILTERS}
        for name in HIDDEN_QUEUE_FILTERS if blind else ():
            if filters[name]:
                raise ValueError(
                    f"{name}: hidden while reviewing blind (it names where the judge disagrees); "
                    "show the scores (reveal=1) to filter by it"
                )
        names = [p.name for p in self.pairings]
        if filters["pairing"] and filters["pairing"] not in names:
            raise ValueError(f"pairing must be one of {', '.join(names)}")
        dims = sorted({p.judge_dimension for p in self.pairings})
        if filters["dimension"] and filters["dimension"] not in dims:
            raise ValueError(f"dimension must be one of {', '.join(dims)}")
        if filters["mine"] not in ("", "yes", "no"):
            raise ValueError("mine must be yes or no (reviewed by me or not)")
        return filters

    def _verdicts_given(self) -> dict[tuple[str, str], set[str]]:
        """(run, pairing) → the reviewers whose current review (not stale) gives it a verdict."""
        out: dict[tuple[str, str], set[str]] = {}
        for row in self.rows(
            "SELECT a.run_id, a.pairing, a.reviewer FROM adjudications a JOIN reviews r ON r.review_id = a.review_id "
            f"WHERE {CURRENT} AND NOT {STALE}"
        ):
            out.setdefault((row[0], row[1]), set()).add(row[2])
        return out

    def _queue_rows(self, filters: dict[str, str], reviewer: str | None):
        """The filtered queue's rows (ranked) and who gave a verdict on each (run, pairing)."""
        dimension = {p.name: p.judge_dimension for p in self.pairings}
        given = self._verdicts_given()
        if filters["mine"] and not reviewer:
            raise ValueError("mine: give your name (reviewer) to filter by what you reviewed")
        rows = []
        for d in self.disagreement_rows:
            if (
                (filters["pairing"] and d["pairing"] != filters["pairing"])
                or (filters["dimension"] and dimension.get(d["pairing"]) != filters["dimension"])
                or (filters["model"] and d["model"] != filters["model"])
                or (filters["scenario"] and d["scenario_id"] != filters["scenario"])
            ):
                continue
            if filters["mine"] and (reviewer in given.get((d["run_id"], d["pairing"]), ())) != (
                filters["mine"] == "yes"
            ):
                continue
            rows.append(d)
        return rows, given

    def disagreements(
        self,
        page: int = 1,
        per_page: int = 100,
        filters: dict[str, str] | None = None,
        reviewer: str | None = None,
        blind: bool = False,
    ) -> dict[str, Any]:
        """One page of the disagreement queue, filtered (:meth:`queue_filters`), with its progress:
        how many of the filtered rows have a verdict (``done`` of ``total``) and from whom.
        ``blind``: :meth:`blind_queue` instead."""
        filters = filters or {k: "" for k in QUEUE_FILTERS}
        if blind:
            return self.blind_queue(page, per_page, filters, reviewer)
        rows, given = self._queue_rows(filters, reviewer)
        start = (page - 1) * per_page
        chunk = rows[start : start + per_page]
        reviewed = self._reviewed(sorted({d["run_id"] for d in chunk}))
        verdicts = self._verdicts(sorted({d["run_id"] for d in chunk}))
        claims = active_claims(self.db) if self._has("review_claims") else {}
        out = []
        for rank, d in enumerate(chunk, start=start + 1):
            claim = claims.get(d["run_id"])
            out.append(
                dict(
                    d,
                    rank=rank,
                    reviewed=d["run_id"] in reviewed,
                    verdicts=verdicts.get((d["run_id"], d["pairing"]), {}),
                    claimed_by=claim[0] if claim else None,
                )
            )
        per_reviewer: dict[str, int] = {}
        done = 0
        for d in rows:
            who = given.get((d["run_id"], d["pairing"]))
            if who:
                done += 1
                for name in who:
                    per_reviewer[name] = per_reviewer.get(name, 0) + 1
        return {
            "disagreements": out,
            "total": len(rows),
            "page": page,
            "per_page": per_page,
            "has_more": start + per_page < len(rows),
            "filters": filters,
            "progress": {"done": done, "total": len(rows), "by_reviewer": dict(sorted(per_reviewer.items()))},
            "revealed": True,
        }

    def _blind_runs(self, filters: dict[str, str], reviewer: str | None):
        """The filtered queue's runs in the blind order (:func:`blind_order`), each with its rows,
        and who gave a verdict on each (run, pairing)."""
        rows, given = self._queue_rows(filters, reviewer)
        runs: dict[str, list[dict[str, Any]]] = {}
        for d in rows:
            runs.setdefault(d["run_id"], []).append(d)
        return sorted(runs.items(), key=lambda item: blind_order(item[0])), given

    def blind_queue(
        self, page: int = 1, per_page: int = 100, filters: dict[str, str] | None = None, reviewer: str | None = None
    ) -> dict[str, Any]:
        """One page of the disagreement queue as a blind reviewer sees it: one row per run, in an
        order that does not depend on any verdict (:func:`blind_order`), with only what gives no
        verdict away (run, scenario, model, status, who reviewed it and who holds it); its progress
        counts runs: ``done`` when each of its disagreements has a verdict."""
        filters = filters or {k: "" for k in QUEUE_FILTERS}
        runs, given = self._blind_runs(filters, reviewer)
        start = (page - 1) * per_page
        chunk = [run for run, _ in runs[start : start + per_page]]
        ids = json.dumps(chunk)
        status = dict(self.rows(f"SELECT run_id, status FROM view_runs WHERE {_IN_LIST}", (ids,))) if chunk else {}
        reviewers: dict[str, list[str]] = {}
        if chunk:
            for run_id, who in self.rows(
                f"SELECT DISTINCT run_id, reviewer FROM reviews r WHERE {_IN_LIST} AND {CURRENT} ORDER BY reviewer",
                (ids,),
            ):
                reviewers.setdefault(run_id, []).append(who)
        claims = active_claims(self.db) if self._has("review_claims") else {}
        head = {d["run_id"]: d for _, rows in runs[start : start + per_page] for d in rows[:1]}
        out = [
            {
                "position": position,
                "run_id": run,
                "scenario_id": head[run]["scenario_id"],
                "model": head[run]["model"],
                "status": status.get(run),
                "reviewed_by": reviewers.get(run, []),
                "claimed_by": claims[run][0] if run in claims else None,
            }
            for position, run in enumerate(chunk, start=start + 1)
        ]
        done, per_reviewer = 0, {}
        for run, rows in runs:
            verdicts = [given.get((run, d["pairing"]), set()) for d in rows]
            done += all(verdicts)
            for name in set().union(*verdicts):
                per_reviewer[name] = per_reviewer.get(name, 0) + 1
        return {
            "disagreements": out,
            "total": len(runs),
            "page": page,
            "per_page": per_page,
            "has_more": start + per_page < len(runs),
            "filters": {k: v for k, v in filters.items() if k not in HIDDEN_QUEUE_FILTERS},
            "progress": {"done": done, "total": len(runs), "by_reviewer": dict(sorted(per_reviewer.items()))},
            "revealed": False,
        }

    def _writer(self) -> ReviewTables:
        if self.writer is None:
            self.writer = ReviewTables(self.path)  # migrates an older file
        if self._stand_ins():
            self._reopen()
        return self.writer

    def _stand_ins(self) -> bool:
        """Whether the reader shows an older file through stand-ins: empty TEMP tables for tables it
        lacked, or TEMP views reading NULL for columns it lacked (the writer has added them since:
        open the file again to see them)."""
        from evalkit.db.schema import TABLES

        temp = {
            name: (kind, sql)
            for kind, name, sql in self.db.conn.execute("SELECT type, name, sql FROM temp.sqlite_master")
        }
        for name, table in TABLES.items():
            kind, sql = temp.get(name, (None, None))
            if kind == "table" or (kind == "view" and any(f'NULL AS "{c}"' in sql for c in table.column_names)):
                return True
        return False

    def _reopen(self) -> None:
        self.db.close()
        self.db = open_readonly(self.path)
        self._version = self._seq = None
        self.refresh()

    def next_disagreement(self, filters: dict[str, str], reviewer: str, ranked: bool = False) -> str | None:
        """Claim for ``reviewer`` the first run of the filtered queue with a row that nobody has
        given a verdict on, that ``reviewer`` has not reviewed and another reviewer does not hold;
        its id, or None when none is left. The queue's order is the blind one
        (:func:`blind_order`), or with ``ranked`` the audit's."""
        if ranked:
            rows, given = self._queue_rows(filters, reviewer)
        else:
            runs, given = self._blind_runs(filters, reviewer)
            rows = [d for _, run_rows in runs for d in run_rows]
        mine = {
            r[0]
            for r in self.rows(
                f"SELECT DISTINCT run_id FROM reviews r WHERE reviewer = ? AND {CURRENT} AND NOT {STALE}", (reviewer,)
            )
        }
        candidates = (
            d["run_id"] for d in rows if not given.get((d["run_id"], d["pairing"])) and d["run_id"] not in mine
        )
        return self._writer().claim_first(candidates, reviewer, self.claim_minutes)

    # -- label samples: the label-next queue ----------------------------------------------------
    def create_sample(self, params: dict[str, Any], reviewer: str | None = None) -> dict[str, Any]:
        """Record a label sample over the runs in scope (``model``, ``scenario``: every run when
        empty): ``design`` random (``size`` runs) or stratified (``dimension``, quotas ``m0``
        failures and ``m1`` passes); ``seed`` (a random one when empty) fixes the order."""
        design = str(params.get("design") or "random")
        if design not in SAMPLE_DESIGNS:
            raise ValueError(f"design must be one of {', '.join(SAMPLE_DESIGNS)}")
        seed = number(_text(params.get("seed")), "seed", random.SystemRandom().randrange(10**9), 0)
        where, args = [], []
        for key, col in (("model", "model"), ("scenario", "scenario_id")):
            if params.get(key):
                where.append(f"{col} = ?")
                args.append(str(params[key]))
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        runs = [r[0] for r in self.rows(f"SELECT run_id FROM view_runs{clause}", args)]
        if not runs:
            raise ValueError("no run in the sample's scope (model, scenario)")
        size = m0 = m1 = None
        dimension = None
        if design == "random":
            size = number(_text(params.get("size")), "size", 0, 1)
            if size == 0:
                raise ValueError("size: how many runs to label (a whole number from 1)")
            size = min(size, len(runs))
        else:
            dimension = str(params.get("dimension") or "outcome").strip()
            rated = self._pass_fail_dimensions()
            if rated and dimension not in rated:
                # no review could give the failures and passes the quotas count: it would never be complete
                raise ValueError(
                    f"dimension: {dimension!r} is not a pass/fail dimension of the review form "
                    f"(one of {', '.join(rated)})"
                )
            m0 = number(_text(params.get("m0")), "m0", 0, 1)
            m1 = number(_text(params.get("m1")), "m1", 0, 1)
            if not m0 or not m1:
                raise ValueError("m0 and m1: how many failures and passes to label (whole numbers from 1)")
        share = _share(_text(params.get("second")))
        sample_id = self._writer().create_sample(
            design,
            seed,
            runs,
            size=size,
            dimension=dimension,
            m0=m0,
            m1=m1,
            model=str(params.get("model") or "") or None,
            scenario=str(params.get("scenario") or "") or None,
            created_by=reviewer,
            second_share=share or None,
        )
        self.refresh()
        return self.sample(sample_id)

    def _pass_fail_dimensions(self) -> list[str]:
        """The pass/fail dimensions of the rubrics a run's review form may use (:meth:`rubric_for`):
        ``--rubric``, else the stored annotations' rubrics and the default one."""
        names = (
            []
            if self.rubric_name or not self._has("annotations")
            else self.rows("SELECT DISTINCT rubric_id FROM annotations WHERE rubric_id IS NOT NULL ORDER BY rubric_id")
        )
        found: set[str] = set()
        for (name,) in [*names, (None,)]:
            rubric = self.rubric_for([{"rubric": name}] if name else [])
            if rubric is not None:
                found.update(d["name"] for d in rubric_form(rubric)["dimensions"] if d["choices"] == ["pass", "fail"])
        return sorted(found)

    def samples(self) -> list[dict[str, Any]]:
        if not self._has("label_samples"):
            return []
        return [self._progress(s) for s in read_samples(self.db)]

    def sample(self, sample_id: str) -> dict[str, Any]:
        found = [
            s for s in (read_samples(self.db) if self._has("label_samples") else []) if s["sample_id"] == sample_id
        ]
        if not found:
            raise NotFound(sample_id)
        return self._progress(found[0])

    def _labelled(self, sample_id: str) -> dict[str, dict[str, list[Any]]]:
        """run → {reviewer: [values of the sample's dimension, or nothing]} of the current reviews
        (not stale) made through the sample that hold a rating."""
        out: dict[str, dict[str, list[Any]]] = {}
        for row in self.rows(
            "SELECT r.run_id, r.reviewer, v.dimension, v.value FROM reviews r JOIN review_ratings v "
            f"ON v.review_id = r.review_id WHERE r.sample_id = ? AND {CURRENT} AND NOT {STALE}",
            (sample_id,),
        ):
            out.setdefault(row[0], {}).setdefault(row[1], []).append((row[2], _json(row[3])))
        return out

    def _progress(self, sample: dict[str, Any]) -> dict[str, Any]:
        labelled = self._labelled(sample["sample_id"])
        by_reviewer: dict[str, int] = {}
        for who in labelled.values():
            for name in who:
                by_reviewer[name] = by_reviewer.get(name, 0) + 1
        out = dict(sample, labelled=len(labelled), by_reviewer=dict(sorted(by_reviewer.items())))
        if sample["design"] == "random":
            out["done"], out["target"] = min(len(labelled), sample["size"] or 0), sample["size"] or 0
            out["complete"] = len(labelled) >= (sample["size"] or 0)
        else:
            classes = [0, 0]
            for who in labelled.values():
                votes = [
                    b
                    for values in who.values()
                    for dim, v in values
                    if dim == sample["dimension"] and (b := pass_fail(v)) is not None
                ]
                if votes and sum(votes) * 2 != len(votes):
                    classes[int(sum(votes) * 2 > len(votes))] += 1
            out["failures"], out["passes"] = classes
            m0, m1 = sample["m0"] or 0, sample["m1"] or 0
            out["done"], out["target"] = min(classes[0], m0) + min(classes[1], m1), m0 + m1
            out["complete"] = classes[0] >= m0 and classes[1] >= m1
        # the labelled runs drawn for a second reviewer's rating, and how many have it
        share = sample.get("second_share") or 0
        due = [run for run in labelled if second_rating(sample["seed"], run, share)]
        out["second_due"], out["second_done"] = len(due), sum(1 for run in due if len(labelled[run]) >= 2)
        out["first_complete"] = out["complete"]
        out["complete"] = out["complete"] and out["second_done"] == out["second_due"]
        return out

    def next_label(self, sample_id: str, reviewer: str) -> str | None:
        """Claim for ``reviewer`` the next run of the sample, in its recorded order, that another
        reviewer does not hold, that ``reviewer`` has not reviewed otherwise nor seen revealed, and
        that either nobody has labelled through it (while the sample wants more first labels) or is
        drawn for a second rating that another reviewer's label awaits (never the same reviewer
        twice); None when the sample is complete or nothing in it is left for ``reviewer``."""
        sample = self.sample(sample_id)
        if sample["complete"]:
            return None
        labelled = self._labelled(sample_id)
        share, seed, first_open = sample["second_share"] or 0, sample["seed"], not sample["first_complete"]
        # a run the reviewer already reviewed, or whose scores they saw, is left to another reviewer:
        # their label could not be blind, and a review of its ratings alone would supersede their verdicts
        seen = self._revealed.get(reviewer, set()) | {
            r[0]
            for r in self.rows(
                "SELECT DISTINCT run_id FROM reviews r WHERE reviewer = ? AND sample_id IS NOT ? "
                f"AND {CURRENT} AND NOT {STALE}",
                (reviewer, sample_id),
            )
        }

        def wanted(run: str) -> bool:
            if run in seen:
                return False
            if run not in labelled:
                return first_open
            by = labelled[run]
            return len(by) < 2 and reviewer not in by and second_rating(seed, run, share)

        candidates = (
            r[0]
            for r in self.db.conn.execute(
                "SELECT run_id FROM label_sample_runs WHERE sample_id = ? ORDER BY position", (sample_id,)
            )
            if wanted(r[0])
        )
        return self._writer().claim_first(candidates, reviewer, self.claim_minutes)

    def claim(self, run_id: str) -> dict[str, str] | None:
        """Who holds ``run_id`` now, and until when."""
        if not self._has("review_claims"):
            return None
        row = self.one(
            "SELECT reviewer, expires_at FROM review_claims WHERE run_id = ? AND expires_at > ?",
            (run_id, _now()),
        )
        return None if row is None else {"reviewer": row[0], "until": row[1]}

    def _verdicts(self, run_ids: list[str]) -> dict[tuple[str, str], dict[str, str]]:
        """(run, pairing) → {reviewer: verdict} of the current reviews."""
        from evalkit.db.reviews import CURRENT

        if not run_ids:
            return {}
        marks = ", ".join("?" for _ in run_ids)
        out: dict[tuple[str, str], dict[str, str]] = {}
        for row in self.rows(
            f"SELECT a.run_id, a.pairing, a.reviewer, a.verdict FROM adjudications a JOIN reviews r "
            f"ON r.review_id = a.review_id WHERE a.run_id IN ({marks}) AND {CURRENT} "
            "ORDER BY a.reviewer",
            run_ids,
        ):
            out.setdefault((row[0], row[1]), {})[row[2]] = row[3]
        return out

    # -- one run ------------------------------------------------------------------------------
    def run(self, run_id: str, transcript_from: int = 0) -> dict[str, Any]:
        head = self.one(
            "SELECT s.run_id, s.scenario_id, s.model, s.status, s.scalar, s.bundle_hash, s.card, "
            "r.path, r.scenario_title, r.provider, r.ts_utc, r.final_reason FROM scorecards s "
            "LEFT JOIN runs r ON r.run_id = s.run_id WHERE s.run_id = ?",
            (run_id,),
        )
        if head is None:
            raise NotFound(run_id)
        card = _json(head["card"])
        card = card if isinstance(card, dict) else {}
        row = self.one("SELECT bundle FROM bundles WHERE bundle_hash = ?", (head["bundle_hash"],))
        bundle = _json(row["bundle"]) if row is not None else None
        bundle = bundle if isinstance(bundle, dict) else {}
        entries = drilldown.transcript(card, bundle)
        steps = drilldown.run_steps(entries)
        start = max(0, min(transcript_from, max(len(entries) - 1, 0)))
        annotations = self.annotations(run_id, head["bundle_hash"])
        for a in annotations:
            a["cited_steps"] = [n for n in drilldown.cited_steps(a["rationale"]) if n in steps]
        scenario = head["scenario_id"]
        others = self.rows(
            "SELECT run_id, model, status, scalar, outcome FROM view_runs WHERE scenario_id = ? "
            f"AND run_id != ? ORDER BY run_id LIMIT {OTHER_RUNS}",
            (scenario, run_id),
        )
        n_others = self.one("SELECT count(*) FROM view_runs WHERE scenario_id = ? AND run_id != ?", (scenario, run_id))[
            0
        ]
        rubric = self.rubric_for(annotations)
        return {
            "run_id": head["run_id"],
            "scenario_id": scenario,
            "scenario_title": head["scenario_title"],
            "model": head["model"],
            "status": head["status"],
            "path": head["path"],
            "provider": head["provider"],
            "ts_utc": head["ts_utc"],
            "final_reason": head["final_reason"],
            "bundle_hash": head["bundle_hash"],
            "status_reason": drilldown.status_reason(card, bundle),
            "scalar": card.get("scalar", head["scalar"]),
            "vector": card.get("vector") or {},
            "checks": card.get("checks") or {},
            "informative": card.get("informative") or {},
            "task_prompt": bundle.get("task_prompt"),
            "transcript": entries[start : start + TRANSCRIPT_PAGE],
            "transcript_total": len(entries),
            "transcript_from": start,
            "transcript_page": TRANSCRIPT_PAGE,
            "checklist": drilldown.checklist(card, bundle),
            "annotations": annotations,
            "probes": self.probes(run_id),
            "disagreements": [
                d
                for _, d in (
                    self._by_run.get(run_id, [])
                    if self._by_run is not None
                    else self._disagreements([run_id]).get(run_id, [])
                )
            ],
            "claim": self.claim(run_id),
            "other_runs": [dict(r) for r in others],
            "other_runs_total": n_others,
            "reviews": [r.as_dict() for r in read_reviews(self.db, run_id=run_id)],
            "rubric": rubric_form(rubric) if rubric is not None else None,
            "pairings": [p.name for p in self.pairings],
        }

    def annotations(self, run_id: str, bundle_hash: str | None) -> list[dict[str, Any]]:
        """Every annotation of the run (ok or not, stale ones marked), with its values."""
        heads = self.rows(
            "SELECT annotation_id, judge_model, rubric_id, rubric_version, blind, replicate, status, "
            "annotation, rationale, bundle_hash, created_at FROM annotations WHERE run_id = ? "
            "ORDER BY judge_model, rubric_id, blind DESC, replicate, created_at, annotation_id",
            (run_id,),
        )
        if not heads:
            return []
        ids = [h["annotation_id"] for h in heads]
        values: dict[str, dict[str, Any]] = {i: {} for i in ids}
        confidence: dict[str, Any] = {}
        marks = ", ".join("?" for _ in ids)
        from evalkit.db import label_value

        for v in self.rows(
            f"SELECT annotation_id, dimension, value, confidence FROM annotation_values "
            f"WHERE annotation_id IN ({marks}) ORDER BY annotation_id, dimension",
            ids,
        ):
            values[v[0]][v[1]] = label_value(v[2])
            if v[3] is not None:
                confidence[v[0]] = v[3]
        out = []
        for h in heads:
            doc = _json(h["annotation"])
            doc = doc if isinstance(doc, dict) else {}
            rationale = h["rationale"] if isinstance(h["rationale"], str) else doc.get("rationale")
            conf = confidence.get(h["annotation_id"], doc.get("confidence"))
            out.append(
                {
                    "annotation_id": h["annotation_id"],
                    "judge_model": h["judge_model"],
                    "rubric": h["rubric_id"],
                    "rubric_version": h["rubric_version"],
                    "blind": bool(h["blind"]),
                    "replicate": h["replicate"],
                    "status": h["status"],
                    "created_at": h["created_at"],
                    "values": values[h["annotation_id"]],
                    "confidence": conf if isinstance(conf, (int, float)) and not isinstance(conf, bool) else None,
                    "rationale": rationale if isinstance(rationale, str) else "",
                    "stale": bundle_hash is not None
                    and h["bundle_hash"] is not None
                    and h["bundle_hash"] != bundle_hash,
                }
            )
        return out

    def probes(self, run_id: str) -> list[dict[str, Any]]:
        out = []
        for p in self.rows(
            "SELECT probe, judge_model, rubric_id, status, annotation, rationale, created_at "
            "FROM probe_annotations WHERE run_id = ? ORDER BY probe, judge_model, rubric_id, created_at",
            (run_id,),
        ):
            doc = _json(p["annotation"])
            doc = doc if isinstance(doc, dict) else {}
            out.append(
                {
                    "probe": p["probe"],
                    "judge_model": p["judge_model"],
                    "rubric": p["rubric_id"],
                    "status": p["status"],
                    "created_at": p["created_at"],
                    "values": {k: v for k, v in doc.items() if k != "rationale"},
                    "rationale": p["rationale"] if isinstance(p["rationale"], str) else "",
                }
            )
        return out

    # -- reviews ------------------------------------------------------------------------------
    def rubric_for(self, annotations: list[dict[str, Any]]):
        """The rubric of the review form: ``--rubric``, else the first of the run's annotation
        rubrics that is a rubric file, else the judge configuration's default."""
        from evalkit.judges.rubrics import RubricError, load_rubric

        names = [self.rubric_name] if self.rubric_name else [a["rubric"] for a in annotations if a.get("rubric")]
        names.append(self.rubric_name or _default_rubric())
        for name in names:
            if name in self._rubrics:
                if self._rubrics[name] is not None:
                    return self._rubrics[name]
                continue
            try:
                self._rubrics[name] = load_rubric(name)
            except RubricError:
                if name == self.rubric_name:
                    raise
                self._rubrics[name] = None
                continue
            return self._rubrics[name]
        return None

    def add_review(self, run_id: str, body: dict[str, Any], default_reviewer: str | None = None) -> dict[str, Any]:
        """Validate and append one review of ``run_id`` (the JSON API's body; see
        :func:`parse_review`); the stored review as a dict."""
        head = self.one("SELECT bundle_hash FROM scorecards WHERE run_id = ?", (run_id,))
        if head is None:
            raise NotFound(run_id)
        rubric = self.rubric_for(self.annotations(run_id, head[0]))
        review = parse_review(body, rubric, [p.name for p in self.pairings], default_reviewer)
        review["blind"] = review["blind"] and not self.revealed_to(run_id, review["reviewer"])
        self._check_design(run_id, review)
        self._check_verdicts(run_id, review["verdicts"])
        stored = self._writer().add(
            run_id,
            review["reviewer"],
            rubric_id=rubric.id if rubric else None,
            ratings=review["ratings"],
            verdicts=review["verdicts"],
            note=review["note"],
            blind=review["blind"],
            bundle_hash=head[0],
            design=review["design"],
            sample_id=review["sample"],
        )
        return stored.as_dict()

    def _check_verdicts(self, run_id: str, verdicts: dict[str, str]) -> None:
        """A verdict answers a disagreement the run has (ReviewError naming the pairing): one on
        another pairing would count in no row of the audit's adjudications."""
        if not verdicts:
            return
        runs = self._by_run if self._by_run is not None else self._disagreements([run_id])
        has = {d["pairing"] for _, d in runs.get(run_id, [])}
        for pairing in verdicts:
            if pairing not in has:
                names = ", ".join(p.name for p in self.pairings if p.name in has) or "none"
                raise ReviewError(f"verdicts.{pairing}: run {run_id!r} has no {pairing} disagreement (it has: {names})")

    def _check_design(self, run_id: str, review: dict[str, Any]) -> None:
        """A review says the run came from a sample only when the sample holds it, and from the
        disagreement queue only when the run is in it (ReviewError naming the field)."""
        design, sample = review["design"], review["sample"]
        if design in SAMPLE_DESIGNS:
            if not sample:
                raise ReviewError(f"sample: a {design} review names the label sample its run came from")
            row = (
                self.one(
                    "SELECT s.design FROM label_samples s JOIN label_sample_runs r ON r.sample_id = s.sample_id "
                    "WHERE s.sample_id = ? AND r.run_id = ?",
                    (sample, run_id),
                )
                if self._has("label_samples")
                else None
            )
            if row is None or row[0] != design:
                raise ReviewError(f"sample: run {run_id!r} is not in a {design} sample {sample!r}")
        elif sample:
            raise ReviewError(f"sample: only a random or stratified review names a sample, not a {design} one")
        elif design == "disagreement":
            runs = self._by_run if self._by_run is not None else self._disagreements([run_id])
            if not runs.get(run_id):
                raise ReviewError(f"design: run {run_id!r} is not in the disagreement queue")


def blind_order(run_id: str) -> str:
    """The blind queue's sort key: the SHA-256 of the run id, a fixed pseudo-random order that no
    verdict, rank or score changes (every reviewer and every server sees the same order)."""
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()


def blind_params(params: dict[str, str]) -> None:
    """While blind, a list neither filters nor sorts by a mechanical verdict or the judge's
    disagreement (the order alone would tell them): ValueError naming the parameter."""
    for name in HIDDEN_FILTERS:
        if params.get(name):
            raise ValueError(f"{name}: hidden while reviewing blind; show the scores (reveal=1) to filter by it")
    if params.get("sort") in HIDDEN_SORTS:
        raise ValueError(
            f"sort={params['sort']}: hidden while reviewing blind; show the scores (reveal=1) to sort by it"
        )


def pass_fail(value: Any) -> int | None:
    """A label as pass (1) or fail (0) — pass/fail, yes/no, a boolean, 0/1 — else None."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return PASS_WORDS.get(value.strip().lower())
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _share(text: str | None) -> float:
    """The share of a sample's runs that get a second rating: empty is 0, else a decimal from 0 to 1."""
    if text is None or text.strip() == "":
        return 0.0
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0 or text.strip().lower() in ("nan", "inf"):
        raise ValueError(f"second: the share of runs rated twice, a number from 0 to 1 (e.g. 0.2), not {text[:40]!r}")
    return share


def number(text: str | None, name: str, default: int, low: int) -> int:
    """A numeric query parameter: ASCII digits, from ``low`` to :data:`MAX_NUMBER`; absent or
    empty is ``default``. Anything else is a ValueError naming the parameter (a 400)."""
    if text is None or text == "":
        return default
    if not _DIGITS.fullmatch(text) or not low <= int(text) <= MAX_NUMBER:
        raise ValueError(f"{name} must be a whole number from {low} to {MAX_NUMBER} (ASCII digits), not {text[:40]!r}")
    return int(text)


def _default_rubric() -> str:
    try:
        from evalkit.judges.config import load_config

        return load_config().default_rubric
    except Exception:  # a broken judge config is the judge's to report; the form uses the shipped rubric
        return "procedure_v1"


def rubric_form(rubric) -> dict[str, Any]:
    """The rubric's dimensions and outcome as the review form asks them."""
    dims = [
        {
            "name": d.name,
            "question": d.question,
            "choices": [3, 2, 1, 0] + (["n/a"] if d.na else []),
            "anchors": {k: v for k, v in d.anchors},
        }
        for d in rubric.dimensions
    ]
    if rubric.outcome:
        dims.append({"name": "outcome", "question": rubric.outcome, "choices": ["pass", "fail"], "anchors": {}})
    return {"id": rubric.id, "version": rubric.version, "title": rubric.title, "dimensions": dims}


def _printable(text: str) -> bool:
    return all(unicodedata.category(ch)[0] != "C" for ch in text)


def _given(body: dict, name: str, shape: str) -> list[tuple[str, Any]]:
    """The filled-in entries of the object ``body[name]`` (``{shape}``): an empty value is no answer."""
    raw = body.get(name) or {}
    if not isinstance(raw, dict):
        raise ReviewError(f"{name}: an object {{{shape}}}")
    return [(key, value) for key, value in raw.items() if value not in (None, "")]


def parse_review(body: Any, rubric, pairings: list[str], default_reviewer: str | None = None) -> dict[str, Any]:
    """A review body (``{"reviewer", "ratings": {dimension: value}, "verdicts": {pairing: verdict},
    "note", "blind", "design", "sample"}``) checked against the rubric and the pairings; ReviewError
    names the first bad field. Empty values mean "not answered"; ``blind`` defaults to true,
    ``design`` (how the run was chosen, evalkit.db.reviews.DESIGNS) to ``by_hand``."""
    if not isinstance(body, dict):
        raise ReviewError("the body must be a JSON object")
    unknown = sorted(set(body) - {"reviewer", "ratings", "verdicts", "note", "blind", "design", "sample"})
    if unknown:
        raise ReviewError(f"unknown field {unknown[0]!r}")
    reviewer = body.get("reviewer") or default_reviewer or ""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError("reviewer: a name is required")
    reviewer = reviewer.strip()
    if len(reviewer) > MAX_REVIEWER or not _printable(reviewer):
        raise ReviewError(f"reviewer: printable text of at most {MAX_REVIEWER} characters")
    forms = {d["name"]: d for d in (rubric_form(rubric)["dimensions"] if rubric is not None else [])}
    ratings: dict[str, Any] = {}
    for dim, value in _given(body, "ratings", "dimension: value"):
        if dim not in forms:
            raise ReviewError(
                f"ratings.{dim}: not a dimension of rubric {rubric.id if rubric else '(none)'} "
                f"(one of {', '.join(forms)})"
            )
        choices = forms[dim]["choices"]
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or value not in choices:
            raise ReviewError(f"ratings.{dim}: {value!r} is not one of {', '.join(map(str, choices))}")
        ratings[dim] = value
    verdicts: dict[str, str] = {}
    for pairing, verdict in _given(body, "verdicts", "pairing: verdict"):
        if pairing not in pairings:
            raise ReviewError(f"verdicts.{pairing}: not a pairing (one of {', '.join(pairings)})")
        if verdict not in VERDICTS:
            raise ReviewError(f"verdicts.{pairing}: {verdict!r} is not one of {', '.join(VERDICTS)}")
        verdicts[pairing] = verdict
    note = body.get("note") or ""
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ReviewError(f"note: text of at most {MAX_NOTE} characters")
    blind = body.get("blind", True)
    if not isinstance(blind, bool):
        raise ReviewError("blind: true or false")
    if not ratings and not verdicts and not note.strip():
        raise ReviewError("nothing to save: give a rating, a verdict or a note")
    design = body.get("design") or "by_hand"
    if design not in DESIGNS:
        raise ReviewError(f"design: {str(design)[:40]!r} is not one of {', '.join(DESIGNS)}")
    sample = body.get("sample") or None
    if sample is not None and (not isinstance(sample, str) or len(sample) > 64):
        raise ReviewError("sample: a label sample's id")
    return {
        "reviewer": reviewer,
        "ratings": ratings,
        "verdicts": verdicts,
        "note": note,
        "blind": blind,
        "design": design,
        "sample": sample,
    }
