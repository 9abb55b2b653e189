"""``DIR/ratings.jsonl``: ratings an importer found next to the runs (e.g. inspect_ai's scorers).

The file is in the long JSONL format of ``evalkit annotations import`` (one rating per line:
``item_id, rater, rater_kind, dimension, value`` and ``confidence`` when known), so the same file can
be imported into any database later. Importing into a directory that already has one merges: a
rating with the same ``(item_id, rater, dimension)`` is replaced, the others are kept — as the
database does on re-import. Lines are sorted by that key and written like runs (compact JSON, keys
sorted, UTF-8), through :func:`evalkit.output.atomic.write_text_atomic`: same ratings, same bytes.

``evalkit score DIR`` skips a file of this name when it searches a directory for trajectories.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import repeat
from pathlib import Path
from typing import Any

from evalkit.errors import InputError
from evalkit.output.atomic import write_text_atomic

RATINGS_FILE = "ratings.jsonl"


def _line(row: Any) -> str:
    data = row.model_dump(exclude_none=True)
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_rating(data: dict[str, Any]) -> tuple[tuple[str, str, str], str]:
    """A rating row checked and turned into its key and line (what ``store_ratings`` takes in
    place of the row: the work done where the row was made). Raises ValueError as the row would."""
    return encode_rating_values(data)[0]


def encode_rating_values(data: dict[str, Any]) -> tuple[tuple[tuple[str, str, str], str], tuple]:
    """:func:`encode_rating` and the rating's database row (:func:`_values`, a plain tuple: cheap
    to send between processes). The row is the one the line reads back as
    (``evalkit annotations import`` of the file): the line is the checked row's own fields, which
    JSON carries unchanged (str, int, float, bool), and checking them again changes nothing."""
    from evalkit.agreement.ratings import RatingRow

    row = RatingRow.model_validate(data)
    return ((row.item_id, row.rater, row.dimension), _line(row)), _values(row)


def _values(row: Any) -> tuple:
    """A rating's database row (evalkit.db.ratings.write_rating_values)."""
    return (row.item_id, row.rater, row.rater_kind, row.dimension, row.value, row.confidence)


def store_ratings(
    rows: Iterable[dict[str, Any] | tuple],
    out_dir: str | Path,
    db: str | Path | None = None,
    values: Iterable[tuple | None] | None = None,
) -> str:
    """Merge ``rows`` (dicts, or their :func:`encode_rating`) into ``out_dir/ratings.jsonl`` and,
    with ``db``, store the merged ratings (the whole file's, in its order) in the database's
    ``ratings`` table, as ``evalkit annotations import`` of the file does. ``values``, in step with
    ``rows``: each encoded row's database row (:func:`encode_rating_values`), so the database is
    written from them instead of the file being read and checked again (None for a row without
    one: its line is checked again). Returns the file's path. Raises InputError (naming the file)
    when an existing ratings file or the database cannot be used; nothing is half-written."""
    from evalkit.agreement.ratings import RatingRow, read_rating_file

    path = Path(out_dir) / RATINGS_FILE
    merged: dict[tuple[str, str, str], Any] = {}  # a RatingRow, or an encoded row's (line, database row)
    if path.exists():
        for old in read_rating_file(path):
            merged[(old.item_id, old.rater, old.dimension)] = old
    for data, row_values in zip(rows, repeat(None) if values is None else values):
        if isinstance(data, tuple):
            merged[data[0]] = (data[1], row_values)
            continue
        row = RatingRow.model_validate(data)
        merged[(row.item_id, row.rater, row.dimension)] = row
    ordered = [merged[k] for k in sorted(merged)]
    text = "".join((v[0] if isinstance(v, tuple) else _line(v)) + "\n" for v in ordered)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot write: {exc.strerror or exc}") from None
    if db is not None:
        from evalkit.db.ratings import write_rating_values

        write_rating_values(db, [_row_values(v) for v in ordered], str(path))
    return str(path)


def _row_values(merged: Any) -> tuple:
    """The database row of a merged rating: a worker's, else the row's own (a line given without its
    row is checked again, as reading the file back would)."""
    from evalkit.agreement.ratings import RatingRow

    if not isinstance(merged, tuple):
        return _values(merged)
    line, values = merged
    return values if values is not None else _values(RatingRow.model_validate(json.loads(line)))
