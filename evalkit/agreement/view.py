"""The audit's view: the audit dict (:func:`evalkit.agreement.audit.build_audit`, docs/audit.md) as
sections of the document model (:mod:`evalkit.present.document`), built once and rendered by
``evalkit audit`` (text and markdown, :mod:`evalkit.agreement.audit_output`) and by the report (HTML and
markdown, :mod:`evalkit.report`). A statistic that does not apply, such as weighted kappa on a
nominal pairing, is undefined with a ``not applicable: ...`` reason and shows as ``n/a (k)``.

Only this module knows the audit's shape. It reads it defensively (a missing or empty part gives an
empty table whose text says why, never an exception), so a report still renders from a partial
audit. To add a section, write a function ``audit dict -> Section`` and list it in
:func:`agreement_sections`.

Choices: pairings are broken down by the audit's ``--by`` slice kind, by judge model when none was
asked for (pooling two judges would hide which one disagrees); confusion matrices and reliability
bands follow the judge breakdown where there is one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from evalkit.agreement.self_judging import pairing_note
from evalkit.present import Table
from evalkit.present.document import Chart, Charts, Notes, Section, ViewTable, num, stat_text
from evalkit.present.table import percent_text

# Where the output must stay short (the report's markdown, meant for a pull-request comment).
SHORT_ROW_LIMIT = 50


def pairing_columns() -> tuple[tuple[str, str], ...]:
    """(key, label) of the pairing tables: n, the registered statistics, the error directions."""
    from evalkit.agreement.stats import registry

    return (("n", "n"), *registry.columns("pairs"), ("lenient", "lenient"), ("strict", "strict"))


def rater_columns() -> tuple[tuple[str, str], ...]:
    """(key, label) of the raters table: the item counts, then the registered statistics."""
    from evalkit.agreement.stats import registry

    return (("n_items", "items"), ("n_items_dropped", "dropped"), *registry.columns("raters"))


SLICE_LABELS = {"judge": "judge model", "model": "agent model", "scenario": "scenario", "rubric": "rubric"}


def label(value: Any) -> str:
    """A scale label or raw value as text (strings as they are, anything else as JSON)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _dicts(section: Any) -> list[dict]:
    return [e for e in section if isinstance(e, dict)] if isinstance(section, list) else []


def _sub_table(section: Section, name: str, headers: list[str], rows: list[list[str]], **table: Any) -> None:
    """A titled table under a section's first one (``table``: the :class:`Table`'s title, notes and
    numeric columns), shown only when it has rows: a breakdown with nothing to break down is left out."""
    if rows:
        section.blocks.append(ViewTable(Table(headers, rows, **table), name))


# --- pairings -------------------------------------------------------------------------------


def _stat_row(entry: dict, keys: tuple[tuple[str, str], ...], notes: Notes) -> list[str]:
    return [stat_text(entry.get(k), notes) for k, _ in keys]


def _pairing_notes(audit: dict, entries: list[dict]) -> list[str]:
    notes = [line for e in entries if (line := pairing_note(e))]
    for e in entries:
        left = ", ".join(f"{k} {v}" for k, v in (e.get("excluded") or {}).items() if v)
        if left:
            notes.append(f"{e.get('pairing')} left out: {left}")
    boot = audit.get("bootstrap") or {}
    if boot.get("n_resamples"):
        notes.append(
            f"intervals: bootstrap over runs, {boot.get('n_resamples')} resamples, seed {boot.get('seed')}, "
            f"level {boot.get('ci')}"
        )
        for e in entries:
            kappa = e.get("cohen_kappa")
            b = kappa.get("bootstrap") if isinstance(kappa, dict) else None
            # said of a kappa the table shows; an undefined one already says why in its own note
            if isinstance(b, dict) and b.get("n_undefined") and kappa.get("value") is not None:
                notes.append(
                    f"{e.get('pairing')} kappa undefined in {b['n_undefined']} of {b['n_resamples']} resamples"
                )
    return notes


def _confusion(entry: dict) -> tuple[list[str], list[list[Any]]] | None:
    conf = entry.get("confusion_matrix")
    if not isinstance(conf, dict) or conf.get("matrix") is None or conf.get("labels") is None:
        return None
    return [label(x) for x in conf["labels"]], conf["matrix"]


def _bands(entry: dict) -> list[dict] | None:
    norm = [
        {
            "lo": b.get("low"),
            "hi": b.get("high"),
            "n": b.get("n") or 0,
            "confidence": b.get("mean_confidence"),
            "accuracy": b.get("accuracy"),
        }
        for b in _dicts(entry.get("reliability_bands"))
    ]
    return norm if any(b["n"] for b in norm) else None


def _charts(entries: list[dict]) -> list[Chart]:
    """Per judge model where the audit has the judge breakdown, else per pairing."""
    shown = [
        (e, s) for e in entries for s in (_dicts((e.get("slices") or {}).get("judge")) or [{"key": "all judges", **e}])
    ]
    charts = []
    for e, s in shown:
        name = f"{e.get('pairing')} \u00b7 {s.get('key')}"
        conf = _confusion(s)
        if conf and s.get("n"):
            labels, matrix = conf
            charts.append(
                Chart(
                    "confusion",
                    f"Confusion matrix {name}",
                    f"{name}: rows judge, columns mechanical (n={s.get('n')})",
                    rows=labels,
                    cols=labels,
                    matrix=matrix,
                )
            )
    for e, s in shown:
        bands = _bands(s)
        if bands:
            name = f"{e.get('pairing')} \u00b7 {s.get('key')}"
            charts.append(
                Chart(
                    "reliability",
                    f"Reliability diagram {name}",
                    f"{name}: stated confidence against agreement with the mechanical label",
                    bands=bands,
                )
            )
    return charts


def pairings_section(audit: dict) -> Section:
    entries = _dicts(audit.get("pairings"))
    section = Section(
        "Pairings: judge against mechanical scores",
        intro="Each pairing compares a judge dimension with a mechanical signal put on the judge's scale "
        "(configs/pairings.toml). Lenient: the judge grants more credit than the mechanical score "
        "(says pass when the run failed, safe when a forbidden command ran); strict: less. "
        "Intervals are bootstrap intervals over runs.",
    )
    stats = pairing_columns()
    notes = Notes()
    rows = [[str(e.get("pairing")), str(e.get("level", ""))] + _stat_row(e, stats, notes) for e in entries]
    headers = ["pairing", "level"] + [h for _, h in stats]
    section.blocks.append(
        ViewTable(
            Table(
                headers,
                rows,
                notes=notes.lines() + _pairing_notes(audit, entries),
                empty="no pairing configured",
                numeric=set(range(2, len(headers))),
            ),
            "pairings",
        )
    )

    by = (audit.get("filters") or {}).get("by") or "judge"
    sliced = [(e, s) for e in entries for s in _dicts((e.get("slices") or {}).get(by))]
    notes = Notes()
    rows = [[str(e.get("pairing")), str(s.get("key"))] + _stat_row(s, stats, notes) for e, s in sliced]
    headers = ["pairing", SLICE_LABELS.get(by, by)] + [h for _, h in stats]
    _sub_table(
        section,
        f"pairings-by-{by}",
        headers,
        rows,
        notes=notes.lines(),
        title=f"Per {SLICE_LABELS.get(by, by)}",
        numeric=set(range(2, len(headers))),
    )

    per_judge = sliced if by == "judge" else []
    calibrated = [(e, s) for e, s in per_judge if s.get("n_with_confidence")] or [
        (e, {"key": "all judges", **e}) for e in entries if e.get("n_with_confidence")
    ]
    notes = Notes()
    rows = []
    for e, s in calibrated:
        esc = s.get("escalation") if isinstance(s.get("escalation"), dict) else {}
        rows.append(
            [
                str(e.get("pairing")),
                str(s.get("key")),
                stat_text(s.get("n_with_confidence")),
                stat_text(s.get("brier"), notes),
                stat_text(s.get("ece"), notes),
                stat_text(esc.get("threshold")),
                stat_text(esc.get("escalated")),
                stat_text(esc.get("misses")),
                stat_text(esc.get("misses_caught")),
            ]
        )
    _sub_table(
        section,
        "calibration",
        [
            "pairing",
            "judge model",
            "n with confidence",
            "Brier",
            "ECE",
            "escalation threshold",
            "escalated",
            "disagreements",
            "caught",
        ],
        rows,
        notes=notes.lines()
        + [
            "Brier: multi-class Brier score of the judge's confidence against the mechanical label "
            "(0 perfect). "
            "ECE: expected calibration error. Escalation: runs whose confidence is under the threshold "
            "would go to a human; 'caught' counts the disagreements among them."
        ],
        title="Calibration of the judge's confidence",
        numeric=set(range(2, 9)),
    )

    charts = _charts(entries)
    if charts:
        section.blocks.append(Charts("Confusion matrices and reliability", charts))
    return section


# --- disagreements --------------------------------------------------------------------------

DISAGREEMENT_COLUMNS = (
    "rank",
    "run",
    "pairing",
    "direction",
    "scenario",
    "agent model",
    "judge model",
    "judge",
    "mechanical",
    "gap",
    "judge's rationale",
    "trajectory",
)


def disagreements_section(audit: dict) -> Section:
    items = _dicts(audit.get("disagreements"))
    rows = []
    for rank, d in enumerate(items, start=1):
        judged = label(d.get("judge_value"))
        if d.get("judge_raw") not in (None, d.get("judge_value")):
            judged = f"{label(d['judge_raw'])} \u2192 {judged}"
        rows.append(
            [
                str(rank),
                str(d.get("run_id")),
                str(d.get("pairing")),
                str(d.get("direction")),
                str(d.get("scenario_id")),
                str(d.get("model")),
                str(d.get("judge_model")) + (" (self)" if d.get("self_judged") else ""),
                judged,
                label(d.get("mechanical_value")),
                stat_text(d.get("gap")),
                str(d.get("rationale") or ""),
                str(d.get("path") or ""),
            ]
        )
    # a list cut by `evalkit audit --top` says how many it left out; the count is always the whole
    left = audit.get("disagreements_left_out")
    left = left if isinstance(left, int) and not isinstance(left, bool) and left > 0 else 0
    total = len(items) + left
    table = Table(
        DISAGREEMENT_COLUMNS,
        rows,
        notes=[f"\u2026 and {left:,} more; --top 0 for all"] if left else [],
        empty="no disagreement between the judge and the mechanical scores",
        numeric={0, 9},
    )
    listed = f", the {len(items):,} worst listed" if left else ""
    return Section(
        "Disagreements, ranked",
        [ViewTable(table, "disagreements", run_column=1, quote_column=10, short_limit=SHORT_ROW_LIMIT)],
        intro=f"{total:,} disagreements{listed}: lenient on safety first, then lenient on outcome, then by the size "
        "of the gap. The rationale is the judge's own text, quoted as data."
        if items
        else "",
    )


# --- raters ---------------------------------------------------------------------------------


def _pairwise_rows(entries: list[dict], notes: Notes) -> list[list[str]]:
    rows = []
    for e in entries:
        cohen = e.get("pairwise_cohen_kappa")
        if not isinstance(cohen, dict) or len(cohen.get("raters") or []) <= 2:
            continue
        weighted = e.get("pairwise_weighted_kappa")
        by_pair = {tuple(p.get("raters") or ()): p for p in _dicts((weighted or {}).get("pairs"))}
        for p in _dicts(cohen.get("pairs")):
            pair = tuple(p.get("raters") or ())
            w = by_pair.get(pair, weighted if isinstance(weighted, dict) and "pairs" not in weighted else None)
            rows.append(
                [
                    str(e.get("dimension")),
                    " / ".join(map(str, pair)),
                    stat_text(p.get("n")),
                    stat_text(p, notes),
                    stat_text(w, notes),
                ]
            )
    return rows


def _off_scale_note(entry: dict) -> str | None:
    """``safety: 18 rating(s) not on its scale (0, 1, 2, 3) left out: maria "safe" (9), "unsafe" (9)``."""
    off = _dicts(entry.get("excluded_labels"))
    if not off:
        return None
    by_rater: dict[str, list[str]] = {}
    for e in off:
        by_rater.setdefault(str(e.get("rater")), []).append(f"{json.dumps(e.get('label'))} ({e.get('n')})")
    scale = ", ".join(json.dumps(label) for label in entry.get("labels") or [])
    said = "; ".join(f"{rater} {', '.join(labels)}" for rater, labels in by_rater.items())
    n = sum(int(e.get("n") or 0) for e in off)
    return f"{entry.get('dimension')}: {n} rating(s) not on its scale ({scale}) left out: {said}"


def _alt_test_note(entry: dict, need: Any) -> str | None:
    """Why a dimension that a judge and some humans rated has no Alternative Annotator Test."""
    kinds = entry.get("rater_kinds") or {}
    humans = sorted(name for name, kind in kinds.items() if kind == "human")
    if not humans or "judge" not in kinds.values() or not isinstance(need, int) or len(humans) >= need:
        return None
    return (
        f"{entry.get('dimension')}: no Alternative Annotator Test (can a judge replace the humans?): it needs "
        f"{need} human raters of the same items, and this dimension has {len(humans)} ({', '.join(humans)})"
    )


def raters_section(audit: dict) -> Section:
    entries = _dicts(audit.get("raters"))
    from evalkit.agreement.human_first import blocks as human_first_blocks

    section = Section("Raters: agreement per dimension (judges, humans, mechanical scorers)")
    section.blocks += human_first_blocks(audit)  # humans with each other first, judges beside them
    stats = rater_columns()
    notes = Notes()
    rows = []
    for e in entries:
        kinds = e.get("rater_kinds") or {}
        raters = ", ".join(f"{r} ({kinds[r]})" if r in kinds else str(r) for r in e.get("raters") or [])
        rows.append([str(e.get("dimension")), str(e.get("level", "")), raters] + _stat_row(e, stats, notes))
    skipped = [
        f"{s.get('dimension')} not compared: {s.get('reason')} ({', '.join(map(str, s.get('raters') or []))})"
        for s in _dicts(audit.get("raters_skipped"))
    ]
    skipped += [line for e in entries if (line := _off_scale_note(e))]
    need = (audit.get("config") or {}).get("min_humans")
    skipped += [line for e in entries if (line := _alt_test_note(e, need))]
    headers = ["dimension", "level", "raters"] + [h for _, h in stats]
    section.blocks.append(
        ViewTable(
            Table(
                headers,
                rows,
                notes=notes.lines() + skipped,
                empty="no dimension has two or more raters on the same items",
                numeric=set(range(3, len(headers))),
            ),
            "raters",
        )
    )

    notes = Notes()
    pairs = _pairwise_rows(entries, notes)
    _sub_table(
        section,
        "pairwise",
        ["dimension", "raters", "items", "Cohen \u03ba", "weighted \u03ba"],
        pairs,
        notes=notes.lines(),
        title="Pairwise agreement (dimensions with more than two raters)",
        numeric={2, 3, 4},
    )

    rows = [
        [
            str(e.get("dimension")),
            str(t.get("judge")),
            ", ".join(map(str, t.get("humans") or [])),
            stat_text(t.get("winning_rate")),
            stat_text(t.get("advantage_prob")),
            stat_text(t.get("epsilon")),
            str(t.get("metric") or ""),
            stat_text(t.get("q")),
            stat_text(t.get("passed")),
            str(t.get("reason") or ""),
        ]
        for e in entries
        for t in _dicts(e.get("alt_test"))
    ]
    _sub_table(
        section,
        "alt-test",
        [
            "dimension",
            "judge",
            "humans",
            "winning rate \u03c9",
            "advantage \u03c1",
            "\u03b5",
            "metric",
            "q",
            "passed",
            "note",
        ],
        rows,
        title="Alternative Annotator Test",
        numeric={3, 4, 5, 7},
    )

    notes = Notes()
    rows = [
        [
            str(e.get("dimension")),
            str(c.get("judge")),
            str(c.get("mechanical")),
            stat_text(c.get("n")),
            stat_text(c.get("agree")),
            stat_text(c.get("cohen_kappa"), notes),
            stat_text(c.get("lenient"), notes),
            stat_text(c.get("strict"), notes),
        ]
        for e in entries
        for c in _dicts(e.get("judge_vs_mechanical"))
    ]
    _sub_table(
        section,
        "judge-vs-mechanical",
        ["dimension", "judge", "mechanical scorer", "n", "agree", "Cohen \u03ba", "lenient", "strict"],
        rows,
        notes=notes.lines(),
        title="Judge against mechanical scorers",
        numeric={3, 4, 5, 6, 7},
    )
    return section


# --- drift ----------------------------------------------------------------------------------


def drift_section(audit: dict) -> Section:
    judges = _dicts(audit.get("drift"))
    section = Section("Judge drift: replicate against first answer")
    rows, notes = [], []
    for j in judges:
        rows.append(
            [
                str(j.get("judge_model")),
                str(j.get("rubric")),
                stat_text(j.get("n_replicates")),
                stat_text(j.get("n_flagged")),
                percent_text(j.get("flagged_share")),
                f"more than {num(j.get('max_moved'))} dimension(s) moved by {num(j.get('moved_by'))} or more",
            ]
        )
        notes += [
            f"{j.get('judge_model')}@{j.get('rubric')} flagged run {f.get('run_id')} replicate {f.get('replicate')}: "
            f"moved {', '.join(map(str, f.get('moved') or []))}"
            for f in _dicts(j.get("flagged"))
        ]
    section.blocks.append(
        ViewTable(
            Table(
                ["judge model", "rubric", "replicates", "flagged", "flagged share", "a replicate is flagged when"],
                rows,
                notes=notes,
                empty="no replicates yet (evalkit judge --resample 0.1 --seed S)",
                numeric={2, 3, 4},
            ),
            "drift",
        )
    )
    dn = Notes()
    dims = [
        [
            f"{j.get('judge_model')}@{j.get('rubric')}",
            str(d.get("dimension")),
            stat_text(d.get("n")),
            stat_text(d.get("percent_agreement"), dn),
            stat_text(d.get("cohen_kappa"), dn),
            stat_text(d.get("weighted_kappa"), dn),
            stat_text(d.get("n_moved")),
        ]
        for j in judges
        for d in _dicts(j.get("dimensions"))
    ]
    _sub_table(
        section,
        "drift-dimensions",
        ["judge", "dimension", "n", "agreement", "Cohen \u03ba", "weighted \u03ba", "moved"],
        dims,
        notes=dn.lines(),
        title="Per dimension",
        numeric={2, 3, 4, 5, 6},
    )
    return section


# --- judge costs ----------------------------------------------------------------------------


def judge_cost_section(audit: dict) -> Section:
    """Per-call cost and latency (from judge_calls when the judge layer keeps it). Costs to six
    decimals: a call often costs a fraction of a cent."""
    usd = lambda v: "n/a" if v is None else f"{float(v):.6f}"  # noqa: E731
    ms = lambda v: "n/a" if v is None else f"{float(v):.0f}"  # noqa: E731
    rows = [
        [
            str(c.get("judge_model")),
            str(c.get("source")),
            stat_text(c.get("n_calls")),
            usd(c.get("cost_total_usd")),
            usd(c.get("cost_median_usd")),
            usd(c.get("cost_mean_excluding_first_usd")),
            ms(c.get("latency_median_ms")),
            ms(c.get("latency_mean_excluding_first_ms")),
            stat_text(c.get("cached_tokens")),
            stat_text(c.get("n_batch_calls")),
        ]
        for c in _dicts(audit.get("judge_costs"))
    ]
    table = Table(
        [
            "judge model",
            "source",
            "calls",
            "total cost (USD)",
            "median cost (USD)",
            "mean cost excl. first (USD)",
            "median latency (ms)",
            "mean latency excl. first (ms)",
            "cached input tokens",
            "batch calls",
        ],
        rows,
        notes=[
            "the first call of a batch is cold and dominates a mean: the median is the headline",
            "costs as billed: cached input tokens at the provider's cached price, batch calls at the batch rate",
        ]
        if rows
        else [],
        empty="no judge calls recorded",
        numeric=set(range(2, 10)),
    )
    return Section("Judge cost and latency per call", [ViewTable(table, "judge-calls")])


# --- probes ---------------------------------------------------------------------------------

PROBE_STATS = (
    ("unchanged_rate", "unchanged"),
    ("lenient_flip_rate", "lenient flips"),
    ("strict_flip_rate", "strict flips"),
    ("fooled_rate", "fooled"),
)


def _probe_bars(entries: list[dict]) -> list[Chart]:
    """Per (judge model, rubric): each probe's unchanged rate on its least robust dimension, and
    the fooled rates, as bars with their intervals."""
    charts = []
    for judge, rubric in dict.fromkeys((str(e.get("judge_model")), str(e.get("rubric"))) for e in entries):
        mine = [e for e in entries if (str(e.get("judge_model")), str(e.get("rubric"))) == (judge, rubric)]
        bars = []
        for probe in dict.fromkeys(str(e.get("probe")) for e in mine):
            rated = [
                e for e in mine if e.get("probe") == probe and (e.get("unchanged_rate") or {}).get("value") is not None
            ]
            if rated:
                worst = min(rated, key=lambda e: e["unchanged_rate"]["value"])
                bars.append(_bar(f"{probe} unchanged ({worst.get('dimension')})", worst["unchanged_rate"]))
            for e in mine:
                if e.get("probe") == probe and e.get("n_failed") is not None:
                    bars.append(_bar(f"{probe} fooled", e.get("fooled_rate") or {}))
        if bars:
            name = f"{judge} \u00b7 {rubric}"
            charts.append(
                Chart(
                    "bars",
                    f"Probe robustness {name}",
                    f"{name}: unchanged rate on the least robust dimension (1 = the probe never moved "
                    "the judge) and fooled rate (0 = never fooled)",
                    bars=bars,
                    label_chars=48,
                )
            )
    return charts


def _bar(text: str, rate: dict) -> dict:
    return {"label": text, "value": rate.get("value"), "low": rate.get("ci_low"), "high": rate.get("ci_high")}


def probes_section(audit: dict) -> Section:
    """The judge under the probes of ``evalkit probe`` (docs/probes.md): one row per probe, judge,
    rubric and dimension, and a bar chart per judge."""
    entries = _dicts(audit.get("probes"))
    notes = Notes()
    rows = [
        [
            str(e.get("probe")),
            str(e.get("judge_model")),
            str(e.get("rubric")),
            str(e.get("dimension")),
            stat_text(e.get("n")),
        ]
        + _stat_row(e, PROBE_STATS, notes)
        for e in entries
    ]
    fooling = [
        f"{e.get('probe')} / {e.get('judge_model')}: fooled on {num(e.get('fooled'))} of {num(e.get('n_failed'))} "
        f"mechanically failed runs ({num(e.get('n_failed_judged_fail'))} failed by the judge on the original)"
        for e in entries
        if e.get("n_failed") is not None
    ]
    headers = ["probe", "judge model", "rubric", "dimension", "n"] + [h for _, h in PROBE_STATS]
    section = Section(
        "Judge robustness probes",
        [
            ViewTable(
                Table(
                    headers,
                    rows,
                    notes=notes.lines() + fooling,
                    empty="no probe answers (evalkit probe --model X)",
                    numeric=set(range(4, len(headers))),
                ),
                "probes",
                short_limit=SHORT_ROW_LIMIT,
            )
        ],
        intro="Counterfactual runs whose mechanical score is unchanged (evalkit probe): the share of runs whose "
        "label the probe left unchanged, moved to more credit (lenient) or less (strict), and for false_claim and "
        "injection the share of mechanically failed runs flipped from fail to pass (fooled). Intervals are "
        "Wilson score intervals of each share of runs."
        if entries
        else "",
    )
    charts = _probe_bars(entries)
    if charts:
        section.blocks.append(Charts("Probe robustness per judge", charts))
    return section


def agreement_sections(audit: dict) -> list[Section]:
    """The agreement audit in reading order (the report shows the costs with the judge instead)."""
    from evalkit.agreement import length_bias
    from evalkit.agreement.adjudication import adjudications_section
    from evalkit.agreement.pairwise_view import pairwise_section

    builders: list[Callable[[dict], Section | None]] = [
        pairings_section,
        disagreements_section,
        adjudications_section,
        raters_section,
        drift_section,
        probes_section,
        pairwise_section,
        length_bias.section,
    ]
    # a builder returns None for a section with nothing to say that older audits never showed
    return [s for s in (build(audit) for build in builders) if s is not None]


def audit_sections(audit: dict) -> list[Section]:
    """Everything ``evalkit audit`` prints: the agreement sections, then the judge's costs."""
    return agreement_sections(audit) + [judge_cost_section(audit)]
