"""`evalkit view` started as the user starts it (a child process on a free port) and spoken to over
HTTP on 127.0.0.1: body limits enforced while the body streams in, the access token beyond
loopback (Jupyter's way: ``?token=`` once, then a cookie), and hostile query parameters."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import subprocess
import sys
import time
import urllib.parse

import pytest

pytest.importorskip("uvicorn")

import judge_helpers as jh
import view_helpers as vh

pytestmark = pytest.mark.slow

RUN = "run-001"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(db: str, *options: str, host: str = "127.0.0.1"):
    """`evalkit view --db DB --host HOST --port P OPTIONS` until the block ends: (port, the
    start line it printed, its pid)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "view", "--db", db, "--host", host, "--port", str(port), *options],
        env=vh.env_with_checkout(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"evalkit view did not start: {line} {proc.stderr.read()[-800:]}")
                time.sleep(0.1)
        yield port, line, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """(status, headers as a dict of lower-case names, body text) of one request to 127.0.0.1:port."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and its children (the server runs in the child python)."""
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def raw_exchange(port: int, head: bytes, body_chunks=(), pause: float = 0.0) -> tuple[bytes, int]:
    """Send ``head`` then the chunks (stopping when the server answers or closes); the response
    bytes and how many body bytes were sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(head)
        s.setblocking(False)
        answer = b""
        for chunk in body_chunks:
            with contextlib.suppress(BlockingIOError):
                answer += s.recv(65536)
            if answer:
                break
            try:
                s.setblocking(True)
                s.settimeout(5)
                s.sendall(chunk)
                sent += len(chunk)
                s.setblocking(False)
            except OSError:  # the server closed the connection: it refused the rest
                break
            if pause:
                time.sleep(pause)
        s.setblocking(True)
        s.settimeout(20)
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in answer:
                more = s.recv(65536)
                if not more:
                    break
                answer += more
            # then the body its Content-Length declares (it may come in a later packet)
            head_end = answer.find(b"\r\n\r\n") + 4
            length = re.search(rb"(?im)^content-length:\s*(\d+)\r$", answer[:head_end])
            while length and len(answer) - head_end < int(length.group(1)):
                more = s.recv(65536)
                if not more:
                    break
                answer += more
    return answer, sent


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return jh.scored_db(tmp_path_factory.mktemp("view-served"), 3)


# -- body limits --------------------------------------------------------------------------------


def test_a_huge_form_post_is_refused_413_before_its_body_is_read(db):
    with served(db) as (port, _, pid):
        before = rss_kib(pid)
        head = (
            f"POST /runs/{RUN}/reviews HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {256 << 20}\r\n\r\n"
        ).encode()
        answer, sent = raw_exchange(port, head, [b"a" * (1 << 16)] * (256 << 4), pause=0)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert sent < 64 << 20  # refused long before the 256 MiB were sent
        assert rss_kib(pid) - before < 32 << 10  # and nothing like it was kept


def test_a_chunked_body_without_a_length_is_bounded_while_it_streams(db):
    with served(db) as (port, _, pid):
        before = rss_kib(pid)
        for path, kind in ((f"/runs/{RUN}/reviews", "application/x-www-form-urlencoded"),):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
                "Transfer-Encoding: chunked\r\n\r\n"
            ).encode()
            chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"
            answer, sent = raw_exchange(port, head, [chunk] * 1024)  # 64 MiB offered
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            assert sent < 32 << 20
        assert rss_kib(pid) - before < 32 << 10


def test_the_json_api_checks_the_csrf_token_and_the_length_before_the_body(db):
    with served(db) as (port, _, _pid):
        big = {"Content-Type": "application/json", "Content-Length": str(256 << 20)}
        head = "".join(f"{k}: {v}\r\n" for k, v in big.items())
        answer, _ = raw_exchange(
            port, f"POST /api/runs/{RUN}/reviews HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}\r\n".encode()
        )
        assert answer.startswith(b"HTTP/1.1 403")  # no token: refused before anything is read
        token = json.loads(request(port, "GET", "/api/session")[2])["csrf_token"]
        answer, _ = raw_exchange(
            port,
            f"POST /api/runs/{RUN}/reviews HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-CSRF-Token: {token}\r\n{head}\r\n".encode(),
        )
        assert answer.startswith(b"HTTP/1.1 413") and b"larger than" in answer
        # a length that is no number is a 400 (or the HTTP parser's own 400), never a 500
        for length in ("-1", "abc", "1e9", "\u00b2".encode("utf-8").decode("latin-1")):
            answer, _ = raw_exchange(
                port,
                (
                    f"POST /api/runs/{RUN}/reviews HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-CSRF-Token: {token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
                ).encode("latin-1"),
            )
            assert answer.startswith(b"HTTP/1.1 400"), (length, answer[:200])
        # the server still answers
        assert request(port, "GET", "/runs")[0] == 200


def test_a_json_body_nested_too_deep_to_decode_is_a_400_and_the_server_goes_on(db):
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    with served(db) as (port, _, _pid):
        token = json.loads(request(port, "GET", "/api/session")[2])["csrf_token"]
        headers = {"X-CSRF-Token": token, "Content-Type": "application/json"}
        for path in (f"/api/runs/{RUN}/reviews", "/api/queue/next", "/api/label/samples"):
            status, _, text = request(port, "POST", path, deep, headers)
            assert status == 400 and "nested deeper than 200 levels" in text, (path, status, text[:300])
            status, _, text = request(port, "POST", path, b"[1, 2]", headers)
            assert status == 400 and "must be a JSON object" in text, (path, status, text[:300])
        assert request(port, "GET", "/runs")[0] == 200


# -- the access token beyond loopback -----------------------------------------------------------


def test_beyond_loopback_every_request_needs_the_access_token(db):
    with served(db, "--reviewer", "ann", host="0.0.0.0") as (port, line, _pid):
        assert "REACHABLE FROM OTHER MACHINES" in line
        m = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{32,})", line)
        assert m and int(m.group(1)) == port, line
        token = m.group(2)
        # without the token: nothing, whatever the path (the session's CSRF token, a run, a 404)
        for path in ("/", "/runs", f"/runs/{RUN}", "/api/session", f"/api/runs/{RUN}", "/static/x.css", "/nope"):
            status, _, text = request(port, "GET", path)
            assert status == 401, path
            assert "csrf" not in text and RUN not in text
        assert request(port, "GET", "/api/session?token=wrong")[0] == 403
        assert request(port, "GET", "/api/session", headers={"Cookie": "evalkit_token=wrong"})[0] == 403
        form = urllib.parse.urlencode({"reviewer": "mallory", "rating.outcome": "pass"}).encode()
        status, _, _ = request(
            port, "POST", f"/runs/{RUN}/reviews", form, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert status == 401
        # the printed URL: a redirect to the same URL without the token, setting the cookie
        status, headers, _ = request(port, "GET", f"/runs?model=x&token={token}&page=1")
        assert status == 303 and headers["location"] == "/runs?model=x&page=1"
        cookie = headers["set-cookie"]
        assert cookie.startswith(f"evalkit_token={token};")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
        # the cookie (what the browser sends from then on) or the header opens every page
        jar = {"Cookie": f"evalkit_token={token}"}
        assert request(port, "GET", "/runs", headers=jar)[0] == 200
        assert request(port, "GET", f"/api/runs/{RUN}", headers={"Authorization": f"Bearer {token}"})[0] == 200
        session = json.loads(request(port, "GET", "/api/session", headers=jar)[2])
        assert session["csrf_token"]


def test_the_token_redirect_never_leaves_the_server(db):
    with served(db, "--token", "a-token-of-sixteen-or-more") as (port, line, _pid):
        assert "?token=a-token-of-sixteen-or-more" in line  # loopback with --token: required too
        status, headers, _ = request(port, "GET", "//evil.example/x?token=a-token-of-sixteen-or-more")
        assert status == 303 and headers["location"] == "/evil.example/x"
        assert request(port, "GET", "/runs")[0] == 401


def test_a_bad_token_is_a_usage_error(db):
    from click.testing import CliRunner

    from evalkit.cli import cli

    r = CliRunner().invoke(cli, ["view", "--db", db, "--token", "short;x"])
    assert r.exit_code == 2 and "--token" in r.output and len(r.output.strip().splitlines()) == 1


def test_on_loopback_no_token_is_asked(db):
    with served(db) as (port, line, _pid):
        assert "token" not in line
        assert request(port, "GET", "/runs")[0] == 200
