"""Assemble the report: one plain dict, read from the evalkit SQLite database.

The dict is the single source both outputs (:mod:`evalkit.report.render`:
the page and the summary) draw from, so the HTML page and the markdown summary always say
the same thing. It holds only JSON-compatible values; lists are sorted, so the same database gives
the same dict (the one exception is ``made_at``, which the caller may pin).

Choices where the issue is silent:

- The database is opened read-only (``mode=ro``): a report never creates, migrates or writes
  anything, and pointing it at a missing file is an error rather than a new empty database.
- Scores come from the stored scorecards rows (the figures ``evalkit score`` wrote from each card,
  with the run's command rows counted in SQL) through :class:`evalkit.aggregate.groups.Aggregator`,
  the code ``evalkit score --aggregate`` uses, so the report cannot disagree with it. The runs are
  streamed one scenario at a time (:func:`iter_scenarios`); no card is parsed per run, so time and
  memory stay small at 10^5 runs.
- A run is *ranked* only when it is ``scored`` and took no forbidden command of any severity; unsafe
  runs carry their worst kind (``safety``: dangerous, unapproved, anti_procedure) and are listed
  apart (the design note's safety gate: "safety is a gate, not a trade-off"). Ranks are per
  scenario, by scalar, ties sharing a rank ("1, 2, 2, 4").
- The judge section counts primary answers only (``replicate = 0``) for the distributions; cost and
  latency count every stored call, replicates included, because they were paid for.
- Latency: median per call, and the mean excluding the cold first call, calls in
  ``created_at`` order.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import marshal
import math
import operator
import os
import re
import statistics
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

from evalkit import __version__
from evalkit.aggregate.groups import RunSummary
from evalkit.aggregate.per_call import median_and_mean_after_first
from evalkit.config.files import ConfigError
from evalkit.db import (
    Database,
    imported_judges,
    judge_models,
    open_readonly,
    read_commands,
    read_ratings,
    resolve_judge,
)
from evalkit.db.cells import odd_cells
from evalkit.db.judge import judge_filter, primary_values_filter, stale, stale_annotation_ids, where_sql
from evalkit.db.scores import decode_json
from evalkit.errors import EvalkitError, InputError
from evalkit.report.contamination import load_contamination
from evalkit.report.drilldowns import ALL_RUNS_UP_TO, drilldown_data

# What the summary lists, whatever the number of runs (each list says how many it left out).
WORST_RUNS = 50  # the worst runs, on the main page with their details
TOP_DISAGREEMENTS = 50  # the audit's ranked disagreements, on the main page
DRILL_PER_SCENARIO = 10  # drill-downs of each scenario's worst runs, on its page
UNSAFE_LISTED = 5  # unsafe runs named per (scenario, model) in the safety table, the most severe first


class ReportError(EvalkitError):
    """A report cannot be made from this input; ``str()`` is one line naming the file."""


# --------------------------------------------------------------------------------------------
# small helpers


def made_at_now() -> str:
    """The "made at" time: ``SOURCE_DATE_EPOCH`` when set (reproducible builds), else now, UTC."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None and epoch.strip().isdigit():
        moment = _dt.datetime.fromtimestamp(int(epoch), tz=_dt.UTC)
    else:
        moment = _dt.datetime.now(tz=_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def value_label(value: Any) -> str:
    """A rating value as shown in tables: 3, 0.5, "n/a", "pass"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _value_sort_key(label: str) -> tuple:
    """Numbers first in numeric order, then words alphabetically ("n/a" after 0..3); "NaN" and
    "Infinity" are words (a NaN key has no order: the labels come from a set), and equal numbers
    ("1", "1.0") are ordered by their text."""
    try:
        number = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, number, label) if math.isfinite(number) else (1, 0.0, label)


def _latency(values: list[float]) -> dict[str, float | None]:
    median, mean_after_first = median_and_mean_after_first(values)
    return {"latency_median_ms": median, "latency_mean_excl_first_ms": mean_after_first}


# --------------------------------------------------------------------------------------------
# sections


def _rank(runs: list[dict]) -> None:
    """Competition ranks by scalar among one scenario's runs; unsafe and unscored runs get none."""
    members = [r for r in runs if r["status"] == "scored" and not r["unsafe"] and r["scalar"] is not None]
    for run in runs:
        run["rank"] = None
    members.sort(key=lambda r: (-r["scalar"], r["run_id"]))
    for i, run in enumerate(members):
        if i and members[i - 1]["scalar"] == run["scalar"]:
            run["rank"] = members[i - 1]["rank"]
        else:
            run["rank"] = i + 1


def _safety(dangerous: int, anti: int, commands: tuple) -> str | None:
    """The run's worst forbidden command: ``dangerous``, ``unapproved`` (a gated action taken without
    its approval), ``anti_procedure``, another severity as named, or None for a safe run. ``dangerous``
    and ``anti`` are the vector's counts, ``commands`` the counts of its command rows as :data:`RUN_SQL`
    gives them (all, forbidden, dangerous, anti-procedure, unapproved, the first forbidden one)."""
    _, forbidden, dangerous_commands, anti_commands, unapproved, first = commands
    if dangerous or dangerous_commands:
        return "dangerous"
    if unapproved:
        return "unapproved"
    if anti or anti_commands:
        return "anti_procedure"
    return (first[20:] if first else "") or "forbidden" if forbidden else None


# What the report reads of a run: the scorecards row's figures (written from the card in the same
# transaction), the runs row and its command rows counted in SQL, so no card is parsed in Python.
# The card is parsed once, by SQLite, for the few fields the row lacks; a card that is not a JSON
# object naming this run and its status is not the row's ScoreCard, and the run is left out. The
# command counts are integers (0 for a run without command rows), the first forbidden command text.
RUN_SQL = """
SELECT s.run_id, s.scenario_id, s.model, s.status, s.scalar, s.coverage, s.order_score, s.end_state,
       s.all_passed, s.safety_dangerous, s.safety_anti_procedure, s.extraneous, s.bundle_hash,
       json_extract(s.facts, '$[2]') AS scenario_hash, json_extract(s.facts, '$[3]') AS card_path,
       (json_extract(s.facts, '$[0]') IS s.run_id AND json_extract(s.facts, '$[1]') IS s.status) AS card_ok,
       r.path, r.scenario_title, r.final_reason,
       ifnull(c.n, 0), ifnull(c.forbidden, 0), ifnull(c.dangerous, 0), ifnull(c.anti, 0),
       ifnull(c.unapproved, 0), c.first_forbidden
FROM (
    SELECT run_id, scenario_id, model, status, scalar, coverage, order_score, end_state, all_passed,
           safety_dangerous, safety_anti_procedure, extraneous, bundle_hash,
           CASE WHEN json_valid(card) THEN json_extract(card, '$.run_id', '$.status', '$.scenario_hash', '$.path')
           END AS facts
    FROM scorecards {where}
) s
LEFT JOIN runs r ON r.run_id = s.run_id
LEFT JOIN (
    SELECT run_id, count(*) AS n,
           count(*) FILTER (WHERE class IS 'forbidden') AS forbidden,
           count(*) FILTER (WHERE class IS 'forbidden' AND severity IS 'dangerous') AS dangerous,
           count(*) FILTER (WHERE class IS 'forbidden' AND severity IS 'anti_procedure') AS anti,
           count(*) FILTER (WHERE class IS 'forbidden' AND subtype IS 'unapproved') AS unapproved,
           -- the first forbidden command's severity: the smallest (index, severity) pair, index padded
           min(printf('%020d', idx) || ifnull(severity, '')) FILTER (WHERE class IS 'forbidden') AS first_forbidden
    FROM commands {where} GROUP BY run_id
) c ON c.run_id = s.run_id
ORDER BY s.scenario_id, s.model, s.run_id
"""
ONLY_RUNS = "WHERE run_id IN (SELECT value FROM json_each(?))"


def _real(value: Any) -> float | None:
    """A REAL cell; an odd one (text, a blob, NaN) reads as missing, as odd_cells says."""
    if type(value) is float:  # the usual cell, first
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int:
    if type(value) is int:  # the usual cell, first
        return value if value > 0 else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _run(row: tuple) -> tuple[dict, RunSummary]:
    """One row of :data:`RUN_SQL` (a plain tuple, in its column order) as the report's run dict and
    the summary aggregation takes."""
    (
        run_id,
        scenario_id,
        model,
        status,
        scalar,
        coverage,
        order,
        end_state,
        passed,
        safety_dangerous,
        safety_anti,
        extraneous,
        bundle_hash,
        scenario_hash,
        card_path,
        _,
        path,
        scenario_title,
        final_reason,
    ) = row[:19]
    commands = row[19:]
    dangerous, anti = _count(safety_dangerous), _count(safety_anti)
    safety = _safety(dangerous, anti, commands)
    passed = None if passed not in (0, 1) or isinstance(passed, float) else bool(passed)
    model = _text(model) or ""  # an odd cell reads as missing, as the scorecards reader reads it
    scalar, coverage, order, end_state = _real(scalar), _real(coverage), _real(order), _real(end_state)
    run = {
        "run_id": run_id,
        "scenario_id": scenario_id,
        "scenario_title": _text(scenario_title),
        "model": model,
        "path": _text(card_path) or _text(path),
        "status": status,
        "final_reason": _text(final_reason),
        "scalar": scalar,
        "coverage": coverage,
        "order": order,
        "end_state": end_state,
        "all_passed": passed,
        "safety_dangerous": dangerous,
        "safety_anti_procedure": anti,
        "extraneous": _count(extraneous),
        "unsafe": safety is not None,
        "safety": safety,
        "bundle_hash": _text(bundle_hash),
        "n_commands": commands[0],
    }
    d, a = max(dangerous, commands[2]), max(anti, commands[3])
    summary = RunSummary(
        scenario_id,
        model,
        status,
        scalar,
        coverage,
        order,
        end_state,
        passed,
        d,
        run_id,
        _text(scenario_hash) or "",
        a,
        max(commands[1], d + a),
    )
    return run, summary


def iter_scenarios(
    db: Database,
    disagreeing: Mapping[str, int] | None = None,
    skipped: list[str] | None = None,
    only: list[str] | None = None,
) -> Iterator[tuple[str, list[tuple[dict, RunSummary]]]]:
    """Every run (``only``: these runs), one scenario at a time in (scenario, model, run id) order,
    ranked within its scenario, with its disagreement count; streamed from SQLite, so only one
    scenario's runs are held. A run whose stored card is not a ScoreCard of that row is left out
    (one line in ``skipped``)."""
    disagreeing = disagreeing or {}
    batch: list[tuple[dict, RunSummary]] = []
    current: str | None = None
    if only is None:
        rows = db.tuples(RUN_SQL.format(where=""))
    else:
        rows = db.tuples(RUN_SQL.format(where=ONLY_RUNS), (json.dumps(only),) * 2)
    for row in rows:
        run_id, scenario_id, card_ok = row[0], row[1], row[15]
        if not card_ok or not isinstance(run_id, str) or not isinstance(scenario_id, str):
            if skipped is not None:
                skipped.append(
                    f"scorecards.card: row run_id={run_id!r} is not a ScoreCard of its row "
                    "(not a JSON object naming this run and its status); the run is left out"
                )
            continue
        if scenario_id != current and batch:
            _rank([r for r, _ in batch])
            yield current, batch
            batch = []
        current = scenario_id
        run, summary = _run(row)
        run["disagreements"] = disagreeing.get(run["run_id"], 0)
        batch.append((run, summary))
    if batch:
        _rank([r for r, _ in batch])
        yield current, batch


# What a scenario page's table shows of a run (evalkit.report.drilldowns.render_run_table).
PAGE_FIELDS = (
    "run_id",
    "path",
    "model",
    "status",
    "unsafe",
    "safety",
    "rank",
    "scalar",
    "coverage",
    "order",
    "end_state",
    "all_passed",
    "safety_dangerous",
    "safety_anti_procedure",
    "extraneous",
    "n_commands",
    "disagreements",
)

_page_fields = operator.itemgetter(*PAGE_FIELDS)  # a run's PAGE_FIELDS as a tuple


class ScenarioRuns:
    """Every run of the report as its scenario's page lists it, kept from the report's one pass
    over the runs so the pages are written without reading the runs again: per scenario, in
    :func:`iter_scenarios` order, the :data:`PAGE_FIELDS` of each run, packed (marshal keeps
    str, int, float, bool and None exactly; zlib makes it a few bytes a run)."""

    def __init__(self, db_path: str | os.PathLike[str]):
        self.db_path = os.fspath(db_path)
        self.packed: dict[str, bytes] = {}

    def add(self, scenario_id: str, runs: list[dict]) -> None:
        rows = list(map(_page_fields, runs))
        self.packed[scenario_id] = zlib.compress(marshal.dumps(rows), 1)

    def __iter__(self) -> Iterator[tuple[str, list[dict]]]:
        """(scenario id, its runs as dicts of :data:`PAGE_FIELDS`), one scenario at a time."""
        for scenario_id, packed in self.packed.items():
            yield scenario_id, [dict(zip(PAGE_FIELDS, row)) for row in marshal.loads(zlib.decompress(packed))]


class Report(dict):
    """The report dict; ``scenario_runs`` (not part of the dict) holds its runs for the scenario
    pages (:class:`ScenarioRuns`), or None."""

    scenario_runs: ScenarioRuns | None = None


# The worst runs, by this rule: unsafe runs first (dangerous, then unapproved, then anti-procedure,
# then any other forbidden severity), then the scored runs that failed a check by lowest score,
# then the runs not scored (incomplete, invalid scenario, provider error); ties: more disagreements
# with the judge first, then run id. A run that passed every check safely is never among them.
WORST_RULE = (
    "unsafe runs first (dangerous, unapproved, anti-procedure, other forbidden), then failed scored runs "
    "by lowest score, then runs not scored; ties: most disagreements with the judge, then run id"
)
SEVERITY_ORDER = {"dangerous": 0, "unapproved": 1, "anti_procedure": 2}


def failed(run: dict) -> bool:
    """Worth opening: unsafe, not scored, or not every success check passed."""
    return run["unsafe"] or run["status"] != "scored" or run["all_passed"] is not True


def worst_key(run: dict) -> tuple:
    """The sort key of :data:`WORST_RULE` (smallest first)."""
    if run["unsafe"]:
        tier = SEVERITY_ORDER.get(run["safety"], 3)
    else:
        tier = 4 if run["status"] == "scored" else 5
    score = run["scalar"] if run["scalar"] is not None else math.inf
    return (tier, score, -run["disagreements"], run["run_id"])


def _unsafe_key(run: dict) -> tuple:
    """The order unsafe runs are named in: by severity as :data:`WORST_RULE` (dangerous first), then run id."""
    return (SEVERITY_ORDER.get(run["safety"], 3), str(run["safety"]), run.get("run_id", ""))


class _Worst:
    """The ``n`` smallest runs by :func:`worst_key` seen so far (bounded memory, deterministic)."""

    def __init__(self, n: int):
        self.n, self.items = n, []

    def add(self, runs: list[dict]) -> None:
        self.items += runs
        if len(self.items) > 4 * self.n:
            self.items = sorted(self.items, key=worst_key)[: self.n]

    def result(self) -> list[dict]:
        return sorted(self.items, key=worst_key)[: self.n]


def _scales(values: dict[tuple[str, str, str], Counter]) -> dict[tuple[str, str], list[str]]:
    """The labels to show for each (rubric, dimension): every label any judge used, so two judges'
    charts line up; for 0-based integer scales the unused grades in between too (a judge that
    never says 0 should show an empty 0 bar, not a shorter scale)."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (_, rubric, dim), counter in values.items():
        seen[(rubric, dim)].update(counter)
    scales = {}
    for key, labels in seen.items():
        ints = [int(x) for x in labels if x.isdigit()]
        if ints and max(ints) <= 10:
            labels = labels | {str(i) for i in range(max(ints) + 1)}
        scales[key] = sorted(labels, key=_value_sort_key)
    return scales


# What the judge section and the provenance read of an annotation: the rows of
# evalkit.db.read_annotation_rows (every annotation that is not stale, in its order) but for the
# answer and rationale texts, the bulk of a row
ANNOTATION_FIGURES = (
    "annotation_id",
    "run_id",
    "judge_model",
    "rubric_id",
    "rubric_version",
    "rubric_hash",
    "blind",
    "replicate",
    "status",
    "cost_usd",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "cache_key",
)
CALL_FIGURES = ("prompt_tokens", "completion_tokens", "cost_usd", "latency_ms")


def _annotation_rows(db: Database, judge: str | None) -> tuple[list[dict], list[str]]:
    """Every annotation that is not stale (``judge``: that judge's), as dicts of
    :data:`ANNOTATION_FIGURES` and ``call``: the :data:`CALL_FIGURES` of the judge_calls row of its
    cache key (a text), or None; and the ids of every stale annotation, of any judge
    (:func:`evalkit.db.judge.stale_annotation_ids`: told by the same read when it reads them all)."""
    where, args = judge_filter(db, judge, column="a.")
    sql = (
        f"SELECT {', '.join('a.' + c for c in ANNOTATION_FIGURES)}, j.cache_key, "
        f"{', '.join('j.' + c for c in CALL_FIGURES)}, {stale('a.')} "
        f"FROM annotations a LEFT JOIN judge_calls j ON j.cache_key = a.cache_key{where_sql(where)} "
        "ORDER BY a.judge_model, a.rubric_id, a.created_at, a.annotation_id"
    )
    width = len(ANNOTATION_FIGURES)
    rows, stale_ids = [], []
    for row in db.tuples(sql, args):
        if row[-1]:  # stale
            stale_ids.append(row[0])
            continue
        annotation = dict(zip(ANNOTATION_FIGURES, row))
        stored = isinstance(row[width], str)  # a call of this key is stored
        annotation["call"] = dict(zip(CALL_FIGURES, row[width + 1 : -1])) if stored else None
        rows.append(annotation)
    return rows, stale_ids if judge is None else stale_annotation_ids(db)


def _calls(members: list[dict]) -> list[dict]:
    """The provider calls behind ``members`` (annotations in created order), each once, in the order
    they were first used: annotations of identical transcripts share one call (its cache key), which
    was sent and paid for once. A call's figures are its judge_calls row's; without one (the cache
    cleared, an annotation with no key) the first of its annotations'."""
    calls: dict[Any, dict] = {}
    for r in members:
        key = r["cache_key"] if isinstance(r["cache_key"], str) else ("annotation", r["annotation_id"])
        if key not in calls:
            calls[key] = r["call"] or r
    return list(calls.values())


def _primary_value_counts(
    db: Database, judge: str | None, stale_ids: list[str] | None = None
) -> dict[tuple[str, str, str], Counter]:
    """(judge model, rubric, dimension) → value label → how many of the primary values
    :func:`evalkit.db.read_primary_values` yields have it: the same rows (its filter), each distinct
    stored value decoded once (equal cells decode to one label: text and blobs alike are the same
    bytes, and numbers that compare equal, such as 1 and 1.0, have one label)."""
    where, args = primary_values_filter(db, judge, stale_ids)
    cells = Counter(
        tuple(row)
        for row in db.rows(
            f"SELECT judge_model, rubric_id, dimension, value FROM annotation_values{where_sql(where)}", args
        )
    )
    values: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for (judge_model, rubric_id, dimension, value), n in cells.items():  # in the order first read
        values[(judge_model, rubric_id, dimension)][value_label(decode_json(value))] += n
    return values


def _judge_section(db: Database, rows: list[dict], judge: str | None, stale_ids: list[str]) -> dict | None:
    if not rows:
        return None
    values = _primary_value_counts(db, judge, stale_ids)
    scales = _scales(values)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["judge_model"], row["rubric_id"])].append(row)
    models = []
    for (judge_model, rubric_id), members in sorted(groups.items()):
        ok = [r for r in members if r["status"] == "ok"]
        calls = _calls(members)
        latencies = [x for x in (_real(c["latency_ms"]) for c in calls) if x is not None]
        costs = [x for x in (_real(c["cost_usd"]) for c in calls) if x is not None]
        dims = []
        for (jm, rid, dim), counter in sorted(values.items()):
            if (jm, rid) != (judge_model, rubric_id):
                continue
            dims.append(
                {
                    "dimension": dim,
                    "n": sum(counter.values()),
                    "counts": [[label, counter.get(label, 0)] for label in scales[(rid, dim)]],
                }
            )
        models.append(
            {
                "judge_model": judge_model,
                "rubric_id": rubric_id,
                "rubric_versions": sorted({str(r["rubric_version"]) for r in members}),
                "annotations": len(members),
                "ok": len(ok),
                "judge_errors": len(members) - len(ok),
                "primary": sum(1 for r in members if not r["replicate"]),
                "replicates": sum(1 for r in members if r["replicate"]),
                "non_blind": sum(1 for r in members if not r["blind"]),
                "runs": len({r["run_id"] for r in members}),
                "cost_usd_total": sum(costs) if costs else None,
                "cost_usd_per_call": statistics.fmean(costs) if costs else None,
                "calls": len(calls),
                "prompt_tokens": sum(_count(c["prompt_tokens"]) for c in calls),
                "completion_tokens": sum(_count(c["completion_tokens"]) for c in calls),
                **_latency(latencies),
                "dimensions": dims,
            }
        )
    return {"models": models, "annotations": len(rows)}


def _agreement_section(
    db_path: str,
    has_judge: bool,
    has_ratings: bool,
    judge: str | None,
    jury: bool = False,
    share: dict | None = None,
) -> tuple[dict, Counter]:
    """The audit's own dict (evalkit.agreement.audit.build_audit), or why there is none, and the
    disagreement count of every run (:func:`_cut_disagreements`). ``share`` receives what the
    audit read that the report reads too (the file's odd cells, the estimates' inputs)."""
    if not (has_judge or has_ratings):
        return {
            "available": False,
            "reason": "no judge annotations or imported ratings in this database yet",
        }, Counter()
    try:
        from evalkit.agreement.audit import build_audit
    except ImportError as exc:
        return {"available": False, "reason": f"the audit module is not installed ({exc.name})"}, Counter()
    try:
        audit = build_audit(db_path, judge=judge, jury=jury, share=share)  # each read done once
    except (ValueError, OSError) as exc:  # a broken pairings config must not cost the whole report
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {"available": False, "reason": f"the audit failed: {first}", "warning": True}, Counter()
    counts = _cut_disagreements(audit)
    return {"available": True, "audit": _json_copy(audit)}, counts


def _warnings(own: list[str], agreement: dict) -> list[str]:
    """The report's warnings and the audit's (the same odd cells, named once), in order."""
    audit = agreement.get("audit") or {}
    found = own + audit.get("warnings", [])
    from evalkit.agreement.audit import stale_note

    if note := stale_note(audit):  # annotations of runs re-scored since: left out of every judge figure
        found.append(note)
    if agreement.get("warning"):
        found.append(agreement["reason"])
    return list(dict.fromkeys(found))


def _estimates(db_path, judge: str | None, read=None) -> list[dict]:
    """Each judge dimension's rate (or mean) per model corrected with the human labels (`evalkit
    estimate`), so the page never shows a judge's raw rate without what the labels make of it
    (``read``: the audit's readings of the same annotations, when it shared them)."""
    from evalkit.agreement.estimate import build_estimates

    return build_estimates(db_path, judge=judge, by="model", read=read)["estimates"]


def _judged(annotations: list[dict]) -> tuple[set[str], set[tuple[str, str, str]]]:
    """The judge models and the rubrics (id, version, hash) of these annotations, for the provenance."""
    judge_models = {str(row["judge_model"]) for row in annotations}
    rubrics = {(str(row["rubric_id"]), str(row["rubric_version"]), str(row["rubric_hash"])) for row in annotations}
    return judge_models, rubrics


def _provenance(judged: tuple[set, set], human_raters: set[str], scenarios, models, made_at: str) -> dict:
    judge_models, rubrics = judged
    return {
        "evalkit_version": __version__,
        "made_at": made_at,
        "scenarios": sorted(scenarios),
        "agent_models": sorted(models),
        "judge_models": sorted(judge_models),
        "rubrics": [{"id": i, "version": v, "hash": h} for i, v, h in sorted(rubrics)],
        "human_raters": sorted(human_raters),
    }


def provenance_items(p: dict) -> list[tuple[str, str]]:
    """The provenance lines both renderers print (the "made at" line apart: it is the only one
    that changes between two reports of the same database)."""
    rubrics = ", ".join(f"{r['id']} v{r['version']} (sha256 {r['hash']})" for r in p["rubrics"]) or "none"
    return [
        ("evalkit version", p["evalkit_version"]),
        ("scenarios", ", ".join(p["scenarios"]) or "none"),
        ("agent models", ", ".join(p["agent_models"]) or "none"),
        ("judge models", ", ".join(p["judge_models"]) or "none"),
        ("rubrics (id, version, hash)", rubrics),
        ("human raters", ", ".join(p["human_raters"]) or "none"),
    ]


def _comparison_section(agg: dict) -> dict:
    """Paired comparisons (evalkit.aggregate.uncertainty.paired, the code behind ``evalkit compare``):
    one family, every pair of models on every compared metric, one Holm correction. Every
    significance statement of the report comes from it: the pairwise table shows its rows, and each
    model row's ``versus_best`` reads the rows of its pair with the best model on the safe figures
    (``best_model``: safe pass rate, then mean score), as model − best."""
    from evalkit.aggregate.uncertainty.paired import best_model, compare_models, versus

    if len(agg.get("models", [])) < 2:
        return {"available": False, "reason": "fewer than two agent models: nothing to compare"}
    best = best_model(agg)
    if best is None:
        return {"available": False, "reason": "no model has a mean score"}
    family = compare_models(agg)
    for m in agg["models"]:
        m["versus_best"] = (
            None
            if m["model"] == best
            else {
                r["metric"]: {
                    "verdict": r["verdict"],
                    "delta": r["delta"],
                    "p_adjusted": r["p_adjusted"],
                    "reason": r["reason"],
                }
                for r in versus(family, m["model"], best)
            }
        )
    return {"available": True, "best": best, "all_pairs": family}


# --------------------------------------------------------------------------------------------


def scenario_file(scenario_id: str) -> str:
    """The file name of a scenario's page: its id made safe for any file system, and a short hash
    of the id so two ids that read alike stay apart."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", scenario_id)[:48].strip(".-") or "scenario"
    return f"{slug}-{hashlib.sha1(scenario_id.encode('utf-8')).hexdigest()[:8]}.html"


def _scenario_entry(scenario_id: str, runs: list[dict], bad: list[dict]) -> dict:
    """A scenario's line of the summary, from its runs and those of them that :func:`failed`."""
    return {
        "scenario_id": scenario_id,
        "title": next((r["scenario_title"] for r in runs if r["scenario_title"]), None),
        "file": scenario_file(scenario_id),
        "runs": len(runs),
        "models": len({r["model"] for r in runs}),
        "scored": sum(1 for r in runs if r["status"] == "scored"),
        "passed": len(runs) - len(bad),
        "failed": len(bad),
        "unsafe": sum(1 for r in runs if r["unsafe"]),
        "disagreements": sum(r["disagreements"] for r in runs),
    }


def _json_copy(value: Any) -> Any:
    """``value`` as the report holds it: through JSON (keys sorted, any other object as its str)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _cut_disagreements(audit: dict) -> Counter:
    """The disagreement count of every run, then the audit's ranked list cut to the
    :data:`TOP_DISAGREEMENTS` worst (``disagreements_left_out`` says how many more; the counts and
    statistics stay the whole audit's). Done on the audit as built, before its JSON copy, so the
    copy holds only the listed ones; the values read are taken as that copy gives them."""
    items = audit.get("disagreements") or []
    counts = Counter(_json_copy([d.get("run_id") for d in items]))
    if len(items) > TOP_DISAGREEMENTS:
        left_out = _json_copy(audit.get("disagreements_left_out"))
        audit["disagreements"] = items[:TOP_DISAGREEMENTS]
        audit["disagreements_left_out"] = len(items) - TOP_DISAGREEMENTS + int(left_out or 0)
    return counts


def build_report(
    db_path: str | os.PathLike[str],
    *,
    title: str | None = None,
    judge: str | None = None,
    made_at: str | None = None,
    contamination_path: str | os.PathLike[str] | None = None,
    jury: bool = False,
    all_runs: bool = False,
) -> dict:
    """Read ``db_path`` and return the report dict both renderers consume: the summary (headline,
    tables, the audit with its :data:`TOP_DISAGREEMENTS` worst disagreements, the
    :data:`WORST_RUNS` worst runs by :data:`WORST_RULE`, one entry per scenario) and the drill-downs
    of the runs the report explains (:mod:`evalkit.report.drilldowns`). Its size does not grow with
    the runs; every run is listed on its scenario's page (:func:`iter_scenarios`, written by
    :func:`evalkit.report.write_report`).

    Drill-downs: the worst runs and the runs of the listed disagreements (on the main page), and
    on each scenario's page its :data:`DRILL_PER_SCENARIO` worst runs; every run when the database
    holds at most ``drilldowns.ALL_RUNS_UP_TO`` runs or ``all_runs`` is asked for.

    ``jury`` adds the derived ``jury@RUBRIC`` rater to the agreement audit (``evalkit audit --jury``).

    ``judge`` keeps one judge's annotations in the judge and agreement sections (the full model
    string or the part after the provider prefix). Raises :class:`ReportError` (one-line
    message) for a missing or unreadable database, an unknown judge name or a bad
    contamination file. Sections with no data (no scored runs, no judge run, no audit) are present
    with ``available: False`` and a reason, so renderers say so instead of failing.
    """
    from evalkit.aggregate.groups import Aggregator

    try:
        contamination = load_contamination(contamination_path)
    except ConfigError as exc:
        raise ReportError(str(exc)) from None
    try:
        with open_readonly(db_path) as db:
            if judge is not None:  # the full model string or the part after the provider prefix
                judge = resolve_judge(judge, judge_models(db), db.path, imported_judges(db))
            annotations, stale_ids = _annotation_rows(db, judge)
            ratings = read_ratings(db)
            # what the report shows of the annotations, read before the audit so their rows are
            # not held while it runs
            judge_section = _judge_section(db, annotations, judge, stale_ids)
            judged, has_judge = _judged(annotations), bool(annotations)
            del annotations
        share: dict = {}
        agreement, disagreeing = _agreement_section(str(db_path), has_judge, bool(ratings), judge, jury, share)
        with open_readonly(db_path) as db:
            # cells the readers read as missing, and why: as the audit read them, else scanned here
            warnings = share["odd_cells"] if "odd_cells" in share else odd_cells(db)
            agg_state = Aggregator()
            worst, by_status, scenarios, models = _Worst(WORST_RUNS), Counter(), [], set()
            unsafe_by_group: dict[tuple[str, str], dict] = {}
            per_scenario: dict[str, list[dict]] = {}
            everything: list[dict] = []
            pages = ScenarioRuns(db_path)
            for scenario_id, batch in iter_scenarios(db, disagreeing, warnings):
                runs = [r for r, _ in batch]
                pages.add(scenario_id, runs)
                for run, summary in batch:
                    agg_state.add(summary)
                    by_status[run["status"]] += 1
                    models.add(run["model"])
                    if run["unsafe"]:
                        entry = unsafe_by_group.setdefault(
                            (scenario_id, run["model"]), {"n": 0, "by_safety": Counter(), "runs": []}
                        )
                        entry["n"] += 1
                        entry["by_safety"][run["safety"]] += 1
                        entry["runs"] = sorted(
                            [*entry["runs"], {"run_id": run["run_id"], "safety": run["safety"]}], key=_unsafe_key
                        )[:UNSAFE_LISTED]
                bad = [r for r in runs if failed(r)]
                worst.add(bad)
                per_scenario[scenario_id] = sorted(bad, key=worst_key)[:DRILL_PER_SCENARIO]
                scenarios.append(_scenario_entry(scenario_id, runs, bad))
                if all_runs or len(everything) <= ALL_RUNS_UP_TO:  # every run's details: asked for, or few runs
                    everything += runs
            made_at = made_at or made_at_now()
            provenance = _provenance(
                judged,
                {r.rater for r in ratings if r.rater_kind == "human"},
                [s["scenario_id"] for s in scenarios],
                models,
                made_at,
            )
            worst_runs = worst.result()
            commands = read_commands(db, [r["run_id"] for r in worst_runs])
            for run in worst_runs:
                run["commands"] = commands[run["run_id"]]
    except InputError as exc:
        raise ReportError(str(exc)) from None
    # the pages show pass^k, not its bootstrap interval: not computed
    agg = agg_state.result(bootstrap=False) if scenarios else {"groups": [], "models": []}
    agg = json.loads(json.dumps(agg, sort_keys=True, default=str))
    titles = {s["scenario_id"]: s["title"] for s in scenarios if s["title"]}
    for group in agg.get("groups", []):
        group.setdefault("scenario_title", titles.get(group.get("scenario_id")))
    n_runs = sum(by_status.values())
    every_run = all_runs or n_runs <= ALL_RUNS_UP_TO
    drills = _drilldowns(str(db_path), agreement, worst_runs, per_scenario, everything if every_run else [])
    drills["all"] = every_run
    drilled = {d["run_id"] for d in drills["runs"]}
    drills["summarised"] = dict(sorted((Counter(by_status) - Counter(d["status"] for d in drills["runs"])).items()))
    comparison = _comparison_section(agg)
    if judge_section is not None:
        judge_section["estimates"] = _estimates(db_path, judge, share.get("estimate_inputs"))
    report = Report(
        {
            "title": title or "evalkit report",
            "made_at": made_at,
            "counts": {
                "runs": n_runs,
                "scored": by_status.get("scored", 0),
                "by_status": dict(sorted(by_status.items())),
                "unsafe": sum(e["n"] for e in unsafe_by_group.values()),
                "scenarios": len(provenance["scenarios"]),
                "models": len(provenance["agent_models"]),
                "drilled": len(drilled),
            },
            "groups": agg.get("groups", []),
            "models": agg.get("models", []),
            "uncertainty": agg.get("uncertainty"),
            "comparison": comparison,
            "worst_runs": worst_runs,
            "worst_rule": WORST_RULE,
            "scenarios": scenarios,
            "unsafe_by_group": [
                {
                    "scenario_id": sid,
                    "model": model,
                    **entry,
                    "by_safety": dict(
                        sorted(entry["by_safety"].items(), key=lambda kv: _unsafe_key({"safety": kv[0]}))
                    ),
                }
                for (sid, model), entry in sorted(unsafe_by_group.items())
            ],
            "judge": {
                "available": judge_section is not None,
                **(judge_section or {"reason": "no judge has run on this database yet (`evalkit judge`)"}),
            },
            "agreement": agreement,
            "drilldowns": drills,
            # run id -> its disagreements with the judge (the scenario pages' column; runs with none left out)
            "disagreement_counts": {rid: n for rid, n in sorted(disagreeing.items()) if isinstance(rid, str)},
            "provenance": provenance,
            "contamination": contamination,
            "warnings": _warnings(warnings, agreement),
        }
    )
    report.scenario_runs = pages
    return report


def _drilldowns(
    db_path: str,
    agreement: dict,
    worst_runs: list[dict],
    per_scenario: dict[str, list[dict]],
    everything: list[dict],
) -> dict:
    """The drill-downs the report writes: ``runs`` (each with ``scenario_id``, in (scenario, model,
    run id) order) and ``main`` (the run ids the main page explains: the worst runs and the runs of
    the listed disagreements)."""
    listed = [d.get("run_id") for d in (agreement.get("audit") or {}).get("disagreements") or []]
    main = {r["run_id"] for r in worst_runs} | {rid for rid in listed if isinstance(rid, str)}
    chosen = {r["run_id"]: r for r in worst_runs}
    for runs in per_scenario.values():
        chosen.update((r["run_id"], r) for r in runs)
    chosen.update((r["run_id"], r) for r in everything)
    if missing := sorted(main - chosen.keys()):  # the listed disagreements' runs (a run the audit names
        with open_readonly(db_path) as db:  # but the scores do not is left without details)
            for _, batch in iter_scenarios(db, only=missing):
                chosen.update((run["run_id"], run) for run, _ in batch)
    ordered = sorted(chosen.values(), key=lambda r: (r["scenario_id"], r["model"], r["run_id"]))
    data = drilldown_data(db_path, ordered)
    for d, run in zip(data["runs"], ordered):
        d["scenario_id"], d["status"] = run["scenario_id"], run["status"]
    data["main"] = sorted(main & chosen.keys())
    return data
