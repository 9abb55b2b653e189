"""`evalkit review export`: the human ratings recorded in `evalkit view`, as the ratings CSV that
`evalkit annotations import` reads, so that reviews move between databases.

The readers load inside the command.
"""

from __future__ import annotations

import click

from evalkit.commands.kit import db_option, fail, file_option, refuse_output_clash, write_or_fail


def register(group: click.Group) -> None:
    group.add_command(review)


@click.group("review")
def review() -> None:
    """Reviews recorded in `evalkit view`."""


@review.command("export")
@db_option(existing=True, help="SQLite database to read (never written).")
@file_option("--out", "out_path", "Write the CSV here (replaced whole) instead of stdout.")
def export(db_path, out_path):
    """Write the reviews' human ratings as a long ratings CSV: item_id, rater, rater_kind,
    dimension, value, confidence (`evalkit annotations import FILE` reads it back).

    The ratings the audit counts: each reviewer's latest review of each run, its blind ratings,
    runs not re-scored since. Rows are ordered by run, reviewer and dimension. Exit codes: 0
    written (no review is not an error: a header only); 1 unreadable database or unwritable FILE;
    2 usage error (no such database).
    """
    from evalkit.db import open_readonly
    from evalkit.db.reviews import read_review_ratings
    from evalkit.errors import InputError
    from evalkit.present import Table

    refuse_output_clash([("--out", out_path)], database=db_path)
    try:
        with open_readonly(db_path) as database:
            ratings, _ = read_review_ratings(database)
    except InputError as exc:
        fail(str(exc))
    columns = ("item_id", "rater", "rater_kind", "dimension", "value", "confidence")
    text = Table(
        columns, [[r.item_id, r.rater, r.rater_kind, r.dimension, r.value, r.confidence] for r in ratings]
    ).to_csv()
    if out_path:
        write_or_fail(out_path, text)
        click.echo(f"{len(ratings)} rating{'s' if len(ratings) != 1 else ''} -> {out_path}", err=True)
    else:
        click.echo(text, nl=False)
