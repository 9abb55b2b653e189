"""One table model, four emitters: plain text, GitHub markdown, CSV and HTML.

A :class:`Table` holds headers, rows of cell values, notes and the text to show when it has no
rows. ``display`` turns a value into its human text (numbers to 3 places, ``-`` for null, ...);
the emitters never print a value that has not gone through the console sanitizer
(:mod:`evalkit.present.safe`): text cells are sanitized, markdown cells escaped with
:func:`md_text`, CSV cells neutralised with :func:`csv_cell`, HTML cells escaped. A cell that is
already markup (a badge, a link) is wrapped in :class:`Markdown` or :class:`Html` and passed
through by that emitter only; the other emitters show its plain text.

Streamed output (``evalkit score`` prints each run as it is scored) uses the row emitters
:class:`TextRows` (fixed widths), :class:`MarkdownRows` and :class:`CsvRows` directly.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from evalkit.present.safe import csv_cell, html_text, md_text, sanitize


class _Trusted(str):
    """Markup already made safe, with its ``plain`` text for the other emitters."""

    __slots__ = ("plain",)

    def __new__(cls, markup: str, plain: str = ""):
        obj = super().__new__(cls, markup)
        obj.plain = plain
        return obj


class Html(_Trusted):
    """A cell that is already safe HTML (escaped text inside trusted tags)."""

    __slots__ = ()


class Markdown(_Trusted):
    """A cell that is already safe markdown (escaped text inside trusted markup)."""

    __slots__ = ()


def scalar_text(value: Any, digits: int = 3, null: str = "-") -> str:
    """A cell's text: ``null`` for None, ``yes``/``no``, floats to ``digits`` decimals, anything
    else as str."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def percent_text(value: Any) -> str:
    """A share on [0, 1] as a whole percent (``62%``); ``n/a`` for null and NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * float(value):.0f}%"


def plain_text(value: Any) -> str:
    """The default ``display``: ``""`` for None, ``str()`` otherwise."""
    return "" if value is None else str(value)


def _plain(cell: Any, display: Callable[[Any], str]) -> str:
    if isinstance(cell, (Html, Markdown)):
        return cell.plain
    return display(cell)


class TextRows:
    """Fixed-width plain text: columns separated by two spaces, a dashed rule under the headers,
    trailing spaces trimmed. A cell longer than its width pushes the rest of its row right."""

    def __init__(self, headers: Sequence[str], widths: Sequence[int]):
        self.headers = [sanitize(h) for h in headers]
        self.widths = list(widths)

    def head(self) -> list[str]:
        return [self._join(self.headers), "  ".join("-" * w for w in self.widths)]

    def row(self, cells: Sequence[str], sanitized: bool = False) -> str:
        """One row; ``sanitized``: the cells have been through :func:`sanitize` already."""
        return self._join(cells if sanitized else [sanitize(c) for c in cells])

    def _join(self, cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, self.widths)).rstrip()


class MarkdownRows:
    """GitHub markdown table rows; every cell escaped with :func:`md_text` unless :class:`Markdown`.
    Columns listed in ``numeric`` are right-aligned (``---:``)."""

    def __init__(self, headers: Sequence[str], numeric: Collection[int] = ()):
        self.headers = list(headers)
        self.numeric = numeric

    def head(self) -> list[str]:
        rule = "".join("---:|" if i in self.numeric else "---|" for i in range(len(self.headers)))
        return [self.row(self.headers), "|" + rule]

    @staticmethod
    def row(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(c if isinstance(c, Markdown) else md_text(c) for c in cells) + " |"


def csv_line(values: Sequence[Any]) -> str:
    """One CSV row as a string ending in ``\n`` (for output rendered apart from where it is written)."""
    buf = io.StringIO()
    CsvRows(buf).row(values)
    return buf.getvalue()


class CsvRows:
    """CSV rows (``\\n`` line ends) written to ``out``, every cell through :func:`csv_cell`."""

    def __init__(self, out: TextIO):
        self._writer = csv.writer(out, lineterminator="\n")

    def row(self, values: Sequence[Any]) -> None:
        self._writer.writerow([csv_cell(v.plain if isinstance(v, (Html, Markdown)) else v) for v in values])


@dataclass
class Table:
    """``headers``, ``rows`` of cell values and ``notes`` (plain sentences shown under the table).

    ``title`` is for the caller's heading (each output shape styles headings its own way);
    ``empty`` is shown instead of the table when there are no rows; ``numeric`` lists the
    columns right-aligned in HTML and markdown; ``display`` turns a value into text for the text, markdown and
    HTML emitters (CSV gets the value itself: numbers stay numbers).
    """

    headers: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    notes: Sequence[str] = ()
    title: str = ""
    empty: str = ""
    numeric: Collection[int] = ()
    display: Callable[[Any], str] = plain_text
    shown: bool = False  # the rows hold each cell's text as the text emitter shows it (displayed, sanitized)

    def text_cells(self) -> list[list[str]]:
        """Each cell as the text emitter shows it (displayed, sanitized)."""
        if self.shown:
            return [list(row) for row in self.rows]
        return [[sanitize(_plain(c, self.display)) for c in row] for row in self.rows]

    def widths(self, cells: list[list[str]] | None = None) -> list[int]:
        """Each column's width: its longest text, header included (``cells``: :meth:`text_cells`,
        when the caller has them)."""
        if cells is None:
            cells = self.text_cells()
        return [max([len(sanitize(h))] + [len(r[i]) for r in cells]) for i, h in enumerate(self.headers)]

    def text_lines(self) -> list[str]:
        """The table as fixed-width lines, then ``note: ...`` lines; ``(empty)`` without rows."""
        if not self.rows and self.empty:
            out = [f"({sanitize(self.empty)})"]
        else:
            cells = self.text_cells()
            emit = TextRows(self.headers, self.widths(cells))
            out = emit.head() + [emit.row(r, sanitized=True) for r in cells]
        return out + [f"note: {sanitize(n)}" for n in self.notes]

    def markdown_lines(self) -> list[str]:
        """The table in GitHub markdown, then the notes as a list; ``_empty_`` without rows."""
        if not self.rows and self.empty:
            out = [f"_{md_text(self.empty)}_"]
        else:
            emit = MarkdownRows(self.headers, self.numeric)
            cells = [[c if isinstance(c, Markdown) else self.display(c) for c in row] for row in self.rows]
            out = emit.head() + [emit.row(r) for r in cells]
        if self.notes:
            out += [""] + [f"- {md_text(n)}" for n in self.notes]
        return out

    def to_csv(self) -> str:
        """Headers then rows as CSV; values go to :func:`csv_cell` unformatted (numbers stay numbers)."""
        buf = io.StringIO()
        emit = CsvRows(buf)
        emit.row(self.headers)
        for row in self.rows:
            emit.row(row)
        return buf.getvalue()

    def to_html(self, cls: str = "") -> str:
        """A ``<table>`` in a scrolling wrapper, notes in a ``<p class="note">``."""
        if not self.rows and self.empty:
            return f'<p class="absent">{html_text(self.empty)}</p>'
        head = "".join(f"<th>{html_text(h)}</th>" for h in self.headers)
        body = []
        for row in self.rows:
            cells = []
            for i, c in enumerate(row):
                inner = c if isinstance(c, Html) else html_text(self.display(c))
                cells.append(f'<td class="num">{inner}</td>' if i in self.numeric else f"<td>{inner}</td>")
            body.append(f"<tr>{''.join(cells)}</tr>")
        attr = f' class="{cls}"' if cls else ""
        out = (
            f'<div class="table-wrap"><table{attr}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>"
        )
        if self.notes:
            out += '<p class="note">' + "<br>".join(html_text(n) for n in self.notes) + "</p>"
        return out
