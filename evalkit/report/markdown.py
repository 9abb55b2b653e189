"""Write the report's document (:mod:`evalkit.report.sections`) as GitHub-flavoured markdown,
for a pull-request comment.

The same document as the HTML page (:mod:`evalkit.report.html`): what the summary shows instead
of a chart, and where it is capped, is decided there; this module only emits. Text from the
database is escaped twice over by :func:`evalkit.present.safe.md_text`: ``<``, ``>`` and ``&``
become entities (GitHub renders inline HTML) and markdown's punctuation is backslash-escaped, so
a trajectory cannot inject links, images, HTML or break a table.
"""

from __future__ import annotations

from evalkit.present import Markdown, Table, md_text
from evalkit.present.document import markdown_lines
from evalkit.report import page as p
from evalkit.report.sections import build_page

__all__ = ["render_markdown"]

md = md_text

# How a paragraph kind is marked ("{}" is the paragraph).
PARAGRAPH_MARK = {"absent": "_{}_", "aside": "_{}_", "banner": "> **{}**"}


# How a mark is written around its content; the summary has no anchors, styles or code colours,
# so a link, a target, code and a styled part show their content.
MARKS = {p.Strong: "**", p.Term: "**", p.Badge: "**", p.Em: "_"}


def inline(x) -> str:
    """Inline content (:mod:`evalkit.report.page`) as markdown."""
    if isinstance(x, list):
        return "".join(inline(part) for part in x)
    if isinstance(x, p.Lit):
        return x.text
    if isinstance(x, p.Only):
        return inline(x.content) if x.format == p.MARKDOWN else ""
    if isinstance(x, p.Break):
        return "<br>"
    if isinstance(x, p.Details):
        raise TypeError("a collapsed block inside a markdown line")
    if not isinstance(x, p.Mark):
        return md(x)
    mark = MARKS.get(type(x), "")
    return f"{mark}{inline(x.content)}{mark}"


def _grid(b: p.Grid) -> list[str]:
    return Table(b.headers, [[Markdown(inline(c)) for c in row] for row in b.rows]).markdown_lines() + [""]


def _details(b: p.Details) -> list[str]:
    return [f"<details><summary>{inline(b.summary)}</summary>", ""] + lines(b.blocks) + ["</details>", ""]


BLOCKS = {
    p.Part: lambda b: [f"## {b.heading}", ""] + lines(b.blocks),
    p.Heading: lambda b: [f"{'#' * b.level} {inline(b.content)}", ""],
    p.Para: lambda b: [PARAGRAPH_MARK.get(b.kind, "{}").format(inline(b.content)), ""],
    p.Grid: _grid,
    p.KitTable: lambda b: b.table.markdown_lines() + [""],
    p.Details: _details,
    p.ItemList: lambda b: [f"**{b.title}**", ""] + [f"- {inline(x)}" for x in b.items] + [""],
    p.Facts: lambda b: [f"- **{k}**: {md(v)}" for k, v in [*b.items, b.last]] + [""],
    p.AuditView: lambda b: markdown_lines(b.sections, level=b.level, short=b.short),
}


def lines(b) -> list[str]:
    """A block (:mod:`evalkit.report.page`), a list of them or an ``Only``, as markdown lines."""
    if isinstance(b, list):
        return [line for x in b for line in lines(x)]
    if isinstance(b, p.Only):
        return lines(b.content) if b.format == p.MARKDOWN else []
    if type(b) not in BLOCKS:
        raise TypeError(f"not a block the summary can show: {b!r} (wrap it in Only(HTML, ...))")
    return BLOCKS[type(b)](b)


def render_markdown(report: dict) -> str:
    doc = build_page(report)
    out = [f"# {md(doc.title)}", ""] + lines(doc.parts)
    return "\n".join(out).rstrip("\n") + "\n"
