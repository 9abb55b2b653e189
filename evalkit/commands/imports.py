"""`evalkit import FORMAT FILE... -o DIR`: convert other harnesses' runs into evalkit trajectories.

The importers load inside the command.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalkit.commands.kit import EXIT_BAD_INPUT, fail, file_option, refuse_output_clash, warn, workers_option
from evalkit.errors import InputError
from evalkit.present.safe import sanitize


def register(group: click.Group) -> None:
    group.add_command(import_command)


class ImportCommand(click.Command):
    """``evalkit import``, whose format flags come from the importers' own declarations
    (``cli_options``, merged by ``evalkit.importers.options.merge``): added the first time the command
    parses or shows its help, so ``evalkit --help`` loads no importer."""

    _format_params: list[click.Parameter] | None = None

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if self._format_params is None:
            from evalkit import importers
            from evalkit.importers.options import merge

            self._format_params = [_click_option(m) for m in merge(importers.loaded())]
        # after FORMAT, FILES and -o, before --listen, --db, --workers, --list: the formats' flags first
        params = [*self.params[:3], *self._format_params, *self.params[3:]]
        help_option = self.get_help_option(ctx)
        return [*params, help_option] if help_option is not None else params


def _click_option(merged) -> click.Option:
    option = merged.option
    kind = {
        "float": float,
        "file": click.Path(exists=True, dir_okay=False),
        "choice": click.Choice(list(option.choices)),
        "text": None,
    }[option.kind]
    return click.Option([option.flag, option.name], type=kind, metavar=option.metavar, help=merged.help)


@click.command("import", cls=ImportCommand)
@click.argument("format_name", metavar="FORMAT", required=False)
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Directory for the trajectories.")
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Formats that receive runs live (otel): listen on HOST:PORT and write runs as they complete (no FILE).",
)
@click.option(
    "--token",
    metavar="TOKEN",
    help="With --listen: the access token every request must carry (Authorization: Bearer TOKEN). "
    "Beyond loopback one is always required: a random one is made and printed when not given.",
)
@file_option(
    "--db", "db_path", "Also import the ratings the format provides (inspect: its scorers) into this database."
)
@workers_option("Processes converting inputs (default: the number of cores); the files written are the same.")
@click.option("--list", "list_formats", is_flag=True, help="List the available formats and exit.")
def import_command(
    format_name: str | None,
    files: tuple[str, ...],
    out_dir: str | None,
    listen: str | None,
    token: str | None,
    db_path: str | None,
    workers: int | None,
    list_formats: bool,
    **format_options: object,
) -> None:
    """Convert FILEs recorded by another harness (FORMAT: a name `evalkit import --list` prints, `auto`
    to sniff it from the content, or a plugin's name) into evalkit trajectories, one <run_id>.jsonl per
    run in DIR, ready for `evalkit score`. Formats that record ratings (inspect: its scorers) also
    write DIR/ratings.jsonl and, with --db, import those ratings into the database for `evalkit audit`.

    Each input is all-or-nothing: a bad input leaves no files behind and the others are still
    converted. --workers N converts inputs in N worker processes; only this process puts files in
    place and writes the database, in input order, so the files, the database and the messages are
    the same as with one worker. Exit 0 when every input converted, 1 when some were bad, 2 on usage
    errors.
    """
    from evalkit import importers

    if list_formats:
        for name, origin in importers.available().items():
            click.echo(f"{name}\t{origin}")
        return
    if not format_name:
        raise click.UsageError("missing FORMAT (see --list)")
    if not files and not listen:
        raise click.UsageError("missing FILE")
    if not out_dir:
        raise click.UsageError("missing -o/--out DIR")
    if token is not None and not listen:
        raise click.UsageError("--token is used only with --listen")
    # the directory and the database against the input files (the files in DIR are named later)
    refuse_output_clash([("-o", out_dir), ("--db", db_path)], inputs=[f for f in files if not Path(f).is_dir()])
    try:
        importer = _importer_for(format_name, files, format_options, db=db_path, listen=listen)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if listen:
        try:
            importer.listen(
                listen, out_dir, echo=lambda line: click.echo(sanitize(line)), warn=warn, token=token, **format_options
            )
        except ValueError as exc:  # the address, or the format's options
            raise click.UsageError(str(exc)) from None
        except InputError as exc:  # a file an option names (--scenarios, --results): nothing can be received
            fail(str(exc))
        except OSError as exc:  # the address is taken or cannot be bound
            fail(f"cannot listen on {listen}: {exc.strerror or exc}")
        return
    from evalkit.engines.local import default_workers

    result = importers.import_files(
        importer, list(files), out_dir, db=db_path, workers=workers or default_workers(), **format_options
    )
    for path, written in result.written.items():
        click.echo(sanitize(f"{path}: {len(written)} run{'s' if len(written) != 1 else ''} -> {out_dir}"))
    if result.ratings_file:
        where = f" and {db_path}" if db_path else ""
        click.echo(sanitize(f"{result.ratings} ratings -> {result.ratings_file}{where}"))
    for note in result.notes:
        warn(note)
    for error in result.errors:
        warn(str(error))  # errors quote sample ids and paths from the input
    if result.errors:
        sys.exit(EXIT_BAD_INPUT)


def _importer_for(
    format_name: str,
    files=(),
    options: dict | None = None,
    *,
    db: str | None = None,
    listen: str | None = None,
):
    """The importer of ``format_name``, checked against what ``evalkit import`` was asked: its
    optional dependency present, only options it declares, the ones it requires, ``db`` only for a
    format that records ratings, directories only for a format that expands them, ``listen`` only
    for one that listens and never with files. ValueError: a usage problem, one line."""
    from evalkit import importers

    options = options or {}
    files = list(files)
    try:
        importer = importers.get_importer(format_name)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    require = getattr(importer, "require", None)
    if require is not None:
        try:
            require()
        except Exception as exc:  # the format's optional dependency is missing
            raise ValueError(str(exc)) from None
    accepted = importers.supported_options(importer)
    if accepted is not None:
        for name, value in options.items():
            if value is not None and name not in accepted:
                raise ValueError(f"--{name.replace('_', '-')} is not used by format {format_name}")
    for name in getattr(importer, "required", ()):
        if options.get(name) is None:
            raise ValueError(f"format {format_name} needs --{name.replace('_', '-')}")
    if db is not None and not getattr(importer, "ratings", False):
        raise ValueError(f"--db is not used by format {format_name} (it records no ratings)")
    if not getattr(importer, "expand", None):
        for path in files:
            if Path(path).is_dir():
                raise ValueError(f"{path} is a directory; format {format_name} reads files")
    if listen and (files or not getattr(importer, "listen", None)):
        raise ValueError("--listen takes no FILE" if files else f"--listen is not used by format {format_name}")
    return importer
