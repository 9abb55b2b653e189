"""Multi-rater agreement per dimension (judge ↔ judge, judge ↔ human, human ↔ human) and the
Alternative Annotator Test.

Choices the issue leaves open (documented in docs/audit.md):

- Level of measurement per dimension: the ``[dimensions.NAME]`` entry of the audit config, else
  nominal when any label is a string or a boolean, ordinal when every label is an integer,
  interval for other numbers.
- Labels: the configured ``scale``, else for integers every integer from the smallest to the
  largest label seen (the full scale in between, so a class nobody used still counts), else the
  sorted labels seen. A value that is not on an ordinal/interval scale (``"n/a"``) or not on a
  configured scale is left out and counted in ``n_excluded``; ``excluded_labels`` names them by
  rater (a judge's ``n/a`` apart), so a human who rated on another scale is seen, not dropped.
- An item rated by fewer than two raters does not count (``n_items_dropped``); a rater with no
  rating left after that is not listed.
- The Alt-Test runs for every judge rater of a dimension that has at least ``min_humans`` human
  raters on items that judge also rated; ``accuracy`` for nominal labels, ``neg_abs_error`` for
  numbers. ``mechanical`` raters (external deterministic scorers) are neither judges nor humans there.
- Every (judge, mechanical) rater pair of a dimension also gets what a pairing gets: the confusion
  matrix (rows judge), Cohen's kappa, and the error direction — ``lenient`` when the judge's label
  grants more credit than the mechanical one. Credit: the configured scale's order (least credit
  first, as for pairings), else :func:`label_credit` (numbers, inspect_ai's C/P/I/N, pass/fail);
  without a credit for every label the direction is undefined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.agreement.credit import credit
from evalkit.agreement.pairings_config import AuditConfig, DimensionSpec
from evalkit.agreement.ratings import RatingColumns


def _stats():
    from evalkit.agreement import stats

    return stats


def _alt():
    from evalkit.agreement import alt_test

    return alt_test


def na(reason: str) -> dict[str, Any]:
    return {"value": None, "reason": reason}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _sort_key(v: Any) -> tuple:
    if _is_num(v):
        return (0, v, "")
    return (1, 0, str(v)) if not isinstance(v, bool) else (2, int(v), "")


def level_and_labels(values: list[Any], spec: DimensionSpec | None) -> tuple[str, list[Any]]:
    """The level of measurement and the label set of a dimension (see module docstring)."""
    spec = spec or DimensionSpec()
    level = spec.level
    if level is None:
        if any(not _is_num(v) for v in values):
            level = "nominal"
        elif all(_is_int(v) for v in values):
            level = "ordinal"
        else:
            level = "interval"
    if spec.scale is not None:
        return level, list(spec.scale)
    if level == "nominal":
        return level, sorted(set(values), key=_sort_key)
    nums = [v for v in values if _is_num(v)]
    if nums and all(_is_int(v) for v in nums):
        return level, list(range(min(nums), max(nums) + 1))
    return level, sorted(set(nums))


def same_label(a: Any, b: Any) -> bool:
    """Equal labels; a boolean is never the same label as the number 1 or 0."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def on_scale(v: Any, labels: list[Any]) -> bool:
    return any(same_label(v, lab) for lab in labels)


NOT_APPLICABLE = "n/a"  # a judge's answer where its rubric allows none: left out, not a mistake


def _off_scale(ratings: RatingColumns, rows: Any) -> list[dict[str, Any]]:
    """The labels left out as off the scale, by rater (``n/a`` apart): ``{rater, label, n}``, by
    rater, then the most used label first."""
    import numpy as np  # only on the audit path

    pairs, counts = np.unique(np.stack([ratings.rater[rows], ratings.value[rows]]), axis=1, return_counts=True)
    out = [
        {"rater": ratings.raters[r], "label": ratings.labels[v], "n": int(n)}
        for (r, v), n in zip(pairs.T.tolist(), counts.tolist())
        if ratings.labels[v] != NOT_APPLICABLE
    ]
    return sorted(out, key=lambda e: (e["rater"], -e["n"], _sort_key(e["label"])))


def analyse_dimension(dimension: str, ratings: RatingColumns, rows: Any, config: AuditConfig) -> dict[str, Any] | None:
    """The raters entry of one dimension (its ratings at ``rows``), or None when fewer than two raters remain."""
    import numpy as np  # only on the audit path

    from evalkit.agreement.stats import registry
    from evalkit.agreement.stats.stat import _label_lookup

    spec = config.dimensions.get(dimension)
    # the level and labels depend on the distinct values alone: each (type, value) once, in order
    # of first occurrence (what a set of all the values keeps)
    value = ratings.value[rows]
    codes, first = np.unique(value, return_index=True)
    level, labels = level_and_labels([ratings.labels[c] for c in codes[np.argsort(first)].tolist()], spec)
    scaled = np.zeros(len(ratings.labels), dtype=bool)
    scaled[codes] = [on_scale(ratings.labels[c], labels) for c in codes.tolist()]
    ok = scaled[value]
    n_excluded = int(np.count_nonzero(~ok))
    excluded = _off_scale(ratings, rows[~ok]) if n_excluded else []
    rows = rows[ok]
    item, rater = ratings.item[rows].astype(np.int64), ratings.rater[rows].astype(np.int64)
    # each rater's kind: that of its last rating; each item's value per rater: the last one
    _, last = np.unique(rater[::-1], return_index=True)
    kinds = {
        ratings.raters[r]: ratings.kinds[k]
        for r, k in zip(rater[len(rater) - 1 - last].tolist(), ratings.kind[rows[len(rater) - 1 - last]].tolist())
    }
    key = item * max(len(ratings.raters), 1) + rater
    _, last = np.unique(key[::-1], return_index=True)
    last = len(key) - 1 - last
    item, rater, value = item[last], rater[last], ratings.value[rows[last]]
    per_item = np.bincount(item, minlength=len(ratings.items))
    kept_item = per_item >= 2
    kept_codes = np.flatnonzero(kept_item)
    names = [ratings.items[i] for i in kept_codes.tolist()]
    by_name = sorted(range(len(names)), key=names.__getitem__)  # the items' names are distinct
    items = [names[k] for k in by_name]
    dropped = int(np.count_nonzero(per_item)) - len(items)
    mine = kept_item[item]
    item, rater, value = item[mine], rater[mine], value[mine]
    raters = sorted(ratings.raters[r] for r in np.unique(rater).tolist())
    if len(raters) < 2:
        return None
    rater_place = {name: k for k, name in enumerate(raters)}
    at_item = np.full(len(ratings.items), -1, dtype=np.int64)
    at_item[kept_codes[by_name]] = np.arange(len(items))
    at_rater = np.full(len(ratings.raters), -1, dtype=np.int64)
    for r in np.unique(rater).tolist():
        at_rater[r] = rater_place[ratings.raters[r]]
    grid = np.full((len(raters), len(items)), len(ratings.labels), dtype=np.int64)  # the last code: no rating
    grid[at_rater[rater], at_item[item]] = value
    # each label's position on the scale, as the statistics place a value (-1: no rating; a None
    # or NaN label is read as none there too)
    place = _label_lookup(labels)
    position_of = np.full(len(ratings.labels) + 1, -1, dtype=np.int64)
    for c in codes[scaled[codes]].tolist():
        if (label := ratings.labels[c]) is not None and label == label:
            position_of[c] = place[label]
    entry: dict[str, Any] = {
        "dimension": dimension,
        "raters": raters,
        "rater_kinds": {name: kinds[name] for name in raters},
        "level": level,
        "labels": labels,
        "n": len(items),
        "n_items": len(items),
        "n_items_dropped": dropped,
        "n_ratings": len(item),
        "n_excluded": n_excluded,
        "excluded_labels": excluded,
    }
    rated = registry.Raters(None, raters, labels, level, positions=position_of[grid])
    entry.update((s.name, s.raters(rated)) for s in registry.for_raters())
    # the Alt-Test and the judge-mechanical pairs read the values themselves (an integral float
    # stays one), and only with enough humans or a mechanical rater
    humans = sum(kinds[name] == "human" for name in raters)
    mechanical = any(kinds[name] == "mechanical" for name in raters)
    held = np.empty(len(ratings.labels) + 1, dtype=object)
    held[:-1] = ratings.labels
    matrix = held[grid].tolist() if humans >= config.min_humans or mechanical else []
    entry["alt_test"] = alt_tests(raters, kinds, matrix, level, config) if humans >= config.min_humans else []
    entry["judge_vs_mechanical"] = judge_vs_mechanical(raters, kinds, matrix, labels, spec) if mechanical else []
    return entry


OUTCOME_CREDIT = {"pass": 1.0, "fail": 0.0}


def label_credit(v: Any) -> float | None:
    """A label's credit: inspect_ai's value semantics (evalkit.agreement.credit), plus evalkit's own
    outcome labels ``pass`` (1) and ``fail`` (0)."""
    if isinstance(v, str) and v in OUTCOME_CREDIT:
        return OUTCOME_CREDIT[v]
    return credit(v)


def scale_credit(labels: list[Any]) -> Callable[[Any], float | None]:
    """A label's credit as its position on a configured scale (least credit first); None off the scale."""

    def by_position(v: Any) -> float | None:
        return next((float(i) for i, lab in enumerate(labels) if same_label(v, lab)), None)

    return by_position


def judge_vs_mechanical(
    raters: list[str], kinds: dict[str, str], matrix: list[list[Any]], labels: list[Any], spec: DimensionSpec | None
) -> list[dict[str, Any]]:
    """One entry per (judge, mechanical) rater pair with a shared item (see module docstring)."""
    st = _stats()
    order = scale_credit(labels) if spec is not None and spec.scale is not None else label_credit
    out = []
    for j, judge in enumerate(raters):
        if kinds[judge] != "judge":
            continue
        for m, mech in enumerate(raters):
            if kinds[mech] != "mechanical":
                continue
            x, y = _paired(matrix[j], matrix[m])
            if not x:
                continue
            entry: dict[str, Any] = {
                "judge": judge,
                "mechanical": mech,
                "n": len(x),
                "agree": sum(1 for a, b in zip(x, y) if same_label(a, b)),
                "cohen_kappa": st.cohen_kappa(x, y, labels),
                "confusion_matrix": {
                    "labels": labels,
                    "row_axis": "judge",
                    "column_axis": "mechanical",
                    "matrix": st.confusion_matrix(x, y, labels),
                },
            }
            cx, cy = [order(v) for v in x], [order(v) for v in y]
            if any(c is None for c in cx + cy):
                reason = "a label has no credit order (configure the dimension's scale, least credit first)"
                entry["lenient"] = entry["strict"] = na(reason)
            else:
                entry["lenient"] = sum(1 for a, b in zip(cx, cy) if a > b)
                entry["strict"] = sum(1 for a, b in zip(cx, cy) if a < b)
            out.append(entry)
    return out


def _paired(a: list[Any], b: list[Any]) -> tuple[list[Any], list[Any]]:
    both = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return [x for x, _ in both], [y for _, y in both]


def alt_metric(configured: str, level: str) -> str:
    """The Alt-Test's alignment metric: ``auto`` is accuracy for nominal labels and ``neg_rmse``
    for numbers (ordinal or interval), the Alt-Test reference implementation's choice."""
    if configured != "auto":
        return configured
    return "accuracy" if level == "nominal" else "neg_rmse"


def alt_tests(
    raters: list[str], kinds: dict[str, str], matrix: list[list[Any]], level: str, config: AuditConfig
) -> list[dict[str, Any]]:
    """One Alt-Test per judge rater with enough humans on its items (empty list otherwise)."""
    humans = [i for i, name in enumerate(raters) if kinds[name] == "human"]
    judges = [i for i, name in enumerate(raters) if kinds[name] == "judge"]
    metric = alt_metric(config.alt_metric, level)
    out = []
    for j in judges:
        cols = [c for c, v in enumerate(matrix[j]) if v is not None]
        active = [h for h in humans if any(matrix[h][c] is not None for c in cols)]
        if len(active) < config.min_humans:
            continue
        judge_vals = {c: matrix[j][c] for c in cols}
        human_vals = {raters[h]: {c: matrix[h][c] for c in cols if matrix[h][c] is not None} for h in active}
        try:
            result = _alt().alt_test(
                judge_vals,
                human_vals,
                epsilon=config.epsilon,
                metric=metric,
                q=config.q,
                min_items=config.alt_min_items,
            )
        except ValueError as exc:  # an error metric configured for a dimension whose labels are not numbers
            result = {
                "metric": metric,
                "winning_rate": None,
                "advantage_prob": None,
                "passed": None,
                "per_human": [],
                "reason": str(exc),
            }
        out.append({"judge": raters[j], "humans": [raters[h] for h in active], "n_items": len(cols)} | dict(result))
    return out


def analyse(ratings: RatingColumns, config: AuditConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(entries for dimensions with two or more raters, skipped dimensions with the reason)."""
    import numpy as np  # only on the audit path

    entries, skipped = [], []
    for dim, rows in ratings.dimension_rows():
        entry = analyse_dimension(dim, ratings, rows, config)
        if entry is None:
            names = sorted(ratings.raters[r] for r in np.unique(ratings.rater[rows]).tolist())
            skipped.append({"dimension": dim, "raters": names, "reason": "fewer than two raters on a shared item"})
        else:
            entries.append(entry)
    return entries, skipped
