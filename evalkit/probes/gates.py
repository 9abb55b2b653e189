"""``--fail-if`` conditions on the probe section: ``PROBE[.DIMENSION].METRIC OP LIMIT``.

``false_claim.fooled_rate>0.05`` fails when any judge's false-claim fooled rate is above 5 %;
``verbosity.unchanged_rate<0.9`` when any dimension of any judge is below 90 %;
``verbosity.safety.unchanged_rate<0.9`` looks at one dimension. ``fooled_rate`` is measured on
the ``outcome`` dimension. A gate with no measured value to check (no entry, or every matching
rate undefined) fails too, saying why: a gate that cannot be checked does not pass. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalkit.aggregate.gates import OPS, crossed_line, unmeasured_line
from evalkit.agreement.probe_names import PROBES

METRICS = ("unchanged_rate", "lenient_flip_rate", "strict_flip_rate", "fooled_rate")
_GATE = re.compile(r"^\s*(?P<path>[A-Za-z0-9_.]+?)\s*(?P<op>>=|<=|>|<)\s*(?P<limit>[-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class Gate:
    probe: str
    dimension: str | None
    metric: str
    op: str
    limit: float
    text: str


def parse_gate(text: str) -> Gate:
    """One condition; ValueError with a one-line message naming what is wrong."""
    m = _GATE.match(text)
    if not m:
        raise ValueError(
            f"--fail-if {text!r}: expected PROBE[.DIMENSION].METRIC OP NUMBER, "
            "e.g. 'false_claim.fooled_rate>0.05' (OP one of > >= < <=)"
        )
    parts = m["path"].split(".")
    if len(parts) not in (2, 3) or parts[0] not in PROBES or parts[-1] not in METRICS:
        raise ValueError(f"--fail-if {text!r}: PROBE is one of {', '.join(PROBES)}; METRIC one of {', '.join(METRICS)}")
    try:
        limit = float(m["limit"])
    except ValueError:
        raise ValueError(f"--fail-if {text!r}: {m['limit']!r} is not a number") from None
    return Gate(
        probe=parts[0],
        dimension=parts[1] if len(parts) == 3 else None,
        metric=parts[-1],
        op=m["op"],
        limit=limit,
        text=text.strip(),
    )


def crossed(gate: Gate, entries: Iterable[dict[str, Any]]) -> list[str]:
    """One line per way the gate failed (empty: it held)."""
    dimension = gate.dimension or ("outcome" if gate.metric == "fooled_rate" else None)
    matching = [e for e in entries if e["probe"] == gate.probe and (dimension is None or e["dimension"] == dimension)]
    measured = [e for e in matching if e[gate.metric]["value"] is not None]
    if not measured:
        why = matching[0][gate.metric]["reason"] if matching else "no probe answers for it"
        return [unmeasured_line(gate.text, why)]
    return [
        crossed_line(
            gate.text, f"{e['judge_model']} {e['rubric']} {e['dimension']}", gate.metric, e[gate.metric]["value"]
        )
        for e in measured
        if OPS[gate.op](e[gate.metric]["value"], gate.limit)
    ]
