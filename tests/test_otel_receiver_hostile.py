"""`evalkit import otel --listen` against clients that lie, bomb or stall, over raw sockets: the
decoded-size limit while inflating (413, bounded memory), Content-Length that is not a length,
chunked and empty bodies, header and body deadlines, and a bounded number of connections."""

from __future__ import annotations

import gzip
import json
import socket
import struct
import time
import zlib

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("opentelemetry.proto")

import otel_json as oj  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse  # noqa: E402
from otel_listen_helpers import Listener, post, raw_request, wait_for  # noqa: E402

from evalkit.commands.exitcodes import EXIT_INTERRUPTED  # noqa: E402
from evalkit.importers.formats.otel_receiver import HEADER_TIMEOUT, IDLE_TIMEOUT, MAX_BODY, MAX_CONNECTIONS  # noqa: E402

TRACE = oj.body(oj.agent(5), oj.chat(5, 2, 1), oj.tool(5, 3, 1))


@pytest.fixture
def live(tmp_path):
    listener = Listener(tmp_path / "live")
    yield listener
    listener.kill()


def gzip_bomb(mib: int) -> bytes:
    """A valid gzip stream of ``mib`` MiB of zeros, about 1 KiB per MiB: the compressor's state is
    reset after each MiB (a full flush), so every MiB after the first compresses to the same block."""
    zeros = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + block * (mib - 1) + c.flush()[:-8] + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def chunked(body: bytes, size: int = 4096) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\nX-Trailer: 1\r\n\r\n"


def _head(*lines: str) -> bytes:
    return "\r\n".join(["POST /v1/traces HTTP/1.1", "Host: 127.0.0.1", *lines]).encode()


def test_a_gzip_body_inflating_to_600_mib_is_refused_413_while_inflating(live):
    bomb = gzip_bomb(600)
    assert len(bomb) < 700 << 10 and len(gzip.decompress(gzip_bomb(3))) == 3 << 20
    status, _, answer = post(live.port, bomb, "Content-Encoding: gzip")
    assert status == 413 and f"decompressed request body is over the limit of {MAX_BODY} bytes".encode() in answer
    # the same through chunked framing
    head = _head("Content-Type: application/json", "Content-Encoding: gzip", "Transfer-Encoding: chunked")
    assert raw_request(live.port, head, chunked(bomb, 65536))[0] == 413
    peak_mib = live.status("VmHWM") / 1024
    assert peak_mib < 350, f"peak resident {peak_mib:.0f} MiB"  # inflating it whole would take 600+
    assert post(live.port, gzip.compress(TRACE), "Content-Encoding: gzip")[0] == 200  # still serving
    assert post(live.port, zlib.compress(TRACE), "Content-Encoding: deflate")[0] == 200
    assert len(live.runs()) == 1
    code, _, err = live.stop()
    assert code == EXIT_INTERRUPTED and "Traceback" not in err


def test_a_content_length_over_the_limit_is_413_before_the_body_is_read(live):
    status, _, answer = raw_request(live.port, _head(f"Content-Length: {MAX_BODY + 1}"), b"x" * 1000)
    assert status == 413 and b"over the limit" in answer


@pytest.mark.parametrize("length", ["-1", "abc", "\u00b2", "10, 20", "1e3"])
def test_a_content_length_that_is_not_a_length_is_400_with_a_message(live, length):
    head = _head("Content-Type: application/json", f"Content-Length: {length}")
    status, headers, answer = raw_request(live.port, head.decode().encode("utf-8"), TRACE)
    assert status == 400 and headers["content-type"].startswith("text/plain")
    assert answer.startswith(b"Content-Length must be one non-negative integer, not")
    assert post(live.port, TRACE)[0] == 200  # the connection was answered and the server goes on
    code, _, err = live.stop()
    # nothing but the closing line and the interrupt: the 400 left no error behind
    assert (
        code == EXIT_INTERRUPTED and err == f"wrote 1 run(s) to {live.out}\nerror: interrupted; finished work is kept\n"
    )


def test_a_chunked_body_is_accepted_with_the_same_limit(live):
    head = _head("Content-Type: application/json", "Transfer-Encoding: chunked")
    status, _, answer = raw_request(live.port, head, chunked(TRACE, 100))
    assert (status, answer) == (200, b"{}")
    (run,) = live.runs().values()
    assert [e["name"] for e in run if e["type"] == "tool_call"] == ["lookup"]
    bad = raw_request(live.port, head, b"zz\r\n" + TRACE)
    assert bad[0] == 400 and bad[2] == b"bad chunk size line in a chunked body"
    both = raw_request(live.port, head + b"\r\nContent-Length: 5", chunked(TRACE))
    assert both[0] == 400 and b"not both" in both[2]


def test_an_empty_body_is_an_empty_export(live):
    assert post(live.port, b"")[:1] == (200,) and post(live.port, b"")[2] == b"{}"
    status, headers, answer = raw_request(live.port, _head("Content-Type: application/x-protobuf"))  # no length
    assert status == 200 and headers["content-type"] == "application/x-protobuf" and answer == b""
    response = ExportTraceServiceResponse()
    response.ParseFromString(answer)
    assert not response.HasField("partial_success")
    assert live.runs() == {}


def test_half_sent_requests_are_cut_at_the_deadlines_and_connections_are_bounded(live):
    baseline = live.status("Threads")
    stalled: list[socket.socket] = []
    started = time.monotonic()
    try:
        for i in range(320):
            sock = socket.create_connection(("127.0.0.1", live.port), timeout=10)
            if i % 2:  # the headers, then half a body
                sock.sendall(_head("Content-Type: application/json", "Content-Length: 1000") + b"\r\n\r\n{")
            else:  # half the headers
                sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            stalled.append(sock)
        threads = live.status("Threads")
        assert threads <= baseline + MAX_CONNECTIONS + 1, threads

        def closed(sock: socket.socket) -> bool:
            sock.setblocking(False)
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                return False
            except ConnectionResetError:
                return True
            return data == b"" or data.startswith(b"HTTP/1.1 503")

        # those beyond the limit are answered 503 and closed at once
        assert wait_for(lambda: sum(map(closed, stalled)) >= 320 - MAX_CONNECTIONS, timeout=3)
        # the rest when their deadline passes, however long the client would wait
        open_left = lambda: [s for s in stalled if not closed(s)]  # noqa: E731
        assert wait_for(lambda: not open_left(), timeout=max(HEADER_TIMEOUT, IDLE_TIMEOUT) + 5)
        assert time.monotonic() - started < max(HEADER_TIMEOUT, IDLE_TIMEOUT) + 8
        assert wait_for(lambda: live.status("Threads") <= baseline, timeout=3)
    finally:
        for sock in stalled:
            sock.close()
    status, _, answer = post(live.port, TRACE)
    assert (status, answer) == (200, b"{}")
    code, _, err = live.stop()
    assert code == EXIT_INTERRUPTED and "Traceback" not in err


def test_a_client_that_trickles_its_headers_is_cut_at_the_header_deadline(live):
    with socket.create_connection(("127.0.0.1", live.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\n")
        started = time.monotonic()
        cut = None
        for i in range(40):  # a byte every 0.5 s never trips the idle timeout; the deadline does
            try:
                sock.sendall(b"X-Slow-%d: 1\r\n" % i)
                time.sleep(0.5)
            except (BrokenPipeError, ConnectionResetError):
                cut = time.monotonic() - started
                break
        assert cut is not None and cut < HEADER_TIMEOUT + 2, cut
    assert json.loads(post(live.port, b"")[2]) == {}
