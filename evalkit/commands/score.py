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
    warn,
    workers_option,
)


def register(group: click.Group) -> None:
    @group.command("score")
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
    def score(paths, fmt_name, aggregate, db_path, no_db, out_path, wide, scenario_files, progress, verbose, **options):
        """Score trajectory files (JSONL) offline and deterministically.

        PATHS are files, directories (searched recursively for *.jsonl) or - for stdin; URLs
        (s3://, gs://, file://) are read through fsspec when it is installed. Output is the same,
        byte for byte, whatever --workers and --engine.
        Exit codes: 0 all files scored; 1 some inputs were bad (each reported as path:line: reason,
        the others still scored); 2 usage error; 3 a --fail-under / --min-pass-rate /
        --min-safe-pass-rate / --max-unsafe-rate gate failed.
        """
        from evalkit import api

        gates = {
            name: options.pop(name) for name in ("fail_under", "min_pass_rate", "min_safe_pass_rate", "max_unsafe_rate")
        }
        run = options  # include_errors, level, workers, engine, ray_address, parquet_dir: api.score_run's names
        parquet_dir = run["parquet_dir"]
        try:
            found, skipped = api.score_inputs(
                paths,
                scenario_files=scenario_files,
                out_path=out_path,
                parquet_dir=parquet_dir,
                db_path=None if no_db else db_path,
                engine=run["engine"],
                ray_address=run["ray_address"],
                warn=warn,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        # the workers start now and load the scorer while this process opens its outputs
        with api.workers_started(found, run["workers"], run["engine"], parquet=parquet_dir is not None):
            from evalkit.api import DbError, OutputError
            from evalkit.errors import InputError
            from evalkit.present.progress import StderrDigest
            from evalkit.present.score_view import Repeats, ScoreWriter, terminal_width

            digest = StderrDigest(
                len(found),
                echo=warn,
                raw=lambda text: click.echo(text, err=True, nl=False),
                progress=progress,
                verbose=verbose,
            )

            repeats = Repeats()

            def on_error(exc: InputError) -> None:
                nonlocal bad
                bad += 1
                digest.file_done()
                # one scenario's error reaches every run of it: said once, counted (-v: every one)
                if verbose or repeats.first(getattr(exc, "message", str(exc))):
                    digest.warn(f"error: {exc}")

            def on_warning(line: str) -> None:
                if verbose or not repeats.once_per_scenario(line):
                    digest.warn(line)

            bad = 0
            try:  # the scenario model loads only when asked for: with workers, it loads in them
                scenarios = api.load_scenarios(scenario_files) if scenario_files else None
            except InputError as exc:
                fail(str(exc))
            out = output_file(out_path)  # the output first: a missing directory is said before a database is made
            try:
                store = None if no_db else api.Store(db_path)
            except InputError as exc:
                if out is not None:
                    out.discard()
                fail(str(exc))
            writer = ScoreWriter(
                out or sys.stdout,
                fmt_name,
                aggregate_only=aggregate,
                width=None if wide else terminal_width(),
                gates=gates,
            )
            job = api.ScoreJob(
                output_format=None if aggregate else fmt_name,
                parquet_rows=parquet_dir is not None,
                columns=writer.run_columns,
                scenarios=scenarios,
                batched=True,
                encoding=writer.encoding,
                include_errors=run["include_errors"],
                observe=True,
            )
            # the aggregate as far as the output or a gate reads it (nothing for per-run json, jsonl, csv)
            aggregates = writer.aggregates or ("tables" if any(v is not None for v in gates.values()) else None)
            findings: list[str] = []  # each scenario's references its runs contradict, said after scoring
            try:
                result, scored = api.score_run(
                    found,
                    store,
                    on_error,
                    on_warning,
                    job=job,
                    on_file=digest.file_done,
                    on_output=writer.write_batch,
                    on_finding=findings.append,
                    skipped=skipped,
                    aggregates=aggregates,
                    **run,
                )
                writer.finish(result)
                if out is not None:
                    out.commit()
            except (DbError, OutputError) as exc:
                fail(str(exc))
            finally:
                # after a failure or an interrupt: no half-written output (an existing one is kept)
                if out is not None:
                    out.discard()
                if store is not None:
                    store.close()
            for line in findings:
                digest.warn(line)
            for line in repeats.summary():
                digest.warn(line)
            if line := digest.summary(runs=scored, errors=bad, database=None if no_db else db_path):
                warn(line)
            reason = api.gate_failure(result, **gates) if result is not None else None
            if reason:
                warn(reason)
                sys.exit(EXIT_GATE)
            if bad:
                warn(f"{bad} file(s) could not be scored")
                sys.exit(EXIT_BAD_INPUT)
