"""The `evalkit` command line: a thin shell over the Python API.

Each sub-command lives in its own module under evalkit/commands/ and exposes `register(group)`.
A command imports the layer that does its work inside the command function, so that `evalkit --help`
loads no layer below and `evalkit score` never pays for numpy, scipy or litellm; a command module
itself is imported when its command is asked for (:data:`COMMANDS`), so that `evalkit score` loads
no other command's module.

Exit codes (all commands, evalkit/commands/exitcodes.py): 0 success; 1 some inputs were bad; 3 a quality gate
failed (see the command's help); 2 usage error (bad flags, missing files, unknown names); 130
interrupted; 141 stdout's reader went away (quietly). Every error is one line on stderr,
``error: ...``, usage errors included (a failed write to stdout too: evalkit/commands/stdio.py).
"""

from __future__ import annotations

import importlib
import sys

import click

from evalkit import __version__
from evalkit.commands.exitcodes import EXIT_INTERRUPTED, EXIT_USAGE
from evalkit.present.safe import sanitize

# click >= 8.2 raises this (a UsageError) for a bare group; 8.1 prints the help itself
_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class EvalkitGroup(click.Group):
    """A click group whose usage errors are one line, like every other evalkit error:
    ``error: <what> (see 'evalkit CMD -h')`` and exit 2 (click prints usage, a hint and the error
    over four lines). Other click exceptions and exit codes are click's own."""

    def main(self, *args, **kwargs):
        if not kwargs.pop("standalone_mode", True):
            return super().main(*args, standalone_mode=False, **kwargs)
        # not standalone, click returns the code of --help / --version (click.exceptions.Exit)
        # and raises the rest, which this then reports
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except _NO_ARGS_IS_HELP as exc:
            exc.show()  # the help, as click prints it, not folded into one error line
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            argv = args[0] if args else kwargs.get("args")
            where = exc.ctx.command_path if exc.ctx is not None else self._named(sys.argv[1:] if argv is None else argv)
            click.echo(f"error: {sanitize(exc.format_message())} (see '{where} -h')", err=True)
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except _Interrupted:
            click.echo("error: interrupted; finished work is kept", err=True)
            sys.exit(EXIT_INTERRUPTED)

    def _named(self, argv) -> str:
        """The command ``argv`` names (``evalkit cache clear``): click raises a missing option
        value's error (``--format`` last) without a context to say it."""
        path, command = ["evalkit"], self
        for token in argv:
            command = command.get_command(None, token) if isinstance(command, click.Group) else None
            if command is None:
                break
            path.append(token)
        return " ".join(path)

    def get_command(self, ctx, cmd_name):
        # a name no module is known to register: every module, so that click's "no such command"
        # suggests among all the names
        _register(self, (COMMANDS[cmd_name],) if cmd_name in COMMANDS else COMMAND_MODULES)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx):
        _register(self, COMMAND_MODULES)
        return super().list_commands(ctx)

    def invoke(self, ctx):
        # click would turn Ctrl-C into Abort (exit 1); evalkit exits 130. Raised after the except
        # clause, so that the interrupted command's frames are freed first and its generators (a
        # worker pool, a database batch) close now rather than at interpreter exit.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            pass
        raise _Interrupted


class _Interrupted(Exception):
    """Ctrl-C during a command, carried past click's own KeyboardInterrupt handling."""


# Each command's module: imported, and its register(group) called, the first time the command is
# asked for (every one for `evalkit --help`). A module registers the commands it names here.
COMMANDS = {
    "score": "evalkit.commands.score",
    "judge": "evalkit.commands.judge",
    "cache": "evalkit.commands.judge",
    "probe": "evalkit.commands.probe",
    "audit": "evalkit.commands.audit",
    "annotations": "evalkit.commands.audit",
    "estimate": "evalkit.commands.estimate",
    "verdicts": "evalkit.commands.verdicts",
    "import": "evalkit.commands.imports",
    "report": "evalkit.commands.report",
    "schema": "evalkit.commands.report",
    "export": "evalkit.commands.export",
    "compare": "evalkit.commands.compare",
    "plan": "evalkit.commands.compare",
    "check": "evalkit.commands.check",
    "view": "evalkit.commands.view",
    "review": "evalkit.commands.review",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
_registered: set[str] = set()


def _register(group: click.Group, modules) -> None:
    # A command module that fails to import is a bug to see at once, never a command silently missing.
    for name in modules:
        if name not in _registered:
            importlib.import_module(name).register(group)
            _registered.add(name)


@click.group(cls=EvalkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalkit")
def cli() -> None:
    """evalkit: deterministic scores for agent trajectories, an optional LLM judge, and audits."""


def main() -> None:
    """The executable: standard streams guarded (evalkit.commands.stdio), then the command. The
    last flush of stdout is made here, where its failure is still one line."""
    from evalkit.commands import stdio

    stdio.install()
    try:
        try:
            cli(prog_name="evalkit")
        finally:
            sys.stdout.flush()
    except stdio.StdoutError as exc:
        stdio.stdout_failed(exc)
