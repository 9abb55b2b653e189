"""The report as one document: the blocks :mod:`evalkit.report.sections` builds and the two
emitters (:mod:`evalkit.report.html`, :mod:`evalkit.report.markdown`) write.

Everything the page and the summary show is stated in this one structure, built once: which
sections exist, their headings, prose, tables, charts, and where the two formats show different things (the page draws
charts and links runs; the summary is capped for a pull-request comment), stated as a
:class:`Only` block or inline part. An emitter walks the structure and writes its syntax; it
chooses nothing.

Inline content (a paragraph, a heading, a table cell) is a ``str``, a mark, or a list of them:

- ``str`` is text from the database or a formatter: every emitter escapes it (through
  :mod:`evalkit.present.safe`);
- :class:`Lit` is evalkit's own words (may hold backticks for a command): written as they are,
  the page escaping only ``& < >``;
- the marks (:class:`Strong`, :class:`Em`, :class:`Term`, :class:`Badge`, :class:`Link`,
  :class:`Target`, :class:`Code`, :class:`Styled`, :class:`Break`) say what a piece is; each
  emitter has one way of writing each (the summary has no anchors: a link shows its text).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Union

from evalkit.present.document import Section
from evalkit.present.table import Table

HTML, MARKDOWN = "html", "markdown"


def run_anchor(run_id: str) -> str:
    """A stable, id-safe anchor for a run, whatever characters its id holds."""
    return "run-" + hashlib.sha1(run_id.encode("utf-8")).hexdigest()[:12]


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
    """A term being defined: plain on the page, bold in the summary (which has no small print)."""


class Code(Mark):
    pass


@dataclass(frozen=True)
class Badge(Mark):
    """A flag after a value (``n<3``, ``unsafe runs``, a run's status): a coloured pill of class
    ``badge kind`` on the page (with ``title`` as its tooltip), bold in the summary."""

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
    """Content (inline or blocks) shown in one format only: ``HTML`` or ``MARKDOWN``."""

    format: str
    content: Any


Inline = Union[str, Lit, Mark, Break, Only, "Details", list]


# ------------------------------------------------------------------------------------------ blocks


@dataclass
class Heading:
    """A sub-heading (``level`` 3 or 4; a :class:`Part`'s own heading is level 2) with an
    optional page anchor."""

    level: int
    content: Inline
    anchor: str = ""


# A paragraph's kind: its class on the page, and how the summary marks it.
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
    """A table of inline cells; ``numeric`` columns are right-aligned on the page (the summary's
    report tables are left-aligned); ``cls`` is its class on the page."""

    headers: list[str]
    rows: list[list[Inline]]
    cls: str = ""
    numeric: frozenset[int] = frozenset()


@dataclass
class KitTable:
    """A :class:`~evalkit.present.Table` built by a view (the paired comparison), shown as it is."""

    table: Table
    cls: str = ""


@dataclass
class Figure:
    """One SVG chart (the page only: wrap it in :class:`Only`): ``chart`` names the drawing of
    :mod:`evalkit.report.svg` (``bar_chart``) and ``args`` its arguments; ``caption`` is the text
    under it. Alone it is a block; :class:`Figures` sets several side by side."""

    chart: str
    args: dict
    caption: str


@dataclass
class Figures:
    """Charts side by side (the page only: wrap it in :class:`Only`)."""

    figures: list[Figure]


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
    reports of the same database (``made at``), set apart (class ``last_cls`` on the page)."""

    items: list[tuple[str, str]]
    last: tuple[str, str]
    last_cls: str
    cls: str = ""


@dataclass
class AuditView:
    """Sections of the document model (:mod:`evalkit.present.document`, the audit's views) under
    sub-headings from ``level``: run ids in ``run_ids`` link to the run table on the page, and
    ``short`` cuts long tables in the summary (the page always shows everything)."""

    sections: list[Section]
    run_ids: set[str] = field(default_factory=set)
    level: int = 3
    short: bool = False


@dataclass
class RunDetails:
    """One run's drill-down, collapsed (the page only: its transcript, checklist and judge
    annotations, as :mod:`evalkit.report.drilldowns` reads and writes them)."""

    drilldown: dict


@dataclass
class RunTable:
    """Every run of one scenario, one row each (the page only: a scenario page's table, written by
    one tight loop because it holds thousands of rows). ``runs`` are the report's run dicts;
    ``drilled`` the run ids with a drill-down on the same page (their id links to it)."""

    runs: list[dict]
    drilled: set[str]


@dataclass
class Part:
    """A section of the report: anchor, level-2 heading, class on the page, blocks in order."""

    anchor: str
    heading: str
    blocks: list[Any]
    cls: str = ""


@dataclass
class Page:
    """The whole report: ``title``, the ``generator`` (evalkit's version), the page's ``nav``
    (anchor, label), the parts in order, and the page's ``footer``; ``home`` (a relative URL) links
    a scenario page back to the main page."""

    title: str
    generator: str
    nav: list[tuple[str, str]]
    parts: list[Any]
    footer: str
    home: str = ""
