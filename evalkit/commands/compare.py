"""`evalkit compare` (paired comparison of models) and `evalkit plan` (scenarios x runs needed).

The statistics are plain Python (evalkit.aggregate.uncertainty) over the stored cards' aggregate;
the tables come from evalkit.present.
"""

from __future__ import annotations

import json
import sys

import click

from evalkit.commands.kit import EXIT_BAD_INPUT, EXIT_GATE, EXIT_USAGE, db_option, fail, format_option, warn

FORMATS = ("table", "json", "markdown", "csv")
LEVEL = click.FloatRange(0, 1, min_open=True, max_open=True)


def _emit(tables, fmt_name: str, document: dict) -> None:
    """JSON: the whole result; csv: the tables one after the other (one header line each); text and
    markdown: each table under its title, its notes under it."""
    if fmt_name == "json":
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    from evalkit.present import md_text, sanitize

    parts = []
    for table in tables:
        if fmt_name == "csv":
            parts.append(table.to_csv().rstrip("\n"))
        elif fmt_name == "markdown":
            parts.append("\n".join([f"## {md_text(table.title)}", "", *table.markdown_lines()]))
        else:
            parts.append("\n".join([sanitize(table.title), *table.text_lines()]))
    click.echo("\n\n".join(parts))


def register(group: click.Group) -> None:
    @group.command("compare")
    @db_option(existing=True, help="SQLite database to read (never written).")
    @click.option("--baseline", metavar="MODEL", help="Compare every other model with this one (default: every pair).")
    @click.option(
        "--correction",
        type=click.Choice(["holm", "bh", "none"]),
        default="holm",
        show_default=True,
        help="Multiple-comparison correction of the p-values: Holm (family-wise) or Benjamini-Hochberg.",
    )
    @click.option("--ci-level", "level", type=LEVEL, default=0.95, show_default=True, help="Confidence level.")
    @format_option(FORMATS)
    @click.option(
        "--fail-if-worse",
        metavar="MODEL",
        help="Exit 3 when MODEL is significantly worse than --baseline (score, pass rate, safe pass "
        "rate or unsafe rate).",
    )
    def compare(db_path, baseline, correction, level, fmt_name, fail_if_worse):
        """Paired comparison of the models in a database, on the scenarios both ran.

        For each pair (or each model against --baseline), score, pass rate, safe pass rate (passed
        with no forbidden command) and unsafe rate (lower is better): the mean per-scenario
        difference, its standard error, interval and p-value (paired t-test), with a
        Holm or Benjamini-Hochberg correction across all rows. A row whose interval spans 0 says
        "no detectable difference". Exit codes: 0 done; 1 the database cannot be read; 2 usage
        error (unknown model, --fail-if-worse without --baseline); 3 --fail-if-worse MODEL is
        significantly worse than the baseline.
        """
        from evalkit.aggregate.gates import worse_failure
        from evalkit.aggregate.uncertainty.paired import compare_models
        from evalkit.errors import InputError
        from evalkit.present.comparison_tables import comparison_table

        if fail_if_worse and not baseline:
            fail("--fail-if-worse needs --baseline (the model it must not be worse than)", EXIT_USAGE)
        try:
            result = compare_models(_aggregate(db_path, level), baseline, correction, level)
        except InputError as exc:
            fail(str(exc), EXIT_BAD_INPUT)
        except ValueError as exc:
            fail(f"{db_path}: {exc}", EXIT_USAGE)
        if fail_if_worse and fail_if_worse not in result["models"]:
            fail(
                f"{db_path}: unknown model {fail_if_worse!r} (models: {', '.join(result['models']) or 'none'})",
                EXIT_USAGE,
            )
        _emit([comparison_table(result)], fmt_name, result)
        if fail_if_worse:
            reason = worse_failure(result, fail_if_worse, baseline)
            if reason:
                warn(reason)
                sys.exit(EXIT_GATE)

    @group.command("plan")
    @click.option(
        "--delta",
        type=click.FloatRange(0, 1, min_open=True),
        required=True,
        help="The smallest difference (score or pass rate) the comparison must detect.",
    )
    @click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, exists=True),
        help="Measure the variances in this database (read-only); without it they are assumed.",
    )
    @click.option(
        "--power", type=LEVEL, default=0.8, show_default=True, help="Chance of detecting a true difference of --delta."
    )
    @click.option(
        "--ci-level", "level", type=LEVEL, default=0.95, show_default=True, help="Confidence level of the test."
    )
    @click.option(
        "--sd-within",
        type=click.FloatRange(0),
        help="State the run-to-run sd within a scenario instead of measuring it.",
    )
    @click.option(
        "--sd-between",
        type=click.FloatRange(0),
        help="State the sd across scenarios of the difference between two models instead of measuring it.",
    )
    @format_option(FORMATS)
    def plan(delta, db_path, power, level, sd_within, sd_between, fmt_name):
        """How many scenarios x runs a paired comparison needs to detect --delta, and the power of
        the current data. Exit codes: 0 done; 1 the database cannot be read; 2 usage error."""
        from evalkit.aggregate.uncertainty.power import plan as make_plan
        from evalkit.errors import InputError
        from evalkit.present.comparison_tables import plan_tables

        try:
            measured = _aggregate(db_path, level) if db_path is not None else None
            result = make_plan(delta, measured, level, power, sd_within=sd_within, sd_between=sd_between)
            result["db"] = None if db_path is None else str(db_path)
        except InputError as exc:
            fail(str(exc), EXIT_BAD_INPUT)
        _emit(plan_tables(result), fmt_name, result)


def _aggregate(db_path: str, level: float) -> dict:
    """The aggregate of every ScoreCard stored in ``db_path``, opened read-only (InputError, one
    line naming the file, when it cannot be read)."""
    from evalkit.aggregate.groups import aggregate
    from evalkit.db import open_readonly, read_scorecards

    with open_readonly(db_path) as db:
        return aggregate(read_scorecards(db, with_bundle=False), False, level)
