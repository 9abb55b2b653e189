"""The one JSON parser every evalkit reader uses: hostile input gives a short reason, never a crash.

Rules (the same for trajectories, importers, ratings files and verdict files):

* **Nesting** deeper than ``MAX_DEPTH`` (200) arrays/objects is an error ("nested deeper than 200
  levels"). Why 200: it is the depth jiter parses, and everything evalkit writes must serialise
  again, wrapped a few levels deeper (a value inside a command row inside a ScoreCard), under
  pydantic-core's serialisation limit of 255 levels. (jiter lets an innermost empty array through at
  201; harmless.)
* **Integers** longer than ``MAX_INT_DIGITS`` (4300, Python's own int-to-string limit) are an error;
  floats never are: ``1e400`` reads as infinity.
* **Duplicate keys** in one object are an error naming the key (JSON leaves them undefined; a
  reader that kept the last one would score a record its author never wrote).
* **Non-finite numbers** ``NaN``, ``Infinity``, ``-Infinity`` are accepted (Python's ``json`` writes
  them); what a reader does with them is its business (see ``evalkit.trajectory.values.count_non_finite``).
* A text that stops **inside** a JSON value (an open string, array or object, a cut-off number or
  literal) raises with ``truncated=True``; a complete value that is invalid (too deep, duplicate key,
  trailing data) never does. Readers use it to tell a half-written last line from a bad one.

The parser is jiter (pydantic-core's parser, with duplicate-key detection). A text it finds too
deep is scanned (without recursion) to tell a value cut short from one that is complete but too deep.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import jiter

# jiter's parser itself, for a reader's loop that calls it directly (as loads_noting_literals does)
jiter_from_json = jiter.from_json
MAX_DEPTH = 200
MAX_INT_DIGITS = 4300

_WHERE = re.compile(r" at line (\d+) column (\d+)$")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


class JSONProblem(ValueError):
    """Why a text is not acceptable JSON. ``line`` is 1-based within the text, when known."""

    def __init__(self, reason: str, line: int | None = None, truncated: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.truncated = truncated


def _nesting(data: bytes) -> tuple[int, int, bool, int]:
    """(max depth, depth at the end, ends inside a string, offset where MAX_DEPTH was passed)."""
    without_strings = _STRING.sub(b'""', data)
    open_string = without_strings.count(b'"') % 2 == 1
    depth = deepest = 0
    too_deep_at = -1
    for m in _BRACKET.finditer(without_strings):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > MAX_DEPTH and too_deep_at < 0:
                    too_deep_at = m.start()
        else:
            depth -= 1
    return deepest, depth, open_string, too_deep_at


def object_pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """For ``json.JSONDecoder(object_pairs_hook=...)``: duplicate keys raise :class:`JSONProblem`."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JSONProblem(f'duplicate key "{key}"')
        obj[key] = value
    return obj


def _too_deep(data: bytes) -> JSONProblem:
    """jiter stopped at its depth limit: either the text was cut short inside a value, or too deep."""
    _, final_depth, open_string, at = _nesting(data)
    if final_depth > 0 or open_string:
        return JSONProblem("the text ends inside a JSON value", truncated=True)
    line = data.count(b"\n", 0, at) + 1 if at >= 0 else None
    return JSONProblem(f"nested deeper than {MAX_DEPTH} levels", line)


def loads(data: bytes | str) -> Any:
    """Parse one JSON text under the rules above. Raises :class:`JSONProblem`."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        # cache_mode="all": repeated strings (keys, tool names, recurring results) share one object
        return jiter.from_json(data, catch_duplicate_keys=True, cache_mode="all")
    except ValueError as exc:
        message = str(exc)
    m = _WHERE.search(message)
    line = int(m.group(1)) if m else None
    reason = message[: m.start()] if m else message
    column = f" (column {m.group(2)})" if m else ""
    if reason.startswith("recursion limit exceeded"):
        raise _too_deep(data)
    if reason.startswith("EOF while parsing"):
        raise JSONProblem(f"{reason}{column}", line, truncated=True)
    if reason.startswith("Detected duplicate key "):
        raise JSONProblem(f"duplicate key {reason[len('Detected duplicate key ') :]}", line)
    if reason.startswith("number out of range"):
        raise JSONProblem(f"integer too large (more than {MAX_INT_DIGITS} digits){column}", line)
    raise JSONProblem(f"{reason}{column}", line)


def json_lines(text: str, error: Callable[[int, str], Exception]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON Lines text (split on ``\n`` only:
    U+2028 and friends are legal inside a JSON string). A line that is not acceptable JSON raises
    ``error(line number, reason)``, the caller's own one-line error."""
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = loads(line)
        except JSONProblem as exc:
            raise error(lineno, exc.reason) from None
        yield lineno, value


def loads_noting_literals(data: bytes) -> tuple[Any, bool]:
    """:func:`loads`, and whether the text may hold ``NaN`` / ``Infinity`` literals. The text is
    parsed first with those refused (as fast as ``loads``); only when that fails is it parsed again
    under the rules above, which accept them or say what is wrong. Numbers that overflow to infinity
    (``1e400``) are not noted: they parse either way."""
    try:
        return jiter.from_json(data, catch_duplicate_keys=True, cache_mode="all", allow_inf_nan=False), False
    except ValueError:
        return loads(data), True


def check_nesting(data: bytes | str) -> None:
    """Raise :class:`JSONProblem` (with its line) when ``data`` nests deeper than ``MAX_DEPTH``; for
    readers that parse with the standard library and need positions (e.g. a JSON list read element
    by element)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    deepest, _, _, at = _nesting(raw)
    if deepest > MAX_DEPTH:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels", raw.count(b"\n", 0, at) + 1)
