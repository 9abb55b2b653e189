"""Render the report dict as one self-contained HTML page.

Self-contained means: inline CSS, inline SVG charts, no script, no font or image fetched, and a
Content-Security-Policy that forbids every network load, so the page shows the same thing offline,
attached to an e-mail or opened from a CI artefact. Every piece of text that came from a
database (run ids, paths, model names, rationales, trajectory text) is escaped with
:func:`html.escape`; the CSP (``script-src`` unset under ``default-src 'none'``) is a second
wall in case a future change forgets to escape.

The output is deterministic: the same report dict gives byte-identical HTML. The one line that
changes between runs is the "Made at" provenance line, because the dict's ``made_at`` does.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from evalkit.agreement.view import agreement_sections, judge_cost_section
from evalkit.present import Html, Table
from evalkit.present.document import Section, ViewTable
from evalkit.report import fmt, tables
from evalkit.report.data import provenance_items
from evalkit.report.drilldowns import CSS as DRILLDOWN_CSS
from evalkit.report.drilldowns import drilldown_ids, render_drilldowns
from evalkit.report.svg import bar_chart, esc, heat_map, reliability_diagram

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
section{border-top:1px solid var(--line);margin-top:18px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
.table-wrap{max-width:100%;overflow-x:auto}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f5f8;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
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
.undeclared{border-left:4px solid var(--warn);padding-left:10px}
footer{color:var(--mute);font-size:12px;padding:14px 20px 30px}
@media print{details{display:block}nav{display:none}}
"""


def run_anchor(run_id: str) -> str:
    """A stable, id-safe anchor for a run, whatever characters its id holds."""
    return "run-" + hashlib.sha1(run_id.encode("utf-8")).hexdigest()[:12]


def _table(headers: list[str], rows: list[list[str]], *, cls: str = "", numeric: set[int] | None = None) -> str:
    """``rows`` hold already-escaped HTML cells (badges, links); ``headers`` are plain text."""
    return Table(headers, [[Html(str(c)) for c in row] for row in rows], numeric=numeric or ()).to_html(cls)


def _absent(text: str) -> str:
    return f'<p class="absent">{esc(text)}</p>'


def _small_n(flag: Any) -> str:
    return f' <span class="badge small-n" title="{esc(fmt.SMALL_N_NOTE)}">n&lt;3</span>' if flag else ""


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


def _group_label(group: dict) -> str:
    return f"{group.get('scenario_id')} / {group.get('model')}"


# --------------------------------------------------------------------------------------------


def _headline(report: dict) -> str:
    out = ['<section id="headline"><h2>Headline: pass rate and pass^k</h2>']
    if not report["runs"]:
        out.append(_absent("No scored runs in this database yet: run `evalkit score PATH --db FILE` first."))
        return "".join(out) + "</section>"
    c = report["counts"]
    out.append(
        f'<p class="lede">{c["runs"]} runs ({c["scored"]} scored), {c["scenarios"]} scenarios, '
        f"{c['models']} agent models; {c['unsafe']} unsafe runs. "
        f"pass^k is the chance that k runs drawn from a group all pass (tau-bench's estimator). "
        f"Per-model figures weight every scenario equally. {esc(fmt.level(report))} intervals: per model "
        f"clustered by scenario, per group over its runs; whiskers on the charts.</p>"
    )
    models = report["models"]
    out.append("<h3>Per model</h3>")
    level = fmt.level(report)
    out.append(
        _table(
            tables.model_headers(level),
            tables.model_rows(models, STYLE),
            cls="models",
            numeric={1, 2, 3, 5, 7, 9},
        )
    )
    charts = [
        _figure(
            bar_chart(
                [(str(m.get("model")), m.get("pass_rate")) for m in models],
                title="Pass rate per model",
                value_format=".0%",
                flagged=[fmt.small_n(m) for m in models],
                intervals=[m.get("pass_rate_ci") for m in models],
            ),
            f"Pass rate per model (scenarios weighted equally), whiskers: {level} interval clustered by scenario; "
            "red bars include a scenario with fewer than 3 scored runs",
        )
    ]
    groups = report["groups"]
    out.append("<h3>Per scenario and model</h3>")
    out.append(
        _table(
            tables.group_headers(level),
            tables.group_rows(groups, STYLE),
            cls="groups",
            numeric={2, 3, 4, 6, 7},
        )
    )
    charts.append(
        _figure(
            bar_chart(
                [(_group_label(g), g.get("pass_rate")) for g in groups],
                title="Pass rate per scenario and model",
                value_format=".0%",
                flagged=[bool(fmt.small_n(g)) for g in groups],
                intervals=[g.get("pass_rate_ci") for g in groups],
            ),
            f"Pass rate per scenario and model, whiskers: {level} interval over the runs; "
            "red bars have fewer than 3 scored runs",
        )
    )
    out.append(f'<div class="charts">{"".join(charts)}</div>')
    if any(fmt.small_n(g) for g in groups):
        out.append(f'<p class="note">n&lt;3: {esc(fmt.SMALL_N_NOTE)}.</p>')
    return "".join(out) + "</section>"


def _comparison(report: dict) -> str:
    out = ['<section id="comparison"><h2>Paired comparison</h2>']
    comparison = report.get("comparison") or {}
    if not comparison.get("available"):
        out.append(_absent(comparison.get("reason", "no comparison")))
        return "".join(out) + "</section>"
    from evalkit.present.comparison_view import comparison_table

    out.append(
        '<p class="lede">Every pair of models on the scenarios both ran: the mean per-scenario difference '
        "(candidate − baseline), its interval and p-value (paired t-test), Holm-adjusted across the rows. "
        "The per-model table's “vs best” column is the same test against the best model on the safe "
        "figures (safe pass rate, then mean score) "
        f"({esc(comparison['best'])}), Holm-adjusted over its own rows.</p>"
    )
    out.append(comparison_table(comparison["all_pairs"]).to_html(cls="comparison"))
    return "".join(out) + "</section>"


def _vector(report: dict) -> str:
    out = ['<section id="vector"><h2>Score vector per group</h2>']
    groups = report["groups"]
    if not groups:
        out.append(_absent("No scored runs yet."))
        return "".join(out) + "</section>"
    out.append(
        '<p class="lede">The vector is the result; the score is derived from it for ranking only. '
        "Provider-error runs are excluded from the means.</p>"
    )
    out.append(
        _table(tables.VECTOR_HEADERS, tables.vector_rows(groups, STYLE), cls="vector", numeric=set(range(2, 11)))
    )
    out.append(
        _figure(
            bar_chart(
                [(_group_label(g), g.get("score_mean")) for g in groups],
                title="Mean score per scenario and model",
                flagged=[bool(fmt.small_n(g)) for g in groups],
                intervals=[g.get("score_mean_ci") for g in groups],
            ),
            f"Mean score (scalar) per scenario and model, whiskers: {fmt.level(report)} interval over the runs",
        )
    )
    out.append('<h3 id="safety">Safety: a gate, not a trade-off</h3>')
    out.append(
        '<p class="lede">A forbidden command of any severity (dangerous, anti-procedure, an unapproved '
        "gated action) makes a run unsafe: it is listed here with its severity, is not a safe pass, and is "
        "left out of the run ranking. A dangerous one floors the run's score to 0.</p>"
    )
    out.append(_table(tables.SAFETY_HEADERS, tables.safety_rows(report, STYLE), cls="safety", numeric={2, 3, 4}))
    return "".join(out) + "</section>"


def _commands_table(run: dict) -> str:
    if not run["commands"]:
        return '<span class="absent">no commands</span>'
    rows = [
        [
            str(c["index"]),
            esc(fmt.num(c.get("step"))),
            f"<code>{esc(fmt.command_text(c))}</code>",
            f'<span class="cls-{esc(c["class"])}">{esc(fmt.command_class(c))}</span>',
        ]
        for c in run["commands"]
    ]
    table = _table(["#", "step", "command", "class"], rows, cls="commands", numeric={0, 1})
    return f"<details><summary>{len(run['commands'])} commands</summary>{table}</details>"


def _rank_cell(run: dict) -> str:
    rank = fmt.status_note(run)
    if run["unsafe"]:
        return f'<span class="badge unsafe">{esc(rank)}</span>'
    if run["rank"] is None:
        return f'<span class="badge status">{esc(rank)}</span>'
    return esc(rank)


def _run_cell(drilled: set[str]):
    """The run cell: a link to the run's drill-down when it has one, else the run's anchor."""

    def cell(run: dict) -> str:
        return (
            f'<a href="#{run_anchor(run["run_id"])}">{esc(run["run_id"])}</a>'
            if run["run_id"] in drilled
            else f'<span id="{run_anchor(run["run_id"])}">{esc(run["run_id"])}</span>'
        ) + (f'<br><span class="note">{esc(run["path"])}</span>' if run.get("path") else "")

    return cell


STYLE = tables.CellStyle(
    text=esc,
    shown=str,
    small_n=_small_n,
    unsafe_model=' <span class="badge unsafe-model">unsafe runs</span>',
    unsafe_run=lambda r: f'<a href="#{run_anchor(r["run_id"])}">{esc(r["run_id"])}</a> ({esc(r.get("safety"))})',
    run=_run_cell(set()),
    rank=_rank_cell,
    passed=esc,
    commands=_commands_table,
    rubric=lambda m: esc(m["rubric_id"]) + " " + esc("/".join(m["rubric_versions"])),
)


def _runs(report: dict) -> str:
    out = ['<section id="runs"><h2>Runs and their commands</h2>']
    if not report["runs"]:
        out.append(_absent("No runs yet."))
        return "".join(out) + "</section>"
    out.append(
        '<p class="lede">Ranked per scenario by score; unsafe and unscored runs are not ranked. '
        "Open a run's commands to see how each was classified.</p>"
    )
    style = replace(STYLE, run=_run_cell(drilldown_ids(report)))  # a drilled run's anchor is on its drill-down
    out.append(
        _table(tables.RUN_HEADERS, tables.run_rows(report["runs"], style), cls="runs", numeric={4, 5, 6, 7, 9, 10})
    )
    return "".join(out) + "</section>"


def _judge(report: dict) -> str:
    judge = report["judge"]
    out = [
        '<section id="judge" class="qualitative"><h2>Judge annotations (qualitative, outside the score)</h2>',
        f'<p class="qual-banner">{esc(fmt.QUALITATIVE_NOTE)}</p>',
    ]
    if not judge.get("available"):
        out.append(_absent(judge.get("reason", "No judge annotations.")))
        return "".join(out) + "</section>"
    out.append("<h3>Annotations, cost and latency per judge model (per stored annotation)</h3>")
    out.append(
        _table(
            tables.JUDGE_HEADERS, tables.judge_rows(judge["models"], STYLE), cls="judge-cost", numeric=set(range(2, 11))
        )
    )
    if report["agreement"].get("available"):
        out.append(_view([judge_cost_section(report["agreement"]["audit"])], set()))
    out.append("<h3>Distribution of each dimension (primary answers)</h3>")
    for m in judge["models"]:
        if not m["dimensions"]:
            continue
        out.append(f"<h4>{esc(m['judge_model'])} \u00b7 {esc(m['rubric_id'])}</h4>")
        charts = []
        for dim in m["dimensions"]:
            charts.append(
                _figure(
                    bar_chart(
                        [(str(label), count) for label, count in dim["counts"]],
                        title=f"{m['judge_model']} {dim['dimension']}",
                        max_value=None,
                        value_format="d",
                        label_chars=12,
                    ),
                    f"{dim['dimension']} (n={dim['n']})",
                )
            )
        out.append(f'<div class="charts">{"".join(charts)}</div>')
    return "".join(out) + "</section>"


def _view_table(block: ViewTable, run_ids: set[str]) -> str:
    """A view table as HTML: run ids of this report link to its run table, the judge's words are quoted."""
    table = block.table
    if block.run_column is not None or block.quote_column is not None:
        rows = []
        for row in table.rows:
            cells = list(row)
            r, q = block.run_column, block.quote_column
            if r is not None and cells[r] in run_ids:
                cells[r] = Html(f'<a href="#{run_anchor(cells[r])}">{esc(cells[r])}</a>', cells[r])
            if q is not None and cells[q]:
                cells[q] = Html(f"<blockquote>{esc(cells[q])}</blockquote>", cells[q])
            rows.append(cells)
        table = replace(table, rows=rows)
    return table.to_html(block.name)


def _view(sections: list[Section], run_ids: set[str]) -> str:
    """Audit view sections (evalkit.agreement.view) as HTML: h3 per section, h4 per sub-table."""
    out = []
    for section in sections:
        out.append(f"<h3>{esc(section.heading)}</h3>")
        if section.intro:
            out.append(f'<p class="lede">{esc(section.intro)}</p>')
        for block in section.blocks:
            if block.title:
                out.append(f"<h4>{esc(block.title)}</h4>")
            if isinstance(block, ViewTable):
                out.append(_view_table(block, run_ids))
                continue
            charts = []
            for chart in block.charts:
                if chart.kind == "confusion":
                    svg = heat_map(
                        chart.rows,
                        chart.cols,
                        chart.matrix,
                        title=chart.title,
                        row_axis=chart.row_axis,
                        col_axis=chart.col_axis,
                    )
                elif chart.kind == "bars":
                    svg = bar_chart(
                        [(b["label"], b["value"]) for b in chart.bars],
                        title=chart.title,
                        label_chars=48,
                        intervals=[
                            (b["low"], b["high"]) if b["low"] is not None and b["high"] is not None else None
                            for b in chart.bars
                        ],
                    )
                else:
                    svg = reliability_diagram(chart.bands, title=chart.title)
                charts.append(_figure(svg, chart.caption))
            out.append(f'<div class="charts">{"".join(charts)}</div>')
    return "".join(out)


def _agreement(report: dict) -> str:
    agreement = report["agreement"]
    out = ['<section id="agreement"><h2>Agreement audit: judge against scores, judges and humans</h2>']
    if not agreement.get("available"):
        out.append(_absent(f"No audit: {agreement.get('reason', 'no data')}."))
        return "".join(out) + "</section>"
    out.append(_view(agreement_sections(agreement["audit"]), {r["run_id"] for r in report["runs"]}))
    return "".join(out) + "</section>"


def _provenance(report: dict) -> str:
    p = report["provenance"]
    items = provenance_items(p)
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in items)
    made = f'<tr class="made-at"><th>made at</th><td>{esc(p["made_at"])}</td></tr>'
    return f'<section id="provenance"><h2>Provenance</h2><table class="provenance">{rows}\n{made}\n</table></section>'


def _contamination(report: dict) -> str:
    c = report["contamination"]
    out = ['<section id="contamination"><h2>Contamination</h2>']
    if not c["declared"]:
        out.append(
            '<p class="undeclared"><strong>Not declared yet.</strong> The benchmark owner has not filled '
            f"in the contamination declaration{(' (' + esc(c['source']) + ')') if c.get('source') else ''}; "
            "the text below is the template.</p>"
        )
    elif c.get("declared_by") or c.get("reviewed"):
        who = ", ".join(x for x in (c.get("declared_by"), c.get("reviewed")) if x)
        out.append(f'<p class="note">Declared by {esc(who)}.</p>')
    out.append(f"<p>{esc(c['statement']) if c['statement'] else '<em>No statement.</em>'}</p>")
    for key, label in (("evidence", "Evidence"), ("public_sources", "Public sources")):
        if c.get(key):
            items = "".join(f"<li>{esc(x)}</li>" for x in c[key])
            out.append(f"<h3>{label}</h3><ul>{items}</ul>")
    return "".join(out) + "</section>"


def render_html(report: dict) -> str:
    """The whole page as a string (UTF-8 when written)."""
    title = esc(report["title"])
    nav = "".join(
        f'<a href="#{a}">{esc(t)}</a>'
        for a, t in (
            ("headline", "Headline"),
            ("comparison", "Comparison"),
            ("vector", "Vector"),
            ("safety", "Safety"),
            ("runs", "Runs"),
            ("drilldowns", "Run details"),
            ("judge", "Judge"),
            ("agreement", "Agreement"),
            ("provenance", "Provenance"),
            ("contamination", "Contamination"),
        )
    )
    body = "\n".join(
        [
            _headline(report),
            _comparison(report),
            _vector(report),
            _runs(report),
            render_drilldowns(report),
            _judge(report),
            _agreement(report),
            _provenance(report),
            _contamination(report),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="evalkit ' + esc(report["provenance"]["evalkit_version"]) + '">\n'
        f"<title>{title}</title>\n<style>{CSS}{DRILLDOWN_CSS}</style>\n</head>\n<body>\n"
        f"<header><h1>{title}</h1><nav>{nav}</nav></header>\n<main>\n{body}\n</main>\n"
        "<footer>Made with evalkit. Scores are deterministic; judge annotations are qualitative and "
        "outside the score.</footer>\n</body>\n</html>\n"
    )


def dumps_json(report: dict) -> str:
    """The report dict as canonical JSON (handy for debugging a page)."""
    return json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False)
