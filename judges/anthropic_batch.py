"""Anthropic's Message Batches API, for `evalkit judge --batch` with `anthropic/...` models.

litellm (1.110) can retrieve an Anthropic batch but not create one (its create transformation
raises NotImplementedError; BerriAI/litellm#17265 asks for it), so evalkit speaks the API itself
with httpx, through evalkit's bounded client (evalkit/config/outbound.py: no redirects, replies
bounded): `POST /v1/messages/batches` with the requests inline (Anthropic has no input file),
`GET /v1/messages/batches/{id}` to poll (`processing_status` in_progress, canceling, ended), and
the JSONL at the batch's `results_url` (one line per request: `succeeded` with its message,
`errored`, `canceled` or `expired`).

What goes in and comes out is translated by litellm's own Anthropic transformation, the one a live
`anthropic/...` call goes through (given by judges/litellm_judge.py, the one module that imports
litellm): a request is the live request (the OpenAI-style body of judges/batch.py,
`cache_control` marks included) mapped to Anthropic's parameters, and a succeeded message is read
back into an OpenAI-style chat completion, so judges/batch.py validates it exactly as a live reply
(fail-closed) and prices it from the same usage (cached input included).
The other results become error lines with a reason, which judges/batch.py asks again live.

The API key comes from the environment (`ANTHROPIC_API_KEY`) or the judge's `api_key=`; it is sent
in the `x-api-key` header only, never logged, and never sent to a host other than the API base's:
a `results_url` elsewhere is refused. This module is imported only on the judge path (httpx is the
judge extra's).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import urllib.parse
from collections.abc import Callable

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from evalkit.config import outbound
from evalkit.judges.protocol import JudgeFatalError
from evalkit.judges.redaction import redact

API_VERSION = "2023-06-01"
DEFAULT_BASE = "https://api.anthropic.com"
# Anthropic's per-request result types, as the reason a request is asked again live
_NOT_ANSWERED = {
    "canceled": "the batch was cancelled before this request ran",
    "expired": "the batch's 24-hour window ended before this request ran",
}
_TRANSIENT = {429, 500, 502, 503, 504, 529}


class _Transient(Exception):
    """A reply with a status in _TRANSIENT: asked again, and on the last attempt reported as it is."""

    def __init__(self, response: httpx.Response):
        self.response = response


def _status(processing: str | None, counts: dict) -> str:
    """Anthropic's processing_status in the vocabulary of judges/batch.py (OpenAI's)."""
    if processing == "ended":
        total = sum(int(v or 0) for v in counts.values())
        if total and int(counts.get("expired") or 0) == total:
            return "expired"
        if total and int(counts.get("canceled") or 0) == total:
            return "cancelled"
        return "completed"
    return {"in_progress": "in_progress", "canceling": "cancelling"}.get(processing or "", "in_progress")


class AnthropicBatches:
    """The Message Batches calls of one judge (model, API base, key)."""

    inline = True  # the requests go in the create call (no uploaded file)

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None,
        key: Callable[[], str | None],
        client: Callable[[], httpx.AsyncClient],
        timeout_s: float,
        to_params: Callable[[dict], dict],
        to_chat: Callable[[dict], dict],
        attempts: int = 3,
        sleep=asyncio.sleep,
    ):
        self.model = model.split("/", 1)[-1]
        base = api_base or os.environ.get("ANTHROPIC_API_BASE") or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE
        self.base = base.rstrip("/").removesuffix("/v1")
        self._key, self._client, self.timeout_s = key, client, timeout_s
        self._to_params, self._to_chat = to_params, to_chat  # litellm's translations (judges/litellm_judge.py)
        self.attempts, self._sleep = max(1, attempts), sleep

    # -- HTTP ---------------------------------------------------------------------------------
    def _same_host(self, url: str) -> bool:
        a, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(self.base)
        return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)

    async def _call(self, method: str, url: str, body: dict | None = None) -> bytes:
        if not self._same_host(url):
            raise JudgeFatalError(
                f"{self.model}: the batch API named {url.split('?', 1)[0]}, not on {self.base}; "
                "evalkit sends the API key only to the API base"
            )
        key = self._key()
        if not key:
            raise JudgeFatalError(f"no API key for anthropic/{self.model}: set ANTHROPIC_API_KEY in the environment")
        headers = {"x-api-key": key, "anthropic-version": API_VERSION, "content-type": "application/json"}
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=1, max=30),
            retry=retry_if_exception_type((TimeoutError, httpx.TransportError, _Transient)),
            sleep=self._sleep,
            reraise=True,
        )
        where = f"{self.model}: {method} {url.split('?', 1)[0]}"
        try:
            async for attempt in retrying:
                with attempt:
                    async with asyncio.timeout(self.timeout_s):
                        response = await self._client().request(method, url, content=data, headers=headers)
                    if response.status_code in _TRANSIENT:
                        raise _Transient(response)
        except (TimeoutError, httpx.TransportError) as exc:
            raise JudgeFatalError(
                f"{where}: {type(exc).__name__} after {self.attempts} attempts; "
                "run the same command again to resume the stored batches"
            ) from None
        except _Transient as exc:
            response = exc.response
        except (outbound.ReplyRefused, outbound.Redirected) as exc:
            raise JudgeFatalError(f"{self.model}: {method} {url}: {redact(str(exc))}") from None
        if response.status_code != 200:
            raise JudgeFatalError(f"{where} answered {response.status_code}: {redact(_message(response.content))}")
        return response.content

    async def _json(self, method: str, url: str, body: dict | None = None) -> dict:
        data = await self._call(method, url, body)
        try:
            value = json.loads(data)
        except ValueError:
            raise JudgeFatalError(f"{self.model}: {method} {url.split('?', 1)[0]}: the reply is not JSON") from None
        if not isinstance(value, dict):
            raise JudgeFatalError(f"{self.model}: {method} {url.split('?', 1)[0]}: the reply is not an object")
        return value

    # -- the batch calls judges/batch.py makes (batch.BatchProvider) -----------------------------
    def request(self, line: dict) -> dict:
        """One batch line (OpenAI-style, as judges/batch.py writes it) as an Anthropic request."""
        return {"custom_id": str(line.get("custom_id")), "params": self._to_params(dict(line.get("body") or {}))}

    async def create(self, sub: dict, data: bytes) -> dict:
        """The message batch of the submission's requests (``data``: its batch lines)."""
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        made = await self._json(
            "POST", f"{self.base}/v1/messages/batches", {"requests": [self.request(x) for x in lines]}
        )
        return self.state(made)

    async def find(self, sub: dict) -> dict | None:
        """The batch made for the submission's requests (its custom ids, ``sub["items"]``) by a
        process killed before it stored the batch's id.
        Message batches carry no metadata, so: every page of the list (newest first, `after_id`
        the last id of the page before, while `has_more`) down to the batches created before the
        submission was stored (`since`, less 10 minutes of clock skew); of those with as many
        requests, the one whose results hold exactly these custom ids. A candidate still running
        cannot be checked yet: it is returned with ``"unverified": True`` (wait for it; submitting
        again could pay twice)."""
        custom_ids, threshold = set(sub["items"]), _when(sub["created_at"])
        threshold = threshold - datetime.timedelta(minutes=10) if threshold else None
        waiting, after = None, None
        while True:
            query = "limit=1000" + (f"&after_id={urllib.parse.quote(after)}" if after else "")
            page = await self._json("GET", f"{self.base}/v1/messages/batches?{query}")
            listed = [b for b in page.get("data") or [] if isinstance(b, dict)]
            for batch in listed:
                created = _when(batch.get("created_at"))
                if threshold is not None and created is not None and created < threshold:
                    return waiting  # made before the submission: neither this nor an older one is it
                counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
                if sum(int(v or 0) for v in counts.values()) != len(custom_ids):
                    continue
                if batch.get("processing_status") != "ended":
                    batch = await self._json(
                        "GET", f"{self.base}/v1/messages/batches/{urllib.parse.quote(str(batch.get('id')))}"
                    )
                if batch.get("processing_status") != "ended" or not batch.get("results_url"):
                    waiting = waiting or {**self.state(batch), "unverified": True}
                elif await self._custom_ids(str(batch["results_url"])) == custom_ids:
                    return self.state(batch)
            last = page.get("last_id") or (listed[-1].get("id") if listed else None)
            if not page.get("has_more") or not last or last == after:
                return waiting
            after = str(last)

    async def _custom_ids(self, url: str) -> set[str]:
        ids = set()
        for raw in (await self._call("GET", url)).decode("utf-8", "replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                ids.add(str(line.get("custom_id")))
        return ids

    async def retrieve(self, batch_id: str) -> dict:
        return self.state(await self._json("GET", f"{self.base}/v1/messages/batches/{urllib.parse.quote(batch_id)}"))

    def state(self, batch: dict) -> dict:
        """A message batch in the shape judges/batch.py reads (id, status, counts, result file)."""
        counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
        status = _status(batch.get("processing_status"), counts)
        done = int(counts.get("succeeded") or 0)
        failed = sum(int(counts.get(k) or 0) for k in ("errored", "canceled", "expired"))
        return {
            "id": batch.get("id"),
            "status": status,
            "request_counts": {
                "total": done + failed + int(counts.get("processing") or 0),
                "completed": done,
                "failed": failed,
            },
            "output_file_id": batch.get("results_url") if batch.get("processing_status") == "ended" else None,
            "error_file_id": None,
        }

    async def results(self, url: str) -> bytes:
        """The results at `url` as OpenAI-style output lines: a succeeded message as a chat
        completion (status 200), any other result as an error line with its reason."""
        out = []
        for raw in (await self._call("GET", url)).decode("utf-8", "replace").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                out.append(json.dumps(self.result_line(line), ensure_ascii=False) + "\n")
        return "".join(out).encode("utf-8")

    def result_line(self, line: dict) -> dict:
        custom_id = line.get("custom_id")
        result = line.get("result") if isinstance(line.get("result"), dict) else {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return {
                "custom_id": custom_id,
                "response": {"status_code": 200, "body": self._to_chat(result["message"])},
            }
        if kind == "errored":
            error = result.get("error") if isinstance(result.get("error"), dict) else {}
            inner = error.get("error") if isinstance(error.get("error"), dict) else error
            message = f"{inner.get('type') or 'error'}: {inner.get('message') or 'no message'}"
            return {"custom_id": custom_id, "response": None, "error": {"code": "errored", "message": message}}
        reason = _NOT_ANSWERED.get(str(kind), f"an unknown result type {str(kind)[:40]!r}")
        return {"custom_id": custom_id, "response": None, "error": {"code": str(kind), "message": reason}}


def _when(value) -> datetime.datetime | None:
    """An RFC 3339 time (Anthropic's, evalkit's own ``...Z``), else None."""
    try:
        when = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


def _message(data: bytes, limit: int = 200) -> str:
    try:
        value = json.loads(data)
        error = value.get("error") if isinstance(value, dict) else None
        text = error.get("message") if isinstance(error, dict) else None
    except ValueError:
        text = None
    text = str(text or data[:limit].decode("utf-8", "replace"))
    return " ".join(text.split())[:limit]
