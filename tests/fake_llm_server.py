"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

The judge tests talk to it through the real litellm client (model ``openai/<name>``,
``api_base=http://127.0.0.1:PORT/v1``), so retries, timeouts and error mapping are exercised
end to end without network access.

Behaviour per request: the next entry of the script queued for the request's model
(``server.script("judge-a", ["429", "ok"])``), else ``server.default``. Behaviours:

- ``ok``: 200 with a JSON reply that satisfies the request's ``response_format`` JSON schema
  (generated from the schema; choices are derived from a hash of the prompt so they are
  deterministic), or the fixed ``server.content`` when set.
- ``429``: rate limited, with ``Retry-After: server.retry_after`` (seconds).
- ``500``: internal server error.
- ``slow``: sleeps ``server.slow_s`` before an ``ok`` reply (drives client timeouts).
- ``malformed``: 200 whose content is not JSON.
- ``schema_violation``: 200 with JSON that misses a required field and has an out-of-range value.
- ``401``: authentication error whose message echoes the key it got (as some providers do).

Every request is recorded (path, headers, parsed body) and counted (``GET /_stats`` returns the
count, for a server run as a separate process); ``server.latency`` adds a fixed delay to every
request (the benchmark's L).

Run standalone: ``python tests/fake_llm_server.py --port 8765 --latency 0.2``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def instance_from_schema(schema: dict, seed: str, root: dict | None = None) -> Any:
    """A deterministic value satisfying the (small, flat) JSON schemas the judge sends."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return instance_from_schema(root.get("$defs", {})[name], seed, root)
    if "enum" in schema:
        choices = schema["enum"]
        pick = int(hashlib.sha256(seed.encode()).hexdigest(), 16) % len(choices)
        return choices[pick]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance_from_schema(schema[key][0], seed, root)
    kind = schema.get("type")
    if kind == "object":
        return {
            name: instance_from_schema(sub, seed + "/" + name, root)
            for name, sub in schema.get("properties", {}).items()
        }
    if kind == "number":
        lo, hi = schema.get("minimum", 0.0), schema.get("maximum", 1.0)
        return lo + 0.75 * (hi - lo)
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    return "Steps 1 and 2 show the agent reading the state before acting (fake judge)."


class FakeLLMServer:
    def __init__(self, latency: float = 0.0, port: int = 0):
        self.latency = latency
        self.default = "ok"
        self.retry_after = 0.05
        self.slow_s = 2.0
        self.content: str | None = None
        self.requests: list[dict] = []
        self._scripts: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()
        # the default listen backlog (5) drops simultaneous connects, which then wait a 1 s SYN retry
        ThreadingHTTPServer.request_queue_size = 256
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def script(self, model: str, behaviours: list[str]) -> None:
        with self._lock:
            self._scripts[model].extend(behaviours)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._scripts.clear()
        self.default = "ok"
        self.content = None
        self.latency = 0.0

    def start(self) -> "FakeLLMServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _next_behaviour(self, model: str) -> str:
        with self._lock:
            queue = self._scripts.get(model)
            return queue.popleft() if queue else self.default

    # -- HTTP ------------------------------------------------------------------------------
    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body go out in separate writes: without this, Nagle + delayed ACK
                # add ~40 ms to every reply and the benchmark would measure the fake, not the judge
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _error(self, code: int, message: str, kind: str, headers=None) -> None:
                self._send(code, {"error": {"message": message, "type": kind, "code": code}}, headers)

            def do_GET(self) -> None:  # noqa: N802 — request count, for a server run as a subprocess
                if self.path.rstrip("/") == "/_stats":
                    return self._send(200, {"count": server.count})
                return self._error(404, f"no route {self.path}", "not_found")

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                model = body.get("model", "")
                behaviour = server._next_behaviour(model)
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers.items()), "body": body,
                         "behaviour": behaviour, "raw": raw.decode("utf-8", "replace")}
                    )
                if server.latency:
                    time.sleep(server.latency)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._error(404, f"no route {self.path}", "not_found")
                if behaviour == "429":
                    return self._error(429, "rate limited (fake)", "rate_limit_exceeded",
                                       {"Retry-After": str(server.retry_after)})
                if behaviour == "500":
                    return self._error(500, "internal error (fake)", "server_error")
                if behaviour == "401":  # echoes the key, as some providers do, to test redaction
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    return self._error(401, f"Incorrect API key provided: {token}", "invalid_request_error")
                if behaviour == "slow":
                    time.sleep(server.slow_s)
                messages = body.get("messages") or [{}]
                seed = json.dumps(messages[-1].get("content", ""), sort_keys=True)
                if behaviour == "malformed":
                    content = "Sure! Here is my grading: {situation_assessment: 3,"
                elif behaviour == "schema_violation":
                    content = json.dumps({"safety": 7, "rationale": "step 1"})
                elif server.content is not None:
                    content = server.content
                else:
                    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
                    value = instance_from_schema(schema, seed) if schema else {"text": "ok"}
                    content = json.dumps(value)
                prompt_chars = sum(len(json.dumps(m.get("content", ""))) for m in messages)
                usage = {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": max(1, len(content) // 4)}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                self._send(200, {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": usage,
                })

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port (printed)")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeLLMServer(latency=args.latency, port=args.port)
    print(f"fake LLM server on {server.api_base}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
