"""The one document model: what the audit, the probes, the report and its summary show, as sections
of blocks with inline content, built once and written by the emitters in text
(:mod:`evalkit.present.to_text`), markdown (:mod:`evalkit.present.to_markdown`) or HTML
(:mod:`evalkit.present.to_html`). A builder states everything, including where two formats show
different things (an :class:`Only` part); an emitter walks the structure and writes its syntax, it
chooses nothing.

Inline content (a heading, a paragraph, a grid cell) is a ``str``, a mark, or a list of them:

- ``str`` is text from a database or a formatter: every emitter escapes it (through
  :mod:`evalkit.present.safe`);
- :class:`Lit` is evalkit's own words (may hold backticks for a command): written as they are,
  HTML escaping only ``& < >``;
- the marks (:class:`Strong`, :class:`Em`, :class:`Term`, :class:`Badge`, :class:`Link`,
  :class:`Target`, :class:`Code`, :class:`Styled`) say what a piece is; each emitter has one way
  of writing each (markdown and text have no anchors: a link shows its text).

Blocks: :class:`Section` (a heading, an intro sentence, blocks; a section inside a section is one
heading level down), :class:`Heading`, :class:`Para`, :class:`Grid` (cells of inline content),
:class:`ViewTable` (a :class:`~evalkit.present.Table` built by a view, with the hints a renderer
needs: which column holds run ids, which the judge's own words), :class:`Chart` and
:class:`Charts` (SVG in HTML, a table in text and markdown), :class:`Details`, :class:`ItemList`,
:class:`Facts`; :class:`Page` is a whole HTML page of sections. A layer above may add blocks of its
own and give each emitter the function that writes it (the report's run table and drill-downs).

Cells of a view's tables are text computed once by the view: :func:`stat_text` writes numbers to
3 places, a statistic's interval in brackets after it, and an undefined statistic as ``n/a (k)``
with its reason as note ``(k) ...`` under its table (:class:`Notes`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any, Union

from evalkit.present.safe import md_text
from evalkit.present.table import Markdown, Table, scalar_text

HTML, MARKDOWN, TEXT = "html", "markdown", "text"
RATIONALE_IN_TEXT = 80  # a terminal line; HTML and markdown show the whole rationale


def run_anchor(run_id: str) -> str:
    """A stable, id-safe page anchor for a run, whatever characters its id holds."""
    return "run-" + hashlib.sha1(run_id.encode("utf-8")).hexdigest()[:12]


# ------------------------------------------------------------------------------------------ inline


@dataclass(frozen=True)
class Lit:
    """evalkit's own words (never text from a database)."""

    text: str


@dataclass(frozen=True)
class Mark:
    """Content with a meaning; each emitter writes each kind of mark one way."""

    content: Inline


class Strong(Mark):
    pass


class Em(Mark):
    pass


class Term(Mark):
    """A term being defined: plain on the page, bold in markdown (which has no small print)."""


class Code(Mark):
    pass


@dataclass(frozen=True)
class Badge(Mark):
    """A flag after a value (``n<3``, ``unsafe runs``, a run's status): a coloured pill of class
    ``badge kind`` on the page (with ``title`` as its tooltip), bold in markdown."""

    kind: str = ""
    title: str = ""


@dataclass(frozen=True)
class Link(Mark):
    """A link to ``#anchor`` on the page, or on the page ``page`` (a relative URL) when given."""

    anchor: str = ""
    page: str = ""


@dataclass(frozen=True)
class Target(Mark):
    """Content carrying the page anchor ``anchor`` (where links to it land)."""

    anchor: str = ""


@dataclass(frozen=True)
class Styled(Mark):
    """Content in the page's style ``cls`` (a command class colour, small print)."""

    cls: str = ""


@dataclass(frozen=True)
class Break:
    """A line break inside a cell."""


@dataclass(frozen=True)
class Only:
    """Content (inline or blocks) shown in one format only: ``HTML``, ``MARKDOWN`` or ``TEXT``."""

    format: str
    content: Any


Inline = Union[str, Lit, Mark, Break, Only, "Details", list]


# ------------------------------------------------------------------------------- cells of a view


class Notes:
    """Footnotes of one table: each distinct reason for an undefined statistic gets a number, so a
    cell says ``n/a (1)`` and the reason is printed once under the table."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def ref(self, reason: str) -> str:
        return f"n/a {self.mark(reason)}"

    def mark(self, reason: str) -> str:
        """``(k)``: the footnote of ``reason``."""
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"({self.reasons.index(reason) + 1})"

    def lines(self) -> list[str]:
        return [f"({i + 1}) {r}" for i, r in enumerate(self.reasons)]


def num(value: Any, digits: int = 3) -> str:
    """``n/a`` for null (the audit dict holds no NaN: it is strict JSON), ``yes``/``no``, integers
    as they are, floats to ``digits`` places."""
    return scalar_text(value, digits, null="n/a")


# a bootstrap whose every resample gives the same value (every run agrees) has an interval of
# zero width: it shows none of the uncertainty a few runs leave, so it is marked
ZERO_WIDTH = (
    "zero width: every resample gave this value (the runs all agree), so the interval shows none of the "
    "uncertainty that so few runs leave; read it with n"
)


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
            if lo == hi and notes is not None:
                text += " " + notes.mark(ZERO_WIDTH)
        return text
    if isinstance(value, (list, tuple)):
        return ", ".join(stat_text(v) for v in value)
    return num(value)


# ------------------------------------------------------------------------------------------ blocks


@dataclass
class Section:
    """A heading, an optional ``intro`` sentence (text, escaped) and blocks in reading order. A
    section with an ``anchor`` is a part of a page (an ``<section>`` of class ``cls`` that the
    page's menu links to); a section inside a section is one heading level down."""

    heading: Inline
    blocks: list[Any] = field(default_factory=list)
    intro: str = ""
    anchor: str = ""
    cls: str = ""


@dataclass
class Heading:
    """A sub-heading of ``level`` with an optional page anchor."""

    level: int
    content: Inline
    anchor: str = ""


# A paragraph's kind: its class on the page, and how markdown marks it.
PARAGRAPH_KINDS = ("plain", "lede", "note", "absent", "aside", "banner", "undeclared")


@dataclass
class Para:
    """A paragraph of ``kind`` (one of :data:`PARAGRAPH_KINDS`): ``lede`` introduces a section,
    ``note`` is small print, ``absent`` says a section has no data, ``aside`` is a by-line,
    ``banner`` the judge section's warning, ``undeclared`` the missing contamination declaration."""

    content: Inline
    kind: str = "plain"

    def __post_init__(self) -> None:
        if self.kind not in PARAGRAPH_KINDS:
            raise ValueError(f"paragraph kind {self.kind!r}: one of {', '.join(PARAGRAPH_KINDS)}")


@dataclass
class Grid:
    """A table of inline cells; ``numeric`` columns are right-aligned on the page (markdown's are
    left-aligned); ``cls`` is its class on the page."""

    headers: list[str]
    rows: list[list[Inline]]
    cls: str = ""
    numeric: frozenset[int] = frozenset()


@dataclass
class ViewTable:
    """A kit :class:`Table` (its ``title``, when set, is the block's sub-heading) and rendering
    hints: ``name`` (stable; the HTML class), ``run_column`` (cells that are run ids: a page links
    those it explains), ``quote_column`` (the judge's own words: quoted in HTML, excerpted in a
    terminal) and ``short_limit`` (rows shown where the output must stay short)."""

    table: Table
    name: str = ""
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
    reliability bands (``bands``: ``lo``, ``hi``, ``n``, ``confidence``, ``accuracy``) or bars
    (``bars``: ``label``, ``value``, ``low``, ``high``, ``flag``; drawn on an axis to
    ``max_value``, ``None`` scaling to the largest value; values written with ``value_format``;
    labels clipped at ``label_chars``). Alone it is a block; :class:`Charts` sets several side by
    side."""

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
    max_value: float | None = 1.0
    value_format: str = ".2f"
    label_chars: int = 40

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


def bars(items: list[tuple[str, Any]], intervals: list | None = None, flags: list | None = None) -> list[dict]:
    """:attr:`Chart.bars` from ``(label, value)`` pairs, each one's ``[low, high]`` (or None) and flag."""
    out = []
    for i, (label, value) in enumerate(items):
        ci = intervals[i] if intervals else None
        low, high = (ci[0], ci[1]) if ci is not None else (None, None)
        flag = bool(flags[i]) if flags else False
        out.append({"label": label, "value": value, "low": low, "high": high, "flag": flag})
    return out


@dataclass
class Charts:
    """Charts side by side under an optional sub-heading."""

    title: str
    charts: list[Chart]


@dataclass
class Details:
    """Collapsed content: ``summary`` is shown, ``blocks`` open under it."""

    summary: Inline
    blocks: list[Any]


@dataclass
class ItemList:
    """A titled bullet list."""

    title: str
    items: list[Inline]


@dataclass
class Facts:
    """Key/value lines (the provenance); ``last`` is the one line that changes between two
    documents of the same database (``made at``), set apart (class ``last_cls`` on the page)."""

    items: list[tuple[str, str]]
    last: tuple[str, str]
    last_cls: str
    cls: str = ""


@dataclass
class Page:
    """A whole HTML page: ``title``, the ``generator`` (evalkit's version), the ``nav`` (anchor,
    label), the sections in order, and the ``footer``; ``home`` (a relative URL) links back to a
    main page; ``runs`` are the run ids whose details the page holds (a run id in a view table's
    run column links there)."""

    title: str
    generator: str
    nav: list[tuple[str, str]]
    sections: list[Any]
    footer: str
    home: str = ""
    runs: Collection[str] = ()
