"""`evalkit score --format junit`: the results as a JUnit XML report, where CI systems look for tests.

One ``<testsuite>`` per agent model, one ``<testcase>`` per scenario of it (``classname`` the model,
``name`` the scenario id). A case fails (``<failure type="gate">``, the reason in its ``message``)
when its model fails a gate (``--fail-under``, ``--min-pass-rate``, ``--min-safe-pass-rate``,
``--max-unsafe-rate``: the exit-3 rule of :mod:`evalkit.aggregate.gates`, per model) and the
scenario's own figure is past the same limit: the scenarios that pulled the model under. So the
report has a failed case exactly when the command exits 3. Without a gate every case passes. Each
case's ``<system-out>`` gives its figures and lists its runs that did not pass (not scored, the end
state not reached, or unsafe), each with why.

Each input file that could not be scored (bad JSON, a missing scenario, …) is a case of its own in
error (``<error type="input">``, the reason as stderr says it), in a last suite named
``inputs not scored``: the command then exits 1, and a CI system shows which files and why.

Workers render each run as one line (:func:`run_line`); the writer keeps those lines and writes the
document at the end (:func:`junit_xml`), from the last line of each run id: a later file with the
same run id replaces the run, as it does in the aggregates. Deterministic: models and
scenarios sorted, runs in file order; no time stamps.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape, quoteattr

from evalkit.aggregate.gates import MODEL_GATES, OPS, figure_text, group_figure, model_figure
from evalkit.present.safe import sanitize

if TYPE_CHECKING:
    from evalkit.scoring.scorecard import ScoreCard

FIGURES = ("pass_rate", "safe_pass_rate", "unsafe_rate", "score_mean")
UNSCORED = "inputs not scored"  # the suite, and each case's classname, of the files that could not be scored


def run_failure(card: ScoreCard) -> str | None:
    """Why a run did not pass, or None when it passed (scored, end state reached, nothing unsafe)."""
    if card.status != "scored":
        return f"status {card.status}"
    v = card.vector
    if v.all_passed is True and not v.safety_dangerous and not v.safety_anti_procedure:
        return None
    why = [] if v.all_passed is True else ["end state not reached"]
    if v.safety_dangerous:
        why.append(f"dangerous actions: {v.safety_dangerous}")
    if v.safety_anti_procedure:
        why.append(f"anti-procedure actions: {v.safety_anti_procedure}")
    failed = [name for name, ok in card.checks.model_dump().items() if ok is False]
    if failed:
        why.append("failed checks: " + ", ".join(failed))
    return "; ".join(why)


def run_line(card: ScoreCard) -> str:
    """A run's part of the junit output, rendered in a worker: one JSON line, its run id alone for a
    run that passed (it may replace an earlier run of that id), with its model, scenario, path and
    why for one that did not."""
    why = run_failure(card)
    if why is None:
        return json.dumps([card.run_id], ensure_ascii=False) + "\n"
    return json.dumps([card.run_id, card.model, card.scenario_id, card.path, why], ensure_ascii=False) + "\n"


def _number(value: Any) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def _fails(gate_name: str, limit: float, value: Any) -> bool:
    gate = MODEL_GATES[gate_name]
    return value is None or OPS[gate.fails_when](value, limit)


def _reason(gate_name: str, limit: float, value: Any, model_value: Any) -> str:
    gate = MODEL_GATES[gate_name]

    def past(figure: Any) -> str:  # a figure past the limit, printed so that it reads so
        return _number(figure) if figure is None else figure_text(figure, limit, gate.fails_when)

    return (
        f"{gate.metric} {past(value)} {gate.fails_when} {gate.option} {limit:g} "
        f"(model {gate.metric} {past(model_value)})"
    )


def junit_xml(
    result: Mapping[str, Any],
    run_lines: Sequence[str],
    gates: Mapping[str, float | None],
    unscored: Sequence[tuple[str, str]] = (),
) -> str:
    """The JUnit document of an aggregate (``result``: its groups and models), the runs (lines of
    :func:`run_line`, in input order), the gates on (``gates``: :data:`MODEL_GATES` names to
    limits, None = off) and the inputs that could not be scored (``unscored``: path and why, in
    input order), each a case in error."""
    active = [(name, limit) for name in MODEL_GATES if (limit := gates.get(name)) is not None]
    latest: dict[str, list[Any]] = {}  # per run id, its last line: the run the aggregates count
    for line in run_lines:
        entry = json.loads(line)
        latest[entry[0]] = entry
    runs: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    for entry in latest.values():
        if len(entry) > 1:
            run_id, model, scenario, path, why = entry
            runs[(model, scenario)].append((run_id, path, why))
    models = {str(m["model"]): m for m in result.get("models") or []}
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for g in result.get("groups") or []:
        groups[str(g["model"])].append(g)

    suites, total, total_failed = [], 0, 0
    for model in sorted(groups):
        m = models.get(model, {})
        cases = sorted(groups[model], key=lambda g: str(g["scenario_id"]))
        failures: dict[str, list[str]] = defaultdict(list)
        for name, limit in active:
            gate = MODEL_GATES[name]
            figure, counting = model_figure(gate, result, m) if m else (None, "")
            if not _fails(name, limit, figure):
                continue
            figures = [(g, group_figure(gate, g)) for g in cases]
            for g, value in [(g, value) for g, value in figures if _fails(name, limit, value)] or figures:
                failures[str(g["scenario_id"])].append(_reason(name, limit, value, figure) + counting)
        body = []
        for g in cases:
            scenario = str(g["scenario_id"])
            failed_runs = sorted(runs.get((model, scenario), []), key=lambda r: (r[1], r[0]))
            out = [
                f"{g.get('n', 0)} runs, {g.get('n_scored', 0)} scored: "
                + ", ".join(f"{f} {_number(g.get(f))}" for f in FIGURES)
            ]
            if failed_runs:
                out.append(f"{len(failed_runs)} run(s) did not pass:")
                out += [f"  {run_id} ({path}): {why}" for run_id, path, why in failed_runs]
            case = f"<testcase classname={_attr(model)} name={_attr(scenario)}>"
            if failures.get(scenario):
                message = "gate failed: " + "; ".join(failures[scenario])
                case += f'<failure type="gate" message={_attr(message)}>{_text(message)}</failure>'
            case += f"<system-out>{_text(chr(10).join(out))}</system-out></testcase>"
            body.append(case)
        n_failed = len(failures)
        total += len(cases)
        total_failed += n_failed
        suites.append(
            f'<testsuite name={_attr(model)} tests="{len(cases)}" failures="{n_failed}" errors="0" skipped="0">'
            + "\n".join(["", *body, ""])
            + "</testsuite>"
        )
    if unscored:
        body = [
            f"<testcase classname={_attr(UNSCORED)} name={_attr(path)}>"
            f'<error type="input" message={_attr(reason)}>{_text(reason)}</error></testcase>'
            for path, reason in unscored
        ]
        total += len(unscored)
        suites.append(
            f'<testsuite name={_attr(UNSCORED)} tests="{len(unscored)}" failures="0" errors="{len(unscored)}" '
            'skipped="0">' + "\n".join(["", *body, ""]) + "</testsuite>"
        )
    head = (
        f'<testsuites name="evalkit score" tests="{total}" failures="{total_failed}" errors="{len(unscored)}" '
        'skipped="0">'
    )
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', head, *suites, "</testsuites>"]) + "\n"


def _text(value: str) -> str:
    """Text as XML character data: controls escaped visibly (XML 1.0 cannot hold most of them)."""
    return escape("\n".join(sanitize(line) for line in value.split("\n")))


def _attr(value: str) -> str:
    return quoteattr(sanitize(value))
