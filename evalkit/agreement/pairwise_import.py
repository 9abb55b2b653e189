"""Pairwise verdict files for ``evalkit annotations import``: a judge run in another tool, audited here.

A file is pairwise when its CSV/TSV header (or its first JSONL object) has a ``pair_id`` column.
Columns: ``pair_id, a, b, order, rater, rater_kind, dimension, verdict`` and optional
``a_length, b_length`` (the two answers' lengths, for the length-bias figure when ``a``/``b`` are
not runs in the database). ``order`` is ``ab`` or ``ba``, the order the rater saw (a judge row must
have one; a human's or gold label leaves it empty); ``verdict`` is ``a``, ``b`` or ``tie`` in the
pair's own frame whatever the order, and may be empty on a judge row (the judge gave none).
``rater_kind`` is ``judge``, ``human`` or ``gold`` (default: ``--kind``, else ``human``). Every row
of one ``pair_id`` names the same ``a`` and ``b``. The whole file is checked before anything is
written (one line naming the file and line on the first problem); re-importing replaces the same
(pair, rater, dimension, order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.db.pairwise import PairVerdict
from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.input_files import csv_rows, read_text

KINDS = ("judge", "human", "gold")
VERDICTS = ("a", "b", "tie")
ORDERS = ("ab", "ba")
REQUIRED = ("pair_id", "a", "b", "rater", "dimension", "verdict")


def read_pair_file(
    path: str | Path, rater: str | None = None, kind: str | None = None, text: str | None = None
) -> list[PairVerdict] | None:
    """The verdicts of a pairwise file, or None when the file is not pairwise (no ``pair_id``)."""
    name = str(path)
    text = read_text(name) if text is None else text
    suffix = Path(path).suffix.lower()
    as_jsonl = suffix in (".jsonl", ".json", ".ndjson") or (
        suffix not in (".csv", ".tsv") and text.lstrip().startswith("{")
    )
    if as_jsonl:
        records = list(safe_json.json_lines(text, lambda n, reason: InputError(name, n, f"invalid JSON: {reason}")))
        if not records or not isinstance(records[0][1], dict) or "pair_id" not in records[0][1]:
            return None
        rows = []
        for line, data in records:
            if not isinstance(data, dict):
                raise InputError(name, line, "each line must be a JSON object")
            rows.append((line, {str(k).lower(): v for k, v in data.items()}))
    else:
        lines = csv_rows(name, text, "\t" if suffix == ".tsv" else ",")
        first = next(lines, None)
        if first is None:
            return None
        header = [h.strip().lower() for h in first[1]]
        if "pair_id" not in header:
            return None
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise InputError(name, 1, f"duplicate column {dup!r}")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise InputError(name, 1, f"pairwise file without the column(s) {', '.join(missing)}")
        rows = []
        for line, cells in lines:
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise InputError(name, line, f"expected {len(header)} columns, found {len(cells)}")
            rows.append((line, dict(zip(header, cells))))
    out = [(line, _row(name, line, data, rater, kind)) for line, data in rows]
    if not out:
        raise InputError(name, None, "no pairwise verdicts found")
    _check_file(name, out)
    return [r for _, r in out]


def _text(name: str, line: int, data: dict[str, Any], key: str, *, required: bool = True) -> str:
    v = data.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            raise InputError(name, line, f"{key} is {'required' if key not in data else 'empty'}")
        return ""
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise InputError(name, line, f"{key} must be a string, got {type(v).__name__}")
    return str(v).strip()


def _length(name: str, line: int, data: dict[str, Any], key: str) -> int | None:
    v = data.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) < 16:
        return int(v.strip())
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**15:
        return v
    raise InputError(name, line, f"{key} {str(v)[:40]!r} must be a non-negative integer")


def _row(name: str, line: int, data: dict[str, Any], rater: str | None, kind: str | None) -> PairVerdict:
    pair_id = _text(name, line, data, "pair_id")
    a, b = _text(name, line, data, "a"), _text(name, line, data, "b")
    if a == b:
        raise InputError(name, line, f"a and b are the same answer {a!r}")
    who = rater or _text(name, line, data, "rater")
    rater_kind = _text(name, line, data, "rater_kind", required=False).lower() or kind or "human"
    if rater_kind not in KINDS:
        raise InputError(name, line, f"rater_kind {rater_kind[:40]!r} must be 'judge', 'human' or 'gold'")
    dimension = _text(name, line, data, "dimension")
    order = _text(name, line, data, "order", required=False).lower()
    if order and order not in ORDERS:
        raise InputError(name, line, f"order {order[:40]!r} must be 'ab' or 'ba' (the order the rater saw)")
    if rater_kind == "judge" and not order:
        raise InputError(name, line, "order is empty: a judge row says which answer it saw first ('ab' or 'ba')")
    verdict = _text(name, line, data, "verdict", required=rater_kind != "judge").lower()
    if verdict and verdict not in VERDICTS:
        raise InputError(name, line, f"verdict {verdict[:40]!r} must be 'a', 'b' or 'tie' (in the pair's own frame)")
    return PairVerdict(
        pair_id=pair_id,
        a=a,
        b=b,
        shown=order,
        rater=who,
        rater_kind=rater_kind,
        dimension=dimension,
        verdict=verdict or None,
        a_length=_length(name, line, data, "a_length"),
        b_length=_length(name, line, data, "b_length"),
        source=name,
    )


def _check_file(name: str, rows: list[tuple[int, PairVerdict]]) -> None:
    """One pair names one (a, b); one verdict per (pair, rater, dimension, order)."""
    answers: dict[str, tuple[int, str, str]] = {}
    seen: dict[tuple[str, str, str, str], int] = {}
    for line, r in rows:
        first = answers.setdefault(r.pair_id, (line, r.a, r.b))
        if (first[1], first[2]) != (r.a, r.b):
            raise InputError(
                name,
                line,
                f"pair {r.pair_id!r} names a={r.a!r}, b={r.b!r}; line {first[0]} named {first[1]!r}, {first[2]!r}",
            )
        key = (r.pair_id, r.rater, r.dimension, r.shown)
        if key in seen:
            shown = f"order {r.shown}" if r.shown else "no order"
            raise InputError(
                name,
                line,
                f"duplicate verdict on pair {r.pair_id!r} by {r.rater!r} on {r.dimension!r}, {shown} "
                f"(first at line {seen[key]})",
            )
        seen[key] = line
