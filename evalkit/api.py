"""evalkit's Python API. The CLI is a thin shell over these functions.

>>> from evalkit.api import iter_scorecards, aggregate
>>> cards = [c for c in iter_scorecards(["examples/"]) if not isinstance(c, InputError)]
>>> aggregate(cards)["models"]  # doctest: +SKIP

Nothing here imports litellm, numpy or scipy (``judge_paths`` imports the judge layer when it is
called).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from evalkit.aggregate.groups import Aggregator, RunSummary, aggregate, pass_hat_k
from evalkit.errors import InputError
from evalkit.trajectory.reader import Warn, expand_paths, parse_trajectory, read_trajectory
from evalkit.scoring.scorecard import ScoreCard
from evalkit.scoring import derive_scalar, score_trajectory
from evalkit.db.scores import DEFAULT_DB, CardRows, Store
from evalkit.engines import ScoreJob, Scored, score_files
from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL

# One function per command (score, aggregate, judge, audit, report, import_runs, probe, compare,
# plan, verdicts), then the building blocks they are made of.
COMMANDS = ["score", "aggregate", "judge", "audit", "report", "import_runs", "probe", "compare", "plan", "verdicts"]
__all__ = [
    *COMMANDS,
    "Aggregator", "DEFAULT_DB", "InputError", "RunSummary", "ScoreCard", "Store",
    "aggregate_db",
    "derive_scalar", "expand_paths", "iter_scorecards", "parse_trajectory", "pass_hat_k",
    "judge_paths", "read_trajectory", "ScoreJob", "Scored", "score_file", "score_into", "score_stream", "score_to_db",
    "score_trajectory",
]

BATCH = 200  # ScoreCards per database transaction
BATCH_CHARS = 8 << 20  # ... or fewer, once their cards and bundles hold this many characters


def score_file(path: str | Path, warn: Warn | None = None) -> ScoreCard:
    """Read and score one trajectory file. Raises InputError on bad input."""
    return score_trajectory(read_trajectory(path, warn, compact=True))


def iter_scorecards(paths: Iterable[str | Path], warn: Warn | None = None) -> Iterator[ScoreCard | InputError]:
    """Score files one at a time (directories: ``*.jsonl``, recursive, sorted); bad files yield their error."""
    for path in expand_paths(paths):
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
    card and bundle JSON), one transaction each, by this process only; what was
    yielded is stored once the generator is exhausted or closed. A bad file goes to ``on_error``
    and the others are still scored. Reader warnings and a run_id read twice are reported through
    ``warn``: the database keeps the later card (upsert by run_id), and so does
    :class:`Aggregator`. A database failure raises
    ``evalkit.db.DbError``. Output is the same whatever the engine and number of workers.
    """
    job = replace(job or ScoreJob(), db_rows=store is not None)
    pending: list[CardRows] = []
    pending_chars = 0
    seen: dict[str, str] = {}  # run_id -> path
    try:
        for item in score_files(paths, job, engine=engine, workers=workers, ray_address=ray_address):
            if warn is not None:
                for message in item.warnings:
                    warn(message)
            if item.error is not None:
                on_error(item.error)
                continue
            if item.run_id in seen and warn is not None:
                keeps = "the aggregates" if store is None else "the aggregates and the database"
                warn(f"{item.path}: warning: run_id {item.run_id!r} was already read from {seen[item.run_id]}; "
                     f"this one replaces it in {keeps}")
            seen[item.run_id] = item.path
            if store is not None:
                pending.append(item.rows)
                pending_chars += len(item.rows["bundles"][0][1]) + len(item.rows["scorecards"][0][-1])
            yield item
            # stored after the consumer had the item (and could drop its output text): a long run's
            # card is written while as little else as possible is held (issue #9's memory bound)
            item = None
            if store is not None and (len(pending) >= batch or pending_chars >= BATCH_CHARS):
                store.save_rows(pending)
                pending, pending_chars = [], 0
    finally:
        if store is not None and pending:
            store.save_rows(pending)


def score_into(paths: Iterable[str | Path], store: Store | None, on_error: Callable[[InputError], None],
               warn: Warn | None = None, batch: int = BATCH) -> Iterator[ScoreCard]:
    """Score files (in this process) and store the cards in ``store`` (None: score only), yielding
    each good card; see :func:`score_stream` for the rules."""
    for item in score_stream(paths, store, on_error, warn, job=ScoreJob(card=True), batch=batch):
        yield item.card


def score_to_db(paths: Iterable[str | Path], db: str | Path, warn: Warn | None = None) -> tuple[list[ScoreCard], list[str]]:
    """Score trajectory files into the database ``db`` as ``evalkit score --db`` does
    (:func:`score_into`: batches, the duplicate run_id warning); ``warn`` receives the reader's
    warnings. Returns the good cards and one line per bad file. ``evalkit judge PATHS`` and
    ``evalkit probe PATHS`` score through it before judging."""
    errors: list[str] = []
    with Store(db) as store:
        cards = list(score_into(list(paths), store, lambda exc: errors.append(str(exc)), warn))
    return cards, errors


def judge_paths(paths: Iterable[str], models: Iterable[str], *, db: str = DEFAULT_DB, **options):
    """Score trajectory files into ``db`` (:func:`score_to_db`), then judge them:
    ``evalkit judge PATHS`` as a function, returning the judge layer's ``JudgeResult`` with the bad
    files in ``input_errors``. ``options`` as :func:`evalkit.judges.api.judge_cards`. The judge layer
    (and litellm) is imported only when this is called; the judge layer itself never imports
    this module."""
    from evalkit.judges.api import judge_cards

    cards, errors = score_to_db(paths, db)
    result = judge_cards(cards, models, db=db, **options)
    result.input_errors = errors
    return result


def aggregate_db(db_path: str | Path, include_errors: bool = False, level: float = DEFAULT_LEVEL) -> dict:
    """The aggregate (with its error bars) of every ScoreCard stored in ``db_path``, opened read-only.

    Raises ``evalkit.db.DbError`` (one line naming the file) when the database cannot be read.
    """
    from evalkit.db import open_readonly, read_scorecards

    with open_readonly(db_path) as db:
        return aggregate(read_scorecards(db, with_bundle=False), include_errors, level)


def compare(db_path: str | Path, baseline: str | None = None, correction: str = "holm",
            level: float = DEFAULT_LEVEL, include_errors: bool = False) -> dict:
    """Paired comparison of the models stored in ``db_path`` (``evalkit compare``); see
    :func:`evalkit.aggregate.uncertainty.paired.compare_models`. ValueError for an unknown baseline."""
    from evalkit.aggregate.uncertainty.paired import compare_models

    return compare_models(aggregate_db(db_path, include_errors, level), baseline, correction, level)


def plan(delta: float, db_path: str | Path | None = None, level: float = DEFAULT_LEVEL, power: float = 0.8,
         sd_within: float | None = None, sd_between: float | None = None) -> dict:
    """Scenarios × runs needed to detect ``delta`` (``evalkit plan``), from the variances measured
    in ``db_path`` or stated; see :func:`evalkit.aggregate.uncertainty.power.plan`."""
    from evalkit.aggregate.uncertainty.power import plan as make_plan

    measured = aggregate_db(db_path, level=level) if db_path is not None else None
    result = make_plan(delta, measured, level, power, sd_within=sd_within, sd_between=sd_between)
    result["db"] = None if db_path is None else str(db_path)
    return result


# --- one function per command -------------------------------------------------------------------
# Each is what the command of the same name does, minus parsing options and printing. Heavy layers
# (the judge and litellm, the audit's numpy/scipy, the report) are imported only when called.


def score(paths: Iterable[str | Path], db: str | Path | None = None, warn: Warn | None = None
          ) -> tuple[list[ScoreCard], list[str]]:
    """``evalkit score``: score trajectory files (and directories), storing the cards in ``db``
    when given. Returns the good cards and one line per bad file (``path:line: reason``)."""
    if db is not None:
        return score_to_db(paths, db, warn)
    errors: list[str] = []
    cards = list(score_into(list(paths), None, lambda exc: errors.append(str(exc)), warn))
    return cards, errors


def judge(db: str | Path, models: Iterable[str], paths: Iterable[str] | None = None, **options):
    """``evalkit judge``: judge the runs stored in ``db`` (or, with ``paths``, score those files
    into ``db`` first) with each of ``models``; returns the judge layer's ``JudgeResult``.
    ``options`` as :func:`evalkit.judges.api.judge_cards`."""
    if paths is not None:
        return judge_paths(list(paths), models, db=str(db), **options)
    from evalkit.judges.api import judge_db

    return judge_db(str(db), models, **options)


def audit(db: str | Path, **options) -> dict:
    """``evalkit audit``: the agreement audit of ``db`` (docs/audit.md); ``options`` as
    :func:`evalkit.agreement.audit.run_audit` (judge, rubric, by, config, seed, n_resamples, jury)."""
    from evalkit.agreement.audit import build_audit

    return build_audit(db, **options)


def report(db: str | Path, **options) -> dict:
    """``evalkit report``: the report's data (what the HTML and markdown emitters render);
    ``options`` as :func:`evalkit.report.data.build_report`."""
    from evalkit.report.data import build_report

    return build_report(db, **options)


def import_runs(importer: str, paths: Iterable[str | Path], out_dir: str | Path, **options):
    """``evalkit import FORMAT``: convert other tools' files into trajectories in ``out_dir``;
    ``options`` as :func:`evalkit.importers.import_files` (db, workers, importer options)."""
    from evalkit.importers import import_files

    return import_files(importer, list(paths), out_dir, **options)


def probe(db: str | Path, models: Iterable[str], **options):
    """``evalkit probe``: counterfactual probes of the judges ``models`` on the runs in ``db``;
    ``options`` as :func:`evalkit.probes.pipeline.run_probes`."""
    from evalkit.probes.pipeline import run_probes

    return run_probes(str(db), models, **options)


def verdicts(paths: Iterable[str], patterns: Iterable[str] = (), **options) -> dict:
    """``evalkit verdicts``: score classification result files; ``options`` as
    :func:`evalkit.verdicts.analysis.score_result_files` (order, threshold)."""
    from evalkit.verdicts.analysis import score_result_files

    return score_result_files(list(paths), list(patterns), **options)
