"""`evalkit check`: validate scenario files and runs, and each scenario against its runs, without scoring."""

from __future__ import annotations

import sys

import click

from evalkit.commands.exitcodes import EXIT_WARNINGS
from evalkit.commands.kit import EXIT_BAD_INPUT, fail, scenarios_option, warn


def register(group: click.Group) -> None:
    @group.command("check")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
    @scenarios_option("Scenario file (repeatable) for runs whose meta names a scenario_id.")
    @click.option("--strict", is_flag=True, help="Exit 2 when there are warnings (for CI).")
    def check(paths, scenario_files, strict):
        """Check scenario files and runs: every problem, one line each, nothing scored.

        PATHS are scenario files (.json, .toml, or .jsonl of scenarios), runs (.jsonl trajectories)
        or directories (their *.jsonl runs). Each problem is printed as ``path:line: where: reason``
        (unknown keys with a suggestion, rules that cannot hold, bad values); then each scenario is
        checked against its runs, and every reference they contradict (a tool never called while a
        similar one is, a key no call has, a value of the wrong JSON type, a required action nothing
        matches, a success variable never reported) is printed as ``path:line: warning: where:
        reason``, as is each unknown key of the runs' records. Exit 0 when there is no problem, 1
        otherwise; with --strict, 2 when there are warnings and no problem; 2 on usage errors too.
        """
        from evalkit.engines.checking import check_paths
        from evalkit.errors import InputError
        from evalkit.present.safe import sanitize
        from evalkit.present.score_output import Repeats

        try:
            report = check_paths(paths, scenario_files)
        except InputError as exc:
            fail(str(exc))
        # the report on stdout, the closing line on stderr: the reader's warnings first (a run whose
        # embedded scenario differs from the file's said once per scenario, as by score)
        repeats = Repeats()
        for message in report.warnings:
            if not repeats.once_per_scenario(message):
                click.echo(sanitize(message))
        for line in repeats.summary():
            click.echo(sanitize(line))
        for problem in report.problems:
            click.echo(str(problem))
        for finding in report.findings:
            click.echo(finding)
        # every warning said counts (--strict fails on it): each run scored against another version
        # of its scenario, each last line a crashed recorder left half-written (the run is incomplete)
        n, w = len(report.problems), len(report.findings) + len(report.warnings)
        said = [f"{n} problem(s)"] if n else []
        if w:
            said.append(f"{w} warning(s)")
        files = f"{report.scenario_files} file(s)"
        warn(
            f"checked {report.scenarios} scenario(s) ({files}) and {report.runs} run(s): "
            + (", ".join(said) if said else "no problems")
        )
        if n:
            sys.exit(EXIT_BAD_INPUT)
        if w and strict:
            sys.exit(EXIT_WARNINGS)
