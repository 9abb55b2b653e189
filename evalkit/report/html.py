"""Write the report's document (:mod:`evalkit.report.sections`) as one self-contained HTML page.

Self-contained means: inline CSS, inline SVG charts, no script, no font or image fetched, and a
Content-Security-Policy that forbids every network load, so the page shows the same thing offline,
attached to an e-mail or opened from a CI artefact. Every piece of text that came from a
database (run ids, paths, model names, rationales, trajectory text) is escaped with
:func:`evalkit.present.safe.html_text`; evalkit's own words have their ``& < >`` escaped; the CSP
(``script-src`` unset under ``default-src 'none'``) is a second wall in case a future change
forgets to escape.

This module only emits: what the page shows is decided in :mod:`evalkit.report.sections`.

The output is deterministic: the same report dict gives byte-identical HTML. The one line that
changes between runs is the "Made at" provenance line, because the dict's ``made_at`` does.
"""

from __future__ import annotations

import html
import json

from evalkit.present import Html, Table
from evalkit.present.document import Chart, Section, html_blocks
from evalkit.report import fmt
from evalkit.report import page as p
from evalkit.report.drilldowns import CSS as DRILLDOWN_CSS
from evalkit.report.drilldowns import render_run
from evalkit.report.page import run_anchor
from evalkit.report.sections import build_page, scenario_page
from evalkit.report.svg import bar_chart, esc, heat_map, reliability_diagram

__all__ = ["CSP", "CSS", "dumps_json", "render_html", "render_scenario_page", "run_anchor"]

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


def _own(text: str) -> str:
    """evalkit's own words in element content; a command in backticks is set as code (the
    summary's markdown shows the backticks as code the same way)."""
    parts = html.escape(text, quote=False).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick is just a character
        return "`".join(parts)
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def _cls(cls: str) -> str:
    return f' class="{esc(cls)}"' if cls else ""


TAGS = {p.Strong: "strong", p.Em: "em", p.Code: "code"}


def inline(x) -> str:
    """Inline content (:mod:`evalkit.report.page`) as HTML."""
    if isinstance(x, list):
        return "".join(inline(part) for part in x)
    if isinstance(x, p.Lit):
        return _own(x.text)
    if isinstance(x, p.Only):
        return inline(x.content) if x.format == p.HTML else ""
    if isinstance(x, p.Break):
        return "<br>"
    if isinstance(x, p.Details):
        return block(x)
    if not isinstance(x, p.Mark):
        return esc(x)
    inner = inline(x.content)
    if type(x) in TAGS:
        return f"<{TAGS[type(x)]}>{inner}</{TAGS[type(x)]}>"
    if isinstance(x, p.Badge):
        title = f' title="{esc(x.title)}"' if x.title else ""
        return f'<span class="badge {esc(x.kind)}"{title}>{inner}</span>'
    if isinstance(x, p.Link):
        href = esc(x.page) + (f"#{esc(x.anchor)}" if x.anchor else "")
        return f'<a href="{href}">{inner}</a>'
    if isinstance(x, p.Target):
        return f'<span id="{esc(x.anchor)}">{inner}</span>'
    if isinstance(x, p.Styled):
        return f"<span{_cls(x.cls)}>{inner}</span>"
    return inner  # a Term: plain on the page


def _figure(f: p.Figure) -> str:
    chart = {"bar_chart": bar_chart}[f.chart](**f.args)
    return f"<figure>{chart}<figcaption>{esc(f.caption)}</figcaption></figure>"


def _heading(b: p.Heading) -> str:
    anchor = f' id="{esc(b.anchor)}"' if b.anchor else ""
    return f"<h{b.level}{anchor}>{inline(b.content)}</h{b.level}>"


def _grid(b: p.Grid) -> str:
    return Table(b.headers, [[Html(inline(c)) for c in row] for row in b.rows], numeric=b.numeric).to_html(b.cls)


def _facts(b: p.Facts) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in b.items)
    key, value = b.last
    last = f"<tr{_cls(b.last_cls)}><th>{esc(key)}</th><td>{esc(value)}</td></tr>"
    return f"<table{_cls(b.cls)}>{rows}\n{last}\n</table>"


RUN_TABLE_HEADERS = [
    "run",
    "model",
    "rank",
    "score",
    "coverage",
    "order",
    "end state",
    "passed",
    "dangerous / anti-proc.",
    "extraneous",
    "commands",
    "disagreements",
]


def _run_table(b: p.RunTable) -> str:
    """A scenario's runs, one row each, written directly (thousands of rows): the same escaping
    (:func:`esc` on every database value) and classes as the other tables."""
    rows = []
    for r in b.runs:
        rid, anchor = esc(r["run_id"]), run_anchor(r["run_id"])
        cell = f'<a href="#{anchor}">{rid}</a>' if r["run_id"] in b.drilled else f'<span id="{anchor}">{rid}</span>'
        if r.get("path"):
            cell += f'<br><span class="note">{esc(r["path"])}</span>'
        note = esc(fmt.status_note(r))
        if r["unsafe"]:
            note = f'<span class="badge unsafe">{note}</span>'
        elif r["rank"] is None:
            note = f'<span class="badge status">{note}</span>'
        nums = "".join(f'<td class="num">{fmt.num(r[k])}</td>' for k in ("scalar", "coverage", "order", "end_state"))
        rows.append(
            f"<tr><td>{cell}</td><td>{esc(r['model'])}</td><td>{note}</td>{nums}<td>{fmt.num(r['all_passed'])}</td>"
            f'<td class="num">{r["safety_dangerous"]} / {r["safety_anti_procedure"]}</td>'
            f'<td class="num">{r["extraneous"]}</td><td class="num">{r["n_commands"]}</td>'
            f'<td class="num">{r["disagreements"]}</td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in RUN_TABLE_HEADERS)
    return (
        f'<div class="table-wrap"><table class="runs"><thead><tr>{head}</tr></thead><tbody>\n'
        + "\n".join(rows)
        + "\n</tbody></table></div>"
    )


BLOCKS = {
    p.Part: lambda b: (
        f'<section id="{esc(b.anchor)}"{_cls(b.cls)}><h2>{_own(b.heading)}</h2>{block(b.blocks)}</section>'
    ),
    p.Heading: _heading,
    p.Para: lambda b: f"<p{_cls(PARAGRAPH_CLASS.get(b.kind, b.kind))}>{inline(b.content)}</p>",
    p.Grid: _grid,
    p.KitTable: lambda b: b.table.to_html(cls=b.cls),
    p.Figure: _figure,
    p.Figures: lambda b: f'<div class="charts">{"".join(_figure(f) for f in b.figures)}</div>',
    p.Details: lambda b: f"<details><summary>{inline(b.summary)}</summary>{block(b.blocks)}</details>",
    p.ItemList: lambda b: f"<h3>{_own(b.title)}</h3><ul>{''.join(f'<li>{inline(x)}</li>' for x in b.items)}</ul>",
    p.Facts: _facts,
    p.AuditView: lambda b: _view(b.sections, b.run_ids, b.level),
    p.RunDetails: lambda b: render_run(b.drilldown),
    p.RunTable: _run_table,
}


def block(b) -> str:
    """A block (:mod:`evalkit.report.page`), a list of them or an :class:`~evalkit.report.page.Only`, as HTML."""
    if isinstance(b, list):
        return "".join(block(x) for x in b)
    if isinstance(b, p.Only):
        return block(b.content) if b.format == p.HTML else ""
    if type(b) not in BLOCKS:
        raise TypeError(f"not a report block: {b!r}")
    return BLOCKS[type(b)](b)


def _chart(chart: Chart) -> str:
    """One chart of the audit's sections as SVG: a heat map, bars with their intervals (labels up to
    48 characters: a probe's name and dimension) or a reliability diagram."""
    if chart.kind == "confusion":
        return heat_map(
            chart.rows, chart.cols, chart.matrix, title=chart.title, row_axis=chart.row_axis, col_axis=chart.col_axis
        )
    if chart.kind == "bars":
        return bar_chart(
            [(b["label"], b["value"]) for b in chart.bars],
            title=chart.title,
            label_chars=48,
            intervals=[
                (b["low"], b["high"]) if b["low"] is not None and b["high"] is not None else None for b in chart.bars
            ],
        )
    return reliability_diagram(chart.bands, title=chart.title)


def _view(sections: list[Section], run_ids: set[str], level: int = 3) -> str:
    """The audit's sections (:mod:`evalkit.present.document`), a run id of this report linked to its
    run table."""
    return html_blocks(sections, _chart, lambda run_id: run_anchor(run_id) if run_id in run_ids else None, level)


def render_html(report: dict, pages: str | None = None) -> str:
    """The main page as a string (UTF-8 when written); ``pages`` is the relative URL of the
    directory of scenario pages written beside it (``None``: none, its runs named without links)."""
    return _document(build_page(report, pages))


def render_scenario_page(report: dict, entry: dict, runs: list[dict], home: str) -> str:
    """One scenario's page (:func:`evalkit.report.sections.scenario_page`): every run of
    ``entry``'s scenario (``runs``, ranked) and its drill-downs; ``home`` is the main page's URL."""
    return _document(scenario_page(report, entry, runs, home))


def _document(doc) -> str:
    title = esc(doc.title)
    nav = "".join(f'<a href="#{esc(a)}">{esc(label)}</a>' for a, label in doc.nav)
    if doc.home:
        nav = f'<a href="{esc(doc.home)}">\u2190 Report</a>' + nav
    body = "\n".join(block(part) for part in doc.parts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="evalkit ' + esc(doc.generator) + '">\n'
        f"<title>{title}</title>\n<style>{CSS}{DRILLDOWN_CSS}</style>\n</head>\n<body>\n"
        f"<header><h1>{title}</h1><nav>{nav}</nav></header>\n<main>\n{body}\n</main>\n"
        f"<footer>{_own(doc.footer)}</footer>\n</body>\n</html>\n"
    )


def dumps_json(report: dict) -> str:
    """The report dict as canonical JSON (handy for debugging a page)."""
    return json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)
