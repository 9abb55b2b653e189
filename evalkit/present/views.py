"""The shapes the judge, probe, audit, verdicts and report commands print or write, reached from one
place in the view layer: the command modules import only ``evalkit.api`` (for data) and
``evalkit.present`` (for shapes).

The emitters themselves still live beside the data they show (``judges/render.py``,
``probes/view.py``, ``agreement/audit_output.py``, ``verdicts/analysis.py``, ``report/``) and are
imported when called, so that ``evalkit --help`` loads none of them and the judge layer loads only
for a judge command. Each function is named for the command and what it shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# --- evalkit judge, evalkit cache ---------------------------------------------------------------


def judge_annotations(result: Any, fmt: str) -> Iterator[str]:
    """A judge run's annotations and summary (``table``, ``markdown``, ``json`` or ``jsonl``), in
    pieces to write one after the other."""
    from evalkit.judges import render

    shape = {
        "table": render.annotations_text,
        "markdown": render.annotations_markdown,
        "json": render.annotations_json,
        "jsonl": render.annotations_jsonl,
    }[fmt]
    return shape(result)


def judge_summary_lines(result: Any) -> list[str]:
    """A judge run's summary as stderr lines (what ``jsonl`` leaves out of stdout)."""
    from evalkit.judges import render

    return render.summary_lines(result)


def judge_pairwise(result: Any, fmt: str) -> str:
    """``judge --pairwise``: one row per (pair, judge, order shown), then the summary."""
    from evalkit.judges import pairwise

    return pairwise.render_result(result, fmt)


def judge_pairwise_summary_lines(result: Any) -> list[str]:
    """``judge --pairwise``'s summary as stderr lines (what ``jsonl`` leaves out of stdout)."""
    from evalkit.judges import pairwise

    return pairwise.summary_lines(result)


def judge_dry_run(plan: Any, fmt: str) -> str:
    """``judge --dry-run``: what would be sent."""
    from evalkit.judges import render

    return render.render_dry_run(plan, fmt)


def judge_batches(batches: list[dict], fmt: str) -> str:
    """``judge --batch-status``: the stored provider batches."""
    from evalkit.judges import render

    return render.render_batches(batches, fmt)


def cache_stats(rows: list, fmt: str, modes: list) -> str:
    """``cache stats``: cached calls per judge, rubric and status, then the remembered output modes."""
    from evalkit.judges import render

    return render.render_stats(rows, fmt, modes)


# --- evalkit probe ------------------------------------------------------------------------------


def probe_run(doc: dict[str, Any], fmt: str) -> str:
    """A probe run (its ``as_dict()``) as ``table``, ``markdown`` or ``json``."""
    from evalkit.probes import view

    return view.probe_run_json(doc) if fmt == "json" else view.probe_run_text(doc, markdown=fmt == "markdown")


# --- evalkit audit ------------------------------------------------------------------------------


def audit(report: dict[str, Any], fmt: str, top: int | None = None) -> str:
    """The audit as ``table``, ``json``, ``markdown`` or ``csv``; ``top`` as ``audit --top``."""
    from evalkit.agreement.audit_output import render

    return render(report, fmt, top)


def audit_pairs_csv(pairs: list[dict[str, Any]]) -> str:
    """``audit --pairs-out``: the compared pairs as CSV."""
    from evalkit.agreement.audit_output import pairs_csv

    return pairs_csv(pairs)


def audit_warnings(report: dict[str, Any]) -> list[str]:
    """The audit's warnings for stderr: its stale annotations first, then each odd value."""
    from evalkit.agreement.audit import stale_note

    note = stale_note(report)
    return [f"warning: {line}" for line in ([note] if note else []) + list(report["warnings"])]


# --- evalkit verdicts ---------------------------------------------------------------------------


def verdicts(scores: list[dict[str, Any]], markdown: bool = False) -> str:
    """The scored verdict files: the console report, or with ``markdown`` its tables."""
    from evalkit.verdicts import analysis

    return analysis.render_verdicts_markdown(scores) if markdown else analysis.render_verdicts_text(scores)


def verdicts_json(summary: dict[str, Any]) -> str:
    """``verdicts --json-out``: the whole summary as JSON (ASCII, sorted keys)."""
    from evalkit.verdicts import analysis

    return analysis.summary_json(summary)


# --- evalkit report -----------------------------------------------------------------------------


def report_page(data: dict[str, Any], fmt: str) -> str:
    """The report's data (``evalkit.api.report``) as the ``html`` page or the ``markdown`` summary."""
    from evalkit.report import render_html, render_markdown

    return {"html": render_html, "markdown": render_markdown}[fmt](data)
