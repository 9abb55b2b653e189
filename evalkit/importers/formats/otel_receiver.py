"""`evalkit import otel --listen HOST:PORT`: an OTLP/HTTP trace receiver that writes runs as they complete.

It accepts ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` as protobuf
(``application/x-protobuf``, decoded with opentelemetry-proto) or as OTLP JSON
(``application/json``), plain, gzip or deflate, with a ``Content-Length`` or chunked, and answers an
``ExportTraceServiceResponse`` in the same encoding.

Spans are kept per trace, each trace with its own lock. A run is built once its top span arrives —
an ``invoke_agent`` span or a trace's root ends after every span inside it, so an exporter has sent
them by then — with the same mapping as a file import (:mod:`evalkit.importers.formats.otel`), and
written (``DIR/<run_id>.jsonl``, through a temporary file); a span of that run arriving later builds
it again. An agent called by another agent is part of the caller's run, as in a file import: its
own run, written when it ended first, is removed once the caller's arrives (said on stdout). A
request costs the spans it carries, plus one build of each run it completes. A run that
cannot be built (yet: a span of its trace, such as the chat span naming the model, may still come in
a later request, as when an exporter retries) keeps its spans and is built again as more of its
trace arrives: it is answered with OTLP ``partial_success`` as a warning (``rejected_spans`` 0,
``error_message``: why) and said on stderr; the request's other runs are written, and the closing
line counts the runs still not built. At Ctrl-C the spans
whose run never completed (the root never came) are written as a file import would write them.

Memory is bounded, so the receiver can run for days: a trace whose every span belongs to a written
run and that has had no new span for :data:`TRACE_SETTLE` seconds is forgotten (its id is kept, the
last :data:`MAX_FINISHED` of them); a span of a forgotten trace is refused with ``partial_success``
and a warning, never written as a second, partial run. Spans of traces not yet complete are held
up to :data:`MAX_HELD_SPANS`; a request that would exceed that is answered 503 with
``Retry-After`` (OTLP exporters retry it) until traces complete.

Limits, as the OpenTelemetry Collector's receiver has them: a body of at most :data:`MAX_BODY` bytes
on the wire and again after decompression (decompressed incrementally; 413 as soon as it is
exceeded), :data:`HEADER_TIMEOUT` seconds for the request line and headers, :data:`BODY_TIMEOUT`
for the body, :data:`IDLE_TIMEOUT` without a byte, and :data:`MAX_CONNECTIONS` connections at once
(one more is answered 503 and closed at once). Beyond loopback, or with ``--token``, every request
needs the access token (:mod:`evalkit.config.access`); without it, 401.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evalkit.config.access import access_token, presented_token, token_ok
from evalkit.importers.formats import otel
from evalkit.importers.writer import commit, dumps_run, file_name, stage

MAX_BODY = 64 << 20  # bytes, on the wire and decompressed
HEADER_TIMEOUT = 5.0  # seconds from the connection to the end of the headers
BODY_TIMEOUT = 60.0  # seconds from the end of the headers to the end of the body
IDLE_TIMEOUT = 5.0  # seconds without a byte, at any point
MAX_CONNECTIONS = 64
READ_CHUNK = 64 << 10
LINGER = 2.0  # seconds spent draining an unread body after an early answer, so the client reads it
TRACE_SETTLE = 60.0  # seconds without a span after which a trace whose runs are all written is forgotten
MAX_HELD_SPANS = 1_000_000  # spans of traces still held (about 1-2 KB each)
MAX_FINISHED = 100_000  # ids of forgotten traces remembered, to refuse their late spans


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not host or int(port) > 65535:
        raise ValueError(f"--listen needs HOST:PORT, not {address!r}")
    return host.strip("[]"), int(port)


class Full(Exception):
    """The receiver holds :data:`MAX_HELD_SPANS` spans of traces not yet complete."""


class RequestError(Exception):
    """A request answered with ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


# -- the body: framing, size limits, decompression ---------------------------------------------------


def wire_chunks(rfile: Any, headers: Any) -> Iterator[bytes]:
    """The body's bytes as they arrive, from ``Content-Length`` or chunked framing; no header: empty.
    RequestError 400 for bad framing, 413 past :data:`MAX_BODY`."""
    transfer = ",".join(headers.get_all("Transfer-Encoding") or [])
    encodings = [t.strip().lower() for t in transfer.split(",") if t.strip()]
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if encodings != ["chunked"]:
            raise RequestError(400, f"Transfer-Encoding {', '.join(encodings)} is not supported (only chunked)")
        if lengths:
            raise RequestError(400, "a request has Content-Length or Transfer-Encoding: chunked, not both")
        yield from _chunked(rfile)
        return
    if not lengths:
        return
    if len({v.strip() for v in lengths}) != 1 or not re.fullmatch(r"[0-9]{1,19}", lengths[0].strip()):
        shown = ", ".join(lengths)[:40]
        raise RequestError(400, f"Content-Length must be one non-negative integer, not {shown!r}")
    remaining = int(lengths[0])
    if remaining > MAX_BODY:
        raise RequestError(413, f"request body of {remaining} bytes is over the limit of {MAX_BODY}")
    while remaining:
        data = rfile.read(min(READ_CHUNK, remaining))
        if not data:
            raise RequestError(400, "the body ended before Content-Length bytes")
        remaining -= len(data)
        yield data


def _chunked(rfile: Any) -> Iterator[bytes]:
    total = 0
    while True:
        line = rfile.readline(1024)
        size_text = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not re.fullmatch(rb"[0-9A-Fa-f]{1,15}", size_text):
            raise RequestError(400, "bad chunk size line in a chunked body")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > MAX_BODY:
            raise RequestError(413, f"chunked request body is over the limit of {MAX_BODY} bytes")
        while size:
            data = rfile.read(min(READ_CHUNK, size))
            if not data:
                raise RequestError(400, "the body ended inside a chunk")
            size -= len(data)
            yield data
        if rfile.readline(3).rstrip(b"\r\n") != b"":
            raise RequestError(400, "a chunk is not followed by CRLF")
    for _ in range(100):  # trailer fields, read and ignored
        line = rfile.readline(8192)
        if line.strip() == b"":
            return
    raise RequestError(400, "too many trailer fields")


class Inflater:
    """Decompresses a gzip (``wbits`` 31) or zlib/deflate (47: either header) stream incrementally,
    never producing more than ``limit`` bytes: 413 as soon as the output would exceed it."""

    def __init__(self, wbits: int, limit: int = MAX_BODY):
        self.wbits, self.limit = wbits, limit
        self.out = bytearray()
        self._d = zlib.decompressobj(wbits)
        self._started = False

    def feed(self, data: bytes) -> None:
        try:
            while data:
                self._started = True
                self.out += self._d.decompress(data, self.limit - len(self.out) + 1)
                if len(self.out) > self.limit:
                    raise RequestError(413, f"decompressed request body is over the limit of {self.limit} bytes")
                if self._d.eof:  # a gzip stream may hold several members
                    data, self._d, self._started = self._d.unused_data, zlib.decompressobj(self.wbits), False
                else:
                    data = self._d.unconsumed_tail
        except zlib.error as exc:
            raise RequestError(400, f"cannot decompress the body: {exc}") from None

    def finish(self) -> bytearray:
        if self._started and not self._d.eof:
            raise RequestError(400, "the compressed body is truncated")
        return self.out


def read_body(chunks: Iterator[bytes], content_encoding: str) -> bytearray:
    """The decoded body, within :data:`MAX_BODY` after decompression."""
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        body = bytearray()
        for data in chunks:
            body += data
        return body
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 32 + zlib.MAX_WBITS}.get(encoding)
    if wbits is None:
        raise RequestError(415, f"Content-Encoding {encoding!r} is not supported (gzip, deflate or none)")
    inflater = Inflater(wbits)
    for data in chunks:
        inflater.feed(data)
    return inflater.finish()


def decode(body: bytes | bytearray, content_type: str) -> Any:
    """The request as OTLP JSON (a dict); an empty body is an empty request. Protobuf is decoded
    with opentelemetry-proto's own type."""
    if not body.strip():
        return {}
    if content_type.startswith("application/json"):
        return json.loads(body)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(bytes(body))
    # protobuf's JSON mapping writes the ids in base64; otel.hex_id reads both forms
    return json_format.MessageToDict(request)


def response_body(rejected: int, message: str, is_json: bool) -> bytes:
    """An ``ExportTraceServiceResponse``: empty, or with ``partial_success`` when spans were rejected
    or there is something to say (then, as OTLP has it for a warning, ``rejected_spans`` 0)."""
    if is_json:
        if not rejected and not message:
            return b"{}"
        # proto3's JSON mapping writes an int64 as a string
        return json.dumps({"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": message}}).encode()
    if not rejected and not message:
        return b""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTracePartialSuccess,
        ExportTraceServiceResponse,
    )

    partial = ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
    return ExportTraceServiceResponse(partial_success=partial).SerializeToString()


# -- traces → runs -----------------------------------------------------------------------------------


class TraceState:
    """One trace's spans (unlinked), who is whose child, and the runs built from it."""

    __slots__ = ("lock", "spans", "children", "run_of", "failed", "written", "last", "run_at", "said")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last = time.monotonic()  # when its latest span arrived
        self.spans: dict[str, otel.Span] = {}
        self.children: dict[str, list[str]] = {}  # parent span id -> child span ids
        self.run_of: dict[str, str] = {}  # span id -> top span id of the run built with it
        self.failed: dict[str, str] = {}  # top span id -> why its run could not be built
        self.written: dict[str, str] = {}  # run_id -> the text last written
        self.run_at: dict[str, str] = {}  # top span id -> the run_id written for it
        self.said: dict[str, str] = {}  # run_id -> its warning, while its calls record no arguments

    def add(self, span: otel.Span) -> None:
        if span.span_id not in self.spans and span.parent:
            self.children.setdefault(span.parent, []).append(span.span_id)
        self.spans[span.span_id] = span

    def tree(self, top_id: str) -> otel.Span:
        """A linked copy of the span ``top_id`` and everything that has arrived below it."""
        top = replace(self.spans[top_id], children=[])
        made, stack = {top_id: top}, [top]
        while stack:
            node = stack.pop()
            kids = [self.spans[c] for c in self.children.get(node.span_id, ()) if c not in made]
            for kid in sorted(kids, key=lambda s: (s.start, s.end)):  # a tie keeps arrival order, as a file's
                made[kid.span_id] = copy = replace(kid, children=[])
                node.children.append(copy)
                stack.append(copy)
        return top

    def top_for(self, span: otel.Span) -> str | None:
        """The top span of the run ``span`` completes or changes, or None while that run is incomplete."""
        for known in (span.span_id, span.parent):
            if known is not None and known in self.run_of:
                return self.run_of[known]  # a span of a run already built (arrived late or again)
        if span.parent is None or span.operation == "invoke_agent":
            return span.span_id
        return None


class Receiver:
    """The receiver's state, per trace. ``start()`` serves in a thread; :func:`serve` until Ctrl-C."""

    def __init__(
        self,
        address: str,
        out_dir: str,
        options: otel.Options,
        echo: Callable[[str], None] = print,
        warn: Callable[[str], None] | None = None,
        token: str | None = None,
        settle: float = TRACE_SETTLE,
        max_held: int = MAX_HELD_SPANS,
    ):
        self.host, self.port = parse_address(address)
        self.settle, self.max_held = settle, max_held
        self.held = 0  # spans in self.traces
        self.finished: dict[str, None] = {}  # forgotten trace ids, oldest first
        self._next_sweep = 0.0
        self.out_dir, self.options, self.echo = out_dir, options, echo
        self.warn = warn or (lambda line: print(line, file=sys.stderr))
        self.token = access_token(self.host, token)
        self.traces: dict[str, TraceState] = {}
        self._traces_lock = threading.Lock()  # held only to find or add a trace's state
        self._httpd = _Server((self.host, self.port), self)
        self.port = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None
        # the runs written, and those whose calls record no arguments, of the traces forgotten (a
        # trace with a run that could not be built is never forgotten)
        self.forgotten_written = self.forgotten_unrecorded = 0

    def summary(self) -> str:
        """The closing line: the runs written, the runs that could not be built, the runs whose tool
        calls record no arguments; counted from the traces held and those forgotten."""
        written, failed, unrecorded = self.forgotten_written, 0, self.forgotten_unrecorded
        with self._traces_lock:
            for state in self.traces.values():
                with state.lock:
                    written, failed, unrecorded = (
                        written + len(state.written),
                        failed + len(state.failed),
                        unrecorded + len(state.said),
                    )
        said = [f"wrote {written} run(s) to {self.out_dir}"]
        if failed:
            said.append(f"{failed} run(s) could not be built (each said above) and are not in it")
        if unrecorded:
            said.append(f"{unrecorded} run(s) record tool calls without arguments")
        return "; ".join(said)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1/traces"

    def receive(self, spans: list[otel.Span]) -> tuple[int, str]:
        """Keep ``spans`` and write the runs they complete. Returns (spans rejected, what to say): the
        spans rejected are those of traces already forgotten; a run that cannot be built (yet) keeps
        its spans and is said, not rejected. OSError: a run cannot be written."""
        self._sweep()
        by_trace: dict[str, list[otel.Span]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        rejected, reasons = 0, []
        with self._traces_lock:
            late = sorted(t for t in by_trace if t in self.finished)
            if self.held + len(spans) > self.max_held:
                raise Full(f"the receiver holds {self.held} spans of traces not yet complete; retry later")
            self.held += sum(len(by_trace[t]) for t in by_trace if t not in self.finished)
        for trace_id in late:
            count = len(by_trace.pop(trace_id))
            rejected += count
            reason = (
                f"{count} span(s) of trace {trace_id}, which was complete, written and forgotten after "
                f"{self.settle:g} s without a span: not merged"
            )
            reasons.append(reason)
            self.warn(f"warning: {reason}")
        for trace_id in sorted(by_trace):
            with self._traces_lock:
                state = self.traces.setdefault(trace_id, TraceState())
            with state.lock:
                before = len(state.spans)
                n, why = self._receive_trace(state, by_trace[trace_id])
                state.last = time.monotonic()
                repeated = len(by_trace[trace_id]) - (len(state.spans) - before)
            if repeated:  # spans sent again replace themselves
                with self._traces_lock:
                    self.held -= repeated
            rejected += n
            reasons += why
        return rejected, "; ".join(reasons)

    def _sweep(self) -> None:
        """Forget the traces whose runs are all written and that got no span for ``settle`` seconds
        (checked at most once a second)."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + min(1.0, self.settle)
        with self._traces_lock:
            for trace_id, state in list(self.traces.items()):
                if state.last + self.settle > now or not state.lock.acquire(blocking=False):
                    continue
                try:
                    if state.failed or len(state.run_of) < len(state.spans):
                        continue  # a run not built yet: kept for its root, or for flush() at Ctrl-C
                    del self.traces[trace_id]
                    self.held -= len(state.spans)
                    self.forgotten_written += len(state.written)
                    self.forgotten_unrecorded += len(state.said)
                    self.finished[trace_id] = None
                    if len(self.finished) > MAX_FINISHED:
                        del self.finished[next(iter(self.finished))]
                finally:
                    state.lock.release()

    def _receive_trace(self, state: TraceState, spans: list[otel.Span]) -> tuple[int, list[str]]:
        tops: dict[str, None] = {}
        for span in spans:
            state.add(span)
        for span in spans:
            top = state.top_for(span)
            if top is not None:
                tops[top] = None
        new = {span.span_id for span in spans}
        rejected, reasons = 0, []
        for top_id in [t for t in tops if not self._inside(state, t, tops)]:
            tree = state.tree(top_id)
            runs = [tree]
            if tree.operation != "invoke_agent":  # a trace's root: its outermost agents are the runs
                runs = otel._outermost_agents(tree) or [tree]
            for run_top in runs:
                members = [s.span_id for s in otel._walk(run_top)]
                for span_id in members:
                    state.run_of[span_id] = run_top.span_id
                error = self._build_and_write(state, run_top, final=False)
                if not error:
                    self._drop_runs_inside(state, run_top.span_id, members)
                if error:  # its spans are kept, not rejected: a span still to come may complete it
                    count = sum(1 for span_id in members if span_id in new)
                    reasons.append(f"{count} span(s) of {error} (kept: built again as more of its trace arrives)")
        return rejected, reasons

    @staticmethod
    def _inside(state: TraceState, span_id: str, tops: dict[str, None]) -> bool:
        """Whether another of ``tops`` holds ``span_id`` (its run is built as part of that one)."""
        seen = {span_id}
        parent = state.spans[span_id].parent
        while parent is not None and parent in state.spans and parent not in seen:
            if parent in tops:
                return True
            seen.add(parent)
            parent = state.spans[parent].parent
        return False

    def _drop_runs_inside(self, state: TraceState, top_id: str, members: list[str]) -> None:
        """An agent's run written before the agent that called it arrived is part of the outer run,
        as a file import of the trace makes it: its file is removed, and the line says so."""
        outer = state.run_at.get(top_id)
        for span_id in members:
            inner = state.run_at.get(span_id) if span_id != top_id else None
            if inner is None or inner == outer:
                continue
            del state.run_at[span_id]
            state.written.pop(inner, None)
            state.said.pop(inner, None)
            path = Path(self.out_dir) / file_name(inner)
            path.unlink(missing_ok=True)
            self.echo(f"{inner} is part of run {outer}: {path} removed")

    def _build_and_write(self, state: TraceState, top: otel.Span, final: bool = True) -> str | None:
        """Build the run of ``top`` and write it if it changed; the error, or None. Not ``final``
        (spans of its trace may still come): the error is a warning that says the spans are kept."""
        try:
            run = otel.build_run(top, self.options, "otlp-http")
            text = dumps_run(run)
        except (otel.RunError, ValueError, TypeError) as exc:
            message = f"trace {top.trace_id} span {top.span_id}: {exc}"
            if state.failed.get(top.span_id) != message:
                if final:
                    self.warn(f"error: {message}")
                else:
                    self.warn(
                        f"warning: {message} (its spans are kept and the run is built again as more of its "
                        "trace arrives; at the end it counts among the runs that could not be built)"
                    )
            state.failed[top.span_id] = message
            return message
        state.failed.pop(top.span_id, None)
        run_id = run[0]["run_id"]
        state.run_at[top.span_id] = run_id
        if state.written.get(run_id) != text:
            path = self._write(run_id, text)
            state.written[run_id] = text
            self.echo(f"{run_id} -> {path}")
            said = otel.no_arguments(run)
            if said is None:
                state.said.pop(run_id, None)
            elif state.said.get(run_id) != said:
                self.warn(f"warning: {run_id}: {said} (content capture off?)")
                state.said[run_id] = said
        return None

    def _write(self, run_id: str, text: str) -> str:
        (path,) = commit(stage([(file_name(run_id), text)], self.out_dir, "listen"))
        return path

    def flush(self) -> int:
        """Write the runs of the spans that no built run holds (their root never arrived), as a file
        import of their trace converts them, and say so on stderr. Returns how many runs were written."""
        written = 0
        with self._traces_lock:
            traces = sorted(self.traces.items())
        for trace_id, state in traces:
            with state.lock:
                left = {span_id for span_id in state.spans if span_id not in state.run_of}
                if not left:
                    continue
                for top in otel.run_roots([replace(s, children=[]) for s in state.spans.values()]):
                    members = {s.span_id for s in otel._walk(top)}
                    orphans = len(members & left)
                    if not orphans or top.span_id in state.failed:
                        continue
                    for span_id in members:
                        state.run_of[span_id] = top.span_id
                    if self._build_and_write(state, top) is None:
                        written += 1
                        ends = f":{top.trace_id}:{top.span_id}"  # a run_id may carry a session id first
                        run_id = next(r for r in state.written if r.endswith(ends))
                        self.warn(
                            f"trace {trace_id}: {orphans} span(s) whose root span never arrived, written as run "
                            f"{run_id} -> {Path(self.out_dir) / file_name(run_id)} "
                            "(as `evalkit import otel FILE` converts them)"
                        )
        return written

    def start(self) -> Receiver:
        Path(self.out_dir).mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()


# -- HTTP ----------------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most :data:`MAX_CONNECTIONS` at once, each with deadlines: a
    watchdog shuts a connection's socket when its deadline passes, so a client that sends slowly
    cannot hold a thread longer than the deadline, however it spaces its bytes."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], receiver: Receiver):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.receiver = receiver
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._deadlines: dict[socket.socket, float] = {}
        self._holding: set[socket.socket] = set()  # the requests that hold a slot
        self._deadlines_lock = threading.Lock()
        self._closed = threading.Event()
        super().__init__(address, _handler(receiver))
        threading.Thread(target=self._watchdog, daemon=True, name="otlp-deadlines").start()

    def deadline(self, sock: socket.socket, seconds: float | None) -> None:
        with self._deadlines_lock:
            if seconds is None:
                self._deadlines.pop(sock, None)
            else:
                self._deadlines[sock] = time.monotonic() + seconds

    def _watchdog(self) -> None:
        while not self._closed.wait(0.2):
            now = time.monotonic()
            with self._deadlines_lock:
                expired = [s for s, at in self._deadlines.items() if at <= now]
                for sock in expired:
                    del self._deadlines[sock]
            for sock in expired:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # the handler's blocked read returns, and it ends
                except OSError:
                    pass

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            try:
                request.setblocking(False)
                request.send(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: 20\r\nConnection: close\r\n\r\ntoo many connections"
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        self.deadline(request, HEADER_TIMEOUT)
        with self._deadlines_lock:
            self._holding.add(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            # Ctrl-C can arrive while the thread starts, after it took the request: the slot is
            # given back once, whoever gets there first, and the interrupt goes on
            self._release(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request: Any) -> None:
        self.deadline(request, None)
        with self._deadlines_lock:
            held = request in self._holding
            self._holding.discard(request)
        if held:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):  # a dropped connection is the client's business
            self.receiver.warn(f"error: request from {client_address[0]}: {type(exc).__name__}: {exc}")

    def server_close(self) -> None:
        self._closed.set()
        super().server_close()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = IDLE_TIMEOUT  # every read and write of the socket
        server_version = "evalkit-otlp"
        _body_read = True

        def log_message(self, *args: Any) -> None:  # the runs written are what the user sees
            pass

        def _reply(self, code: int, body: bytes, content_type: str, *headers: tuple[str, str]) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def _linger(self) -> None:
            """Drain what the client still sends (for a while), so it reads the answer instead of a reset."""
            try:
                self.connection.shutdown(socket.SHUT_WR)
                self.connection.settimeout(0.5)
                end, drained = time.monotonic() + LINGER, 0
                while time.monotonic() < end and drained < MAX_BODY:
                    data = self.connection.recv(READ_CHUNK)
                    if not data:
                        break
                    drained += len(data)
            except OSError:
                pass

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            receiver._httpd.deadline(self.connection, BODY_TIMEOUT)
            try:
                self._post()
            except RequestError as exc:
                headers = [("WWW-Authenticate", "Bearer")] if exc.status == 401 else []
                self._reply(exc.status, exc.message.encode(), "text/plain; charset=utf-8", *headers)
                if not self._body_read:
                    self._linger()
            except OSError:  # the connection broke or timed out: nobody to answer
                self.close_connection = True

        def _post(self) -> None:
            self._body_read = False
            path, _, query = self.path.partition("?")
            headers = {k.lower(): v for k, v in self.headers.items()}
            if not token_ok(receiver.token, presented_token(headers, query)):
                raise RequestError(401, "missing or wrong access token: send Authorization: Bearer TOKEN")
            if path.rstrip("/") != "/v1/traces":
                raise RequestError(404, "only /v1/traces")
            content_type = (self.headers.get("Content-Type") or "application/x-protobuf").lower()
            is_json = content_type.startswith("application/json")
            if not is_json and not content_type.startswith("application/x-protobuf"):
                raise RequestError(415, "Content-Type must be application/x-protobuf or application/json")
            body = read_body(wire_chunks(self.rfile, self.headers), self.headers.get("Content-Encoding") or "")
            self._body_read = True
            receiver._httpd.deadline(self.connection, None)  # the body is in: the work is not timed
            try:
                spans = list(otel.spans_of(decode(body, content_type)))
            except Exception as exc:  # a request that cannot be parsed, in any way, is the sender's problem
                raise RequestError(400, f"cannot read the request: {str(exc)[:500]}") from None
            del body
            try:
                rejected, message = receiver.receive(spans)
            except Full as exc:
                self._reply(503, str(exc).encode(), "text/plain; charset=utf-8", ("Retry-After", "5"))
                return
            except OSError as exc:  # the output directory: retryable for the exporter
                receiver.warn(f"error: cannot write a run into {receiver.out_dir}: {exc}")
                raise RequestError(503, "cannot write the runs; retry later") from None
            kind = "application/json" if is_json else "application/x-protobuf"
            self._reply(200, response_body(rejected, message[:2000], is_json), kind)

    return Handler


def serve(
    address: str,
    out_dir: str,
    options: otel.Options,
    echo: Callable[[str], None] = print,
    warn: Callable[[str], None] | None = None,
    token: str | None = None,
) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM); then write the runs whose root never arrived, and let the
    interrupt end the command (exit 130, as every interrupted command)."""
    receiver = Receiver(address, out_dir, options, echo, warn, token)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    echo(f"listening on {receiver.url} (OTLP/HTTP, protobuf or JSON); runs -> {out_dir}; Ctrl-C stops")
    if receiver.token is not None:
        echo(
            f"access token: {receiver.token} (send the header Authorization: Bearer TOKEN, e.g. "
            f"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20{receiver.token}, or {receiver.url}?token=TOKEN)"
        )
    # SIGTERM (docker stop, systemd, kill) stops it as Ctrl-C does: the spans already taken are written
    terminate = signal.getsignal(signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        receiver._httpd.serve_forever()
    finally:
        if main:
            signal.signal(signal.SIGTERM, terminate)
        receiver._httpd.server_close()
        receiver.flush()
        receiver.warn(receiver.summary())


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
