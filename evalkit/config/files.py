"""Configuration files: one TOML reader, one validation step, one error.

Every TOML file evalkit reads (the audit pairings, the contamination declaration, the judge
configuration, the probes, the judge's rubrics) goes through :func:`load_toml`, then through a pydantic model built on
:class:`ConfigModel` (unknown keys rejected, no silent type coercion). Whatever is wrong becomes a
:class:`ConfigError`, an :class:`~evalkit.errors.InputError` whose ``str()`` is one line:
``path:line: invalid TOML: ...`` for a syntax error, ``path: key.path: reason`` for a value.
"""
from __future__ import annotations

import os
import re
import tomllib
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from evalkit.errors import InputError

__all__ = ["ConfigError", "ConfigModel", "key_path", "load_toml", "read_toml", "validate"]

M = TypeVar("M", bound=BaseModel)


class ConfigError(InputError):
    """A configuration file that cannot be used; ``str()`` names the file and the key (or line)."""


class ConfigModel(BaseModel):
    """Base of every configuration model: unknown keys are errors, values keep their TOML type
    (``"0.7"`` is not a number, ``1`` is not ``true``; an integer is accepted where a float is)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


_AT_LINE = re.compile(r" ?\(at line (\d+), column \d+\)")


def load_toml(path: str | os.PathLike[str], what: str = "config") -> dict[str, Any]:
    """Parse one TOML file. ConfigError naming the file (and the line of a syntax error)."""
    return read_toml(path, what)[1]


def read_toml(path: str | os.PathLike[str], what: str = "config") -> tuple[bytes, dict[str, Any]]:
    """The file's bytes and its parsed TOML (for a caller that hashes what it read, such as a
    rubric). ConfigError naming the file (and the line of a syntax error)."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ConfigError(source, None, f"no such {what} file") from None
    except IsADirectoryError:
        raise ConfigError(source, None, f"{what} path is a directory") from None
    except OSError as exc:
        raise ConfigError(source, None, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data, tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(source, None, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _AT_LINE.search(msg)
        raise ConfigError(source, int(m.group(1)) if m else None, f"invalid TOML: {_AT_LINE.sub('', msg)}") from None


def key_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the key path a user would write: ``pairing[0].when.value``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _reason(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key missing"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if kind.endswith("_type") or kind in ("literal_error", "greater_than_equal", "less_than_equal", "too_short"):
        return f"{msg[0].lower() + msg[1:]}, got {err['input']!r}"
    return msg


def validate(model: type[M], data: Any, path: str | os.PathLike[str]) -> M:
    """``model`` validated from a parsed file; the first problem becomes a one-line ConfigError
    naming the key path (``path: pairing[0].scale: input should be a valid list, got 'x'``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(str(path), None, f"{key_path(first['loc'])}: {_reason(first)}{more}") from None
