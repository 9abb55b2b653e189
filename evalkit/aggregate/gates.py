"""Quality gates: the conditions that make a command exit 3, each failure one line naming what failed.

One rule for every gate: a figure that cannot be checked (undefined, nothing measured) fails the
gate, saying why; a gate that cannot be checked does not pass. Pure.

- :func:`model_gate_failure` — ``evalkit score`` (and ``evalkit report``): a per-model figure of the
  aggregate against a limit (``--fail-under``, ``--min-pass-rate``, ``--min-safe-pass-rate``,
  ``--max-unsafe-rate``). Every failed gate, in the order of :data:`MODEL_GATES`, with every model
  that fails it, worst first.
- :func:`worse_failure` — ``evalkit compare --fail-if-worse``: a candidate significantly worse than
  its baseline on any compared metric (for ``unsafe_rate`` worse means higher).
- :func:`crossed_line` / :func:`unmeasured_line` — the lines ``evalkit probe --fail-if`` prints
  (its conditions are parsed in :mod:`evalkit.probes.gates`).
"""

from __future__ import annotations

import math
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


def figure_text(value: float, limit: float, fails_when: str) -> str:
    """A failing figure with four decimals, or as many more as it takes for the printed number to be
    past the limit too: 4.8e-05 over ``--max-unsafe-rate 0`` prints ``0.00005``, not ``0.0000``. A
    figure that is not past the limit keeps four decimals."""
    if not OPS[fails_when](value, limit):
        return f"{value:.4f}"
    for digits in range(4, 18):
        text = f"{value:.{digits}f}"
        if OPS[fails_when](float(text), limit):
            return text
    return repr(value)


def _worst_first(gate: ModelGate, failing: list[tuple[str, float | None]]) -> list[tuple[str, float | None]]:
    """A gate's failing models, the farthest past the limit first (an undefined figure after every
    measured one), ties by name."""

    def key(item: tuple[str, float | None]) -> tuple:
        name, value = item
        if value is None:
            return (1, 0.0, name)
        return (0, -value if gate.fails_when == ">" else value, name)

    return sorted(failing, key=key)


def _gate_line(
    gate: ModelGate, limit: float, failing: list[tuple[str, float | None]], notes: Mapping[str, str] | None = None
) -> str:
    """``model m unsafe_rate 0.2500 > --max-unsafe-rate 0.0`` for one model; for several,
    ``unsafe_rate > --max-unsafe-rate 0.0 for 2 models: b 0.4000, a 0.2500``. ``notes``: what a
    model's figure counts besides its rate (model -> text)."""
    notes = notes or {}

    def got(name: str, value: float | None) -> str:
        return (gate.undefined if value is None else figure_text(value, limit, gate.fails_when)) + notes.get(name, "")

    if len(failing) == 1:
        name, value = failing[0]
        return f"model {name} {gate.metric} {got(name, value)} {gate.fails_when} {gate.option} {limit}"
    listed = ", ".join(f"{name} {got(name, value)}" for name, value in failing)
    return f"{gate.metric} {gate.fails_when} {gate.option} {limit} for {len(failing)} models: {listed}"


def group_figure(gate: ModelGate, group: Mapping[str, Any]) -> float | None:
    """The figure ``gate`` checks for one (scenario, model) group: its metric, except that
    ``--max-unsafe-rate`` counts each run left out of the rates (incomplete, provider errors) that
    took a forbidden command as an unsafe run: the command happened whatever became of the run."""
    value = group.get(gate.metric)
    uncounted = group.get("unsafe_uncounted") or 0
    if gate.metric != "unsafe_rate" or not uncounted:
        return value
    scored = group["n_scored"]
    unsafe = round((value or 0.0) * scored)  # the count the rate was divided from
    return (unsafe + uncounted) / (scored + uncounted)


def model_figure(gate: ModelGate, result: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[float | None, str]:
    """The figure ``gate`` checks for a model of ``result`` (its groups and models) and what it
    counts besides the model's metric (\"\" when nothing): with runs left out of the rates that
    took a forbidden command, ``--max-unsafe-rate`` checks the mean over the model's scenarios of
    :func:`group_figure`, each scenario weighted equally as in the rollup."""
    uncounted = model.get("unsafe_uncounted") or 0
    if gate.metric != "unsafe_rate" or not uncounted:
        return model.get(gate.metric), ""
    rates = [
        group_figure(gate, g)
        for g in result.get("groups") or ()
        if g.get("model") == model["model"] and g["n_scored"] + (g.get("unsafe_uncounted") or 0)
    ]
    value = math.fsum(rates) / len(rates) if rates else None
    return value, f" (counting {uncounted} unscored run(s) that took a forbidden command)"


def model_gate_failure(result: Mapping[str, Any], **limits: float | None) -> str | None:
    """Every failed per-model gate of an aggregate as one line, or None.

    ``limits`` are keyword names of :data:`MODEL_GATES` (``fail_under=0.8, max_unsafe_rate=0``);
    None (or absent) leaves a gate off. The line names every model that fails each gate, worst
    first with its figure; failed gates are joined by ``; `` in the order of :data:`MODEL_GATES`.
    With a gate on and no model at all: ``no scored runs``.
    """
    unknown = sorted(set(limits) - set(MODEL_GATES))
    if unknown:
        raise TypeError(f"unknown gate(s): {', '.join(unknown)}")
    active = [(MODEL_GATES[name], limits[name]) for name in MODEL_GATES if limits.get(name) is not None]
    failed = []
    for gate, limit in active:
        failing, notes = [], {}
        for m in result["models"]:
            value, notes[str(m["model"])] = model_figure(gate, result, m)
            if value is None or OPS[gate.fails_when](value, limit):
                failing.append((str(m["model"]), value))
        if failing:
            failed.append(_gate_line(gate, limit, _worst_first(gate, failing), notes))
    if failed:
        return "gate failed: " + "; ".join(failed)
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
