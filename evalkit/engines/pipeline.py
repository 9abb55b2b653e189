"""Scoring files through an engine into a store: the score path of ``evalkit score``, ``judge PATHS``
and ``probe PATHS`` (re-exported by :mod:`evalkit.api`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.db.scores import BatchRows, Store, batch_rows
from evalkit.engines import Scored, ScoreJob, score_files
from evalkit.engines.job import ScoredBatch
from evalkit.engines.scenario_check import merge as merge_seen
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
    from evalkit.engines.sources import expand_paths

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
    A batched job's files come as :func:`score_batches` gives them, one ``Scored`` per file (the
    batch's pieces on its last good file); such a job reports and stores a batch at a time, so its
    errors and warnings for a batch's files reach ``on_error`` / ``warn``, and its rows are queued,
    before the first of that batch's files is yielded (``evalkit score`` reads
    :func:`score_batches` itself).
    """
    job = replace(job or ScoreJob(), db_rows=store is not None)
    if job.batched:
        for scored in score_batches(
            paths, store, on_error, warn, job=job, engine=engine, workers=workers, ray_address=ray_address, batch=batch
        ):
            yield from (item for item in scored.files() if item.error is None)
        return
    writer = _Writer(store, batch)
    seen: dict[str, str] = {}  # run_id -> path
    stream = score_files(paths, job, engine=engine, workers=workers, ray_address=ray_address, warn=warn)
    try:
        for item in stream:
            if not _report(item.path, item.warnings, item.error, item.run_id, seen, warn, on_error, store):
                continue
            if store is not None:
                writer.add(batch_rows([item.rows]))
            yield item
            # stored after the consumer had the item (and could drop its output text): a long run's
            # card is written while as little else as possible is held (the memory bound)
            item = None
            writer.flush_if_full()
    finally:
        stream.close()
        writer.flush()


def score_batches(
    paths: Iterable[str | Path],
    store: Store | None,
    on_error: Callable[[InputError], None],
    warn: Warn | None = None,
    *,
    job: ScoreJob,
    engine: str = "local",
    workers: int = 1,
    ray_address: str | None = None,
    batch: int = BATCH,
    on_scenario: Callable[[str, str], None] | None = None,
    on_finding: Callable[[str], None] | None = None,
) -> Iterator[ScoredBatch]:
    """:func:`score_stream` for a batched job (``job.batched``), a batch at a time: each
    :class:`ScoredBatch` once its files' warnings and errors were reported and its rows queued
    for ``store``. ``on_scenario(id, hash)`` hears each good file's scenario in input order, after
    that file's warnings; a batch without a warning, an error or a run_id read twice (the usual
    one) is handled whole, and ``on_scenario`` hears its distinct scenarios once each, in the order
    they first occur: the same calls, in the same order, for a callback that ignores repeats
    (``Aggregator.note``). A job with ``observe`` notes what each scenario's runs did; once every
    batch is scored, ``on_finding`` (default ``warn``) hears each reference of a scenario its runs
    contradict, one line each (:mod:`evalkit.engines.scenario_check`)."""
    job = replace(job, db_rows=store is not None)
    if job.observe and engine == "local":  # a local pool's worker takes its batches in input order
        import secrets

        job = replace(job, observe_token=secrets.token_hex(8))
    noted: dict = {}  # scenario hash -> what its runs did (scenario_check.Seen), merged in input order
    writer = _Writer(store, batch)
    seen: dict[str, str] = {}  # run_id -> path
    spool = Spool() if (engine != "local" or workers > 1) and can_spool() else None
    stream = score_files(paths, job, engine=engine, workers=workers, ray_address=ray_address, warn=warn, spool=spool)
    try:
        for scored in stream:
            if scored.seen:
                merge_seen(noted, scored.seen)
            ids = scored.run_ids
            if not scored.warnings and not scored.errors and seen.keys().isdisjoint(ids) and len(set(ids)) == len(ids):
                seen.update(zip(ids, scored.paths))
                if on_scenario is not None:
                    for scenario in dict.fromkeys(scored.scenarios):
                        on_scenario(*scenario)
            else:
                for i, path in enumerate(scored.paths):
                    good = _report(
                        path, scored.warnings.get(i, ()), scored.errors.get(i), ids[i], seen, warn, on_error, store
                    )
                    if good and on_scenario is not None:
                        on_scenario(*scored.scenarios[i])
            if store is not None and scored.pieces is not None:
                writer.add(scored.pieces.rows)
            yield scored
            scored = None  # as in score_stream: written while as little else as possible is held
            writer.flush_if_full()
        if noted:
            say = on_finding or warn
            for line in scenario_lines(noted, job.scenarios, engine, workers):
                if say is not None:
                    say(line)
    finally:
        stream.close()  # the pool stopped first: no worker writes into the spool any more
        try:
            writer.flush()
        finally:
            if spool is not None:
                spool.close()


def scenario_lines(seen: dict, scenarios: ScenarioSet | None, engine: str, workers: int) -> list[str]:
    """The scenario warnings of ``seen`` (:func:`evalkit.engines.scenario_check.scenario_warnings`),
    made in a worker of the local pool when one is still started (its scorer is loaded: this
    process never loads it), else here."""
    from evalkit.engines.scenario_check import scenario_warnings

    if engine == "local":
        from evalkit.engines.local import call_in_pool

        return call_in_pool(workers, scenario_warnings, seen, scenarios)
    return scenario_warnings(seen, scenarios)


def _report(path, warnings, error, run_id, seen, warn, on_error, store) -> bool:
    """Say one file's warnings, error and a run_id read before; whether the file is good."""
    if warn is not None:
        for message in warnings:
            warn(message)
    if error is not None:
        on_error(error)
        return False
    if run_id in seen and warn is not None:
        keeps = "the aggregates" if store is None else "the aggregates and the database"
        warn(
            f"{path}: warning: run_id {run_id!r} was already read from {seen[run_id]}; this one replaces it in {keeps}"
        )
    seen[run_id] = path
    return True


class _Writer:
    """Rows queued for ``store`` and written ``batch`` cards (or ``BATCH_CHARS``) at a time."""

    def __init__(self, store: Store | None, batch: int) -> None:
        self.store, self.batch = store, batch
        self.pending: list[BatchRows] = []
        self.cards = self.chars = 0

    def add(self, rows: BatchRows) -> None:
        self.pending.append(rows)
        self.cards += len(rows.run_ids)
        self.chars += rows.chars

    def flush_if_full(self) -> None:
        if self.pending and (self.cards >= self.batch or self.chars >= BATCH_CHARS):
            self.flush()

    def flush(self) -> None:
        if self.store is not None and self.pending:
            # emptied only once written: a save interrupted (Ctrl-C) is rolled back, and the
            # generator's last flush writes the same rows again
            self.store.save_batches(self.pending)
            self.pending, self.cards, self.chars = [], 0, 0


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
