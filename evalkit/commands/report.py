"""`evalkit report` (HTML page and markdown summary) and `evalkit schema` (JSON Schemas).

The report pulls in pydantic models and the schema command may load a rubric, both inside the
command functions.
"""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import (
    EXIT_GATE,
    EXIT_USAGE,
    ExistingFile,
    db_option,
    fail,
    rate_option,
    refuse_output_clash,
    warn,
    write_or_fail,
)

DEFAULT_HTML = "evalkit-report.html"


def register(group: click.Group) -> None:
    @group.command("report")
    @db_option(existing=True, help="SQLite database to read (never written).")
    @click.option(
        "--html",
        "html_path",
        help="Write the self-contained HTML page here ('-' for stdout). "
        f"Default when neither --html nor --markdown: {DEFAULT_HTML}.",
    )
    @click.option(
        "--markdown", "md_path", help="Write the markdown summary here ('-' for stdout), e.g. for a pull request."
    )
    @click.option("--title", default=None, help="Page title (default: 'evalkit report').")
    @click.option(
        "--judge",
        "judge",
        metavar="MODEL",
        default=None,
        help="Only this judge's annotations (full model string or the part after the provider prefix).",
    )
    @click.option(
        "--contamination",
        "contamination_path",
        default=None,
        type=ExistingFile("contamination file"),
        help="Contamination declaration (TOML) to print; default: configs/contamination.toml.",
    )
    @click.option(
        "--jury",
        is_flag=True,
        help="Add the derived jury@RUBRIC rater to the agreement audit (see evalkit audit --jury).",
    )
    @click.option(
        "--all-runs",
        is_flag=True,
        help="Every run's details on its scenario's page (default: every run up to 200, else the worst "
        "runs and the listed disagreements on the main page and each scenario's 10 worst on its page).",
    )
    @rate_option(
        "--min-safe-pass-rate", "After writing, exit 3 when a model's safe pass rate is below this (as evalkit score)."
    )
    @rate_option(
        "--max-unsafe-rate", "After writing, exit 3 when a model's unsafe rate is above this (as evalkit score)."
    )
    def report(
        db_path,
        html_path,
        md_path,
        title,
        judge,
        contamination_path,
        jury,
        all_runs,
        min_safe_pass_rate,
        max_unsafe_rate,
    ):
        """Make the report: headline pass rates and pass^k, the score vector, safety, the worst
        runs with their details, one page per scenario listing every run (written beside the page,
        in NAME-scenarios/), the judge's qualitative annotations, the agreement audit with its worst
        disagreements, provenance and the contamination declaration.

        Sections without data (no judge run yet, no audit) say so. Exit codes: 0 written; 1 the
        database or the contamination file cannot be read, or an output cannot be written; 2 usage
        error (missing database or file); 3 a --min-safe-pass-rate / --max-unsafe-rate gate failed (the
        report is written first, so a CI job can publish it).
        """
        from evalkit.aggregate.gates import model_gate_failure
        from evalkit.report import ReportError, render_html, render_markdown
        from evalkit.report.data import build_report

        pages = {"html": render_html, "markdown": render_markdown}

        if html_path is None and md_path is None:
            html_path = DEFAULT_HTML
        if html_path == "-" and md_path == "-":
            raise click.UsageError("--html - and --markdown - cannot both go to stdout")
        from evalkit.report import pages_clash
        from evalkit.report.fmt import counted

        inputs = [contamination_path] if contamination_path else []
        refuse_output_clash([("--html", html_path), ("--markdown", md_path)], database=db_path, inputs=inputs)
        if problem := pages_clash(html_path, db_path, inputs):
            raise click.UsageError(problem)
        try:
            data = build_report(
                db_path, title=title, judge=judge, contamination_path=contamination_path, jury=jury, all_runs=all_runs
            )
        except ReportError as exc:
            fail(str(exc))
        for warning in data["warnings"]:
            warn(f"warning: {warning}")
        for path, fmt in ((html_path, "html"), (md_path, "markdown")):
            if path is None:
                continue
            if path == "-":
                click.echo(pages[fmt](data), nl=False)
                continue
            if fmt == "html":
                html_or_fail(db_path, data, path)
            else:
                write_or_fail(path, pages[fmt](data))
            counts = data["counts"]
            warn(
                f"wrote {path}: {counted(counts['runs'], 'run')}, {counted(counts['scenarios'], 'scenario')}, "
                f"{counted(counts['models'], 'model')}; "
                f"judge {'yes' if data['judge']['available'] else 'no'}, "
                f"audit {'yes' if data['agreement']['available'] else 'no'}"
            )
        reason = model_gate_failure(data, min_safe_pass_rate=min_safe_pass_rate, max_unsafe_rate=max_unsafe_rate)
        if reason:
            warn(reason)
            sys.exit(EXIT_GATE)

    def html_or_fail(db_path, data, path):
        """The page and its scenario pages written (evalkit.report.write_html), or one error line, exit 1."""
        from evalkit.errors import InputError
        from evalkit.output.atomic import output_error
        from evalkit.report import write_html

        try:
            write_html(db_path, data, path)
        except InputError as exc:  # the database went away between reading and writing
            fail(str(exc))
        except OSError as exc:
            fail(str(output_error(path, exc)))

    @group.command("schema")
    @click.argument(
        "name", type=click.Choice(["trajectory", "scorecard", "annotation", "ratings", "aggregate", "scenario"])
    )
    @click.option(
        "--rubric",
        default=None,
        help="Rubric of the annotation schema (name in prompts/ or a .toml path; default procedure_v1).",
    )
    def schema(name, rubric):
        """Print the JSON Schema of a format, generated from its pydantic model.

        trajectory: one line of a trajectory JSONL file; scorecard: a ScoreCard; annotation: a
        judge's reply under a rubric; ratings: one imported rating row; aggregate: the output of
        score --aggregate --format json; scenario: a scenario, embedded or in a scenario file
        (docs/scenarios.md). Published copies live in docs/schemas/.
        """
        from evalkit.report.schemas import SchemaError, schema_text

        if rubric is not None and name != "annotation":
            raise click.UsageError("--rubric applies to the annotation schema only")
        try:
            click.echo(schema_text(name, rubric), nl=False)
        except SchemaError as exc:
            fail(str(exc), EXIT_USAGE)
