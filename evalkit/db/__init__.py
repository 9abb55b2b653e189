"""evalkit's one data layer: every table, every connection, every reader of the SQLite file.

- :mod:`evalkit.db.schema` — all tables in one place, ``PRAGMA user_version`` migrations;
- :mod:`evalkit.db.connect` — :func:`open_write` and :func:`open_readonly`, the only places a
  connection is made; every failure is a one-line :class:`DbError` naming the file;
- :mod:`evalkit.db.scores` — :class:`Store` (the score writer), :func:`read_scorecards`;
- :mod:`evalkit.db.judge` — :class:`JudgeTables` (the judge's writer), :func:`read_annotations`
  (stale answers of re-scored runs left out), :func:`read_stale_annotations`;
- :mod:`evalkit.db.probes` — :class:`ProbeTables` (probe answers, apart from annotations),
  :func:`read_probe_annotations`;
- :mod:`evalkit.db.ratings` — :func:`write_ratings`, :func:`read_ratings`;
- :mod:`evalkit.db.names` — :func:`resolve_judge`: what a judge name given by a person means.

Nothing here imports numpy, scipy, litellm or sqlite-utils at module level (the score path
imports this package).
"""

from evalkit.db.connect import Database, DbError, open_readonly, open_write
from evalkit.db.judge import (
    CallCosts,
    JudgeColumns,
    JudgeTables,
    JudgeValue,
    judge_models,
    label_value,
    read_annotation_rows,
    read_annotations,
    read_call_costs,
    read_judge_columns,
    read_primary_values,
    read_stale_annotations,
)
from evalkit.db.names import JudgeNotStored, resolve_judge, short_name
from evalkit.db.probes import ProbeAnswer, ProbeTables, read_probe_annotations
from evalkit.db.ratings import Rating, imported_judges, read_ratings, write_ratings
from evalkit.db.schema import SCHEMA_VERSION, TABLES
from evalkit.db.scores import (
    DEFAULT_DB,
    Card,
    Store,
    decode_json,
    read_cards,
    read_commands,
    read_runs,
    read_scorecards,
)

__all__ = [
    "CallCosts",
    "Card",
    "DEFAULT_DB",
    "Database",
    "DbError",
    "JudgeTables",
    "JudgeColumns",
    "JudgeValue",
    "ProbeAnswer",
    "ProbeTables",
    "Rating",
    "SCHEMA_VERSION",
    "Store",
    "TABLES",
    "JudgeNotStored",
    "decode_json",
    "imported_judges",
    "judge_models",
    "label_value",
    "open_readonly",
    "open_write",
    "read_annotation_rows",
    "read_annotations",
    "read_judge_columns",
    "read_call_costs",
    "read_cards",
    "read_commands",
    "read_primary_values",
    "read_probe_annotations",
    "read_ratings",
    "read_runs",
    "read_scorecards",
    "read_stale_annotations",
    "resolve_judge",
    "short_name",
    "write_ratings",
]
