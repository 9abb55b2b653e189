"""`evalkit export parquet --db FILE DIR`: a scores database as Parquet (the parquet extra)."""

from __future__ import annotations

import click

from evalkit.commands.kit import db_option, fail, refuse_output_clash


def register(group: click.Group) -> None:
    group.add_command(export)


@click.group("export")
def export() -> None:
    """Export stored scores to other formats."""


@export.command("parquet")
@click.argument("directory", type=click.Path(file_okay=False))
@db_option(existing=True, help="Scores database to read.")
def parquet(directory: str, db_path: str) -> None:
    """Write the database's scorecards (partitioned by scenario) and judge bundles as Parquet into
    DIRECTORY, which must be new or empty. See docs/scaling.md for the layout.

    Exit codes: 0 written; 1 the database cannot be read or DIRECTORY cannot be written (nothing is
    left half-written); 2 usage error (DIRECTORY not empty or the database, pyarrow not installed,
    no such database).
    """
    from evalkit.errors import InputError
    from evalkit.output.atomic import OutputError
    from evalkit.output.parquet import export_database, parquet_problem

    refuse_output_clash([("DIRECTORY", directory)], database=db_path)
    if problem := parquet_problem(directory):
        raise click.UsageError(problem)
    try:
        n = export_database(db_path, directory)
    except (InputError, OutputError) as exc:
        fail(str(exc))
    click.echo(f"{n} scorecard{'s' if n != 1 else ''} -> {directory}")


@export.command("otel")
@click.argument("out", required=False, type=click.Path(dir_okay=False))
@db_option(existing=True, help="Scores database to read.")
@click.option(
    "--endpoint", metavar="URL", help="Also send the events over OTLP/HTTP (protobuf) to URL (/v1/logs is added)."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Deadline of each request to --endpoint, whole (connect, headers and reply).",
)
def otel(out: str | None, db_path: str, endpoint: str | None, timeout_s: float) -> None:
    """Write the database's ScoreCards and judge annotations as OpenTelemetry gen_ai.evaluation.result
    events to OUT (OTLP JSON, one ExportLogsServiceRequest per run per line), attached to the run's
    original trace and span when it was imported from traces; with --endpoint, send them there,
    with the headers of OTEL_EXPORTER_OTLP_LOGS_HEADERS or else OTEL_EXPORTER_OTLP_HEADERS
    (key=value,... with URL-encoded values). A redirect is not followed; each request ends within
    --timeout; a reply over 1 MiB is not read.

    Exit codes: 0 written (and every request delivered); 1 the database cannot be read, OUT cannot
    be written, or a request was not delivered (refused, redirected, no reply within --timeout,
    unreachable); 2 usage error (neither OUT nor --endpoint, opentelemetry-proto missing for
    --endpoint, a malformed OTEL_EXPORTER_OTLP_*HEADERS, no such database).
    """
    import os

    from evalkit.errors import InputError
    from evalkit.exporters import otel as exporter

    if not out and not endpoint:
        raise click.UsageError("give OUT, --endpoint URL, or both")
    refuse_output_clash([("OUT", out)], database=db_path)
    headers = None
    if endpoint:
        try:
            import httpx  # noqa: F401 — evalkit's outbound client
            import opentelemetry.proto  # noqa: F401 — sending needs the protobuf types
        except ImportError:
            raise click.UsageError('--endpoint needs opentelemetry-proto: pip install "evalkit[otel]"') from None
        try:
            headers = exporter.env_headers(os.environ)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    try:
        reqs = exporter.read_database(db_path)
        if out:
            from evalkit.output.atomic import write_text_atomic

            write_text_atomic(out, exporter.dumps(reqs))
        if endpoint:
            exporter.send(reqs, endpoint, timeout_s, headers)
    except (InputError, OSError) as exc:  # an OutputError is an OSError
        fail(str(exc))
    events = sum(len(r["resourceLogs"][0]["scopeLogs"][0]["logRecords"]) for r in reqs)
    where = " and ".join(str(x) for x in (out, endpoint and exporter.logs_url(endpoint)) if x)
    click.echo(f"{events} evaluation events of {len(reqs)} run{'s' if len(reqs) != 1 else ''} -> {where}")
