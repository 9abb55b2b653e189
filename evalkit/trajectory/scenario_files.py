"""Scenario files: a team's tasks in one file, named by the runs that were recorded against them.

A scenario file is JSON (one scenario object, a list of them, or ``{"scenarios": [...]}``), JSON
Lines (one scenario per line) or TOML (one scenario as the whole file, or ``[[scenarios]]`` tables);
every scenario has an ``id``, unique across the files given. A run whose meta record has a
``scenario_id`` and no embedded ``scenario`` is scored against the file's scenario of that id. A run
that embeds its scenario keeps it (it is what the run saw): when the file has a different scenario
under the same id, the reader warns, naming both. Without scenario files given, a run that names
its scenario takes it from ``scenarios.json`` (else ``scenarios.toml``) in its own directory.

Problems are reported as ``path:line: scenario.<field path>: reason``; :func:`scenario_problems`
lists them all (``evalkit check``), :func:`load_scenarios` raises the first.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_json

from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.input_files import path_list, read_bytes, shown_name
from evalkit.trajectory.safe_json import JSONProblem
from evalkit.trajectory.scenario import Scenario, suggestion
from evalkit.trajectory.values import canonical_json

SCENARIO_SUFFIXES = (".json", ".jsonl", ".toml")


@dataclass(frozen=True, slots=True)
class Entry:
    """One scenario as written: where it starts, its text (to find a key's line), the object."""

    path: str
    line: int | None
    text: str
    raw: Any


@dataclass(frozen=True, slots=True)
class ScenarioSet:
    """Scenarios by id, each as written (``raw``) and where (``path:line``); sent to workers as is."""

    by_id: dict[str, tuple[dict[str, Any], str]]
    invalid: dict[str, str] = field(default_factory=dict)  # an invalid scenario's id -> where it is

    def __contains__(self, scenario_id: object) -> bool:
        return scenario_id in self.by_id

    def __len__(self) -> int:
        return len(self.by_id)


def _elements(path: str, text: str, start: int) -> list[Entry]:
    """The elements of the JSON list at ``text[start]``, each with its first line (the standard
    library's decoder gives positions; the text already passed safe_json's rules)."""
    decoder = json.JSONDecoder(object_pairs_hook=safe_json.object_pairs_hook)
    ws = re.compile(r"\s*")
    pos = ws.match(text, start + 1).end()
    out: list[Entry] = []
    while pos < len(text) and text[pos] != "]":
        value, end = decoder.raw_decode(text, pos)
        out.append(Entry(path, text.count("\n", 0, pos) + 1, text[pos:end], value))
        pos = ws.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = ws.match(text, pos + 1).end()
    return out


def read_entries(path: str) -> list[Entry]:
    """The scenarios a file holds, as written. InputError when the file cannot be read or parsed."""
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, None, "not UTF-8 text") from None
    suffix = Path(path).suffix.lower()
    if suffix == ".toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(path, None, f"invalid TOML: {exc}") from None
        items = doc["scenarios"] if set(doc) == {"scenarios"} and isinstance(doc["scenarios"], list) else [doc]
        entries = [Entry(path, _toml_line(text, item), text, item) for item in items]
        for entry in entries:
            if (found := _toml_date(entry.raw, ())) is not None:
                loc, value = found
                raise InputError(
                    path,
                    locate(entry, loc, None),
                    f"{_where(loc)}: the TOML date or time {value.isoformat()} has no JSON form, and runs "
                    f'send dates as text: quote it ("{value.isoformat()}")',
                )
        return entries
    if suffix == ".jsonl":
        entries = safe_json.json_lines(text, lambda n, reason: InputError(path, n, f"not valid JSON: {reason}"))
        return [Entry(path, n, line, value) for (n, value), line in zip(entries, _nonblank(text))]
    try:
        doc = safe_json.loads(data)
    except JSONProblem as exc:
        raise InputError(path, exc.line, f"not valid JSON: {exc.reason}") from None
    if isinstance(doc, dict) and set(doc) == {"scenarios"} and isinstance(doc["scenarios"], list):
        return _elements(path, text, text.index("[", text.index('"scenarios"')))
    if isinstance(doc, list):
        return _elements(path, text, text.index("["))
    return [Entry(path, 1, text, doc)]


def _nonblank(text: str) -> Iterable[str]:
    return (line for line in text.split("\n") if line.strip())


def _toml_date(value: Any, loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any] | None:
    """Where the first date, time or date-time of a parsed TOML value is, and it."""
    if isinstance(value, (datetime.date, datetime.time)):  # datetime.datetime is a date
        return loc, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if (found := _toml_date(item, (*loc, key))) is not None:
            return found
    return None


def _toml_line(text: str, item: Any) -> int | None:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    m = re.search(r'^\s*id\s*=\s*["\']' + re.escape(item["id"]) + r'["\']', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _where(loc: tuple[Any, ...]) -> str:
    out = "scenario"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def locate(entry: Entry, loc: tuple[Any, ...], needle: str | None) -> int | None:
    """The line of ``loc`` in the entry's text: each key of the path found after the one before
    it, then ``needle`` (a quoted name or key); the entry's first line when nothing is found. A TOML
    entry's text is the whole file: the search keeps to the entry's own table (from its ``id``
    line to the next ``[[scenarios]]``)."""
    if entry.line is None:
        return None
    text, pos = entry.text, 0
    toml = Path(entry.path).suffix.lower() == ".toml"
    if toml:
        for _ in range(entry.line - 1):
            pos = text.index("\n", pos) + 1
        end = re.compile(r"^\s*\[\[\s*scenarios\s*\]\]", re.M).search(text, pos)
        text = text if end is None else text[: end.start()]
    after = pos
    for part in loc:
        if isinstance(part, str):
            hit = re.compile(r'["\']?' + re.escape(part) + r'["\']?\s*[:=]').search(text, after)
            if hit is not None:
                pos, after = hit.start(), hit.end()
        elif not toml and (at := _element(text, after, part)) is not None:
            pos = after = at
    if needle is not None:
        for candidate in (needle, needle.strip('"')):
            found = text.find(candidate, pos)
            if found >= 0:
                pos = found
                break
    offset = text.count("\n", 0, pos)
    return offset + 1 if toml else entry.line + offset


def _element(text: str, pos: int, index: int) -> int | None:
    """Where element ``index`` of the JSON array that opens next after ``pos`` starts, or None."""
    start = text.find("[", pos)
    if start < 0 or text[pos:start].strip():
        return None
    depth, n, in_string = 1, 0, False
    i = start + 1
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif depth == 1 and n == index and c not in ", \t\r\n]":
            return i
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return None
        elif c == "," and depth == 1:
            n += 1
        i += 1
    return None


# "ground_truth.procedure[0].actions[2]: tool "x" ...": a problem the whole scenario sees, about one place
_PLACED = re.compile(r"(ground_truth(?:\.\w+|\[\d+\])*): (.*)", re.S)


def _placed(entry: Entry, loc: tuple[Any, ...], message: str) -> tuple[int | None, str]:
    """The line of a problem and its text: at the unknown key it names, else at its path (one the
    scenario's own validator names at the head of the message), then at the first quoted name."""
    m = re.match(r'unknown key "([^"]*)"', message)
    if m is not None:
        return locate(entry, loc, f'"{m.group(1)}"'), f"{_where(loc)}: {message}"
    if not loc and (head := _PLACED.match(message)):
        loc = tuple(int(p) if p.isdigit() else p for p in re.findall(r"\w+", head.group(1)))
        message = head.group(2)
    quoted = re.search(r'"[^"]*"', message)
    return locate(entry, loc, quoted.group(0) if quoted else None), f"{_where(loc)}: {message}"


def scenario_problems(entry: Entry) -> tuple[Scenario | None, list[InputError]]:
    """The scenario of ``entry`` and every problem found in it (none: the scenario is usable)."""
    if not isinstance(entry.raw, dict):
        return None, [
            InputError(entry.path, entry.line, f"scenario: expected an object, got {type(entry.raw).__name__}")
        ]
    problems = []
    raw = entry.raw
    typos = Scenario.typos(raw)
    for key in typos:  # reported here one by one, so that the rest is still checked
        problems.append(
            InputError(
                entry.path,
                locate(entry, (), f'"{key}"'),
                f"scenario: {Scenario.unknown_key(key)}",
            )
        )
    raw = {k: v for k, v in raw.items() if k not in typos}
    try:
        scenario = Scenario.model_validate(raw)
        return (None if problems else scenario), problems
    except ValidationError as exc:
        for err in exc.errors():
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "literal_error" and isinstance(err.get("input"), str):
                allowed = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
                message = f'"{err["input"]}": {message}{suggestion(err["input"], allowed)}'
            problems.append(InputError(entry.path, *_placed(entry, err["loc"], message)))
        return None, problems


def load_scenarios(paths: Iterable[str | Path]) -> ScenarioSet:
    """The scenarios of the files ``paths`` by id. InputError on the first problem (a bad file, a
    bad scenario, a missing or repeated id)."""
    by_id: dict[str, tuple[dict[str, Any], str]] = {}
    for path in path_list(paths, "paths"):
        for entry in read_entries(str(path)):
            scenario, problems = scenario_problems(entry)
            if problems:
                raise problems[0]
            assert scenario is not None
            where = f"{entry.path}:{entry.line}" if entry.line is not None else entry.path
            if scenario.id in by_id:
                raise InputError(
                    entry.path,
                    entry.line,
                    f'scenario.id: "{scenario.id}" is already the id of the scenario at {by_id[scenario.id][1]}',
                )
            by_id[scenario.id] = (entry.raw, where)
    return ScenarioSet(by_id)


def load_given_scenarios(paths: Iterable[str | Path]) -> ScenarioSet:
    """:func:`load_scenarios` for the files a command was given (``--scenarios``): its InputError
    says that nothing is scored while one of them has a problem, and where to see them all."""
    try:
        return load_scenarios(paths)
    except InputError as exc:
        raise InputError(
            exc.path,
            exc.line,
            f"{exc.message}; nothing is scored while a scenario file given has a problem "
            "('evalkit check' lists every one)",
        ) from None


BESIDE_NAMES = ("scenarios.json", "scenarios.toml", "scenarios.jsonl")
_BESIDE: dict[str, tuple[tuple[int, int, int], ScenarioSet | InputError]] = {}  # file -> (its stat, what it held)
_BESIDE_MAX = 64


def scenarios_beside(path: str) -> tuple[ScenarioSet, str] | None:
    """The scenario file in the directory of the run ``path`` (``scenarios.json``, else
    ``scenarios.toml``, else ``scenarios.jsonl``) and its name, None when there is none (or ``path`` is no local file).
    Read once per process while it is unchanged. InputError when it is bad."""
    if "://" in path or not os.path.isfile(path):
        return None
    for name in BESIDE_NAMES:
        candidate = os.path.join(os.path.dirname(path), name)
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        key = os.path.abspath(candidate)
        cached = _BESIDE.get(key)
        if cached is None or cached[0] != stamp:
            if len(_BESIDE) >= _BESIDE_MAX:
                _BESIDE.pop(next(iter(_BESIDE)))
            try:
                found: ScenarioSet | InputError = load_scenarios([candidate])
            except InputError as exc:
                found = exc
            _BESIDE[key] = cached = (stamp, found)
        if isinstance(cached[1], InputError):
            raise cached[1]
        return cached[1], candidate
    return None


def fill_scenario(meta: dict[str, Any], scenarios: ScenarioSet | None, path: str, lineno: int) -> bool:
    """Give a meta record that names its scenario (``scenario_id``, no ``scenario``) the file's one,
    before it is validated. True when it did. Without scenario files given, the scenario file
    beside the run is used (:func:`scenarios_beside`): a folder of runs carries its tasks.
    ``path``: the run's real name (the errors show it as input_files.shown_name does)."""
    if "scenario" in meta:
        return False
    sid = meta.get("scenario_id")
    if not isinstance(sid, str):
        return False  # validating the record says what is missing
    where = "the scenario file(s) given"
    if scenarios is None:
        beside = scenarios_beside(path)
        if beside is None:
            raise InputError(
                shown_name(path),
                lineno,
                f'meta.scenario_id: "{sid}" names a scenario that is not embedded: '
                f"pass the file that holds it (--scenarios FILE) or put it beside the run ({BESIDE_NAMES[0]})",
            )
        scenarios, where = beside[0], f"{beside[1]} (the scenario file beside the run)"
    if sid in scenarios.invalid:
        raise InputError(
            shown_name(path),
            lineno,
            f'meta.scenario_id: the scenario "{sid}" at {scenarios.invalid[sid]} is invalid '
            "(its problem is named there)",
        )
    if sid not in scenarios:
        raise InputError(
            shown_name(path),
            lineno,
            f'meta.scenario_id: no scenario "{sid}" in {where}'
            + suggestion(sid, [*scenarios.by_id, *scenarios.invalid]),
        )
    meta["scenario"] = scenarios.by_id[sid][0]
    return True


# a file scenario's JSON -> its canonical content and content hash (None: invalid)
_CANONICAL: dict[bytes, tuple[str, str] | None] = {}
_CANONICAL_MAX = 256


def _content(scenario: Scenario) -> str:
    """What a scenario says, whatever the key order it was written in (an importer sorts keys)."""
    return canonical_json(scenario.bundle_part)


def warn_if_differs(
    meta: dict[str, Any], scenarios: ScenarioSet, path: str, lineno: int, warn: Callable[[str], None] | None
) -> None:
    """Warn when the scenario a run embeds says something else than the file's scenario of the same
    id (compared by content: canonical JSON, key order ignored)."""
    embedded = meta.get("scenario")
    if warn is None or not isinstance(embedded, Scenario) or embedded.id not in scenarios:
        return
    raw, where = scenarios.by_id[embedded.id]
    key = to_json(raw)
    if key not in _CANONICAL:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.pop(next(iter(_CANONICAL)))
        try:
            theirs = Scenario.model_validate(raw)
            _CANONICAL[key] = (_content(theirs), theirs.content_hash)
        except ValidationError:
            _CANONICAL[key] = None  # reported when the file was loaded
    known = _CANONICAL[key]
    if known is not None and known[0] != _content(embedded):
        warn(
            f'{path}:{lineno}: warning: the embedded scenario "{embedded.id}" ({embedded.content_hash}) differs from '
            f"the one of the same id at {where} ({known[1]}); the embedded one is scored (it is what the run saw)"
        )
