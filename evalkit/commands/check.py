"""`evalkit check`: validate scenario files and runs without scoring them."""

from __future__ import annotations

import sys

import click

from evalkit.commands.kit import EXIT_BAD_INPUT, fail, warn


def register(group: click.Group) -> None:
    @group.command("check")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
    @click.option(
        "--scenarios",
        "scenario_files",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help="Scenario file (repeatable) for runs whose meta names a scenario_id.",
    )
    def check(paths, scenario_files):
        """Check scenario files and runs: every problem, one line each, nothing scored.

        PATHS are scenario files (.json, .toml, or .jsonl of scenarios), runs (.jsonl trajectories)
        or directories (their *.jsonl runs). Each problem is printed as ``path:line: where: reason``
        (unknown keys with a suggestion, rules that cannot hold, bad values). Exit 0 when there is
        none, 1 otherwise, 2 on usage errors.
        """
        from evalkit import api
        from evalkit.errors import InputError

        try:
            report = api.check(paths, scenario_files)
        except InputError as exc:
            fail(str(exc))
        for message in report.warnings:
            warn(message)
        for problem in report.problems:
            click.echo(str(problem))
        n = len(report.problems)
        warn(
            f"checked {report.scenarios} scenario(s) and {report.runs} run(s): "
            + ("no problems" if not n else f"{n} problem(s)")
        )
        if n:
            sys.exit(EXIT_BAD_INPUT)
