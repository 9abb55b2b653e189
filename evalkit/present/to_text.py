"""The document model (:mod:`evalkit.present.document`) as fixed-width text for a terminal:
``== heading ==`` per section, its intro, ``-- title --`` above each sub-table, charts as tables,
the judge's words excerpted to a line. Every piece of text goes through
:func:`evalkit.present.safe.sanitize`.
"""

from __future__ import annotations

from typing import Any

from evalkit.present import document as d
from evalkit.present.safe import sanitize
from evalkit.present.table import Table


def inline(x: Any) -> str:
    """Inline content as plain text: marks show their content, a line break is a space."""
    if isinstance(x, list):
        return "".join(inline(part) for part in x)
    if isinstance(x, d.Lit):
        return x.text
    if isinstance(x, d.Only):
        return inline(x.content) if x.format == d.TEXT else ""
    if isinstance(x, d.Break):
        return " "
    if isinstance(x, d.Mark):
        return inline(x.content)
    if isinstance(x, d.Details):
        raise TypeError("a collapsed block inside a line of text")
    return sanitize(x)


def text_lines(b: Any) -> list[str]:
    """A block, a list of them or an ``Only`` as lines (each section opens with a blank line)."""
    if isinstance(b, list):
        return [line for x in b for line in text_lines(x)]
    if isinstance(b, d.Only):
        return text_lines(b.content) if b.format == d.TEXT else []
    if isinstance(b, d.Section):
        out = ["", f"== {inline(b.heading)} =="]
        if b.intro:
            out.append(sanitize(b.intro))
        return out + text_lines(b.blocks)
    if isinstance(b, d.Heading):
        return ["", f"-- {inline(b.content)} --"]
    if isinstance(b, d.Para):
        return [inline(b.content)]
    if isinstance(b, d.Grid):
        return Table(b.headers, [[inline(c) for c in row] for row in b.rows]).text_lines()
    if isinstance(b, d.ViewTable):
        return _title(b.title) + b.excerpted().text_lines()
    if isinstance(b, (d.Chart, d.Charts)):
        out = _title(b.title) if isinstance(b, d.Charts) else []
        for chart in b.charts if isinstance(b, d.Charts) else [b]:
            t = chart.table()
            out += ["", sanitize(t.title)] + t.text_lines()
        return out
    if isinstance(b, d.ItemList):
        return ["", f"-- {sanitize(b.title)} --"] + [f"- {inline(x)}" for x in b.items]
    if isinstance(b, d.Facts):
        return [f"{sanitize(k)}: {sanitize(v)}" for k, v in [*b.items, b.last]]
    raise TypeError(f"not a block text can show: {b!r} (wrap it in Only(HTML, ...))")


def _title(title: str) -> list[str]:
    return ["", f"-- {sanitize(title)} --"] if title else []
