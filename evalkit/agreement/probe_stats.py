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

Every rate is a Stat (``{"value", "reason"}``) with the Wilson score interval of its share of runs
(at the audit's ``[bootstrap] ci`` level; none with ``--resamples 0``). Probe answers are read only
here; nothing else in the audit sees them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from evalkit.agreement.probe_names import FOOLING_PROBES, PROBES
from evalkit.agreement.raters import label_credit, same_label
from evalkit.agreement.stats.corrected import wilson_interval
from evalkit.agreement.stats.stat import _ok, _undefined
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


def _rate(successes: int, n: int, intervals: dict[str, Any] | None, empty: str) -> dict[str, Any]:
    """A share of runs as a Stat with its Wilson score interval at ``intervals["ci"]`` (None: no
    interval). A share is a count of independent runs: a percentile bootstrap would give 0 of 2
    the interval [0, 0], which claims a certainty two runs cannot give; Wilson's is [0, 0.66]."""
    if not n:
        return dict(_undefined(empty), ci_low=None, ci_high=None)
    point = _ok(successes / n)
    if intervals is None:
        return dict(point, ci_low=None, ci_high=None)
    interval = wilson_interval(successes, n, intervals["ci"])
    return dict(point, ci_low=interval.low, ci_high=interval.high)


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
    ``{"ci", ...}`` (the level of the intervals) or None (no intervals)."""
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
        }
        for name, code in (("unchanged_rate", UNCHANGED), ("lenient_flip_rate", LENIENT), ("strict_flip_rate", STRICT)):
            entry[name] = _rate(int(np.sum(codes == code)), len(pairs), bootstrap, "no run has both answers")
        if probe in FOOLING_PROBES and dim == OUTCOME:
            failing = [(b, a) for run_id, b, a in pairs if run_id in failed]
            flags = np.array([b == "fail" and a == "pass" for b, a in failing], dtype=float)
            entry |= {
                "n_failed": len(failing),
                "n_failed_judged_fail": sum(1 for b, _ in failing if b == "fail"),
                "fooled": int(flags.sum()),
            }
            entry["fooled_rate"] = _rate(
                int(flags.sum()), len(failing), bootstrap, "no mechanically failed run has both answers"
            )
        else:
            entry |= {"n_failed": None, "n_failed_judged_fail": None, "fooled": None}
            entry["fooled_rate"] = dict(
                _undefined(f"measured for {' and '.join(FOOLING_PROBES)} on the {OUTCOME} dimension only"),
                ci_low=None,
                ci_high=None,
            )
        entries.append(entry)
    return entries


__all__ = ["RATES", "direction", "failed_run_ids", "originals", "probe_entries"]
