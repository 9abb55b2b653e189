"""The judge protocol (what any judge is) and its errors; judges are made by
:func:`evalkit.judges.registry.make_judge`.

A judge is any object with

- `model: str` — the resolved model identity (stored as `judge_model`, part of the cache key),
- `params: dict` — the sampling parameters that change answers (part of the cache key),
- `async annotate(bundle: dict, rubric: Rubric) -> Annotation`.

`annotate` returns an `Annotation` whose `status` is "ok" (with `values` validated against the
rubric's reply model) or "judge_error" (with the error and the raw reply, never a made-up score).
It raises `JudgeFatalError` for errors no retry can fix (bad credentials, a bad request), which
stops the whole run.

Optional, used when present (the litellm judge has them): `output_mode` (the mode requests are
made in now; part of the cache key), `start_from(mode)` (the mode remembered for this model and
api_base), `api_base`, `notes` (step-downs to report), `preflight()` (raises
`JudgeSetupError` before any request) and `sent_schema_hashes(rubric)` (mode -> hash of the schema
a request in that mode carries when it is not the rubric's own; part of the cache key).

"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from evalkit.judges.redaction import redact, redact_value
from evalkit.judges.rubrics import Rubric


@dataclass
class Annotation:
    status: str  # "ok" | "judge_error"
    values: dict | None = None  # validated reply (one key per rubric field) when ok
    raw_response: str | None = None  # the last raw reply text, kept for failures too
    error: str | None = None
    request: dict = field(default_factory=dict)  # what was sent, JSON-able, never a secret
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    attempts: int = 0  # HTTP requests made (retries and re-asks included)
    retries: int = 0  # of which transport retries (429, 5xx, timeouts)
    output_mode: str | None = None  # how structured output was asked for (judges/output_modes.py)
    elided_events: int = 0  # transcript events left out to fit the context window
    cached_tokens: int | None = None  # of prompt_tokens, read from the provider's prompt cache
    batch_id: str | None = None  # the provider batch that answered (None: a live call)

    def __post_init__(self) -> None:
        # whatever judge made it (a plugin too), nothing it carries reaches the database unredacted;
        # the litellm judge has redacted already (before parsing), so this changes nothing there
        self.raw_response = redact(self.raw_response)
        self.error = redact(self.error)
        self.request = redact_value(self.request)
        if self.values is not None:
            self.values = redact_value(self.values)


class JudgeFatalError(RuntimeError):
    """An error that retrying cannot fix (401/403/400/404): the run stops with this message."""

    def __init__(self, message: str, annotation: Annotation | None = None):
        super().__init__(message)
        self.annotation = annotation


class JudgeSetupError(ValueError):
    """Found before any request: no API key in the environment, nothing listening at --api-base."""


class UnknownJudgeError(ValueError):
    pass


@runtime_checkable
class Judge(Protocol):
    model: str
    params: dict

    async def annotate(self, bundle: dict, rubric: Rubric) -> Annotation: ...
