"""evalkit's one outbound HTTP client (httpx): no redirect is followed, a reply is bounded while it
is read, and a request ends within one deadline.

Every request evalkit sends (the judge's calls to a model server, its batch calls, `evalkit export
otel --endpoint`) carries something meant for the address the user gave: an API key, a run's
transcript, the headers of an authenticated backend. So it goes there and nowhere else: a 3xx
answer is `Redirected` (naming both URLs), never followed, and a POST is never turned into a GET.
A reply longer than the limit is `ReplyTooLarge`: a Content-Length over it is refused before the
body is read, a body without one is cut as soon as it passes the limit. Compressed replies are
decoded here, under the same limit (counted after decoding, so a small gzip body cannot expand
past it); encodings zlib cannot decode are refused (`identity` is asked for, so only a server that
ignores that sends one). A `Purpose` names the requests and the settings in these errors.

Time: httpx's timeouts are per read, so a server that trickles a byte at a time never trips them.
`within()` bounds a whole request (connect, headers, body) by one deadline; the judge wraps each
attempt of litellm's call the same way (judges/litellm_judge.py).

What one attempt saw is kept on the `Exchange` that `watch()` makes current (the status, the URL
and the body once it was read whole), so the caller can tell "the server answered 200 and could
not be read" from a refusal of the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import zlib
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

T = TypeVar("T")


@dataclass(frozen=True)
class Purpose:
    """How a client's requests are named in its errors."""

    request: str  # "the judge request"
    carries: str  # why it must not go elsewhere
    address: str  # the option that gives the address
    limit_setting: str  # the setting of the reply size limit
    deadline_setting: str  # the setting of the deadline


class ReplyRefused(Exception):
    """A reply evalkit does not read further (too large, an encoding it cannot bound)."""


class ReplyTooLarge(ReplyRefused):
    def __init__(self, limit: int, purpose: Purpose):
        super().__init__(f"the reply is larger than {size_text(limit)} ({purpose.limit_setting}); not read further")


class Redirected(Exception):
    def __init__(self, source: str, target: str, status: int, purpose: Purpose):
        super().__init__(
            f"{purpose.request} to {source} was redirected ({status}) to {target}; evalkit does not "
            f"follow redirects ({purpose.carries}): use the final address as {purpose.address}"
        )
        self.source, self.target, self.status = source, target, status


class DeadlineExceeded(TimeoutError):
    def __init__(self, seconds: float, purpose: Purpose):
        super().__init__(
            f"no complete reply within {seconds:g} s (connect, headers and body; {purpose.deadline_setting})"
        )


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


@dataclass
class Exchange:
    """What the transport saw during one attempt (the last response, when there were several)."""

    url: str | None = None
    status: int | None = None
    body: bytes | None = None  # set once the whole body was read, within the limit
    refused: Exception | None = None  # a Redirected or ReplyRefused raised for this attempt
    chunks: list = field(default_factory=list, repr=False)


_CURRENT: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("outbound_exchange", default=None)


@contextlib.contextmanager
def watch() -> Iterator[Exchange]:
    """Record what the transport sees while the block runs (a mutable record, so a copy of the
    context made by a library in between still writes to the same one)."""
    seen = Exchange()
    token = _CURRENT.set(seen)
    try:
        yield seen
    finally:
        _CURRENT.reset(token)


def _refuse(exc: Exception) -> Exception:
    seen = _CURRENT.get()
    if seen is not None:
        seen.refused = exc
    return exc


class _BoundedBody(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, encoding: str | None, purpose: Purpose):
        self.inner, self.limit, self.read, self.purpose = inner, limit, 0, purpose
        # MAX_WBITS | 32: a gzip or a zlib header, whichever the body has ("deflate" is zlib in HTTP)
        self.decoder = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding else None
        self.seen = _CURRENT.get()

    def _count(self, data: bytes) -> bytes:
        self.read += len(data)
        if self.read > self.limit:
            raise _refuse(ReplyTooLarge(self.limit, self.purpose))
        if self.seen is not None:
            self.seen.chunks.append(data)
        return data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            if self.decoder is None:
                yield self._count(chunk)
                continue
            try:
                # never more than one byte past the limit, whatever the compression ratio
                data = self.decoder.decompress(chunk, self.limit - self.read + 1)
            except zlib.error as exc:
                raise _refuse(ReplyRefused(f"the reply's compressed body is damaged ({exc})")) from None
            yield self._count(data)
            while self.decoder.unconsumed_tail:
                yield self._count(self.decoder.decompress(self.decoder.unconsumed_tail, self.limit - self.read + 1))
        if self.decoder is not None:
            yield self._count(self.decoder.flush())
        if self.seen is not None:
            self.seen.body, self.seen.chunks = b"".join(self.seen.chunks), []

    async def aclose(self) -> None:
        await self.inner.aclose()


_ZLIB = ("gzip", "x-gzip", "deflate")


class BoundedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, with redirects refused and reply bodies bounded (module docstring)."""

    def __init__(self, limit: int, purpose: Purpose, inner: httpx.AsyncBaseTransport | None = None):
        self.limit, self.purpose = limit, purpose
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self.inner.handle_async_request(request)
        seen = _CURRENT.get()
        if seen is not None:
            seen.url, seen.status, seen.body = str(request.url), response.status_code, None
        if 300 <= response.status_code < 400:
            await response.aclose()
            location = response.headers.get("location")
            target = str(request.url.join(location)) if location else "(no Location header)"
            raise _refuse(Redirected(str(request.url), target, response.status_code, self.purpose))
        length = response.headers.get("content-length", "")
        if length.strip().isdigit() and int(length) > self.limit:
            await response.aclose()
            raise _refuse(ReplyTooLarge(self.limit, self.purpose))
        encoding = (response.headers.get("content-encoding") or "identity").strip().lower()
        if encoding not in ("identity", *_ZLIB):
            await response.aclose()
            raise _refuse(
                ReplyRefused(
                    f"the reply is {encoding}-encoded, though evalkit asked for identity "
                    "(it cannot bound the decoded size)"
                )
            )
        headers = response.headers
        if encoding != "identity":  # decoded here: httpx must not decode it again
            headers = httpx.Headers(
                [
                    (k, v)
                    for k, v in response.headers.multi_items()
                    if k.lower() not in ("content-encoding", "content-length")
                ]
            )
        body = _BoundedBody(response.stream, self.limit, None if encoding == "identity" else encoding, self.purpose)
        return httpx.Response(response.status_code, headers=headers, stream=body, extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


def http_client(limit: int, timeout_s: float, purpose: Purpose) -> httpx.AsyncClient:
    """The client: redirects off (a 3xx is refused by the transport anyway), replies bounded,
    each read within timeout_s (the whole request's deadline is `within`)."""
    return httpx.AsyncClient(
        transport=BoundedTransport(limit, purpose), follow_redirects=False, timeout=httpx.Timeout(timeout_s)
    )


async def within(seconds: float, purpose: Purpose, call: Awaitable[T]) -> T:
    """``call`` bounded as a whole (connect, headers, body) by one deadline: `DeadlineExceeded`."""
    timer = asyncio.timeout(seconds)
    try:
        async with timer:
            return await call
    except TimeoutError:
        if timer.expired():
            raise DeadlineExceeded(seconds, purpose) from None
        raise
