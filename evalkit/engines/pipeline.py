"""Scoring files through an engine into a store: the score path of ``evalkit score``, ``judge PATHS``
and ``probe PATHS`` (re-exported by :mod:`evalkit.api`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.db.scores import BatchRows, Store, batch_rows
from evalkit.engines import Scored, ScoreJob, score_files
from evalkit.engines.spool import Spool, can_spool
from evalkit.errors import InputError

if TYPE_CHECKING:  # with workers, this process only writes: the scorer and its models load in them
    from evalkit.scoring.scorecard import ScoreCard
    from evalkit.trajectory.reader import Warn
    from evalkit.trajectory.scenario_files import ScenarioSet

BATCH = 200  # ScoreCards per database transaction
BATCH_CHARS = 8 << 20  # ... or fewer, once their cards and bundles hold this many characters


def score_file(path: str | Path, warn: Warn | None = None, scenarios: ScenarioSet | None = None) -> ScoreCard:
    """Read and score one trajectory file (``scenarios``: for a run that names its scenario).
    Raises InputError on bad input."""
    from evalkit.scoring import score_trajectory
    from evalkit.trajectory.reader import read_trajectory

    return score_trajectory(read_trajectory(path, warn, compact=True, scenarios=scenarios))


def iter_scorecards(paths: Iterable[str | Path], warn: Warn | None = None) -> Iterator[ScoreCard | InputError]:
    """Score files one at a time (directories: ``*.jsonl``, recursive, sorted); bad files yield their error."""
    from evalkit.trajectory.reader import expand_paths

    for path in expand_paths(paths, warn):
        try:
            yield score_file(path, warn)
        except InputError as exc:
            yield exc


def score_stream(
    paths: Iterable[str | Path],
    store: Store | None,
    on_error: Callable[[InputError], None],
    warn: Warn | None = None,
    *,
    job: ScoreJob | None = None,
    engine: str = "local",
    workers: int = 1,
    ray_address: str | None = None,
    batch: int = BATCH,
) -> Iterator[Scored]:
    """Score files with an engine (``evalkit.engines``) and store them in ``store`` (None: score
    only), yielding each good file's ``Scored`` (what ``job`` asked for), in input order.

    Cards are written ``batch`` at a time (or fewer, once they hold ``BATCH_CHARS`` characters of
    card and bundle JSON; a batched job's rows come by the worker's batch), one transaction each,
    by this process only, with the same result as storing them one by one; what was
    yielded is stored once the generator is exhausted or closed. A bad file goes to ``on_error``
    and the others are still scored. Reader warnings and a run_id read twice are reported through
    ``warn``: the database keeps the later card (upsert by run_id), and so does
    :class:`Aggregator`. A database failure raises
    ``evalkit.db.DbError``. Output is the same whatever the engine and number of workers.
    """
    job = replace(job or ScoreJob(), db_rows=store is not None)
    pending: list[BatchRows] = []
    pending_cards = pending_chars = 0
    seen: dict[str, str] = {}  # run_id -> path
    spool = Spool() if job.batched and (engine != "local" or workers > 1) and can_spool() else None
    stream = score_files(paths, job, engine=engine, workers=workers, ray_address=ray_address, warn=warn, spool=spool)
    try:
        for item in stream:
            if warn is not None:
                for message in item.warnings:
                    warn(message)
            if item.error is not None:
                on_error(item.error)
                continue
            if item.run_id in seen and warn is not None:
                keeps = "the aggregates" if store is None else "the aggregates and the database"
                warn(
                    f"{item.path}: warning: run_id {item.run_id!r} was already read from {seen[item.run_id]}; "
                    f"this one replaces it in {keeps}"
                )
            seen[item.run_id] = item.path
            rows = None
            if store is not None and not job.batched:
                rows = batch_rows([item.rows])
            elif store is not None and item.batch is not None:  # with the batch's last good file
                rows = item.batch.rows
            if rows is not None:
                pending.append(rows)
                pending_cards += len(rows.run_ids)
                pending_chars += rows.chars
            yield item
            # stored after the consumer had the item (and could drop its output text): a long run's
            # card is written while as little else as possible is held (the memory bound)
            item = rows = None
            if pending and (pending_cards >= batch or pending_chars >= BATCH_CHARS):
                store.save_batches(pending)
                pending, pending_cards, pending_chars = [], 0, 0
    finally:
        stream.close()  # the pool stopped first: no worker writes into the spool any more
        try:
            if store is not None and pending:
                store.save_batches(pending)
        finally:
            if spool is not None:
                spool.close()


def score_into(
    paths: Iterable[str | Path],
    store: Store | None,
    on_error: Callable[[InputError], None],
    warn: Warn | None = None,
    batch: int = BATCH,
    scenarios: ScenarioSet | None = None,
) -> Iterator[ScoreCard]:
    """Score files (in this process) and store the cards in ``store`` (None: score only), yielding
    each good card; see :func:`score_stream` for the rules."""
    for item in score_stream(paths, store, on_error, warn, job=ScoreJob(card=True, scenarios=scenarios), batch=batch):
        yield item.card


def score_to_db(
    paths: Iterable[str | Path], db: str | Path, warn: Warn | None = None, scenarios: ScenarioSet | None = None
) -> tuple[list[ScoreCard], list[str]]:
    """Score trajectory files into the database ``db`` as ``evalkit score --db`` does
    (:func:`score_into`: batches, the duplicate run_id warning); ``warn`` receives the reader's
    warnings. Returns the good cards and one line per bad file. ``evalkit judge PATHS`` and
    ``evalkit probe PATHS`` score through it before judging."""
    errors: list[str] = []
    with Store(db) as store:
        cards = list(score_into(list(paths), store, lambda exc: errors.append(str(exc)), warn, scenarios=scenarios))
    return cards, errors
