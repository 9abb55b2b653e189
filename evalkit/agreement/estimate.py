"""`evalkit estimate`: what a judge dimension says at scale, corrected with the human labels.

For every judge rater (model@rubric, or an imported rater of kind ``judge``), dimension and group
(``by``), the judge's raw rate beside three estimates of the truth (docs/audit.md, "Corrected
estimates"):

- ``rogan_gladen``: the judge's pass rate p on the runs *without* a human label, corrected with its
  specificity q₀ and sensitivity q₁ measured on the runs with one (Lee et al.'s interval);
- ``ppi``: PPI++ — the judge on every run plus the humans on the labelled ones (any numeric
  dimension's mean, a pass/fail rate included);
- ``labels``: the human labels alone.

``method="auto"`` reports the narrowest valid interval of the three; each is kept in
``methods`` with its own reason when it cannot be computed. Human labels are the blind ratings
given in ``evalkit view`` and imported ratings of kind ``human``; several humans on one run give
the majority (pass/fail) or the mean (numbers). Each method uses only labels from a sampling design
it allows (:data:`ALLOWED`): a review records how its run was chosen (evalkit.db.reviews.DESIGNS);
an imported label carries no design and counts as a uniform random sample (``assumptions`` says
so). Labels from the disagreement queue or chosen by hand correct nothing: they are left out and
counted (``left_out``).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalkit.agreement.ratings import RatingColumns, collect_ratings
from evalkit.agreement.stats.corrected import (
    NotBetterThanChance,
    allocate_labels,
    classical_interval,
    corrected_rate,
    ppi_mean,
    wilson_interval,
)
from evalkit.db import (
    imported_judges,
    judge_models,
    open_readonly,
    read_cards,
    read_judge_columns,
    read_ratings,
    resolve_judge,
)
from evalkit.db.reviews import SOURCE, read_review_designs, read_review_ratings

SCHEMA = "evalkit.estimate/1"
BY = ("model", "scenario", "model,scenario", "none")
METHODS = ("auto", "rogan-gladen", "ppi", "labels")
PASS_WORDS = {"pass": 1, "fail": 0, "yes": 1, "no": 0, "true": 1, "false": 0}
ASSUMPTION = (
    "imported human labels carry no sampling design and are taken as a uniform random sample of the runs; "
    "labels from the disagreement queue or chosen by hand cannot correct a rate and are left out"
)
# PPI++'s normal interval covers less than its level with few labels (simulated: 88 % at 20
# labels, 91-92 % at 40-60, at a nominal 95 %; docs/audit.md): said whenever it is reported so
FEW_LABELS = 60
FEW_LABELS_NOTE = (
    f"a PPI++ interval from fewer than {FEW_LABELS} labels covers less than its level "
    "(about 88-92 % at 95 % in simulation, docs/audit.md); --method rogan-gladen holds it"
)
# the sampling designs whose labels each method may use: PPI and the labels alone need a uniform
# random sample; Rogan-Gladen only needs each true class sampled at random (class-stratified)
ALLOWED = {
    "rogan-gladen": ("random", "stratified"),
    "ppi": ("random",),
    "labels": ("random",),
}


def _binary(value: Any, threshold: float | None) -> int | None:
    """A label as pass (1) / fail (0), or None when it is neither (``n/a``, a score without a threshold)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        return PASS_WORDS.get(value.strip().lower())
    if isinstance(value, (int, float)) and not math.isnan(value):
        if threshold is not None:
            return int(value >= threshold)
        return int(value) if value in (0, 1) else None
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and not math.isnan(value):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in PASS_WORDS:
        return float(PASS_WORDS[value.strip().lower()])
    return None


# the group a run counts in, by ``by``, from its (model, scenario)
GROUP_OF = {
    "model": lambda model, scenario: model,
    "scenario": lambda model, scenario: scenario,
    "model,scenario": lambda model, scenario: f"{model} / {scenario}",
    "none": lambda model, scenario: "all",
}


def _ci(lo: float, hi: float) -> list[float]:
    return [round(lo, 6), round(hi, 6)]


def _result(estimate: float, lo: float, hi: float, **extra: Any) -> dict[str, Any]:
    return {"estimate": round(estimate, 6), "ci": _ci(lo, hi), "width": round(hi - lo, 6), "reason": None, **extra}


def _na(reason: str) -> dict[str, Any]:
    return {"estimate": None, "ci": None, "width": None, "reason": reason}


def rate_methods(judge: dict[str, int], human: dict[str, int], level: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The three estimates of a pass rate from the judge's and the humans' labels by run, and the labels
    they used (m0, m1, q0, q1, n_labeled)."""
    labelled = sorted(set(judge) & set(human))
    test = [judge[r] for r in sorted(set(judge) - set(human))]
    passes = [r for r in labelled if human[r] == 1]
    fails = [r for r in labelled if human[r] == 0]
    m0, m1 = len(fails), len(passes)
    q1 = sum(judge[r] for r in passes) / m1 if m1 else None
    q0 = sum(1 - judge[r] for r in fails) / m0 if m0 else None
    labels = {"n_labeled": len(labelled), "m0": m0, "m1": m1, "q0": _round(q0), "q1": _round(q1)}
    out: dict[str, Any] = {}
    if not test:
        out["rogan-gladen"] = _na("no judged run without a human label (n = 0)")
    elif not m0 or not m1:
        out["rogan-gladen"] = _na(f"too few labels of a class: {m0} labelled failure(s), {m1} labelled pass(es)")
    else:
        try:
            r = corrected_rate(sum(test) / len(test), len(test), q0, m0, q1, m1, level=level)
            out["rogan-gladen"] = _result(*r)
        except NotBetterThanChance as exc:
            said = f"q0 + q1 = {q0 + q1:.3f} ≤ 1" if q0 + q1 <= 1.0 else str(exc)
            out["rogan-gladen"] = _na(f"the judge is no better than chance on the labels ({said})")
    y = [float(human[r]) for r in labelled]
    out.update(_mean_methods(y, [float(judge[r]) for r in labelled], [float(v) for v in test], level, rate=True))
    return out, labels


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _mean_methods(y: list[float], yhat: list[float], unl: list[float], level: float, rate: bool = False) -> dict:
    """PPI++ and the labels alone. For a rate, the labels alone get the Wilson interval (it keeps its
    width when every label agrees) and every interval is clipped to [0, 1]."""
    out: dict[str, Any] = {}
    if len(y) < 2:
        out["ppi"] = out["labels"] = _na(f"too few human labels ({len(y)}; at least 2)")
        return out
    alone = wilson_interval(int(sum(y)), len(y), level) if rate else classical_interval(y, level)
    out["labels"] = _result(*alone)
    if not unl:
        out["ppi"] = _na("no judged run without a human label")
        return out
    ppi = ppi_mean(y, yhat, unl, level)
    if ppi.high == ppi.low:
        out["ppi"] = _na("no variation in the labels or the judge's values: a normal interval has no width")
        return out
    low, high = (max(0.0, ppi.low), min(1.0, ppi.high)) if rate else (ppi.low, ppi.high)
    width_alone, width_ppi = alone.high - alone.low, high - low
    worth = None if width_ppi == 0 else round(len(y) * (width_alone / width_ppi) ** 2, 1)
    out["ppi"] = _result(ppi.estimate, low, high, lam=round(ppi.lam, 6), effective_labels=worth)
    return out


def _choose(methods: dict[str, Any], method: str) -> tuple[str, dict[str, Any]]:
    if method != "auto":
        return method, methods[method]
    valid = [(m["width"], name) for name, m in methods.items() if m["reason"] is None]
    if not valid:
        reasons = "; ".join(f"{name}: {m['reason']}" for name, m in methods.items())
        return "none", _na(reasons)
    name = min(valid)[1]
    return name, methods[name]


def _labels_by_run(
    ratings: RatingColumns, designs: dict[tuple[str, str], str] | None = None
) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, dict[str, dict[str, list[Any]]]]]:
    """The ratings by rater: ``judged``, (rater, dimension) -> run -> its value, for every rater not
    of kind human (:func:`collect_ratings` keeps one value per run, rater and dimension); ``human``,
    dimension -> run -> design -> the human labels, humans pooled by how the run was chosen (a
    review's design, ``random`` for an imported label). Read from the columns: only the human
    ratings (few) are made into :class:`Rating` tuples."""
    import numpy as np  # the ratings' columns are arrays (the report and estimate paths only)

    is_human = np.isin(ratings.kind, [k for k, name in enumerate(ratings.kinds) if name == "human"])
    human: dict[str, dict[str, dict[str, list[Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in ratings.at(np.flatnonzero(is_human)):
        design = (designs or {}).get((r.item_id, r.rater), "by_hand") if r.source == SOURCE else "random"
        human[r.dimension][r.item_id].setdefault(design, []).append(r.value)
    rows = np.flatnonzero(~is_human)
    # each value as the rating gives it: an imported one's own, a judge value's label
    origin = ratings.origin[rows]
    stored, judges = ratings.stored, ratings.judged
    codes = judges.value[np.where(origin < 0, -origin - 1, 0)].tolist() if judges is not None else origin.tolist()
    values = [stored[k].value if k >= 0 else judges.labels[c] for k, c in zip(origin.tolist(), codes)]
    judged: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    raters, dimensions, items = ratings.raters, ratings.dimensions, ratings.items
    for rater, dim, item, value in zip(
        ratings.rater[rows].tolist(), ratings.dimension[rows].tolist(), ratings.item[rows].tolist(), values
    ):
        judged[(raters[rater], dimensions[dim])][items[item]] = value
    return judged, human


def _combine(values: list[Any], binary: bool, threshold: float | None) -> float | None:
    if binary:
        labels = [b for b in (_binary(v, threshold) for v in values) if b is not None]
        if not labels or sum(labels) * 2 == len(labels):
            return None  # none, or a tie between humans: left out
        return int(sum(labels) * 2 > len(labels))
    # a score's mean: only numbers; a word or a boolean ("Pass", true) is not a point of the scale
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v]
    return math.fsum(numbers) / len(numbers) if numbers else None


def build_estimates(
    db_path: str | Path,
    *,
    judge: str | None = None,
    rubric: str | None = None,
    by: str = "model",
    threshold: float | None = None,
    level: float = 0.95,
    method: str = "auto",
    baseline: str | None = None,
    read: tuple[dict[str, tuple[str, str]], list[Any]] | None = None,
) -> dict[str, Any]:
    """Every estimate of ``db_path``'s judge dimensions (docs/audit.md, "Corrected estimates").
    ``read``: the runs' (model, scenario) by run_id and the collected ratings of these filters,
    when the caller has them (the report, from the audit: :func:`evalkit.agreement.audit.build_audit`'s
    ``share``); else they are read here."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, got {by!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    with open_readonly(db_path) as db:
        designs = read_review_designs(db)
        if read is None:
            if judge is not None:
                judge = resolve_judge(judge, judge_models(db), db.path, imported_judges(db))
            groups_of = {c.run_id: (c.model, c.scenario_id) for c in read_cards(db, signals=())}
            values = read_judge_columns(db, judge=judge, rubric=rubric)
            reviewed, _ = read_review_ratings(db)
            ratings = collect_ratings(read_ratings(db) + reviewed, values)
        else:
            groups_of, ratings = read
    judged, human = _labels_by_run(ratings, designs)
    for (rater, dim), values in list(judged.items()):
        if rater.startswith("human:"):  # a rater named as the pooled humans are is pooled with them
            del judged[(rater, dim)]
            for run, value in values.items():
                human[dim][run].setdefault(rater.removeprefix("human:"), []).append(value)
    group_of = GROUP_OF[by]
    estimates = []
    for rater, dim in sorted(judged):
        values = judged[(rater, dim)]
        # the distinct value objects (few: a judge's labels), each read once; by identity, so equal
        # values of another type or sign (1 and True, 0.0 and -0.0) stay apart
        distinct = {id(v): v for v in values.values()}
        informative = [v for v in distinct.values() if _number(v) is not None]  # "n/a" and the like say nothing
        binary = bool(informative) and all(_binary(v, threshold) is not None for v in informative)
        groups: dict[str, list[str]] = defaultdict(list)
        for run in sorted(values):
            groups[group_of(*groups_of.get(run, ("unknown", "unknown")))].append(run)
        combined = {key: _combine([v], binary, threshold) for key, v in distinct.items()}
        judge_of = {run: j for run, v in values.items() if (j := combined[id(v)]) is not None}
        for group, members in sorted(groups.items()):
            estimates.append(
                _estimate(rater, dim, group, members, judge_of, human[dim], binary, threshold, level, method)
            )
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "level": level,
        "by": by,
        "threshold": threshold,
        "method": method,
        "assumptions": [ASSUMPTION],
        "estimates": estimates,
    }
    if any(e["method"] == "ppi" and e["labels"]["n_labeled"] < FEW_LABELS for e in estimates):
        out["assumptions"].append(FEW_LABELS_NOTE)
    if baseline is not None:
        out["differences"] = differences(estimates, baseline, level)
    return out


def _humans(by_design: dict[str, list[Any]], designs, binary, threshold) -> float | None:
    values = [v for d in designs for v in by_design.get(d, [])]
    return _combine(values, binary, threshold)


def _estimate(rater, dim, group, runs, judge_of, human, binary, threshold, level, method) -> dict[str, Any]:
    """``judge_of``: run -> the judge's value as :func:`_combine` reads it; ``human``: run -> design -> the
    human labels of this dimension."""
    every = ("random", "stratified", "disagreement", "by_hand")
    judge_values: dict[str, Any] = {}
    humans: dict[tuple[str, ...], dict[str, Any]] = {d: {} for d in (*set(ALLOWED.values()), every)}
    for run in runs:
        j = judge_of.get(run)
        if j is None:
            continue
        judge_values[run] = j
        if run not in human:
            continue
        for designs, found in humans.items():
            h = _humans(human[run], designs, binary, threshold)
            if h is not None:
                found[run] = h
    entry: dict[str, Any] = {"judge": rater, "dimension": dim, "group": group, "kind": "rate" if binary else "mean"}
    entry["judge_rate"] = _round(math.fsum(judge_values.values()) / len(judge_values)) if judge_values else None
    by_design: dict[tuple[str, ...], tuple[dict[str, Any], dict[str, Any]]] = {}
    for designs, human_values in humans.items():
        if designs == every:
            continue
        if binary:
            by_design[designs] = rate_methods(judge_values, human_values, level)
        else:
            labelled = sorted(set(judge_values) & set(human_values))
            unl = [judge_values[r] for r in sorted(set(judge_values) - set(human_values))]
            found = _mean_methods([human_values[r] for r in labelled], [judge_values[r] for r in labelled], unl, level)
            found["rogan-gladen"] = _na("not a pass/fail dimension: give --threshold for a rate")
            by_design[designs] = found, {"n_labeled": len(labelled)}
    methods: dict[str, Any] = {}
    for name, designs in ALLOWED.items():
        result = dict(by_design[designs][0][name])
        result["left_out"] = len(humans[every]) - len(humans[designs])
        if result["reason"] is not None and result["left_out"] and "--threshold" not in result["reason"]:
            why = (
                f"{result['left_out']} labelled run(s) from the disagreement queue or chosen by hand, a design "
                f"{name} cannot use (it takes {' or '.join(designs)} samples)"
            )
            result["reason"] = (
                f"labels not sampled by a design the method allows: {why}"
                if not humans[designs]
                else f"{result['reason']}; left out: {why}"
            )
        methods[name] = result
    chosen, result = _choose(methods, method)
    designs = ALLOWED.get(chosen, ALLOWED["ppi"])
    used = dict(by_design[designs][1], left_out=len(humans[every]) - len(humans[designs]))
    entry["n"] = len(set(judge_values) - set(humans[designs]))
    entry |= {
        "method": chosen,
        "estimate": result["estimate"],
        "ci": result["ci"],
        "labels": used,
        "reason": result["reason"],
        "labels_alone": methods["labels"],
        "methods": methods,
    }
    return entry


def differences(estimates: list[dict[str, Any]], baseline: str, level: float) -> list[dict[str, Any]]:
    """Each group's corrected estimate minus the baseline group's, per judge and dimension: a normal
    interval from the two intervals' half-widths (the groups' runs and labels are disjoint)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    base = {(e["judge"], e["dimension"]): e for e in estimates if e["group"] == baseline}
    out = []
    for e in estimates:
        b = base.get((e["judge"], e["dimension"]))
        if b is None or e is b:
            continue
        row = {"judge": e["judge"], "dimension": e["dimension"], "group": e["group"], "baseline": baseline}
        if e["estimate"] is None or b["estimate"] is None:
            row |= {"difference": None, "ci": None, "reason": "an estimate is n/a"}
        else:
            se = math.hypot((e["ci"][1] - e["ci"][0]) / (2 * z), (b["ci"][1] - b["ci"][0]) / (2 * z))
            d = e["estimate"] - b["estimate"]
            row |= {"difference": round(d, 6), "ci": _ci(d - z * se, d + z * se), "reason": None}
        out.append(row)
    return out


def plan_labels(p: float, q0: float, q1: float, n: int, width: float, level: float = 0.95, m_pilot: int = 0):
    """The fewest human labels whose Rogan–Gladen interval is at most ``width`` wide for a judge
    rate ``p`` on ``n`` unlabelled runs and pilot ``q0``/``q1`` (from ``m_pilot`` labels a class):
    ``(m, m0, m1)``. ValueError with the reason when no number of labels reaches it."""
    pilot = 2 * m_pilot

    def wide(m: int) -> float:
        m0, m1 = allocate_labels(m, p, q0, q1, m_pilot)
        try:
            r = corrected_rate(p, n, q0, max(m0, 1), q1, max(m1, 1), level)
        except NotBetterThanChance:  # too few labels to tell the judge from chance: no interval yet
            return math.inf
        return r.high - r.low

    limit = corrected_rate(p, n, q0, 10**9, q1, 10**9, level)
    if limit.high - limit.low > width:
        raise ValueError(
            f"no number of labels reaches width {width}: the judge's rate over {n} runs alone is "
            f"{limit.high - limit.low:.3f} wide (more runs are needed)"
        )
    low = high = max(4, pilot)
    while wide(high) > width:
        if high > 1_000_000:
            raise ValueError("more than 1,000,000 labels")
        low, high = high, high * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (mid + 1, high) if wide(mid) > width else (low, mid)
    return (high, *allocate_labels(high, p, q0, q1, m_pilot))


def validate(
    db_path: str | Path,
    *,
    judge: str | None = None,
    dimension: str = "outcome",
    budget: int = 50,
    repetitions: int = 200,
    level: float = 0.95,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Empirical coverage on this database: the runs' mechanical outcome (``vector.all_passed``) is
    the truth; a seeded random ``budget`` of runs is labelled with it, the rest hidden; each method's
    interval is checked against the true rate of the runs it estimates, ``repetitions`` times."""
    with open_readonly(db_path) as db:
        if judge is not None:
            judge = resolve_judge(judge, judge_models(db), db.path, imported_judges(db))
        truth = {}
        for c in read_cards(db):
            passed = (c.card.get("vector") or {}).get("all_passed")
            if isinstance(passed, bool):
                truth[c.run_id] = int(passed)
        values = read_judge_columns(db, judge=judge)
    labels, _ = _labels_by_run(collect_ratings([], values))
    out = []
    for rater, dim in sorted(key for key in labels if key[1] == dimension):
        judged = {}
        for run, value in labels[(rater, dim)].items():
            if run in truth:
                j = _combine([value], True, None)
                if j is not None:
                    judged[run] = j
        runs = sorted(judged)
        if len(runs) <= budget + 1:
            out.append({"judge": rater, "dimension": dim, "runs": len(runs), "reason": "fewer runs than the budget"})
            continue
        rng = random.Random(seed)
        hits: dict[str, list[int]] = {m: [] for m in ("rogan-gladen", "ppi", "labels")}
        widths: dict[str, list[float]] = {m: [] for m in hits}
        for _ in range(repetitions):
            chosen = set(rng.sample(runs, budget))
            human = {r: truth[r] for r in chosen}
            methods, _ = rate_methods(judged, human, level)
            unlabelled = [truth[r] for r in runs if r not in chosen]
            targets = {
                "rogan-gladen": sum(unlabelled) / len(unlabelled),
                "ppi": sum(truth[r] for r in runs) / len(runs),
                "labels": sum(truth[r] for r in runs) / len(runs),
            }
            for name, m in methods.items():
                if m["reason"] is None:
                    hits[name].append(int(m["ci"][0] - 1e-9 <= targets[name] <= m["ci"][1] + 1e-9))
                    widths[name].append(m["width"])
        out.append(
            {
                "judge": rater,
                "dimension": dim,
                "runs": len(runs),
                "budget": budget,
                "repetitions": repetitions,
                "level": level,
                "true_rate": round(sum(truth[r] for r in runs) / len(runs), 6),
                "judge_rate": round(sum(judged.values()) / len(runs), 6),
                "coverage": {
                    name: {
                        "coverage": round(sum(h) / len(h), 4) if h else None,
                        "mean_width": round(math.fsum(widths[name]) / len(h), 4) if h else None,
                        "computed": len(h),
                    }
                    for name, h in hits.items()
                },
                "reason": None,
            }
        )
    return out
