"""The review server ``evalkit view`` runs: checked before it starts, so a bad database, rubric,
address or token is said in one line instead of in the server's log."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def view_server(
    db: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    reviewer: str | None = None,
    rubric: str | None = None,
    config: str | None = None,
    extra_hosts: Iterable[str] = (),
    token: str | None = None,
):
    """``evalkit view``: the local review server over ``db``, checked and ready to ``run()`` (a
    uvicorn Server whose ``access_token`` is the token every request must carry: ``token``, else
    a random one beyond loopback, else None; evalkit.config.access). ImportError when the view
    extra is missing; ValueError when ``host:port`` cannot be listened on or ``token`` is not
    URL-safe; InputError (RubricError) when the database or the rubric cannot be used, said before
    the server starts."""

    import uvicorn

    from evalkit.config.access import access_token
    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    required = access_token(host, token)  # a bad --token is said before anything else
    if problem := _cannot_listen(host, port):
        raise ValueError(f"cannot listen on {host}:{port}: {problem}")
    data = ViewData(db, config=config, rubric=rubric)
    try:
        data.open()
        if rubric:
            data.rubric_for([])
    finally:
        data.close()
    app = create_app(
        data, host=host, port=port, reviewer=reviewer, extra_hosts=tuple(extra_hosts), access_token=required
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    )
    server.access_token = required
    return server


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
