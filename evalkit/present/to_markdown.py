"""The document model (:mod:`evalkit.present.document`) as GitHub-flavoured markdown (a
pull-request comment, a CI job summary).

Text from a database is escaped by :func:`evalkit.present.safe.md_text`: ``<``, ``>`` and ``&``
become entities (GitHub renders inline HTML) and markdown's punctuation is backslash-escaped, so a
trajectory cannot inject links, images, HTML or break a table.
"""

from __future__ import annotations

from typing import Any

from evalkit.present import document as d
from evalkit.present.safe import md_text
from evalkit.present.table import Markdown, Table

# How a paragraph kind is marked ("{}" is the paragraph).
PARAGRAPH_MARK = {"absent": "_{}_", "aside": "_{}_", "banner": "> **{}**"}

# How a mark is written around its content; markdown has no anchors, styles or code colours, so a
# link, a target, code and a styled part show their content.
MARKS = {d.Strong: "**", d.Term: "**", d.Badge: "**", d.Em: "_"}


def inline(x: Any) -> str:
    if isinstance(x, list):
        return "".join(inline(part) for part in x)
    if isinstance(x, d.Lit):
        return x.text
    if isinstance(x, d.Only):
        return inline(x.content) if x.format == d.MARKDOWN else ""
    if isinstance(x, d.Break):
        return "<br>"
    if isinstance(x, d.Details):
        raise TypeError("a collapsed block inside a markdown line")
    if not isinstance(x, d.Mark):
        return md_text(x)
    mark = MARKS.get(type(x), "")
    return f"{mark}{inline(x.content)}{mark}"


def markdown_lines(b: Any, level: int = 2, short: bool = False) -> list[str]:
    """A block, a list of them or an ``Only`` as lines; a section met here gets heading ``level``;
    ``short`` cuts a view table to its ``short_limit`` rows (a pull-request comment)."""
    if isinstance(b, list):
        return [line for x in b for line in markdown_lines(x, level, short)]
    if isinstance(b, d.Only):
        return markdown_lines(b.content, level, short) if b.format == d.MARKDOWN else []
    if isinstance(b, d.Section):
        out = [f"{'#' * level} {inline(b.heading)}", ""]
        if b.intro:
            out += [md_text(b.intro), ""]
        return out + markdown_lines(b.blocks, level + 1, short)
    if isinstance(b, d.Heading):
        return [f"{'#' * b.level} {inline(b.content)}", ""]
    if isinstance(b, d.Para):
        return [PARAGRAPH_MARK.get(b.kind, "{}").format(inline(b.content)), ""]
    if isinstance(b, d.Grid):
        return Table(b.headers, [[Markdown(inline(c)) for c in row] for row in b.rows]).markdown_lines() + [""]
    if isinstance(b, d.ViewTable):
        table, left = b.shortened() if short else (b.table, 0)
        out = _title(b.title, level) + table.markdown_lines() + [""]
        return out + ([f"_{left} more in the HTML report._", ""] if left else [])
    if isinstance(b, (d.Chart, d.Charts)):
        out = _title(b.title, level) if isinstance(b, d.Charts) else []
        for chart in b.charts if isinstance(b, d.Charts) else [b]:
            t = chart.table()
            out += [f"**{md_text(t.title)}**", ""] + t.markdown_lines() + [""]
        return out
    if isinstance(b, d.Details):
        return (
            [f"<details><summary>{inline(b.summary)}</summary>", ""]
            + markdown_lines(b.blocks, level, short)
            + [
                "</details>",
                "",
            ]
        )
    if isinstance(b, d.ItemList):
        return [f"**{b.title}**", ""] + [f"- {inline(x)}" for x in b.items] + [""]
    if isinstance(b, d.Facts):
        return [f"- **{k}**: {md_text(v)}" for k, v in [*b.items, b.last]] + [""]
    raise TypeError(f"not a block markdown can show: {b!r} (wrap it in Only(HTML, ...))")


def _title(title: str, level: int) -> list[str]:
    return [f"{'#' * level} {md_text(title)}", ""] if title else []
