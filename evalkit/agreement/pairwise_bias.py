"""Pairwise judges: position bias, length bias, self-preference, win rates and Bradley–Terry strengths.

Input: the stored pairwise verdicts (:mod:`evalkit.db.pairwise`), each ``a``/``b``/``tie`` in the
pair's own frame with the order the rater saw (``ab``: a shown first). Per judge rater and
dimension, over the pairs it judged:

- ``position_consistency``: pairs judged in both orders whose two verdicts are the same (a tie or a
  missing verdict against a verdict is inconsistent; two missing verdicts are no verdict);
- ``strict_flips``: pairs with ``a`` in one order and ``b`` in the other;
- ``first_shown``: of the decisive verdicts (``a`` or ``b``), the share naming the answer shown first
  (0.5 = no position preference);
- ``ties``: of the verdicts given, the share that are ties;
- against the reference (a gold label, else the human raters when they agree; pairs where they
  disagree have none and are counted in ``reference_conflicts``): ``accuracy_ab``/``accuracy_ba``
  (a missing verdict counts as wrong), Cohen's κ in each order (pairs without a verdict left out),
  and ``kappa_between_orders`` (κ of the ab verdicts against the ba verdicts);
- ``longer_wins``: of the decisive verdicts on pairs whose lengths differ, the share naming the
  longer answer (lengths from the import's ``a_length``/``b_length``, else the runs' judge bundles);
- ``self_preference``: when a pair sets a run of the judge's own model against another model's,
  the judge's win rate for its own model's run minus the win rate other judges give the same runs
  on the same pairs.

Win rates: per judge, dimension and (model, opponent) pair of models, the model's mean score over
the pairs (1 win, ½ tie, 0 loss; both orders averaged). The model is the side every pair put as
``a`` (with ``--baseline``: the candidate, its opponent the baseline), else the first name.
Bradley–Terry: per judge and dimension, every verdict a comparison (a tie half a win each),
strengths fitted by Hunter's MM algorithm and given as log-strengths with a mean of 0.

Intervals are percentile bootstrap intervals resampling pairs (the unit a judge saw twice), with
the audit's seed, resample count and level; a figure is ``{value, reason, n, ci_low, ci_high}``
and an undefined one has ``value: null`` and a reason.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalkit.agreement.self_judging import model_key
from evalkit.agreement.stats.bootstrap import _interval
from evalkit.agreement.stats.confusion import _batch_kappa
from evalkit.agreement.stats.pairwise import cohen_kappa

LABELS = ("a", "b", "tie")
SCORE = {"a": 1.0, "tie": 0.5, "b": 0.0}  # a's score for a verdict
BT_ITERATIONS = 500
BT_TOLERANCE = 1e-10


@dataclass
class Judged:
    """One pair as one judge saw it on one dimension, with its reference."""

    pair_id: str
    a: str
    b: str
    ab: str | None = None  # the verdict when a was shown first (None: no verdict)
    ba: str | None = None
    has_ab: bool = False
    has_ba: bool = False
    ref: str | None = None
    a_length: int | None = None
    b_length: int | None = None

    def verdicts(self) -> list[tuple[str, str | None]]:
        return [(o, v) for o, v, has in (("ab", self.ab, self.has_ab), ("ba", self.ba, self.has_ba)) if has]

    def a_score(self) -> float | None:
        """a's mean score over the orders with a verdict (None: none)."""
        scores = [SCORE[v] for _, v in self.verdicts() if v is not None]
        return sum(scores) / len(scores) if scores else None


@dataclass
class Boot:
    """The audit's bootstrap settings: ``None`` resamples = point estimates only."""

    n_resamples: int
    seed: int
    ci: float
    weights: dict[int, np.ndarray] = field(default_factory=dict)

    def draws(self, n: int) -> np.ndarray:
        """(resamples × n) multinomial counts: how often each of n pairs is drawn (one seed per n,
        so every figure over the same pairs uses the same resamples)."""
        if n not in self.weights:
            rng = np.random.default_rng(self.seed)
            self.weights[n] = rng.multinomial(n, np.full(n, 1.0 / n), size=self.n_resamples).astype(float)
        return self.weights[n]


def _figure(value: float | None, n: int, reason: str | None = None) -> dict[str, Any]:
    if value is not None and not math.isfinite(value):
        value, reason = None, "the figure is not finite for these data"
    return {"value": value, "reason": None if value is not None else reason, "n": n, "ci_low": None, "ci_high": None}


def _with_interval(fig: dict[str, Any], values: np.ndarray | None, boot: Boot | None) -> dict[str, Any]:
    if fig["value"] is not None and boot is not None and values is not None:
        fig["ci_low"], fig["ci_high"] = _interval(values, boot.ci)
    return fig


def rate(num: Iterable[float], den: Iterable[float], boot: Boot | None, empty: str) -> dict[str, Any]:
    """Σnum / Σden over pairs, with the pairs resampled for the interval."""
    num_a, den_a = np.asarray(list(num), float), np.asarray(list(den), float)
    total = float(den_a.sum())
    if total == 0:
        return _figure(None, 0, empty)
    fig = _figure(float(num_a.sum()) / total, int(total))
    values = None
    if boot is not None:
        w = boot.draws(len(num_a))
        with np.errstate(invalid="ignore", divide="ignore"):
            values = (w @ num_a) / (w @ den_a)
    return _with_interval(fig, values, boot)


def kappa(x: list[str | None], y: list[str | None], boot: Boot | None) -> dict[str, Any]:
    """Cohen's κ of two verdict lists over pairs (pairs with a side missing left out)."""
    stat = cohen_kappa(x, y, LABELS)
    n = sum(1 for u, v in zip(x, y) if u is not None and v is not None)
    fig = _figure(stat["value"], n, stat["reason"])
    values = None
    if boot is not None and fig["value"] is not None:
        k = len(LABELS)
        onehot = np.zeros((len(x), k * k))
        for i, (u, v) in enumerate(zip(x, y)):
            if u is not None and v is not None:
                onehot[i, LABELS.index(u) * k + LABELS.index(v)] = 1.0
        values = _batch_kappa((boot.draws(len(x)) @ onehot).reshape(-1, k, k), weighted=False)
    return _with_interval(fig, values, boot)


# ---------------------------------------------------------------------------------------------
# grouping


def _reference(rows: list[Any]) -> tuple[str | None, bool]:
    """The reference verdict of one pair and dimension from its non-judge rows: gold when given,
    else the humans' when they agree; (None, True) when they disagree."""
    gold = {r.verdict for r in rows if r.rater_kind == "gold" and r.verdict}
    humans = {r.verdict for r in rows if r.rater_kind == "human" and r.verdict}
    chosen = gold or humans
    if len(chosen) > 1:
        return None, True
    return (next(iter(chosen)) if chosen else None), False


def group(verdicts: list[Any], lengths: dict[str, int | None]) -> tuple[dict[tuple[str, str], list[Judged]], dict]:
    """{(judge rater, dimension): [Judged]} and, per dimension, the reference counts."""
    by_pair: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for v in verdicts:
        by_pair[(v.pair_id, v.dimension)].append(v)
    judged: dict[tuple[str, str], dict[str, Judged]] = defaultdict(dict)
    refs: dict[str, dict[str, int]] = defaultdict(lambda: {"pairs": 0, "conflicts": 0})
    for (pair_id, dimension), rows in sorted(by_pair.items()):
        ref, conflict = _reference([r for r in rows if r.rater_kind != "judge"])
        refs[dimension]["pairs"] += ref is not None
        refs[dimension]["conflicts"] += conflict
        for r in rows:
            if r.rater_kind != "judge" or r.shown not in ("ab", "ba"):
                continue
            j = judged[(r.rater, dimension)].setdefault(
                pair_id,
                Judged(
                    pair_id,
                    r.a,
                    r.b,
                    ref=ref,
                    a_length=r.a_length if r.a_length is not None else lengths.get(r.a),
                    b_length=r.b_length if r.b_length is not None else lengths.get(r.b),
                ),
            )
            setattr(j, r.shown, r.verdict)
            setattr(j, "has_" + r.shown, True)
    return {k: list(v.values()) for k, v in sorted(judged.items())}, dict(sorted(refs.items()))


# ---------------------------------------------------------------------------------------------
# per judge and dimension


def position_figures(pairs: list[Judged], boot: Boot | None) -> dict[str, Any]:
    both = [p.has_ab and p.has_ba for p in pairs]
    same = [p.has_ab and p.has_ba and p.ab is not None and p.ab == p.ba for p in pairs]
    flips = [p.has_ab and p.has_ba and {p.ab, p.ba} == {"a", "b"} for p in pairs]
    first = [sum((o == "ab") == (v == "a") for o, v in p.verdicts() if v in ("a", "b")) for p in pairs]
    decisive = [sum(v in ("a", "b") for _, v in p.verdicts()) for p in pairs]
    ties = [sum(v == "tie" for _, v in p.verdicts()) for p in pairs]
    given = [sum(v is not None for _, v in p.verdicts()) for p in pairs]
    no_both = "no pair was judged in both orders"
    return {
        "n_pairs": len(pairs),
        "n_both_orders": int(sum(both)),
        "n_missing_verdicts": int(sum(v is None for p in pairs for _, v in p.verdicts())),
        "position_consistency": rate(same, both, boot, no_both),
        "strict_flips": rate(flips, both, boot, no_both),
        "first_shown": rate(first, decisive, boot, "no decisive verdict (every verdict a tie or missing)"),
        "ties": rate(ties, given, boot, "no verdict given"),
    }


def reference_figures(pairs: list[Judged], boot: Boot | None) -> dict[str, Any]:
    out: dict[str, Any] = {"n_with_reference": sum(p.ref is not None for p in pairs)}
    for order in ("ab", "ba"):
        has = [p.ref is not None and getattr(p, "has_" + order) for p in pairs]
        right = [h and getattr(p, order) == p.ref for h, p in zip(has, pairs)]
        none = f"no pair with a reference was judged in order {order}"
        out[f"accuracy_{order}"] = rate(right, has, boot, none)
        fig = kappa([getattr(p, order) if p.ref is not None else None for p in pairs], [p.ref for p in pairs], boot)
        out[f"kappa_{order}"] = fig if any(has) else {**fig, "reason": none}
    out["kappa_between_orders"] = kappa([p.ab for p in pairs], [p.ba for p in pairs], boot)
    return out


def length_figure(pairs: list[Judged], boot: Boot | None) -> dict[str, Any]:
    longer = []
    counted = []
    for p in pairs:
        if p.a_length is None or p.b_length is None or p.a_length == p.b_length:
            longer.append(0)
            counted.append(0)
            continue
        winner = "a" if p.a_length > p.b_length else "b"
        decisive = [v for _, v in p.verdicts() if v in ("a", "b")]
        longer.append(sum(v == winner for v in decisive))
        counted.append(len(decisive))
    known = any(p.a_length is not None and p.b_length is not None for p in pairs)
    reason = (
        "no decisive verdict on a pair whose answers differ in length"
        if known
        else "no lengths: a and b are not runs in this database and the import gave no a_length, b_length"
    )
    return rate(longer, counted, boot, reason)


# ---------------------------------------------------------------------------------------------
# models: win rates, Bradley–Terry, self-preference


def win_rates(pairs: list[Judged], models: dict[str, str | None], boot: Boot | None) -> list[dict[str, Any]]:
    """Per (model, opponent): the model's mean score over the pairs setting a run of one against a
    run of the other (ties half)."""
    groups: dict[tuple[str, str], list[float | None]] = defaultdict(list)
    frames: dict[tuple[str, str], set[str]] = defaultdict(set)  # which model each unordered pair put as a
    for p in pairs:
        ma, mb = models.get(p.a), models.get(p.b)
        if not ma or not mb or ma == mb:
            continue
        s = p.a_score()
        frames[tuple(sorted((ma, mb)))].add(ma)
        if ma > mb:  # each unordered pair of models once, the first name as "model"
            ma, mb, s = mb, ma, None if s is None else 1.0 - s
        groups[(ma, mb)].append(s)
    out = []
    for (ma, mb), scores in sorted(groups.items()):
        known = [s for s in scores if s is not None]
        if frames[(ma, mb)] == {mb}:  # every pair set mb's run as a (a candidate against its baseline)
            ma, mb, known = mb, ma, [1.0 - s for s in known]
        fig = rate(known, [1.0] * len(known), boot, "no verdict on these pairs")
        out.append({"model": ma, "opponent": mb, "n_pairs": len(scores), "win_rate": fig})
    return out


def _bt_fit(wins: np.ndarray) -> np.ndarray:
    """Bradley–Terry log-strengths (mean 0) from stacks of win matrices ``wins[..., i, j]`` (i beat
    j); NaN where a model won all or none of its comparisons (no finite maximum)."""
    games = wins + np.swapaxes(wins, -1, -2)
    w = wins.sum(axis=-1)
    total = games.sum(axis=-1)
    p = np.ones(w.shape)
    for _ in range(BT_ITERATIONS):
        with np.errstate(invalid="ignore", divide="ignore"):
            denom = (games / (p[..., :, None] + p[..., None, :])).sum(axis=-1)
            new = np.where(denom > 0, w / denom, p)
            new = new / np.exp(np.log(np.where(new > 0, new, 1.0)).mean(axis=-1, keepdims=True))
        done = bool(np.all(~(np.abs(new - p) >= BT_TOLERANCE)))  # NaN (a degenerate resample) counts as done
        p = new
        if done:
            break
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(p)
    bad = ((w <= 0) | (w >= total)).any(axis=-1)
    logs[bad] = np.nan
    return logs - logs.mean(axis=-1, keepdims=True)  # a NaN row stays NaN


def bradley_terry(pairs: list[Judged], models: dict[str, str | None], boot: Boot | None) -> dict[str, Any]:
    used = [p for p in pairs if models.get(p.a) and models.get(p.b) and models.get(p.a) != models.get(p.b)]
    names = sorted({models[p.a] for p in used} | {models[p.b] for p in used})  # type: ignore[type-var]
    if len(names) < 2:
        return {"models": [], "reason": "fewer than two models among the judged pairs' runs"}
    index = {m: i for i, m in enumerate(names)}
    k = len(names)
    per_pair = np.zeros((len(used), k, k))
    for n, p in enumerate(used):
        i, j = index[models[p.a]], index[models[p.b]]  # type: ignore[index]
        for _, v in p.verdicts():
            if v is not None:
                per_pair[n, i, j] += SCORE[v]
                per_pair[n, j, i] += 1.0 - SCORE[v]
    point = _bt_fit(per_pair.sum(axis=0)[None])[0]
    reason = None
    if np.isnan(point).any():
        reason = "a model won all or none of its comparisons: its strength has no finite estimate"
    draws = None
    if boot is not None and reason is None:
        draws = _bt_fit(np.einsum("bn,nij->bij", boot.draws(len(used)), per_pair))
    out = []
    for m, i in index.items():
        fig = _figure(None if reason else float(point[i]), len(used), reason)
        out.append({"model": m, "strength": _with_interval(fig, None if draws is None else draws[:, i], boot)})
    return {"models": out, "reason": reason}


def judge_model_of(rater: str) -> str:
    """The model of a judge rater: ``MODEL@RUBRIC`` → MODEL (an imported name is taken whole)."""
    return rater.rsplit("@", 1)[0] if "@" in rater else rater


def kept(verdict: Any, judge: str | None, rubric: str | None) -> bool:
    """Whether ``audit --judge/--rubric`` keeps a stored verdict: a judge's when it is that judge
    (and rubric, ``MODEL@RUBRIC``), every human or gold verdict (the reference) always."""
    if verdict.rater_kind != "judge":
        return True
    model, _, used = verdict.rater.rpartition("@") if "@" in verdict.rater else (verdict.rater, "", "")
    return (judge is None or model == judge) and (rubric is None or used == rubric)


def self_preference(
    judge: str, mine: list[Judged], others: list[list[Judged]], models: dict[str, str | None], boot: Boot | None
) -> dict[str, Any]:
    own = model_key(judge_model_of(judge))
    others_by_pair: dict[str, list[float]] = defaultdict(list)
    for pairs in others:
        for p in pairs:
            if (s := p.a_score()) is not None:
                others_by_pair[p.pair_id].append(s)
    mine_scores, other_scores = [], []
    n_own = 0
    for p in mine:
        sides = [model_key(models.get(x) or "") == own for x in (p.a, p.b)]
        if sides[0] == sides[1]:
            continue
        n_own += 1
        s, theirs = p.a_score(), others_by_pair.get(p.pair_id)
        if s is None or not theirs:
            continue
        flip = (lambda x: x) if sides[0] else (lambda x: 1.0 - x)
        mine_scores.append(flip(s))
        other_scores.append(flip(sum(theirs) / len(theirs)))
    out: dict[str, Any] = {"n_own_model_pairs": n_own}
    if not mine_scores:
        reason = (
            "no pair sets a run of the judge's own model against another model's"
            if not n_own
            else "no other judge judged the pairs with the judge's own model"
        )
        out.update(
            judge_win_rate=_figure(None, 0, reason),
            other_judges_win_rate=_figure(None, 0, reason),
            difference=_figure(None, 0, reason),
        )
        return out
    ones = [1.0] * len(mine_scores)
    out["judge_win_rate"] = rate(mine_scores, ones, boot, "")
    out["other_judges_win_rate"] = rate(other_scores, ones, boot, "")
    diff = np.asarray(mine_scores) - np.asarray(other_scores)
    fig = _figure(float(diff.mean()), len(diff))
    values = None
    if boot is not None:
        w = boot.draws(len(diff))
        values = (w @ diff) / w.sum(axis=1)
    out["difference"] = _with_interval(fig, values, boot)
    return out


# ---------------------------------------------------------------------------------------------


def analyse(
    verdicts: list[Any],
    runs: dict[str, Any],
    bootstrap: dict[str, Any] | None,
) -> dict[str, Any]:
    """The audit's ``pairwise`` section (docs/audit.md) from stored verdicts; ``runs`` maps run ids
    to objects with ``model`` and ``length`` (answers that are runs); ``bootstrap`` is
    ``{n_resamples, seed, ci}`` or None (no intervals)."""
    lengths = {k: getattr(v, "length", None) for k, v in runs.items()}
    models = {k: getattr(v, "model", None) for k, v in runs.items()}
    groups, refs = group(verdicts, lengths)

    def boot() -> Boot | None:  # a fresh draw cache per judge: its pairs are its own
        return Boot(bootstrap["n_resamples"], bootstrap["seed"], bootstrap["ci"]) if bootstrap else None

    judges = []
    for (rater, dimension), pairs in groups.items():
        b = boot()
        entry: dict[str, Any] = {"judge": rater, "dimension": dimension}
        entry |= position_figures(pairs, b)
        entry |= reference_figures(pairs, b)
        entry["longer_wins"] = length_figure(pairs, b)
        others = [p for (r, d), p in groups.items() if d == dimension and r != rater]
        entry["self_preference"] = self_preference(rater, pairs, others, models, b)
        entry["win_rates"] = win_rates(pairs, models, b)
        entry["bradley_terry"] = bradley_terry(pairs, models, b)
        judges.append(entry)
    return {
        "references": [{"dimension": d, "pairs": c["pairs"], "conflicts": c["conflicts"]} for d, c in refs.items()],
        "judges": judges,
    }
