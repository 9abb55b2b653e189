"""`evalkit audit` (judge against mechanical scores, judges and humans) and `evalkit annotations import`.

Only click and the standard library are imported here; the audit (numpy) loads inside the commands.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_OK, EXIT_BAD_INPUT, EXIT_USAGE = 0, 1, 2


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def register(group: click.Group) -> None:
    @group.command("audit")
    @click.option("--db", "db_path", default="evalkit.db", show_default=True, help="SQLite database to read (never written).")
    @click.option("--judge", "judge", metavar="MODEL", help="Only annotations by this judge model.")
    @click.option("--rubric", metavar="R", help="Only annotations of this rubric (and its pairings).")
    @click.option("--by", type=click.Choice(["scenario", "model", "judge", "rubric"]),
                  help="Break each pairing down by scenario, agent model, judge model or rubric.")
    @click.option("--format", "fmt_name", type=click.Choice(["table", "json", "markdown", "csv"]), default="table",
                  show_default=True, help="Output shape; json is the stable contract (docs/audit.md).")
    @click.option("--pairs-out", type=click.Path(dir_okay=False), metavar="FILE",
                  help="Write the compared pairs as CSV: pairing, item_id, judge_model, judge_value, mechanical_value.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False), metavar="FILE",
                  help="Pairings/thresholds file merged onto configs/pairings.toml (default: .evalkit/pairings.toml if present).")
    @click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
    @click.option("--resamples", "n_resamples", type=click.IntRange(0), default=1000, show_default=True,
                  help="Bootstrap resamples (0 = no intervals).")
    @click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write the output here instead of stdout.")
    def audit(db_path, judge, rubric, by, fmt_name, pairs_out, config_path, seed, n_resamples, out_path):
        """Audit the LLM judge: agreement with the mechanical scores, with other judges and humans.

        Reads the database only: scores and annotations are never modified. Non-blind annotations
        (--show-mechanical) are left out. Exit codes: 0 done; 1 unreadable database or config;
        2 usage error (bad flags, missing database or config file).
        """
        if not Path(db_path).exists():  # a directory or a non-database is the opener's one-line error
            raise click.UsageError(f"no such database: {db_path}")
        if config_path is not None and not Path(config_path).is_file():
            raise click.UsageError(f"no such config file: {config_path}")

        from evalkit.agreement.audit import run_audit
        from evalkit.agreement.render import RENDERERS, write_pairs_csv
        from evalkit.errors import InputError

        try:
            report, pairs = run_audit(db_path, judge=judge, rubric=rubric, by=by, config=config_path,
                                      seed=seed, n_resamples=n_resamples)
        except InputError as exc:
            _fail(str(exc), EXIT_BAD_INPUT)
        text = RENDERERS[fmt_name](report)
        try:
            if pairs_out:
                write_pairs_csv(pairs_out, pairs)
            if out_path:
                Path(out_path).write_text(text, encoding="utf-8")
            else:
                click.echo(text, nl=False)
        except OSError as exc:
            _fail(f"{exc.filename}: cannot write: {exc.strerror}", EXIT_BAD_INPUT)

    @group.group("annotations")
    def annotations():
        """Human and judge ratings kept beside the judge's own annotations."""

    @annotations.command("import")
    @click.argument("file", type=click.Path(dir_okay=False))
    @click.option("--db", "db_path", default="evalkit.db", show_default=True, help="SQLite database to write the ratings into.")
    @click.option("--rater", metavar="NAME", help="Rater name for every row (overrides a rater column).")
    @click.option("--kind", type=click.Choice(["human", "judge", "mechanical"]),
                  help="Rater kind where the file has no rater_kind (default human).")
    def import_(file, db_path, rater, kind):
        """Import ratings from CSV/TSV/JSONL into the `ratings` table.

        Long files have the columns item_id, rater, rater_kind (human|judge), dimension, value and
        an optional confidence (rater_kind mechanical: a deterministic scorer); a wide scores.csv (one row per run, one column per dimension, as
        the computer-use rubric keeps it) is accepted too. The whole file is checked first: a bad file writes nothing and exits 1
        with one line naming the file and line. Re-importing replaces the same ratings.
        """
        if not Path(file).is_file():
            raise click.UsageError(f"no such file: {file}")
        from evalkit.agreement.ratings import import_ratings
        from evalkit.errors import InputError

        try:
            s = import_ratings(db_path, file, rater=rater, kind=kind)
        except InputError as exc:
            _fail(str(exc), EXIT_BAD_INPUT)
        click.echo(
            f"imported {s.rows} ratings from {s.source}: {s.items} items, raters {', '.join(s.raters)}, "
            f"dimensions {', '.join(s.dimensions)}"
        )
