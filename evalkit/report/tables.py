"""The report's tables, built once for the page and the summary: headers and rows of the
per-model, per-group, score-vector, safety, run and judge tables.

Cells are inline content of :mod:`evalkit.present.document`: text from the database as ``str``,
formatted numbers as :class:`~evalkit.present.document.Lit`, flags as badges, run ids as links, and
the one cell the formats show differently (a run's commands: a collapsed table on the page, a
count in the summary) as :class:`~evalkit.present.document.Only` parts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from evalkit.present.document import (
    HTML,
    MARKDOWN,
    Badge,
    Break,
    Code,
    Details,
    Grid,
    Inline,
    Link,
    Lit,
    Only,
    Styled,
    Target,
    run_anchor,
)
from evalkit.report import fmt

Rows = list[list[Inline]]

# The columns that name a group, first in every per-group table.
GROUP_KEY = ["scenario", "model"]
FAILURE_RATES = ["provider error", "invalid", "incomplete"]


def small_n(flag: bool) -> Inline:
    """The fewer-than-3 mark after a count."""
    return [Lit(" "), Badge(Lit("n<3"), kind="small-n", title=fmt.SMALL_N_NOTE)] if flag else []


def _key(g: dict) -> list[Inline]:
    return [g.get("scenario_id"), g.get("model")]


def _scored(g: dict, n: str) -> Inline:
    return [Lit(n), small_n(fmt.small_n(g))]


def _pct(value) -> Lit:
    return Lit(fmt.pct(value))


def _num(value) -> Lit:
    return Lit(fmt.num(value))


def model_headers(level: str) -> list[str]:
    return [
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
    ]


def model_rows(models: list[dict]) -> Rows:
    return [
        [
            [
                str(m.get("model")),
                [Lit(" "), Badge(Lit("unsafe runs"), kind="unsafe-model")] if fmt.unsafe_model(m) else [],
            ],
            _num(m.get("scenarios")),
            _scored(m, fmt.num(m.get("n_scored"))),
            _num(m.get("score_mean")),
            fmt.interval(m.get("score_mean_ci")),
            _pct(m.get("pass_rate")),
            fmt.interval(m.get("pass_rate_ci"), percent=True),
            _pct(m.get("safe_pass_rate")),
            fmt.interval(m.get("safe_pass_rate_ci"), percent=True),
            _pct(m.get("unsafe_rate")),
            fmt.pass_hat_k(m.get("pass_hat_k")),
            fmt.versus_best(m),
        ]
        for m in models
    ]


def group_headers(level: str) -> list[str]:
    rates = ["pass rate", f"pass rate {level} CI", "safe pass rate", "unsafe rate", "pass^k"]
    return [*GROUP_KEY, "n", "n scored", *rates]


def group_rows(groups: list[dict]) -> Rows:
    return [
        [
            *_key(g),
            Lit(str(g.get("n"))),
            _scored(g, str(g.get("n_scored"))),
            _pct(g.get("pass_rate")),
            fmt.interval(g.get("pass_rate_ci"), percent=True),
            _pct(g.get("safe_pass_rate")),
            _pct(g.get("unsafe_rate")),
            fmt.pass_hat_k(g.get("pass_hat_k")),
        ]
        for g in groups
    ]


VECTOR_HEADERS = [*GROUP_KEY, "n scored", "coverage", "order", "end state", "score", "median", *FAILURE_RATES]


def vector_rows(groups: list[dict]) -> Rows:
    return [
        [
            *_key(g),
            _scored(g, str(g.get("n_scored"))),
            *(_num(g.get(k)) for k in ("coverage_mean", "order_mean", "end_state_mean")),
            fmt.mean_std(g.get("score_mean"), g.get("score_std")),
            _num(g.get("score_median")),
            *(_pct(g.get(k)) for k in ("provider_error_rate", "invalid_rate", "incomplete_rate")),
        ]
        for g in groups
    ]


SAFETY_HEADERS = [*GROUP_KEY, "dangerous rate", "anti-procedure rate", "unsafe rate", "unsafe runs"]


def safety_rows(
    report: dict, link: Callable[[str, str], Inline], page: Callable[[str], str | None] = lambda _: None
) -> Rows:
    """Per group its safety rates and its first unsafe runs, the most severe first
    (``link(run_id, scenario_id)``), and how many more there are by severity and where they are:
    on the page, its scenario's page (``page(scenario_id)``, its URL, ``None`` when none is
    written); in the summary, that page's file name in the HTML report."""
    unsafe = {(e["scenario_id"], e["model"]): e for e in report.get("unsafe_by_group") or []}
    files = {s["scenario_id"]: s.get("file") for s in report.get("scenarios") or []}

    def listed(g: dict) -> Inline:
        entry = unsafe.get((g.get("scenario_id"), g.get("model")))
        if not entry:
            return Lit("none")
        named = [
            [Lit(", ") if i else [], link(r["run_id"], g["scenario_id"]), Lit(" ("), r.get("safety"), Lit(")")]
            for i, r in enumerate(entry["runs"])
        ]
        more = entry["n"] - len(entry["runs"])
        if more <= 0:
            return named
        rest = Counter(entry.get("by_safety") or {}) - Counter(r.get("safety") for r in entry["runs"])
        kinds = ", ".join(f"{n:,} {safety}" for safety, n in rest.items())
        tail: list = [Lit(f" and {more:,} more"), [Lit(" ("), kinds, Lit(")")] if kinds else []]
        url, file = page(g["scenario_id"]), files.get(g["scenario_id"])
        if url:
            tail.append(Only(HTML, [Lit(" on "), Link(Lit("the scenario's page"), page=url)]))
        if file:
            tail.append(Only(MARKDOWN, [Lit(" on the HTML report's scenario page "), Code(file)]))
        return [named, tail]

    return [
        [
            *_key(g),
            *(_pct(g.get(k)) for k in ("dangerous_rate", "anti_procedure_rate")),
            _unsafe_rate(g),
            listed(g),
        ]
        for g in report["groups"]
    ]


def _unsafe_rate(g: dict) -> Lit:
    """The group's unsafe rate, and the runs no rate counts that took a forbidden command (they are
    listed beside it, and --max-unsafe-rate counts them)."""
    uncounted = g.get("unsafe_uncounted") or 0
    return Lit(fmt.pct(g.get("unsafe_rate")) + (f" (+{uncounted:,} not scored)" if uncounted else ""))


SCENARIO_HEADERS = [
    "scenario",
    "title",
    "runs",
    "models",
    "scored",
    "passed safely",
    "failed, unsafe or not scored",
    "unsafe",
    "disagreements",
]
SCENARIO_NUMERIC = frozenset(range(2, 9))


def scenario_rows(scenarios: list[dict], link: Callable[[dict], Inline]) -> Rows:
    """One row per scenario: ``link(entry)`` names its page; the counts of its runs."""
    return [
        [
            link(s),
            s.get("title") or "",
            *(Lit(f"{s[k]:,}") for k in ("runs", "models", "scored", "passed", "failed", "unsafe", "disagreements")),
        ]
        for s in scenarios
    ]


RUN_HEADERS = [
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
]
RUN_NUMERIC = frozenset({4, 5, 6, 7, 9, 10})

COMMAND_HEADERS = ["#", "step", "command", "class"]


def command_cells(c: dict) -> list[Inline]:
    """A command's number, step, text and class (the class coloured on the page)."""
    return [
        Lit(str(c["index"])),
        fmt.num(c.get("step")),
        Code(fmt.command_text(c)),
        Styled(fmt.command_class(c), cls="cls-" + str(c["class"])),
    ]


def _commands(run: dict) -> Inline:
    """A collapsed table of the run's commands on the page, their count in the summary."""
    if not run["commands"]:
        page: Inline = Styled(Lit("no commands"), cls="absent")
    else:
        # the class under the command: the cell sits in the last column of a wide table
        rows = [[n, step, [command, Break(), cls]] for n, step, command, cls in map(command_cells, run["commands"])]
        table = Grid(["#", "step", "command, class"], rows, cls="commands", numeric={0, 1})
        page = Details(Lit(f"{len(run['commands'])} commands"), [table])
    return [Only(HTML, page), Only(MARKDOWN, Lit(str(len(run["commands"]))))]


def _rank(run: dict) -> Inline:
    note = fmt.status_note(run)
    if run["unsafe"]:
        return Badge(note, kind="unsafe")
    if run["rank"] is None:
        return Badge(note, kind="status")
    return note


def _run(run: dict, drilled: set[str]) -> Inline:
    """The run id: a link to its drill-down when it has one, else its anchor; the page adds its path."""
    rid = run["run_id"]
    cell = Link(rid, run_anchor(rid)) if rid in drilled else Target(rid, run_anchor(rid))
    path = [Break(), Styled(run["path"], cls="note")] if run.get("path") else []
    return [Only(HTML, [cell, path]), Only(MARKDOWN, rid)]


def run_rows(runs: list[dict], drilled: set[str]) -> Rows:
    return [
        [
            _run(r, drilled),
            r["scenario_id"],
            r["model"],
            _rank(r),
            *(_num(r[k]) for k in ("scalar", "coverage", "order", "end_state")),
            fmt.num(r["all_passed"]),
            Lit(f"{r['safety_dangerous']} / {r['safety_anti_procedure']}"),
            Lit(str(r["extraneous"])),
            _commands(r),
        ]
        for r in runs
    ]


JUDGE_COUNTS = ["runs", "annotations", "judge errors", "replicates", "non-blind", "calls"]
JUDGE_COSTS = ["cost", "latency median", "latency mean (excl. first)", "tokens in / out"]
JUDGE_HEADERS = ["judge model", "rubric", *JUDGE_COUNTS, *JUDGE_COSTS]


def judge_rows(models: list[dict]) -> Rows:
    return [
        [
            m["judge_model"],
            f"{m['rubric_id']} {'/'.join(m['rubric_versions'])}",
            *(Lit(str(m[k])) for k in ("runs", "annotations", "judge_errors", "replicates", "non_blind", "calls")),
            fmt.money(m["cost_usd_total"]),
            fmt.ms(m["latency_median_ms"]),
            fmt.ms(m["latency_mean_excl_first_ms"]),
            Lit(f"{m['prompt_tokens']} / {m['completion_tokens']}"),
        ]
        for m in models
    ]


def dimension_rows(m: dict) -> Rows:
    """A judge model's dimensions as a table (the summary's stand-in for their charts)."""
    return [
        [d["dimension"], Lit(str(d["n"])), ", ".join(f"{label}: {count}" for label, count in d["counts"])]
        for d in m["dimensions"]
    ]


ESTIMATE_HEADERS = ["judge", "dimension", "model", "judge's rate", "corrected", "interval", "method", "labels"]


def _figure(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def estimate_rows(estimates: list[dict]) -> Rows:
    """What each judge dimension says per model beside the estimate the human labels correct it to
    (`evalkit estimate`), or n/a with the reason."""
    rows = []
    for e in estimates:
        labels = e["labels"]
        used = f"{labels['n_labeled']} labelled" + (
            f" ({labels['m1']} pass, {labels['m0']} fail)" if "m0" in labels else ""
        )
        corrected = _figure(e["estimate"]) if e["reason"] is None else f"n/a ({e['reason']})"
        interval = "-" if e["ci"] is None else f"{e['ci'][0]:.3f}–{e['ci'][1]:.3f}"
        rows.append(
            [e["judge"], e["dimension"], e["group"], _figure(e["judge_rate"]), corrected, interval, e["method"], used]
        )
    return rows
