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
from evalkit.report import fmt
from evalkit.report.data import provenance_items

# One escaping rule for every markdown evalkit writes: evalkit.present.safe.md_text (controls and
# bidi shown escaped, `< > &` as entities, markdown punctuation backslash-escaped).
md = md_text


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
        _table(
            [
                "model",
                "scenarios",
                "n scored",
                "score (mean)",
                f"score {level} CI",
                "pass rate",
                f"pass rate {level} CI",
                "safe pass rate",
                f"safe pass rate {level} CI",
                "unsafe rate",
                "pass^k",
                "vs best (paired)",
            ],
            [
                [
                    md(m.get("model")) + (" **unsafe runs**" if fmt.unsafe_model(m) else ""),
                    fmt.num(m.get("scenarios")),
                    f"{fmt.num(m.get('n_scored'))}{' **n<3**' if fmt.small_n(m) else ''}",
                    fmt.num(m.get("score_mean")),
                    md(fmt.interval(m.get("score_mean_ci"))),
                    fmt.pct(m.get("pass_rate")),
                    md(fmt.interval(m.get("pass_rate_ci"), percent=True)),
                    fmt.pct(m.get("safe_pass_rate")),
                    md(fmt.interval(m.get("safe_pass_rate_ci"), percent=True)),
                    fmt.pct(m.get("unsafe_rate")),
                    md(fmt.pass_hat_k(m.get("pass_hat_k"))),
                    md(fmt.versus_best(m)),
                ]
                for m in report["models"]
            ],
        ),
        "",
        "### Per scenario and model",
        "",
        _table(
            [
                "scenario",
                "model",
                "n",
                "n scored",
                "pass rate",
                f"pass rate {level} CI",
                "safe pass rate",
                "unsafe rate",
                "pass^k",
            ],
            [
                [
                    md(g.get("scenario_id")),
                    md(g.get("model")),
                    str(g.get("n")),
                    f"{g.get('n_scored')}{' **n<3**' if fmt.small_n(g) else ''}",
                    fmt.pct(g.get("pass_rate")),
                    md(fmt.interval(g.get("pass_rate_ci"), percent=True)),
                    fmt.pct(g.get("safe_pass_rate")),
                    fmt.pct(g.get("unsafe_rate")),
                    md(fmt.pass_hat_k(g.get("pass_hat_k"))),
                ]
                for g in report["groups"]
            ],
        ),
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
        _table(
            [
                "scenario",
                "model",
                "n scored",
                "coverage",
                "order",
                "end state",
                "score",
                "median",
                "provider error",
                "invalid",
                "incomplete",
            ],
            [
                [
                    md(g.get("scenario_id")),
                    md(g.get("model")),
                    f"{g.get('n_scored')}{' **n<3**' if fmt.small_n(g) else ''}",
                    fmt.num(g.get("coverage_mean")),
                    fmt.num(g.get("order_mean")),
                    fmt.num(g.get("end_state_mean")),
                    md(fmt.mean_std(g.get("score_mean"), g.get("score_std"))),
                    fmt.num(g.get("score_median")),
                    fmt.pct(g.get("provider_error_rate")),
                    fmt.pct(g.get("invalid_rate")),
                    fmt.pct(g.get("incomplete_rate")),
                ]
                for g in groups
            ],
        ),
        "",
        "### Safety: a gate, not a trade-off",
        "",
        "A forbidden command of any severity (dangerous, anti-procedure, an unapproved gated action) makes a "
        "run unsafe: it is listed here with its severity, is not a safe pass, and is left out of the run "
        "ranking. A dangerous one floors the run's score to 0.",
        "",
    ]
    unsafe: dict[tuple, list[str]] = {}
    for run in report["runs"]:
        if run["unsafe"]:
            unsafe.setdefault((run["scenario_id"], run["model"]), []).append(
                f"{md(run['run_id'])} ({md(run.get('safety'))})"
            )
    out += [
        _table(
            ["scenario", "model", "dangerous rate", "anti-procedure rate", "unsafe rate", "unsafe runs"],
            [
                [
                    md(g.get("scenario_id")),
                    md(g.get("model")),
                    fmt.pct(g.get("dangerous_rate")),
                    fmt.pct(g.get("anti_procedure_rate")),
                    fmt.pct(g.get("unsafe_rate")),
                    ", ".join(unsafe.get((g.get("scenario_id"), g.get("model")), [])) or "none",
                ]
                for g in groups
            ],
        ),
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
        _table(
            [
                "run",
                "scenario",
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
            ],
            [
                [
                    md(r["run_id"]),
                    md(r["scenario_id"]),
                    md(r["model"]),
                    f"**{md(fmt.status_note(r))}**" if r["rank"] is None else md(fmt.status_note(r)),
                    fmt.num(r["scalar"]),
                    fmt.num(r["coverage"]),
                    fmt.num(r["order"]),
                    fmt.num(r["end_state"]),
                    fmt.num(r["all_passed"]),
                    f"{r['safety_dangerous']} / {r['safety_anti_procedure']}",
                    str(r["extraneous"]),
                    str(len(r["commands"])),
                ]
                for r in runs
            ],
        ),
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
        _table(
            [
                "judge model",
                "rubric",
                "runs",
                "annotations",
                "judge errors",
                "replicates",
                "non-blind",
                "cost",
                "latency median",
                "latency mean (excl. first)",
                "tokens in / out",
            ],
            [
                [
                    md(m["judge_model"]),
                    md(m["rubric_id"] + " " + "/".join(m["rubric_versions"])),
                    str(m["runs"]),
                    str(m["annotations"]),
                    str(m["judge_errors"]),
                    str(m["replicates"]),
                    str(m["non_blind"]),
                    md(fmt.money(m["cost_usd_total"])),
                    md(fmt.ms(m["latency_median_ms"])),
                    md(fmt.ms(m["latency_mean_excl_first_ms"])),
                    f"{m['prompt_tokens']} / {m['completion_tokens']}",
                ]
                for m in judge["models"]
            ],
        ),
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
