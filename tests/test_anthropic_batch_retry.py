"""The Message Batches calls' own retries (judges/anthropic_batch.py): a transient status or a
dropped connection is asked again with exponential backoff, anything else stops at once in one
line, and the key is sent in the header only."""

from __future__ import annotations

import asyncio

import httpx
import pytest

pytest.importorskip("litellm")

from evalkit.judges.anthropic_batch import AnthropicBatches  # noqa: E402
from evalkit.judges.protocol import JudgeFatalError  # noqa: E402

KEY = "sk-ant-retry-test-not-real-0123456789"
BASE = "https://api.example.test"


def _batches(answers, sleeps, attempts=3):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer[0], json=answer[1])

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))

    async def sleep(seconds):
        sleeps.append(seconds)

    # no translation: these tests are about the HTTP calls, not what goes in them
    fixed = {"api_base": BASE, "key": lambda: KEY, "timeout_s": 5, "to_params": dict, "to_chat": dict}
    batches = AnthropicBatches("anthropic/claude-test", client=lambda: client, attempts=attempts, sleep=sleep, **fixed)
    return batches, seen


def test_transient_statuses_are_retried_with_exponential_backoff():
    sleeps = []
    answers = [(529, {"error": {"message": "overloaded"}}), (503, {}), (200, {"id": "b1"})]
    batches, seen = _batches(answers, sleeps)
    assert asyncio.run(batches._json("GET", f"{BASE}/v1/messages/batches/b1")) == {"id": "b1"}
    assert sleeps == [1.0, 2.0] and len(seen) == 3
    assert all(r.headers["x-api-key"] == KEY and KEY not in str(r.url) for r in seen)


def test_a_dropped_connection_on_every_attempt_stops_in_one_line():
    sleeps = []
    answers = [httpx.ConnectError("boom")] * 3
    batches, seen = _batches(answers, sleeps)
    with pytest.raises(JudgeFatalError, match=r"ConnectError after 3 attempts; run the same command again") as exc:
        asyncio.run(batches._call("GET", f"{BASE}/v1/messages/batches/b1?x=1"))
    assert sleeps == [1.0, 2.0] and len(seen) == 3
    assert "?x=1" not in str(exc.value) and KEY not in str(exc.value)


def test_a_transient_status_on_the_last_attempt_names_the_status():
    sleeps = []
    batches, _ = _batches([(500, {"error": {"message": "a"}}), (502, {"error": {"message": "down"}})], sleeps, 2)
    with pytest.raises(JudgeFatalError, match=r"answered 502: down"):
        asyncio.run(batches._call("GET", f"{BASE}/v1/messages/batches/b1"))
    assert sleeps == [1.0]


def test_a_refusal_is_not_retried(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # what the judge reads the key from: redacted as a secret
    sleeps = []
    batches, seen = _batches([(401, {"error": {"message": f"bad key {KEY}"}})], sleeps)
    with pytest.raises(JudgeFatalError, match=r"answered 401: bad key \[REDACTED\]") as exc:
        asyncio.run(batches._call("POST", f"{BASE}/v1/messages/batches", {"requests": []}))
    assert sleeps == [] and len(seen) == 1 and KEY not in str(exc.value)
