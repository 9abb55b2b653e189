"""`evalkit import FORMAT FILE... -o DIR`: convert other harnesses' runs into evalkit trajectories.

Only click and the standard library are imported here; the importers load inside the command.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from evalkit.commands.kit import EXIT_BAD_INPUT, refuse_output_clash, warn, workers_option
from evalkit.present.safe import sanitize


def register(group: click.Group) -> None:
    group.add_command(import_command)


@click.command("import")
@click.argument("format_name", metavar="FORMAT", required=False)
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Directory for the trajectories.")
@click.option("--model", help="Model name for the runs (tau-bench files do not record it).")
@click.option(
    "--domain",
    help="tau-bench domain (airline, retail); inferred from the tool names when omitted.",
)
@click.option("--outcome-scorer", metavar="NAME", help="inspect: the scorer whose value is the end state (default: the first deterministic one).")
@click.option("--judge-scorers", metavar="NAMES", help="inspect: comma-separated scorers that are model-graded (besides the known built-ins).")
@click.option("--outcome-threshold", type=float, metavar="X", help="inspect: credit a value needs to pass (default 1.0; C=1, P=0.5, I=0).")
@click.option("--tasks", "tasks", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="tau2: tasks file for simulations whose task the results file does not hold.")
@click.option("--dialect", type=click.Choice(["openai", "anthropic", "auto"]),
              help="openai-messages: the transcripts' message format (default auto: sniffed per line).")
@click.option("--scenarios", "scenarios", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="otel: scenarios (JSON list or JSONL) for the runs, by the id in --scenario-attr.")
@click.option("--scenario-attr", "scenario_attr", metavar="NAME",
              help="otel: span or resource attribute naming a run's scenario (default evalkit.scenario_id).")
@click.option("--results", "results", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="otel: JSONL end states {trace_id | run_id, success} for runs whose spans do not say it.")
@click.option("--listen", metavar="HOST:PORT",
              help="otel: receive OTLP/HTTP traces on HOST:PORT and write runs as traces complete (no FILE).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also import the ratings the format provides (inspect: its scorers) into this database.")
@workers_option("Processes converting inputs (default: the number of cores); the files written are the same.")
@click.option("--list", "list_formats", is_flag=True, help="List the available formats and exit.")
def import_command(
    format_name: str | None,
    files: tuple[str, ...],
    out_dir: str | None,
    model: str | None,
    domain: str | None,
    outcome_scorer: str | None,
    judge_scorers: str | None,
    outcome_threshold: float | None,
    tasks: str | None,
    dialect: str | None,
    scenarios: str | None,
    scenario_attr: str | None,
    results: str | None,
    listen: str | None,
    db_path: str | None,
    workers: int | None,
    list_formats: bool,
) -> None:
    """Convert FILEs recorded by another harness (FORMAT: taubench, tau2, openai-messages, inspect, otel, or a
    plugin's name) into evalkit trajectories, one <run_id>.jsonl per run in DIR, ready for
    `evalkit score`. Formats that record ratings (inspect: its scorers) also write DIR/ratings.jsonl
    and, with --db, import those ratings into the database for `evalkit audit`.

    Each input is all-or-nothing: a bad input leaves no files behind and the others are still
    converted. --workers N converts inputs in N worker processes; only this process puts files in
    place and writes the database, in input order, so the files, the database and the messages are
    the same as with one worker. Exit 0 when every input converted, 1 when some were bad, 2 on usage
    errors.
    """
    from evalkit import importers

    if list_formats:
        for name, origin in importers.available().items():
            click.echo(f"{name}\t{origin}")
        return
    if not format_name:
        raise click.UsageError("missing FORMAT (see --list)")
    if not files and not listen:
        raise click.UsageError("missing FILE")
    if not out_dir:
        raise click.UsageError("missing -o/--out DIR")
    # the directory and the database against the input files (the files in DIR are named later)
    refuse_output_clash([("-o", out_dir), ("--db", db_path)], inputs=[f for f in files if not Path(f).is_dir()])
    try:
        importer = importers.get_importer(format_name)
    except KeyError as exc:
        raise click.UsageError(str(exc.args[0])) from None
    require = getattr(importer, "require", None)
    if require is not None:
        try:
            require()
        except Exception as exc:  # the format's optional dependency is missing
            raise click.UsageError(str(exc)) from None
    options = {"model": model, "domain": domain, "outcome_scorer": outcome_scorer,
               "judge_scorers": judge_scorers, "outcome_threshold": outcome_threshold, "tasks": tasks,
               "dialect": dialect, "scenarios": scenarios, "scenario_attr": scenario_attr, "results": results}
    accepted = importers.supported_options(importer)
    if accepted is not None:
        for name, value in options.items():
            if value is not None and name not in accepted:
                raise click.UsageError(f"--{name.replace('_', '-')} is not used by format {format_name}")
    for name in getattr(importer, "required", ()):
        if options.get(name) is None:
            raise click.UsageError(f"format {format_name} needs --{name.replace('_', '-')}")
    if db_path is not None and not getattr(importer, "ratings", False):
        raise click.UsageError(f"--db is not used by format {format_name} (it records no ratings)")
    if not getattr(importer, "expand", None):
        for path in files:
            if Path(path).is_dir():
                raise click.UsageError(f"{path} is a directory; format {format_name} reads files")
    if listen:
        if files or not getattr(importer, "listen", None):
            raise click.UsageError("--listen takes no FILE" if files else f"--listen is not used by format {format_name}")
        importer.listen(listen, out_dir, echo=lambda line: click.echo(sanitize(line)), **options)
        return
    from evalkit.engines import default_workers

    result = importers.import_files(importer, files, out_dir, db=db_path, workers=workers or default_workers(), **options)
    for path, written in result.written.items():
        click.echo(sanitize(f"{path}: {len(written)} run{'s' if len(written) != 1 else ''} -> {out_dir}"))
    if result.ratings_file:
        where = f" and {db_path}" if db_path else ""
        click.echo(sanitize(f"{result.ratings} ratings -> {result.ratings_file}{where}"))
    for error in result.errors:
        warn(str(error))  # errors quote sample ids and paths from the input
    if result.errors:
        sys.exit(EXIT_BAD_INPUT)
