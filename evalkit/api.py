"""evalkit's Python API. The CLI is a thin shell over these functions.

>>> from evalkit.api import iter_scorecards, aggregate
>>> cards = [c for c in iter_scorecards(["examples/"]) if not isinstance(c, InputError)]
>>> aggregate(cards)["models"]  # doctest: +SKIP

Nothing here imports litellm, numpy or scipy (``judge_paths`` imports the judge layer when it is
called).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evalkit.aggregate.groups import Aggregator, RunSummary, aggregate, pass_hat_k
from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL
from evalkit.db.scores import DEFAULT_DB, Store
from evalkit.engines import Scored, ScoreJob
from evalkit.engines.pipeline import (
    iter_scorecards,
    score_file,
    score_into,
    score_stream,
    score_to_db,
)
from evalkit.errors import InputError
from evalkit.scoring import derive_scalar, score_trajectory
from evalkit.scoring.scorecard import ScoreCard
from evalkit.trajectory.reader import Warn, expand_paths, parse_trajectory, read_trajectory

# One function per command (score, aggregate, judge, audit, report, import_runs, probe, compare,
# plan, verdicts), then the building blocks they are made of.
COMMANDS = ["score", "aggregate", "judge", "audit", "report", "import_runs", "probe", "compare", "plan", "verdicts"]
__all__ = [
    *COMMANDS,
    "Aggregator",
    "DEFAULT_DB",
    "InputError",
    "RunSummary",
    "ScoreCard",
    "Store",
    "aggregate_db",
    "derive_scalar",
    "expand_paths",
    "iter_scorecards",
    "parse_trajectory",
    "pass_hat_k",
    "judge_paths",
    "read_trajectory",
    "ScoreJob",
    "Scored",
    "score_file",
    "score_into",
    "score_stream",
    "score_to_db",
    "score_trajectory",
]


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


def compare(
    db_path: str | Path,
    baseline: str | None = None,
    correction: str = "holm",
    level: float = DEFAULT_LEVEL,
    include_errors: bool = False,
) -> dict:
    """Paired comparison of the models stored in ``db_path`` (``evalkit compare``); see
    :func:`evalkit.aggregate.uncertainty.paired.compare_models`. ValueError for an unknown baseline."""
    from evalkit.aggregate.uncertainty.paired import compare_models

    return compare_models(aggregate_db(db_path, include_errors, level), baseline, correction, level)


def plan(
    delta: float,
    db_path: str | Path | None = None,
    level: float = DEFAULT_LEVEL,
    power: float = 0.8,
    sd_within: float | None = None,
    sd_between: float | None = None,
) -> dict:
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


def score(
    paths: Iterable[str | Path],
    db: str | Path | None = None,
    warn: Warn | None = None,
    scenarios: Iterable[str | Path] | None = None,
) -> tuple[list[ScoreCard], list[str]]:
    """``evalkit score``: score trajectory files (and directories), storing the cards in ``db``
    when given. ``scenarios``: scenario files (``--scenarios``, docs/scenarios.md) for runs that name
    their scenario; InputError when one is bad. Returns the good cards and one line per bad file
    (``path:line: reason``)."""
    from evalkit.trajectory.scenario_files import load_scenarios

    found = load_scenarios(scenarios) if scenarios is not None else None
    if db is not None:
        return score_to_db(paths, db, warn, scenarios=found)
    errors: list[str] = []
    cards = list(score_into(list(paths), None, lambda exc: errors.append(str(exc)), warn, scenarios=found))
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
    :func:`evalkit.agreement.audit.build_audit_with_pairs` (judge, rubric, by, config, seed, n_resamples, jury)."""
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
