"""Scorecards as Parquet (pyarrow, the ``parquet`` extra): for stores past what SQLite does well.

Layout of a Parquet directory (readable by DuckDB, Spark, pandas/pyarrow)::

    DIR/scorecards/scenario_id=<name>/part-000000.parquet   one row per run, hive-partitioned by scenario
    DIR/bundles/part-000000.parquet                          bundle_hash, bundle (the judge bundle's JSON)

A scorecard row holds the ids, status, scalar, the vector (``order`` is ``order_score``, as in the
SQLite table), the five checks, the informative fields, the provenance, ``bundle_hash``, ``card``
(the whole ScoreCard JSON without its bundle, so nothing is lost) and ``scenario_id_full``, the
scenario id whole. The partition name (:func:`partition_name`) is the scenario id, percent-encoded
(DuckDB and Spark decode it), when that fits in ``PARTITION_NAME_BYTES``; a longer one keeps a
readable prefix and ends ``~`` and a hash of the whole id, so any file system takes it and two ids
never share a partition (nor do two that differ only in case, for case-insensitive file systems).
Readers take a partition's ``scenario_id`` from its name (a hive column wins over a file's own),
so for such ids ``scenario_id`` is the cut name and ``scenario_id_full`` the id.

Rows are written in batches of ``FLUSH_ROWS``, one file per scenario per batch, numbered in order:
the same input gives the same files. A bundle shared by several runs appears once per batch
(``SELECT DISTINCT`` across batches). Everything is written under a temporary directory inside
DIR and moved into place by ``close()``; a failure leaves DIR as it was (no partial dataset).
DuckDB::

    SELECT model, avg(scalar) FROM read_parquet('DIR/scorecards/**/*.parquet', hive_partitioning=true)
    WHERE status = 'scored' GROUP BY model;

pyarrow is imported only when a directory is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evalkit.output.atomic import AllOrNothing, output_error

FLUSH_ROWS = 5000
# A partition directory's name at most (bytes; percent-encoding keeps it ASCII): far below the
# 255 of common file systems, leaving room for the path around it.
PARTITION_NAME_BYTES = 100
PARTITION_HASH_CHARS = 16
_PARTITION_KEY = "scenario_id="

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


@dataclass(slots=True)
class ArrowRows:
    """Several cards' rows as one Arrow table in input order (the scorecard columns, then
    ``bundle``), serialised as an Arrow IPC stream: what a worker sends for a batch, so that the
    parent converts no value; it only slices, groups by scenario and writes."""

    count: int
    ipc: Any  # bytes, or a worker's file of them (evalkit.engines.spool.Spooled)

    def table(self):
        import pyarrow as pa

        if hasattr(self.ipc, "mapped"):  # spooled: mapped, not read (the columns are the file's pages), once
            self.ipc = self.ipc.mapped()
        return pa.ipc.open_stream(self.ipc, memory_pool=_pool()).read_all()


def arrow_rows(rows: list[ParquetRows]) -> ArrowRows:
    import pyarrow as pa

    table = _rows_table(rows)
    sink = pa.BufferOutputStream(memory_pool=_pool())
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return ArrowRows(len(rows), sink.getvalue().to_pybytes())


def _rows_table(rows: list[ParquetRows]):
    """ParquetRows as a table of the shipped schema (:func:`_shipped_schema`), in order."""
    import pyarrow as pa

    schema = _shipped_schema()
    values = [*zip(*(r.scorecard for r in rows)), [r.scenario_id for r in rows], [r.bundle for r in rows]]
    if not rows:
        values = [[] for _ in schema]
    pool = _pool()
    return pa.Table.from_arrays(
        [pa.array(v, type=f.type, memory_pool=pool) for v, f in zip(values, schema)], schema=schema
    )


def _pool():
    """The memory evalkit's Arrow tables are made in: the C library's allocator. Arrow's default
    (mimalloc) takes fresh memory in transparent huge pages, which the kernel zeroes 2 MiB at a
    time; on a virtual machine that made a take over 3,000 runs 7 ms or 0.8 s at random."""
    import pyarrow as pa

    return pa.system_memory_pool()


def _positions(picked: list[int]):
    """Row positions as an Arrow int64 array, made from their bytes (see ``_write_batch``)."""
    import array

    import pyarrow as pa

    return pa.Array.from_buffers(pa.int64(), len(picked), [None, pa.py_buffer(array.array("q", picked).tobytes())])


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


def _hashed_partition_name(scenario_id: str) -> str:
    digest = hashlib.sha256(scenario_id.encode("utf-8")).hexdigest()[:PARTITION_HASH_CHARS]
    room = PARTITION_NAME_BYTES - len(_PARTITION_KEY) - 1 - PARTITION_HASH_CHARS
    prefix = ""
    for ch in scenario_id:  # whole characters: a reader decodes the prefix back to text
        piece = quote(ch, safe="")
        if len(prefix) + len(piece) > room:
            break
        prefix += piece
    return f"{_PARTITION_KEY}{prefix}~{digest}"


def partition_name(scenario_id: str) -> str:
    """The partition directory of a scenario: ``scenario_id=`` and the id percent-encoded, or, when
    that is longer than ``PARTITION_NAME_BYTES``, a readable prefix, ``~`` and 16 hex digits of
    the id's SHA-256."""
    name = _PARTITION_KEY + quote(scenario_id, safe="")
    return name if len(name) <= PARTITION_NAME_BYTES else _hashed_partition_name(scenario_id)


def parquet_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why Parquet cannot be written into ``directory`` (it must be new or empty, and pyarrow
    installed), or None: `score --parquet` and `export parquet` say it as a usage error."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        return f"{path}: not a directory"
    if path.is_dir() and any(path.iterdir()):
        return f"{path}: directory is not empty (Parquet output goes to a new or empty directory)"
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        return "Parquet output needs pyarrow: pip install 'evalkit[parquet]'"
    return None


def _schema():
    import pyarrow as pa

    fields = [pa.field(name, getattr(pa, kind)()) for name, _, kind in COLUMNS]
    return pa.schema(fields + [pa.field("card", pa.string()), pa.field("scenario_id_full", pa.string())])


def _shipped_schema():
    import pyarrow as pa

    return _schema().append(pa.field("bundle", pa.string()))


class ParquetWriter(AllOrNothing):
    """Streams ParquetRows to a directory in batches; ``close()`` writes the last one and moves the
    dataset into place, ``discard()`` (or an exception in a ``with`` block) leaves nothing behind.
    Write failures raise :class:`~evalkit.output.atomic.OutputError` naming the directory."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.root = Path(directory)
        self._created = not self.root.exists()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # inside the target: the final moves are renames on one file system, and a reader of
            # DIR/scorecards/** never sees a half-written batch
            self._work = Path(tempfile.mkdtemp(prefix=".evalkit-parquet-", dir=self.root))
        except OSError as exc:
            raise output_error(self.root, exc) from None
        self._schema = _schema()
        # the rows of the next part, in order: lists of ParquetRows (made here) and Arrow tables
        # (slices of the workers' ArrowRows)
        self._segments: list[Any] = []
        self._count = 0
        self._part = 0
        self._names: dict[str, str] = {}  # scenario id -> its partition directory
        self._taken: dict[str, str] = {}  # a partition name casefolded -> the scenario id it holds
        self._moved: list[Path] = []
        self.written = 0
        self.done = False

    def add(self, rows: ParquetRows) -> None:
        if not self._segments or not isinstance(self._segments[-1], list):
            self._segments.append([])
        self._segments[-1].append(rows)
        self._count += 1
        if self._count >= FLUSH_ROWS:
            self._flush()

    def add_many(self, rows: Iterable[ParquetRows] | ArrowRows) -> None:
        """Rows in order: ParquetRows, or a worker's ArrowRows (the same files either way)."""
        if not isinstance(rows, ArrowRows):
            for r in rows:
                self.add(r)
            return
        table = rows.table()
        start = 0
        while start < table.num_rows:  # a part ends after FLUSH_ROWS rows, wherever a batch does
            take = min(FLUSH_ROWS - self._count, table.num_rows - start)
            self._segments.append(table.slice(start, take))
            self._count += take
            start += take
            if self._count >= FLUSH_ROWS:
                self._flush()

    def _partition(self, scenario_id: str) -> str:
        name = self._names.get(scenario_id)
        if name is None:
            name = partition_name(scenario_id)
            if self._taken.get(name.casefold(), scenario_id) != scenario_id:
                name = _hashed_partition_name(scenario_id)  # "Elec" after "elec": one folder on macOS
            self._names[scenario_id] = name
            self._taken[name.casefold()] = scenario_id
        return name

    def _flush(self) -> None:
        try:
            self._write_batch()
        except OSError as exc:
            raise output_error(self.root, exc) from None

    def _write_batch(self) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        if not self._count and self._part:
            return
        name = f"part-{self._part:06d}.parquet"
        tables = [_rows_table(seg) if isinstance(seg, list) else seg for seg in self._segments]
        pool = _pool()
        rows = pa.concat_tables(tables, memory_pool=pool) if tables else _shipped_schema().empty_table()
        # rows picked by position (take), never by a value converted from Python: the parent of
        # workers then never calls pa.array, whose check for pandas imports it (≈ 0.2 s of start-up)
        where: dict[str, list[int]] = {}
        for i, scenario_id in enumerate(rows.column("scenario_id_full").to_pylist()):
            where.setdefault(scenario_id, []).append(i)
        names = self._schema.names
        for scenario_id, picked in sorted(where.items()):
            folder = self._work / "scorecards" / self._partition(scenario_id)
            folder.mkdir(parents=True, exist_ok=True)
            part = rows if len(where) == 1 else pc.take(rows, _positions(picked), memory_pool=pool)
            # one chunk, as a table made in one piece: the file does not depend on where batches ended
            pq.write_table(part.select(names).combine_chunks(memory_pool=pool), folder / name)
        (self._work / "bundles").mkdir(parents=True, exist_ok=True)
        if rows.num_rows or not self._part:
            first: dict[str, int] = {}
            for i, bundle_hash in enumerate(rows.column("bundle_hash").to_pylist()):
                first.setdefault(bundle_hash, i)
            bundles = rows.select(["bundle_hash", "bundle"])
            if len(first) < rows.num_rows:
                bundles = pc.take(bundles, _positions(list(first.values())), memory_pool=pool)
            pq.write_table(bundles.combine_chunks(memory_pool=pool), self._work / "bundles" / name)
        self.written += self._count
        self._segments, self._count = [], 0
        self._part += 1

    def close(self) -> None:
        """Write the last batch and move the dataset into DIR (bundles first, so that scorecards
        are never there without their bundles)."""
        self._settle(self.root, self._close)

    def _keep(self) -> None:
        self.close()

    def _close(self) -> None:
        self._flush()
        for part in ("bundles", "scorecards"):
            if (self._work / part).exists():
                os.rename(self._work / part, self.root / part)  # refused if DIR/part exists
                self._moved.append(self.root / part)
        self._work.rmdir()

    def _remove(self) -> None:
        """What was written goes; DIR is left as it was found (removed if this writer made it)."""
        shutil.rmtree(self._work, ignore_errors=True)
        for moved in self._moved:  # by a close() that failed half-way
            shutil.rmtree(moved, ignore_errors=True)
        if self._created:
            try:
                self.root.rmdir()
            except OSError:
                pass


def export_database(db_path: str | os.PathLike[str], directory: str | os.PathLike[str]) -> int:
    """Write a scores database's scorecards and bundles as Parquet (in run_id order); returns the
    number of runs. The database is opened read-only; a card whose bundle is missing is skipped.
    ``directory`` must not be the database or one of its files
    (:class:`~evalkit.output.paths.OutputClash`); a failure leaves no partial dataset."""
    from evalkit.db import open_readonly
    from evalkit.output.paths import check_outputs

    check_outputs([("directory", directory)], database=db_path)
    sql = "SELECT s.card, b.bundle FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash ORDER BY s.run_id"
    with open_readonly(db_path) as db, ParquetWriter(directory) as writer:
        for row in db.rows(sql):
            writer.add(parquet_rows(json.loads(row["card"]), row["bundle"]))
    return writer.written
