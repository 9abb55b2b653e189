"""`evalkit export parquet --db FILE DIR`: a scores database as Parquet (the parquet extra)."""
from __future__ import annotations

import click

from evalkit.commands.kit import db_option, fail


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

    Exit codes: 0 written; 1 the database cannot be read; 2 usage error (DIRECTORY not empty,
    pyarrow not installed, no such database).
    """
    from evalkit.errors import InputError
    from evalkit.output.parquet import export_database, parquet_problem, pyarrow_problem

    if problem := parquet_problem(directory) or pyarrow_problem():
        raise click.UsageError(problem)
    try:
        n = export_database(db_path, directory)
    except InputError as exc:
        fail(str(exc))
    click.echo(f"{n} scorecard{'s' if n != 1 else ''} -> {directory}")
