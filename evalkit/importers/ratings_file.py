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
    from evalkit.agreement.ratings import RatingRow

    row = RatingRow.model_validate(data)
    return (row.item_id, row.rater, row.dimension), _line(row)


def store_ratings(rows: Iterable[dict[str, Any] | tuple], out_dir: str | Path, db: str | Path | None = None) -> str:
    """Merge ``rows`` (dicts, or their :func:`encode_rating`) into ``out_dir/ratings.jsonl`` and,
    with ``db``, import that file into the database's ``ratings`` table. Returns the file's path.
    Raises InputError (naming the file) when an existing ratings file or the database cannot be
    used; nothing is half-written."""
    from evalkit.agreement.ratings import RatingRow, import_ratings, read_rating_file

    path = Path(out_dir) / RATINGS_FILE
    merged: dict[tuple[str, str, str], Any] = {}
    if path.exists():
        for old in read_rating_file(path):
            merged[(old.item_id, old.rater, old.dimension)] = old
    for data in rows:
        if isinstance(data, tuple):
            merged[data[0]] = data[1]
            continue
        row = RatingRow.model_validate(data)
        merged[(row.item_id, row.rater, row.dimension)] = row
    text = "".join((v if isinstance(v := merged[k], str) else _line(v)) + "\n" for k in sorted(merged))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot write: {exc.strerror or exc}") from None
    if db is not None:
        import_ratings(db, path)
    return str(path)
