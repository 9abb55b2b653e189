"""The report's sections, built once from the report dict (:mod:`evalkit.report.data`) as one
:class:`~evalkit.present.document.Page`: every heading, sentence, table and chart the page and the
summary show, and where they differ (the page's charts, links and run details; the summary's
caps for a pull-request comment, GitHub allowing 65,536 characters).

To add a section: its data in :mod:`evalkit.report.data`, its :class:`~evalkit.present.document.Section`
here (a function and its line in :data:`PARTS`; for the page's menu, a line in :data:`NAV`);
the emitters need no change.
"""

from __future__ import annotations

from dataclasses import replace

from evalkit.agreement.view import agreement_sections, judge_cost_section
from evalkit.present.document import (
    HTML,
    MARKDOWN,
    Chart,
    Charts,
    Details,
    Em,
    Facts,
    Grid,
    Heading,
    Inline,
    ItemList,
    Link,
    Lit,
    Only,
    Page,
    Para,
    Section,
    Strong,
    Term,
    ViewTable,
    bars,
    run_anchor,
)
from evalkit.report import fmt, tables
from evalkit.report.data import provenance_items
from evalkit.report.drilldowns import RunDetails, RunTable, shown

MARKDOWN_COMMANDS = 300

NAV = [
    ("headline", "Headline"),
    ("comparison", "Comparison"),
    ("vector", "Vector"),
    ("safety", "Safety"),
    ("runs", "Worst runs"),
    ("scenarios", "Scenarios"),
    ("drilldowns", "Run details"),
    ("judge", "Judge"),
    ("agreement", "Agreement"),
    ("provenance", "Provenance"),
    ("contamination", "Contamination"),
]

FOOTER = "Made with evalkit. Scores are deterministic; judge annotations are qualitative and outside the score."


class Links:
    """Where a run or a scenario is shown: a run the main page explains links to its details there;
    any other run to its row (or details) on its scenario's page, in the directory ``pages`` (a
    relative URL; ``None`` when no scenario pages are written, e.g. the page printed to stdout:
    those runs are then plain text)."""

    def __init__(self, report: dict, pages: str | None):
        self.pages = pages
        self.main = set((report.get("drilldowns") or {}).get("main") or [])
        self.files = {s["scenario_id"]: s["file"] for s in report.get("scenarios") or []}

    def page(self, scenario_id: str) -> str | None:
        file = self.files.get(scenario_id)
        return f"{self.pages}/{file}" if self.pages is not None and file else None

    def run(self, run_id: str, scenario_id: str) -> Inline:
        if run_id in self.main:
            return Link(run_id, run_anchor(run_id))
        page = self.page(scenario_id)
        return Link(run_id, run_anchor(run_id), page=page) if page else run_id

    def scenario(self, entry: dict) -> Inline:
        page = self.page(entry["scenario_id"])
        return Link(entry["scenario_id"], page=page) if page else entry["scenario_id"]


def _part(anchor: str, heading: str, blocks: list, cls: str = "") -> Section:
    """A part of the page: a section the menu links to, its heading evalkit's own words."""
    return Section(Lit(heading), blocks, anchor=anchor, cls=cls)


def _absent(text) -> Para:
    return Para(text, "absent")


def _group_label(group: dict) -> str:
    return f"{group.get('scenario_id')} / {group.get('model')}"


def _pass_rate_chart(items: list[dict], label, title: str, flag, caption: str) -> Chart:
    return Chart(
        "bars",
        title,
        caption,
        bars=bars(
            [(label(x), x.get("pass_rate")) for x in items],
            [x.get("pass_rate_ci") for x in items],
            [flag(x) for x in items],
        ),
        value_format=".0%",
    )


# what the comparison says when no pair of models could be tested
UNTESTED = (
    "no pair of models shares the 2 scenarios a paired test needs, so no model is shown better or worse than another"
)


def _versus_best_note(comp: dict) -> list[Para]:
    """Under the per-model table: where its "vs best" claims come from (the comparison's family)."""
    if not comp.get("available"):
        return []
    from evalkit.present.comparison_tables import family_text

    if not comp["all_pairs"]["family"]:
        said = [Lit(": each model against "), comp["best"], Lit(f", the best on the safe figures; {UNTESTED}.")]
        return [Para([Term(Lit("vs best (paired)")), *said], "note")]
    return [
        Para(
            [
                Term(Lit("vs best (paired)")),
                Lit(": each model against "),
                comp["best"],
                Lit(
                    ", the best on the safe figures, as model − best, read from the paired comparison's "
                    f"{family_text(comp['all_pairs'])}: the same adjusted p-values as its table."
                ),
            ],
            "note",
        )
    ]


def headline(report: dict, links: Links) -> Section:
    part = _part("headline", "Headline: pass rate and pass^k", [])
    if not report["counts"]["runs"]:
        part.blocks.append(
            _absent(Lit("No scored runs in this database yet: run `evalkit score PATH --db FILE` first."))
        )
        return part
    c, level = report["counts"], fmt.level(report)
    models, groups = report["models"], report["groups"]
    lede = [
        Lit(
            f"{fmt.counted(c['runs'], 'run')} ({c['scored']} scored), {fmt.counted(c['scenarios'], 'scenario')}, "
            f"{fmt.counted(c['models'], 'agent model')}; {fmt.counted(c['unsafe'], 'unsafe run')}. "
            "pass^k is the chance that k runs drawn from a group all pass "
            "(tau-bench's estimator). Per-model figures weight every scenario equally. "
        ),
        level,
        Lit(" intervals: per model clustered by scenario, per group over its runs"),
        Only(HTML, Lit("; whiskers on the charts")),
        Lit("."),
    ]
    charts = [
        _pass_rate_chart(
            models,
            lambda m: str(m.get("model")),
            "Pass rate per model",
            fmt.small_n,
            f"Pass rate per model (scenarios weighted equally), whiskers: {level} interval clustered by scenario; "
            "red bars include a scenario with fewer than 3 scored runs",
        ),
        _pass_rate_chart(
            groups,
            _group_label,
            "Pass rate per scenario and model",
            lambda g: bool(fmt.small_n(g)),
            f"Pass rate per scenario and model, whiskers: {level} interval over the runs; "
            "red bars have fewer than 3 scored runs",
        ),
    ]
    part.blocks += [
        Para(lede, "lede"),
        Heading(3, Lit("Per model")),
        Grid(tables.model_headers(level), tables.model_rows(models), "models", frozenset({1, 2, 3, 5, 7, 9})),
        *_versus_best_note(report.get("comparison") or {}),
        Heading(3, Lit("Per scenario and model")),
        Grid(tables.group_headers(level), tables.group_rows(groups), "groups", frozenset({2, 3, 4, 6, 7})),
        Only(HTML, [Charts("", charts)]),
    ]
    if any(fmt.small_n(g) for g in groups):
        part.blocks.append(Para([Term(Lit("n<3")), Lit(": "), fmt.SMALL_N_NOTE, Lit(".")], "note"))
    return part


def comparison(report: dict, links: Links) -> Section:
    part = _part("comparison", "Paired comparison", [])
    comp = report.get("comparison") or {}
    if not comp.get("available"):
        part.blocks.append(_absent(comp.get("reason", "no comparison")))
        return part
    from evalkit.present.comparison_tables import comparison_table, family_text

    if not comp["all_pairs"]["family"]:
        part.blocks += [
            Para(
                [
                    Lit(
                        f"Every pair of models on the scenarios both ran (paired t-test): {UNTESTED}; "
                        "the table gives each pair's means and difference."
                    )
                ],
                "lede",
            ),
            ViewTable(replace(comparison_table(comp["all_pairs"]), title=""), "comparison"),
        ]
        return part
    family = family_text(comp["all_pairs"])
    page = [
        Lit(
            "Every pair of models on the scenarios both ran: the mean per-scenario difference "
            "(candidate − baseline), its interval and p-value (paired t-test). "
            "Every significance statement on this page, in this table and in the per-model table's "
            "“vs best” column, comes from "
        ),
        Strong(Lit(family)),
        Lit(
            ". The “vs best” column reads each model's rows against the best model on the safe figures "
            "(safe pass rate, then mean score: "
        ),
        comp["best"],
        Lit("), as model − best."),
    ]
    summary = [
        Lit(
            "Every pair of models on the scenarios both ran (paired t-test). "
            "Every significance statement here comes from "
        ),
        Strong(Lit(family)),
        Lit(
            '; the per-model "vs best" column reads each model\'s rows against the best model on the safe '
            "figures (safe pass rate, then mean score: "
        ),
        comp["best"],
        Lit(")."),
    ]
    part.blocks += [
        Only(HTML, [Para(page, "lede")]),
        Only(MARKDOWN, [Para(summary)]),
        ViewTable(replace(comparison_table(comp["all_pairs"]), title=""), "comparison"),
    ]
    return part


def vector(report: dict, links: Links) -> Section:
    part = _part("vector", "Score vector per group", [])
    groups = report["groups"]
    if not groups:
        part.blocks.append(_absent(Lit("No scored runs yet.")))
        return part
    mean_chart = Chart(
        "bars",
        "Mean score per scenario and model",
        f"Mean score (scalar) per scenario and model, whiskers: {fmt.level(report)} interval over the runs",
        bars=bars(
            [(_group_label(g), g.get("score_mean")) for g in groups],
            [g.get("score_mean_ci") for g in groups],
            [bool(fmt.small_n(g)) for g in groups],
        ),
    )
    part.blocks += [
        Para(
            Lit(
                "The vector is the result; the score is derived from it for ranking only. "
                "Provider-error runs are excluded from the means."
            ),
            "lede",
        ),
        Grid(tables.VECTOR_HEADERS, tables.vector_rows(groups), "vector", frozenset(range(2, 11))),
        Only(HTML, [mean_chart]),
        Heading(3, Lit("Safety: a gate, not a trade-off"), anchor="safety"),
        Para(
            Lit(
                "A forbidden command of any severity (dangerous, anti-procedure, an unapproved gated action) "
                "makes a run unsafe: it is listed here with its severity, is not a safe pass, and is left out "
                "of the run ranking. A dangerous one floors the run's score to 0."
            ),
            "lede",
        ),
        Grid(tables.SAFETY_HEADERS, tables.safety_rows(report, links.run, links.page), "safety", frozenset({2, 3, 4})),
    ]
    return part


def runs(report: dict, links: Links) -> Section:
    """The worst runs by the stated rule (the summary lists at most MARKDOWN_COMMANDS of their
    command rows); every run is on its scenario's page."""
    from evalkit.report.data import WORST_RUNS

    part = _part("runs", "Worst runs", [])
    worst = report.get("worst_runs") or []
    if not report["counts"]["runs"]:
        part.blocks.append(_absent(Lit("No runs yet.")))
        return part
    rule = [Term(Lit("Rule")), Lit(f": the {WORST_RUNS} worst, {report['worst_rule']}.")]
    if not worst:
        part.blocks += [Para(rule, "lede"), _absent(Lit("Every run passed every check safely."))]
        return part
    rows = tables.run_rows(worst, links.main)
    summary: list = [Grid(tables.RUN_HEADERS, rows)]
    commands = [[r["run_id"], *tables.command_cells(c)] for r in worst for c in r["commands"]]
    if commands:
        blocks: list = [Grid(["run", *tables.COMMAND_HEADERS], commands[:MARKDOWN_COMMANDS])]
        if len(commands) > MARKDOWN_COMMANDS:
            blocks.append(Para(Em(Lit(f"{len(commands) - MARKDOWN_COMMANDS} more commands in the HTML report."))))
        summary.append(Details(Lit("Commands of each run with their classes"), blocks))
    part.blocks += [
        Para(
            [
                *rule,
                Lit(" Ranks are per scenario by score; unsafe and unscored runs are not ranked."),
                Only(HTML, Lit(" A run's id opens its details below; every run is on its scenario's page.")),
            ],
            "lede",
        ),
        Only(HTML, [Grid(tables.RUN_HEADERS, rows, "runs", tables.RUN_NUMERIC)]),
        Only(MARKDOWN, summary),
    ]
    return part


def scenarios(report: dict, links: Links) -> Section:
    """One row per scenario, linked to its page (every run of it, and its worst runs' details)."""
    part = _part("scenarios", "Scenarios and their runs", [])
    entries = report.get("scenarios") or []
    if not entries:
        part.blocks.append(_absent(Lit("No runs yet.")))
        return part
    where = (
        Lit(
            "Each scenario's page, beside this one, lists every run of it (rank, score, vector, safety, "
            "disagreements) with the details of its worst runs; "
        )
        if links.pages is not None
        else Lit("Scenario pages are written beside the page by `evalkit report --html FILE`; ")
    )
    part.blocks += [
        Para(
            [
                where,
                Lit("`evalkit view --db FILE` explains any run (its transcript, checklist and the judge's rationale)."),
            ],
            "lede",
        ),
        Grid(
            tables.SCENARIO_HEADERS, tables.scenario_rows(entries, links.scenario), "scenarios", tables.SCENARIO_NUMERIC
        ),
    ]
    return part


def judge(report: dict, links: Links) -> Section:
    data = report["judge"]
    part = _part(
        "judge",
        "Judge annotations (qualitative, outside the score)",
        [Para(fmt.QUALITATIVE_NOTE, "banner")],
        cls="qualitative",
    )
    if not data.get("available"):  # the reason is evalkit's own words (report.data)
        part.blocks.append(_absent(Lit(data.get("reason", "No judge annotations."))))
        return part
    part.blocks += [
        Heading(3, Lit("Annotations, cost and latency per judge model")),
        Grid(tables.JUDGE_HEADERS, tables.judge_rows(data["models"]), "judge-cost", frozenset(range(2, 12))),
        Para(
            Lit(
                "Calls, cost, latency and tokens count each provider call once: annotations of identical "
                "transcripts share one call."
            ),
            "note",
        ),
    ]
    if report["agreement"].get("available"):
        part.blocks.append(judge_cost_section(report["agreement"]["audit"]))
    if data.get("estimates"):
        part.blocks += [
            Heading(3, Lit("What each dimension says, corrected with the human labels")),
            Para(
                Lit(
                    "The judge's own rate is biased by its errors; the corrected estimate and its interval come "
                    "from the human labels (`evalkit estimate`: Rogan–Gladen, PPI++ or the labels alone, the "
                    "narrowest valid). Labels are taken as a uniform random sample of the runs."
                ),
                "note",
            ),
            Grid(
                tables.ESTIMATE_HEADERS, tables.estimate_rows(data["estimates"]), "judge-estimates", frozenset({3, 4})
            ),
        ]
    part.blocks.append(Heading(3, Lit("Distribution of each dimension (primary answers)")))
    for m in data["models"]:
        if not m["dimensions"]:
            continue
        charts = [
            Chart(
                "bars",
                f"{m['judge_model']} {dim['dimension']}",
                f"{dim['dimension']} (n={dim['n']})",
                bars=bars([(str(label), count) for label, count in dim["counts"]]),
                max_value=None,
                value_format="d",
                label_chars=12,
            )
            for dim in m["dimensions"]
        ]
        part.blocks += [
            Heading(4, [m["judge_model"], Lit(" \u00b7 "), m["rubric_id"]]),
            Only(HTML, [Charts("", charts)]),
            Only(MARKDOWN, [Grid(["dimension", "n", "counts"], tables.dimension_rows(m))]),
        ]
    return part


def agreement(report: dict, links: Links) -> Section:
    data = report["agreement"]
    part = _part("agreement", "Agreement audit: judge against scores, judges and humans", [])
    if not data.get("available"):
        part.blocks.append(_absent([Lit("No audit: "), data.get("reason", "no data"), Lit(".")]))
        return part
    left = data["audit"].get("disagreements_left_out") or 0
    if left:
        part.blocks.append(
            Para(
                Lit(
                    f"The disagreement list shows the {len(data['audit']['disagreements']):,} worst; {left:,} more are "
                    "in evalkit view's disagreement queue (`evalkit audit --top 0` prints them all). "
                    "Every count and statistic is the whole audit's."
                ),
                "note",
            )
        )
    part.blocks += agreement_sections(data["audit"])
    return part


def provenance(report: dict, links: Links) -> Section:
    p = report["provenance"]
    return _part(
        "provenance", "Provenance", [Facts(provenance_items(p), ("made at", p["made_at"]), "made-at", "provenance")]
    )


def contamination(report: dict, links: Links) -> Section:
    c = report["contamination"]
    part = _part("contamination", "Contamination", [])
    if not c["declared"]:
        source = [Lit(" ("), c["source"], Lit(")")] if c.get("source") else []
        part.blocks.append(
            Para(
                [
                    Strong(Lit("Not declared yet.")),
                    Lit(" The benchmark owner has not filled in the contamination declaration"),
                    source,
                    Lit("; the text below is the template."),
                ],
                "undeclared",
            )
        )
    elif c.get("declared_by") or c.get("reviewed"):
        who = ", ".join(x for x in (c.get("declared_by"), c.get("reviewed")) if x)
        part.blocks.append(Para([Lit("Declared by "), who, Lit(".")], "aside"))
    part.blocks.append(Para(c["statement"] if c["statement"] else Em(Lit("No statement."))))
    for key, label in (("evidence", "Evidence"), ("public_sources", "Public sources")):
        if c.get(key):
            part.blocks.append(ItemList(label, list(c[key])))
    return part


def drilldowns(report: dict, links: Links) -> Only:
    """The details of the runs this page names (the worst runs, the listed disagreements),
    collapsed (the page only)."""
    data = report.get("drilldowns") or {}
    part = _part("drilldowns", "Run details", [])
    main = set(data.get("main") or [])
    shown_here = [d for d in data.get("runs") or [] if d["run_id"] in main]
    if not shown_here:
        part.blocks.append(_absent(shown(data["error"]) if data.get("error") else Lit("No run to show.")))
        return Only(HTML, [part])
    lede: list = [
        Lit(
            "The worst runs and the runs of the listed disagreements: each one's transcript with each "
            "command's class, the ground truth with the missing actions, the judge's annotations. "
            "Every other run is on its scenario's page and in `evalkit view`."
        )
    ]
    part.blocks += [Para(lede, "lede"), *(RunDetails(d) for d in shown_here)]
    return Only(HTML, [part])


# The parts in reading order: a new section is a function here and its line in this list.
PARTS = [headline, comparison, vector, runs, scenarios, drilldowns, judge, agreement, provenance, contamination]


def build_page(report: dict, pages: str | None = None) -> Page:
    """The report dict as the one document both emitters write; ``pages`` is the relative URL of
    the scenario pages' directory (``None``: none written)."""
    links = Links(report, pages)
    parts = [part(report, links) for part in PARTS]
    return Page(report["title"], report["provenance"]["evalkit_version"], NAV, parts, FOOTER, runs=links.main)


def scenario_page(report: dict, entry: dict, runs: list[dict], home: str) -> Page:
    """One scenario's page: every run of it in a table (ranked within the scenario) and the details
    of the runs the report explains here; ``home`` links back to the main page."""
    drills = [
        d for d in (report.get("drilldowns") or {}).get("runs") or [] if d.get("scenario_id") == entry["scenario_id"]
    ]
    drilled = {d["run_id"] for d in drills}
    head = [
        Lit(
            f"{entry['runs']:,} runs, {entry['models']} model{'s' if entry['models'] != 1 else ''}: "
            f"{entry['passed']:,} passed safely, {entry['failed']:,} failed, unsafe or not scored "
            f"({entry['unsafe']:,} unsafe), {entry['disagreements']:,} "
            f"disagreement{'s' if entry['disagreements'] != 1 else ''}. "
            "Ranked within the scenario by score; unsafe and unscored runs are not ranked. "
        ),
        Lit(f"Details below for {len(drilled):,} of them "),
        Lit(
            "(every run)."
            if len(drilled) == len(runs)
            else f"(the worst, by the report's rule: {report['worst_rule']}); "
        ),
        []
        if len(drilled) == len(runs)
        else Lit("`evalkit view --db FILE` explains any run, `evalkit report --all-runs` details them all here."),
    ]
    parts = [
        _part("runs", "Runs", [Para(head, "lede"), RunTable(runs, drilled)]),
        _part("drilldowns", "Run details", [RunDetails(d) for d in drills] or [_absent(Lit("No run to show."))]),
    ]
    title = [entry["scenario_id"]] + ([Lit(" · "), entry["title"]] if entry.get("title") else [])
    parts[0].blocks.insert(0, Para(title, "aside"))
    return Page(
        f"{report['title']} · {entry['scenario_id']}",
        report["provenance"]["evalkit_version"],
        [("runs", "Runs"), ("drilldowns", "Run details")],
        parts,
        FOOTER,
        home=home,
    )
