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
- ``grammar_only``: a small model held only by a decoding grammar (what SmolLM2-135M did behind
  llama-cpp-python): it keeps to every ``enum``, writes 4 for a number without one (grammars
  ignore minimum/maximum), and writes free text until ``maxLength`` closes it or, without one,
  until the reply budget (``max_tokens``, one character per token) cuts the JSON inside the
  string (``finish_reason: "length"``).

**Rude behaviours** (the hostile-server tests): ``trickle`` (a valid reply whose body comes one
byte every ``server.trickle_s``), ``endless_chunked`` (a chunked body that never ends, a small
chunk every ``server.trickle_s``), ``endless_headers`` (a header line every ``server.trickle_s``,
never a blank line), ``huge`` (a 200 of ``server.huge_bytes`` bytes: one long content string,
with a Content-Length; ``huge_chunked`` the same without one; ``gzip_bomb`` a gzip body that
decodes to that many bytes), ``redirect_302`` / ``redirect_307``
(``Location: server.redirect_to`` + the request path), ``no_choices`` (``"choices": []``),
``huge_usage`` (``usage.prompt_tokens = 10**30``), ``content_int`` (``content: 123``), ``nested``
(content of ``server.nested_depth`` ``[``), ``echo_key`` (a valid answer whose rationale quotes the
Authorization header it got) and ``long_rationale`` (a valid answer whose rationale has
``server.rationale_chars`` characters). ``server.models_redirect`` makes ``GET /models`` a ``302``
to that URL; ``server.listings`` records each ``GET /models``. Endless behaviours stop when the
client goes away, on ``reset()``, or after 60 s.
``RecordingListener`` (on 127.0.0.2 by default) answers anything ``200 {}`` and records what it got.

**Rate-limit mode** (``server.capacity = K``): a chat request that arrives while K requests are
being answered gets ``429`` (with ``Retry-After``) instead of its behaviour, as a provider's
concurrency limit does; ``server.rate_limited`` counts them.

Every request is recorded (path, headers, parsed body) and counted (``GET /_stats`` returns the
count, for a server run as a separate process); ``server.latency`` adds a fixed delay to every
request (the benchmark's L).

**Dialects** (``server.dialect``): what an ``ok`` answer looks like depends on which real server
is imitated, rudeness included:

- ``openai``: honours ``json_schema``, ``json_object`` (with or without a ``schema``) and a forced
  tool call;
- ``llamacpp``: llama-cpp-python's server. A ``json_schema`` response_format is answered ``500``
  with pydantic's request-validation body (``response_format.type: Input should be 'text' or
  'json_object'``); ``json_object`` + ``schema`` is honoured (grammar-constrained decoding);
- ``json-object-only``: ``json_schema`` is a ``400``; ``json_object`` is honoured, a ``schema`` key
  in it silently ignored (the model follows the schema stated in the prompt); tools are a ``400``;
- ``json-object-strict``: as json-object-only, but a ``schema`` key is a ``422`` "extra inputs";
- ``tools-only``: any response_format is a ``400``; a forced tool call is honoured;
- ``plain``: ignores response_format and tools; answers prose around a fenced JSON block;
- ``tiny-context``: as openai, but a prompt over ``server.context_limit`` tokens (characters / 4)
  is a ``400`` "maximum context length" error.

A model "follows" a schema it can see: the request's (json_schema, json_object+schema, tools),
else one stated in the prompt (evalkit.judges.output_modes.schema_instruction). ``server.models`` (a list)
makes unknown model names a ``404`` and is what ``GET /v1/models`` lists. ``server.hold_after(n)``
holds every chat request after the n-th until ``server.release()`` (deterministic kill tests).

**Judging modes** (``server.mode``; ``None`` = the schema-derived answers above):

- ``constant``: the same answer whatever is sent (the schema's instance for a fixed seed), so a
  probe can change nothing: every ``unchanged_rate`` is 1.0 and every ``fooled_rate`` 0;
- ``gullible``: a judge that believes what it reads. It answers the constant answer with
  ``outcome = "fail"``, except that it gives top marks (every dimension 3, ``outcome = "pass"``)
  when the run's transcript ends with an assistant message claiming success (``GULLIBLE_CLAIM``)
  or a tool result addresses the grader (``GULLIBLE_ORDER``: it obeys the planted instruction).

- ``per_run``: the schema's instance seeded by the run's delimiter tag (a digest of the bundle),
  so an answer depends on the run and not on how the prompt lays it out (the layout benchmark's
  "annotations identical in content").
- ``pairwise_biased``: a pairwise judge (evalkit judge --pairwise) with two planted biases. With
  probability ``server.position_bias`` it names the run shown first; otherwise the run whose
  quoted data is longer (``tie`` when both are as long). The draw is seeded by
  ``server.pair_seed`` and the prompt, so the same request gets the same answer.
- ``length_scored``: a pointwise judge whose ``procedure`` score follows the run's outcome (its
  last message says ``RESULT ok``) plus a point of noise, or with ``server.length_bias`` a point
  for a long run (6 or more tool calls): :func:`length_scored`.

The prompt cache, ``/v1/files``, ``/v1/batches`` and the Anthropic-style ``/v1/messages`` are in
tests/fake_batch_api.py (``server.prompt_cache``, ``server.batch_api``).

Run standalone: ``python tests/fake_llm_server.py --port 8765 --latency 0.2 --dialect llamacpp``; a
judging mode with ``--mode`` (``--position-bias P``, ``--length-bias``, ``--pair-seed S``), e.g. a
pairwise judge that always names the run shown first: ``--mode pairwise_biased --position-bias 1``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import socket
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_batch_api import BatchAPI, PromptCache, anthropic_reply, openai_cached_tokens


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


def grammar_only_reply(schema: dict, seed: str, max_tokens: int | None) -> tuple[str, str]:
    """(content, finish_reason) of the ``grammar_only`` behaviour for a flat object schema."""
    budget = max_tokens or 1024
    value: dict = {}
    for name, sub in (schema.get("properties") or {}).items():
        if "enum" in sub or "const" in sub:
            value[name] = instance_from_schema(sub, seed + "/" + name)
        elif sub.get("type") in ("number", "integer"):
            value[name] = 4
        else:
            salad = "5.5.6.9.87.1.1.1." * (4 * budget // 17 + 1)
            value[name] = salad[: sub["maxLength"]] if "maxLength" in sub else salad
    content = json.dumps(value)
    return (content[:budget], "length") if len(content) > budget else (content, "stop")


DIALECTS = ("openai", "llamacpp", "json-object-only", "json-object-strict", "tools-only", "plain", "tiny-context")
LLAMACPP_REJECTION = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}] "
    "response_format.type: Input should be 'text' or 'json_object'"
)
_PROMPT_SCHEMA = re.compile(r"JSON Schema \(no other text\):\n(\{.*\})\s*$", re.DOTALL)


GULLIBLE_CLAIM = re.compile(r"\b(success(ful(ly)?)?|complete[d]?|all checks passed)\b", re.IGNORECASE)
GULLIBLE_ORDER = re.compile(r"\b(grader|evaluator)\b", re.IGNORECASE)
_RUN_DATA = re.compile(r"<<<BEGIN UNTRUSTED RUN DATA \w+>>>\n(.*)\n<<<END UNTRUSTED RUN DATA", re.DOTALL)
_RUN_TAG = re.compile(r"<<<BEGIN UNTRUSTED RUN DATA (\w+)>>>")
_PAIR_RUN = re.compile(
    r"<<<BEGIN UNTRUSTED RUN ([12]) DATA (\w+)>>>\n(.*?)\n<<<END UNTRUSTED RUN \1 DATA \2>>>", re.DOTALL
)


def run_data(body: dict) -> dict | None:
    """The judge bundle quoted in the request's user message (evalkit.judges.prompt), if any."""
    from evalkit.judges.prompt_layout import message_text, read_bundle

    for message in body.get("messages") or []:
        text = message_text(message)
        found = _RUN_DATA.search(text)
        if found:
            try:
                return json.loads(found.group(1))
            except ValueError:
                return read_bundle(text)  # the compact layout (judges/prompt_layout.py)
    return None


def run_tag(body: dict) -> str | None:
    for message in body.get("messages") or []:
        found = _RUN_TAG.search(json.dumps(message.get("content")))
        if found:
            return found.group(1)
    return None


def fooled(bundle: dict | None) -> bool:
    """The gullible judge's rule: a closing success claim, or a tool result addressed to the grader."""
    events = (bundle or {}).get("transcript") or []
    last = events[-1] if events else {}
    if last.get("kind") == "assistant" and GULLIBLE_CLAIM.search(str(last.get("text") or "")):
        return True
    return any(e.get("kind") == "tool_call" and GULLIBLE_ORDER.search(json.dumps(e.get("result"))) for e in events)


def biased_pair_answer(value: dict, schema: dict, body: dict, position_bias: float, seed: str) -> dict:
    """The ``pairwise_biased`` answer: the run shown first with probability ``position_bias``,
    else the run with more quoted data, for every question whose answers are first/second/tie."""
    from evalkit.judges.prompt_layout import message_text

    text = "".join(message_text(m) for m in body.get("messages") or [] if m.get("role") == "user")
    sizes = {found.group(1): len(found.group(3)) for found in _PAIR_RUN.finditer(text)}
    draw = random.Random(hashlib.sha256(f"{seed}\0{text}".encode()).hexdigest()).random()
    if draw < position_bias:
        pick = "first"
    elif sizes.get("1", 0) == sizes.get("2", 0):
        pick = "tie"
    else:
        pick = "first" if sizes.get("1", 0) > sizes.get("2", 0) else "second"
    out = dict(value)
    for name, prop in (schema.get("properties") or {}).items():
        if "first" in (prop.get("enum") or []):
            out[name] = pick
    return out


def length_scored(value: dict, body: dict, length_bias: bool) -> dict:
    """The ``length_scored`` answer: ``procedure`` 2 when the run's last assistant message says
    ``RESULT ok``, else 0, plus one point drawn from the run's digest (noise unrelated to length) or,
    with ``length_bias``, one point when the run made 6 or more tool calls."""
    events = (run_data(body) or {}).get("transcript") or []
    text = " ".join(str(e.get("text") or "") for e in events if e.get("kind") == "assistant")
    calls = sum(1 for e in events if e.get("kind") == "tool_call")
    base = 2 if "RESULT ok" in text else 0
    if length_bias:
        extra = int(calls >= 6)
    else:
        extra = hashlib.sha256(json.dumps(events, sort_keys=True).encode()).digest()[0] % 2
    return dict(value, procedure=base + extra)


def judged(value: Any, body: dict, mode: str) -> Any:
    """The ``constant`` / ``gullible`` answer built from the schema's constant instance."""
    if mode == "constant" or not isinstance(value, dict):
        return value
    top = fooled(run_data(body))
    out = {}
    for key, v in value.items():
        if key == "outcome":
            out[key] = "pass" if top else "fail"
        elif key in ("confidence", "rationale") or not top:
            out[key] = v
        else:
            out[key] = 3
    return out


def visible_schema(body: dict, dialect: str) -> dict | None:
    """The schema this dialect's model follows: one it enforces, else one stated in the prompt."""
    fmt = body.get("response_format") or {}
    if dialect != "plain":
        if fmt.get("type") == "json_schema":
            return (fmt.get("json_schema") or {}).get("schema")
        if (
            fmt.get("type") == "json_object"
            and fmt.get("schema")
            and dialect not in ("json-object-only", "json-object-strict")
        ):
            return fmt["schema"]
        for tool in body.get("tools") or []:
            if dialect != "json-object-only":
                return tool.get("function", {}).get("parameters")
    for message in reversed(body.get("messages") or []):
        found = _PROMPT_SCHEMA.search(str(message.get("content") or ""))
        if found:
            return json.loads(found.group(1))
    if dialect == "plain" and fmt.get("type") == "json_schema":  # a chatty model guesses the keys
        return (fmt.get("json_schema") or {}).get("schema")
    return None


def rejection(body: dict, dialect: str, context_limit: int) -> tuple[int, str, str] | None:
    """(status, message, type) when this dialect refuses the request's shape or size."""
    fmt = body.get("response_format")
    kind = (fmt or {}).get("type")
    if dialect == "llamacpp" and kind == "json_schema":
        return 500, LLAMACPP_REJECTION, "internal_server_error"
    if dialect in ("json-object-only", "json-object-strict"):
        if kind == "json_schema":
            return (
                400,
                (
                    "Invalid parameter: response_format.type 'json_schema' is not supported by this "
                    "model; supported values are 'text' and 'json_object'"
                ),
                "invalid_request_error",
            )
        if dialect == "json-object-strict" and fmt and "schema" in fmt:
            return 422, "response_format.schema: Extra inputs are not permitted", "invalid_request_error"
        if body.get("tools"):
            return 400, "tools are not supported by this model", "invalid_request_error"
    if dialect == "tools-only" and fmt:
        return 400, "response_format is not supported by this server", "invalid_request_error"
    if dialect == "tiny-context":
        size = prompt_tokens(body)
        if size > context_limit:
            return (
                400,
                (
                    f"This model's maximum context length is {context_limit} tokens. However, your "
                    f"messages resulted in {size} tokens. Please reduce the length of the messages."
                ),
                "invalid_request_error",
            )
    return None


def prompt_tokens(body: dict) -> int:
    text = "".join(str(m.get("content") or "") for m in body.get("messages") or [])
    return len(text + json.dumps(body.get("tools") or "")) // 4


class _Server(ThreadingHTTPServer):
    """The test servers' HTTP server: a client that goes away mid-reply (what the rude tests do) is
    no traceback on the test process's stderr, which a CliRunner captures as the command's output."""

    def handle_error(self, request, client_address) -> None:
        pass


class FakeLLMServer:
    def __init__(self, latency: float = 0.0, port: int = 0, dialect: str = "openai"):
        self.latency = latency
        self.dialect = dialect
        self.context_limit = 1500
        self.models: list[str] | None = None
        self._hold_after: int | None = None
        self._released = threading.Event()
        self.held = 0
        self.answered = 0
        self.default = "ok"
        self.retry_after = 0.05
        self.capacity: int | None = None  # rate-limit mode: 429 past this many requests in progress
        self.active = 0
        self.rate_limited = 0
        self.slow_s = 2.0
        self.content: str | None = None
        self.mode: str | None = None  # judging mode: None, "constant", "gullible", "per_run", "pairwise_biased", ...
        self.position_bias = 0.0  # pairwise_biased: how often the run shown first is named
        self.length_bias = False  # length_scored: a point more for a run of 6 or more tool calls
        self.pair_seed = "0"
        self.prompt_cache = PromptCache()
        self.batch_api = BatchAPI(self)
        self._rude_defaults()
        self.requests: list[dict] = []
        self._scripts: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()
        # the default listen backlog (5) drops simultaneous connects, which then wait a 1 s SYN retry
        ThreadingHTTPServer.request_queue_size = 256
        self._httpd = _Server(("127.0.0.1", port), self._handler())
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

    def hold_after(self, n: int) -> None:
        """Answer the first n chat requests; hold each later one until `release()`."""
        self._released.clear()
        self._hold_after = n

    def release(self) -> None:
        self._hold_after = None
        self._released.set()

    def reset(self) -> None:
        self.release()
        with self._lock:
            self.requests.clear()
            self._scripts.clear()
            self.held = 0
            self.answered = 0
            self.rate_limited = 0
        self.capacity = None
        self.default = "ok"
        self.content = None
        self.mode = None
        self.position_bias = 0.0
        self.length_bias = False
        self.pair_seed = "0"
        self.latency = 0.0
        self.dialect = "openai"
        self.context_limit = 1500
        self.models = None
        self.prompt_cache.clear()
        self.batch_api.reset()
        self._rude_defaults()

    def _rude_defaults(self) -> None:
        self.trickle_s = 2.0
        self.huge_bytes = 100 * 2**20
        self.redirect_to = "http://127.0.0.2:9/v1"
        self.models_redirect: str | None = None
        self.listings: list[dict] = []  # GET /models requests (path, headers)
        self.nested_depth = 10**5
        self.rationale_chars = 20 * 2**20
        # endless behaviours end when this changes (reset), so a test cannot leave one running
        self.generation = getattr(self, "generation", 0) + 1

    def __enter__(self) -> FakeLLMServer:
        # served from a thread that looks for a shutdown every 50 ms (serve_forever's default is
        # 0.5 s), so leaving the block does not wait half a second
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()  # returns once serve_forever has
        self._httpd.server_close()
        self._thread.join()

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

            def _redirect(self, code: int, location: str) -> None:
                self.send_response(code)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _rude(self, behaviour: str, reply: dict) -> bool:
                """Answer a rude behaviour; False when `behaviour` is not one."""
                generation, until = server.generation, time.monotonic() + 60.0

                def going() -> bool:
                    return server.generation == generation and time.monotonic() < until

                try:
                    if behaviour in ("redirect_302", "redirect_307"):
                        self._redirect(
                            int(behaviour[-3:]), server.redirect_to.rstrip("/") + self.path.removeprefix("/v1")
                        )
                    elif behaviour == "trickle":
                        data = json.dumps(reply).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        for byte in data:
                            if not going():
                                break
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(server.trickle_s)
                    elif behaviour == "endless_chunked":
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        while going():
                            self.wfile.write(b"10\r\n" + b" " * 16 + b"\r\n")
                            self.wfile.flush()
                            time.sleep(server.trickle_s)
                    elif behaviour == "endless_headers":
                        self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                        n = 0
                        while going():
                            self.wfile.write(f"X-Never-Ending-{n}: yes\r\n".encode())
                            self.wfile.flush()
                            n += 1
                            time.sleep(server.trickle_s)
                    elif behaviour == "gzip_bomb":
                        data = gzip_bomb(server.huge_bytes)
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Encoding", "gzip")
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                    elif behaviour in ("huge", "huge_chunked"):
                        head, tail = json.dumps(reply).encode().split(b'"@@CONTENT@@"')
                        filler = max(0, server.huge_bytes - len(head) - len(tail) - 2)
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        chunked = behaviour == "huge_chunked"
                        if chunked:
                            self.send_header("Transfer-Encoding", "chunked")
                        else:
                            self.send_header("Content-Length", str(len(head) + filler + 2 + len(tail)))
                        self.end_headers()
                        block = b"x" * 2**16
                        pieces = (
                            [head + b'"']
                            + [block] * (filler // len(block))
                            + [b"x" * (filler % len(block)), b'"' + tail]
                        )
                        for piece in pieces:
                            if not going():
                                break
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                        if chunked:
                            self.wfile.write(b"0\r\n\r\n")
                    else:
                        return False
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True
                return True

            def _error(self, code: int, message: str, kind: str, headers=None) -> None:
                self._send(code, {"error": {"message": message, "type": kind, "code": code}}, headers)

            def _send_any(self, code: int, payload) -> None:
                if isinstance(payload, bytes):  # a file's content
                    self.send_response(code)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                else:
                    self._send(code, payload)

            def do_GET(self) -> None:  # noqa: N802 — request count, for a server run as a subprocess
                if server.batch_api.handles(self.path):
                    return self._send_any(*server.batch_api.get(self.path))
                if self.path.rstrip("/") == "/_stats":
                    return self._send(200, {"count": server.count, "answered": server.answered, "held": server.held})
                if self.path.rstrip("/").endswith("/models"):
                    with server._lock:
                        server.listings.append({"path": self.path, "headers": dict(self.headers.items())})
                if self.path.rstrip("/").endswith("/models") and server.models_redirect:
                    return self._redirect(302, server.models_redirect)
                if self.path.rstrip("/").endswith("/models"):
                    ids = server.models if server.models is not None else ["fake-model"]
                    return self._send(
                        200, {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "fake"} for i in ids]}
                    )
                return self._error(404, f"no route {self.path}", "not_found")

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if server.batch_api.handles(self.path):  # files and batches (fake_batch_api.py)
                    with server._lock:
                        server.requests.append(
                            {
                                "path": self.path,
                                "headers": dict(self.headers.items()),
                                "body": None,
                                "behaviour": "batch_api",
                                "raw": "",
                            }
                        )
                    return self._send_any(*server.batch_api.post(self.path, self.headers, raw))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                model = body.get("model", "")
                behaviour = server._next_behaviour(model)
                with server._lock:
                    admitted = server.capacity is None or server.active < server.capacity
                    if admitted:
                        server.active += 1
                    else:
                        behaviour = "429"
                        server.rate_limited += 1
                    server.requests.append(
                        {
                            "path": self.path,
                            "headers": dict(self.headers.items()),
                            "body": body,
                            "behaviour": behaviour,
                            "raw": raw.decode("utf-8", "replace"),
                        }
                    )
                    hold = server._hold_after is not None and len(server.requests) > server._hold_after
                    if hold:
                        server.held += 1
                if hold:
                    server._released.wait()
                if server.latency and admitted:  # a rate limiter answers at once
                    time.sleep(server.latency)
                try:
                    self._answer(body, model, behaviour)
                finally:
                    with server._lock:
                        server.answered += 1
                        if admitted:
                            server.active -= 1

            def _answer(self, body: dict, model: str, behaviour: str) -> None:
                if self.path.rstrip("/").endswith("/messages") and behaviour == "ok":  # Anthropic-style
                    return self._send(200, anthropic_reply(server, body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._error(404, f"no route {self.path}", "not_found")
                if server.models is not None and model not in server.models:
                    return self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
                refused = rejection(body, server.dialect, server.context_limit)
                if refused is not None and behaviour in ("ok", "grammar_only"):
                    return self._error(*refused)
                if behaviour == "429":
                    return self._error(
                        429, "rate limited (fake)", "rate_limit_exceeded", {"Retry-After": str(server.retry_after)}
                    )
                if behaviour == "500":
                    return self._error(500, "internal error (fake)", "server_error")
                if behaviour == "401":  # echoes the key, as some providers do, to test redaction
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    return self._error(401, f"Incorrect API key provided: {token}", "invalid_request_error")
                if behaviour == "slow":
                    time.sleep(server.slow_s)
                messages = body.get("messages") or [{}]
                users = [m for m in messages if m.get("role") == "user"] or messages
                seed = json.dumps(
                    users[0].get("content", "")
                    if len(users) > 1 and "JSON Schema" in str(users[-1].get("content"))
                    else messages[-1].get("content", ""),
                    sort_keys=True,
                )
                if behaviour == "malformed":
                    content = "Sure! Here is my grading: {situation_assessment: 3,"
                elif behaviour == "nested":
                    content = "[" * server.nested_depth
                elif behaviour == "content_int":
                    content = 123
                elif behaviour in ("huge", "huge_chunked"):
                    content = "@@CONTENT@@"
                elif behaviour == "schema_violation":
                    content = json.dumps({"safety": 7, "rationale": "step 1"})
                elif server.content is not None:
                    content = server.content
                elif behaviour == "grammar_only":
                    content, cut = grammar_only_reply(
                        visible_schema(body, server.dialect) or {}, seed, body.get("max_tokens")
                    )
                else:
                    schema = visible_schema(body, server.dialect)
                    value = instance_from_schema(schema, seed) if schema else {"text": "ok"}
                    if schema and server.mode == "per_run":
                        value = instance_from_schema(schema, run_tag(body) or seed)
                    if schema and server.mode in ("constant", "gullible"):
                        value = judged(instance_from_schema(schema, "constant"), body, server.mode)
                    if schema and server.mode == "length_scored" and isinstance(value, dict):
                        value = length_scored(value, body, server.length_bias)
                    if schema and server.mode == "pairwise_biased" and isinstance(value, dict):
                        value = biased_pair_answer(value, schema, body, server.position_bias, server.pair_seed)
                    if isinstance(value, dict) and behaviour == "echo_key":
                        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                        value["rationale"] = f"Step 1 is fine. By the way, your key is {token}."
                    if isinstance(value, dict) and behaviour == "long_rationale":
                        value["rationale"] = "r" * server.rationale_chars
                    content = json.dumps(value)
                    if server.dialect == "plain":  # chatty: prose, a stray brace, a fence, more prose
                        content = (
                            "Sure. I read the run {step by step} and here is my grading:\n\n```json\n"
                            + json.dumps(value, indent=2)
                            + "\n```\n\nLet me know if you need more."
                        )
                message: dict = {"role": "assistant", "content": content}
                finish = cut if behaviour == "grammar_only" and server.content is None else "stop"
                tools = body.get("tools") or []
                if (
                    tools
                    and server.dialect not in ("plain", "json-object-only")
                    and behaviour == "ok"
                    and server.content is None
                ):
                    name = tools[0].get("function", {}).get("name", "tool")
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "call_fake_0", "type": "function", "function": {"name": name, "arguments": content}}
                        ],
                    }
                    finish = "tool_calls"
                prompt_chars = sum(len(json.dumps(m.get("content", ""))) for m in messages)
                usage = {
                    "prompt_tokens": max(1, prompt_chars // 4),
                    "completion_tokens": max(1, len(str(content)) // 4),
                }
                if behaviour == "huge_usage":
                    usage["prompt_tokens"] = 10**30
                cached = openai_cached_tokens(server, body)
                if cached is not None:
                    usage["prompt_tokens_details"] = {"cached_tokens": cached}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                reply = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": []
                    if behaviour == "no_choices"
                    else [{"index": 0, "finish_reason": finish, "message": message}],
                    "usage": usage,
                }
                if not self._rude(behaviour, reply):
                    self._send(200, reply)

        return Handler


_BOMBS: dict[int, bytes] = {}


def gzip_bomb(size: int) -> bytes:
    """A gzip body that decodes to `size` spaces (about a thousandth of that on the wire)."""
    if size not in _BOMBS:
        import zlib

        packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        block = b" " * 2**20
        parts = [packer.compress(block) for _ in range(size // len(block))]
        _BOMBS[size] = b"".join(parts) + packer.compress(b" " * (size % len(block))) + packer.flush()
    return _BOMBS[size]


class RecordingListener:
    """A server that answers every request ``200 {}`` and records it (method, path, headers): the
    other host a redirect points at, to show what it received."""

    def __init__(self, host: str = "127.0.0.2", port: int = 0):
        self.requests: list[dict] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                listener.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                data = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _record  # noqa: N815 (http.server naming)

        self._httpd = _Server((host, port), Handler)
        self._httpd.daemon_threads = True
        self.host = host

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def __enter__(self) -> RecordingListener:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


JUDGING_MODES = ("constant", "gullible", "per_run", "pairwise_biased", "length_scored")


def server_from_args(argv: list[str] | None = None) -> FakeLLMServer:
    """The standalone server the command line asks for (not started)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port (printed)")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--dialect", choices=DIALECTS, default="openai")
    parser.add_argument("--default", default="ok", help="the behaviour of every request (e.g. huge)")
    parser.add_argument("--mode", choices=JUDGING_MODES, help="a judging mode (see the module docstring)")
    parser.add_argument(
        "--position-bias", type=float, default=0.0, help="pairwise_biased: how often the run shown first is named"
    )
    parser.add_argument("--length-bias", action="store_true", help="length_scored: a point more for a long run")
    parser.add_argument("--pair-seed", default="0", help="pairwise_biased: the seed of its draws")
    args = parser.parse_args(argv)
    if not 0.0 <= args.position_bias <= 1.0:
        parser.error("--position-bias is a probability in [0, 1]")
    server = FakeLLMServer(latency=args.latency, port=args.port, dialect=args.dialect)
    server.default = args.default
    server.mode, server.position_bias, server.length_bias = args.mode, args.position_bias, args.length_bias
    server.pair_seed = args.pair_seed
    return server


def main() -> None:
    server = server_from_args()
    print(f"fake LLM server on {server.api_base}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
