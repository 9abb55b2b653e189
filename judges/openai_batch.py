"""OpenAI's Batch API (and OpenAI-compatible servers), for `evalkit judge --batch`: the requests
uploaded as a JSONL file, a batch made of it with evalkit's submission id in its metadata, polled,
and its output file read. The calls go through litellm's batch and file functions, given by the
judge (judges/litellm_judge.py is the one module that imports litellm); whatever they raise (a 401,
a refused connection, a 5xx after litellm's own retries) becomes one redacted JudgeFatalError line:
the submission is stored, so running the command again resumes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.judges.protocol import JudgeFatalError
from evalkit.judges.redaction import redact

BATCH_TAG = "evalkit_submission"  # the metadata key of a batch's submission id (what find looks for)


def as_dict(value: Any) -> dict:
    """A litellm/openai object (or a dict) as a plain dict."""
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else dict(getattr(value, "__dict__", {}))


class OpenAIBatches:
    """One judge's batches at OpenAI or an OpenAI-compatible server (``kwargs``: the provider,
    api_base, key and timeout every call carries; ``fatal``: the judge's one-line description of an
    error no retry fixes)."""

    inline = False  # the requests go in an uploaded file

    def __init__(self, api: Any, kwargs: dict, fatal: Callable[[BaseException], str]) -> None:
        self.api, self.kwargs, self.fatal = api, kwargs, fatal

    async def _call(self, call, **kwargs):
        try:
            return await call(**kwargs, **self.kwargs)
        except JudgeFatalError:
            raise
        except Exception as exc:  # litellm and openai raise many unrelated classes here
            message = self.fatal(exc).replace(" — not retried;", " — batch call refused;")
            raise JudgeFatalError(redact(f"{call.__name__.lstrip('a')}: {message}")) from None

    async def upload(self, data: bytes, name: str) -> str:
        made = await self._call(self.api.acreate_file, file=(name, data, "application/jsonl"), purpose="batch")
        return str(made.id)

    async def create(self, sub: dict, data: bytes) -> dict:
        """The batch of the submission's uploaded file, its submission id in the metadata."""
        made = await self._call(
            self.api.acreate_batch,
            completion_window="24h",
            endpoint="/v1/chat/completions",
            input_file_id=sub["input_file_id"],
            metadata={BATCH_TAG: sub["submission_id"]},
        )
        return as_dict(made)

    async def find(self, sub: dict) -> dict | None:
        """The batch whose metadata carries this submission id, if the provider has one (a process
        killed between creating a batch and storing its id). Every page of the account's batches
        is read (newest first, `after` the last id of the page before, while `has_more`): a batch
        on a later page, missed, would be submitted and billed again."""
        after: str | None = None
        while True:
            page = await self._call(self.api.alist_batches, limit=100, after=after)
            listed = [as_dict(batch) for batch in getattr(page, "data", None) or []]
            for found in listed:
                if (found.get("metadata") or {}).get(BATCH_TAG) == sub["submission_id"]:
                    return found
            last = listed[-1].get("id") if listed else None
            if not getattr(page, "has_more", False) or not last or last == after:
                return None
            after = str(last)

    async def retrieve(self, batch_id: str) -> dict:
        return as_dict(await self._call(self.api.aretrieve_batch, batch_id=batch_id))

    async def results(self, file_id: str) -> bytes:
        content = await self._call(self.api.afile_content, file_id=file_id)
        return bytes(getattr(content, "content", b"") or b"")
