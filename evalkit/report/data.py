"""Assemble the report: one plain dict, read from the evalkit SQLite database.

The dict is the single source both renderers (:mod:`evalkit.report.html`,
:mod:`evalkit.report.markdown`) draw from, so the HTML page and the markdown summary always say
the same thing. It holds only JSON-compatible values; lists are sorted, so the same database gives
the same dict (the one exception is ``made_at``, which the caller may pin).

Choices where the issue is silent:

- The database is opened read-only (``mode=ro``): a report never creates, migrates or writes
  anything, and pointing it at a missing file is an error rather than a new empty database.
- Scores come from the stored ScoreCards (``scorecards.card``) through :func:`evalkit.aggregate.groups.aggregate`,
  the same code ``evalkit score --aggregate`` uses, so the report cannot disagree with it.
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
import json
import os
import statistics
from collections import Counter, defaultdict
from typing import Any

from evalkit import __version__
from evalkit.aggregate.per_call import median_and_mean_after_first
from evalkit.config.files import ConfigError
from evalkit.db import (
    Database,
    judge_models,
    open_readonly,
    read_annotation_rows,
    read_commands,
    read_primary_values,
    read_ratings,
    read_runs,
    read_scorecards,
    resolve_judge,
)
from evalkit.db.cells import odd_cells
from evalkit.errors import EvalkitError, InputError
from evalkit.report.contamination import load_contamination
from evalkit.report.drilldowns import drilldown_data


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
    """Numbers first in numeric order, then words alphabetically ("n/a" after 0..3)."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1, 0.0, label)


def _latency(values: list[float]) -> dict[str, float | None]:
    median, mean_after_first = median_and_mean_after_first(values)
    return {"latency_median_ms": median, "latency_mean_excl_first_ms": mean_after_first}


# --------------------------------------------------------------------------------------------
# sections


def _rank(runs: list[dict]) -> None:
    """Per-scenario competition ranks by scalar; unsafe and unscored runs get none."""
    by_scenario: dict[str, list[dict]] = defaultdict(list)
    for run in runs:
        run["rank"] = None
        if run["status"] == "scored" and not run["unsafe"] and run["scalar"] is not None:
            by_scenario[run["scenario_id"]].append(run)
    for members in by_scenario.values():
        members.sort(key=lambda r: (-r["scalar"], r["run_id"]))
        for i, run in enumerate(members):
            if i and members[i - 1]["scalar"] == run["scalar"]:
                run["rank"] = members[i - 1]["rank"]
            else:
                run["rank"] = i + 1


def _safety(vector: dict, commands: list[dict]) -> str | None:
    """The run's worst forbidden command: ``dangerous``, ``unapproved`` (a gated action taken without
    its approval), ``anti_procedure``, another severity as named, or None for a safe run."""
    forbidden = [c for c in commands if c.get("class") == "forbidden"]
    if vector.get("safety_dangerous") or any(c.get("severity") == "dangerous" for c in forbidden):
        return "dangerous"
    if any(c.get("subtype") == "unapproved" for c in forbidden):
        return "unapproved"
    if vector.get("safety_anti_procedure") or any(c.get("severity") == "anti_procedure" for c in forbidden):
        return "anti_procedure"
    return str(forbidden[0].get("severity") or "forbidden") if forbidden else None


def _runs_section(cards: list[Any], info: dict[str, dict], commands: dict[str, list[dict]]) -> list[dict]:
    runs = []
    for card in cards:
        d = card.model_dump(mode="json")
        vector = d.get("vector") or {}
        extra = info.get(d["run_id"], {})
        safety = _safety(vector, commands.get(d["run_id"], []))
        runs.append(
            {
                "run_id": d["run_id"],
                "scenario_id": d["scenario_id"],
                "scenario_title": extra.get("scenario_title"),
                "model": d["model"],
                "path": d.get("path") or extra.get("path"),
                "status": d["status"],
                "final_reason": extra.get("final_reason"),
                "scalar": d.get("scalar"),
                "coverage": vector.get("coverage"),
                "order": vector.get("order"),
                "end_state": vector.get("end_state"),
                "all_passed": vector.get("all_passed"),
                "safety_dangerous": vector.get("safety_dangerous") or 0,
                "safety_anti_procedure": vector.get("safety_anti_procedure") or 0,
                "extraneous": vector.get("extraneous") or 0,
                "unsafe": safety is not None,
                "safety": safety,
                "bundle_hash": d.get("bundle_hash"),
                "commands": commands.get(d["run_id"], []),
            }
        )
    runs.sort(key=lambda r: (r["scenario_id"], r["model"], r["run_id"]))
    _rank(runs)
    return runs


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


def _judge_section(db: Database, rows: list[dict], judge: str | None) -> dict | None:
    if not rows:
        return None
    values: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for judge_model, rubric_id, dimension, value in read_primary_values(db, judge):
        values[(judge_model, rubric_id, dimension)][value_label(value)] += 1
    scales = _scales(values)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["judge_model"], row["rubric_id"])].append(row)
    models = []
    for (judge_model, rubric_id), members in sorted(groups.items()):
        ok = [r for r in members if r["status"] == "ok"]
        latencies = [float(r["latency_ms"]) for r in members if r["latency_ms"] is not None]
        costs = [float(r["cost_usd"]) for r in members if r["cost_usd"] is not None]
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
                "prompt_tokens": sum(int(r["prompt_tokens"] or 0) for r in members),
                "completion_tokens": sum(int(r["completion_tokens"] or 0) for r in members),
                **_latency(latencies),
                "dimensions": dims,
            }
        )
    return {"models": models, "annotations": len(rows)}


def _agreement_section(db_path: str, has_judge: bool, has_ratings: bool, judge: str | None, jury: bool = False) -> dict:
    """The audit's own dict (evalkit.agreement.audit.build_audit), or why there is none."""
    if not (has_judge or has_ratings):
        return {"available": False, "reason": "no judge annotations or imported ratings in this database yet"}
    try:
        from evalkit.agreement.audit import build_audit
    except ImportError as exc:
        return {"available": False, "reason": f"the audit module is not installed ({exc.name})"}
    try:
        audit = build_audit(db_path, judge=judge, jury=jury)
    except (ValueError, OSError) as exc:  # a broken pairings config must not cost the whole report
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {"available": False, "reason": f"the audit failed: {first}", "warning": True}
    return {"available": True, "audit": json.loads(json.dumps(audit, sort_keys=True, default=str))}


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


def _provenance(annotations: list[dict], human_raters: set[str], runs: list[dict], made_at: str) -> dict:
    judge_models = {str(row["judge_model"]) for row in annotations}
    rubrics = {(str(row["rubric_id"]), str(row["rubric_version"]), str(row["rubric_hash"])) for row in annotations}
    return {
        "evalkit_version": __version__,
        "made_at": made_at,
        "scenarios": sorted({r["scenario_id"] for r in runs}),
        "agent_models": sorted({r["model"] for r in runs}),
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
    """Read ``db_path`` and return the report dict both renderers consume.

    ``all_runs`` gives every run a drill-down (:mod:`evalkit.report.drilldowns`; by default every
    run of a small database, else the failed, unsafe and disagreed-on ones).

    ``jury`` adds the derived ``jury@RUBRIC`` rater to the agreement audit (``evalkit audit --jury``).

    ``judge`` keeps one judge's annotations in the judge and agreement sections (the full model
    string or the part after the provider prefix). Raises :class:`ReportError` (one-line
    message) for a missing or unreadable database, an unknown judge name or a bad
    contamination file. Sections with no data (no scored runs, no judge run, no audit) are present
    with ``available: False`` and a reason, so renderers say so instead of failing.
    """
    from evalkit.aggregate.groups import aggregate

    try:
        contamination = load_contamination(contamination_path)
    except ConfigError as exc:
        raise ReportError(str(exc)) from None
    try:
        with open_readonly(db_path) as db:
            warnings = odd_cells(db)  # cells the readers below read as missing, and why
            # the stored card omits the judge bundle (it lives in `bundles`); the report needs none
            cards = list(read_scorecards(db, with_bundle=False, skipped=warnings))
            runs = _runs_section(cards, read_runs(db), read_commands(db))
            agg = aggregate(cards) if cards else {"groups": [], "models": []}
            agg = json.loads(json.dumps(agg, sort_keys=True, default=str))
            if judge is not None:  # the full model string or the part after the provider prefix
                judge = resolve_judge(judge, judge_models(db), db.path)
            annotations = read_annotation_rows(db, judge)
            judge_section = _judge_section(db, annotations, judge)
            ratings = read_ratings(db)
            made_at = made_at or made_at_now()
            provenance = _provenance(annotations, {r.rater for r in ratings if r.rater_kind == "human"}, runs, made_at)
        agreement = _agreement_section(str(db_path), bool(annotations), bool(ratings), judge, jury)
    except InputError as exc:
        raise ReportError(str(exc)) from None
    titles = {r["scenario_id"]: r["scenario_title"] for r in runs if r.get("scenario_title")}
    for group in agg.get("groups", []):
        group.setdefault("scenario_title", titles.get(group.get("scenario_id")))
    unsafe = [r for r in runs if r["unsafe"]]
    comparison = _comparison_section(agg)
    return {
        "title": title or "evalkit report",
        "made_at": made_at,
        "counts": {
            "runs": len(runs),
            "scored": sum(1 for r in runs if r["status"] == "scored"),
            "by_status": dict(sorted(Counter(r["status"] for r in runs).items())),
            "unsafe": len(unsafe),
            "scenarios": len(provenance["scenarios"]),
            "models": len(provenance["agent_models"]),
        },
        "groups": agg.get("groups", []),
        "models": agg.get("models", []),
        "uncertainty": agg.get("uncertainty"),
        "comparison": comparison,
        "runs": runs,
        "unsafe_runs": [r["run_id"] for r in unsafe],
        "judge": {
            "available": judge_section is not None,
            **(judge_section or {"reason": "no judge has run on this database yet (`evalkit judge`)"}),
        },
        "agreement": agreement,
        "drilldowns": drilldown_data(str(db_path), runs, agreement, all_runs),
        "provenance": provenance,
        "contamination": contamination,
        "warnings": _warnings(warnings, agreement),
    }
