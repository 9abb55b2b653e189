"""`evalkit estimate`: a judge dimension's true rate (or mean) from the judge plus a few human labels."""

from __future__ import annotations

import json

import click

from evalkit.commands.kit import db_option, fail, format_option, write_or_fail
from evalkit.present.table import Table


def _ci(ci) -> str:
    return "-" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _num(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def estimates_table(result: dict, numbered: bool = True) -> Table:
    """The estimates, one row per judge dimension and group. ``numbered``: an n/a cell names its
    reason by number, each reason written once under the table (the same reason repeats for every
    group of a dimension); else the reason is in the cell (csv)."""
    rows = []
    reasons: dict[str, int] = {}
    for e in result["estimates"]:
        alone = e["labels_alone"]
        labels = e["labels"]
        used = (
            f"m0 {labels['m0']} m1 {labels['m1']} q0 {_num(labels['q0'], 2)} q1 {_num(labels['q1'], 2)}"
            if "m0" in labels
            else f"{labels['n_labeled']} labelled"
        )
        if e["reason"] is None:
            figure = _num(e["estimate"])
        elif numbered:
            figure = f"n/a ({reasons.setdefault(e['reason'], len(reasons) + 1)})"
        else:
            figure = f"n/a ({e['reason']})"
        rows.append(
            [
                e["judge"],
                e["dimension"],
                e["group"],
                e["n"],
                _num(e["judge_rate"]),
                figure,
                _ci(e["ci"]),
                e["method"],
                _ci(alone["ci"]),
                used,
            ]
        )
    level = f"{result['level']:.0%}"
    notes = [f"({n}) {reason}" for reason, n in reasons.items()]
    notes += [
        f"intervals at {level}; 'labels alone' is the interval from the human labels without the judge",
        "judge figure: the judge's pass rate on a pass/fail dimension, its mean on a scored one",
    ]
    notes += result["assumptions"]
    return Table(
        [
            "judge",
            "dimension",
            result["by"],
            "n",
            "judge figure",
            "estimate",
            "interval",
            "method",
            "labels alone",
            "labels",
        ],
        rows,
        notes=notes,
        empty="no judge annotations or judge ratings in the database",
    )


def differences_table(result: dict) -> Table:
    rows = [
        [d["judge"], d["dimension"], d["group"], d["baseline"], _num(d["difference"]), _ci(d["ci"]), d["reason"] or ""]
        for d in result.get("differences", [])
    ]
    return Table(
        ["judge", "dimension", "group", "baseline", "difference", "interval", "reason"],
        rows,
        empty="no group to compare",
    )


def validation_table(rows: list[dict]) -> Table:
    out = []
    for r in rows:
        if r["reason"]:
            out.append([r["judge"], r["dimension"], r["runs"], "-", "-", "-", r["reason"]])
            continue
        cov = r["coverage"]
        for name in ("rogan-gladen", "ppi", "labels"):
            c = cov[name]
            out.append(
                [
                    r["judge"],
                    r["dimension"],
                    r["runs"],
                    name,
                    _num(c["coverage"]),
                    _num(c["mean_width"]),
                    f"{c['computed']} of {r['repetitions']}",
                ]
            )
    return Table(
        ["judge", "dimension", "runs", "method", "coverage", "mean width", "computed"],
        out,
        empty="no judged run with a mechanical outcome",
    )


def _render(table: Table, fmt: str, payload) -> str:
    if fmt == "json":
        return json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return table.to_csv()
    lines = table.markdown_lines() if fmt == "markdown" else table.text_lines()
    return "\n".join(lines) + "\n"


def register(group: click.Group) -> None:
    @group.command("estimate")
    @db_option(existing=True, help="SQLite database to read (never written).")
    @click.option("--judge", metavar="MODEL", help="Only annotations by this judge model.")
    @click.option("--rubric", metavar="R", help="Only annotations of this rubric.")
    @click.option(
        "--by", type=click.Choice(["model", "scenario", "model,scenario", "none"]), default="model", show_default=True
    )
    @click.option("--threshold", type=float, help="A score at or above this counts as a pass (ordinal dimensions).")
    @click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True)
    @click.option(
        "--method",
        type=click.Choice(["auto", "rogan-gladen", "ppi", "labels"]),
        default="auto",
        show_default=True,
        help="auto: the narrowest valid interval.",
    )
    @click.option(
        "--baseline", metavar="GROUP", help="Also each group's estimate minus this group's, with its interval."
    )
    @click.option("--plan", is_flag=True, help="How many human labels reach --width (Rogan–Gladen), per estimate.")
    @click.option("--width", type=click.FloatRange(0, 1, min_open=True), default=0.1, show_default=True)
    @click.option("--validate", is_flag=True, help="Coverage on this database, the mechanical outcome as the truth.")
    @click.option(
        "--budget", type=click.IntRange(2), default=50, show_default=True, help="Labels per --validate repetition."
    )
    @click.option("--seed", type=int, default=0, show_default=True)
    @format_option(["table", "json", "csv", "markdown"], help="Output shape; json is the contract (docs/audit.md).")
    @click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write the output here instead of stdout.")
    def estimate(
        db_path,
        judge,
        rubric,
        by,
        threshold,
        level,
        method,
        baseline,
        plan,
        width,
        validate,
        budget,
        seed,
        fmt_name,
        out_path,
    ):
        """Estimate what a judge dimension measures, corrected with human labels.

        For every judge dimension and group: the judge's raw rate, the corrected estimate with its
        interval (Rogan–Gladen, PPI++ or the labels alone: the narrowest valid one by default), or
        n/a with the reason. Human labels are blind review ratings and imported ratings of kind
        human. Exit codes: 0 done; 1 unreadable database; 2 usage error.
        """
        from evalkit.agreement import estimate as est
        from evalkit.errors import InputError

        if validate:  # it checks each method per model over the whole database: these would say nothing
            ctx = click.get_current_context()
            unused = [
                "--" + name
                for name in ("rubric", "by", "threshold", "method", "baseline", "plan", "width")
                if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
            ]
            if unused:
                raise click.UsageError(
                    f"--validate checks coverage per model over the whole database; it takes no {', '.join(unused)}"
                )
        try:
            if validate:
                rows = est.validate(db_path, judge=judge, budget=budget, level=level, seed=seed)
                text = _render(validation_table(rows), fmt_name, {"schema": est.SCHEMA, "validation": rows})
            else:
                result = est.build_estimates(
                    db_path,
                    judge=judge,
                    rubric=rubric,
                    by=by,
                    threshold=threshold,
                    level=level,
                    method=method,
                    baseline=baseline,
                )
                if plan:
                    result["plan"] = _plans(est, result, width, level)
                text = _render(estimates_table(result, numbered=fmt_name != "csv"), fmt_name, result)
                if fmt_name in ("table", "markdown"):
                    if baseline is not None:
                        text += "\n" + _render(differences_table(result), fmt_name, None)
                    if plan:
                        text += "\n" + _render(_plan_table(result["plan"], width), fmt_name, None)
        except InputError as exc:
            fail(str(exc))
        if out_path:
            write_or_fail(out_path, text)
        else:
            click.echo(text, nl=False)


def _plans(est, result: dict, width: float, level: float) -> list[dict]:
    out = []
    for e in result["estimates"]:
        labels = e["labels"]
        row = {"judge": e["judge"], "dimension": e["dimension"], "group": e["group"], "width": width}
        if e["kind"] != "rate" or e["judge_rate"] is None:
            out.append(row | {"labels": None, "reason": "not a pass/fail dimension"})
            continue
        q0 = labels["q0"] if labels.get("q0") is not None else 0.9
        q1 = labels["q1"] if labels.get("q1") is not None else 0.9
        pilot = min(labels.get("m0", 0), labels.get("m1", 0))
        if q0 + q1 <= 1:
            out.append(row | {"labels": None, "reason": "the judge is no better than chance on the labels so far"})
            continue
        try:
            m, m0, m1 = est.plan_labels(e["judge_rate"], q0, q1, max(e["n"], 1), width, level, pilot)
        except ValueError as exc:
            out.append(row | {"labels": None, "reason": str(exc)})
            continue
        runs = e["n"] + labels.get("n_labeled", 0)  # the labels are drawn from the group's own runs
        if m > runs:
            reason = f"{m} labels, more than the group's {runs} runs: labelling all {runs} gives its rate exactly"
            out.append(row | {"labels": None, "reason": reason})
        else:
            out.append(row | {"labels": m, "m0": m0, "m1": m1, "q0": q0, "q1": q1, "reason": None})
    return out


def _plan_table(plans: list[dict], width: float) -> Table:
    rows = [
        [
            p["judge"],
            p["dimension"],
            p["group"],
            p["labels"] if p["labels"] is not None else f"n/a ({p['reason']})",
            p.get("m0", "-"),
            p.get("m1", "-"),
        ]
        for p in plans
    ]
    return Table(
        ["judge", "dimension", "group", f"labels for width {width}", "m0 (failures)", "m1 (passes)"],
        rows,
        notes=["q0/q1 from the labels so far (0.9 where there are none)"],
        empty="nothing to plan",
    )
