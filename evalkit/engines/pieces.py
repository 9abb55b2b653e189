"""A batch's finished pieces: what a worker hands the parent so that the parent only writes.

For a job with ``batched=True`` a worker scores its batch of files and returns one
:class:`~evalkit.engines.job.ScoredBatch`: what the parent says about each file (path, warnings,
error, run_id and scenario, as columns in input order) and one :class:`BatchPieces`:

- ``output``: the batch's cards in the output format, joined — UTF-8 bytes when the parent's stream
  takes them (``ScoreJob.encoding``), else text — for :meth:`ScoreWriter.write_batch`;
- ``rows``: the database rows, merged by table: for a batch of several files already inserted into a
  staging database the parent copies from (:class:`StagedRows`), else ready for ``executemany``
  (:class:`BatchRows`);
- ``parquet``: the Parquet rows, for a batch of several files as one Arrow table (:class:`ArrowRows`,
  Arrow IPC bytes) the parent only slices and writes;
- ``partial``: the batch's aggregate (:meth:`Aggregator.partial`), merged by the parent in input order.

In a local pool (``ScoreJob.spool`` set) the bytes of ``output``, of a staging database and of an
Arrow table are left in files of the run's spool directory and only their names travel
(:mod:`evalkit.engines.spool`): the parent copies the output with ``sendfile`` and reads the rest
once, instead of receiving them through the pool's pipe.

The parent decodes nothing and builds no object per card; the same
function runs in this process (one worker: batches of 16 files, their rows and Parquet rows kept
as they are, ``ScoreJob.in_process``), in the pool and on Ray, so every engine and worker count
writes the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class BatchPieces:
    count: int  # cards in ``output``
    output: bytes | str | None = None
    rows: Any = None  # evalkit.db.scores.BatchRows or StagedRows
    parquet: Any = None  # evalkit.output.parquet.ParquetRows in input order, or ArrowRows
    partial: Any = None  # evalkit.aggregate.groups.AggregatePartial


def finish_batch(job: Any, scored: list[Any], include_errors: bool = False) -> list[Any]:
    """Fold ``scored`` (one ``Scored`` per file, each built by ``score_one``) into one
    :class:`~evalkit.engines.job.ScoredBatch`: the per-file columns the parent reports and one
    BatchPieces (None when every file was bad). Returned as a list of that one object, the shape
    every engine's batch function has."""
    from evalkit.aggregate.groups import Aggregator
    from evalkit.engines.job import ScoredBatch
    from evalkit.present.score_view import join_parts

    texts: list[str] = []
    rows: list[Any] = []
    parquet: list[Any] = []
    agg = Aggregator(include_errors) if job.partial else None
    batch = ScoredBatch([s.path for s in scored], [s.run_id for s in scored], [None] * len(scored), {}, {})
    distinct: dict[tuple[str, str], tuple[str, str]] = {}  # one object per scenario: pickled once
    for i, item in enumerate(scored):
        if item.warnings:
            batch.warnings[i] = item.warnings
        if item.error is not None:
            batch.errors[i] = item.error
            continue
        summary = item.summary
        if agg is not None:
            agg.add(summary)
        key = (summary.scenario_id, summary.scenario_hash)
        batch.scenarios[i] = distinct.setdefault(key, key)
        if item.parts is not None:
            texts.append(join_parts(item.parts))
        if item.rows is not None:
            rows.append(item.rows)
        if item.parquet is not None:
            parquet.append(item.parquet)
    if len(batch.errors) == len(scored):
        return [batch]
    pieces = BatchPieces(len(texts), partial=agg.partial(sparse=not job.in_process) if agg is not None else None)
    if job.output_format is not None:
        text = (",\n" if job.output_format == "json" else "").join(texts)
        pieces.output = text
        if job.encoding is not None:
            try:
                pieces.output = text.encode(job.encoding)
            except UnicodeEncodeError:  # the parent's stream decides what happens to such text
                pass
    if job.db_rows:
        from evalkit.db.scores import batch_rows, can_stage, stage_rows

        pieces.rows = batch_rows(rows)
        # several files: a batch that goes to another process, where inserting them row by row would
        # be the parent's work; a batch scored where it is written is that process's own loop
        if len(rows) > 1 and not job.in_process and can_stage():
            pieces.rows = stage_rows(pieces.rows)
    if job.parquet_rows:
        pieces.parquet = parquet
        if len(parquet) > 1 and not job.in_process:  # as the rows above: converted to Arrow here, not in the parent
            from evalkit.output.parquet import arrow_rows

            pieces.parquet = arrow_rows(parquet)
    if job.spool is not None:
        _spool(job.spool, pieces)
    batch.pieces = pieces
    return [batch]


def _spool(directory: str, pieces: BatchPieces) -> None:
    """The pieces' bytes left in files of ``directory`` (:mod:`evalkit.engines.spool`): the parent
    then copies or reads them instead of receiving them through the pool's pipe."""
    from evalkit.engines.spool import spool_bytes

    if isinstance(pieces.output, bytes):
        pieces.output = spool_bytes(directory, pieces.output)
    if isinstance(getattr(pieces.rows, "data", None), bytes):  # StagedRows
        pieces.rows.data = spool_bytes(directory, pieces.rows.data)
    if isinstance(getattr(pieces.parquet, "ipc", None), bytes):  # ArrowRows
        pieces.parquet.ipc = spool_bytes(directory, pieces.parquet.ipc)
