"""A batch's finished pieces: what a worker hands the parent so that the parent only writes.

A worker scores its batch of files and returns one
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
    cards: list[Any] | None = None  # the ScoreCards themselves, when the job asks for them (ScoreJob.card)


def spool_pieces(directory: str, pieces: BatchPieces) -> None:
    """The pieces' bytes left in files of ``directory`` (:mod:`evalkit.engines.spool`): the parent
    then copies or reads them instead of receiving them through the pool's pipe."""
    from evalkit.engines.spool import spool_bytes

    if isinstance(pieces.output, bytes):
        pieces.output = spool_bytes(directory, pieces.output)
    if isinstance(getattr(pieces.rows, "data", None), bytes):  # StagedRows
        pieces.rows.data = spool_bytes(directory, pieces.rows.data)
    if isinstance(getattr(pieces.parquet, "ipc", None), bytes):  # ArrowRows
        pieces.parquet.ipc = spool_bytes(directory, pieces.parquet.ipc)
