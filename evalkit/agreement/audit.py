"""The judge audit: one read-only pass over a database, returned as a plain dict.

``build_audit(...)`` is the API behind ``evalkit audit``; its JSON (``--format json``) is a stable
contract described in docs/audit.md; :func:`build_audit_with_pairs` returns the compared pairs too
(``--pairs-out``). The audit never writes: the database is opened
read-only.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from evalkit.aggregate.per_call import median_and_mean_after_first
from evalkit.agreement import drift as drift_mod
from evalkit.agreement import human_first, judge_vs_mechanical, length_bias, pairwise_bias, raters
from evalkit.agreement import jury as jury_mod
from evalkit.agreement.adjudication import adjudication_entries
from evalkit.agreement.pairings_config import AuditConfig, describe, load_audit_config
from evalkit.agreement.probe_stats import failed_run_ids, probe_entries
from evalkit.agreement.ratings import collect_ratings
from evalkit.agreement.self_judging import same_model
from evalkit.db import (
    JudgeColumns,
    imported_judges,
    judge_models,
    open_readonly,
    read_call_costs,
    read_cards,
    read_judge_columns,
    read_probe_annotations,
    read_ratings,
    resolve_judge,
)
from evalkit.db.cells import odd_cells_by_table, odd_lines, plain_tables
from evalkit.db.connect import Beside, now, paused_gc
from evalkit.db.judge import read_bundle_hashes
from evalkit.db.pairwise import read_bundle_sizes, read_judged_lengths, read_pair_verdicts, read_paired_runs
from evalkit.db.reviews import read_adjudications, read_review_ratings
from evalkit.db.schema import TABLES

SCHEMA = "evalkit.audit/1"
PROBE_SIGNAL = "vector.all_passed"  # what failed_run_ids reads of a card
SLICE_KINDS = judge_vs_mechanical.SLICE_KINDS
EXCLUSION_KEYS = ("non_blind", "no_scorecard", "excluded_status", "unmapped_judge", "unmapped_mechanical")


def build_audit(db_path: str | Path, **options: Any) -> dict[str, Any]:
    """The audit dict alone (the compared pairs are never listed); ``options`` as
    :func:`build_audit_with_pairs`."""
    with paused_gc():
        return _audit(db_path, False, **options)[0]


def build_audit_with_pairs(db_path: str | Path, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Audit the judge annotations in ``db_path`` against the mechanical scores and other raters:
    the audit dict (docs/audit.md) and the compared pairs (the rows of ``--pairs-out``).

    ``judge``/``rubric`` restrict the judge annotations read (imported ratings are kept);
    ``judge`` is the full model string or the part after the provider prefix, and an unknown
    name raises ``evalkit.db.JudgeNotStored`` (listing the judges present);
    ``by`` names the one slice kind to break pairings down by (scenario, model, judge, rubric;
    None = all four); ``config`` is an AuditConfig, a path to a config file, or None for the
    documented lookup; ``seed``/``n_resamples`` drive the bootstrap intervals; ``jury`` adds the
    derived ``jury@RUBRIC`` rater (:mod:`evalkit.agreement.jury`) to pairings, raters and Alt-Test;
    ``top`` lists only the N worst disagreements (None: all; ``disagreements_left_out`` counts
    the rest, the counts and statistics stay the whole audit's).
    """
    with paused_gc():  # millions of acyclic tuples: a full collection would walk them all again
        return _audit(db_path, True, **options)


def _audit(
    db_path: str | Path,
    with_pairs: bool,
    judge: str | None = None,
    rubric: str | None = None,
    by: str | None = None,
    config: AuditConfig | str | Path | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    jury: bool = False,
    top: int | None = None,
    odd: list[str] | None = None,
    share: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The audit and, ``with_pairs``, the compared pairs (else an empty list); see
    :func:`build_audit_with_pairs`. The pairs are let go as soon as the sections that read them
    are done (at 10^5 runs they are 10^6 rows). ``odd``: the file's odd cells
    (:func:`~evalkit.db.cells.odd_cells`) when the caller has read them already (the report).
    ``share``: a dict that receives what :func:`evalkit.agreement.estimate.build_estimates` reads
    of the same filters (``estimate_inputs``), so the report reads the annotations once; not with
    ``jury``, whose derived rater the estimates do not count; and the file's odd cells
    (``odd_cells``, as ``odd`` or as read here, where the judge-value read spares the scan of the
    table it has checked), so the report does not scan the file for them again."""
    if by is not None and by not in SLICE_KINDS:
        raise ValueError(f"by must be one of {', '.join(SLICE_KINDS)}, got {by!r}")
    if n_resamples < 0:
        raise ValueError("n_resamples must be >= 0")
    cfg = config if isinstance(config, AuditConfig) else load_audit_config(config)
    kinds = SLICE_KINDS if by is None else (by,)
    with open_readonly(db_path) as db, Beside(db) as side:
        pair_verdicts = read_pair_verdicts(db)
        if judge is not None:  # "gpt-x" and "openai/gpt-x" give the same audit, naming the stored judge
            pair_judges = {pairwise_bias.judge_model_of(v.rater) for v in pair_verdicts if v.rater_kind == "judge"}
            judge = resolve_judge(judge, {*judge_models(db), *pair_judges}, db.path, imported_judges(db))
        # What the readers read as missing, and why: every table but the values, which the judge-value
        # read checks itself; a table without an odd cell is read from the file, not through its view.
        # Each table's scan returns no row but an odd one: they run beside this thread (the one the
        # values' read depends on first), then the bundles' one-row length read, while this thread
        # reads the values; each result is taken, and each error met, where the reads one after the
        # other would meet it.
        order = ["annotations", *(t for t in TABLES if t not in ("annotations", "annotation_values"))]
        scans = (
            {t: side.submit(odd_cells_by_table, [o for o in TABLES if o != t]) for t in order} if odd is None else {}
        )
        sizes = side.submit(read_bundle_sizes)
        hashes = now(read_bundle_hashes, db)  # each run's current bundle: the values' and the lengths' read

        def read_values(hashes: Future[dict[str, str]]) -> JudgeColumns:
            plain = set() if odd is not None else plain_tables(db, scans["annotations"].result(), ("annotations",))
            return read_judge_columns(
                db, judge=judge, rubric=rubric, bundles=hashes.result(), plain="annotations" in plain
            )

        values_read = now(read_values, hashes)  # no stale answer among them
        odd_by_table: dict[str, list[str]] | None = None if odd is not None else {}
        for name in TABLES:
            if name in scans:
                odd_by_table |= scans[name].result()
        plain = set() if odd_by_table is None else plain_tables(db, odd_by_table, ("annotations", "judge_calls"))
        values, bundles = values_read.result(), hashes.result()
        del values_read, hashes
        if odd_by_table is None:
            warnings = list(odd)
        else:
            if not values.values_clean:
                odd_by_table |= odd_cells_by_table(db, [t for t in TABLES if t != "annotation_values"])
            warnings = odd_lines(odd_by_table)
        if share is not None:
            share["odd_cells"] = list(warnings)
        # each card keeps only the signals a pairing or the probes read (a card is mostly commands)
        signals = {PROBE_SIGNAL} | {s for p in cfg.pairings for case in p.mechanical_cases for s, _ in case.when}
        cards = list(read_cards(db, warnings, signals=signals))
        stale = values.stale
        stored = read_ratings(db)
        # human ratings given in evalkit view count like imported ones (blind ones only)
        reviewed, non_blind_reviewed = read_review_ratings(db)
        adjudicated = read_adjudications(db)
        cost_source, calls = read_call_costs(db, judge=judge, rubric=rubric, plain=plain)
        costs = judge_costs(calls, cost_source)  # worked out now, so that the 10^5 calls are let go
        del calls
        probe_answers = read_probe_annotations(db, judge=judge, rubric=rubric)
        # the judge and rubric filters keep that judge's verdicts and every human or gold reference
        pair_verdicts = [v for v in pair_verdicts if pairwise_bias.kept(v, judge, rubric)]
        paired_runs = read_paired_runs(db) if pair_verdicts else {}
        # (without the one-row read, for whatever reason, the lengths are read here row by row)
        lengths = read_judged_lengths(db, bundles, None if sizes.exception() else sizes.result()) if len(values) else {}
        del sizes

    n_cards, statuses, failed = len(cards), status_counts(cards), failed_run_ids(cards)
    # the length bias reads the values, the lengths and the outcomes alone: done first, so that the
    # lengths and outcomes are let go before the pairs are made
    lengths_bias = length_bias.analyse(values, lengths, _outcomes(cards) if lengths else {}, cfg.ci, bundles)
    del lengths, bundles
    active = cfg.pairings_for(rubric)
    sub = dataclasses.replace(cfg, pairings=active)
    # The jury is a rater like any judge, but not an annotation: counts and drift see only judges.
    rated = JudgeColumns.of([*values, *jury_mod.jury_values(values, sub)]) if jury else values
    sets = judge_vs_mechanical.build_pairs(cards, rated, sub)
    bootstrap = {"n_resamples": n_resamples, "seed": seed} if n_resamples > 0 else None

    # no name outlives the comprehension: the pairs go with ``sets`` (a pool of them held by one
    # pairing's list would keep every other pairing's memory too)
    pairing_entries = [pairing_entry(ps, sub, kinds, bootstrap) for ps in sets]

    n_disagreements = judge_vs_mechanical.count_disagreements(sets)
    disagreements = judge_vs_mechanical.disagreements(sets, top)  # records for the listed ones only
    adjudications = adjudication_entries(
        adjudicated, judge_vs_mechanical.disagreeing_runs(sets), [p.name for p in active]
    )
    pair_rows = judge_vs_mechanical.pair_rows(sets) if with_pairs else []
    groups_of = {c.run_id: (c.model, c.scenario_id) for c in cards} if share is not None and not jury else None
    del sets, cards  # the failed runs are all the probes need of the cards
    # what reads the judge values alone
    annotation_counts = {
        "annotations": values.distinct_annotations(),
        "non_blind_annotations": values.distinct_annotations(~values.blind),
        "replicate_annotations": values.distinct_annotations(values.blind & (values.replicate != 0)),
    }
    drift = drift_mod.analyse(values, sub)
    probes = probe_entries(failed, values, probe_answers, bootstrap=dict(bootstrap, ci=cfg.ci) if bootstrap else None)
    warnings = warnings + _raters_by_case(stored + reviewed)
    # the raters and the human-agreement sections share the ratings
    ratings = collect_ratings(stored + reviewed, rated)
    del values, rated
    if groups_of is not None:
        share["estimate_inputs"] = (groups_of, ratings)
    rater_entries, skipped = raters.analyse(ratings, sub)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "filters": {"judge": judge, "rubric": rubric, "by": by, "jury": jury},
        "config": {
            "path": cfg.path,
            "escalation_threshold": cfg.escalation_threshold,
            "ece_bins": cfg.ece_bins,
            "epsilon": cfg.epsilon,
            "q": cfg.q,
            "min_humans": cfg.min_humans,
        },
        "bootstrap": {"n_resamples": n_resamples, "seed": seed, "ci": cfg.ci},
        "counts": {
            "scorecards": n_cards,
            "scorecard_statuses": statuses,
            **annotation_counts,
            "imported_ratings": len(stored),
            "review_ratings": len(reviewed),
            "non_blind_review_ratings": non_blind_reviewed,
            "disagreements": n_disagreements,  # all of them, however many a list shows
        },
        # answers to a transcript the run no longer has (re-scored since it was judged): left out
        "stale": {"annotations": sum(stale.values()), "run_ids": list(stale)},
        "pairings": pairing_entries,
        "disagreements": disagreements,
        "disagreements_left_out": n_disagreements - len(disagreements),  # how many `--top` cut from the list
        "adjudications": adjudications,
        "raters": rater_entries,
        # human with human first, then each judge beside them (the Alt-Test asks if it can replace one)
        "human_agreement": human_first.analyse(ratings, sub, dict(bootstrap, ci=cfg.ci) if bootstrap else None),
        "raters_skipped": skipped,
        "drift": drift,
        "judge_costs": costs,
        # answers to counterfactual runs (evalkit probe): read here only, never paired or rated
        "probes": probes,
        # pairwise judges (evalkit judge --pairwise, imported pair rows): position and length bias
        "pairwise": pairwise_bias.analyse(
            pair_verdicts, paired_runs, dict(bootstrap, ci=cfg.ci) if bootstrap else None
        ),
        # pointwise judges: the score's slope on the run's length, the outcome held equal
        "length_bias": lengths_bias,
        "warnings": warnings,
    }
    return report, pair_rows


def _raters_by_case(ratings: list[Any]) -> list[str]:
    """A line for each set of human raters whose names differ only in case or surrounding spaces
    ("Ann" and "ann"): the audit counts them as raters apart, each agreeing with the other."""
    spellings: dict[str, set[str]] = {}
    for r in ratings:
        if r.rater_kind == "human":
            spellings.setdefault(r.rater.strip().casefold(), set()).add(r.rater)
    return [
        f"human raters {' and '.join(json.dumps(n) for n in sorted(names))} differ only in case or spacing: the "
        "audit counts them as raters apart; if they are one person, give one name (evalkit view --reviewer, "
        "or the rater column of an imported file)"
        for _, names in sorted(spellings.items())
        if len(names) > 1
    ]


def pairing_entry(
    ps: Any, config: AuditConfig, kinds: tuple[str, ...], bootstrap: dict[str, Any] | None
) -> dict[str, Any]:
    """A pairing's entry of the audit: its mapping, exclusions, statistics, slices and self-judging."""
    p = ps.pairing
    entry: dict[str, Any] = {
        "pairing": p.name,
        "rubric": p.rubric,
        "judge_dimension": p.judge_dimension,
        "level": p.level,
        "scale": list(p.scale),
        "lenient_rank": p.lenient_rank,
        "mapping": describe(p),
        "excluded": {k: ps.counts.get(k, 0) for k in EXCLUSION_KEYS},
    }
    entry |= judge_vs_mechanical.pairing_stats(p, ps.pairs, config, bootstrap=bootstrap)
    entry["slices"] = judge_vs_mechanical.slice_stats(p, ps.pairs, config, kinds)
    entry["self_judging"] = self_judging(p, ps.pairs, config)
    return entry


def _outcomes(cards: list[Any]) -> dict[str, bool]:
    """run_id → the mechanical outcome (``vector.all_passed``) of each card that has one."""
    out = {}
    for c in cards:
        passed = (c.card.get("vector") or {}).get("all_passed") if isinstance(c.card, dict) else None
        if isinstance(passed, bool):
            out[c.run_id] = passed
    return out


STALE_NAMED = 10  # run ids a stale note lists before "and N more"
STALE_NAMES_CHARS = 160  # ... within this many characters, so the note stays one short line


def warning_lines(audit: dict[str, Any]) -> list[str]:
    """The audit's warnings for stderr: its stale annotations first, then each odd value."""
    note = stale_note(audit)
    return [f"warning: {line}" for line in ([note] if note else []) + list(audit["warnings"])]


def stale_note(audit: dict[str, Any]) -> str | None:
    """One line on the audit's stale annotations (None when there are none): how many, which runs,
    why they were left out and what refreshes them."""
    stale = audit.get("stale") or {}
    n, runs = stale.get("annotations") or 0, list(stale.get("run_ids") or [])
    if not n:
        return None
    shown: list[str] = []
    for run in runs[:STALE_NAMED]:  # as many ids as keep the line short (ids can be long)
        if shown and sum(len(r) + 2 for r in shown) + len(run) > STALE_NAMES_CHARS:
            break
        shown.append(run)
    rest = len(runs) - len(shown)
    named = ", ".join(shown) + (f" and {rest} more" if rest else "")
    return (
        f"{n} stale annotation{'s' if n != 1 else ''} ({'run' if len(runs) == 1 else 'runs'} {named}) excluded: "
        "re-scored since judged; run `evalkit judge` to refresh"
    )


def self_judging(p: Any, pairs: list[Any], config: AuditConfig) -> dict[str, Any]:
    """The pairs whose judge is the judged agent's own model (evalkit.agreement.self_judging), and the
    pairing's agreement without them (the pairing's own statistics are the "with")."""
    models = set(judge_vs_mechanical.judge_and_agent_models(pairs))  # few: each pair of names checked once
    mine = {m for m in models if same_model(*m)}
    own = [x for x in pairs if (x.judge_model, x.model) in mine] if mine else []
    return {
        "pairs": len(own),
        "judges": sorted({x.judge_model for x in own}),
        "without": judge_vs_mechanical.pairing_stats(
            p, [x for x in pairs if (x.judge_model, x.model) not in mine], config
        )
        if own
        else None,
    }


def judge_costs(models: list[Any], source: str) -> list[dict[str, Any]]:
    """Per judge model (:class:`~evalkit.db.judge.CallCosts`, in model order): median cost and
    latency per call, and the mean excluding the first call (a mean over a batch is dominated by
    the cold first call). ``source`` names the table read (``judge_calls`` when present: every
    call, failed ones too; else ``annotations``)."""
    out = []
    for calls in models:
        entry: dict[str, Any] = {"judge_model": calls.judge_model, "source": source, "n_calls": len(calls.cost_usd)}
        for column, name, unit in ((calls.cost_usd, "cost", "usd"), (calls.latency_ms, "latency", "ms")):
            vals = [None if v is None else float(v) for v in column]
            known = [v for v in vals if v is not None]
            entry[f"n_with_{name}"] = len(known)
            entry[f"{name}_median_{unit}"], entry[f"{name}_mean_excluding_first_{unit}"] = median_and_mean_after_first(
                vals
            )
            if name == "cost":
                entry["cost_total_usd"] = math.fsum(known) if known else None
        # what the cost is made of: input read from the provider's prompt cache and batch calls
        # are billed at their own (lower) prices
        entry["prompt_tokens"] = sum(int(v or 0) for v in calls.prompt_tokens)
        entry["cached_tokens"] = sum(int(v or 0) for v in calls.cached_tokens)
        entry["n_batch_calls"] = sum(calls.batch)
        out.append(entry)
    return out


def status_counts(cards: list[Any]) -> dict[str, int]:
    return dict(sorted(Counter(c.status for c in cards).items()))
