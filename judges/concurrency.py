"""Adaptive concurrency for judge calls: settle near the provider's rate limit without hand tuning.

An AIMD limit on the HTTP requests in flight, in the manner of TCP congestion control:

* it starts at ``maximum`` (``--concurrency``) and never goes above it, nor below 1;
* a 429 (rate limited) halves it — once per burst: 429s answered to requests sent before the limit
  last dropped do not halve it again (they were sent under the old limit);
* after ``grow_after`` successes in a row (default: one full window without a 429 — as many as the
  current limit — and at least ``MIN_RUN``) it grows by one. The floor keeps probing rare at small
  limits, where each probe past the provider's capacity costs a 429 out of few requests.

Every request attempt, retries included, takes a slot: a request answered 429 gives its slot back
while it waits to retry, so the retries of a burst do not become a storm of their own. A judge wraps
each request in :func:`request_slot`; the run's limiter is found through a context variable (set by
:func:`use_limiter`), so a plugin judge needs nothing else, and without a limiter the slot is free.
A request that raises an exception with ``status_code == 429`` counts as rate limited.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

MIN_RUN = 16

_CURRENT: contextvars.ContextVar[AdaptiveLimiter | None] = contextvars.ContextVar("evalkit_judge_limiter", default=None)


def is_rate_limit(exc: BaseException) -> bool:
    return getattr(exc, "status_code", None) == 429


class AdaptiveLimiter:
    """At most ``limit`` requests at once; ``limit`` adapts between 1 and ``maximum``."""

    def __init__(self, maximum: int, grow_after: int | None = None):
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        self.maximum = maximum
        self.limit = maximum
        self.grow_after = grow_after
        self.in_flight = 0
        self.epoch = 0  # bumped at every decrease
        self.rate_limited = 0  # 429s seen
        self.lowest = maximum
        self._streak = 0
        self._changed: asyncio.Condition | None = None

    @property
    def decreases(self) -> int:
        """How many times a 429 halved the limit (each decrease starts a new epoch)."""
        return self.epoch

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:  # created inside the running loop
            self._changed = asyncio.Condition()
        return self._changed

    async def acquire(self) -> int:
        """Wait for a free slot; returns the epoch the request starts in."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self.epoch

    async def release(self) -> None:
        changed = self._condition()
        async with changed:
            self.in_flight -= 1
            changed.notify_all()

    def on_rate_limited(self, started_epoch: int) -> None:
        self.rate_limited += 1
        self._streak = 0
        if started_epoch == self.epoch and self.limit > 1:
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self.epoch += 1

    def on_success(self) -> None:
        self._streak += 1
        if self.limit < self.maximum and self._streak >= (self.grow_after or max(self.limit, MIN_RUN)):
            self.limit += 1
            self._streak = 0  # release() wakes the waiters for the new slot

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for one request; a 429 raised inside it lowers the limit."""
        epoch = await self.acquire()
        try:
            yield
        except BaseException as exc:
            if is_rate_limit(exc):
                self.on_rate_limited(epoch)
            raise
        else:
            self.on_success()
        finally:
            await self.release()


@contextmanager
def use_limiter(limiter: AdaptiveLimiter | None) -> Iterator[AdaptiveLimiter | None]:
    """Make ``limiter`` the one :func:`request_slot` uses in this context (tasks created inside inherit it)."""
    token = _CURRENT.set(limiter)
    try:
        yield limiter
    finally:
        _CURRENT.reset(token)


@asynccontextmanager
async def request_slot() -> AsyncIterator[None]:
    """Wrap one request: waits for the current limiter's slot (none set: no wait)."""
    limiter = _CURRENT.get()
    if limiter is None:
        yield
        return
    async with limiter.slot():
        yield
