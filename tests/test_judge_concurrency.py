"""Adaptive judge concurrency: halve on 429, grow by one after a window of successes, never above
the maximum; against a simulated provider that answers 429 past a concurrency capacity."""

from __future__ import annotations

import asyncio

import pytest

from evalkit.judges.concurrency import AdaptiveLimiter, request_slot, use_limiter


class RateLimited(Exception):
    status_code = 429


class Provider:
    """Answers 429 to a request that arrives while ``capacity`` requests are already being served."""

    def __init__(self, capacity: int, latency: float = 0.002):
        self.capacity, self.latency = capacity, latency
        self.active = 0
        self.answers: list[str] = []

    async def request(self) -> None:
        if self.active >= self.capacity:
            self.answers.append("429")
            await asyncio.sleep(0)
            raise RateLimited()
        self.active += 1
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.active -= 1
        self.answers.append("ok")


async def call(provider: Provider) -> None:
    """A judge's retry loop: each attempt in a slot; after a 429, wait (Retry-After) and retry."""
    while True:
        try:
            async with request_slot():
                await provider.request()
            return
        except RateLimited:
            await asyncio.sleep(provider.latency)


async def judge_all(limiter: AdaptiveLimiter | None, provider: Provider, items: int, workers: int) -> list[int]:
    """``workers`` tasks pull items (the runner's fixed pool, sized by --concurrency)."""
    limits: list[int] = []
    queue = list(range(items))

    async def worker() -> None:
        while queue:
            queue.pop()
            await call(provider)
            if limiter is not None:
                limits.append(limiter.limit)

    with use_limiter(limiter):
        await asyncio.gather(*(worker() for _ in range(workers)))
    return limits


def test_settles_near_capacity_with_few_429s():
    provider = Provider(capacity=4)
    limiter = AdaptiveLimiter(16)
    limits = asyncio.run(judge_all(limiter, provider, items=600, workers=16))
    settled = provider.answers[len(provider.answers) // 5 :]  # after the first fifth
    assert settled.count("429") / len(settled) < 0.10
    assert settled.count("ok") >= 400
    assert max(limits[len(limits) // 5 :]) <= 8 and limiter.lowest >= 1
    assert limiter.decreases >= 2  # it found the limit by halving, from 16


def test_without_a_limiter_the_same_provider_sees_a_429_storm():
    provider = Provider(capacity=4)
    asyncio.run(judge_all(None, provider, items=600, workers=16))
    assert provider.answers.count("429") / len(provider.answers) > 0.5  # what the limiter prevents


def test_a_burst_of_429s_halves_once():
    async def scenario() -> AdaptiveLimiter:
        limiter = AdaptiveLimiter(8)
        epochs = [await limiter.acquire() for _ in range(8)]
        for e in epochs:  # all eight were sent under the old limit and all come back 429
            limiter.on_rate_limited(e)
        return limiter

    limiter = asyncio.run(scenario())
    assert limiter.limit == 4 and limiter.decreases == 1 and limiter.rate_limited == 8


def test_grows_by_one_after_a_window_of_successes_and_never_above_the_maximum():
    async def scenario() -> list[int]:
        limiter = AdaptiveLimiter(6, grow_after=3)
        limiter.on_rate_limited(await limiter.acquire())
        await limiter.release()
        assert limiter.limit == 3
        seen = [limiter.limit]
        for _ in range(60):
            async with limiter.slot():
                pass
            seen.append(limiter.limit)
        return seen

    seen = asyncio.run(scenario())
    assert seen[0] == 3
    assert seen[3] == 4 and seen[2] == 3  # 3 successes in a row, then one more slot
    assert max(seen) == 6 and seen[-1] == 6


def test_limit_never_drops_below_one_and_rejects_a_zero_maximum():
    async def scenario() -> int:
        limiter = AdaptiveLimiter(2)
        for _ in range(5):
            limiter.on_rate_limited(limiter.epoch)
        return limiter.limit

    assert asyncio.run(scenario()) == 1
    with pytest.raises(ValueError):
        AdaptiveLimiter(0)


def test_request_slot_without_a_limiter_does_not_wait():
    async def one() -> str:
        async with request_slot():
            return "sent"

    assert asyncio.run(one()) == "sent"  # a judge used outside a run (a one-off call)
