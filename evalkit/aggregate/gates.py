"""Quality gates: the conditions that make a command exit 3, each failure one line naming what failed.

One rule for every gate: a figure that cannot be checked (undefined, nothing measured) fails the
gate, saying why; a gate that cannot be checked does not pass. Pure.

- :func:`model_gate_failure` — ``evalkit score`` (and ``evalkit report``): a per-model figure of the
  aggregate against a limit (``--fail-under``, ``--min-pass-rate``, ``--min-safe-pass-rate``,
  ``--max-unsafe-rate``). The first failure, model by model, gates in the order of
  :data:`MODEL_GATES`.
- :func:`worse_failure` — ``evalkit compare --fail-if-worse``: a candidate significantly worse than
  its baseline on any compared metric (for ``unsafe_rate`` worse means higher).
- :func:`crossed_line` / :func:`unmeasured_line` — the lines ``evalkit probe --fail-if`` prints
  (its conditions are parsed in :mod:`evalkit.probes.gates`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


@dataclass(frozen=True)
class ModelGate:
    """Fails a model whose ``metric`` is ``fails_when`` the limit (or undefined)."""

    option: str  # the command-line option, as the failure line names it
    metric: str  # the per-model field of the aggregate
    fails_when: str  # "<": a minimum; ">": a maximum
    undefined: str  # what the line says when the model has no such figure


MODEL_GATES = {
    "fail_under": ModelGate("--fail-under", "score_mean", "<", "no score"),
    "min_pass_rate": ModelGate("--min-pass-rate", "pass_rate", "<", "no pass rate"),
    "min_safe_pass_rate": ModelGate("--min-safe-pass-rate", "safe_pass_rate", "<", "no safe pass rate"),
    "max_unsafe_rate": ModelGate("--max-unsafe-rate", "unsafe_rate", ">", "no unsafe rate"),
}


def model_gate_failure(result: Mapping[str, Any], **limits: float | None) -> str | None:
    """The first failed per-model gate of an aggregate as a one-line reason, or None.

    ``limits`` are keyword names of :data:`MODEL_GATES` (``fail_under=0.8, max_unsafe_rate=0``);
    None (or absent) leaves a gate off. With a gate on and no model at all: ``no scored runs``.
    """
    unknown = sorted(set(limits) - set(MODEL_GATES))
    if unknown:
        raise TypeError(f"unknown gate(s): {', '.join(unknown)}")
    active = [(MODEL_GATES[name], limits[name]) for name in MODEL_GATES if limits.get(name) is not None]
    for m in result["models"]:
        for gate, limit in active:
            value = m.get(gate.metric)
            if value is None or OPS[gate.fails_when](value, limit):
                got = gate.undefined if value is None else f"{value:.4f}"
                return f"gate failed: model {m['model']} {gate.metric} {got} {gate.fails_when} {gate.option} {limit}"
    if active and not result["models"]:
        return "gate failed: no scored runs"
    return None


def worse_failure(comparison: Mapping[str, Any], candidate: str, baseline: str) -> str | None:
    """``--fail-if-worse``: one line naming every metric on which ``candidate`` is significantly worse
    than ``baseline`` (paired, after the comparison's correction), or None."""
    from evalkit.aggregate.uncertainty.paired import significantly_worse

    worse = significantly_worse(comparison, candidate)
    if not worse:
        return None
    what = ", ".join(f"{r['metric']} {r['delta']:+.3f} (p {r['p_adjusted']:.3g})" for r in worse)
    return f"gate failed: {candidate} is significantly worse than {baseline}: {what}"


def crossed_line(gate_text: str, subject: str, metric: str, value: float) -> str:
    """A probe gate that held for one measured rate."""
    return f"gate failed: {gate_text}: {subject} {metric} = {value:.4g}"


def unmeasured_line(gate_text: str, why: str) -> str:
    """A probe gate with nothing measured to check: it fails, saying why."""
    return f"gate failed: {gate_text}: not measured ({why})"
