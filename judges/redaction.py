"""Keep API keys out of everything the judge stores or prints.

Keys are read by litellm from the environment; evalkit never stores them. As a second line of
defence, any text about to be stored (error messages, raw replies) has the values of secret-looking
environment variables replaced, since some providers echo the key back in an error message.
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


def redact(text: str | None) -> str | None:
    if not text:
        return text
    for value in secret_values():
        text = text.replace(value, "[REDACTED]")
    return _BEARER.sub(r"\1[REDACTED]", text)
