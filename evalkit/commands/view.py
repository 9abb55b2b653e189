"""`evalkit view`: a local web viewer over the database, where a person reviews runs (the view extra).

The web stack loads inside the command (evalkit.view.serve).
"""

from __future__ import annotations

import click

from evalkit.commands.kit import db_option, fail, pairings_option

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::")
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
@pairings_option("Pairings file for the disagreements, as for evalkit audit.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another name this server may be addressed by (Host header), e.g. the machine's name with --host 0.0.0.0.",
)
@click.option(
    "--token",
    envvar="EVALKIT_VIEW_TOKEN",
    metavar="TOKEN",
    help="Access token every request must carry (default: a random one when --host is not a loopback "
    "address, none on loopback). Also read from EVALKIT_VIEW_TOKEN.",
)
def view(db_path, host, port, reviewer, rubric, config_path, allow_hosts, token):
    """Browse runs, see why one failed, and record a human verdict: a local web server.

    Pages: Runs (filter, search, sort), a run (transcript with each command's class, the ground
    truth as a checklist with the missing actions, the judge's scores and rationale), the
    Disagreements queue, and a blind review form. Every page has a JSON twin under /api
    (docs/view.md). The database is opened read-only; reviews go to their own tables, which
    `evalkit audit` reads. Beyond loopback every request needs the access token: open the URL it
    prints (http://HOST:PORT/?token=...) once, and the browser keeps it in a cookie. Blind by
    default: pages and JSON hide the scores until reveal=1, which is recorded for the reviewer.
    Exit codes: 130 stopped with Ctrl-C (it serves until stopped); 1 unreadable database or config;
    2 usage error (no such database, view extra missing, port in use, a bad --token).
    """
    from evalkit.errors import InputError
    from evalkit.present import sanitize

    try:
        from evalkit.view.serve import view_server

        server = view_server(
            db_path,
            host=host,
            port=port,
            reviewer=reviewer,
            rubric=rubric,
            config=config_path,
            extra_hosts=allow_hosts,
            token=token,
        )
    except ImportError as exc:
        raise click.UsageError(f"{INSTALL_HINT} ({exc.name} is missing)") from None
    except ValueError as exc:  # host:port cannot be listened on
        raise click.UsageError(str(exc)) from None
    except InputError as exc:  # the database or the rubric, said here rather than inside the server's startup
        fail(str(exc))
    where = "this machine only" if host in LOOPBACK else "REACHABLE FROM OTHER MACHINES"
    if host in WILDCARD:  # every address of the machine: name one it can be reached by
        host = allow_hosts[0] if allow_hosts else "127.0.0.1"
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{port}/" + (f"?token={server.access_token}" if server.access_token else "")
    needs = "; every request needs the access token in this URL" if server.access_token else ""
    click.echo(
        sanitize(f"evalkit view: {db_path} at {url} ({where}{needs}; --host to change). Ctrl-C stops."),
        err=True,
    )
    server.run()
