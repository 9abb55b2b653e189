"""The report's document (:mod:`evalkit.report.sections`) written out: the main page and each
scenario's page as self-contained HTML (:mod:`evalkit.present.to_html`, with the report's run
blocks from :mod:`evalkit.report.drilldowns`), the summary as markdown for a pull request
(:mod:`evalkit.present.to_markdown`, long tables cut).

What the pages show is decided in :mod:`evalkit.report.sections`; this module only emits. The
output is deterministic: the same report dict gives byte-identical text; the one line that changes
between runs is the "Made at" provenance line, because the dict's ``made_at`` does.
"""

from __future__ import annotations

from evalkit.present.safe import md_text
from evalkit.present.to_html import html_page
from evalkit.present.to_markdown import markdown_lines
from evalkit.report.drilldowns import BLOCKS
from evalkit.report.drilldowns import CSS as DRILLDOWN_CSS
from evalkit.report.sections import build_page, scenario_page


def render_html(report: dict, pages: str | None = None) -> str:
    """The main page as a string (UTF-8 when written); ``pages`` is the relative URL of the
    directory of scenario pages written beside it (``None``: none, its runs named without links)."""
    return html_page(build_page(report, pages), BLOCKS, DRILLDOWN_CSS)


def render_scenario_page(report: dict, entry: dict, runs: list[dict], home: str) -> str:
    """One scenario's page (:func:`evalkit.report.sections.scenario_page`): every run of
    ``entry``'s scenario (``runs``, ranked) and its drill-downs; ``home`` is the main page's URL."""
    return html_page(scenario_page(report, entry, runs, home), BLOCKS, DRILLDOWN_CSS)


def render_markdown(report: dict) -> str:
    """The summary: the main page's sections in markdown, the long tables cut (GitHub allows
    65,536 characters in a comment)."""
    doc = build_page(report)
    out = [f"# {md_text(doc.title)}", ""] + markdown_lines(doc.sections, level=2, short=True)
    return "\n".join(out).rstrip("\n") + "\n"
