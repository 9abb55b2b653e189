"""Fit a judge bundle into a model's input limit, deterministically, before anything is sent.

A bundle over the limit keeps everything except the middle of its transcript: the task, the
reference procedure (the ground truth), the success criteria, the final record, and the first and
last transcript events; the events in between are replaced by one explicit marker event that says
how many were left out. The largest number of kept events that fits is found by bisection over
"keep the first ceil(k/2) and the last floor(k/2) events", so the same bundle, rubric and limit
always give the same prompt. When even the first and last events alone do not fit, nothing is
sent: the caller records a judge_error with the token count and the limit.

Token counting is injected (`count(messages) -> int`): the litellm judge passes litellm's
token_counter; this module imports neither litellm nor anything with I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MARKER_KIND = "elided"


@dataclass(frozen=True)
class Fitted:
    bundle: dict
    tokens: int | None
    elided_events: int  # 0 when the bundle was sent whole


class DoesNotFit(ValueError):
    def __init__(self, tokens: int, limit: int):
        super().__init__(
            f"the prompt needs {tokens} tokens even with the transcript's middle left out; "
            f"the model's input limit is {limit} tokens (--max-input-tokens); not sent"
        )
        self.tokens, self.limit = tokens, limit


def marker(count: int) -> dict:
    return {
        "kind": MARKER_KIND,
        "note": f"{count} transcript events left out here to fit the judge's context window; "
        "do not assume anything about them",
    }


def shrink(bundle: dict, keep: int) -> tuple[dict, int]:
    """The bundle with only `keep` transcript events (first ceil(keep/2), last floor(keep/2))."""
    events = list(bundle.get("transcript") or [])
    if keep >= len(events):
        return bundle, 0
    head, tail = (keep + 1) // 2, keep // 2
    left_out = len(events) - head - tail
    kept = events[:head] + [marker(left_out)] + (events[len(events) - tail :] if tail else [])
    return dict(bundle, transcript=kept), left_out


def fit(
    bundle: dict, render: Callable[[dict], list[dict]], count: Callable[[list[dict]], int], limit: int | None
) -> Fitted:
    """The bundle as it will be sent under `limit` prompt tokens (None: no known limit, nothing
    is counted and `tokens` is None)."""
    if limit is None:
        return Fitted(bundle, None, 0)
    tokens = count(render(bundle))
    if tokens <= limit:
        return Fitted(bundle, tokens, 0)
    events = len(bundle.get("transcript") or [])
    smallest = min(2, events)
    shrunk, left_out = shrink(bundle, smallest)
    tokens = count(render(shrunk))
    if tokens > limit:
        raise DoesNotFit(tokens, limit)
    best = (shrunk, tokens, left_out)
    lo, hi = smallest, events - 1  # `lo` fits; find the largest keep count that still fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        candidate, cut = shrink(bundle, mid)
        size = count(render(candidate))
        if size <= limit:
            lo, best = mid, (candidate, size, cut)
        else:
            hi = mid - 1
    return Fitted(*best)
