"""Keep API keys out of everything the judge stores or prints.

Keys are read by litellm from the environment; evalkit never stores them. As a second line of
defence, the values of secret-looking environment variables (and keys passed explicitly) are
replaced in everything a judge call yields, since a provider may echo the key in an error and a
model may repeat it in its answer. The litellm judge redacts a reply once, where it enters
evalkit, before it is parsed: the parsed values, the stored annotation, its rationale and the
cached raw reply are then all read from one redacted text, and a cache hit re-reads that same
text, so it yields the same annotation. The request (the prompt quotes the run, which may
contain a key the agent printed) and error texts are redacted before they are stored.
"""

from __future__ import annotations

import os
import re

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)[A-Za-z0-9._\-]{8,}")


_EXTRA: set[str] = set()


def register_secret(value: str) -> None:
    """Also redact a key that was passed explicitly (the Python API's api_key=)."""
    if value and len(value) >= 8:
        _EXTRA.add(value)


def secret_values() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8} | _EXTRA
    return sorted(values, key=len, reverse=True)


def redact(text: str | None, secrets: list[str] | None = None) -> str | None:
    """Secret values and bearer tokens in `text` replaced; `secrets` is `secret_values()` when a
    caller redacts many strings at once (the environment is read at call time, not cached, so a key
    set after import is still redacted)."""
    if not text:
        return text
    for value in secret_values() if secrets is None else secrets:
        text = text.replace(value, "[REDACTED]")
    return _BEARER.sub(r"\1[REDACTED]", text)


def redact_value(value):
    """`redact` applied to every string inside a JSON-like value (dict keys included), the rest
    unchanged: for what is stored as JSON (the request, parsed values). The environment is scanned
    once per value, not once per string inside it (a request holds thousands)."""
    return _redact_in(value, secret_values())


def _redact_in(value, secrets: list[str]):
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {_redact_in(k, secrets): _redact_in(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_in(v, secrets) for v in value]
    return value
