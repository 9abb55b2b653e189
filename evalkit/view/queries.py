"""What ``evalkit view`` reads and writes: one database, read-only except for the review tables.

:class:`ViewData` holds a read-only connection (:func:`evalkit.db.open_readonly`) for everything it
shows and, from the first review on, a :class:`~evalkit.db.reviews.ReviewTables` writer that may
write the review tables and nothing else. Every function returns plain dicts: the pages and the
JSON API show the same thing.

Paging stays fast at 10^5 runs because the Runs table is a query, never a page of everything: on
opening, one pass over ``scorecards`` fills a narrow TEMP table ``view_runs`` (one row per run: the
columns the filters and sorts use, indexed) on the read-only connection, and the audit's ranked
disagreements are computed once (:func:`evalkit.agreement.judge_vs_mechanical.disagreements`, the
list ``evalkit audit`` prints) and counted into it. A page is then one indexed ``SELECT ... ORDER BY
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
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from evalkit.db import open_readonly, read_annotations, read_cards
from evalkit.db.reviews import VERDICTS, ReviewTables, read_reviews
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
MAX_NOTE = 10_000
MAX_REVIEWER = 100

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
    except ValueError:
        return None


class ViewData:
    """The view's database: open it with :meth:`open` in the thread that serves requests."""

    def __init__(self, db_path: str | Path, *, config: str | Path | None = None, rubric: str | None = None):
        self.path = str(db_path)
        self.config_path = config
        self.rubric_name = rubric
        self.db = None
        self.writer: ReviewTables | None = None
        self._version: Any = None  # PRAGMA data_version when the index was last brought up to date
        self._seq: int | None = None  # the last run_changes seq indexed (None: index whole again)
        self.disagreement_rows: list[dict[str, Any]] = []  # ranked, as evalkit audit ranks them
        self._keys: list[tuple] = []  # each row's rank key, in the same order
        self._by_run: dict[str, list[tuple[tuple, dict[str, Any]]]] = {}  # run → its (key, row)s, ranked
        self._rubrics: dict[str, Any] = {}

    # -- connections ------------------------------------------------------------------------
    def open(self) -> ViewData:
        from evalkit.agreement.pairings_config import load_audit_config

        self.config = load_audit_config(self.config_path)
        self.pairings = self.config.pairings_for(None)
        self.db = open_readonly(self.path)
        self._version = self._seq = None
        self.refresh()
        return self

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
            self._seq = self.one("SELECT coalesce(max(seq), 0) FROM main.run_changes")[0]
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

    def _has(self, table: str) -> bool:
        return (
            self.db.conn.execute(
                "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is not None
        )

    def _build(self) -> None:
        """The whole index and disagreement list, from the file as it is."""
        self._by_run = self._disagreements(None)
        ranked = sorted((e for entries in self._by_run.values() for e in entries), key=lambda e: e[0])
        self._keys = [key for key, _ in ranked]
        self.disagreement_rows = [row for _, row in ranked]

        def build(conn) -> None:
            conn.execute("DROP TABLE IF EXISTS temp.view_runs")
            conn.execute("BEGIN")
            for sql in (*_INDEX_DDL, _INDEX_INSERT):
                conn.execute(sql)
            conn.executemany(
                "UPDATE view_runs SET disagreements = ? WHERE run_id = ?",
                [(len(entries), run) for run, entries in self._by_run.items()],
            )
            conn.execute("COMMIT")
            conn.execute("ANALYZE temp")

        self._writable(build)

    def _update(self, runs: list[str]) -> None:
        """Index ``runs`` again (each scored, re-scored, judged or gone) and put their disagreements
        in their ranked places; the other runs are not read."""
        fresh = self._disagreements(runs)
        for run in runs:
            for key, _ in self._by_run.pop(run, []):
                i = bisect.bisect_left(self._keys, key)
                del self._keys[i], self.disagreement_rows[i]
            for key, row in fresh.get(run, []):
                i = bisect.bisect_left(self._keys, key)
                self._keys.insert(i, key)
                self.disagreement_rows.insert(i, row)
        self._by_run.update(fresh)
        ids = json.dumps(runs)

        def update(conn) -> None:
            conn.execute("BEGIN")
            conn.execute(f"DELETE FROM temp.view_runs WHERE {_IN_LIST}", (ids,))
            conn.execute(f"{_INDEX_INSERT} WHERE {_IN_LIST}", (ids,))
            conn.executemany(
                "UPDATE view_runs SET disagreements = ? WHERE run_id = ?",
                [(len(entries), run) for run, entries in fresh.items()],
            )
            conn.execute("COMMIT")

        self._writable(update)

    def _disagreements(self, runs: list[str] | None) -> dict[str, list[tuple[tuple, dict[str, Any]]]]:
        """run → its rows of the audit's ranked disagreement list (no judge or rubric filter, no
        jury), each with its rank key; every run, or ``runs`` only."""
        from evalkit.agreement import judge_vs_mechanical as paired

        values = list(read_annotations(self.db, runs=runs))
        if not values:
            return {}
        sub = dataclasses.replace(self.config, pairings=self.pairings)
        cards = list(read_cards(self.db, judged_only=runs is None, runs=runs))
        order = {p.name: i for i, p in enumerate(self.pairings)}
        out: dict[str, list[tuple[tuple, dict[str, Any]]]] = {}
        for d in paired.disagreements(paired.build_pairs(cards, values, sub)):
            i = order[d["pairing"]]
            key = paired.rank_key(self.pairings[i], i, d["direction"], d["gap_share"], d["run_id"], d["judge_model"])
            out.setdefault(d["run_id"], []).append((key + (str(d["rubric"] or ""),), d))
        return out

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

    def list_runs(self, params: dict[str, str]) -> dict[str, Any]:
        """One page of runs: ``params`` are the query's filters (:data:`FILTERS`), ``sort``,
        ``order`` (asc|desc), ``page`` (from 1) and ``per_page``. Unknown values are usage errors
        (ValueError naming the parameter)."""
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
        return {
            "runs": runs,
            "page": page,
            "per_page": per_page,
            "total": total,
            "has_more": has_more,
            "sort": sort,
            "order": order,
            "filters": {k: params.get(k) or "" for k in FILTERS},
        }

    def _reviewed(self, run_ids: list[str]) -> set[str]:
        if not run_ids:
            return set()
        marks = ", ".join("?" for _ in run_ids)
        return {r[0] for r in self.rows(f"SELECT DISTINCT run_id FROM reviews WHERE run_id IN ({marks})", run_ids)}

    # -- the disagreement queue ---------------------------------------------------------------
    def disagreements(self, page: int = 1, per_page: int = 100) -> dict[str, Any]:
        rows = self.disagreement_rows
        start = (page - 1) * per_page
        chunk = rows[start : start + per_page]
        reviewed = self._reviewed(sorted({d["run_id"] for d in chunk}))
        verdicts = self._verdicts(sorted({d["run_id"] for d in chunk}))
        out = []
        for rank, d in enumerate(chunk, start=start + 1):
            out.append(
                dict(
                    d,
                    rank=rank,
                    reviewed=d["run_id"] in reviewed,
                    verdicts=verdicts.get((d["run_id"], d["pairing"]), {}),
                )
            )
        return {
            "disagreements": out,
            "total": len(rows),
            "page": page,
            "per_page": per_page,
            "has_more": start + per_page < len(rows),
        }

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
            "disagreements": [d for _, d in self._by_run.get(run_id, [])],
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
        had_tables = self._has("reviews")
        if self.writer is None:
            self.writer = ReviewTables(self.path)
        stored = self.writer.add(
            run_id,
            review["reviewer"],
            rubric_id=rubric.id if rubric else None,
            ratings=review["ratings"],
            verdicts=review["verdicts"],
            note=review["note"],
            blind=review["blind"],
            bundle_hash=head[0],
        )
        if not had_tables:  # the reader still shows the empty TEMP stand-ins of an older file
            self.db.close()
            self.db = open_readonly(self.path)
            self._version = self._seq = None
            self.refresh()
        return stored.as_dict()


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
    "note", "blind"}``) checked against the rubric and the pairings; ReviewError names the first
    bad field. Empty values mean "not answered"; ``blind`` defaults to true."""
    if not isinstance(body, dict):
        raise ReviewError("the body must be a JSON object")
    unknown = sorted(set(body) - {"reviewer", "ratings", "verdicts", "note", "blind"})
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
    return {"reviewer": reviewer, "ratings": ratings, "verdicts": verdicts, "note": note, "blind": blind}
