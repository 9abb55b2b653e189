"""Ratings from humans and judges: the `RatingRow` model, file import, and the combined rater view.

Accepted files (`evalkit annotations import FILE`):

- long CSV / TSV / JSONL with the columns ``item_id, rater, rater_kind, dimension, value`` and an
  optional ``confidence``; ``rater_kind`` is ``human``, ``judge`` (a model grading) or ``mechanical``
  (an external deterministic scorer);
- the computer-use rubric's ``results/scores.csv`` ("wide"): one row per run, one column per dimension. The item
  column is the first of ``item_id, run_id, run, id``; ``rater``/``rater_kind`` columns are used
  when present; the columns in :data:`WIDE_METADATA` are not dimensions; a ``confidence`` column
  belongs to ``outcome``; an empty cell is "not rated".

``--rater NAME`` sets the rater of every row; ``--kind`` the kind where the file has none (default
``human``). Values are normalised so the same label compares equal whatever file it came from: CSV
cells that read as integers become integers ("3" → 3), integral floats become integers (3.0 → 3),
strings are stripped. The whole file is validated before anything is written, then written in one
transaction: a bad file leaves the database as it was. Re-importing replaces the ratings with the
same ``(item_id, rater, dimension)``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from evalkit.db import Rating, write_ratings
from evalkit.db.schema import TABLES
from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.input_files import csv_rows, read_text
from evalkit.trajectory.safe_json import MAX_INT_DIGITS

Value = int | float | str | bool

ID_COLUMNS = ("item_id", "run_id", "run", "id")
WIDE_METADATA = frozenset(
    {
        "rater",
        "rater_kind",
        "scorer",
        "agent",
        "model",
        "task",
        "scenario",
        "scenario_id",
        "date",
        "notes",
        "note",
        "comment",
        "comments",
        "protocol",
        "protocol_version",
        "path",
        "confidence",
    }
)
RATINGS_DDL = TABLES["ratings"].ddl().replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)


class RatingRow(BaseModel):
    """One rating: a rater's value for one dimension of one item."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    item_id: str
    rater: str
    # mechanical: an external deterministic scorer (e.g. an inspect_ai `match` scorer) rating items
    rater_kind: Literal["human", "judge", "mechanical"]
    dimension: str
    value: Value
    confidence: float | None = None

    @field_validator("item_id", mode="before")
    @classmethod
    def _item_id(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        return v

    @field_validator("item_id", "rater", "dimension")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, v: Any) -> Any:
        if v is None:
            raise ValueError("is missing")
        return normalize_value(v)

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, v: float | None) -> float | None:
        if v is not None and not (0.0 <= v <= 1.0):
            raise ValueError("must be a number in [0, 1]")
        return v


def normalize_value(v: Any) -> Any:
    """Put a label in canonical form (see module docstring)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("must be a finite number")
        return int(v) if v.is_integer() else v
    if isinstance(v, str):
        s = v.strip()
        if not s:
            raise ValueError("is empty")
        return s
    if isinstance(v, int):
        return v
    raise ValueError(f"must be a string or a number, got {type(v).__name__}")


def _cell(name: str, line: int, text: str) -> Any:
    try:
        return parse_cell(text)
    except ValueError as exc:  # a non-finite number, an integer past Python's digit limit
        raise InputError(name, line, f"value {text.strip()[:40]!r}: {exc}") from None


def parse_cell(text: str) -> Any:
    """A CSV cell → int, float or string (an empty cell → None)."""
    s = text.strip()
    if not s:
        return None
    if re.fullmatch(r"[+-]?\d+", s):
        if len(s) > MAX_INT_DIGITS:
            raise ValueError(f"integer too large (more than {MAX_INT_DIGITS} digits)")
        return int(s)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", s):
        return normalize_value(float(s))
    return s


def _error_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "row"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "is required"
        elif err["type"] == "literal_error":
            msg = "must be 'human', 'judge' or 'mechanical'"
        parts.append(f"{loc} {msg}")
    return "; ".join(parts)


def _row(path: str, line: int, data: dict[str, Any]) -> RatingRow:
    try:
        return RatingRow.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, line, _error_text(exc)) from None


# ---------------------------------------------------------------------------------------------
# parsing


def read_rating_file(
    path: str | Path,
    rater: str | None = None,
    kind: str | None = None,
    stored: Callable[[set[str]], dict[str, set[Any]]] | None = None,
) -> list[RatingRow]:
    """Parse and validate a whole rating file; raise InputError(path, line, ...) on the first problem.
    A label that means another of the same dimension but is written another way is an error
    (``"Pass"`` against ``"pass"``, ``"3"`` against ``3``: it would count as a disagreement): against
    the file's own labels and the ones ``stored`` gives for the file's dimensions (what the
    database holds)."""
    p = Path(path)
    name = str(path)
    text = read_text(name)  # only a regular file, within the size limit; bad UTF-8 names its line
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson") or (suffix not in (".csv", ".tsv") and text.lstrip().startswith("{")):
        rows = _read_jsonl(name, text, rater, kind)
    else:
        rows = _read_csv(name, text, "\t" if suffix == ".tsv" else ",", rater, kind)
    if not rows:
        raise InputError(name, None, "no ratings found")
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in rows:
        key = (row.item_id, row.rater, row.dimension)
        if key in seen:
            raise InputError(
                name,
                line,
                f"duplicate rating of item {row.item_id!r} by {row.rater!r} on {row.dimension!r} "
                f"(first at line {seen[key]})",
            )
        seen[key] = line
    _one_spelling(name, rows, stored({r.dimension for _, r in rows}) if stored is not None else {})
    return [r for _, r in rows]


def _one_spelling(name: str, rows: list[tuple[int, RatingRow]], stored: dict[str, set[Any]]) -> None:
    """Each label of a dimension written one way (see :func:`read_rating_file`)."""
    spelt: dict[tuple[str, Any], tuple[Any, int | None]] = {}  # (dimension, label's sense) -> (label, line)
    for dimension, labels in stored.items():
        for label in sorted(labels, key=repr):
            spelt.setdefault((dimension, _sense(label)), (label, None))
    for line, row in rows:
        first = spelt.setdefault((row.dimension, _sense(row.value)), (row.value, line))
        if first[0] != row.value or type(first[0]) is not type(row.value):
            where = f"line {first[1]}" if first[1] is not None else "as the database already holds it"
            raise InputError(
                name,
                line,
                f"{row.dimension}: {json.dumps(row.value)} is {json.dumps(first[0])} written another way ({where}): "
                "a label compares as written, so write it one way",
            )


def _sense(label: Any) -> tuple[str, Any]:
    """What a label means, whatever its spelling: a number (``3``, ``"3"``, ``"3.0"``), a boolean
    (``true``, ``"True"``) or a string up to case and spacing."""
    if isinstance(label, bool):
        return ("boolean", label)
    if isinstance(label, (int, float)):
        return ("number", label)
    folded = " ".join(str(label).casefold().split())
    if folded in ("true", "false"):
        return ("boolean", folded == "true")
    try:
        number = parse_cell(folded)
    except ValueError:
        number = None
    if isinstance(number, (int, float)):
        return ("number", number)
    return ("string", folded)


def _fill(data: dict[str, Any], rater: str | None, kind: str | None) -> dict[str, Any]:
    if rater is not None:
        data["rater"] = rater
    if kind is not None and data.get("rater_kind") in (None, ""):
        data["rater_kind"] = kind
    return data


def _read_jsonl(name: str, text: str, rater: str | None, kind: str | None) -> list[tuple[int, RatingRow]]:
    out = []
    for lineno, data in safe_json.json_lines(text, lambda n, reason: InputError(name, n, f"invalid JSON: {reason}")):
        if not isinstance(data, dict):
            raise InputError(name, lineno, "each line must be a JSON object")
        out.append((lineno, _row(name, lineno, _fill(dict(data), rater, kind or "human"))))
    return out


def _read_csv(name: str, text: str, delimiter: str, rater: str | None, kind: str | None) -> list[tuple[int, RatingRow]]:
    rows = csv_rows(name, text, delimiter)
    try:
        _, header = next(rows)
    except StopIteration:
        raise InputError(name, 1, "empty file: a header row is required") from None
    header = [h.strip() for h in header]
    lower = [h.lower() for h in header]
    if len(set(lower)) != len(lower):
        dup = next(h for h in lower if lower.count(h) > 1)
        raise InputError(name, 1, f"duplicate column {dup!r}")
    long_form = "dimension" in lower and "value" in lower
    out: list[tuple[int, RatingRow]] = []
    for line, cells in rows:
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise InputError(name, line, f"expected {len(header)} columns, found {len(cells)}")
        row = dict(zip(lower, cells))
        if long_form:
            out.append((line, _long_row(name, line, row, rater, kind)))
        else:
            out.extend((line, r) for r in _wide_rows(name, line, header, lower, row, rater, kind))
    if not long_form and not out and not any(h in ID_COLUMNS for h in lower):
        raise InputError(
            name, 1, f"no item column: want one of {', '.join(ID_COLUMNS)} (or the long columns dimension, value)"
        )
    return out


def _long_row(name: str, line: int, row: dict[str, str], rater: str | None, kind: str | None) -> RatingRow:
    data: dict[str, Any] = {k: row.get(k) for k in ("item_id", "rater", "rater_kind", "dimension")}
    data = {k: (v.strip() if isinstance(v, str) else v) for k, v in data.items() if v is not None}
    value = _cell(name, line, row["value"])
    if value is None:
        raise InputError(name, line, "value is empty")
    data["value"] = value
    conf = row.get("confidence", "").strip()
    if conf:
        try:
            data["confidence"] = float(conf)
        except ValueError:
            raise InputError(name, line, f"confidence {conf!r} is not a number") from None
    return _row(name, line, _fill(data, rater, kind or "human"))


def _wide_rows(
    name: str, line: int, header: list[str], lower: list[str], row: dict[str, str], rater: str | None, kind: str | None
) -> list[RatingRow]:
    id_col = next((c for c in ID_COLUMNS if c in lower), None)
    if id_col is None:
        raise InputError(
            name, 1, f"no item column: want one of {', '.join(ID_COLUMNS)} (or the long columns dimension, value)"
        )
    item = row[id_col].strip()
    if not item:
        raise InputError(name, line, f"{id_col} is empty")
    who = rater or (row.get("rater") or row.get("scorer") or "").strip()
    if not who:
        raise InputError(name, line, "no rater: add a rater column or pass --rater NAME")
    conf_text = (row.get("confidence") or "").strip()
    conf = None
    if conf_text:
        try:
            conf = float(conf_text)
        except ValueError:
            raise InputError(name, line, f"confidence {conf_text!r} is not a number") from None
    base = {"item_id": item, "rater": who, "rater_kind": (row.get("rater_kind") or "").strip() or kind or "human"}
    rows = []
    for orig, col in zip(header, lower):
        if col == id_col or col in WIDE_METADATA:
            continue
        value = _cell(name, line, row[col])
        if value is None:
            continue
        data = dict(base, dimension=orig, value=value)
        if col == "outcome" and conf is not None:
            data["confidence"] = conf
        rows.append(_row(name, line, data))
    return rows


# ---------------------------------------------------------------------------------------------
# writing


@dataclass(frozen=True)
class ImportSummary:
    source: str
    rows: int
    items: int
    raters: tuple[str, ...]
    dimensions: tuple[str, ...]
    what: str = "ratings"  # or "pairwise verdicts"
    item_word: str = "items"  # or "pairs"
    not_runs: tuple[str, ...] = ()  # items that are not runs of a database that holds runs
    runs: tuple[str, ...] = ()  # the database's runs, when some items are not among them


def import_ratings(
    db_path: str | Path, file: str | Path, rater: str | None = None, kind: str | None = None
) -> ImportSummary:
    """Validate ``file`` completely, then upsert its ratings into ``ratings`` in one transaction; a
    pairwise file (a ``pair_id`` column, :mod:`evalkit.agreement.pairwise_import`) goes to
    ``pairwise_verdicts`` instead."""
    from evalkit.agreement.pairwise_import import read_pair_file
    from evalkit.db.pairwise import write_pair_verdicts

    verdicts = read_pair_file(file, rater=rater, kind=kind)
    if verdicts is not None:
        write_pair_verdicts(db_path, verdicts)
        return ImportSummary(
            source=str(file),
            rows=len(verdicts),
            items=len({v.pair_id for v in verdicts}),
            raters=tuple(sorted({v.rater for v in verdicts})),
            dimensions=tuple(sorted({v.dimension for v in verdicts})),
            what="pairwise verdicts",
            item_word="pairs",
        )
    from evalkit.db.ratings import stored_labels, stored_runs

    rows = read_rating_file(file, rater=rater, kind=kind, stored=lambda dims: stored_labels(db_path, dims))
    source = str(file)
    runs = stored_runs(db_path)
    items = sorted({r.item_id for r in rows})
    write_ratings(db_path, rows, source)
    return ImportSummary(
        source=source,
        rows=len(rows),
        items=len(items),
        raters=tuple(sorted({r.rater for r in rows})),
        dimensions=tuple(sorted({r.dimension for r in rows})),
        not_runs=tuple(i for i in items if i not in runs) if runs else (),
        runs=tuple(sorted(runs)) if runs and any(i not in runs for i in items) else (),
    )


# ---------------------------------------------------------------------------------------------
# the combined rater view


def judge_rater_name(judge_model: str, rubric_id: str) -> str:
    """Annotations count as one rater per judge model and rubric."""
    return f"{judge_model}@{rubric_id}"


def collect_ratings(stored: Iterable[Rating], judge_values: Iterable[Any]) -> list[Rating]:
    """Imported ratings plus blind, primary (replicate 0) judge annotations, one value per
    (item, rater, dimension): the latest annotation wins when a rubric was re-run. Ordered by
    (item, rater, dimension)."""
    by_item: dict[str, dict[tuple[str, str], Rating]] = {}  # item -> (rater, dimension) -> rating
    keys: dict[tuple[str, str], tuple[str, str]] = {}  # one key object per (rater, dimension)
    for s in stored:
        key = keys.setdefault((s.rater, s.dimension), (s.rater, s.dimension))
        by_item.setdefault(s.item_id, {})[key] = s
    # (judge, rubric, dimension) -> the (rater, dimension) key: worked out once per judge and dimension
    judged: dict[tuple[str, str, str], tuple[str, str]] = {}
    new = tuple.__new__  # a Rating straight from its fields (10^6 of them at scale)
    for v in judge_values:  # ordered oldest first, so later answers overwrite
        if not v.blind or v.replicate != 0:
            continue
        key = judged.get((v.judge_model, v.rubric_id, v.dimension))
        if key is None:
            name = judge_rater_name(v.judge_model, v.rubric_id)
            key = keys.setdefault((name, v.dimension), (name, v.dimension))
            judged[(v.judge_model, v.rubric_id, v.dimension)] = key
        item = by_item.get(v.run_id)
        if item is None:
            item = by_item[v.run_id] = {}
        item[key] = new(Rating, (v.run_id, key[0], "judge", v.dimension, v.value, v.confidence, "annotations"))
    # each item's ratings in (rater, dimension) order: with few keys, one sorted list serves every item
    try:
        order = sorted(keys.values())
        few = len(order) <= 32
    except TypeError:  # keys that do not compare: each item's sorted as they are
        order, few = [], False
    out = []
    for item_id in sorted(by_item):
        rated = by_item[item_id]
        if few:
            out.extend(rated[k] for k in order if k in rated)
        else:
            out.extend(rated[k] for k in sorted(rated))
    return out


NOT_RUNS_NAMED = 5  # item ids a note names before "and N more"


def not_runs_note(summary: ImportSummary, db_path: str | Path) -> str | None:
    """One line on the imported items that are not runs of a database that holds runs (None when
    every item is one): how many, which, and the run each most likely means."""
    import difflib

    missing = summary.not_runs
    if not missing:
        return None
    named = []
    for item in missing[:NOT_RUNS_NAMED]:
        stem = re.sub(r"\.(jsonl|json)$", "", Path(item).name)
        guess = stem if stem != item and stem in summary.runs else None
        guess = guess or next(iter(difflib.get_close_matches(item, summary.runs, 1, 0.8)), None)
        named.append(f'"{item}"' + (f' (did you mean "{guess}"?)' if guess else ""))
    rest = len(missing) - len(named)
    n = summary.items
    return (
        f"warning: {len(missing)} of the {n} item{'s' if n != 1 else ''} {'is' if len(missing) == 1 else 'are'} "
        f"not a run in {db_path}: {', '.join(named)}{f' and {rest} more' if rest else ''}; "
        f"{'its' if len(missing) == 1 else 'their'} ratings are stored, and the audit compares them with "
        "other raters of the same items only"
    )
