"""What a worker does with a batch of files: read, score, and turn each card into exactly what the
parent needs — its output text, its database rows, its Parquet rows and its aggregation summary.

The parent then only writes strings and rows (cheap), which is what lets N workers approach N times
one: a ScoreCard itself costs more to send between processes than to compute. The same function runs
in-process for one worker, in a process pool, or as a Ray task, so every engine gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalkit.errors import InputError

# A file to score: a path or URL, or (name, bytes) for data the parent already read (stdin), or
# (name, error) when reading it failed there.
Source = str | tuple[str, bytes | InputError]


@dataclass(frozen=True, slots=True)
class ScoreJob:
    """Which parts of each scored card the parent wants back."""

    output_format: str | None = None  # a render.FORMATS name; None: no per-run output
    db_rows: bool = False
    parquet_rows: bool = False
    card: bool = False  # the ScoreCard itself (for in-process callers: it is slow to send)
    scenarios: Any = None  # evalkit.trajectory.scenario_files.ScenarioSet, for runs that name their scenario
    columns: tuple[str, ...] | None = None  # the table format's run columns (score_output.run_columns); None: all
    # the batch's finished pieces (evalkit.engines.pieces): the output joined (bytes in ``encoding``
    # when set), the database rows by table, an aggregate partial counted with or without provider
    # errors (``include_errors``)
    encoding: str | None = None
    include_errors: bool = False
    # in a pool: the directory the pieces' bytes are left in (evalkit.engines.spool)
    spool: str | None = None
    # scored in the process that writes: a batch of several files keeps its rows for
    # executemany and its Parquet rows as they are (staging them is for a batch sent elsewhere)
    in_process: bool = False
    # note what each scenario's runs did, for the warnings of evalkit.engines.scenario_check;
    # ``observe_token`` names the scoring run (a worker then sends only what it has not sent for it)
    observe: bool = False
    observe_token: str | None = None
    partial: bool = True  # the batch's aggregate partial (False: nothing aggregated is shown)


@dataclass(slots=True)
class ScoredBatch:
    """The outcome of one batch of files (:func:`score_batch`):
    what the parent says per file, as columns in input order, and the batch's finished pieces.

    ``run_ids[i]`` is None where ``errors[i]`` holds that file's error; ``scenarios[i]`` the good
    file's (scenario id, content hash), for ``Aggregator.note``; ``warnings`` the reader's warnings
    by file index (most batches have none). ``pieces`` is None when no file of the batch was good.
    One object per batch instead of one per file is what keeps the parent's work per batch: in the
    usual batch (no warning, no error, no run_id read twice) it handles the whole batch at once."""

    paths: list[str]
    run_ids: list[str | None]
    scenarios: list[tuple[str, str] | None]
    warnings: dict[int, list[str]]
    errors: dict[int, InputError]
    pieces: Any = None  # evalkit.engines.pieces.BatchPieces
    seen: Any = None  # observed jobs: what each scenario's runs did (evalkit.engines.scenario_check.Seen by hash)

    def __reduce__(self):
        fields = (self.paths, self.run_ids, self.scenarios, self.warnings, self.errors, self.pieces, self.seen)
        return (ScoredBatch, fields)

    @property
    def good(self) -> int:
        return len(self.paths) - len(self.errors)


def preload() -> None:
    """Import what scoring a file needs, ahead of the first file (a pool's worker as it starts:
    evalkit.engines.local.started_pool): evalkit.engines.worker and what it imports, but the
    database's (the process that starts the pool loads it when it writes one, and the workers
    inherit it: evalkit.engines.local.workers_ahead)."""
    import evalkit.engines.worker  # noqa: F401


def score_batch(job: ScoreJob, sources: list[Source]) -> list[ScoredBatch]:
    """One :class:`ScoredBatch` for the sources (a list of it: the shape every engine's batch
    function has)."""
    from evalkit.engines.worker import score_one  # once a batch: the parent of a pool never loads it

    noting = None
    if job.observe:
        from evalkit.engines.scenario_check import Noting

        noting = Noting(job.observe_token, job.in_process)
    batches = finish_batch(job, [score_one(job, s, noting) for s in sources], job.include_errors)
    if noting is not None:
        batches[0].seen = noting.seen()
    return batches


def _separated(texts: list[str], sep: str) -> Iterator[str]:
    for i, text in enumerate(texts):
        if i and sep:
            yield sep
        yield text


def finish_batch(job: Any, scored: list[Any], include_errors: bool = False) -> list[Any]:
    """Fold ``scored`` (one ``evalkit.engines.worker.Scored`` per file, each built by ``score_one``) into one
    :class:`~evalkit.engines.job.ScoredBatch`: the per-file columns the parent reports and one
    BatchPieces (None when every file was bad). Returned as a list of that one object, the shape
    every engine's batch function has."""
    from evalkit.aggregate.groups import Aggregator
    from evalkit.engines.pieces import BatchPieces
    from evalkit.present.score_output import join_parts

    texts: list[str] = []
    rows: list[Any] = []
    parquet: list[Any] = []
    cards: list[Any] = []
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
        if item.card is not None:
            cards.append(item.card)
    if len(batch.errors) == len(scored):
        return [batch]
    pieces = BatchPieces(len(texts), partial=agg.partial(sparse=not job.in_process) if agg is not None else None)
    if job.output_format is not None:
        sep = ",\n" if job.output_format == "json" else ""
        if job.spool is not None and job.encoding is not None:
            from evalkit.engines.spool import spool_text

            pieces.output = spool_text(job.spool, _separated(texts, sep), job.encoding)
        if pieces.output is None:
            text = sep.join(texts)
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
    if job.card:
        pieces.cards = cards
    if job.spool is not None:
        from evalkit.engines.pieces import spool_pieces

        spool_pieces(job.spool, pieces)
    batch.pieces = pieces
    return [batch]
