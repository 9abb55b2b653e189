"""`evalkit score`: score trajectories offline (no network, no judge), store them, print them."""

from __future__ import annotations

import itertools
import os
import sys

import click

from evalkit.commands.kit import (
    EXIT_BAD_INPUT,
    EXIT_GATE,
    db_option,
    fail,
    format_option,
    refuse_output_clash,
    warn,
    workers_option,
)


def _check_gates(result: dict, **limits: float | None) -> str | None:
    """The first failed gate as a one-line reason, or None (evalkit.aggregate.gates)."""
    from evalkit.aggregate.gates import model_gate_failure

    return model_gate_failure(result, **limits)


def _check_outputs(paths, scenario_files, *, out_path, parquet_dir, db_path) -> None:
    """The output-path rule (evalkit.output.paths) for score: --out, --parquet and the database
    against each other and the input files (local ones; stdin and URLs are not files here)."""
    from evalkit.engines.sources import expand, is_url

    local = [p for p in paths if p != "-" and not is_url(p)]
    # the files found in directories are listed only when an output exists to be overwritten
    refuse_output_clash(
        [("--out", out_path), ("--parquet", parquet_dir)],
        database=db_path,
        inputs=itertools.chain(scenario_files, expand(local)),
    )
    # the database against the files named: SQLite writes into no file that is not a database,
    # so searching every directory for it (~1 s per 50,000 files, on every run) buys nothing
    refuse_output_clash(
        [],
        database=db_path,
        writes_database=True,
        inputs=[*scenario_files, *(p for p in local if not os.path.isdir(p))],
    )


def register(group: click.Group) -> None:
    @group.command("score")
    @click.argument("paths", nargs=-1, required=True)
    @format_option(["table", "json", "jsonl", "csv", "markdown"])
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
    @click.option("--min-pass-rate", type=click.FloatRange(0, 1), help="Exit 3 when a model's pass_rate is below this.")
    @click.option(
        "--min-safe-pass-rate",
        type=click.FloatRange(0, 1),
        help="Exit 3 when a model's safe_pass_rate (passed with no forbidden command) is below this.",
    )
    @click.option(
        "--max-unsafe-rate",
        type=click.FloatRange(0, 1),
        help="Exit 3 when a model's unsafe_rate (runs with a forbidden command of any severity) is above this.",
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
    @click.option(
        "--scenarios",
        "scenario_files",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help="Scenario file (JSON, JSONL or TOML; repeatable) for runs whose meta names a scenario_id "
        "(docs/scenarios.md).",
    )
    @click.option(
        "--progress/--no-progress",
        default=None,
        help="A progress line on stderr (default: when stderr is a terminal and there are more than 300 files).",
    )
    @click.option(
        "-v", "--verbose", is_flag=True, help="Print every warning (by default 20 of each kind, the rest counted)."
    )
    def score(
        paths,
        fmt_name,
        aggregate,
        include_errors,
        level,
        db_path,
        no_db,
        out_path,
        fail_under,
        min_pass_rate,
        min_safe_pass_rate,
        max_unsafe_rate,
        wide,
        workers,
        engine,
        ray_address,
        parquet_dir,
        scenario_files,
        progress,
        verbose,
    ):
        """Score trajectory files (JSONL) offline and deterministically.

        PATHS are files, directories (searched recursively for *.jsonl) or - for stdin; URLs
        (s3://, gs://, file://) are read through fsspec when it is installed. Output is the same,
        byte for byte, whatever --workers and --engine.
        Exit codes: 0 all files scored; 1 some inputs were bad (each reported as path:line: reason,
        the others still scored); 2 usage error; 3 a --fail-under / --min-pass-rate /
        --min-safe-pass-rate / --max-unsafe-rate gate failed.
        """
        from pathlib import Path

        from evalkit.aggregate.groups import Aggregator
        from evalkit.db import DbError
        from evalkit.db.scores import Store
        from evalkit.engines import ScoreJob, default_workers
        from evalkit.engines.pipeline import score_stream
        from evalkit.engines.sources import Listed, expand, is_url, url_exists
        from evalkit.errors import InputError
        from evalkit.present.score_view import ScoreWriter, terminal_width

        try:
            for p in paths:
                if p == "-" and sys.stdin is None:
                    raise click.UsageError("-: standard input is closed (nothing to read trajectories from)")
                if p != "-" and not (url_exists(p) if is_url(p) else Path(p).exists()):
                    raise click.UsageError(f"no such file or directory: {p}")
            skipped: list[str] = []
            found = Listed(expand(paths, skipped.append))  # listed once: scoring takes this list
            if not found:
                for line in skipped:  # why nothing was found (when something is, scoring reports them)
                    warn(line)
                raise click.UsageError("no trajectory files (*.jsonl) found in: " + " ".join(paths))
            _check_outputs(
                paths, scenario_files, out_path=out_path, parquet_dir=parquet_dir, db_path=None if no_db else db_path
            )
        except InputError as exc:
            raise click.UsageError(str(exc)) from None
        if engine == "local" and ray_address:
            raise click.UsageError("--ray-address needs --engine ray")
        if engine == "ray":
            from evalkit.engines.ray_engine import ray_problem

            if problem := ray_problem():
                raise click.UsageError(problem)
        parquet = None
        if parquet_dir:
            from evalkit.output.parquet import ParquetWriter, parquet_problem, pyarrow_problem

            if problem := parquet_problem(parquet_dir) or pyarrow_problem():
                raise click.UsageError(problem)

        from evalkit.present.progress import StderrDigest

        digest = StderrDigest(
            len(found),
            echo=warn,
            raw=lambda text: click.echo(text, err=True, nl=False),
            progress=progress,
            verbose=verbose,
        )

        def on_error(exc: InputError) -> None:
            nonlocal bad
            bad += 1
            digest.file_done()
            digest.warn(f"error: {exc}")

        bad = 0
        try:  # the scenario model loads only when asked for: with workers, it loads in them
            scenarios = None
            if scenario_files:
                from evalkit.trajectory.scenario_files import load_scenarios

                scenarios = load_scenarios(scenario_files)
        except InputError as exc:
            fail(str(exc))
        from evalkit.output.atomic import AtomicFile, OutputError

        # the output first: a missing directory is said before a database is made
        try:
            out = AtomicFile(out_path, newline="") if out_path else None
        except OutputError as exc:
            fail(str(exc))
        try:
            store = None if no_db else Store(db_path)
        except InputError as exc:
            if out is not None:
                out.discard()
            fail(str(exc))
        writer = ScoreWriter(
            out or sys.stdout, fmt_name, aggregate_only=aggregate, width=None if wide else terminal_width()
        )
        agg = Aggregator(include_errors, level, warn=digest.warn)
        job = ScoreJob(
            output_format=None if aggregate else fmt_name,
            parquet_rows=parquet_dir is not None,
            columns=writer.run_columns,
            scenarios=scenarios,
            batched=True,
            encoding=writer.encoding,
            include_errors=include_errors,
        )
        try:
            if parquet_dir:
                parquet = ParquetWriter(parquet_dir)
            for line in skipped:  # where scoring would have said them, listing the directories again
                digest.warn(line)
            scored = 0
            for item in score_stream(
                found,
                store,
                on_error,
                digest.warn,
                job=job,
                engine=engine,
                workers=workers or default_workers(),
                ray_address=ray_address,
            ):
                agg.note(*item.scenario)  # per file: a warning comes where it would one by one
                scored += 1
                digest.file_done()
                pieces = item.batch  # the workers' finished pieces, with a batch's last good file
                if pieces is None:
                    continue
                if pieces.output is not None:
                    writer.write_batch(pieces.output, pieces.count)
                    pieces.output = None  # written: a long run's text is not held through its database write
                agg.merge(pieces.partial)
                if parquet is not None:
                    parquet.add_many(pieces.parquet)
            if parquet is not None:
                parquet.close()
            result = agg.result()
            writer.finish(result)
            if out is not None:
                out.commit()
        except (DbError, OutputError) as exc:
            fail(str(exc))
        finally:
            # after a failure or an interrupt: no half-written output (an existing one is kept)
            if out is not None:
                out.discard()
            if parquet is not None:
                parquet.discard()
            if store is not None:
                store.close()
        if line := digest.summary(runs=scored, errors=bad, database=None if no_db else db_path):
            warn(line)
        reason = _check_gates(
            result,
            fail_under=fail_under,
            min_pass_rate=min_pass_rate,
            min_safe_pass_rate=min_safe_pass_rate,
            max_unsafe_rate=max_unsafe_rate,
        )
        if reason:
            warn(reason)
            sys.exit(EXIT_GATE)
        if bad:
            warn(f"{bad} file(s) could not be scored")
            sys.exit(EXIT_BAD_INPUT)
