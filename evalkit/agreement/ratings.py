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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from evalkit.db import JudgeColumns, Rating, write_ratings
from evalkit.db.schema import TABLES
from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.input_files import csv_rows, read_text
from evalkit.trajectory.safe_json import MAX_INT_DIGITS
from evalkit.trajectory.values import sense

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
    stored: Callable[[set[str], set[tuple[str, str, str]]], dict[str, set[Any]]] | None = None,
    dimensions: Callable[[], set[str]] | None = None,
) -> list[RatingRow]:
    """Parse and validate a whole rating file; raise InputError(path, line, ...) on the first problem.
    A label that means another of the same dimension but is written another way is an error
    (``"Pass"`` against ``"pass"``, ``"3"`` against ``3``: it would count as a disagreement): against
    the file's own labels and the ones ``stored`` gives for the file's dimensions (what the
    database holds, less the ratings the file replaces: their keys are its second argument). So is
    a dimension written another way than one of the file or of
    ``dimensions`` (the database's): ``"Outcome"`` beside ``"outcome"`` would be compared with
    nothing."""
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
    _one_dimension_spelling(name, rows, dimensions() if dimensions is not None else set())
    _one_spelling(name, rows, stored({r.dimension for _, r in rows}, set(seen)) if stored is not None else {})
    return [r for _, r in rows]


def _one_dimension_spelling(name: str, rows: list[tuple[int, RatingRow]], stored: set[str]) -> None:
    """Each dimension written one way (see :func:`read_rating_file`)."""

    def fold(dimension: str) -> str:
        return " ".join(dimension.casefold().split())

    held = {fold(d): d for d in sorted(stored, reverse=True)}  # the first in sorted order kept
    _one_way(name, ((line, fold(r.dimension), r.dimension, "dimension ") for line, r in rows), held, "a dimension")


def _one_spelling(name: str, rows: list[tuple[int, RatingRow]], stored: dict[str, set[Any]]) -> None:
    """Each label of a dimension written one way (see :func:`read_rating_file`)."""
    held = {
        (dimension, sense(label)): label
        for dimension, labels in stored.items()
        for label in sorted(labels, key=repr, reverse=True)  # the first in sorted order kept
    }
    senses = ((line, (r.dimension, sense(r.value)), r.value, f"{r.dimension}: ") for line, r in rows)
    _one_way(name, senses, held, "a label")


def _one_way(name: str, rows: Iterable[tuple[int, Any, Any, str]], held: dict[Any, Any], kind: str) -> None:
    """Each ``(line, sense, written, lead)`` of ``rows`` written as the first of its sense: the one
    ``held`` (the database's), else the file's first; InputError naming both otherwise."""
    spelt: dict[Any, tuple[Any, int | None]] = {meant: (written, None) for meant, written in held.items()}
    for line, meant, written, lead in rows:
        first = spelt.setdefault(meant, (written, line))
        if first[0] != written or type(first[0]) is not type(written):
            where = f"line {first[1]}" if first[1] is not None else "as the database already holds it"
            raise InputError(
                name,
                line,
                f"{lead}{json.dumps(written)} is {json.dumps(first[0])} written another way ({where}): "
                f"{kind} compares as written, so write it one way",
            )


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
    other = next(
        (sep for sep in (";", "\t", ",", "|") if sep != delimiter and len(header) == 1 and sep in header[0]), None
    )
    if other is not None:  # a spreadsheet saved with another separator (a ";" where "," is the decimal mark)
        names = {";": '";"', "\t": "tabs", ",": '","', "|": '"|"'}
        fix = {"\t": "name the file .tsv", ",": "name the file .csv"}.get(other, "write it with commas")
        raise InputError(
            name, 1, f"the header is one column: the file is separated by {names[other]}, not {names[delimiter]}; {fix}"
        )
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
    other_scale: tuple[tuple[str, list, list], ...] = ()  # (dimension, its labels here, the database's): none shared
    # (dimension, the kind most of its ratings here have, {label of another kind: ratings}): mixed kinds
    mixed: tuple[tuple[str, str, dict[Any, int]], ...] = ()


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
    from evalkit.db.ratings import stored_dimensions, stored_labels, stored_runs

    held: dict[str, set[Any]] = {}
    rows = read_rating_file(
        file,
        rater=rater,
        kind=kind,
        stored=lambda dims, keys: held.update(stored_labels(db_path, dims, keys)) or held,
        dimensions=lambda: stored_dimensions(db_path),
    )
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
        other_scale=_other_scales(rows, held),
        mixed=_mixed_kinds(rows),
    )


def _other_scales(rows: list[RatingRow], held: dict[str, set[Any]]) -> tuple[tuple[str, list, list], ...]:
    """``(dimension, the file's labels, the database's)`` for each dimension whose labels here and
    in the database are of different kinds (words against numbers: ``"safe"`` against a 0-3
    scale): its ratings can never agree with the others'."""
    mine: dict[str, set[Any]] = {}
    for r in rows:
        mine.setdefault(r.dimension, set()).add(r.value)
    out = []
    for dimension, labels in sorted(mine.items()):
        theirs = held.get(dimension, set())
        if theirs and not {_kind(v) for v in labels} & {_kind(v) for v in theirs}:
            out.append((dimension, sorted(labels, key=_label_order), sorted(theirs, key=_label_order)))
    return tuple(out)


def _mixed_kinds(rows: list[RatingRow]) -> tuple[tuple[str, str, dict[Any, int]], ...]:
    """For each dimension whose ratings here are of several kinds (a ``"Pass"`` among 0-3 scores):
    the kind most of them have and the other labels with their counts. Such a label never agrees
    with a rating of the other kind."""
    counts: dict[str, dict[Any, int]] = {}
    for r in rows:
        labels = counts.setdefault(r.dimension, {})
        key = (_kind(r.value), r.value)
        labels[key] = labels.get(key, 0) + 1
    out = []
    for dimension, labels in sorted(counts.items()):
        by_kind: dict[str, int] = {}
        for (kind, _), n in labels.items():
            by_kind[kind] = by_kind.get(kind, 0) + n
        if len(by_kind) < 2:
            continue
        main = max(sorted(by_kind), key=lambda k: by_kind[k])
        ordered = sorted(labels.items(), key=lambda kv: _label_order(kv[0][1]))
        odd = {value: n for (kind, value), n in ordered if kind != main}
        out.append((dimension, main, odd))
    return tuple(out)


_KIND_WORDS = {"number": "numbers", "text": "words", "boolean": "true/false"}


def _kind(label: Any) -> str:
    return "boolean" if isinstance(label, bool) else "number" if isinstance(label, (int, float)) else "text"


def _label_order(label: Any) -> tuple[str, float, str]:
    return (_kind(label), float(label) if _kind(label) == "number" else 0.0, str(label))


# ---------------------------------------------------------------------------------------------
# the combined rater view


def judge_rater_name(judge_model: str, rubric_id: str) -> str:
    """Annotations count as one rater per judge model and rubric."""
    return f"{judge_model}@{rubric_id}"


class RatingColumns:
    """Ratings as columns, in the order they were given (from :func:`collect_ratings`: item, rater,
    dimension): each rating's item, rater, rater kind, dimension and label as codes into the lists
    of the distinct ones (labels distinct by type and value). A rating is an imported
    :class:`Rating` (``origin`` ≥ 0: its place in ``stored``) or a judge value (``origin`` = -1 -
    its row in ``judged``); iterating gives them as :class:`Rating` tuples."""

    __slots__ = ("item", "rater", "kind", "dimension", "value", "origin", "items", "raters", "kinds")
    __slots__ += ("dimensions", "labels", "stored", "judged")

    def __init__(self, **columns: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, columns[name])

    @classmethod
    def of(cls, ratings: Iterable[Rating]) -> RatingColumns:
        """The columns of ``ratings``, in their order (every one kept); their values must be hashable."""
        import numpy as np  # only on the audit path

        stored = list(ratings)
        index: list[dict[Any, int]] = [{} for _ in range(5)]
        item, rater, kind, dimension, value = (
            np.array([ix.setdefault(k, len(ix)) for k in keys], dtype=np.int32)
            for ix, keys in zip(
                index,
                (
                    (r.item_id for r in stored),
                    (r.rater for r in stored),
                    (r.rater_kind for r in stored),
                    (r.dimension for r in stored),
                    ((type(r.value), r.value) for r in stored),
                ),
            )
        )
        return cls(
            item=item,
            rater=rater,
            kind=kind,
            dimension=dimension,
            value=value,
            origin=np.arange(len(stored), dtype=np.int64),
            items=list(index[0]),
            raters=list(index[1]),
            kinds=list(index[2]),
            dimensions=list(index[3]),
            labels=[v for _, v in index[4]],
            stored=stored,
            judged=None,
        )

    def __len__(self) -> int:
        return len(self.item)

    def __iter__(self) -> Iterator[Rating]:
        import numpy as np  # only on the audit path

        return self.at(np.arange(len(self)))

    def at(self, rows: Any) -> Iterator[Rating]:
        """The ratings at ``rows`` (an array of positions), one at a time."""
        for start in range(0, len(rows), 50_000):  # a chunk's judge ratings made at a time
            part = self.origin[rows[start : start + 50_000]]
            judged = iter(_judge_ratings(self.judged, -part[part < 0] - 1)) if self.judged is not None else iter(())
            for k in part.tolist():
                yield self.stored[k] if k >= 0 else next(judged)

    def dimension_rows(self) -> list[tuple[str, Any]]:
        """Each dimension (sorted by name) with its rows, in order."""
        import numpy as np  # only on the audit path

        order = np.argsort(self.dimension, kind="stable")
        bounds = np.cumsum(np.bincount(self.dimension, minlength=len(self.dimensions)))
        return sorted(
            (name, order[(bounds[d - 1] if d else 0) : bounds[d]])
            for d, name in enumerate(self.dimensions)
            if bounds[d] > (bounds[d - 1] if d else 0)
        )


def collect_ratings(stored: Iterable[Rating], judge_values: JudgeColumns) -> RatingColumns:
    """Imported ratings plus blind, primary (replicate 0) judge annotations, one value per
    (item, rater, dimension): a later one wins (a judge value over an imported rating, the latest
    annotation when a rubric was re-run). Ordered by (item, rater, dimension)."""
    import numpy as np  # only on the audit path

    from evalkit.agreement.stats.stat import last_places, unique_codes

    v = judge_values
    given = RatingColumns.of(stored)
    rows = np.flatnonzero(v.blind & (v.replicate == 0))
    items = {name: k for k, name in enumerate(given.items)}
    # the (rater, dimension) key of each rating: imported ones first, then each judge value's,
    # worked out once per (judge, rubric, dimension)
    pair: dict[tuple[str, str], int] = {}
    stored_key = np.array(
        [
            pair.setdefault((given.raters[r], given.dimensions[d]), len(pair))
            for r, d in zip(given.rater.tolist(), given.dimension.tolist())
        ],
        dtype=np.int64,
    )
    named, key_at = unique_codes(
        (v.judge[rows].astype(np.int64) * len(v.rubrics) + v.rubric[rows]) * len(v.dimensions) + v.dimension[rows]
    )
    codes = []
    for code in named.tolist():
        judge_rubric, dim = divmod(code, len(v.dimensions))
        judge, rubric = divmod(judge_rubric, len(v.rubrics))
        codes.append(
            pair.setdefault((judge_rater_name(v.judges[judge], v.rubrics[rubric]), v.dimensions[dim]), len(pair))
        )
    item_of_run = np.array([items.setdefault(run, len(items)) for run in v.runs], dtype=np.int64)
    item = np.concatenate([given.item.astype(np.int64), item_of_run[v.run[rows]]])
    key = np.concatenate([stored_key, np.array(codes, dtype=np.int64)[key_at.reshape(-1)]])
    # the last rating of each (item, key) wins; the winners in (item, rater, dimension) order
    keys = list(pair)
    order = _places(list(items))[item] * max(len(keys), 1) + _places(keys)[key]
    chosen = last_places(order)  # sorted by (item, key) place, each its last rating
    del order
    item, key = item[chosen], key[chosen]
    n_given = len(given)
    judged = chosen >= n_given
    # the kinds, dimensions and labels of imported ratings and judge values, coded together
    kinds = {name: k for k, name in enumerate(given.kinds)}
    judge_kind = kinds.setdefault("judge", len(kinds))
    labels = {(type(x), x): k for k, x in enumerate(given.labels)}
    label_of = np.array([labels.setdefault((type(x), x), len(labels)) for x in v.labels], dtype=np.int32)
    dims = {name: k for k, name in enumerate(dict.fromkeys(k[1] for k in keys))}
    rater_names = {name: k for k, name in enumerate(dict.fromkeys(k[0] for k in keys))}
    key_rater = np.array([rater_names[k[0]] for k in keys], dtype=np.int32)
    key_dim = np.array([dims[k[1]] for k in keys], dtype=np.int32)
    imported = chosen[~judged]
    rows_at = rows[chosen[judged] - n_given]  # the judge values taken: their rows
    value = np.zeros(len(chosen), dtype=np.int32)
    value[~judged], value[judged] = given.value[imported], label_of[v.value[rows_at]]
    kind = np.full(len(chosen), judge_kind, dtype=np.int32)
    kind[~judged] = given.kind[imported]
    origin = chosen.astype(np.int64)
    origin[judged] = -rows_at - 1
    return RatingColumns(
        item=item.astype(np.int32),
        rater=key_rater[key],
        kind=kind,
        dimension=key_dim[key],
        value=value,
        origin=origin,
        items=list(items),
        raters=list(rater_names),
        kinds=list(kinds),
        dimensions=list(dims),
        labels=[x for _, x in labels],
        stored=given.stored,
        judged=v,
    )


def _places(keys: list[Any]) -> Any:
    """Each key's place among ``keys`` sorted (an order-preserving code)."""
    import numpy as np  # only on the audit path

    place = np.zeros(len(keys), dtype=np.int64)
    place[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return place


def _judge_ratings(v: JudgeColumns, rows: Any) -> Iterator[Rating]:
    """The judge values at ``rows`` as ratings (rater ``JUDGE@RUBRIC``), in order."""
    new = tuple.__new__  # a Rating straight from its fields (10^6 of them at scale)
    names: dict[tuple[int, int], str] = {}
    for run, judge, rubric, dim, label, c in zip(
        v.run[rows].tolist(),
        v.judge[rows].tolist(),
        v.rubric[rows].tolist(),
        v.dimension[rows].tolist(),
        v.value[rows].tolist(),
        v.confidence[rows].tolist(),
    ):
        rater = names.get((judge, rubric))
        if rater is None:
            rater = names[(judge, rubric)] = judge_rater_name(v.judges[judge], v.rubrics[rubric])
        yield new(
            Rating,
            (v.runs[run], rater, "judge", v.dimensions[dim], v.labels[label], None if c != c else c, "annotations"),
        )


NOT_RUNS_NAMED = 5  # item ids a note names before "and N more"
LABELS_NAMED = 6  # labels a note names before "..."


def other_scale_notes(summary: ImportSummary, db_path: str | Path) -> list[str]:
    """One line per dimension whose labels in the file share none with the database's, and one per
    dimension whose ratings in the file are of several kinds (words among numbers)."""

    def named(labels: list) -> str:
        return ", ".join(json.dumps(v) for v in labels[:LABELS_NAMED]) + (", ..." if len(labels) > LABELS_NAMED else "")

    notes = [
        f"warning: {summary.source}: {json.dumps(dimension)} is rated {named(mine)} here and {named(theirs)} in "
        f"{db_path}: no label in common, so these ratings can never agree with the others; rate on one scale"
        for dimension, mine, theirs in summary.other_scale
    ]
    for dimension, main, odd in summary.mixed:
        n = sum(odd.values())
        shown = ", ".join(f"{json.dumps(v)} ({k})" for v, k in list(odd.items())[:LABELS_NAMED])
        notes.append(
            f"warning: {summary.source}: {json.dumps(dimension)} is rated with {_KIND_WORDS[main]} here, and {n} "
            f"rating(s) with another kind of label: {shown}{', ...' if len(odd) > LABELS_NAMED else ''}; "
            "a label of another kind never agrees with the others (the audit leaves a label off its dimension's "
            "scale out); rate on one scale"
        )
    return notes


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
