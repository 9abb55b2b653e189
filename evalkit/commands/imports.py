"""`evalkit import FORMAT FILE... -o DIR`: convert other harnesses' runs into evalkit trajectories.

Only click and the standard library are imported here; the importers load inside the command.
"""
from __future__ import annotations

import sys

import click


def register(group: click.Group) -> None:
    group.add_command(import_command)


@click.command("import")
@click.argument("format_name", metavar="FORMAT", required=False)
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), help="Directory for the trajectories.")
@click.option("--model", help="Model name for the runs (tau-bench files do not record it).")
@click.option(
    "--domain",
    help="tau-bench domain (airline, retail); inferred from the tool names when omitted.",
)
@click.option("--list", "list_formats", is_flag=True, help="List the available formats and exit.")
def import_command(
    format_name: str | None,
    files: tuple[str, ...],
    out_dir: str | None,
    model: str | None,
    domain: str | None,
    list_formats: bool,
) -> None:
    """Convert FILEs recorded by another harness (FORMAT: taubench, openai-messages, or a plugin's
    name) into evalkit trajectories, one <run_id>.jsonl per run in DIR, ready for `evalkit score`.

    Each input is all-or-nothing: a bad input leaves no files behind and the others are still
    converted. Exit 0 when every input converted, 1 when some were bad, 2 on usage errors.
    """
    from evalkit import importers

    if list_formats:
        for name, origin in importers.available().items():
            click.echo(f"{name}\t{origin}")
        return
    if not format_name:
        raise click.UsageError("missing FORMAT (see --list)")
    if not files:
        raise click.UsageError("missing FILE")
    if not out_dir:
        raise click.UsageError("missing -o/--out DIR")
    try:
        importer = importers.get_importer(format_name)
    except KeyError as exc:
        raise click.UsageError(str(exc.args[0])) from None
    options = {"model": model, "domain": domain}
    accepted = importers.supported_options(importer)
    if accepted is not None:
        for name, value in options.items():
            if value is not None and name not in accepted:
                raise click.UsageError(f"--{name} is not used by format {format_name}")
    for name in getattr(importer, "required", ()):
        if options.get(name) is None:
            raise click.UsageError(f"format {format_name} needs --{name}")
    result = importers.import_files(importer, files, out_dir, **options)
    for path, written in result.written.items():
        click.echo(f"{path}: {len(written)} run{'s' if len(written) != 1 else ''} -> {out_dir}")
    for error in result.errors:
        click.echo(str(error), err=True)
    if result.errors:
        sys.exit(1)
