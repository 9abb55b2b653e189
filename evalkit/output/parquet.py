"""Scorecards as Parquet (pyarrow, the ``parquet`` extra): for stores past what SQLite does well.

Layout of a Parquet directory (readable by DuckDB, Spark, pandas/pyarrow)::

    DIR/scorecards/scenario_id=<id>/part-000000.parquet   one row per run, hive-partitioned by scenario
    DIR/bundles/part-000000.parquet                        bundle_hash, bundle (the judge bundle's JSON)

A scorecard row holds the ids, status, scalar, the vector (``order`` is ``order_score``, as in the
SQLite table), the five checks, the informative fields, the provenance, ``bundle_hash`` and ``card``
(the whole ScoreCard JSON without its bundle, so nothing is lost). The partition value is the
scenario id, percent-encoded where a path needs it (DuckDB and Spark decode it). Rows are written
in batches of ``FLUSH_ROWS``, one file per scenario per batch, numbered in order: the same input gives
the same files. A bundle shared by several runs appears once per batch (``SELECT DISTINCT`` across
batches). DuckDB::

    SELECT model, avg(scalar) FROM read_parquet('DIR/scorecards/**/*.parquet', hive_partitioning=true)
    WHERE status = 'scored' GROUP BY model;

pyarrow is imported only when a directory is written.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

FLUSH_ROWS = 5000

# (column, where it is in the card JSON, arrow type name)
COLUMNS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("run_id", ("run_id",), "string"),
    ("model", ("model",), "string"),
    ("path", ("path",), "string"),
    ("status", ("status",), "string"),
    ("scalar", ("scalar",), "float64"),
    ("coverage", ("vector", "coverage"), "float64"),
    ("order_score", ("vector", "order"), "float64"),
    ("end_state", ("vector", "end_state"), "float64"),
    ("all_passed", ("vector", "all_passed"), "bool_"),
    ("safety_dangerous", ("vector", "safety_dangerous"), "int64"),
    ("safety_anti_procedure", ("vector", "safety_anti_procedure"), "int64"),
    ("extraneous", ("vector", "extraneous"), "int64"),
    ("reached_goal", ("checks", "reached_goal"), "bool_"),
    ("used_only_expected_tools", ("checks", "used_only_expected_tools"), "bool_"),
    ("correct_order", ("checks", "correct_order"), "bool_"),
    ("no_redundant_calls", ("checks", "no_redundant_calls"), "bool_"),
    ("approvals_respected", ("checks", "approvals_respected"), "bool_"),
    ("final_reason", ("informative", "final_reason"), "string"),
    ("tool_calls_used", ("informative", "tool_calls_used"), "int64"),
    ("sim_time_used", ("informative", "sim_time_used"), "float64"),
    ("commands", ("informative", "commands"), "int64"),
    ("reads", ("informative", "reads"), "int64"),
    ("errored_commands", ("informative", "errored_commands"), "int64"),
    ("off_surface_attempts", ("informative", "off_surface_attempts"), "int64"),
    ("observed_before_acting", ("informative", "observed_before_acting"), "bool_"),
    ("required_actions", ("informative", "required_actions"), "int64"),
    ("reference_steps", ("informative", "reference_steps"), "int64"),
    ("efficiency", ("informative", "efficiency"), "float64"),
    ("efficiency_grade", ("informative", "efficiency_grade"), "int64"),
    ("unknown_records", ("informative", "unknown_records"), "int64"),
    ("extra_fields", ("informative", "extra_fields"), "int64"),
    ("dropped_last_line", ("informative", "dropped_last_line"), "bool_"),
    ("provider", ("provenance", "provider"), "string"),
    ("ts_utc", ("provenance", "ts_utc"), "string"),
    ("scenario_path", ("provenance", "scenario_path"), "string"),
    ("instructions_profile", ("provenance", "instructions_profile"), "string"),
    ("bundle_hash", ("bundle_hash",), "string"),
)


@dataclass(slots=True)
class ParquetRows:
    """One card as a scorecard row (plus its scenario id, the partition) and its bundle row."""

    scenario_id: str
    scorecard: tuple[Any, ...]  # values in COLUMNS order, then the card's JSON
    bundle_hash: str
    bundle: str


def _get(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def parquet_rows(card: dict[str, Any], bundle_json: str) -> ParquetRows:
    """Rows for one card, from its JSON (``ScoreCard.to_json_dict(with_bundle=False)``, or the
    ``card`` column of the database) and its bundle's canonical JSON."""
    from evalkit.trajectory.values import compact_json

    row = tuple(_get(card, path) for _, path, _ in COLUMNS) + (compact_json(card),)
    return ParquetRows(card["scenario_id"], row, card["bundle_hash"], bundle_json)


def parquet_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why a directory cannot receive a Parquet export (it must be new or empty), or None."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        return f"{path}: not a directory"
    if path.is_dir() and any(path.iterdir()):
        return f"{path}: directory is not empty (Parquet output goes to a new or empty directory)"
    return None


def pyarrow_problem() -> str | None:
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        return "Parquet output needs pyarrow: pip install 'evalkit[parquet]'"
    return None


def _schema():
    import pyarrow as pa

    fields = [pa.field(name, getattr(pa, kind)()) for name, _, kind in COLUMNS]
    return pa.schema(fields + [pa.field("card", pa.string())])


class ParquetWriter:
    """Streams ParquetRows to a directory in batches; ``close()`` writes the last one."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.root = Path(directory)
        self._schema = _schema()
        self._rows: list[ParquetRows] = []
        self._part = 0
        self.written = 0

    def add(self, rows: ParquetRows) -> None:
        self._rows.append(rows)
        if len(self._rows) >= FLUSH_ROWS:
            self._flush()

    def add_many(self, rows: Iterable[ParquetRows]) -> None:
        for r in rows:
            self.add(r)

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._rows and self._part:
            return
        name = f"part-{self._part:06d}.parquet"
        by_scenario: dict[str, list[tuple[Any, ...]]] = {}
        bundles: dict[str, str] = {}
        for r in self._rows:
            by_scenario.setdefault(r.scenario_id, []).append(r.scorecard)
            bundles.setdefault(r.bundle_hash, r.bundle)
        for scenario_id, rows in sorted(by_scenario.items()):
            folder = self.root / "scorecards" / f"scenario_id={quote(scenario_id, safe='')}"
            folder.mkdir(parents=True, exist_ok=True)
            columns = [pa.array(values, type=field.type) for values, field in zip(zip(*rows), self._schema)]
            pq.write_table(pa.Table.from_arrays(columns, schema=self._schema), folder / name)
        (self.root / "bundles").mkdir(parents=True, exist_ok=True)
        if bundles or not self._part:
            table = pa.table({"bundle_hash": list(bundles), "bundle": list(bundles.values())},
                             schema=pa.schema([("bundle_hash", pa.string()), ("bundle", pa.string())]))
            pq.write_table(table, self.root / "bundles" / name)
        self.written += len(self._rows)
        self._rows = []
        self._part += 1

    def close(self) -> None:
        self._flush()


def export_database(db_path: str | os.PathLike[str], directory: str | os.PathLike[str]) -> int:
    """Write a scores database's scorecards and bundles as Parquet (in run_id order); returns the
    number of runs. The database is opened read-only; a card whose bundle is missing is skipped."""
    from evalkit.db import open_readonly

    sql = ("SELECT s.card, b.bundle FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash "
           "ORDER BY s.run_id")
    with open_readonly(db_path) as db:
        writer = ParquetWriter(directory)
        for row in db.rows(sql):
            writer.add(parquet_rows(json.loads(row["card"]), row["bundle"]))
        writer.close()
    return writer.written
