"""Read a JSON list file element by element, remembering the line where each element starts,
so an importer can say ``path:LINE: record N: ...`` about a file that is one big JSON value; and read
a JSONL file line by line, saying so when it is given one JSON document over several lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from evalkit.importers import ImportFormatError
from evalkit.trajectory import input_files, safe_json
from evalkit.trajectory.safe_json import MAX_INT_DIGITS, JSONProblem, check_nesting, object_pairs_hook

_WS = " \t\n\r"


def _skip(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def read_text(path: str) -> str:
    """A regular file within the size limit, as UTF-8 text (see evalkit.trajectory.input_files)."""
    return input_files.read_text(path)


def iter_json_lines(path: str, text: str, what: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, value)`` for each non-blank line of a JSONL text (``what``: what a line holds).
    A first line that is not JSON, in a file that as a whole is one JSON document (pretty-printed
    JSON, the usual mistake), is reported as that: the line's own parse error would say "EOF while
    parsing" about a file with nothing wrong but its layout. Such a document cut short is reported
    where it ends, not at its first line."""

    def problem(lineno: int, reason: str) -> ImportFormatError:
        start = len(text) - len(text.lstrip())
        first = text.count("\n", 0, text.rfind("\n", 0, start) + 1) + 1  # the first non-blank line
        if lineno == first:
            try:
                document = safe_json.loads(text)
            except JSONProblem as exc:
                if exc.truncated and reason.startswith("EOF while parsing") and exc.line and exc.line > lineno:
                    return ImportFormatError(
                        path, exc.line, f"not valid JSON: the file ends inside a JSON value ({exc.reason})"
                    )
                document = None
            if isinstance(document, (list, dict)):
                lines = text.count("\n", start, len(text.rstrip())) + 1
                kind, fix = ("list", "jq -c '.[]' FILE writes one element a line")
                if isinstance(document, dict):
                    kind, fix = ("object", "jq -c . FILE writes it on one line")
                return ImportFormatError(
                    path,
                    lineno,
                    f"expected JSONL, one JSON document per line ({what}), got one JSON {kind} over {lines} lines"
                    f" ({fix})",
                )
        return ImportFormatError(path, lineno, f"not valid JSON: {reason}")

    yield from safe_json.json_lines(text, problem)


def iter_json_list(path: str, text: str, what: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, element)`` for each element of the top-level JSON list in ``text``, under the
    rules of evalkit.trajectory.safe_json (depth, integer size, duplicate keys)."""
    try:
        check_nesting(text)
    except JSONProblem as exc:
        raise ImportFormatError(path, exc.line, f"not valid JSON: {exc.reason}") from None
    decoder = json.JSONDecoder(object_pairs_hook=object_pairs_hook)
    line, upto = 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, upto
        line += text.count("\n", upto, pos)
        upto = pos
        return line

    i = _skip(text, 0)
    if i >= len(text):
        raise ImportFormatError(path, None, f"empty file; expected {what}")
    if text[i] != "[":
        raise ImportFormatError(path, line_at(i), f"expected {what}")
    i = _skip(text, i + 1)
    if i < len(text) and text[i] == "]":
        if _skip(text, i + 1) != len(text):
            raise ImportFormatError(path, line_at(_skip(text, i + 1)), "unexpected data after the JSON list")
        return
    while True:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(path, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        except JSONProblem as exc:  # a duplicate key
            raise ImportFormatError(path, line_at(i), f"not valid JSON: {exc.reason}") from None
        except RecursionError:
            raise ImportFormatError(path, line_at(i), "not valid JSON: nested too deeply") from None
        except ValueError:  # Python's int-to-string limit
            raise ImportFormatError(
                path, line_at(i), f"not valid JSON: integer too large (more than {MAX_INT_DIGITS} digits)"
            ) from None
        yield line_at(i), value
        i = _skip(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if i < len(text) and text[i] == "]":
            if _skip(text, i + 1) != len(text):
                raise ImportFormatError(path, line_at(_skip(text, i + 1)), "unexpected data after the JSON list")
            return
        raise ImportFormatError(path, line_at(min(i, len(text))), "not valid JSON: expected ',' or ']' in the list")
