"""The document model of every view: sections of tables and charts, built once and emitted as
text, markdown or HTML (all three here; the HTML page draws each chart with a function it is
given, the report's SVG charts, since the view layer sits below the report).

A view is a list of :class:`Section`: a heading, an optional intro sentence, and blocks in reading
order, each a :class:`ViewTable` (a :class:`~evalkit.present.Table` plus the hints a renderer
needs: which column holds run ids, which the judge's own words) or a :class:`Charts` block
(confusion matrices, reliability bands and rates as bars: SVG in HTML, tables in text and
markdown). Cells are text computed once by the view that builds the section: :func:`stat_text`
writes numbers to 3 places, a statistic's bootstrap interval in brackets after it, and an
undefined statistic as ``n/a (k)`` with its reason as note ``(k) ...`` under its table
(:class:`Notes`).

The audit's sections are :mod:`evalkit.agreement.view`; ``evalkit probe`` adds its own
(:mod:`evalkit.probes.view`); the report renders the same sections.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from evalkit.present.safe import html_text, md_text, sanitize
from evalkit.present.table import Html, Markdown, Table, scalar_text

RATIONALE_IN_TEXT = 80  # a terminal line; HTML and markdown show the whole rationale


class Notes:
    """Footnotes of one table: each distinct reason for an undefined statistic gets a number, so a
    cell says ``n/a (1)`` and the reason is printed once under the table."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def ref(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"n/a ({self.reasons.index(reason) + 1})"

    def lines(self) -> list[str]:
        return [f"({i + 1}) {r}" for i, r in enumerate(self.reasons)]


def num(value: Any, digits: int = 3) -> str:
    """``n/a`` for null (the audit dict holds no NaN: it is strict JSON), ``yes``/``no``, integers
    as they are, floats to ``digits`` places."""
    return scalar_text(value, digits, null="n/a")


def stat_text(value: Any, notes: Notes | None = None) -> str:
    """A statistic as text: numbers to 3 places, ``{value, ci_low, ci_high}`` with its interval,
    ``{value: null, reason}`` as ``n/a`` with the reason as a footnote (or inline without notes)."""
    if isinstance(value, dict):
        if "value" not in value and "estimate" not in value:
            return json.dumps(value, sort_keys=True)
        inner = value.get("value", value.get("estimate"))
        if inner is None:
            reason = value.get("reason")
            if not reason:
                return "n/a"
            return notes.ref(str(reason)) if notes is not None else f"n/a ({reason})"
        text = stat_text(inner)
        lo, hi = value.get("ci_low"), value.get("ci_high")
        if lo is not None and hi is not None:
            text += f" [{stat_text(lo)}, {stat_text(hi)}]"
        return text
    if isinstance(value, (list, tuple)):
        return ", ".join(stat_text(v) for v in value)
    return num(value)


@dataclass
class ViewTable:
    """A kit :class:`Table` (its ``title`` is the block's sub-heading) and rendering hints:
    ``name`` (stable; the HTML class), ``run_column`` (cells that are run ids: the report links
    them to its run table), ``quote_column`` (the judge's own words: quoted in HTML, excerpted in a
    terminal) and ``short_limit`` (rows shown where the output must stay short)."""

    table: Table
    name: str
    run_column: int | None = None
    quote_column: int | None = None
    short_limit: int | None = None

    @property
    def title(self) -> str:
        return self.table.title

    def shortened(self) -> tuple[Table, int]:
        """The table cut to ``short_limit`` rows, and how many rows were left out."""
        rows = self.table.rows
        if self.short_limit is None or len(rows) <= self.short_limit:
            return self.table, 0
        return replace(self.table, rows=rows[: self.short_limit]), len(rows) - self.short_limit

    def excerpted(self, limit: int = RATIONALE_IN_TEXT) -> Table:
        """The table with the quote column cut to ``limit`` characters (for a terminal)."""
        q = self.quote_column
        if q is None:
            return self.table
        rows = [
            [c if i != q or len(c) <= limit else c[: limit - 3] + "..." for i, c in enumerate(r)]
            for r in self.table.rows
        ]
        return replace(self.table, rows=rows)


@dataclass
class Chart:
    """A confusion matrix (``rows`` judge labels, ``cols`` mechanical labels, ``matrix`` counts),
    reliability bands (``bands``: ``lo``, ``hi``, ``n``, ``confidence``, ``accuracy``) or rates as
    bars (``bars``: ``label``, ``value``, ``low``, ``high`` on [0, 1])."""

    kind: str  # "confusion" | "reliability" | "bars"
    title: str
    caption: str
    rows: list[str] = field(default_factory=list)
    cols: list[str] = field(default_factory=list)
    matrix: list[list[Any]] = field(default_factory=list)
    bands: list[dict] = field(default_factory=list)
    bars: list[dict] = field(default_factory=list)
    row_axis: str = "judge"
    col_axis: str = "mechanical"

    def table(self) -> Table:
        """The chart as a table, where no picture can be drawn (text, markdown)."""
        if self.kind == "confusion":
            corner = f"{self.row_axis} \\ {self.col_axis}"
            rows = [
                [Markdown(f"**{md_text(r)}**", r)] + [num(v) for v in self.matrix[i]] for i, r in enumerate(self.rows)
            ]
            return Table([corner] + [str(c) for c in self.cols], rows, title=self.caption)
        if self.kind == "bars":
            rows = [
                [str(b["label"]), stat_text({"value": b["value"], "ci_low": b["low"], "ci_high": b["high"]})]
                for b in self.bars
            ]
            return Table(["bar", "rate"], rows, title=self.caption)
        rows = [
            [f"{num(b['lo'], 2)}-{num(b['hi'], 2)}", str(b["n"]), num(b["confidence"], 2), num(b["accuracy"], 2)]
            for b in self.bands
            if b["n"]
        ]
        return Table(["band", "n", "mean confidence", "accuracy"], rows, title=self.caption)


@dataclass
class Charts:
    title: str
    charts: list[Chart]


@dataclass
class Section:
    heading: str
    blocks: list[ViewTable | Charts] = field(default_factory=list)
    intro: str = ""


def text_lines(sections: list[Section]) -> list[str]:
    """Fixed-width text: ``== heading ==``, the intro, ``-- title --`` above each sub-table."""
    out: list[str] = []
    for s in sections:
        out += ["", f"== {sanitize(s.heading)} =="]
        if s.intro:
            out.append(sanitize(s.intro))
        for block in s.blocks:
            tables = [block.excerpted()] if isinstance(block, ViewTable) else [c.table() for c in block.charts]
            if block.title:
                out += ["", f"-- {sanitize(block.title)} --"]
            for t in tables:
                if isinstance(block, Charts):
                    out += ["", sanitize(t.title)]
                out += t.text_lines()
    return out


def markdown_lines(sections: list[Section], level: int = 2, short: bool = False) -> list[str]:
    """GitHub markdown, headings from ``level``; ``short`` cuts long tables (a pull-request comment)."""
    out: list[str] = []
    h, sub = "#" * level, "#" * (level + 1)
    for s in sections:
        out += [f"{h} {md_text(s.heading)}", ""]
        if s.intro:
            out += [md_text(s.intro), ""]
        for block in s.blocks:
            if block.title:
                out += [f"{sub} {md_text(block.title)}", ""]
            if isinstance(block, Charts):
                for chart in block.charts:
                    t = chart.table()
                    out += [f"**{md_text(t.title)}**", ""] + t.markdown_lines() + [""]
                continue
            table, left = block.shortened() if short else (block.table, 0)
            out += table.markdown_lines() + [""]
            if left:
                out += [f"_{left} more in the HTML report._", ""]
    return out


def _html_table(vt: ViewTable, run_link: Callable[[str], str | None]) -> str:
    """A view table as HTML: a run id ``run_link`` gives an anchor for links there, the judge's
    words are quoted."""
    table = vt.table
    r, q = vt.run_column, vt.quote_column
    if r is not None or q is not None:
        rows = []
        for row in table.rows:
            cells = list(row)
            anchor = run_link(cells[r]) if r is not None else None
            if anchor is not None:
                cells[r] = Html(f'<a href="#{html_text(anchor)}">{html_text(cells[r])}</a>', cells[r])
            if q is not None and cells[q]:
                cells[q] = Html(f"<blockquote>{html_text(cells[q])}</blockquote>", cells[q])
            rows.append(cells)
        table = replace(table, rows=rows)
    return table.to_html(vt.name)


def html_blocks(
    sections: list[Section],
    draw: Callable[[Chart], str],
    run_link: Callable[[str], str | None] = lambda run_id: None,
    level: int = 3,
) -> str:
    """HTML: a heading of ``level`` per section, one level below per block's title; each chart is
    ``draw(chart)`` (an ``<svg>`` element) in a figure with its caption; ``run_link(run_id)`` is
    the anchor a run-id cell links to (``None``: no link)."""
    h, sub = f"h{level}", f"h{level + 1}"
    out = []
    for s in sections:
        out.append(f"<{h}>{html_text(s.heading)}</{h}>")
        if s.intro:
            out.append(f'<p class="lede">{html_text(s.intro)}</p>')
        for block in s.blocks:
            if block.title:
                out.append(f"<{sub}>{html_text(block.title)}</{sub}>")
            if isinstance(block, ViewTable):
                out.append(_html_table(block, run_link))
                continue
            figures = "".join(
                f"<figure>{draw(c)}<figcaption>{html_text(c.caption)}</figcaption></figure>" for c in block.charts
            )
            out.append(f'<div class="charts">{figures}</div>')
    return "".join(out)
