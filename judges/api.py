"""The Python API behind `evalkit judge` (the CLI is a thin shell over these functions).

    from evalkit.judges.api import judge_cards, judge_db, dry_run
    result = judge_db("evalkit.db", ["openai/gpt-4o-mini"], rubric="procedure_v1", concurrency=8)
    result.summary.as_dict(); result.annotations  # one dict per (run, judge model, replicate)

Choices where the issue is silent (see docs/judge.md):
- Only runs whose status is `scored` are judged; the others are counted in `summary.skipped`.
- An annotation is keyed by (run, judge model, rubric id + version, blind, replicate tag); the
  newest answer for that key replaces the older one, while `judge_calls` keeps every failed call too.
- `--resample F --seed S` draws ceil(F * n) of the n runs this judge already annotated
  (primary, ok), with `random.Random(S)` over the sorted run ids, and stores one replicate per
  (run, seed). The seed is part of the replicate's cache key: the replicate never reuses the
  primary answer, and rerunning the same command resumes instead of calling again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalkit.judges.config import JudgeConfig, load_config
from evalkit.judges.prompt import estimate_tokens, render_messages
from evalkit.judges.protocol import Judge
from evalkit.judges.registry import make_judge
from evalkit.judges.rubrics import Rubric, load_rubric, schema_hash
from evalkit.judges.runner import Summary, WorkItem, run_items, run_sync, serve_from_cache
from evalkit.judges.store import JudgeStore, annotation_id
from evalkit.trajectory.input_files import name_list

JUDGED_STATUSES = ("scored",)


@dataclass
class JudgeResult:
    annotations: list[dict]
    summary: Summary
    rubric: Rubric
    input_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        s = self.summary
        return not (s.failures or s.not_run or s.fatal or s.stopped or self.input_errors)

    def as_dict(self, annotations: bool = True) -> dict:
        """The result as plain data; ``annotations=False`` leaves them out (a printer reads them
        one at a time from ``self.annotations``)."""
        out = {
            "rubric": {"id": self.rubric.id, "version": self.rubric.version},
            "summary": self.summary.as_dict(),
            "input_errors": self.input_errors,
        }
        return {"annotations": list(self.annotations), **out} if annotations else out


@dataclass
class DryRun:
    items: int
    cache_hits: int
    to_send: int
    estimated_prompt_tokens: int
    first_prompt: list[dict] | None
    skipped: dict
    models: list[str]
    batch: dict | None = None  # with --batch: the batch plan and the input cost, live and batch
    unit: str = "runs x models"  # what one item is

    def as_dict(self) -> dict:
        out = dataclasses.asdict(self)
        if self.batch is None:
            del out["batch"]
        return out


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _get(card: Any, name: str) -> Any:
    return card.get(name) if isinstance(card, dict) else getattr(card, name, None)


def mechanical_view(card: Any) -> dict:
    """What --show-mechanical adds to the bundle: the vector, the scalar and the five checks."""
    return {
        "vector": _plain(_get(card, "vector")),
        "scalar": _get(card, "scalar"),
        "checks": _plain(_get(card, "checks")),
    }


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _judges(
    models: Iterable[str],
    config: JudgeConfig,
    api_base: str | None,
    temperature: float | None,
    api_key: str | None,
    store: JudgeStore,
    output_mode: str | None = None,
    max_input_tokens: int | None = None,
) -> list[Judge]:
    """The judges, each starting at the output mode remembered for its (model, api_base)."""
    models = list(dict.fromkeys(name_list(models, "models")))
    if not models:
        raise ValueError("at least one --model is required")
    options: dict[str, Any] = {"config": config, "api_base": api_base, "temperature": temperature}
    if api_key:
        options["api_key"] = api_key
    if output_mode:
        options["output_mode"] = output_mode
    if max_input_tokens:
        options["max_input_tokens"] = max_input_tokens
    judges = [make_judge(m, **options) for m in models]
    remember_modes(judges, store)
    return judges


def remember_modes(judges: list[Judge], store: Any) -> None:
    """Start each judge at the output mode ``store`` remembers for its (model, api_base)."""
    for judge in judges:
        start_from = getattr(judge, "start_from", None)
        if callable(start_from):
            start_from(store.remembered_mode(judge.model, getattr(judge, "api_base", None)))


def _preflight(judges: list[Judge]) -> None:
    for judge in judges:
        check = getattr(judge, "preflight", None)
        if callable(check):
            check()


def build_items(
    cards: Iterable[Any],
    judges: list[Judge],
    rubric: Rubric,
    store: JudgeStore,
    *,
    show_mechanical: bool = False,
    resample: float | None = None,
    seed: int | None = None,
) -> tuple[WorkItems, dict]:
    """One work item per (judged run, judge), in judge order then run order: a lazy iterable
    (:class:`WorkItems`), and the runs not judged by reason (filled as it is read)."""
    items = WorkItems(cards, judges, rubric, store, show_mechanical, resample, seed)
    return items, items.skipped


class WorkItems:
    """The work items of ``build_items``, made as they are read: judge after judge, each over the
    runs in run-id order. Cards that can be read again are read once per judge (the stored cards
    page by page; a list, sorted first); a one-shot iterator judged by one judge is read as it
    comes, in its own order, and is otherwise read into a list first. ``total`` counts the items
    (the progress bar's; None when only reading them would tell)."""

    def __init__(self, cards, judges, rubric, store, show_mechanical, resample, seed):
        if iter(cards) is cards and (len(judges) > 1 or resample is not None):
            cards = list(cards)
        if isinstance(cards, Collection) and not getattr(cards, "sorted_by_run_id", False):
            cards = sorted(cards, key=lambda card: str(_get(card, "run_id")))
        self.cards, self.judges, self.rubric, self.store = cards, judges, rubric, store
        self.show_mechanical, self.resample, self.seed = show_mechanical, resample, seed
        self.skipped: dict[str, int] = {}
        self._counted = False
        self._samples: list[set[str]] | None = None

    def _views(self, count: bool = False):
        """(run_id, bundle_hash, bundle, extra) of each judged card; ``count``: the others counted
        in ``skipped`` (on the first pass that reads every card)."""
        skipped = self.skipped if count else {}
        for card in self.cards:
            status = _get(card, "status")
            bundle = _plain(_get(card, "judge_bundle"))
            if status not in JUDGED_STATUSES:
                skipped[f"status {status}"] = skipped.get(f"status {status}", 0) + 1
                continue
            if not bundle or not _get(card, "bundle_hash"):
                skipped["no judge bundle"] = skipped.get("no judge bundle", 0) + 1
                continue
            extra: dict = {}
            if self.show_mechanical:
                mech = mechanical_view(card)
                bundle = dict(bundle, mechanical_scores=mech)
                extra["mechanical"] = _sha(mech)
            yield str(_get(card, "run_id")), str(_get(card, "bundle_hash")), bundle, extra

    def samples(self) -> list[set[str]]:
        """With --resample: the runs each judge re-judges, ceil(F * n) of the n it already annotated."""
        if self._samples is None:
            runs = [view[0] for view in self._views(count=self._first_pass())]
            self._samples = []
            for judge in self.judges:
                blind = not self.show_mechanical
                judged = set(self.store.judged_runs(judge.model, self.rubric.id, self.rubric.version, blind))
                pool = sorted(run for run in runs if run in judged)
                k = min(len(pool), math.ceil(self.resample * len(pool)))
                self._samples.append(set(random.Random(self.seed).sample(pool, k)))
        return self._samples

    def total(self) -> int | None:
        if self.resample is not None:
            return sum(len(sample) for sample in self.samples())
        judgeable = getattr(self.cards, "judgeable", None)
        if callable(judgeable):
            return judgeable(JUDGED_STATUSES) * len(self.judges)
        if isinstance(self.cards, Collection):
            return sum(1 for _ in self._views()) * len(self.judges)
        return None

    def _first_pass(self) -> bool:
        first, self._counted = not self._counted, True
        return first

    def __iter__(self) -> Iterator[WorkItem]:
        rubric, blind = self.rubric, not self.show_mechanical
        samples = self.samples() if self.resample is not None else None
        tag = "0" if self.resample is None else f"resample:{self.seed}"
        material_for = key_material(self.judges, rubric)
        for position, judge in enumerate(self.judges):
            for run_id, bundle_hash, bundle, extra in self._views(count=position == 0 and self._first_pass()):
                if samples is not None and run_id not in samples[position]:
                    continue
                key_extra = dict(extra)
                if self.resample is not None:
                    key_extra["resample_seed"] = self.seed
                ann_id = annotation_id(
                    run_id=run_id,
                    model=judge.model,
                    rubric_id=rubric.id,
                    rubric_version=rubric.version,
                    blind=blind,
                    replicate_tag=tag,
                )
                yield work_item(
                    material_for, judge, run_id, bundle_hash, bundle, ann_id, tag=tag, blind=blind, extra=key_extra
                )


def work_item(
    material_for, judge, run_id: str, bundle_hash: str, bundle: dict, ann_id: str, *, tag: str, blind: bool, extra
) -> WorkItem:
    """The work item judging ``bundle`` with ``judge``, its cache key from ``material_for`` (:func:`key_material`)."""
    return WorkItem(
        run_id=run_id,
        bundle_hash=bundle_hash,
        bundle=bundle,
        judge=judge,
        key_material=material_for(judge, bundle_hash, blind=blind, extra=extra),
        annotation_id=ann_id,
        replicate_tag=tag,
        blind=blind,
    )


def key_material(judges, rubric: Rubric):
    """What a judge call's cache key is made of, for every work item of these judges and this rubric
    (judge runs and probes alike): the bundle, the rubric, the model and its parameters, the reply
    schema, blindness, extras, the schemas the judge actually sends (its request differs when
    they do) and the rubric's prompt layout. Returns ``material(judge, bundle_hash, blind=..., extra=...)``."""
    schema = schema_hash(rubric)
    sent = {judge: judge.sent_schema_hashes(rubric) or None for judge in judges if hasattr(judge, "sent_schema_hashes")}

    def material(judge, bundle_hash: str, *, blind: bool, extra: dict | None) -> dict:
        return dict(
            bundle_hash=bundle_hash,
            rubric=rubric.identity,
            model=judge.model,
            params=judge.params,
            schema=schema,
            blind=blind,
            extra=extra or None,
            sent_schemas=sent.get(judge),
            prompt_layout=rubric.prompt_layout,
        )

    return material


def _setup(db, rubric, config, config_path, readonly=False):
    cfg = config if isinstance(config, JudgeConfig) else load_config(config_path, config)
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or cfg.default_rubric)
    return cfg, rub, JudgeStore(db, readonly=readonly)


@dataclass(frozen=True)
class Panel:
    """Who judges, and with what: the keyword options every judge entry point takes
    (`ajudge_cards`, `dry_run`, `aprobe_cases`), declared once. ``db`` the database,
    ``rubric`` a rubric id or Rubric (default: the config's), ``config`` a dict of overrides or a
    JudgeConfig, ``config_path`` a judge.toml, ``api_base``/``temperature``/``output_mode``/
    ``max_input_tokens`` for every model, ``api_key`` (prefer the environment; never stored).
    An unknown keyword is a TypeError, as it would be in a signature."""

    db: str = "evalkit.db"
    rubric: str | Rubric | None = None
    api_base: str | None = None
    temperature: float | None = None
    config: JudgeConfig | dict | None = None
    config_path: str | None = None
    api_key: str | None = None
    output_mode: str | None = None
    max_input_tokens: int | None = None

    def open(self, models: Iterable[str], *, readonly: bool = False) -> tuple[JudgeConfig, Rubric, JudgeStore, list]:
        """(config, rubric, store, judges); the caller closes the store."""
        cfg, rub, store = _setup(self.db, self.rubric, self.config, self.config_path, readonly=readonly)
        try:
            judges = _judges(
                models,
                cfg,
                self.api_base,
                self.temperature,
                self.api_key,
                store,
                self.output_mode,
                self.max_input_tokens,
            )
        except BaseException:
            store.close()
            raise
        return cfg, rub, store, judges


def run_options(cfg: JudgeConfig, *, concurrency: int | None, max_cost, refresh: bool, progress) -> dict:
    """The runner's keyword options (``run_items``, ``run_batch``): concurrency defaults to the config's."""
    return {
        "concurrency": concurrency or cfg.concurrency,
        "max_cost": max_cost,
        "refresh": refresh,
        "progress": progress,
    }


def check_resample(resample: float | None, seed: int | None) -> None:
    """The one rule for a drift check (the CLI applies it too): ``resample`` in (0, 1] needs a
    ``seed`` (a sample nobody can draw again checks nothing), and a seed alone means nothing."""
    if resample is not None:
        if not 0.0 < resample <= 1.0:
            raise ValueError(f"--resample must be in (0, 1], got {resample}")
        if seed is None:
            raise ValueError("--resample needs --seed")
    elif seed is not None:
        raise ValueError("--seed is only used with --resample")


async def ajudge_cards(
    cards: Iterable[Any],
    models: Iterable[str],
    *,
    concurrency: int | None = None,
    max_cost: float | None = None,
    refresh: bool = False,
    resample: float | None = None,
    seed: int | None = None,
    show_mechanical: bool = False,
    progress: bool | None = False,
    batch: bool = False,
    batch_status: bool = False,
    **panel: Any,
) -> JudgeResult:
    """`judge_cards` for callers that already run an event loop (e.g. a notebook). ``panel``: the
    options of :class:`Panel` (db, rubric, config, ...). ``batch`` sends the calls through the
    provider's batch API (judges/batch.py); ``batch_status`` polls the stored batches once and
    collects the finished ones, submitting nothing."""
    check_resample(resample, seed)
    cfg, rub, store, judges = Panel(**panel).open(models)
    try:
        _preflight(judges)
        items, skipped = build_items(
            cards, judges, rub, store, show_mechanical=show_mechanical, resample=resample, seed=seed
        )
        options = run_options(cfg, concurrency=concurrency, max_cost=max_cost, refresh=refresh, progress=progress)
        if batch or batch_status:
            from evalkit.judges.batch import run_batch

            annotations, summary = await run_batch(
                items,
                rub,
                store,
                **options,
                summary=Summary(skipped=skipped),
                submit=not batch_status,
                wait=not batch_status,
            )
        else:
            annotations, summary = await run_items(
                items, rub, store, **options, summary=Summary(skipped=skipped), total=items.total
            )
    finally:
        store.close()
        for judge in judges:
            close = getattr(judge, "aclose", None)
            if callable(close):
                await close()
    return JudgeResult(annotations=annotations, summary=summary, rubric=rub)


def judge_cards(cards: Iterable[Any], models: Iterable[str], **options: Any) -> JudgeResult:
    """Judge ScoreCards (objects or dicts with run_id, status, bundle_hash, judge_bundle).

    Options (all keyword): concurrency, max_cost, refresh, resample, seed, show_mechanical,
    progress, batch, batch_status, and those of :class:`Panel` (db, rubric, config, config_path,
    api_base, temperature, api_key, output_mode: auto or a mode of evalkit.judges.output_modes,
    max_input_tokens). See `ajudge_cards`.
    """
    return run_sync(ajudge_cards(cards, models, **options))


def stored_cards(db: str) -> Iterable[Any]:
    """The ScoreCards already in the database in run-id order, read-only and a page at a time as
    they are iterated (evalkit.db.judge.StoredCards; imported lazily)."""
    from evalkit.db.judge import StoredCards

    return StoredCards(db)


def stored_batches(
    db: str, models: Iterable[str] | None = None, rubric: str | Rubric | None = None, config_path: str | None = None
) -> list[dict]:
    """The provider batches stored in the database (of these judge models and this rubric, when
    given), oldest first, without their request lists (read-only)."""
    from evalkit.db import batches

    cfg, rub, store = _setup(db, rubric, None, config_path, readonly=True)
    try:
        names = None
        if models is not None:
            names = {judge.model for judge in _judges(models, cfg, None, None, None, store)}
        rows = batches.submissions(store.database, rubric=rub.identity)
    finally:
        store.close()
    return [
        {k: v for k, v in sub.items() if k != "items"} for sub in rows if names is None or sub["judge_model"] in names
    ]


def judge_db(db: str, models: Iterable[str], **options: Any) -> JudgeResult:
    """``evalkit judge`` without PATHS: the runs stored in ``db`` judged by each of ``models`` (a
    list of model names); ``options`` as :func:`ajudge_cards`. A database that does not exist is a
    DbError (there is nothing to judge: score runs into it first)."""
    import os

    from evalkit.db.connect import DbError

    if not os.path.exists(db):
        raise DbError(str(db), "no such database file: score runs into it first")
    return judge_cards(stored_cards(db), models, db=db, **options)


def dry_run(
    cards: Iterable[Any],
    models: Iterable[str],
    *,
    refresh: bool = False,
    resample: float | None = None,
    seed: int | None = None,
    show_mechanical: bool = False,
    batch: bool = False,
    **options: Any,
) -> DryRun:
    """What a run would send, without sending anything (the database is opened read-only).
    Takes `ajudge_cards`' options: those of :class:`Panel` are used (no key: nothing is sent),
    the rest (concurrency, max_cost, progress, batch_status) mean nothing here."""
    check_resample(resample, seed)
    names = {f.name for f in dataclasses.fields(Panel)} - {"api_key"}
    cfg, rub, store, judges = Panel(**{k: v for k, v in options.items() if k in names}).open(models, readonly=True)
    try:
        items, skipped = build_items(
            cards, judges, rub, store, show_mechanical=show_mechanical, resample=resample, seed=seed
        )
        count, to_send = 0, []
        for item in items:
            count += 1
            if refresh or store.get_ok(item.key) is None:
                to_send.append(item)
        hits = 0 if refresh else count - len(to_send)
    finally:
        store.close()
    first = render_messages(to_send[0].bundle, rub) if to_send else None
    tokens = sum(estimate_tokens(render_messages(item.bundle, rub)) for item in to_send)
    return DryRun(
        items=count,
        cache_hits=hits,
        to_send=len(to_send),
        estimated_prompt_tokens=tokens,
        first_prompt=first,
        skipped=skipped,
        models=[j.model for j in judges],
        batch=batch_plan(to_send, rub, cfg) if batch else None,
    )


def batch_plan(to_send: list[WorkItem], rubric: Rubric, cfg: JudgeConfig) -> dict:
    """What --batch would submit: one request per distinct cache key, the files the limits make,
    and the input cost (estimated prompt tokens, uncached) live and at the batch rate."""
    from evalkit.judges.batch import chunks

    plan: dict = {
        "requests": 0,
        "files": 0,
        "estimated_input_cost_live_usd": 0.0,
        "estimated_input_cost_batch_usd": 0.0,
        "unpriced_models": [],
    }
    for judge in dict.fromkeys(item.judge for item in to_send):
        mine = list({item.key: item for item in to_send if item.judge is judge}.values())
        lines = []
        for item in mine:
            text = json.dumps(render_messages(item.bundle, rubric), ensure_ascii=False)
            lines.append((item.key, text.encode("utf-8")))
        plan["requests"] += len(mine)
        plan["files"] += len(chunks(lines, cfg.batch_max_requests, cfg.batch_max_file_bytes))
        price = getattr(judge, "input_price", None)
        live, cheap = (price(False), price(True)) if callable(price) else (None, None)
        tokens = sum(estimate_tokens(render_messages(item.bundle, rubric)) for item in mine)
        if live is None or cheap is None:
            plan["unpriced_models"].append(judge.model)
        else:
            plan["estimated_input_cost_live_usd"] += tokens * live
            plan["estimated_input_cost_batch_usd"] += tokens * cheap
    for key in ("estimated_input_cost_live_usd", "estimated_input_cost_batch_usd"):
        plan[key] = round(plan[key], 8)
    return plan


__all__ = [
    "JudgeResult",
    "DryRun",
    "Panel",
    "ajudge_cards",
    "judge_cards",
    "judge_db",
    "dry_run",
    "build_items",
    "stored_cards",
    "mechanical_view",
    "serve_from_cache",
]
