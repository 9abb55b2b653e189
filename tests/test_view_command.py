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


def test_help_docs_and_ctrl_c_agree_that_a_stopped_viewer_exits_130(db):
    import signal
    import time
    from pathlib import Path

    from evalkit.commands.exitcodes import EXIT_INTERRUPTED

    said = " ".join(CliRunner().invoke(cli, ["view", "--help"]).output.split())
    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "view.md").read_text().split())
    assert f"{EXIT_INTERRUPTED} stopped with Ctrl-C" in said and f"{EXIT_INTERRUPTED} stopped with Ctrl-C" in docs
    assert "0 stopped" not in said.replace("130 stopped", "") and "0 stopped" not in docs.replace("130 stopped", "")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(  # Ctrl-C as a terminal sends it: SIGINT, not ignored
        [sys.executable, "-m", "evalkit", "view", "--db", db, "--port", str(port)],
        env=vh.env_with_checkout(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        proc.stderr.readline()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == EXIT_INTERRUPTED
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
