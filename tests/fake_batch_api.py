"""What the fake server (tests/fake_llm_server.py) adds for cost work: a prompt cache, the
OpenAI Files and Batch endpoints, and an Anthropic-style Messages endpoint.

**Prompt cache** (``server.prompt_cache.enabled = True``; off by default so earlier tests see the
replies they always saw): like OpenAI's automatic caching, a request whose prompt starts with a
prefix of at least 1,024 tokens that an earlier request to the same model sent is answered with
``usage.prompt_tokens_details.cached_tokens`` = that prefix, counted in whole blocks of 128
tokens. Tokens are the fake's own measure (characters / 4 of each message's JSON content, the same
measure as its ``prompt_tokens``).

**Files and batches** (``/v1/files``, ``/v1/files/{id}``, ``/v1/files/{id}/content``,
``/v1/batches``, ``/v1/batches/{id}``, ``/v1/batches/{id}/cancel``): an uploaded JSONL batch file
is run when the batch is retrieved after ``in_progress_polls`` retrievals in ``in_progress``; each
line's body goes to the server's own chat endpoint (``X-Fake-Batch`` header set, so tests can tell
these requests from live ones; scripts, dialects and modes apply). A line answered 200 goes to the
output file, another status to the error file (partial failure). ``expire_after = n`` answers only
the first n lines and marks the batch ``expired`` (the rest in the error file, code
``batch_expired``); ``fail_batch = True`` makes the batch ``failed`` with no output. Every batch
request is recorded in ``server.requests`` like a chat request. Listing batches pages as the real
APIs do (newest first; ``limit``, default 20, at most 100 for OpenAI and 1,000 for Anthropic;
``after`` / ``after_id``; ``has_more``, ``first_id``, ``last_id``); ``add_foreign_batches(n)`` and
``add_foreign_message_batches(n, size)`` add n finished batches of another client, newer than the rest.

**Anthropic Messages** (``POST /v1/messages``): the request's text (system and messages, text
blocks or strings) is answered in Anthropic's shape: a forced tool's ``input`` built from its
``input_schema`` (what litellm sends for structured output), else a text block with the schema's
instance, else ``"ok"``. ``cache_control`` marks are honoured as Anthropic does: the prefix up to
the last mark, when at least 1,024 tokens, is read from the cache (``cache_read_input_tokens``)
if an earlier request wrote it, else written (``cache_creation_input_tokens``); ``input_tokens``
is what is left.

**Anthropic Message Batches** (``POST /v1/messages/batches``, ``GET /v1/messages/batches[/{id}]``,
``GET /v1/messages/batches/{id}/results``): a batch stays ``in_progress`` for ``in_progress_polls``
retrievals, then each request's ``params`` goes to the server's own ``/v1/messages`` and the batch
has ``ended``, with a ``results_url`` on this server; ``errored = {n, ...}`` answers those requests
(by position) ``errored``, ``prose = {n, ...}`` makes their messages prose instead of the JSON asked
for, ``expire_after = n`` answers the requests from the n-th on ``expired``, and ``refuse = (status,
message)`` refuses the create call.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

BLOCK_TOKENS = 128
MIN_CACHED_TOKENS = 1024
CHARS_PER_TOKEN = 4


class PromptCache:
    """Prefixes seen per model, by the digest of each whole-block prefix of the prompt text."""

    def __init__(self) -> None:
        self.enabled = False
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
        self.enabled = False

    @staticmethod
    def prompt_text(messages: list[dict]) -> str:
        """The measured prompt: each message's JSON content, in order (what ``prompt_tokens`` counts)."""
        return "".join(json.dumps(m.get("content", "")) for m in messages)

    def _digests(self, text: str) -> list[str]:
        block = BLOCK_TOKENS * CHARS_PER_TOKEN
        running = hashlib.sha256()
        out = []
        for start in range(0, len(text) - block + 1, block):
            running.update(text[start : start + block].encode("utf-8"))
            out.append(running.copy().hexdigest())
        return out

    def lookup_and_store(self, model: str, text: str, upto: int | None = None) -> tuple[int, int]:
        """(tokens read from the cache, tokens of the cacheable prefix) for this prompt, then remember
        its prefixes. ``upto`` (characters) limits the cacheable prefix (Anthropic's last mark)."""
        digests = self._digests(text if upto is None else text[:upto])
        cacheable = len(digests) * BLOCK_TOKENS
        if cacheable < MIN_CACHED_TOKENS:
            return 0, 0
        hit = 0
        with self._lock:
            for i, digest in enumerate(digests):
                if (model, digest) in self._seen:
                    hit = (i + 1) * BLOCK_TOKENS
            self._seen.update((model, d) for d in digests)
        return (hit if hit >= MIN_CACHED_TOKENS else 0), cacheable


def openai_cached_tokens(server, body: dict) -> int | None:
    """``cached_tokens`` for a chat request (None when the prompt cache is off)."""
    if not server.prompt_cache.enabled:
        return None
    hit, _ = server.prompt_cache.lookup_and_store(
        str(body.get("model", "")), PromptCache.prompt_text(body.get("messages") or [])
    )
    return hit


# -- files and batches -------------------------------------------------------------------------


def _multipart_file(headers, raw: bytes) -> tuple[bytes, str]:
    """(file bytes, filename) of a multipart/form-data upload (the one file part)."""
    kind = headers.get("Content-Type", "")
    boundary = kind.split("boundary=", 1)[-1].strip().strip('"').encode()
    for part in raw.split(b"--" + boundary):
        head, sep, data = part.partition(b"\r\n\r\n")
        if sep and b'name="file"' in head:
            name = head.split(b'filename="', 1)[-1].split(b'"', 1)[0].decode() if b"filename=" in head else "file"
            return data.rstrip(b"\r\n").removesuffix(b"--").rstrip(b"\r\n"), name
    return raw, "file"


class BatchAPI:
    def __init__(self, server) -> None:
        self.server = server
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self._ids = itertools.count(1)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.in_progress_polls = 1
        self.expire_after: int | None = None
        self.fail_batch = False
        self.created = 0  # batches created (a resumed judge must not create one again)
        self.errored: set[int] = set()  # Anthropic: the requests (by position) answered `errored`
        self.prose: set[int] = set()  # Anthropic: succeeded, but the message is prose, not the JSON asked for
        self.message_batches: dict[str, dict] = {}
        self.refuse: tuple[int, str] | None = None  # every batch create (Anthropic) or upload (OpenAI) refused so
        self.listed: list[str] = []  # the path and query of every list request, in order

    def add_foreign_batches(self, n: int) -> None:
        """n finished batches of another client of the account, newer than every batch so far."""
        with self._lock:
            for _ in range(n):
                bid = self._id("batch")
                self.batches[bid] = {
                    "id": bid,
                    "status": "completed",
                    "input_file_id": self._id("file"),
                    "endpoint": "/v1/chat/completions",
                    "lines": [],
                    "polls": 0,
                    "output_file_id": None,
                    "error_file_id": None,
                    "completion_window": "24h",
                    "metadata": {"owner": "someone else"},
                    "counts": [0, 0, 0],
                }

    def add_foreign_message_batches(self, n: int, size: int) -> None:
        """n ended message batches of ``size`` requests of another client, newer than the rest."""
        with self._lock:
            for _ in range(n):
                bid = f"msgbatch_fake_{next(self._ids):04d}"
                requests = [{"custom_id": f"{bid}-{i}", "params": {}} for i in range(size)]
                results = [{"custom_id": r["custom_id"], "result": {"type": "expired"}} for r in requests]
                self.message_batches[bid] = {
                    "id": bid,
                    "requests": requests,
                    "polls": 0,
                    "status": "ended",
                    "results": results,
                    "created_at": _now(),
                }

    def _id(self, prefix: str) -> str:
        return f"{prefix}-fake-{next(self._ids):04d}"

    # routing: (status, payload) or (status, bytes) for a file's content
    def handles(self, path: str) -> bool:
        path = path.split("?", 1)[0].rstrip("/")
        return any(
            path.startswith(p) for p in ("/v1/files", "/v1/batches", "/files", "/batches", "/v1/messages/batches")
        )

    def get(self, path: str):
        parts = [p for p in path.split("?", 1)[0].strip("/").split("/") if p != "v1"]
        if parts[:2] == ["messages", "batches"]:
            return self._message_batch_get(parts[2:], path)
        if parts[:1] == ["files"] and len(parts) == 3 and parts[2] == "content":
            found = self.files.get(parts[1])
            return (200, found["data"]) if found else (404, _error(f"no file {parts[1]}"))
        if parts[:1] == ["files"] and len(parts) == 2:
            found = self.files.get(parts[1])
            return (200, _file_object(found)) if found else (404, _error(f"no file {parts[1]}"))
        if parts[:1] == ["batches"] and len(parts) == 2:
            return self._retrieve(parts[1])
        if parts == ["batches"]:
            self.listed.append(path)
            return 200, _page([self._public(b) for b in self.batches.values()], _query(path), "after", 20, 100)
        return 404, _error(f"no route {path}")

    def post(self, path: str, headers, raw: bytes):
        parts = [p for p in path.split("?", 1)[0].strip("/").split("/") if p != "v1"]
        if parts == ["messages", "batches"]:
            return self._message_batch_create(json.loads(raw or b"{}"))
        if parts == ["files"] and self.refuse is not None:  # OpenAI: the upload refused
            return self.refuse[0], {"error": {"message": self.refuse[1], "type": "invalid_request_error"}}
        if parts == ["files"]:
            data, name = _multipart_file(headers, raw)
            with self._lock:
                fid = self._id("file")
                self.files[fid] = {"id": fid, "data": data, "filename": name, "purpose": "batch"}
            return 200, _file_object(self.files[fid])
        if parts == ["batches"]:
            body = json.loads(raw or b"{}")
            source = self.files.get(body.get("input_file_id"))
            if source is None:
                return 400, _error(f"no input file {body.get('input_file_id')}")
            lines = [json.loads(line) for line in source["data"].decode("utf-8").splitlines() if line.strip()]
            with self._lock:
                bid = self._id("batch")
                self.created += 1
                self.batches[bid] = {
                    "id": bid,
                    "status": "validating",
                    "input_file_id": source["id"],
                    "endpoint": body.get("endpoint"),
                    "lines": lines,
                    "polls": 0,
                    "output_file_id": None,
                    "error_file_id": None,
                    "completion_window": body.get("completion_window", "24h"),
                    "metadata": body.get("metadata"),
                    "counts": [0, 0, len(lines)],
                }
            return 200, self._public(self.batches[bid])
        if parts[:1] == ["batches"] and len(parts) == 3 and parts[2] == "cancel":
            batch = self.batches.get(parts[1])
            if batch is None:
                return 404, _error(f"no batch {parts[1]}")
            batch["status"] = "cancelled"
            return 200, self._public(batch)
        return 404, _error(f"no route {path}")

    def _retrieve(self, bid: str):
        batch = self.batches.get(bid)
        if batch is None:
            return 404, _error(f"no batch {bid}")
        with self._lock:
            if batch["status"] in ("validating", "in_progress"):
                batch["polls"] += 1
                if batch["polls"] <= self.in_progress_polls:
                    batch["status"] = "in_progress"
                else:
                    self._run(batch)
        return 200, self._public(batch)

    def _run(self, batch: dict) -> None:
        if self.fail_batch:
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "failed (fake)"}]}
            return
        out, err = [], []
        for n, line in enumerate(batch["lines"]):
            custom_id = line.get("custom_id")
            if self.expire_after is not None and n >= self.expire_after:
                err.append(
                    {
                        "id": f"req-{n}",
                        "custom_id": custom_id,
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired.",
                        },
                    }
                )
                continue
            status, reply = self._loopback(line.get("url") or batch["endpoint"], line.get("body") or {}, batch["id"])
            entry = {
                "id": f"req-{n}",
                "custom_id": custom_id,
                "response": {"status_code": status, "request_id": f"req-{n}", "body": reply},
                "error": None,
            }
            (out if status == 200 else err).append(entry)
        batch["counts"] = [len(out), len(err), len(batch["lines"])]
        for kind, entries in (("output_file_id", out), ("error_file_id", err)):
            if entries:
                fid = self._id("file")
                self.files[fid] = {
                    "id": fid,
                    "purpose": "batch_output",
                    "filename": f"{kind}.jsonl",
                    "data": "".join(json.dumps(e) + "\n" for e in entries).encode(),
                }
                batch[kind] = fid
        batch["status"] = "expired" if self.expire_after is not None and err else "completed"

    def _loopback(self, path: str, body: dict, batch_id: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.server.port}{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "X-Fake-Batch": batch_id},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return reply.status, json.load(reply)
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.load(exc)
            except ValueError:
                return exc.code, {"error": {"message": "unreadable"}}

    def _public(self, batch: dict) -> dict:
        done, failed, total = batch["counts"]
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": batch["endpoint"],
            "errors": batch.get("errors"),
            "input_file_id": batch["input_file_id"],
            "completion_window": batch["completion_window"],
            "status": batch["status"],
            "output_file_id": batch["output_file_id"],
            "error_file_id": batch["error_file_id"],
            "created_at": 0,
            "metadata": batch["metadata"],
            "request_counts": {"total": total, "completed": done, "failed": failed},
        }

    # -- Anthropic Message Batches ------------------------------------------------------------
    def _message_batch_create(self, body: dict):
        if self.refuse is not None:
            return self.refuse[0], _anthropic_error("authentication_error", self.refuse[1])
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, _anthropic_error("invalid_request_error", "requests: a non-empty list is required")
        ids = [r.get("custom_id") for r in requests if isinstance(r, dict)]
        if len(set(ids)) != len(requests) or not all(isinstance(i, str) and 0 < len(i) <= 64 for i in ids):
            return 400, _anthropic_error("invalid_request_error", "custom_id: 1-64 characters, unique in the batch")
        with self._lock:
            bid = f"msgbatch_fake_{next(self._ids):04d}"
            self.created += 1
            self.message_batches[bid] = {
                "id": bid,
                "requests": requests,
                "polls": 0,
                "status": "in_progress",
                "created_at": _now(),
            }
        return 200, self._message_batch(self.message_batches[bid])

    def _message_batch_get(self, rest: list[str], path: str):
        if not rest:
            self.listed.append(path)
            listed = [self._message_batch(b) for b in self.message_batches.values()]
            return 200, _page(listed, _query(path), "after_id", 20, 1000)
        batch = self.message_batches.get(rest[0])
        if batch is None:
            return 404, _anthropic_error("not_found_error", f"no message batch {rest[0]}")
        if rest[1:] == ["results"]:
            if batch["status"] != "ended":
                return 400, _anthropic_error("invalid_request_error", "results are available once the batch ended")
            return 200, "".join(json.dumps(r) + "\n" for r in batch["results"]).encode()
        with self._lock:
            if batch["status"] == "in_progress":
                batch["polls"] += 1
                if batch["polls"] > self.in_progress_polls:
                    self._run_messages(batch)
        return 200, self._message_batch(batch)

    def _run_messages(self, batch: dict) -> None:
        results = []
        for n, request in enumerate(batch["requests"]):
            custom_id = request["custom_id"]
            if self.expire_after is not None and n >= self.expire_after:
                results.append({"custom_id": custom_id, "result": {"type": "expired"}})
            elif n in self.errored:
                error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded (fake)"}}
                results.append({"custom_id": custom_id, "result": {"type": "errored", "error": error}})
            else:
                status, reply = self._loopback("/v1/messages", request.get("params") or {}, batch["id"])
                if status == 200 and n in self.prose:
                    reply = dict(reply, content=[{"type": "text", "text": "I think the run passed."}])
                kind = {"type": "succeeded", "message": reply} if status == 200 else {"type": "errored", "error": reply}
                results.append({"custom_id": custom_id, "result": kind})
        batch["results"], batch["status"] = results, "ended"

    def _message_batch(self, batch: dict) -> dict:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        ended = batch["status"] == "ended"
        for result in batch.get("results") or []:
            counts[result["result"]["type"]] += 1
        if not ended:
            counts["processing"] = len(batch["requests"])
        return {
            "id": batch["id"],
            "type": "message_batch",
            "processing_status": batch["status"],
            "request_counts": counts,
            "created_at": batch["created_at"],
            "ended_at": "2026-12-02T00:01:00Z" if ended else None,
            "expires_at": "2026-12-03T00:00:00Z",
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": (
                f"http://127.0.0.1:{self.server.port}/v1/messages/batches/{batch['id']}/results" if ended else None
            ),
        }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _query(path: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(path.split("?", 1)[1])) if "?" in path else {}


def _page(items: list[dict], query: dict[str, str], cursor: str, default: int, most: int) -> dict:
    """One page of a list as both providers give it: newest first, ``limit`` items (``default``
    when not given, at most ``most``), those after the id named by ``cursor`` (OpenAI's ``after``,
    Anthropic's ``after_id``), with ``has_more``, ``first_id`` and ``last_id``."""
    newest = list(reversed(items))
    after = query.get(cursor)
    if after:
        ids = [item["id"] for item in newest]
        newest = newest[ids.index(after) + 1 :] if after in ids else []
    limit = min(max(int(query.get("limit") or default), 1), most)
    page = newest[:limit]
    return {
        "object": "list",
        "data": page,
        "has_more": len(newest) > limit,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
    }


def _anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _file_object(found: dict) -> dict:
    return {
        "id": found["id"],
        "object": "file",
        "bytes": len(found["data"]),
        "created_at": 0,
        "filename": found["filename"],
        "purpose": found["purpose"],
        "status": "processed",
    }


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error"}}


# -- Anthropic Messages ------------------------------------------------------------------------


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def anthropic_reply(server, body: dict) -> dict:
    """A /v1/messages answer, with Anthropic's cache accounting for ``cache_control`` marks."""
    import fake_llm_server as fake  # the chat side's schema instances and judging modes

    text, upto = "", None
    blocks = _blocks(body.get("system")) + [b for m in body.get("messages") or [] for b in _blocks(m.get("content"))]
    for block in blocks:
        text += str(block.get("text") or block.get("content") or "")
        if block.get("cache_control"):
            upto = len(text)
    total = max(1, len(text) // CHARS_PER_TOKEN)
    read = written = 0
    if upto is not None:
        read, cacheable = server.prompt_cache.lookup_and_store(str(body.get("model", "")), text, upto)
        written = cacheable - read
    tools = body.get("tools") or []
    schema = tools[0].get("input_schema") if tools else (body.get("output_format") or {}).get("schema")
    as_chat = {"messages": [{"role": "user", "content": text}]}
    seed = fake.run_tag(as_chat) or hashlib.sha256(text.encode()).hexdigest()
    value: Any = fake.instance_from_schema(schema, seed) if schema else "ok"
    if schema and server.mode in ("constant", "gullible"):
        value = fake.judged(fake.instance_from_schema(schema, "constant"), as_chat, server.mode)
    if tools:
        content = [{"type": "tool_use", "id": "toolu_fake_0", "name": tools[0].get("name", "tool"), "input": value}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": value if isinstance(value, str) else json.dumps(value)}]
        stop = "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(0, total - read - written),
            "output_tokens": max(1, len(json.dumps(value)) // 4),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        },
    }
