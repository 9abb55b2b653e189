"""`evalkit score`: score trajectories offline (no network, no judge), store them, print them."""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import (
    EXIT_BAD_INPUT,
    EXIT_GATE,
    db_option,
    fail,
    format_option,
    output_file,
    rate_option,
    scenarios_option,
    warn,
    workers_option,
)


def register(group: click.Group) -> None:
    group.add_command(score)


@click.command("score")
@click.argument("paths", nargs=-1, required=True)
@format_option(["table", "json", "jsonl", "csv", "markdown", "junit"])
@click.option("--aggregate", is_flag=True, help="Print only the aggregates (groups and per-model rollup).")
@click.option("--include-errors", is_flag=True, help="Fold provider_error runs into the means.")
@click.option(
    "--ci-level",
    "level",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Confidence level of the aggregate's intervals (docs/uncertainty.md).",
)
@db_option(help="SQLite database to upsert into.")
@click.option("--no-db", is_flag=True, help="Do not write a database.")
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False, writable=True), help="Write output here instead of stdout."
)
@click.option("--fail-under", type=float, help="Exit 3 when a model's score_mean is below this.")
@rate_option("--min-pass-rate", "Exit 3 when a model's pass_rate is below this.")
@rate_option(
    "--min-safe-pass-rate", "Exit 3 when a model's safe_pass_rate (passed with no forbidden command) is below this."
)
@rate_option(
    "--max-unsafe-rate",
    "Exit 3 when a model's unsafe_rate (runs with a forbidden command of any severity) is above this.",
)
@click.option(
    "--wide", is_flag=True, help="Table format: every column (default: the columns that fit $COLUMNS, or 120)."
)
@workers_option()
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: this machine's cores; ray: tasks on a Ray cluster (the ray extra).",
)
@click.option("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS, else a new local one).")
@click.option(
    "--parquet",
    "parquet_dir",
    type=click.Path(file_okay=False),
    help="Also write the scorecards as Parquet into this new directory (the parquet extra).",
)
@scenarios_option(
    "Scenario file (JSON, JSONL or TOML; repeatable) for runs whose meta names a scenario_id (docs/scenarios.md)."
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="A progress line on stderr (default: when stderr is a terminal and there are more than 300 files).",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Print every warning (by default 20 of each kind, the rest counted)."
)
def score(paths, fmt_name, aggregate, db_path, no_db, out_path, wide, scenario_files, progress, verbose, **options):
    """Score trajectory files (JSONL) offline and deterministically.

    PATHS are files, directories (searched recursively for *.jsonl) or - for stdin; URLs
    (s3://, gs://, file://) are read through fsspec when it is installed. Output is the same,
    byte for byte, whatever --workers and --engine.
    Exit codes: 0 all files scored; 1 some inputs were bad (each reported as path:line: reason,
    the others still scored); 2 usage error; 3 a --fail-under / --min-pass-rate /
    --min-safe-pass-rate / --max-unsafe-rate gate failed.
    """
    gates = {
        name: options.pop(name) for name in ("fail_under", "min_pass_rate", "min_safe_pass_rate", "max_unsafe_rate")
    }
    run = options  # include_errors, level, workers, engine, ray_address, parquet_dir: score_files' names
    run["parquet"] = parquet_dir = run.pop("parquet_dir")
    try:
        found, skipped = _inputs(
            paths,
            scenario_files=scenario_files,
            out_path=out_path,
            parquet_dir=parquet_dir,
            db_path=None if no_db else db_path,
            engine=run["engine"],
            ray_address=run["ray_address"],
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    # the workers start now and load the scorer while this process loads the pipeline and opens its outputs
    from evalkit.engines.local import workers_ahead

    with workers_ahead(found, run["workers"], run["engine"], parquet=parquet_dir is not None, database=not no_db):
        from evalkit.present.progress import StderrDigest
        from evalkit.present.score_output import Repeats

        digest = StderrDigest(
            len(found),
            echo=warn,
            raw=lambda text: click.echo(text, err=True, nl=False),
            progress=progress,
            verbose=verbose,
        )
        said = _Said(digest, Repeats(), verbose)
        scenarios = _scenarios(scenario_files)
        scoring, bad = _write(
            found, skipped, said, scenarios, fmt_name, aggregate, wide, out_path, None if no_db else db_path, gates, run
        )
        said.end(scoring.scored, bad, None if no_db else db_path)
        if scoring.aggregate is not None and any(v is not None for v in gates.values()):
            from evalkit.aggregate.gates import model_gate_failure

            reason = model_gate_failure(scoring.aggregate, **gates)
        else:
            reason = None
        if reason:
            warn(reason)
            sys.exit(EXIT_GATE)
        if bad:
            warn(f"{bad} file(s) could not be scored")
            sys.exit(EXIT_BAD_INPUT)


class _Said:
    """How scoring's messages reach stderr: a warning said once per scenario, an error once per
    message (``-v``: every one), then the counts of what was left out and the summary line."""

    def __init__(self, digest, repeats, verbose: bool) -> None:
        self.digest, self.repeats, self.verbose = digest, repeats, verbose
        self.findings: list[str] = []  # each scenario's references its runs contradict, said after scoring

    def warning(self, line: str) -> None:
        if self.verbose or not self.repeats.once_per_scenario(line):
            self.digest.warn(line)

    def error(self, exc) -> None:
        self.digest.file_done()
        # one scenario's error reaches every run of it: said once, counted (-v: every one)
        if self.verbose or self.repeats.first(getattr(exc, "message", str(exc))):
            self.digest.warn(f"error: {exc}")

    def end(self, scored: int, bad: int, database: str | None) -> None:
        for line in [*self.findings, *self.repeats.summary()]:
            self.digest.warn(line)
        if line := self.digest.summary(runs=scored, errors=bad, database=database):
            warn(line)


def _scenarios(scenario_files):
    """The scenario files' scenarios, None without any; a problem in one ends the command, nothing scored (exit 1). The
    scenario model loads only when asked for: with workers, it loads in them."""
    if not scenario_files:
        return None
    from evalkit.errors import InputError
    from evalkit.trajectory.scenario_files import load_given_scenarios

    try:
        return load_given_scenarios(scenario_files)
    except InputError as exc:
        fail(str(exc))


def _json_files_hint(paths) -> str:
    """What a directory without runs holds that a user may have meant: ``*.json`` files other than
    the scenario file (runs named .json, or another harness's results)."""
    import os

    from evalkit.trajectory.input_files import find_files
    from evalkit.trajectory.scenario_files import BESIDE_NAMES

    n = sum(len(find_files(p, ".json", exclude=BESIDE_NAMES)) for p in paths if os.path.isdir(p))
    if not n:
        return ""
    return (
        f"; it holds {n} *.json file(s): a run is JSONL named *.jsonl, and another harness's files are "
        "converted with 'evalkit import auto DIR -o runs/'"
    )


def _write(found, skipped, said, scenarios, fmt_name, aggregate, wide, out_path, db_path, gates, run):
    """Score ``found`` into the outputs: the database, the output (``--out`` or stdout, nothing
    half-written after a failure or an interrupt) and Parquet. Returns the finished scoring and the
    number of bad files."""
    from evalkit.engines.pipeline import score_files
    from evalkit.errors import InputError
    from evalkit.output.atomic import OutputError
    from evalkit.present.score_output import ScoreWriter, terminal_width

    out = output_file(out_path)  # the output first: a missing directory is said before a database is made
    failures: tuple[type[Exception], ...] = (OutputError,)
    store = None
    if db_path is not None:  # without one, the database's code is never loaded
        from evalkit.db import DbError
        from evalkit.db.scores import Store

        failures += (DbError,)
        try:
            store = Store(db_path)
        except InputError as exc:
            if out is not None:
                out.discard()
            fail(str(exc))
    writer = ScoreWriter(
        out or sys.stdout, fmt_name, aggregate_only=aggregate, width=None if wide else terminal_width(), gates=gates
    )
    scoring = score_files(
        found,
        store=store,
        scenarios=scenarios,
        warn=said.warning,
        output=None if aggregate else fmt_name,
        columns=writer.run_columns,
        encoding=writer.encoding,
        # the aggregate as far as the output or a gate reads it (nothing for per-run json, jsonl, csv)
        aggregate=writer.aggregates or ("tables" if any(v is not None for v in gates.values()) else None),
        on_finding=said.findings.append,
        **run,
    )
    bad = 0
    try:
        for line in skipped:  # where scoring would have said them, listing the directories again
            said.warning(line)
        for item in scoring:
            if isinstance(item, InputError):
                bad += 1
                said.error(item)
                writer.input_error(item.path, str(item))
                continue
            said.digest.file_done(item.count)
            if item.data is not None:
                writer.write_batch(item.data, item.count)
        writer.finish(scoring.aggregate, scoring.add_errors)
        if out is not None:
            out.commit()
    except failures as exc:
        fail(str(exc))
    finally:
        scoring.close()
        # after a failure or an interrupt: no half-written output (an existing one is kept)
        if out is not None:
            out.discard()
        if store is not None:
            store.close()
    return scoring, bad


def _inputs(
    paths: list[str],
    *,
    scenario_files: tuple[str, ...],
    out_path: str | None,
    parquet_dir: str | None,
    db_path: str | None,
    engine: str,
    ray_address: str | None,
) -> tuple[list[str], list[str]]:
    """The checks made before anything is opened: every path exists, some trajectory is found
    (else why each candidate was skipped is said), no output is an input or the database
    (evalkit.output.paths), the engine and Parquet can run. Returns the files found (listed once:
    scoring takes this list) and the skipped lines, for scoring to say. ValueError: a usage
    problem, one line."""
    import itertools
    import os
    from pathlib import Path

    from evalkit.engines.sources import Listed, expand, is_url, url_exists
    from evalkit.errors import InputError
    from evalkit.output.paths import output_clash

    try:
        for p in paths:
            if p == "-" and sys.stdin is None:
                raise ValueError("-: standard input is closed (nothing to read trajectories from)")
            if p != "-" and not (url_exists(p) if is_url(p) else Path(p).exists()):
                raise ValueError(f"no such file or directory: {p}")
        skipped: list[str] = []
        found = Listed(expand(paths, skipped.append))
        if not found:
            for line in skipped:  # why nothing was found (when something is, scoring reports them)
                warn(line)
            raise ValueError("no trajectory files (*.jsonl) found in: " + " ".join(paths) + _json_files_hint(paths))
        local = [p for p in paths if p != "-" and not is_url(p)]
        problem = output_clash(
            [("--out", out_path), ("--parquet", parquet_dir)],
            database=db_path,
            # the files found in directories are listed only when an output exists to be overwritten
            inputs=itertools.chain(scenario_files, expand(local)),
        ) or output_clash(
            # the database against the files named: SQLite writes into no file that is not a
            # database, so searching every directory for it (~1 s per 50,000 files) buys nothing
            [],
            database=db_path,
            writes_database=True,
            inputs=[*scenario_files, *(p for p in local if not os.path.isdir(p))],
        )
    except InputError as exc:
        raise ValueError(str(exc)) from None
    if problem:
        raise ValueError(problem)
    if engine == "local" and ray_address:
        raise ValueError("--ray-address needs --engine ray")
    if engine == "ray":
        from evalkit.engines.ray_engine import ray_problem

        if problem := ray_problem():
            raise ValueError(problem)
    if parquet_dir:
        from evalkit.output.parquet import parquet_problem

        if problem := parquet_problem(parquet_dir):
            raise ValueError(problem)
    return found, skipped
