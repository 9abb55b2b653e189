"""The one way to score files: :func:`score_files`. ``evalkit score``, the Python API, ``judge PATHS``
and ``probe PATHS`` all call it; batching, spooling and staging stay inside :mod:`evalkit.engines`.

>>> from evalkit.engines.pipeline import score_files
>>> for item in score_files(["examples/"]):
...     print(item.run_id if not isinstance(item, InputError) else f"error: {item}")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL
from evalkit.engines.job import ScoredBatch, ScoreJob, Source
from evalkit.engines.scenario_check import merge as merge_seen
from evalkit.engines.scenario_check import noted_here
from evalkit.engines.sources import STDIN, expand
from evalkit.engines.spool import Spool, can_spool
from evalkit.errors import InputError
from evalkit.trajectory.input_files import path_list

if TYPE_CHECKING:  # with workers, this process only writes: the scorer and its models load in them
    from evalkit.db.scores import BatchRows, Store
    from evalkit.trajectory.reader import Warn
    from evalkit.trajectory.scenario_files import ScenarioSet

ENGINES = ("local", "ray")
CARDS = "cards"  # score_files' default output: each good file's ScoreCard
BATCH = 200  # ScoreCards per database transaction
BATCH_CHARS = 8 << 20  # ... or fewer, once their cards and bundles hold this many characters


@dataclass(slots=True)
class Output:
    """A batch of good files scored, in input order: ``data`` is their output in the format asked
    for (text, or bytes in the ``encoding`` asked for; None for ``output=None``) and ``count`` how
    many files. Bytes a pool's worker left in a spool file come as that file's reference, which
    ``evalkit.present.score_output.ScoreWriter.write_batch`` copies."""

    data: Any
    count: int


def score_files(
    paths: Iterable[str | Path],
    *,
    store: Store | None = None,
    scenarios: ScenarioSet | Iterable[str | Path] | None = None,
    engine: str = "local",
    workers: int | None = 1,
    ray_address: str | None = None,
    warn: Warn | None = None,
    output: str | None = CARDS,
    columns: tuple[str, ...] | None = None,
    encoding: str | None = None,
    parquet: str | Path | None = None,
    aggregate: str | None = None,
    include_errors: bool = False,
    level: float = DEFAULT_LEVEL,
    on_finding: Callable[[str], None] | None = None,
    batch: int = BATCH,
) -> Scoring:
    """Score the trajectory files under ``paths`` (files, directories searched for ``*.jsonl``,
    URLs, ``-`` for standard input). Iterating the result gives, in input order, an
    :class:`InputError` for each bad file and, for the good ones:

    - ``output="cards"`` (the default): each file's ScoreCard;
    - ``output=`` a format of ``evalkit score`` (``jsonl``, ``json``, ``csv``, ``table``, ``markdown``):
      one :class:`Output` per batch of files, the batch's finished text (``columns``: the table's run
      columns; ``encoding``: bytes in it), which workers make so that this process only writes;
    - ``output=None``: one :class:`Output` per batch without text (how many files were scored).

    ``store``: where the cards are written (:class:`evalkit.db.scores.Store`; ``batch`` cards a
    transaction; a run_id read again replaces the earlier card, said through ``warn``).
    ``scenarios``: a ScenarioSet or scenario files (InputError at once when one is bad), for runs
    that name their scenario. ``engine`` ``local`` with ``workers`` processes, or ``ray`` (at
    ``ray_address``). ``warn``: the reader's warnings and what a directory search skipped.
    ``parquet``: a new directory the cards are also written into (discarded on failure).
    ``aggregate``: ``"full"``, ``"tables"`` (without the pass^k bootstrap) or ``"shown"`` (without
    any error bar: the result's ``add_errors(metrics)`` adds those of some metrics) puts the
    aggregate in the result's ``aggregate`` once iterated (``include_errors``, ``level``). ``on_finding``: the
    references of a scenario its runs contradict, one line each, once every file is scored
    (:mod:`evalkit.engines.scenario_check`; nothing is noted without it).

    Output is the same, byte for byte, whatever the engine and number of workers. A database
    failure raises ``evalkit.db.DbError``; ValueError, naming the argument, for an unknown engine,
    output, column or encoding, ``workers`` or ``batch`` below 1, or one path where a list is
    expected.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    if aggregate not in (None, "full", "tables", "shown"):
        raise ValueError(f"unknown aggregate {aggregate!r} (full, tables, shown or None)")
    if output not in (CARDS, None):
        from evalkit.present.score_output import FORMATS, RUN_COLUMNS

        if output not in FORMATS:
            raise ValueError(f"unknown output {output!r} (cards, None or one of {', '.join(FORMATS)})")
        unknown = [c for c in columns or () if c not in RUN_COLUMNS]
        if unknown:
            raise ValueError(f"columns: unknown {', '.join(map(repr, unknown))} (choose from {', '.join(RUN_COLUMNS)})")
    if encoding is not None:
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ValueError(f"encoding: unknown encoding {encoding!r}") from None
    for name, value in (("workers", 1 if workers is None else workers), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: a whole number of at least 1, not {value!r}")
    paths = path_list(paths, "paths")
    if scenarios is not None and not _is_scenario_set(scenarios):
        from evalkit.trajectory.scenario_files import load_given_scenarios

        scenarios = load_given_scenarios(path_list(scenarios, "scenarios"))
    job = ScoreJob(
        output_format=None if output == CARDS else output,
        card=output == CARDS,
        db_rows=store is not None,
        parquet_rows=parquet is not None,
        columns=columns,
        scenarios=scenarios,
        encoding=encoding,
        include_errors=include_errors,
        observe=on_finding is not None,
        partial=aggregate is not None,
    )
    if workers is None:
        from evalkit.engines.local import default_workers

        workers = default_workers()
    return Scoring(paths, store, job, engine, workers, ray_address, warn, parquet, aggregate, level, on_finding, batch)


def _is_scenario_set(value: Any) -> bool:
    from evalkit.trajectory.scenario_files import ScenarioSet

    return isinstance(value, ScenarioSet)


class _Results:
    """What a scoring found besides its items, filled in by the generator. The generator holds
    this, not the Scoring: a Scoring dropped with its loop (an exception in the consumer) is freed
    at once, and its generator's ``finally`` writes the pending cards while the store is still open,
    not at some later garbage collection."""

    __slots__ = ("aggregate", "scored", "aggregator")

    def __init__(self) -> None:
        self.aggregate: dict | None = None
        self.scored = 0
        self.aggregator: Any = None  # kept for add_errors when the aggregate is "shown"


class Scoring:
    """What :func:`score_files` returns: iterate it once for the results; then ``aggregate`` holds
    the aggregate asked for (else None) and ``scored`` how many files were good. Closing it (or
    leaving the loop early) stops the workers and writes what was yielded."""

    def __init__(
        self, paths, store, job, engine, workers, ray_address, warn, parquet, aggregate, level, on_finding, batch
    ):
        self._results = _Results()
        self._iter = _run(
            self._results,
            paths,
            store,
            job,
            engine,
            workers,
            ray_address,
            warn,
            parquet,
            aggregate,
            level,
            on_finding,
            batch,
        )

    @property
    def aggregate(self) -> dict | None:
        return self._results.aggregate

    @property
    def scored(self) -> int:
        return self._results.scored

    def __iter__(self) -> Iterator[Any]:
        return self._iter

    def __next__(self) -> Any:
        return next(self._iter)

    def close(self) -> None:
        self._iter.close()

    def add_errors(self, metrics: Iterable[str]) -> None:
        """Add the error bars of ``metrics`` to an aggregate asked for as ``"shown"``
        (:meth:`evalkit.aggregate.groups.Aggregator.add_errors`)."""
        self._results.aggregator.add_errors(self._results.aggregate, tuple(metrics))

    def collect(self) -> tuple[list[Any], list[InputError]]:
        """Every result: the good files' items (ScoreCards, or :class:`Output`) and the bad files'
        errors, each in input order."""
        good: list[Any] = []
        bad: list[InputError] = []
        for item in self._iter:
            (bad if isinstance(item, InputError) else good).append(item)
        return good, bad


def _run(out, paths, store, job, engine, workers, ray_address, warn, parquet_dir, aggregate, level, on_finding, batch):
    # A batch without a warning, an error or a run_id read twice (the usual one) is handled
    # whole: the aggregate hears its distinct scenarios once each, in the order they first
    # occur (Aggregator.note ignores repeats: the same calls as file by file). Otherwise each
    # file's warnings are said, and its error yielded, in input order.
    from evalkit.aggregate.groups import Aggregator

    # noted per run whatever is asked: a scenario id read with two contents is always said
    agg = Aggregator(job.include_errors, level, warn=warn)
    if job.observe and engine == "local":  # a local pool's worker takes its batches in input order
        import os
        from dataclasses import replace

        # random bytes from the OS, as secrets.token_hex gives (secrets loads hashlib and hmac)
        job = replace(job, observe_token=os.urandom(8).hex())
    noted: dict = {}  # scenario hash -> what its runs did (scenario_check.Seen), merged in input order
    writer = _Writer(store, batch)
    seen: dict[str, str] = {}  # run_id -> path
    parquet = None
    spool = Spool() if (engine != "local" or workers > 1) and can_spool() else None
    stream = _engine_batches(job, paths, engine, workers, ray_address, warn, spool)
    try:
        if parquet_dir is not None:
            from evalkit.output.parquet import ParquetWriter

            parquet = ParquetWriter(parquet_dir)
        for scored in stream:
            if scored.seen:
                merge_seen(noted, scored.seen)
            ids = scored.run_ids
            if not scored.warnings and not scored.errors and seen.keys().isdisjoint(ids) and len(set(ids)) == len(ids):
                seen.update(zip(ids, scored.paths))
                agg.note_all(scored.scenarios)
            else:
                for i, path in enumerate(scored.paths):
                    if warn is not None:
                        for message in scored.warnings.get(i, ()):
                            warn(message)
                    if i in scored.errors:
                        yield scored.errors[i]
                        continue
                    _said_again(path, ids[i], seen, warn, store)
                    agg.note(*scored.scenarios[i])
            good = scored.good
            out.scored += good
            pieces, scored = scored.pieces, None  # as little as possible held while the batch is written
            if pieces is None:
                continue
            if store is not None:
                writer.add(pieces.rows)
            if aggregate is not None:
                agg.merge(pieces.partial)
            if parquet is not None:
                parquet.add_many(pieces.parquet)
            if job.card:
                yield from pieces.cards
            else:
                yield Output(pieces.output, good)
            # written after the consumer had the batch: a long run's text is not held through its write
            pieces = None
            writer.flush_if_full()
        if job.observe_token is not None:  # the batches scored here: their notes taken once
            merge_seen(noted, noted_here(job.observe_token))
        if noted and on_finding is not None:
            for line in scenario_lines(noted, job.scenarios, engine, workers):
                on_finding(line)
        if parquet is not None:
            parquet.close()
        if aggregate is not None:
            out.aggregate = agg.result(
                bootstrap=aggregate == "full", errors=aggregate != "shown", map_models=_models_map(engine, workers)
            )
            if aggregate == "shown":
                out.aggregator = agg
    finally:
        stream.close()  # the pool stopped first: no worker writes into the spool any more
        try:
            writer.flush()
        finally:
            if spool is not None:
                spool.close()
            if parquet is not None:
                parquet.discard()


def _sources(names: list[str]) -> Iterator[Source]:
    """The files to score; standard input is read here, in the parent, and passed on as bytes, up
    to the size limit of :mod:`evalkit.trajectory.input_files` (over it, the error is passed on
    instead: it is reported as that input's error, and the other files are still scored)."""
    from evalkit.trajectory.input_files import read_bytes

    for name in names:
        if name == STDIN:
            try:
                data: bytes | InputError = read_bytes(STDIN)
            except InputError as exc:
                data = exc
            yield ("<stdin>", data)
        else:
            yield name


def _engine_batches(job, paths, engine, workers, ray_address, warn, spool) -> Iterator[ScoredBatch]:
    # every path is expanded first, so what the directory searches skip is told to ``warn`` before any
    # file's own warnings, whatever the engine; the count sizes the batches
    names = list(expand(paths, warn))
    if engine == "local":
        from evalkit.engines.local import score_local

        yield from score_local(job, _sources(names), workers, spool=spool, total=len(names))
        return
    from evalkit.engines.ray_engine import score_ray

    yield from score_ray(job, _sources(names), address=ray_address, spool=spool, total=len(names))


def scenario_lines(seen: dict, scenarios: ScenarioSet | None, engine: str, workers: int) -> list[str]:
    """The scenario warnings of ``seen`` (:func:`evalkit.engines.scenario_check.scenario_warnings`),
    made in the workers of the local pool when one is still started (their scorer is loaded: this
    process never loads it), a share of the scenarios each, else here."""
    from evalkit.engines.scenario_check import scenario_warnings

    if engine != "local":
        return scenario_warnings(seen, scenarios)
    from evalkit.engines.local import map_in_pool

    notes = list(seen.items())
    size = -(-len(notes) // workers) or 1
    shares = [dict(notes[i : i + size]) for i in range(0, len(notes), size)]
    made = map_in_pool(workers, scenario_warnings, shares, [scenarios] * len(shares))
    return [line for lines in made for line in lines]


def _models_map(engine: str, workers: int):
    """How the aggregate's models are worked out: side by side in the workers of the local pool
    when one is still started (its processes wait for nothing else by then), else here."""
    if engine == "local":
        from functools import partial

        from evalkit.engines.local import map_in_pool

        return partial(map_in_pool, workers)
    return map


def _said_again(path, run_id, seen, warn, store) -> None:
    """Say it when ``run_id`` was read before (the later card replaces the earlier one)."""
    if run_id in seen and warn is not None:
        keeps = "the aggregates" if store is None else "the aggregates and the database"
        warn(
            f"{path}: warning: run_id {run_id!r} was already read from {seen[run_id]}; this one replaces it in {keeps}"
        )
    seen[run_id] = path


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
