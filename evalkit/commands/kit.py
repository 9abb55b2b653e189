"""The CLI kit: options shared by many commands (declared once), ``fail()`` and the exit codes.

Like sqlite-utils' ``output_options``: one decorator per shared option, stacked on each command,
so the help text and the default are written once. Only click, the standard library, the view
layer's sanitizer and (inside functions) ``evalkit.output``'s atomic writes and output-path rule,
and the judge layer's error types and output modes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

import click

from evalkit.commands.exitcodes import EXIT_BAD_INPUT, EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from evalkit.present.safe import sanitize

__all__ = [
    "DEFAULT_DB",
    "EXIT_BAD_INPUT",
    "EXIT_GATE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "ExistingFile",
    "config_file_option",
    "db_option",
    "fail",
    "file_option",
    "format_option",
    "judge_call_options",
    "judge_command",
    "judge_failures",
    "output_file",
    "pairings_option",
    "rate_option",
    "refuse_missing_database",
    "refuse_output_clash",
    "resamples_option",
    "warn",
    "workers_option",
    "write_or_fail",
]

DEFAULT_DB = "evalkit.db"


class OutputModeChoice(click.Choice):
    """``auto`` and the names of the judge's output-mode table (``evalkit.judges.output_modes``), read
    when first needed: evalkit never imports the judge layer at module level, and a new mode is one
    record in that table."""

    def __init__(self) -> None:
        super().__init__([])

    @property
    def choices(self):  # type: ignore[override]
        from evalkit.judges.output_modes import AUTO, MODES

        return (AUTO, *MODES)

    @choices.setter
    def choices(self, _value) -> None:  # click's __init__ assigns it; the table is the source
        pass


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``error: message`` (sanitized: it may quote input) on stderr and exit ``code``."""
    click.echo(f"error: {sanitize(message)}", err=True)
    sys.exit(code)


def warn(message: str) -> None:
    """One line on stderr, sanitized (messages quote run ids and paths from the input)."""
    click.echo(sanitize(message), err=True)


class ExistingFile(click.Path):
    """``click.Path(exists=True, dir_okay=False)`` whose missing-file message names what is missing
    (``x.db: no such database``) and, with ``hint``, what to do about it; ``-`` (stdin) passes."""

    def __init__(self, noun: str = "file", hint: str = "", dir_okay: bool = False):
        super().__init__(exists=True, dir_okay=dir_okay, allow_dash=True)
        self.noun, self.hint = noun, hint

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value != "-" and not os.path.lexists(value):
            self.fail(f"{value}: no such {self.noun}{self.hint.format(value=value)}", param, ctx)
        return super().convert(value, param, ctx)


def refuse_output_clash(outputs, *, database=None, inputs=(), writes_database: bool = False) -> None:
    """The output-path rule (evalkit.output.paths.output_clash) as a usage error (exit 2, one line
    naming both files), checked before a command opens anything."""
    from evalkit.output.paths import output_clash

    if problem := output_clash(outputs, database=database, inputs=inputs, writes_database=writes_database):
        raise click.UsageError(problem)


def write_or_fail(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (an existing file is
    replaced whole or kept); a failure is one ``error: PATH: cannot write: ...`` line, exit 1."""
    from evalkit.output.atomic import output_error, write_text_atomic

    try:
        write_text_atomic(path, text)
    except OSError as exc:
        fail(str(output_error(path, exc)))


def output_file(path: str | None):
    """The output ``path`` opened all-or-nothing (evalkit.output.atomic.AtomicFile: ``commit()``
    puts it in place, ``discard()`` leaves an existing file as it was), None for stdout; a missing
    directory is one error line, exit 1."""
    if not path:
        return None
    from evalkit.output.atomic import AtomicFile, OutputError

    try:
        return AtomicFile(path, newline="")
    except OutputError as exc:
        fail(str(exc))


def file_option(flag: str, dest: str, help: str) -> Callable:
    """An output ``FILE`` option (``--out``, ``--json-out``, ``--pairs-out``, ``--db`` of import): a
    path that is not a directory."""
    return click.option(flag, dest, type=click.Path(dir_okay=False), metavar="FILE", help=help)


def config_file_option(*names: str, noun: str, help: str) -> Callable:
    """A config ``FILE`` option that must exist (its missing-file message names ``noun``)."""
    return click.option(*names, type=ExistingFile(noun), metavar="FILE", help=help)


def pairings_option(help: str) -> Callable:
    """``--pairings FILE``: the audit's pairings file (`audit`, `view`)."""
    return config_file_option("--pairings", "config_path", noun="pairings file", help=help)


def rate_option(flag: str, help: str) -> Callable:
    """A rate gate (``--min-safe-pass-rate``, ``--max-unsafe-rate``, ...): a number in [0, 1]."""
    return click.option(flag, type=click.FloatRange(0, 1), help=help)


def resamples_option() -> Callable:
    """``--resamples N`` (default 1000, 0 = no intervals) of the bootstrap, stored as ``n_resamples``."""
    return click.option(
        "--resamples",
        "n_resamples",
        type=click.IntRange(0),
        default=1000,
        show_default=True,
        help="Bootstrap resamples (0 = no intervals).",
    )


def scenarios_option(help: str) -> Callable:
    """``--scenarios FILE`` (repeatable): scenario files for runs that name their scenario
    (docs/scenarios.md); every command that reads runs takes it the same way."""
    return click.option(
        "--scenarios", "scenario_files", multiple=True, type=click.Path(exists=True, dir_okay=False), help=help
    )


def db_option(*, existing: bool = False, help: str = "SQLite database.") -> Callable:
    """``--db FILE`` (default evalkit.db). ``existing=True`` for commands that only read: a missing
    file is a usage error (exit 2) naming it, checked by click before the command runs."""
    # a directory is let through: the opener (evalkit.db) says "is a directory" in one line, exit 1
    path_type = (
        ExistingFile("database", " (score runs first: evalkit score PATH --db {value})", dir_okay=True)
        if existing
        else click.Path()
    )
    return click.option("--db", "db_path", type=path_type, default=DEFAULT_DB, show_default=True, help=help)


def workers_option(help: str = "Worker processes (default: the number of cores).") -> Callable:
    """``--workers N``: at least 1 (0 or less is a usage error, exit 2); None when not given, for the
    command to default to evalkit.engines.default_workers()."""
    return click.option("--workers", type=click.IntRange(min=1), help=help)


def format_option(
    choices: Sequence[str], default: str | None = None, *, help: str = "Output shape.", dest: str = "fmt_name"
) -> Callable:
    """``--format`` with the command's own choices; the first one is the default."""
    return click.option(
        "--format", dest, type=click.Choice(list(choices)), default=default or choices[0], show_default=True, help=help
    )


def judge_command(group: click.Group, name: str, db_help: str) -> Callable:
    """A command that calls judges (`judge`, `probe`): its trajectory PATHS (files, directories,
    ``-``; none: the runs in the database), scored first with their ``--scenarios`` files,
    :func:`judge_call_options` and ``--db``."""

    def declare(function: Callable) -> Callable:
        function = scenarios_option(
            "Scenario file (repeatable) for runs that name a scenario_id, as evalkit score takes it."
        )(function)
        function = judge_call_options(db_option(help=db_help)(function))
        function = click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))(function)
        return group.command(name)(function)

    return declare


def refuse_missing_database(paths: Sequence[str], db_path: str, scenario_files: Sequence[str] = ()) -> None:
    """A command that judges the stored runs when given no PATHS needs its database; ``judge``
    has no use for scenario files then (exit 2)."""
    if not paths and not os.path.exists(db_path):
        raise click.UsageError(f"no database {db_path}: score runs first, or pass trajectory PATHS")
    if scenario_files and not paths:
        raise click.UsageError("--scenarios applies to trajectory PATHS (the stored runs are scored already)")


@contextlib.contextmanager
def judge_failures() -> Iterator[None]:
    """How a command that calls judges ends on a failure, one line each: Ctrl-C (finished calls
    are kept, exit 130), an unknown rubric or judge (exit 2), any other bad input or setting (1)."""
    from evalkit.errors import InputError
    from evalkit.judges.protocol import UnknownJudgeError
    from evalkit.judges.rubrics import RubricError

    usage = (RubricError, UnknownJudgeError)
    try:
        yield
    except ModuleNotFoundError as exc:  # the built-in judge without the judge extra installed
        if (exc.name or "").split(".")[0] not in ("litellm", "tenacity"):
            raise
        fail(
            f"the built-in judge needs the judge extra: pip install 'evalkit[judge]' ({exc.name} is missing)",
            EXIT_USAGE,
        )
    except KeyboardInterrupt:
        fail("interrupted; finished calls are stored, run the same command again to resume", EXIT_INTERRUPTED)
    except usage as exc:
        fail(str(exc), EXIT_USAGE)
    except (ValueError, InputError) as exc:  # JudgeSetupError is a ValueError, ConfigError an InputError
        fail(str(exc))


def judge_call_options(command: Callable) -> Callable:
    """The options of every command that calls judges (`judge`, `probe`), declared once:
    models, rubric, server, structured-output mode, limits, cache and config."""
    options = [
        click.option(
            "--model",
            "models",
            multiple=True,
            required=True,
            help="A litellm model string (openai/gpt-4o-mini, ollama/llama3, openai/<name> with "
            "--api-base) or a plugin judge as PREFIX:model. Repeat to judge with several models.",
        ),
        click.option(
            "--rubric",
            help="Rubric name in prompts/ (e.g. procedure_v1, computer_use_v1) or a .toml path. "
            "Default from configs/judge.toml.",
        ),
        click.option(
            "--concurrency", type=click.IntRange(1, 256), help="Requests in flight at once (default from config)."
        ),
        click.option("--api-base", help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, ...)."),
        click.option("--temperature", type=float, help="Sampling temperature (default from config, 0)."),
        click.option(
            "--output-mode",
            type=OutputModeChoice(),
            help="How structured output is requested (default from config: auto = the mode remembered "
            "for this model and --api-base, else litellm's data, else step down from json_schema).",
        ),
        click.option(
            "--max-input-tokens",
            type=click.IntRange(1),
            help="Prompt token limit (for local models litellm knows nothing about); longer bundles "
            "lose the middle of their transcript.",
        ),
        click.option(
            "--max-cost",
            type=click.FloatRange(0),
            help="Stop starting new calls once this run has spent this many USD.",
        ),
        click.option("--refresh", is_flag=True, help="Ignore cache hits and call again."),
        config_file_option(
            "--judge-config",
            "config_path",
            noun="judge config file",
            help="Judge settings merged onto configs/judge.toml (retries, timeouts, prices); default "
            "$EVALKIT_JUDGE_CONFIG, else .evalkit/judge.toml if present.",
        ),
        click.option(
            "--progress/--no-progress",
            default=None,
            help="Progress bar on stderr (default: when stderr is a terminal).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command
