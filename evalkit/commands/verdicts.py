"""`evalkit verdicts`: score verdict files (classification results). Thin shell over evalkit.verdicts.analysis."""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import EXIT_BAD_INPUT, EXIT_OK, file_option, refuse_output_clash, warn, write_or_fail


def register(group: click.Group) -> None:
    @group.command("verdicts")
    @click.argument("paths", nargs=-1)
    @click.option(
        "--glob",
        "patterns",
        multiple=True,
        metavar="PATTERN",
        help="Glob for result files (repeatable); only matches ending in .json are read.",
    )
    @click.option("--markdown", is_flag=True, help="Print the markdown tables instead of the console report.")
    @file_option("--json-out", "json_out", "Also write the full summary as JSON to FILE (written atomically).")
    @click.option(
        "--threshold",
        type=click.FloatRange(0.0, 1.0),
        default=0.8,
        show_default=True,
        help="Escalate a decision to a human when its top probability is below this.",
    )
    @click.option(
        "--order",
        "order_text",
        default="allow>confirm>deny",
        show_default=True,
        metavar="A>B>C",
        help="Labels from MOST to LEAST permissive; sets the error direction.",
    )
    def verdicts(paths, patterns, markdown, json_out, threshold, order_text):
        """Score classification result files: agreement (overall and per slice), multi-class Brier,
        reliability bands, escalation at a threshold, error direction, latency and cost.

        PATHS are result files or directories (their *.json files, not recursive). With neither
        PATHS nor --glob, results/*.json in the current directory is read. Files are only read.

        Exit codes: 0 every file scored; 1 some file was bad (each reported as one line naming
        the file; the others are still scored); 2 usage error (bad --order, no files found).
        """
        from evalkit.present import ascii_text
        from evalkit.verdicts import analysis

        try:
            order = analysis.parse_order(order_text)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        files, missing = analysis.find_files(list(paths), list(patterns))
        if not files and not missing:
            where = " ".join(list(paths) + list(patterns)) or "results/*.json"
            raise click.UsageError(f"no result files (*.json) found in: {where}")
        refuse_output_clash([("--json-out", json_out)], inputs=files)
        summary = analysis.score_result_files(list(paths), list(patterns), order=order, threshold=threshold)
        scores = summary["files"]
        if scores:
            click.echo(analysis.render_verdicts_markdown(scores) if markdown else analysis.render_verdicts_text(scores))
        if not markdown:
            click.echo(f"verdicts: files scored {len(scores)}, files with errors {len(summary['errors'])}")
        for err in summary["errors"]:
            warn(ascii_text(err))
        if json_out:
            write_or_fail(json_out, analysis.summary_json(summary))
        sys.exit(EXIT_BAD_INPUT if summary["errors"] else EXIT_OK)
