"""Human agreement first: how well the humans agree with each other, then each judge beside them.

For every dimension with two or more human raters on the same items: the human↔human figures with
the rater section's estimators (pooled pairwise agreement, Krippendorff's α, Gwet's AC1) over the
human ratings alone, each with a bootstrap interval over items. Then, per judge rater of that
dimension, on the items the judge rated that two or more humans rated too: the judge's mean
agreement with each human (judge↔human), the humans' pooled pairwise agreement on the same items
(human↔human), and their difference with its interval (the items resampled together). A plain
sentence says which it is: about as well as the humans agree with each other (the interval of the
difference lies within ±0.10), clearly less (it lies below 0), more (above 0), or that the items
cannot tell (it covers 0 and reaches beyond ±0.10). Whether the judge can stand in for
a human is the Alternative Annotator Test's question (the raters section's Alt-Test).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from evalkit.agreement.pairings_config import AuditConfig
from evalkit.agreement.pairwise_bias import Boot, _figure, _with_interval, rate
from evalkit.agreement.raters import level_and_labels, on_scale, same_label
from evalkit.agreement.ratings import RatingColumns


def _values(ratings: list[Any], kind: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in ratings:
        if r.rater_kind == kind:
            out[r.item_id][r.rater] = r.value
    return out


def _multi(
    stat: Callable[[Any], Any],
    of_counts: Callable[[Any], Any],
    matrix: list[list[Any]],
    boot: Boot | None,
    labels: list[Any] | None,
) -> dict[str, Any]:
    """A multi-rater statistic of a (raters × items) matrix with its bootstrap interval over items.
    ``of_counts``: the same statistic of the matrix's (items x labels) counts on ``labels`` (None:
    the labels used), which a resample of items takes as a resample of rows."""
    from evalkit.agreement.stats import bootstrap_ci
    from evalkit.agreement.stats.bootstrap import bootstrap_counts
    from evalkit.agreement.stats.multirater import item_label_counts

    point = stat(matrix)
    n = len(matrix[0]) if matrix else 0
    fig = _figure(point["value"], n, point["reason"])
    if boot is None or fig["value"] is None:
        return fig
    counts = item_label_counts(matrix, labels)[0]
    if counts.shape[0] == n:  # every item rated twice or more: a row an item
        # a label a resample leaves out adds nothing to an agreement count or a coincidence, and
        # with ``labels`` given the scale is the same in every resample
        ci = bootstrap_counts(point, counts, of_counts, n_resamples=boot.n_resamples, seed=boot.seed, ci=boot.ci)
    else:
        matrix_array = np.asarray(matrix, dtype=object)
        ci = bootstrap_ci(stat, matrix_array, n_resamples=boot.n_resamples, seed=boot.seed, ci=boot.ci)
    fig["ci_low"], fig["ci_high"] = ci["low"], ci["high"]
    return fig


def _sentence(judge: str, diff: dict[str, Any], jh: dict[str, Any], hh: dict[str, Any]) -> str:
    if diff["value"] is None:
        return f"{judge}: no item rated by the judge and two humans, so no comparison with the humans."
    figures = f"judge\u2194human {jh['value']:.2f}, human\u2194human {hh['value']:.2f} on the same items"
    low, high = diff["ci_low"], diff["ci_high"]
    if low is None:
        how = "agrees with the humans (no interval: --resamples 0)"
    elif high < 0:
        how = "agrees with the humans clearly less than they agree with each other"
    elif low > 0:
        how = "agrees with the humans more than they agree with each other"
    elif -AS_WELL <= low and high <= AS_WELL:
        how = "agrees with the humans about as well as they agree with each other"
        figures += f"; the difference's interval lies within \u00b1{AS_WELL:.2f}"
    else:
        how = (
            "may agree with the humans less than they agree with each other, or about as well: these items cannot tell"
        )
        figures += f"; difference {diff['value']:+.2f}, interval {low:+.2f} to {high:+.2f}"
    return f"{judge} {how} ({figures}); whether it can replace a human is the Alt-Test's question."


# How far apart judge-human and human-human agreement may be for "about as well as": an interval of
# their difference within this margin (a proportion of items); a wider interval that covers 0 says
# the items are too few to tell, not that the two are alike.
AS_WELL = 0.10


def analyse(ratings: RatingColumns, config: AuditConfig, bootstrap: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The audit's ``human_agreement`` list (docs/audit.md), sorted by dimension."""
    from evalkit.agreement.stats import gwet_ac1_multi, krippendorff_alpha, pooled_pairwise_agreement
    from evalkit.agreement.stats.multirater import ac1_of_counts, alpha_of_counts, pooled_of_counts

    by_dim: dict[str, list[Any]] = defaultdict(list)
    for dim, rows in ratings.dimension_rows():
        human = ratings.kind[rows] == ratings.kinds.index("human") if "human" in ratings.kinds else None
        if human is not None and len(np.unique(ratings.rater[rows][human])) >= 2:
            by_dim[dim] = list(ratings.at(rows))  # only a dimension with two humans is read rating by rating
    out = []
    for dim in sorted(by_dim):
        if len({r.rater for r in by_dim[dim] if r.rater_kind == "human"}) < 2:
            continue  # fewer than two humans: no item can have two
        level, labels = level_and_labels([r.value for r in by_dim[dim]], config.dimensions.get(dim))
        scaled: dict[tuple[type, Any], bool] = {}  # few distinct values: each checked once
        kept = []
        for r in by_dim[dim]:
            key = (type(r.value), r.value)
            if key not in scaled:
                scaled[key] = on_scale(r.value, labels)
            if scaled[key]:
                kept.append(r)
        humans = _values(kept, "human")
        items = sorted(i for i, rs in humans.items() if len(rs) >= 2)
        names = sorted({h for i in items for h in humans[i]})
        if len(names) < 2 or not items:
            continue
        boot = Boot(bootstrap["n_resamples"], bootstrap["seed"], bootstrap["ci"]) if bootstrap else None
        matrix = [[humans[i].get(h) for i in items] for h in names]
        entry: dict[str, Any] = {
            "dimension": dim,
            "level": level,
            "humans": names,
            "n_items": len(items),
            "percent_agreement": _multi(pooled_pairwise_agreement, pooled_of_counts, matrix, boot, None),
            "krippendorff_alpha": _multi(
                partial(krippendorff_alpha, level=level, labels=labels),
                partial(alpha_of_counts, labels=labels, level=level),
                matrix,
                boot,
                labels,
            ),
            "gwet_ac1": _multi(
                partial(gwet_ac1_multi, labels=labels), partial(ac1_of_counts, labels=labels), matrix, boot, labels
            ),
            "judges": [],
        }
        judges = _values(kept, "judge")
        for judge in sorted({j for rs in judges.values() for j in rs}):
            shared = [i for i in items if judge in judges.get(i, {})]
            jh_num, jh_den, hh_num, hh_den = [], [], [], []
            for i in shared:
                hv = [humans[i][h] for h in sorted(humans[i])]
                jv = judges[i][judge]
                jh_num.append(sum(same_label(jv, v) for v in hv))
                jh_den.append(len(hv))
                hh_num.append(sum(same_label(u, v) for k, u in enumerate(hv) for v in hv[k + 1 :]))
                hh_den.append(len(hv) * (len(hv) - 1) / 2)
            b = Boot(boot.n_resamples, boot.seed, boot.ci) if boot else None
            empty = "no item rated by this judge and two or more humans"
            jh = rate(jh_num, jh_den, b, empty)
            hh = rate(hh_num, hh_den, b, empty)
            diff = _figure(None, 0, empty)
            if shared:
                diff = _figure(jh["value"] - hh["value"], len(shared))
                values = None
                if b is not None:
                    w = b.draws(len(shared))
                    with np.errstate(invalid="ignore", divide="ignore"):
                        values = (w @ np.asarray(jh_num, float)) / (w @ np.asarray(jh_den, float)) - (
                            w @ np.asarray(hh_num, float)
                        ) / (w @ np.asarray(hh_den, float))
                diff = _with_interval(diff, values, b)
            entry["judges"].append(
                {
                    "judge": judge,
                    "n_items": len(shared),
                    "judge_human_agreement": jh,
                    "human_human_agreement": hh,
                    "difference": diff,
                    "verdict": _sentence(judge, diff, jh, hh),
                }
            )
        out.append(entry)
    return out


def blocks(audit: dict) -> list[Any]:
    """The tables the raters section shows first: human↔human per dimension, then each judge beside
    the humans with the sentence; none when no dimension has two humans on the same items."""
    from evalkit.present import Table
    from evalkit.present.document import Notes, ViewTable, stat_text

    entries = [e for e in audit.get("human_agreement") or [] if isinstance(e, dict)]
    if not entries:
        return []
    notes = Notes()
    rows = [
        [str(e.get("dimension")), ", ".join(map(str, e.get("humans") or [])), stat_text(e.get("n_items"))]
        + [stat_text(e.get(k), notes) for k in ("percent_agreement", "krippendorff_alpha", "gwet_ac1")]
        for e in entries
    ]
    out = [
        ViewTable(
            Table(
                ["dimension", "humans", "items", "agreement", "Krippendorff \u03b1", "Gwet AC1"],
                rows,
                notes=notes.lines(),
                title="Humans with each other (first: the bar a judge is measured against)",
                numeric={2, 3, 4, 5},
            ),
            "human-human",
        )
    ]
    notes = Notes()
    judged = [(e, j) for e in entries for j in e.get("judges") or [] if isinstance(j, dict)]
    rows = [
        [str(e.get("dimension")), str(j.get("judge")), stat_text(j.get("n_items"))]
        + [stat_text(j.get(k), notes) for k in ("judge_human_agreement", "human_human_agreement", "difference")]
        for e, j in judged
    ]
    if rows:
        out.append(
            ViewTable(
                Table(
                    ["dimension", "judge", "items", "judge\u2194human", "human\u2194human", "difference"],
                    rows,
                    notes=notes.lines() + [str(j.get("verdict")) for _, j in judged],
                    title="Judges beside the humans (same items)",
                    numeric={2, 3, 4, 5},
                ),
                "judge-human",
            )
        )
    return out
