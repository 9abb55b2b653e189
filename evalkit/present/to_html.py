"""The document model (:mod:`evalkit.present.document`) as HTML: blocks as fragments, a
:class:`~evalkit.present.document.Page` as one self-contained page.

Self-contained means: inline CSS, inline SVG charts (:mod:`evalkit.present.svg`), no script, no
font or image fetched, and a Content-Security-Policy that forbids every network load, so the page
shows the same thing offline, attached to an e-mail or opened from a CI artefact. Every piece of
text that came from a database (run ids, paths, model names, rationales, trajectory text) is
escaped with :func:`evalkit.present.safe.html_text`; evalkit's own words have their ``& < >``
escaped; the CSP (``script-src`` unset under ``default-src 'none'``) is a second wall in case a
future change forgets to escape.

The output is deterministic: the same document gives byte-identical HTML.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from evalkit.present import document as d
from evalkit.present.safe import html_text as esc
from evalkit.present.svg import bar_chart, heat_map, reliability_diagram
from evalkit.present.table import Html, Table

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

CSS = """
:root{--ink:#1d2430;--mute:#5b6575;--line:#d8dde5;--bg:#fff;--accent:#3b6ea5;--bad:#b5483b;
--warn:#9a6b00;--qual:#fff8e6;--qualline:#e0b64c}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:var(--bg);
font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
header,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:18px;border-bottom:1px solid var(--line)}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;padding-top:8px}
h3{font-size:15px;margin:18px 0 6px}
.lede{color:var(--mute);margin:0 0 10px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none}
section{border-top:1px solid var(--line);margin-top:18px}main>section:first-child{border-top:0}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
.table-wrap{max-width:100%;overflow-x:auto}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f5f8;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;font-weight:600}
.badge.small-n{background:#fdf0d5;color:var(--warn)}
.badge.unsafe,.badge.unsafe-model{background:#f8dcd8;color:var(--bad)}
.badge.status{background:#eceff3;color:var(--mute)}
.cls-matched_required{color:#22683a}.cls-optional{color:var(--mute)}
.cls-forbidden{color:var(--bad);font-weight:600}.cls-extraneous{color:var(--warn)}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
figure{margin:6px 0}figcaption{color:var(--mute);font-size:12px}
.qualitative{background:var(--qual);border:2px dashed var(--qualline);padding:0 14px 10px;margin-top:22px}
.qual-banner{font-weight:600;color:#6b4e00;margin:10px 0}
.absent{color:var(--mute);font-style:italic}
.note{color:var(--mute);font-size:12px}
details summary{cursor:pointer;color:var(--accent)}
blockquote{margin:6px 0;padding:4px 10px;border-left:3px solid var(--line);color:#333;white-space:pre-wrap}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f5f8;padding:0 3px}
td code,table.commands td{overflow-wrap:anywhere}
table.commands{table-layout:fixed;width:18em}table.commands th:nth-child(-n+2){width:3.2em}
table.runs td:first-child{overflow-wrap:anywhere;min-width:9em}
.undeclared{border-left:4px solid var(--warn);padding-left:10px}
footer{color:var(--mute);font-size:12px;padding:14px 20px 30px}
@media print{details{display:block}nav{display:none}}
"""

# A paragraph kind's class on the page.
PARAGRAPH_CLASS = {"plain": "", "aside": "note", "banner": "qual-banner"}
TAGS = {d.Strong: "strong", d.Em: "em", d.Code: "code"}


def _own(text: str) -> str:
    """evalkit's own words in element content; a command in backticks is set as code (markdown
    shows the backticks as code the same way)."""
    parts = html.escape(text, quote=False).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick is just a character
        return "`".join(parts)
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def _cls(cls: str) -> str:
    return f' class="{esc(cls)}"' if cls else ""


def chart_svg(chart: d.Chart) -> str:
    """One chart as an ``<svg>`` element: a heat map, bars with their intervals, or a reliability
    diagram."""
    if chart.kind == "confusion":
        return heat_map(
            chart.rows, chart.cols, chart.matrix, title=chart.title, row_axis=chart.row_axis, col_axis=chart.col_axis
        )
    if chart.kind == "bars":
        flags = [b.get("flag", False) for b in chart.bars]
        return bar_chart(
            [(b["label"], b["value"]) for b in chart.bars],
            title=chart.title,
            max_value=chart.max_value,
            value_format=chart.value_format,
            flagged=flags if any(flags) else None,
            label_chars=chart.label_chars,
            intervals=[
                (b["low"], b["high"]) if b["low"] is not None and b["high"] is not None else None for b in chart.bars
            ],
        )
    return reliability_diagram(chart.bands, title=chart.title)


class Writer:
    """Writes blocks as HTML. ``runs``: the run ids whose details the page holds (a view table's
    run-id cell links to the run's anchor when its run is among them); ``custom``: the writers of
    blocks a layer above defines (type → function of the block)."""

    def __init__(self, runs: Collection[str] = (), custom: dict[type, Callable[[Any], str]] | None = None):
        self.runs = runs
        self.custom = custom or {}

    def inline(self, x: Any) -> str:
        if isinstance(x, list):
            return "".join(self.inline(part) for part in x)
        if isinstance(x, d.Lit):
            return _own(x.text)
        if isinstance(x, d.Only):
            return self.inline(x.content) if x.format == d.HTML else ""
        if isinstance(x, d.Break):
            return "<br>"
        if isinstance(x, d.Details):
            return self.block(x, 3)
        if not isinstance(x, d.Mark):
            return esc(x)
        inner = self.inline(x.content)
        if type(x) in TAGS:
            return f"<{TAGS[type(x)]}>{inner}</{TAGS[type(x)]}>"
        if isinstance(x, d.Badge):
            title = f' title="{esc(x.title)}"' if x.title else ""
            return f'<span class="badge {esc(x.kind)}"{title}>{inner}</span>'
        if isinstance(x, d.Link):
            href = esc(x.page) + (f"#{esc(x.anchor)}" if x.anchor else "")
            return f'<a href="{href}">{inner}</a>'
        if isinstance(x, d.Target):
            return f'<span id="{esc(x.anchor)}">{inner}</span>'
        if isinstance(x, d.Styled):
            return f"<span{_cls(x.cls)}>{inner}</span>"
        return inner  # a Term: plain on the page

    def block(self, b: Any, level: int = 2) -> str:
        """A block, a list of them or an :class:`~evalkit.present.document.Only`; ``level`` is the
        heading level of a section met here."""
        if isinstance(b, list):
            return "".join(self.block(x, level) for x in b)
        if isinstance(b, d.Only):
            return self.block(b.content, level) if b.format == d.HTML else ""
        if type(b) in self.custom:
            return self.custom[type(b)](b)
        if isinstance(b, d.Section):
            return self._section(b, level)
        if isinstance(b, d.Heading):
            anchor = f' id="{esc(b.anchor)}"' if b.anchor else ""
            return f"<h{b.level}{anchor}>{self.inline(b.content)}</h{b.level}>"
        if isinstance(b, d.Para):
            return f"<p{_cls(PARAGRAPH_CLASS.get(b.kind, b.kind))}>{self.inline(b.content)}</p>"
        if isinstance(b, d.Grid):
            rows = [[Html(self.inline(c)) for c in row] for row in b.rows]
            return Table(b.headers, rows, numeric=b.numeric).to_html(b.cls)
        if isinstance(b, d.ViewTable):
            return self._title(b.title, level) + self._table(b)
        if isinstance(b, d.Chart):
            return _figure(b)
        if isinstance(b, d.Charts):
            return self._title(b.title, level) + f'<div class="charts">{"".join(_figure(c) for c in b.charts)}</div>'
        if isinstance(b, d.Details):
            return f"<details><summary>{self.inline(b.summary)}</summary>{self.block(b.blocks, level)}</details>"
        if isinstance(b, d.ItemList):
            items = "".join(f"<li>{self.inline(x)}</li>" for x in b.items)
            return f"<h3>{_own(b.title)}</h3><ul>{items}</ul>"
        if isinstance(b, d.Facts):
            return _facts(b)
        raise TypeError(f"not a block: {b!r}")

    def _section(self, s: d.Section, level: int) -> str:
        out = f"<h{level}>{self.inline(s.heading)}</h{level}>"
        if s.intro:
            out += f'<p class="lede">{esc(s.intro)}</p>'
        out += self.block(s.blocks, level + 1)
        return f'<section id="{esc(s.anchor)}"{_cls(s.cls)}>{out}</section>' if s.anchor else out

    @staticmethod
    def _title(title: str, level: int) -> str:
        return f"<h{level}>{esc(title)}</h{level}>" if title else ""

    def _table(self, vt: d.ViewTable) -> str:
        """A view table: a run id the page explains links to its anchor, the judge's words are quoted."""
        table = vt.table
        r, q = vt.run_column, vt.quote_column
        if r is not None or q is not None:
            rows = []
            for row in table.rows:
                cells = list(row)
                if r is not None and cells[r] in self.runs:
                    cells[r] = Html(f'<a href="#{esc(d.run_anchor(cells[r]))}">{esc(cells[r])}</a>', cells[r])
                if q is not None and cells[q]:
                    cells[q] = Html(f"<blockquote>{esc(cells[q])}</blockquote>", cells[q])
                rows.append(cells)
            table = replace(table, rows=rows)
        return table.to_html(vt.name)


def _figure(chart: d.Chart) -> str:
    return f"<figure>{chart_svg(chart)}<figcaption>{esc(chart.caption)}</figcaption></figure>"


def _facts(b: d.Facts) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in b.items)
    key, value = b.last
    last = f"<tr{_cls(b.last_cls)}><th>{esc(key)}</th><td>{esc(value)}</td></tr>"
    return f"<table{_cls(b.cls)}>{rows}\n{last}\n</table>"


def html_page(page: d.Page, custom: dict[type, Callable[[Any], str]] | None = None, css: str = "") -> str:
    """A whole page: its sections at heading level 2; ``custom`` writes the blocks a layer above
    defines (:class:`Writer`), ``css`` is added to the page's own style."""
    writer = Writer(page.runs, custom)
    title = esc(page.title)
    nav = "".join(f'<a href="#{esc(a)}">{esc(label)}</a>' for a, label in page.nav)
    if page.home:
        nav = f'<a href="{esc(page.home)}">\u2190 Report</a>' + nav
    body = "\n".join(writer.block(s, 2) for s in page.sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="evalkit ' + esc(page.generator) + '">\n'
        f"<title>{title}</title>\n<style>{CSS}{css}</style>\n</head>\n<body>\n"
        f"<header><h1>{title}</h1><nav>{nav}</nav></header>\n<main>\n{body}\n</main>\n"
        f"<footer>{_own(page.footer)}</footer>\n</body>\n</html>\n"
    )
