"""The evalkit report: an HTML page and a markdown summary made from the SQLite database.

Python API::

    from evalkit.report import build_report, render_html, render_markdown, write_report
    report = build_report("evalkit.db", title="nightly")   # a plain dict
    html = render_html(report)                              # one self-contained page
    text = render_markdown(report)                          # for a pull request
    write_report("evalkit.db", html="report.html", markdown="report.md")

See docs/report.md for the sections and their sources.
"""

from __future__ import annotations

import os

from evalkit.output.atomic import write_text_atomic
from evalkit.report.contamination import load_contamination
from evalkit.report.data import ReportError, build_report, made_at_now
from evalkit.report.html import render_html
from evalkit.report.markdown import render_markdown

__all__ = [
    "ReportError",
    "build_report",
    "load_contamination",
    "made_at_now",
    "render_html",
    "render_markdown",
    "write_text_atomic",
    "write_report",
]


def write_report(
    db_path: str | os.PathLike[str],
    *,
    html: str | os.PathLike[str] | None = None,
    markdown: str | os.PathLike[str] | None = None,
    title: str | None = None,
    contamination: str | os.PathLike[str] | None = None,
    made_at: str | None = None,
) -> dict:
    """Build the report once and write the requested files; returns the report dict. An output
    that is the database or the contamination file raises evalkit.output.paths.OutputClash first."""
    from evalkit.output.paths import check_outputs

    check_outputs(
        [("html", html), ("markdown", markdown)], database=db_path, inputs=[contamination] if contamination else []
    )
    report = build_report(db_path, title=title, made_at=made_at, contamination_path=contamination)
    if html is not None:
        write_text_atomic(html, render_html(report))
    if markdown is not None:
        write_text_atomic(markdown, render_markdown(report))
    return report
