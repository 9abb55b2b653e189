"""The probe section and a probe run as tables (the presentation kit, evalkit.present): shared by
`evalkit probe`, the audit's text/markdown output and the report."""
from __future__ import annotations

import json
from typing import Any

from evalkit.present.table import Table

RATE_COLUMNS = (("unchanged_rate", "unchanged"), ("lenient_flip_rate", "lenient"),
                ("strict_flip_rate", "strict"), ("fooled_rate", "fooled"))


def rate_text(rate: dict[str, Any] | None) -> str:
    """``0.950 [0.900, 1.000]``; ``-`` when undefined."""
    if not rate or rate.get("value") is None:
        return "-"
    text = f"{rate['value']:.3f}"
    if rate.get("ci_low") is not None and rate.get("ci_high") is not None:
        text += f" [{rate['ci_low']:.3f}, {rate['ci_high']:.3f}]"
    return text


def probe_table(entries: list[dict[str, Any]]) -> Table:
    """One row per (probe, judge, rubric, dimension): n and the four rates with their intervals."""
    rows = [[e["probe"], e["judge_model"], e["rubric"], e["dimension"], e["n"],
             *[rate_text(e[key]) for key, _ in RATE_COLUMNS]] for e in entries]
    notes = []
    fooling = [e for e in entries if e.get("n_failed") is not None]
    for e in fooling:
        notes.append(f"{e['probe']} / {e['judge_model']}: fooled {e['fooled']} of {e['n_failed']} mechanically "
                     f"failed runs ({e['n_failed_judged_fail']} failed by the judge on the original)")
    if entries:
        notes.append("rates are shares of runs with both answers; [low, high] is the percentile bootstrap interval")
    return Table(headers=["probe", "judge", "rubric", "dimension", "n", *[h for _, h in RATE_COLUMNS]],
                 rows=rows, notes=notes, title="Judge robustness probes", numeric=(4,),
                 empty="no probe answers (run `evalkit probe`)")


def cases_table(result: dict[str, Any]) -> Table:
    """Per probe: counterfactuals judged and why the other runs were not probed."""
    rows = []
    for probe, n in result["cases"].items():
        reasons = result["skipped"].get(probe) or {}
        rows.append([probe, n, "; ".join(f"{count}: {why}" for why, count in sorted(reasons.items())) or "-"])
    return Table(headers=["probe", "judged", "not probed"], rows=rows, numeric=(1,), title="Probe cases",
                 notes=list(result.get("notes") or []), empty="no probe")


def render_text(result: dict[str, Any], markdown: bool = False) -> str:
    """``evalkit probe`` as text (or markdown): cases, the rates, the calls, the gates."""
    lines: list[str] = []
    for table in (cases_table(result), probe_table(result["probes"])):
        lines += ([f"## {table.title}", ""] + table.markdown_lines() if markdown
                  else [table.title] + table.text_lines()) + [""]
    rubric = result.get("rubric") or {}
    calls = result.get("probe_calls") or {}
    originals = result.get("originals") or {}
    lines.append(f"runs probed: {len(result['runs'])}; rubric: {rubric.get('id')} v{rubric.get('version')}")
    lines.append(f"calls made: {originals.get('calls', 0)} for originals, {calls.get('calls', 0)} for probes; "
                 f"cache hits: {originals.get('cache_hits', 0) + calls.get('cache_hits', 0)}; "
                 f"requests sent: {originals.get('requests', 0) + calls.get('requests', 0)}; "
                 f"failures: {originals.get('failures', 0) + calls.get('failures', 0)}")
    for gate in result.get("gates") or []:
        lines.append(f"gate {gate['gate']}: " + ("failed" if gate["failures"] else "held"))
    return "\n".join(lines) + "\n"


def render_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
