"""`evalkit probe` as text, markdown or JSON. The rates are the audit's own probe section
(:func:`evalkit.agreement.view.probes_section`: one view for the audit, the report and this
command); this module adds what only a probe run has — its cases and its calls — as sections of
the document model (:mod:`evalkit.present.document`)."""

from __future__ import annotations

import json
from typing import Any

from evalkit.agreement.view import probes_section
from evalkit.present import Table, md_text, sanitize
from evalkit.present.document import Section, ViewTable
from evalkit.present.to_markdown import markdown_lines
from evalkit.present.to_text import text_lines


def cases_section(result: dict[str, Any]) -> Section:
    """Per probe: counterfactuals judged and why the other runs were not probed."""
    rows = []
    for probe, n in result["cases"].items():
        reasons = result["skipped"].get(probe) or {}
        rows.append([probe, str(n), "; ".join(f"{count}: {why}" for why, count in sorted(reasons.items())) or "-"])
    table = Table(
        ["probe", "judged", "not probed (runs: reason)"],
        rows,
        notes=list(result.get("notes") or []),
        empty="no probe",
        numeric={1},
    )
    return Section("Probe cases", [ViewTable(table, "probe-cases")])


def summary_lines(result: dict[str, Any]) -> list[str]:
    rubric = result.get("rubric") or {}
    calls = result.get("probe_calls") or {}
    originals = result.get("originals") or {}
    lines = [
        f"runs probed: {len(result['runs'])}; judges: {', '.join(result.get('judge_models') or [])}; "
        f"rubric: {rubric.get('id')} v{rubric.get('version')}",
        f"calls made: {originals.get('calls', 0)} for originals, {calls.get('calls', 0)} for probes; "
        f"cache hits: {originals.get('cache_hits', 0) + calls.get('cache_hits', 0)}; "
        f"requests sent: {originals.get('requests', 0) + calls.get('requests', 0)}; "
        f"failures: {originals.get('failures', 0) + calls.get('failures', 0)}",
    ]
    lines += [f"gate {g['gate']}: " + ("failed" if g["failures"] else "held") for g in result.get("gates") or []]
    return lines


def probe_run_text(result: dict[str, Any], markdown: bool = False) -> str:
    """The cases, the probe section (table and per-judge chart as a table), the calls, the gates."""
    sections = [cases_section(result), probes_section(result)]
    if markdown:
        return (
            "\n".join(markdown_lines(sections, level=2) + [md_text(line) + "  " for line in summary_lines(result)])
            + "\n"
        )
    return "\n".join(text_lines(sections)[1:] + [""] + [sanitize(line) for line in summary_lines(result)]) + "\n"


def probe_run_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
