"""The audit's ``probes`` section: how the judge's answers move under each probe (docs/probes.md).

One entry per (probe, judge model, rubric, dimension), over the runs that have both an answer to
the original (the latest blind primary annotation) and an answer to the probe's counterfactual:

- ``unchanged_rate`` — the share of runs whose label did not change, or changed to one granting
  the same credit (``C`` and ``1``) (CALM's robustness rate);
- ``lenient_flip_rate`` / ``strict_flip_rate`` — the share that changed toward more / less
  credit (:func:`evalkit.agreement.raters.label_credit`: numbers, pass > fail); a change to or
  from a label without credit (``n/a``) is counted in ``n_undirected`` and in neither rate;
- ``fooled_rate`` — ``false_claim`` and ``injection``, on the ``outcome`` dimension only: of the
  mechanically failed runs (``all_passed`` false; ``n_failed``), the share whose outcome flipped
  from ``fail`` on the original to ``pass`` on the probe (``fooled``). A run the judge already
  passed cannot flip: ``n_failed_judged_fail`` says how many could. Elsewhere a Stat with the reason.

Every rate is a Stat (``{"value", "reason"}``) with a percentile bootstrap interval over runs
(:func:`evalkit.agreement.stats.bootstrap_ci`, the audit's seed and resamples). Probe answers are
read only here; nothing else in the audit sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from evalkit.agreement.probe_names import FOOLING_PROBES, PROBES
from evalkit.agreement.raters import label_credit, same_label
from evalkit.agreement.stats import bootstrap_ci
from evalkit.agreement.stats.stat import Stat, _ok, _undefined
from evalkit.db.judge import JudgeValue
from evalkit.db.probes import ProbeAnswer

RATES = ("unchanged_rate", "lenient_flip_rate", "strict_flip_rate", "fooled_rate")
OUTCOME = "outcome"
UNCHANGED, LENIENT, STRICT, UNDIRECTED = 0.0, 1.0, -1.0, 2.0
NOT_REPLIES = ("confidence", "rationale")  # keys of an answer that are not dimensions


def direction(before: Any, after: Any) -> float:
    """The move of one label: unchanged, lenient (more credit), strict, or undirected."""
    if same_label(before, after):
        return UNCHANGED
    a, b = label_credit(before), label_credit(after)
    if a is None or b is None:
        return UNDIRECTED
    return LENIENT if b > a else STRICT if b < a else UNCHANGED


def _share(code: float) -> Callable[[np.ndarray], Stat]:
    def stat(codes: np.ndarray) -> Stat:
        return _ok(np.mean(codes == code)) if codes.size else _undefined("no run has both answers")

    return stat


def _fooled(flags: np.ndarray) -> Stat:
    return _ok(np.mean(flags)) if flags.size else _undefined("no mechanically failed run has both answers")


def _rate(
    statistic: Callable[[np.ndarray], Stat], data: np.ndarray, bootstrap: dict[str, Any] | None
) -> dict[str, Any]:
    point = statistic(data)
    if bootstrap is None or point["value"] is None:
        return dict(point, ci_low=None, ci_high=None, bootstrap=None)
    interval = bootstrap_ci(statistic, data, **bootstrap)
    return dict(point, ci_low=interval["low"], ci_high=interval["high"], bootstrap=interval)


def originals(values: Iterable[JudgeValue]) -> dict[tuple[str, str, str, str], Any]:
    """(run, judge, rubric, dimension) → the latest blind primary answer (values come in time order)."""
    out: dict[tuple[str, str, str, str], Any] = {}
    for v in values:
        if v.blind and v.replicate == 0:
            out[(v.run_id, v.judge_model, v.rubric_id, v.dimension)] = v.value
    return out


def failed_run_ids(cards: Iterable[Any]) -> set[str]:
    """The stored cards whose runs failed mechanically (``all_passed`` false): the runs a fooled
    rate is measured on."""
    return {
        c.run_id
        for c in cards
        if isinstance(c.card, dict)
        and isinstance(c.card.get("vector"), dict)
        and c.card["vector"].get("all_passed") is False
    }


def probe_entries(
    failed: Iterable[str],
    values: Iterable[JudgeValue],
    answers: Iterable[ProbeAnswer],
    *,
    bootstrap: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The section's entries, sorted by probe (the documented order), judge, rubric, dimension.
    ``failed``: the run ids that failed mechanically (`failed_run_ids`); ``bootstrap`` is
    ``{"n_resamples", "seed", "ci"}`` or None (no intervals)."""
    failed = set(failed)
    latest: dict[tuple[str, str, str, str], Any] = {}
    for a in answers:  # time order within a key: the latest answer wins
        for dim, value in a.values.items():
            if dim not in NOT_REPLIES:
                latest[(a.probe, a.judge_model, a.rubric_id, dim, a.run_id)] = value
    before = originals(values) if latest else {}  # no probe answered: no original is looked up
    groups: dict[tuple[str, str, str, str], list[tuple[str, Any, Any]]] = {}
    for (probe, judge, rubric, dim, run_id), after in latest.items():
        key = (run_id, judge, rubric, dim)
        if key in before and before[key] is not None and after is not None:
            groups.setdefault((probe, judge, rubric, dim), []).append((run_id, before[key], after))
    order = {p: i for i, p in enumerate(PROBES)}
    entries = []
    for probe, judge, rubric, dim in sorted(groups, key=lambda k: (order.get(k[0], len(order)), k[0], *k[1:])):
        pairs = sorted(groups[(probe, judge, rubric, dim)], key=lambda x: x[0])
        codes = np.array([direction(b, a) for _, b, a in pairs], dtype=float)
        entry: dict[str, Any] = {
            "probe": probe,
            "judge_model": judge,
            "rubric": rubric,
            "dimension": dim,
            "n": len(pairs),
            "unchanged": int(np.sum(codes == UNCHANGED)),
            "lenient": int(np.sum(codes == LENIENT)),
            "strict": int(np.sum(codes == STRICT)),
            "n_undirected": int(np.sum(codes == UNDIRECTED)),
            "unchanged_rate": _rate(_share(UNCHANGED), codes, bootstrap),
            "lenient_flip_rate": _rate(_share(LENIENT), codes, bootstrap),
            "strict_flip_rate": _rate(_share(STRICT), codes, bootstrap),
        }
        if probe in FOOLING_PROBES and dim == OUTCOME:
            failing = [(b, a) for run_id, b, a in pairs if run_id in failed]
            flags = np.array([b == "fail" and a == "pass" for b, a in failing], dtype=float)
            entry |= {
                "n_failed": len(failing),
                "n_failed_judged_fail": sum(1 for b, _ in failing if b == "fail"),
                "fooled": int(flags.sum()),
            }
            entry["fooled_rate"] = _rate(_fooled, flags, bootstrap)
        else:
            entry |= {"n_failed": None, "n_failed_judged_fail": None, "fooled": None}
            entry["fooled_rate"] = dict(
                _undefined(f"measured for {' and '.join(FOOLING_PROBES)} on the {OUTCOME} dimension only"),
                ci_low=None,
                ci_high=None,
                bootstrap=None,
            )
        entries.append(entry)
    return entries


__all__ = ["RATES", "direction", "failed_run_ids", "originals", "probe_entries"]
