"""Reading trajectory files: one file at a time, so memory never grows with the number of files.

Rules: the first record must be ``meta``; a bad line is an error naming ``path:line``; except that a
last line which is not valid JSON (a recorder that crashed mid-write) is dropped with a warning, and
the run then has no ``final`` record (status ``incomplete``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json, to_json

from evalkit.errors import InputError
from evalkit.bundle import RESULT_MAX_CHARS
from evalkit.records import RECORD_TYPES, Final, Meta, Setup, Trajectory
from evalkit.scenario import Scenario

STDIN = "-"
# The validators themselves: calling them directly skips model_validate's Python wrapper, a third
# of the validation cost on the score path.
_VALIDATE = {name: model.__pydantic_validator__.validate_python for name, model in RECORD_TYPES.items()}
EVENT_TYPES = frozenset({"assistant", "nudge", "tool_call", "provider_error", "harness_error"})
Warn = Callable[[str], None]


def _describe(exc: ValidationError, record_type: str) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    where = f"{record_type}.{field}" if field else record_type
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def _split_lines(path: str, data: bytes) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.split("\n")


def parse_trajectory(path: str, data: bytes, warn: Warn | None = None) -> Trajectory:
    """Parse the bytes of one trajectory file. Raises InputError on bad input."""
    lines = _split_lines(path, data)
    last = len(lines)
    while last > 0 and not lines[last - 1].strip():
        last -= 1
    if last == 0:
        raise InputError(path, None, "empty file: expected a meta record on the first line")

    meta: Meta | None = None
    setup: Setup | None = None
    final: Final | None = None
    events: list[Any] = []
    long_lines: set[int] = set()
    unknown = extra = 0
    dropped = False
    for lineno, line in enumerate(lines[:last], 1):
        if not line or line.isspace():
            continue
        try:
            # pydantic-core's parser: about 2.5x faster than json.loads, which is what keeps
            # scoring within a small factor of merely decoding the files.
            obj = from_json(line)
        except ValueError as exc:
            reason = str(exc).replace(" at line 1 column", ", column")
            if lineno == last and meta is not None:
                dropped = True
                if warn:
                    warn(f"{path}:{lineno}: warning: dropped a half-written last line ({reason})")
                break
            raise InputError(path, lineno, f"not valid JSON ({reason})") from None
        if type(obj) is not dict:
            raise InputError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
        rtype = obj.get("type")
        if type(rtype) is not str:
            raise InputError(path, lineno, "record has no string 'type' field")
        if meta is None and rtype != "meta":
            raise InputError(path, lineno, f"the first record must be 'meta', got {rtype!r}")
        if rtype == "meta":
            _share_scenario(obj)
        validate = _VALIDATE.get(rtype)
        if validate is None:
            unknown += 1
            continue
        try:
            record = validate(obj)
        except ValidationError as exc:
            raise InputError(path, lineno, _describe(exc, rtype)) from None
        if record.__pydantic_extra__:
            extra += len(record.__pydantic_extra__)
        if rtype in EVENT_TYPES:
            if final is not None:
                raise InputError(path, lineno, f"a {rtype!r} record after 'final'")
            if rtype == "tool_call" and len(line) > RESULT_MAX_CHARS:
                long_lines.add(len(events))
            events.append(record)
        elif rtype == "meta":
            if meta is not None:
                raise InputError(path, lineno, "a second 'meta' record")
            meta = record
        elif rtype == "setup":
            setup = record
        else:
            if final is not None:
                raise InputError(path, lineno, "a second 'final' record")
            final = record
    assert meta is not None  # the first non-empty line was checked above
    # Every record was validated above; validating the event list again (a union of five models)
    # would cost as much as parsing the file.
    return Trajectory.model_construct(
        path=path,
        meta=meta,
        setup=setup,
        events=events,
        final=final,
        unknown_records=unknown,
        extra_fields=extra,
        dropped_last_line=dropped,
        long_lines=frozenset(long_lines),
    )


_SCENARIOS: dict[bytes, Scenario] = {}
_SCENARIO_CACHE_SIZE = 64


def _share_scenario(meta: dict[str, Any]) -> None:
    """Runs of one scenario embed the same scenario: validate it once and share the object (its
    derived index and bundle part are then computed once too). Keyed by the scenario's exact JSON."""
    raw = meta.get("scenario")
    if not isinstance(raw, dict):
        return
    key = to_json(raw)
    scenario = _SCENARIOS.get(key)
    if scenario is None:
        try:
            scenario = Scenario.model_validate(raw)
        except ValidationError:
            return  # validating the meta record reports it, with the field's path
        if len(_SCENARIOS) >= _SCENARIO_CACHE_SIZE:
            _SCENARIOS.pop(next(iter(_SCENARIOS)))
        _SCENARIOS[key] = scenario
    meta["scenario"] = scenario


def read_trajectory(path: str | Path, warn: Warn | None = None) -> Trajectory:
    """Read one trajectory file (``-`` reads standard input)."""
    name = str(path)
    if name == STDIN:
        return parse_trajectory("<stdin>", sys.stdin.buffer.read(), warn)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(name, None, f"cannot read: {exc.strerror or exc}") from None
    return parse_trajectory(name, data, warn)


def expand_paths(paths: Iterable[str | Path]) -> Iterator[str]:
    """Files as given; directories searched recursively for ``*.jsonl`` in sorted order."""
    for path in paths:
        name = str(path)
        if name == STDIN:
            yield STDIN
            continue
        p = Path(name)
        if p.is_dir():
            for child in sorted(p.rglob("*.jsonl")):
                if child.is_file():
                    yield str(child)
        else:
            yield name

