"""`evalkit annotations list`: the stored judge annotations, read-only (`annotations import` lives
with the audit, in evalkit/commands/audit.py, which adds this command to the same group).

The readers load inside the command.
"""

from __future__ import annotations

import click

from evalkit.commands.kit import db_option, fail, format_option


def register_list(annotations: click.Group) -> None:
    annotations.add_command(list_)


@click.command("list")
@db_option(existing=True, help="SQLite database to read (never written).")
@click.option("--judge", metavar="MODEL", help="Only annotations by this judge model.")
@click.option("--rubric", metavar="R", help="Only annotations of this rubric.")
@click.option("--run", "run_id", metavar="RUN_ID", help="Only annotations of this run.")
@format_option(["table", "json", "jsonl", "csv", "markdown"], help="Output shape (table cuts the rationale).")
def list_(db_path, judge, rubric, run_id, fmt_name):
    """List the stored judge annotations: by judge model, rubric and run, with their scores,
    confidence and rationale. Reads the database only; needs no judge server. Annotations of a
    run re-scored since it was judged (stale) are left out. Exit codes: 0 listed (none is not an
    error); 1 unreadable database; 2 usage error (no such database, unknown judge)."""
    from evalkit.db import JudgeNotStored, open_readonly
    from evalkit.db.annotation_listing import annotation_listing, render
    from evalkit.errors import InputError

    try:
        with open_readonly(db_path) as database:
            items = annotation_listing(database, judge=judge, rubric=rubric, run=run_id)
    except JudgeNotStored as exc:
        raise click.UsageError(str(exc)) from None
    except InputError as exc:
        fail(str(exc))
    click.echo(render(items, fmt_name), nl=False)
