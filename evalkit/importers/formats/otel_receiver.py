"""`evalkit import otel --listen HOST:PORT`: an OTLP/HTTP trace receiver that writes runs as they complete.

It accepts ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` as protobuf
(``application/x-protobuf``, decoded with opentelemetry-proto) or as OTLP JSON
(``application/json``), gzip-compressed or not, and answers an empty ``ExportTraceServiceResponse``
in the same encoding. Spans are kept per trace; a run is written (``DIR/<run_id>.jsonl``, through a
temporary file) once its top span has arrived — an ``invoke_agent`` span or a trace's root ends after
every span inside it, so an exporter has sent them by then — and written again, with the same
mapping as a file import (:mod:`evalkit.importers.formats.otel`), if more of its spans arrive later.
A request that cannot be read is answered 400 and changes nothing.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evalkit.importers.formats import otel
from evalkit.importers.writer import commit, dumps_run, file_name, stage

MAX_BODY = 64 << 20


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--listen needs HOST:PORT, not {address!r}")
    return host.strip("[]"), int(port)


def decode(body: bytes, content_type: str) -> Any:
    """The request as OTLP JSON (a dict). Protobuf is decoded with opentelemetry-proto's own type."""
    if content_type.startswith("application/json"):
        return json.loads(body)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    # protobuf's JSON mapping writes the ids in base64; otel.hex_id reads both forms
    return json_format.MessageToDict(request)


class Receiver:
    """The receiver's state: spans per trace, the runs written. ``start()`` serves in a thread."""

    def __init__(self, address: str, out_dir: str, options: otel.Options, echo: Callable[[str], None] = print):
        self.host, self.port = parse_address(address)
        self.out_dir, self.options, self.echo = out_dir, options, echo
        self.traces: dict[str, dict[str, otel.Span]] = {}
        self.written: dict[str, str] = {}  # run_id -> text last written
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((self.host, self.port), self._handler())
        self.port = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1/traces"

    def receive(self, request: Any) -> None:
        spans = list(otel.spans_of(request))  # ValueError: nothing is kept
        with self._lock:
            touched = []
            for span in spans:
                trace = self.traces.setdefault(span.trace_id, {})
                trace[span.span_id] = span
                if span.trace_id not in touched:
                    touched.append(span.trace_id)
            for trace_id in touched:
                self._write_trace(trace_id)

    def _write_trace(self, trace_id: str) -> None:
        fresh = [
            otel.Span(**{k: v for k, v in vars(s).items() if k != "children"}) for s in self.traces[trace_id].values()
        ]
        for top in otel.run_roots(fresh):
            if top.parent is not None and top.operation != "invoke_agent":
                continue  # the trace's root has not arrived: the run is not complete
            try:
                run = otel.build_run(top, self.options, "otlp-http")
            except otel.RunError as exc:
                message = f"trace {top.trace_id} span {top.span_id}: {exc}"
                if message not in self.errors:
                    self.errors.append(message)
                    self.echo(f"error: {message}")
                continue
            run_id = run[0]["run_id"]
            text = dumps_run(run)
            if self.written.get(run_id) == text:
                continue
            (path,) = commit(stage([(file_name(run_id), text)], self.out_dir, "listen"))
            self.written[run_id] = text
            self.echo(f"{run_id} -> {path}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # the runs written are what the user sees
                pass

            def _reply(self, code: int, body: bytes, content_type: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                content_type = (self.headers.get("Content-Type") or "application/x-protobuf").lower()
                is_json = content_type.startswith("application/json")
                if self.path.rstrip("/") != "/v1/traces":
                    return self._reply(404, b"only /v1/traces", "text/plain")
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    return self._reply(413, b"request too large", "text/plain")
                body = self.rfile.read(length)
                try:
                    if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                        body = gzip.decompress(body)
                    receiver.receive(decode(body, content_type))
                except Exception as exc:  # a malformed request of any kind is the sender's problem
                    return self._reply(400, f"cannot read the request: {exc}".encode(), "text/plain")
                self._reply(200, b"{}" if is_json else b"", "application/json" if is_json else "application/x-protobuf")

        return Handler

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


def serve(address: str, out_dir: str, options: otel.Options, echo: Callable[[str], None] = print) -> None:
    """Serve until interrupted (Ctrl-C)."""
    receiver = Receiver(address, out_dir, options, echo)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    echo(f"listening on {receiver.url} (OTLP/HTTP, protobuf or JSON); runs -> {out_dir}; Ctrl-C stops")
    try:
        receiver._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        receiver._httpd.server_close()
