"""`evalkit view`: a local web viewer over the database, where a person reviews runs (the view extra).

Only click and the standard library are imported here; the web stack loads inside the command.
"""

from __future__ import annotations

import click

from evalkit.commands.kit import ExistingFile, db_option, fail

LOOPBACK = ("127.0.0.1", "localhost", "::1")
INSTALL_HINT = "evalkit view needs the view extra: pip install 'evalkit[view]'"


def register(group: click.Group) -> None:
    group.add_command(view)


@click.command("view")
@db_option(existing=True, help="SQLite database to show (read-only, except that reviews are added to it).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but a loopback address lets other machines read the database.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port to listen on.")
@click.option("--reviewer", metavar="NAME", help="Your name, recorded with every review (the form asks otherwise).")
@click.option(
    "--rubric",
    metavar="R",
    help="Rubric of the review form (name in prompts/ or a .toml path; default: "
    "the rubric of the run's annotations, else the judge config's).",
)
@click.option(
    "--pairings",
    "--config",
    "config_path",
    type=ExistingFile("pairings file"),
    metavar="FILE",
    help="Pairings file for the disagreements, as for evalkit audit (--config is the old name).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another name this server may be addressed by (Host header), e.g. the machine's name with --host 0.0.0.0.",
)
def view(db_path, host, port, reviewer, rubric, config_path, allow_hosts):
    """Browse runs, see why one failed, and record a human verdict: a local web server.

    Pages: Runs (filter, search, sort), a run (transcript with each command's class, the ground
    truth as a checklist with the missing actions, the judge's scores and rationale), the
    Disagreements queue, and a blind review form. Every page has a JSON twin under /api
    (docs/view.md). The database is opened read-only; reviews go to their own tables, which
    `evalkit audit` reads. Exit codes: 0 stopped with Ctrl-C; 1 unreadable database or config;
    2 usage error (no such database, view extra missing, port in use).
    """
    try:
        import uvicorn

        from evalkit.view.app import create_app
        from evalkit.view.queries import ViewData
    except ImportError as exc:
        raise click.UsageError(f"{INSTALL_HINT} ({exc.name} is missing)") from None
    from evalkit.errors import InputError
    from evalkit.judges.rubrics import RubricError
    from evalkit.present.safe import sanitize

    problem = _cannot_listen(host, port)
    if problem:
        raise click.UsageError(f"cannot listen on {host}:{port}: {problem}")
    data = ViewData(db_path, config=config_path, rubric=rubric)
    try:  # fail here, in one line, rather than inside the server's startup
        data.open()
        if rubric:
            data.rubric_for([])
    except (InputError, RubricError) as exc:
        fail(str(exc))
    finally:
        data.close()
    where = "this machine only" if host in LOOPBACK else "REACHABLE FROM OTHER MACHINES"
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(
        sanitize(f"evalkit view: {db_path} at http://{shown_host}:{port}/ ({where}; --host to change). Ctrl-C stops."),
        err=True,
    )
    app = create_app(data, host=host, port=port, reviewer=reviewer, extra_hosts=tuple(allow_hosts))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run()


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, not this machine's), else None: said in one
    line before the server starts, instead of in the server's log."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return exc.strerror or str(exc)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None
