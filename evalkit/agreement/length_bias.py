"""Length bias of pointwise judges: does a judge score longer runs higher, the runs' outcome held equal?

Per judge rater (``MODEL@RUBRIC``) and dimension with numeric scores (a 0–3 scale; ``pass``/``fail``
and booleans as 1/0), one ordinary least-squares fit over the judged runs (each run's latest blind
primary answer: as for the pairings, ``--resample`` replicates and ``--show-mechanical`` answers are
left out)::

    score = b0 + b1 · length + b2 · outcome

``length`` is the run's judge bundle (what the judge read) in thousands of characters; ``outcome``
is the mechanical ``vector.all_passed`` (1/0). Runs whose judge bundles are identical are one
observation (their scores averaged): the judge read one text, and the cache asked it once, so
counting each copy would narrow the interval as if the judge had answered each (a deterministic
agent repeats its runs word for word). The slope ``b1`` is the judge's score per 1,000 more
characters among runs with the same outcome; its interval is the classical t interval with
n − p degrees of freedom, n the distinct bundles (statsmodels' ``OLS(...).fit().conf_int()``, which
the tests check against). The outcome is left out of the fit (and ``controlled_for`` says so) when
some judged run has none, or when it does not vary. A slope is n/a with a reason when fewer than
p + 2 runs are judged or the lengths do not vary.
"""

from __future__ import annotations

import math
from typing import Any

from evalkit.aggregate.uncertainty.distributions import t_quantile
from evalkit.db import JudgeColumns
from evalkit.present import Table
from evalkit.present.document import Notes, Section, ViewTable, stat_text

PER = 1000.0  # characters a slope is per


def _score(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if value == value else None
    if isinstance(value, str) and value in ("pass", "fail"):
        return 1.0 if value == "pass" else 0.0
    return None


def slope(y: Any, length: Any, outcome: Any | None, level: float) -> tuple[dict[str, Any], list[str]]:
    """The length slope of ``y`` (with ``outcome`` as a covariate when given and varying) and the
    covariates used; each a sequence or an array of numbers (NaN in none).

    Least squares on the centred columns, every sum a correctly rounded ``math.fsum`` of elementwise
    IEEE products: the same bytes on any machine (a BLAS solver splits its sums across threads, so
    its last digits follow the number of cores)."""
    import numpy as np

    fsum = math.fsum
    ys = np.asarray(y, dtype=float)
    xs = np.asarray(length, dtype=float) / PER
    os_ = None if outcome is None else np.asarray(outcome, dtype=float)
    n = len(ys)
    controls = ["outcome"] if os_ is not None and n and bool((os_ != os_[0]).any()) else []
    p = 2 + len(controls)
    if n < p + 2:
        return {"value": None, "reason": f"{n} judged runs: a slope needs at least {p + 2}", "n": n}, controls
    if float(xs.max()) == float(xs.min()):
        return {"value": None, "reason": "every judged run has the same length", "n": n}, controls
    yc = ys - fsum(ys.tolist()) / n
    xc = xs - fsum(xs.tolist()) / n
    sxx = fsum((xc * xc).tolist())
    sxy = fsum((xc * yc).tolist())
    if controls:
        oc = os_ - fsum(os_.tolist()) / n
        soo = fsum((oc * oc).tolist())
        sxo = fsum((xc * oc).tolist())
        soy = fsum((oc * yc).tolist())
        det = sxx * soo - sxo * sxo
        if det <= 0.0:  # the length is the outcome, in other units: no slope of its own
            return {"value": None, "reason": "the length follows the outcome exactly", "n": n}, controls
        b1, b2 = (soo * sxy - sxo * soy) / det, (sxx * soy - sxo * sxy) / det
        var_b1 = soo / det
        resid = yc - b1 * xc - b2 * oc
    else:
        b1, var_b1 = sxy / sxx, 1.0 / sxx
        resid = yc - b1 * xc
    df = n - p
    se = math.sqrt(fsum((resid * resid).tolist()) / df * var_b1)
    half = t_quantile(1 - (1 - level) / 2, df) * se
    return {"value": b1, "reason": None, "n": n, "se": se, "ci_low": b1 - half, "ci_high": b1 + half}, controls


def analyse(
    values: JudgeColumns,
    lengths: dict[str, int | None],
    outcomes: dict[str, bool],
    level: float = 0.95,
    bundles: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The audit's ``length_bias`` entries (docs/audit.md) from the judge values (in answer order:
    a run's latest blind primary answer wins), the runs' bundle lengths, their mechanical outcomes
    and their bundle hashes (runs of one bundle are one observation; without ``bundles`` every run
    is its own)."""
    import numpy as np

    from evalkit.agreement.stats.stat import last_places, unique_codes

    # each distinct label scored once; the latest score of each (rater, dimension, run) found by numpy
    score_of = np.array([math.nan if (s := _score(v)) is None else s for v in values.labels], dtype=float)
    scores = score_of[values.value] if len(values.labels) else np.zeros(0)
    kept = np.flatnonzero(~np.isnan(scores) & values.blind & (values.replicate == 0))
    if not len(kept):
        return []
    scores = scores[kept]
    # (judge, rubric, dimension) -> (rater, dimension): a rater is MODEL@RUBRIC
    n_rubrics, n_dims = len(values.rubrics), len(values.dimensions)
    named, at = unique_codes(
        (values.judge[kept].astype(np.int64) * n_rubrics + values.rubric[kept]) * n_dims + values.dimension[kept]
    )
    groups: dict[tuple[str, str], int] = {}
    group_of = []
    for code in named.tolist():
        judge_rubric, d = divmod(code, n_dims)
        j, r = divmod(judge_rubric, n_rubrics)
        group_of.append(
            groups.setdefault((f"{values.judges[j]}@{values.rubrics[r]}", values.dimensions[d]), len(groups))
        )
    group_codes = np.array(group_of, dtype=np.int64)[at.reshape(-1)]
    runs = values.runs
    run_codes = values.run[kept].astype(np.int64)
    del kept
    # the last value of each (group, run): unique over the reversed order keeps the latest
    last = last_places(group_codes * len(runs) + run_codes)
    group_codes, run_codes, scores = group_codes[last], run_codes[last], scores[last]

    # every run with a length, by its place in run-id order: a group's runs are sorted by that place
    known = sorted(r for r, n in lengths.items() if n is not None)
    place = {r: i for i, r in enumerate(known)}
    length_at = np.array([float(lengths[r]) for r in known], dtype=float)
    has_outcome = np.array([r in outcomes for r in known], dtype=bool)
    outcome_at = np.array([float(outcomes[r]) if r in outcomes else 0.0 for r in known], dtype=float)
    place_of_run = np.array([place.get(r, -1) for r in runs], dtype=np.intp)
    codes: dict[str, int] = {}
    bundle_at = np.array([codes.setdefault((bundles or {}).get(r, "run:" + r), len(codes)) for r in known], np.int64)
    out = []
    for (rater, dimension), g in sorted(groups.items()):
        mine = group_codes == g
        if not mine.any():
            continue  # no numeric score
        at, y = place_of_run[run_codes[mine]], scores[mine]
        kept = at >= 0
        at, y = at[kept], y[kept]
        order = np.argsort(at)  # places are distinct
        at, y = at[order], y[order]
        _, first, inverse = np.unique(bundle_at[at], return_index=True, return_inverse=True)
        if len(first) < len(at):  # one observation per bundle, at its first run's place
            mean = np.bincount(inverse, weights=y) / np.bincount(inverse)
            by_place = np.argsort(first)
            at, y = at[first[by_place]], mean[by_place]
        fig, controls = slope(y, length_at[at], outcome_at[at] if has_outcome[at].all() else None, level)
        out.append({"judge": rater, "dimension": dimension, "slope_per_1000_chars": fig, "controlled_for": controls})
    return out


def section(audit: dict) -> Section | None:
    """The audit's length-bias table; None when no pointwise judge gave a numeric score."""
    entries = [e for e in audit.get("length_bias") or [] if isinstance(e, dict)]
    if not entries:
        return None
    section = Section(
        "Pointwise judges: length",
        intro="The judge's score per 1,000 more characters of the run it read, among runs with the same "
        "mechanical outcome (least squares with the outcome as a covariate; pass/fail as 1/0). A slope whose "
        "interval excludes 0 means the judge rates longer runs differently for the same result.",
    )
    notes = Notes()
    rows = [
        [
            str(e.get("judge")),
            str(e.get("dimension")),
            stat_text((e.get("slope_per_1000_chars") or {}).get("n")),
            stat_text(e.get("slope_per_1000_chars"), notes),
            ", ".join(e.get("controlled_for") or []) or "nothing",
        ]
        for e in entries
    ]
    headers = ["judge", "dimension", "runs", "slope per 1,000 chars", "controlled for"]
    section.blocks.append(ViewTable(Table(headers, rows, notes=notes.lines(), numeric={2, 3}), "length-bias"))
    return section


def csv_rows(audit: dict) -> list[list[Any]]:
    """Rows ``section, name, slice, key, statistic, value, reason`` (the audit csv's columns)."""
    out: list[list[Any]] = []
    for e in audit.get("length_bias") or []:
        fig = e.get("slope_per_1000_chars") or {}
        value = fig.get("value")
        name, dim = str(e.get("judge")), str(e.get("dimension"))
        shown = "" if value is None else value
        out.append(["length_bias", name, "dimension", dim, "slope_per_1000_chars", shown, fig.get("reason") or ""])
        if fig.get("ci_low") is not None:
            out.append(["length_bias", name, "dimension", dim, "slope_per_1000_chars_ci_low", fig["ci_low"], ""])
            out.append(["length_bias", name, "dimension", dim, "slope_per_1000_chars_ci_high", fig["ci_high"], ""])
    return out
