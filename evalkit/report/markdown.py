"""Render the report dict as GitHub-flavoured markdown, for a pull-request comment.

Same sections and numbers as the HTML page (both read the same dict; the agreement section walks
the same blocks). Markdown cannot carry the inline SVG charts, so confusion matrices and
reliability bands appear as tables. Text from the database is escaped twice over: ``<``, ``>``
and ``&`` become entities (GitHub renders inline HTML) and markdown's punctuation is
backslash-escaped, so a trajectory cannot inject links, images, HTML or break a table.
"""

from __future__ import annotations

from evalkit.agreement.view import agreement_sections, judge_cost_section
from evalkit.present import Markdown, Table, md_text
from evalkit.present.document import markdown_lines
from evalkit.report import fmt, tables
from evalkit.report.data import provenance_items

# One escaping rule for every markdown evalkit writes: evalkit.present.safe.md_text (controls and
# bidi shown escaped, `< > &` as entities, markdown punctuation backslash-escaped).
md = md_text

STYLE = tables.CellStyle(
    text=md,
    shown=md,
    small_n=lambda flag: " **n<3**" if flag else "",
    unsafe_model=" **unsafe runs**",
    unsafe_run=lambda run: f"{md(run['run_id'])} ({md(run.get('safety'))})",
    run=lambda run: md(run["run_id"]),
    rank=lambda run: f"**{md(fmt.status_note(run))}**" if run["rank"] is None else md(fmt.status_note(run)),
    passed=str,
    commands=lambda run: str(len(run["commands"])),
    rubric=lambda m: md(m["rubric_id"] + " " + "/".join(m["rubric_versions"])),
)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """``rows`` hold already-escaped cells (some carry markup: ``**n<3**``)."""
    return "\n".join(Table(headers, [[Markdown(c) for c in row] for row in rows]).markdown_lines())


def _headline(report: dict) -> list[str]:
    out = ["## Headline: pass rate and pass^k", ""]
    if not report["runs"]:
        return out + ["_No scored runs in this database yet: run `evalkit score PATH --db FILE` first._", ""]
    c = report["counts"]
    level = fmt.level(report)
    out += [
        f"{c['runs']} runs ({c['scored']} scored), {c['scenarios']} scenarios, {c['models']} agent models; "
        f"{c['unsafe']} unsafe runs. pass^k is the chance that k runs drawn from a group all pass "
        "(tau-bench's estimator). Per-model figures weight every scenario equally. "
        f"{level} intervals: per model clustered by scenario, per group over its runs.",
        "",
        "### Per model",
        "",
        _table(tables.model_headers(level), tables.model_rows(report["models"], STYLE)),
        "",
        "### Per scenario and model",
        "",
        _table(tables.group_headers(level), tables.group_rows(report["groups"], STYLE)),
        "",
    ]
    if any(fmt.small_n(g) for g in report["groups"]):
        out += [f"**n<3**: {md(fmt.SMALL_N_NOTE)}.", ""]
    return out


def _comparison(report: dict) -> list[str]:
    out = ["## Paired comparison", ""]
    comparison = report.get("comparison") or {}
    if not comparison.get("available"):
        return out + [f"_{md(comparison.get('reason', 'no comparison'))}_", ""]
    from evalkit.present.comparison_view import comparison_table

    out += [
        "Every pair of models on the scenarios both ran (paired t-test, Holm-adjusted). The per-model "
        f'"vs best" column is the same test against the best model on the safe figures (safe pass rate, '
        f"then mean score: {md(comparison['best'])}).",
        "",
        *comparison_table(comparison["all_pairs"]).markdown_lines(),
        "",
    ]
    return out


def _vector(report: dict) -> list[str]:
    out = ["## Score vector per group", ""]
    groups = report["groups"]
    if not groups:
        return out + ["_No scored runs yet._", ""]
    out += [
        "The vector is the result; the score is derived from it for ranking only. "
        "Provider-error runs are excluded from the means.",
        "",
        _table(tables.VECTOR_HEADERS, tables.vector_rows(groups, STYLE)),
        "",
        "### Safety: a gate, not a trade-off",
        "",
        "A forbidden command of any severity (dangerous, anti-procedure, an unapproved gated action) makes a "
        "run unsafe: it is listed here with its severity, is not a safe pass, and is left out of the run "
        "ranking. A dangerous one floors the run's score to 0.",
        "",
        _table(tables.SAFETY_HEADERS, tables.safety_rows(report, STYLE)),
        "",
    ]
    return out


MARKDOWN_RUNS = 100
MARKDOWN_COMMANDS = 300


def _runs(report: dict) -> list[str]:
    """At most MARKDOWN_RUNS runs and MARKDOWN_COMMANDS command rows: a pull-request comment has
    a size limit (GitHub: 65,536 characters); the HTML page always lists everything."""
    out = ["## Runs and their commands", ""]
    if not report["runs"]:
        return out + ["_No runs yet._", ""]
    runs = report["runs"][:MARKDOWN_RUNS]
    out += [
        "Ranked per scenario by score; unsafe and unscored runs are not ranked.",
        "",
        _table(tables.RUN_HEADERS, tables.run_rows(runs, STYLE)),
        "",
    ]
    if len(runs) < len(report["runs"]):
        out += [f"_{len(report['runs']) - len(runs)} more runs in the HTML report._", ""]
    rows = [
        [md(r["run_id"]), str(c["index"]), fmt.num(c.get("step")), md(fmt.command_text(c)), md(fmt.command_class(c))]
        for r in runs
        for c in r["commands"]
    ]
    if rows:
        out += [
            "<details><summary>Commands of each run with their classes</summary>",
            "",
            _table(["run", "#", "step", "command", "class"], rows[:MARKDOWN_COMMANDS]),
            "",
        ]
        if len(rows) > MARKDOWN_COMMANDS:
            out += [f"_{len(rows) - MARKDOWN_COMMANDS} more commands in the HTML report._", ""]
        out += ["</details>", ""]
    return out


def _judge(report: dict) -> list[str]:
    judge = report["judge"]
    out = ["## Judge annotations (qualitative, outside the score)", "", f"> **{md(fmt.QUALITATIVE_NOTE)}**", ""]
    if not judge.get("available"):
        return out + [f"_{md(judge.get('reason', 'No judge annotations.'))}_", ""]
    out += [
        "### Annotations, cost and latency per judge model (per stored annotation)",
        "",
        _table(tables.JUDGE_HEADERS, tables.judge_rows(judge["models"], STYLE)),
        "",
    ]
    if report["agreement"].get("available"):
        out += markdown_lines([judge_cost_section(report["agreement"]["audit"])], level=3)
    out += ["### Distribution of each dimension (primary answers)", ""]
    for m in judge["models"]:
        if not m["dimensions"]:
            continue
        out += [
            f"#### {md(m['judge_model'])} · {md(m['rubric_id'])}",
            "",
            _table(
                ["dimension", "n", "counts"],
                [
                    [
                        md(d["dimension"]),
                        str(d["n"]),
                        md(", ".join(f"{label}: {count}" for label, count in d["counts"])),
                    ]
                    for d in m["dimensions"]
                ],
            ),
            "",
        ]
    return out


def _agreement(report: dict) -> list[str]:
    agreement = report["agreement"]
    out = ["## Agreement audit: judge against scores, judges and humans", ""]
    if not agreement.get("available"):
        return out + [f"_No audit: {md(agreement.get('reason', 'no data'))}._", ""]
    return out + markdown_lines(agreement_sections(agreement["audit"]), level=3, short=True)


def _provenance(report: dict) -> list[str]:
    p = report["provenance"]
    items = provenance_items(p) + [("made at", p["made_at"])]
    return ["## Provenance", ""] + [f"- **{k}**: {md(v)}" for k, v in items] + [""]


def _contamination(report: dict) -> list[str]:
    c = report["contamination"]
    out = ["## Contamination", ""]
    if not c["declared"]:
        src = f" ({md(c['source'])})" if c.get("source") else ""
        out += [
            f"**Not declared yet.** The benchmark owner has not filled in the contamination "
            f"declaration{src}; the text below is the template.",
            "",
        ]
    elif c.get("declared_by") or c.get("reviewed"):
        out += [f"_Declared by {md(', '.join(x for x in (c.get('declared_by'), c.get('reviewed')) if x))}._", ""]
    out += [md(c["statement"]) if c["statement"] else "_No statement._", ""]
    for key, label in (("evidence", "Evidence"), ("public_sources", "Public sources")):
        if c.get(key):
            out += [f"**{label}**", ""] + [f"- {md(x)}" for x in c[key]] + [""]
    return out


def render_markdown(report: dict) -> str:
    lines = [f"# {md(report['title'])}", ""]
    for part in (_headline, _comparison, _vector, _runs, _judge, _agreement, _provenance, _contamination):
        lines += part(report)
    return "\n".join(lines).rstrip("\n") + "\n"
