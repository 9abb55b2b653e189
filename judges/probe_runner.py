"""Judging probe cases: the same judges, runner and cache as `evalkit judge`, answers stored apart.

A probe case is any object with ``probe``, ``run_id``, ``bundle`` and ``bundle_hash`` (built by
`evalkit.probes`; this module does not import it). Two passes, in order:

1. the *originals*: the sampled runs are judged exactly as `evalkit judge` would (blind, primary
   answer, the same cache keys) — a run judged before is a cache hit — so every probe answer has
   the answer it is compared with;
2. the *counterfactuals*: one work item per (case, judge), whose cache key is the judge's key for
   the counterfactual bundle (its own hash) and whose annotation goes to ``probe_annotations``
   (`evalkit.db.probes.ProbeTables`), keyed by (run, judge, rubric id + version, probe).

`max_cost` bounds both passes together. A rerun sends no request: both passes are served from
the cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalkit.db.probes import ProbeTables
from evalkit.judges.api import (
    Panel,
    _preflight,
    build_items,
    key_material,
    remember_modes,
    run_options,
    work_item,
)
from evalkit.judges.rubrics import Rubric
from evalkit.judges.runner import Summary, WorkItem, run_items, run_sync
from evalkit.judges.store import annotation_id


@dataclass
class ProbeJudging:
    rubric: Rubric
    models: list[str]
    originals: Summary
    probes: Summary
    answers: list[dict] = field(default_factory=list)  # one per (case, judge), in case order

    @property
    def ok(self) -> bool:
        return not any(s.failures or s.not_run or s.fatal or s.stopped for s in (self.originals, self.probes))


def probe_annotation_id(*, run_id: str, probe: str, model: str, rubric: Rubric) -> str:
    return annotation_id(
        run_id=run_id,
        model=model,
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        blind=True,
        replicate_tag=f"probe:{probe}",
    )


def probe_items(cases: Iterable[Any], judges: list, rubric: Rubric, store: ProbeTables) -> list[WorkItem]:
    """One work item per (case, judge), judge-major like `build_items`; each annotation id is
    registered with ``store`` under its probe."""
    material_for = key_material(judges, rubric)
    items = []
    cases = list(cases)
    for judge in judges:
        for case in cases:
            ann_id = probe_annotation_id(run_id=case.run_id, probe=case.probe, model=judge.model, rubric=rubric)
            store.expect(ann_id, case.probe)
            items.append(
                work_item(
                    material_for,
                    judge,
                    case.run_id,
                    case.bundle_hash,
                    case.bundle,
                    ann_id,
                    tag="0",
                    blind=True,
                    extra=None,
                )
            )
    return items


async def aprobe_cases(
    cards: Iterable[Any],
    cases: Iterable[Any],
    models: Iterable[str],
    *,
    db: str,
    concurrency: int | None = None,
    max_cost: float | None = None,
    refresh: bool = False,
    progress: bool | None = False,
    **panel: Any,
) -> ProbeJudging:
    """Judge the original ``cards`` and the probe ``cases`` (see the module docstring); ``panel``:
    the other options of evalkit.judges.api.Panel (rubric, config, api_base, ...)."""
    cases = list(cases)
    cfg, rub, store, judges = Panel(db=db, **panel).open(models)
    try:
        _preflight(judges)
        items, skipped = build_items(cards, judges, rub, store)
        options = run_options(cfg, concurrency=concurrency, max_cost=max_cost, refresh=refresh, progress=progress)
        _, originals = await run_items(items, rub, store, **options, summary=Summary(skipped=skipped))
    finally:
        store.close()
    left = None if max_cost is None else max(0.0, max_cost - originals.cost_usd)
    probe_store = ProbeTables(db)
    try:
        remember_modes(judges, probe_store)  # the output mode the first pass settled on
        if originals.fatal or originals.stopped:
            answers, probes = (
                [],
                Summary(
                    items=len(cases) * len(judges),
                    not_run=len(cases) * len(judges),
                    stopped=originals.fatal or originals.stopped,
                ),
            )
        else:
            items = probe_items(cases, judges, rub, probe_store)
            results, probes = await run_items(items, rub, probe_store, **dict(options, max_cost=left))
            probe_of = {id(item): case.probe for item, case in zip(items, cases * len(judges))}
            answers = [{"probe": probe_of[id(item)], **result} for item, result in zip(items, results)]
    finally:
        probe_store.close()
    return ProbeJudging(
        rubric=rub, models=[j.model for j in judges], originals=originals, probes=probes, answers=answers
    )


def probe_cases(cards: Iterable[Any], cases: Iterable[Any], models: Iterable[str], **options: Any) -> ProbeJudging:
    """`aprobe_cases` from synchronous code."""
    return run_sync(aprobe_cases(cards, cases, models, **options))


__all__ = ["ProbeJudging", "aprobe_cases", "probe_annotation_id", "probe_cases", "probe_items"]
