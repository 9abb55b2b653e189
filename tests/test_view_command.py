"""The `evalkit view` command: what it says when it starts, and one-line errors before it serves."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

pytest.importorskip("uvicorn")

import judge_helpers as jh
import view_helpers as vh

from evalkit.cli import cli
from evalkit.view.app import allowed_hosts


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return jh.scored_db(tmp_path_factory.mktemp("view-command"), 2)


def test_a_port_in_use_is_a_one_line_usage_error(db):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = CliRunner().invoke(cli, ["view", "--db", db, "--port", str(port)])
    assert r.exit_code == 2
    assert r.output.startswith(f"error: cannot listen on 127.0.0.1:{port}:") and len(r.output.strip().splitlines()) == 1


def test_a_missing_database_and_an_unknown_rubric_are_one_line(db, tmp_path):
    r = CliRunner().invoke(cli, ["view", "--db", str(tmp_path / "none.db")])
    assert r.exit_code == 2 and "no such database" in r.output
    r = CliRunner().invoke(cli, ["view", "--db", db, "--rubric", "nope", "--port", "1"])
    assert r.exit_code in (1, 2) and len(r.output.strip().splitlines()) == 1


def test_it_says_it_serves_this_machine_only(db):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "view", "--db", db, "--port", str(port)],
        env=vh.env_with_checkout(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert line.startswith(f"evalkit view: {db} at http://127.0.0.1:{port}/ (this machine only")


def test_the_hosts_a_server_answers_to():
    assert allowed_hosts("127.0.0.1", 8765) == frozenset({"127.0.0.1:8765", "localhost:8765", "[::1]:8765"})
    assert allowed_hosts("192.168.1.5", 80) == frozenset({"192.168.1.5:80"})
    wildcard = allowed_hosts("0.0.0.0", 8000, ("box.lan",))
    assert "box.lan:8000" in wildcard and "127.0.0.1:8000" in wildcard and "0.0.0.0:8000" not in wildcard
