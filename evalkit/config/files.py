"""Configuration files: one TOML reader, one validation step, one error.

Every TOML file evalkit reads (the audit pairings, the contamination declaration, the judge
configuration, the probes, the judge's rubrics) goes through :func:`load_toml`, then through a pydantic model built on
:class:`ConfigModel` (unknown keys rejected, no silent type coercion). Whatever is wrong becomes a
:class:`ConfigError`, an :class:`~evalkit.errors.InputError` whose ``str()`` is one line:
``path:line: invalid TOML: ...`` for a syntax error, ``path: key.path: reason`` for a value.

One discovery rule and one merge rule for every configuration ``NAME`` (``judge``, ``pairings``,
``probes``, ``contamination``), :func:`load_layered`:

- **Discovery.** The user's file is the first of: the command's flag (``--pairings FILE``,
  ``--judge-config FILE``, ``--probes-config FILE``, ``--contamination FILE``), the environment
  variable ``EVALKIT_<NAME>_CONFIG``, ``.evalkit/<NAME>.toml`` in the current directory. At most one
  user file is read. The shipped ``configs/<NAME>.toml`` is always the base.
- **Merge.** The user's file is laid over the shipped one table by table, recursively: a key the
  user sets replaces the shipped value, a table merges key by key, an array of tables whose entries
  carry a ``name`` (the audit's ``[[pairing]]``) merges entry by entry by ``name`` (new names are
  appended in the user's order), any other array is replaced. ``replace_defaults = true`` at the top
  of the user's file drops the shipped file instead. A configuration that is a declaration rather
  than settings (``contamination``) is taken whole: the user's file replaces the shipped one.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from evalkit.errors import InputError

__all__ = [
    "ConfigError",
    "ConfigModel",
    "find_user_config",
    "key_path",
    "load_layered",
    "load_toml",
    "merge_config",
    "read_toml",
    "validate",
]

USER_DIR = Path(".evalkit")

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
        msg = msg[len("Value error, ") :]
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


def find_user_config(name: str, explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The user's file for configuration ``name`` by the discovery rule (module docstring), or None."""
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(f"EVALKIT_{name.upper()}_CONFIG")
    if from_env:
        return Path(from_env)
    local = USER_DIR / f"{name}.toml"
    return local if local.is_file() else None


def merge_config(base: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """``user`` laid over ``base`` by the merge rule (module docstring); neither is changed."""
    out = dict(base)
    for key, value in user.items():
        old = out.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            out[key] = merge_config(old, value)
        elif _named_tables(value) and _named_tables(old):
            merged = {entry["name"]: dict(entry) for entry in old}
            for entry in value:
                merged[entry["name"]] = dict(entry)  # insertion order: shipped names first, new ones after
            out[key] = list(merged.values())
        else:
            out[key] = value
    return out


def _named_tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(e, dict) and "name" in e for e in value)


def load_layered(
    name: str,
    explicit: str | os.PathLike[str] | None = None,
    *,
    what: str | None = None,
    read: Callable[[Path], dict[str, Any]] | None = None,
    whole: bool = False,
    shipped: Path | None = None,
) -> tuple[dict[str, Any], str]:
    """The configuration ``name``: the shipped file with the user's file (found by the discovery
    rule) laid over it. Returns the merged document and the path to name in errors (the user's file
    when there is one). ``read`` parses (and may validate) one file; ``whole``: the user's file
    replaces the shipped one (a declaration, not settings)."""
    what = what or f"{name} config"
    read = read or (lambda path: load_toml(path, what))
    if shipped is None:
        from evalkit.config.resources import data_dir

        shipped = data_dir("configs") / f"{name}.toml"
    base = read(shipped) if shipped.is_file() else {}
    user_path = find_user_config(name, explicit)
    if user_path is None:
        return base, str(shipped)
    user = dict(read(user_path))
    if whole or user.pop("replace_defaults", False):
        return user, str(user_path)
    return merge_config(base, user), str(user_path)
