"""`evalkit audit` (judge against mechanical scores, judges and humans) and `evalkit annotations import`.

The audit (numpy) loads inside the commands.
"""

from __future__ import annotations

import click

from evalkit.commands.kit import (
    ExistingFile,
    db_option,
    fail,
    file_option,
    format_option,
    pairings_option,
    refuse_output_clash,
    resamples_option,
    warn,
    write_or_fail,
)
from evalkit.present.safe import sanitize


def register(group: click.Group) -> None:
    @group.command("audit")
    @db_option(existing=True, help="SQLite database to read (never written).")
    @click.option("--judge", "judge", metavar="MODEL", help="Only annotations by this judge model.")
    @click.option("--rubric", metavar="R", help="Only annotations of this rubric (and its pairings).")
    @click.option(
        "--by",
        type=click.Choice(["scenario", "model", "judge", "rubric"]),
        help="Break each pairing down by scenario, agent model, judge model or rubric.",
    )
    @format_option(
        ["table", "json", "markdown", "csv"], help="Output shape; json is the stable contract (docs/audit.md)."
    )
    @file_option(
        "--pairs-out",
        "pairs_out",
        "Write the compared pairs as CSV: pairing, item_id, judge_model, judge_value, mechanical_value.",
    )
    @pairings_option(
        "Pairings/thresholds merged onto configs/pairings.toml (default: $EVALKIT_PAIRINGS_CONFIG, "
        "else .evalkit/pairings.toml if present)."
    )
    @click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
    @resamples_option()
    @click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write the output here instead of stdout.")
    @click.option(
        "--top",
        type=click.IntRange(min=0),
        metavar="N",
        help="List the N worst disagreements (default 20; 0: all; csv counts them and lists none). "
        "Counts and statistics are always the whole audit's.",
    )
    @click.option(
        "--jury",
        is_flag=True,
        help="Add the derived rater jury@RUBRIC (majority / median of the judges, ties to the lower credit).",
    )
    def audit(db_path, fmt_name, pairs_out, config_path, out_path, top, **options):
        """Audit the LLM judge: agreement with the mechanical scores, with other judges and humans.

        Reads the database only: scores and annotations are never modified. Non-blind annotations
        (--show-mechanical) are left out. Exit codes: 0 done; 1 unreadable database or config;
        2 usage error (bad flags, missing database or config file).
        """
        from evalkit.agreement.audit import build_audit, build_audit_with_pairs, warning_lines
        from evalkit.agreement.audit_output import listed, pairs_csv, render
        from evalkit.errors import InputError

        refuse_output_clash(
            [("--pairs-out", pairs_out), ("--out", out_path)],
            database=db_path,
            inputs=[config_path] if config_path else [],
        )
        try:
            # options: judge, rubric, by, seed, n_resamples and jury, named as build_audit names them;
            # records only for the disagreements the output lists, the compared pairs (10^6 rows at
            # scale) only when they are written
            options["top"] = listed(fmt_name, top)
            if pairs_out:
                report, pairs = build_audit_with_pairs(db_path, config=config_path, **options)
            else:
                report, pairs = build_audit(db_path, config=config_path, **options), []
        except InputError as exc:
            fail(str(exc))
        for line in warning_lines(report):
            warn(line)
        text = render(report, fmt_name, top)
        if pairs_out:
            write_or_fail(pairs_out, pairs_csv(pairs))
        if out_path:
            write_or_fail(out_path, text)
        else:
            click.echo(text, nl=False)

    @group.group("annotations")
    def annotations():
        """Human and judge ratings kept beside the judge's own annotations."""

    from evalkit.commands.annotations import register_list

    register_list(annotations)  # `annotations list`, read-only

    @annotations.command("import")
    @click.argument("file", type=ExistingFile())
    @db_option(help="SQLite database to write the ratings into.")
    @click.option("--rater", metavar="NAME", help="Rater name for every row (overrides a rater column).")
    @click.option(
        "--kind",
        type=click.Choice(["human", "judge", "mechanical"]),
        help="Rater kind where the file has no rater_kind (default human).",
    )
    def import_(file, db_path, rater, kind):
        """Import ratings from CSV/TSV/JSONL into the `ratings` table.

        Long files have the columns item_id, rater, rater_kind (human|judge), dimension, value and
        an optional confidence (rater_kind mechanical: a deterministic scorer); a wide scores.csv
        (one row per run, one column per dimension, as the computer-use rubric keeps it) is
        accepted too. The whole file is checked first: a bad file writes nothing and exits 1 with
        one line naming the file and line. Re-importing replaces the same ratings.
        """
        from evalkit.agreement.ratings import import_ratings, not_runs_note, other_scale_notes
        from evalkit.errors import InputError

        try:
            s = import_ratings(db_path, file, rater=rater, kind=kind)
        except InputError as exc:
            fail(str(exc))
        if note := not_runs_note(s, db_path):
            warn(sanitize(note))
        for note in other_scale_notes(s, db_path):
            warn(sanitize(note))
        click.echo(
            sanitize(
                f"imported {s.rows} {s.what} from {s.source}: {s.items} {s.item_word}, raters {', '.join(s.raters)}, "
                f"dimensions {', '.join(s.dimensions)}"
            )
        )
