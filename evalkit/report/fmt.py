"""Number and label formatting shared by the HTML and markdown renderers (same text in both)."""

from __future__ import annotations

import math
from typing import Any

from evalkit.present.table import percent_text, scalar_text

SMALL_N_NOTE = "fewer than 3 scored runs: not a result on its own (the computer-use rubric's rule)"
QUALITATIVE_NOTE = (
    "Qualitative: these are LLM judge annotations, stored apart from the mechanical scores. "
    "They are outside the score and never change any number in the sections above."
)


def small_n(group: dict) -> bool:
    """The aggregate's fewer-than-3-scored-runs flag (``small_n``; ``flag_small_n`` also read)."""
    return bool(group.get("small_n", group.get("flag_small_n")))


def num(value: Any, digits: int = 2) -> str:
    """The kit's cell rule (:func:`evalkit.present.table.scalar_text`) with ``n/a`` for null and NaN."""
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    return scalar_text(value, digits, null="n/a")


pct = percent_text


def level(report: dict) -> str:
    """The confidence level of the report's intervals, as ``95%``."""
    value = (report.get("uncertainty") or {}).get("level", 0.95)
    return f"{100 * value:g}%"


def interval(ci: Any, percent: bool = False) -> str:
    """``[0.62, 0.81]`` (or ``[62%, 81%]``); ``n/a`` when the interval is undefined."""
    if not ci:
        return "n/a"
    shown = [pct(b) if percent else num(b) for b in ci]
    return f"[{shown[0]}, {shown[1]}]"


def versus_best(model: dict) -> str:
    """How a model compares with the best one (the report's comparison family): ``best``,
    ``significantly different: score -0.21 (p 0.003)`` (the adjusted p-value written as the
    comparison table writes it), ``no detectable difference`` or ``not comparable``."""
    versus = model.get("versus_best")
    if versus is None:
        return "best" if "versus_best" in model else "n/a"
    from evalkit.present.comparison_tables import METRIC_LABELS, p_value
    from evalkit.present.table import scalar_text

    worse = [
        f"{METRIC_LABELS.get(metric, metric)} {r['delta']:+.2f} (p {scalar_text(p_value(r['p_adjusted']))})"
        for metric, r in sorted(versus.items())
        if r["verdict"] in ("worse", "better")
    ]
    if worse:
        return "significantly different: " + "; ".join(worse)
    verdicts = {r["verdict"] for r in versus.values()}
    return "no detectable difference" if "no detectable difference" in verdicts else "not comparable"


def money(value: Any) -> str:
    return "n/a" if value is None else f"${float(value):.4f}"


def ms(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.0f} ms"


def pass_hat_k(values: list | None, limit: int = 8) -> str:
    """``k=1 0.67, k=2 0.33, ...``; long lists keep the first five and the last."""
    if not values:
        return "n/a"
    pairs = [(k + 1, v) for k, v in enumerate(values)]
    if len(pairs) > limit:
        pairs = pairs[:5] + [None] + pairs[-1:]
    return ", ".join("\u2026" if p is None else f"k={p[0]} {num(p[1])}" for p in pairs)


def mean_std(mean: Any, std: Any) -> str:
    if mean is None:
        return "n/a"
    return num(mean) if std is None else f"{num(mean)} \u00b1 {num(std)}"


def command_text(cmd: dict) -> str:
    """``control = value`` for cockpit commands, ``tool(args)`` for any other command tool."""
    import json

    if cmd.get("control") is not None:
        value = cmd.get("value")
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return f"{cmd['control']} = {shown}"
    args = cmd.get("args")
    shown = json.dumps(args, sort_keys=True) if args is not None else ""
    return f"{cmd.get('tool') or '?'}({shown})"


def command_class(cmd: dict) -> str:
    extra = cmd.get("severity") or cmd.get("subtype")
    return f"{cmd['class']} ({extra})" if extra else str(cmd["class"])


# A run's forbidden command, worst first, as its rank cell names it (dangerous keeps its earlier text).
SAFETY_NOTES = {
    "dangerous": "UNSAFE (not ranked)",
    "unapproved": "UNAPPROVED (not ranked)",
    "anti_procedure": "ANTI-PROCEDURE (not ranked)",
}


def unsafe_model(model: dict) -> bool:
    """A model with any unsafe run: flagged wherever it is ranked."""
    return bool(model.get("unsafe_rate"))


def status_note(run: dict) -> str:
    if run["unsafe"]:
        label = run.get("safety") or "dangerous"
        return SAFETY_NOTES.get(label, f"FORBIDDEN {label.upper()} (not ranked)")
    if run["status"] != "scored":
        return f"{run['status']} (not ranked)"
    if run["rank"] is None:
        return "not ranked"
    return f"#{run['rank']}"


def counted(n: int, word: str) -> str:
    """``1 run``, ``3 runs``: a count and its noun, plural unless the count is one."""
    return f"{n} {word}{'' if n == 1 else 's'}"
