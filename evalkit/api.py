"""evalkit's Python API. The CLI is a thin shell over these functions.

>>> from evalkit.api import iter_scorecards, aggregate
>>> cards = [c for c in iter_scorecards(["examples/"]) if not isinstance(c, InputError)]
>>> aggregate(cards)["models"]  # doctest: +SKIP

Nothing here imports litellm, numpy or scipy (``judge_paths`` imports the judge layer when it is
called).
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL
from evalkit.errors import InputError

if TYPE_CHECKING:  # the scorer, the reader and the card model load on first use (SCORING, BLOCKS)
    from evalkit.agreement.probe_names import PROBES as PROBE_NAMES
    from evalkit.db.scores import Store
    from evalkit.engines import ScoreJob
    from evalkit.scoring.scorecard import ScoreCard
    from evalkit.trajectory.reader import Warn

# One function per command, in the order of `evalkit --help`'s first ones, then the building blocks
# they are made of and the types they return or raise.
COMMANDS = [
    "score",
    "aggregate",
    "judge",
    "audit",
    "report",
    "import_runs",
    "probe",
    "compare",
    "plan",
    "verdicts",
    "check",
    "schema",
    "annotations_list",
    "annotations_import",
    "cache_stats",
    "cache_clear",
    "review_export",
    "export_parquet",
    "export_otel",
    "view_server",
]
# the error types of the layers below, resolved when first asked for (:func:`__getattr__`): the
# judge layer's stay unimported until a judge command needs them
ERRORS = ["DbError", "JudgeNotStored", "OutputError", "ReportError", "RubricError", "SchemaError", "UnknownJudgeError"]
# the scorer's, the reader's and the card model's names, resolved when first asked for too: the
# parent of `evalkit score --workers N` only writes and never loads them (nor pydantic)
SCORING = ["ScoreCard", "derive_scalar", "expand_paths", "parse_trajectory", "read_trajectory", "score_trajectory"]
# the aggregation, the database writer and the engines, resolved when first asked for as well:
# `evalkit judge --help` (the output modes come from here) loads none of them
BLOCKS = [
    "Aggregator",
    "DEFAULT_DB",
    "RunSummary",
    "ScoreJob",
    "Scored",
    "Store",
    "iter_scorecards",
    "pass_hat_k",
    "score_file",
    "score_into",
    "score_stream",
    "score_to_db",
]
__all__ = [
    *COMMANDS,
    *ERRORS,
    *SCORING,
    *BLOCKS,
    "InputError",
    "PROBE_NAMES",
    "aggregate_db",
    "audit_with_pairs",
    "check_probes",
    "check_resample",
    "gate_failure",
    "import_formats",
    "import_options",
    "importer_for",
    "judge_batches",
    "judge_dry_run",
    "judge_paths",
    "load_scenarios",
    "otel_problem",
    "output_modes",
    "parquet_problem",
    "score_inputs",
    "score_run",
    "workers_started",
    "verdict_files",
    "verdict_order",
    "worse_failure",
]


# where each name resolved on first use lives (its layer's module), and under what name there
_HOMES = {
    "PROBE_NAMES": ("evalkit.agreement.probe_names", "PROBES"),  # the names alone: `probe --help` loads no transform
    "DbError": ("evalkit.db", None),
    "JudgeNotStored": ("evalkit.db", None),
    "OutputError": ("evalkit.output.atomic", None),
    "ReportError": ("evalkit.report", None),
    "RubricError": ("evalkit.judges.rubrics", None),
    "SchemaError": ("evalkit.report.schemas", None),
    "UnknownJudgeError": ("evalkit.judges.protocol", None),
    "derive_scalar": ("evalkit.scoring", None),
    "score_trajectory": ("evalkit.scoring", None),
    "ScoreCard": ("evalkit.scoring.scorecard", None),
    **dict.fromkeys(("parse_trajectory", "read_trajectory"), ("evalkit.trajectory.reader", None)),
    "expand_paths": ("evalkit.engines.sources", None),
    **dict.fromkeys(("Aggregator", "RunSummary", "aggregate", "pass_hat_k"), ("evalkit.aggregate.groups", None)),
    **dict.fromkeys(("DEFAULT_DB", "Store"), ("evalkit.db.scores", None)),
    **dict.fromkeys(("Scored", "ScoreJob"), ("evalkit.engines", None)),
    **dict.fromkeys(
        ("iter_scorecards", "score_file", "score_into", "score_stream", "score_to_db"),
        ("evalkit.engines.pipeline", None),
    ),
}


def __getattr__(name: str):
    """The names of :data:`ERRORS`, :data:`SCORING` and :data:`BLOCKS` (and ``aggregate``,
    ``PROBE_NAMES``), imported from their layer (:data:`_HOMES`) when first used."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _HOMES[name]
    found = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = found
    return found


def judge_paths(paths: Iterable[str], models: Iterable[str], *, db: str = "evalkit.db", **options):
    """Score trajectory files into ``db`` (:func:`score_to_db`), then judge them: :func:`judge`
    with ``paths``. The judge layer (and litellm) is imported only when this is called; the judge
    layer itself never imports this module."""
    return judge(db, models, list(paths), **options)


def aggregate_db(db_path: str | Path, include_errors: bool = False, level: float = DEFAULT_LEVEL) -> dict:
    """The aggregate (with its error bars) of every ScoreCard stored in ``db_path``, opened read-only.

    Raises ``evalkit.db.DbError`` (one line naming the file) when the database cannot be read.
    """
    from evalkit.aggregate.groups import aggregate
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
    from evalkit.engines.pipeline import score_into, score_to_db
    from evalkit.trajectory.scenario_files import load_scenarios

    found = load_scenarios(scenarios) if scenarios is not None else None
    if db is not None:
        return score_to_db(paths, db, warn, scenarios=found)
    errors: list[str] = []
    cards = list(score_into(list(paths), None, lambda exc: errors.append(str(exc)), warn, scenarios=found))
    return cards, errors


def judge(
    db: str | Path,
    models: Iterable[str],
    paths: Iterable[str] | None = None,
    *,
    warn: Warn | None = None,
    allow_self_judging: bool = True,
    pairwise: bool = False,
    **options,
):
    """``evalkit judge``: judge the runs stored in ``db`` (or, with ``paths``, score those files
    into ``db`` first) with each of ``models``; returns the judge layer's ``JudgeResult`` with the
    bad files in ``input_errors``. ``warn`` receives the reader's warnings, one line per bad file
    and, unless ``allow_self_judging``, one per judge model that would judge its own runs.
    ``options`` as :func:`evalkit.judges.api.judge_cards`. With ``pairwise``, pairs of the stored
    runs are judged in both orders instead (``options`` as
    :func:`evalkit.judges.pairwise.ajudge_pairs`: ``baseline`` and ``seed``, or ``pairs_file``) and
    its ``PairwiseResult`` is returned."""
    if pairwise:
        from evalkit.judges.pairwise import judge_pairs

        errors: list = []
        if paths is not None:
            from evalkit.engines.pipeline import score_to_db

            _, errors = score_to_db(list(paths), str(db), warn=warn)
            for error in errors if warn is not None else ():
                warn(str(error))
        result = judge_pairs(models, db=str(db), **options)
        result.input_errors = [str(error) for error in errors]
        return result
    from evalkit.judges.api import judge_cards

    cards, errors = _judged_cards(db, models, paths, warn, allow_self_judging)
    result = judge_cards(cards, models, db=str(db), **options)
    result.input_errors = errors
    return result


def judge_dry_run(
    db: str | Path,
    models: Iterable[str],
    paths: Iterable[str] | None = None,
    *,
    warn: Warn | None = None,
    allow_self_judging: bool = True,
    **options,
):
    """``evalkit judge --dry-run``: what :func:`judge` (with the same arguments) would send,
    sending nothing; returns the judge layer's ``DryRun`` and the bad files (``paths`` are scored
    into ``db`` first, as judging would)."""
    from evalkit.judges.api import dry_run

    cards, errors = _judged_cards(db, models, paths, warn, allow_self_judging)
    return dry_run(cards, models, db=str(db), **options), errors


def _judged_cards(db, models, paths, warn=None, allow_self_judging=True) -> tuple[list, list[str]]:
    """The cards a judge run judges: ``paths`` scored into ``db``, else the stored ones; the bad
    files and the self-judging warnings said through ``warn``."""
    from evalkit.engines.pipeline import score_to_db
    from evalkit.judges.api import stored_cards

    if paths is not None:
        cards, errors = score_to_db(list(paths), str(db), warn=warn)
    else:
        cards, errors = stored_cards(str(db)), []
    if warn is not None:
        for error in errors:
            warn(str(error))
        if not allow_self_judging:
            from evalkit.agreement.self_judging import warning_lines

            for line in warning_lines(models, (c.model for c in cards)):
                warn(line)
    return cards, errors


def judge_batches(
    db: str | Path, models: Iterable[str] | None = None, rubric: str | None = None, config_path: str | None = None
) -> list[dict]:
    """``evalkit judge --batch-status``'s list: the provider batches stored in ``db`` (of these
    judge models and rubric), oldest first; see :func:`evalkit.judges.api.stored_batches`."""
    from evalkit.judges.api import stored_batches

    return stored_batches(str(db), models, rubric, config_path)


def check_resample(resample: float | None, seed: int | None) -> None:
    """ValueError when ``--resample`` is asked for without ``--seed`` (checked before any work)."""
    from evalkit.judges.api import check_resample as check

    check(resample, seed)


def output_modes() -> tuple[str, ...]:
    """``auto`` and the judge's structured-output modes (evalkit.judges.output_modes), in order."""
    from evalkit.judges.output_modes import AUTO, MODES

    return (AUTO, *MODES)


def cache_stats(db: str | Path) -> tuple[list, list]:
    """``evalkit cache stats``: the cached calls per judge model, rubric and status, and the output
    mode remembered per (judge model, api base); the database is opened read-only."""
    from evalkit.judges.store import JudgeStore

    store = JudgeStore(db, readonly=True)
    try:
        return store.stats(), store.output_modes()
    finally:
        store.close()


def cache_clear(db: str | Path, model: str | None = None, rubric: str | None = None) -> int:
    """``evalkit cache clear``: delete the cached calls (of ``model`` and ``rubric`` when given);
    returns how many. Annotations are results and stay."""
    from evalkit.judges.store import JudgeStore

    store = JudgeStore(db)
    try:
        return store.clear(model=model, rubric=rubric)
    finally:
        store.close()


def audit(db: str | Path, **options) -> dict:
    """``evalkit audit``: the agreement audit of ``db`` (docs/audit.md); ``options`` as
    :func:`evalkit.agreement.audit.build_audit_with_pairs` (judge, rubric, by, config, seed, n_resamples, jury)."""
    from evalkit.agreement.audit import build_audit

    return build_audit(db, **options)


def audit_with_pairs(db: str | Path, **options) -> tuple[dict, list[dict]]:
    """:func:`audit` and the compared pairs (``evalkit audit --pairs-out``'s rows)."""
    from evalkit.agreement.audit import build_audit_with_pairs

    return build_audit_with_pairs(db, **options)


def report(db: str | Path, **options) -> dict:
    """``evalkit report``: the report's data (what the HTML and markdown emitters render);
    ``options`` as :func:`evalkit.report.data.build_report`."""
    from evalkit.report.data import build_report

    return build_report(db, **options)


def import_runs(importer, paths: Iterable[str | Path], out_dir: str | Path, *, workers: int | None = None, **options):
    """``evalkit import FORMAT``: convert other tools' files into trajectories in ``out_dir`` with
    ``importer`` (a name, or what :func:`importer_for` returns); ``workers`` processes (default: the
    number of cores); ``options`` as :func:`evalkit.importers.import_files` (db, importer options)."""
    from evalkit.engines import default_workers
    from evalkit.importers import import_files

    return import_files(importer, list(paths), out_dir, workers=workers or default_workers(), **options)


def probe(db: str | Path, models: Iterable[str], **options):
    """``evalkit probe``: counterfactual probes of the judges ``models`` on the runs in ``db``;
    ``options`` as :func:`evalkit.probes.pipeline.run_probes`."""
    from evalkit.probes.pipeline import run_probes

    return run_probes(str(db), models, **options)


def check_probes(probes: Iterable[str] | None = None, fail_if: Iterable[str] = ()) -> list[str]:
    """The probes asked for (every one when None), in the documented order; ValueError naming a bad
    ``fail_if`` condition or an unknown probe (``evalkit probe`` checks both before any work)."""
    from evalkit.probes.pipeline import check_probes as check
    from evalkit.probes.pipeline import parse_gates

    parse_gates(fail_if)
    return check(probes)


def verdicts(paths: Iterable[str], patterns: Iterable[str] = (), **options) -> dict:
    """``evalkit verdicts``: score classification result files; ``options`` as
    :func:`evalkit.verdicts.analysis.score_result_files` (order, threshold)."""
    from evalkit.verdicts.analysis import score_result_files

    return score_result_files(list(paths), list(patterns), **options)


def verdict_order(text: str) -> tuple[str, ...]:
    """``--order A>B>C``: the labels from most to least permissive; ValueError when malformed."""
    from evalkit.verdicts.analysis import parse_order

    return parse_order(text)


def verdict_files(paths: Iterable[str], patterns: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """The result files :func:`verdicts` reads (PATHS, their *.json, the ``patterns``' matches;
    results/*.json when neither is given), and the paths that do not exist."""
    from evalkit.verdicts.analysis import find_files

    return find_files(list(paths), list(patterns))


# --- the other commands -------------------------------------------------------------------------


def check(paths: Iterable[str], scenarios: Iterable[str] = ()):
    """``evalkit check``: every problem of scenario files and runs, nothing scored; see
    :func:`evalkit.engines.checking.check_paths`."""
    from evalkit.engines.checking import check_paths

    return check_paths(paths, scenarios)


def schema(name: str, rubric: str | None = None) -> str:
    """``evalkit schema NAME``: the JSON Schema of a format as text; SchemaError for an unknown
    name or rubric."""
    from evalkit.report.schemas import schema_text

    return schema_text(name, rubric)


def annotations_list(
    db: str | Path, judge: str | None = None, rubric: str | None = None, run: str | None = None
) -> list[dict]:
    """``evalkit annotations list``: the stored judge annotations that are not stale, as plain dicts
    (the database opened read-only); JudgeNotStored for a judge with none."""
    from evalkit.db import open_readonly
    from evalkit.db.annotation_listing import annotation_listing

    with open_readonly(db) as database:
        return annotation_listing(database, judge=judge, rubric=rubric, run=run)


def annotations_import(db: str | Path, file: str | Path, rater: str | None = None, kind: str | None = None):
    """``evalkit annotations import FILE``: ratings into the ``ratings`` table (all or nothing);
    returns what was imported; see :func:`evalkit.agreement.ratings.import_ratings`."""
    from evalkit.agreement.ratings import import_ratings

    return import_ratings(db, file, rater=rater, kind=kind)


def review_export(db: str | Path) -> list:
    """``evalkit review export``: the ratings of the reviews recorded in ``evalkit view`` that the
    audit counts, ordered by run, reviewer and dimension (the database opened read-only)."""
    from evalkit.db import open_readonly
    from evalkit.db.reviews import read_review_ratings

    with open_readonly(db) as database:
        ratings, _ = read_review_ratings(database)
    return ratings


def export_parquet(db: str | Path, directory: str | Path) -> int:
    """``evalkit export parquet``: the database's scorecards and bundles as Parquet in the new
    ``directory``; returns how many scorecards. Check :func:`parquet_problem` first."""
    from evalkit.output.parquet import export_database

    return export_database(db, directory)


def parquet_problem(directory: str | Path) -> str | None:
    """Why Parquet cannot be written into ``directory`` (not new or empty, pyarrow missing), else
    None: ``score --parquet`` and ``export parquet`` say it as a usage error."""
    from evalkit.output.parquet import parquet_problem as directory_problem
    from evalkit.output.parquet import pyarrow_problem

    return directory_problem(directory) or pyarrow_problem()


def otel_problem() -> str | None:
    """Why OTLP events cannot be sent (opentelemetry-proto missing), else None."""
    try:
        import httpx  # noqa: F401 — and evalkit's outbound client
        import opentelemetry.proto  # noqa: F401 — sending needs the protobuf types
    except ImportError:
        return '--endpoint needs opentelemetry-proto: pip install "evalkit[otel]"'
    return None


def export_otel(
    db: str | Path,
    out: str | Path | None = None,
    endpoint: str | None = None,
    *,
    timeout_s: float = 30.0,
    headers: dict[str, str] | None = None,
) -> dict:
    """``evalkit export otel``: the database's ScoreCards and annotations as OpenTelemetry
    evaluation events, written to ``out`` and/or sent to ``endpoint`` with ``headers``, each
    request within ``timeout_s`` (check :func:`otel_problem` first); returns ``{"events", "runs",
    "where"}``. OSError when a request is not delivered."""
    from evalkit.exporters import otel as exporter

    reqs = exporter.read_database(db)
    if out:
        from evalkit.output.atomic import write_text_atomic

        write_text_atomic(out, exporter.dumps(reqs))
    if endpoint:
        exporter.send(reqs, endpoint, timeout_s, headers)
    return {
        "events": sum(len(r["resourceLogs"][0]["scopeLogs"][0]["logRecords"]) for r in reqs),
        "runs": len(reqs),
        "where": " and ".join(str(x) for x in (out, endpoint and exporter.logs_url(endpoint)) if x),
    }


def view_server(
    db: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    reviewer: str | None = None,
    rubric: str | None = None,
    config: str | None = None,
    extra_hosts: Iterable[str] = (),
    token: str | None = None,
):
    """``evalkit view``: the local review server over ``db``, checked and ready to ``run()`` (a
    uvicorn Server whose ``access_token`` is the token every request must carry: ``token``, else
    a random one beyond loopback, else None; evalkit.config.access). ImportError when the view
    extra is missing; ValueError when ``host:port`` cannot be listened on or ``token`` is not
    URL-safe; InputError (RubricError) when the database or the rubric cannot be used, said before
    the server starts."""
    import re

    import uvicorn

    from evalkit.config.access import access_token
    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    if token is not None and not re.fullmatch(r"[A-Za-z0-9._~-]{16,256}", token):
        raise ValueError("--token: 16 to 256 characters among letters, digits and . _ ~ -")
    if problem := _cannot_listen(host, port):
        raise ValueError(f"cannot listen on {host}:{port}: {problem}")
    data = ViewData(db, config=config, rubric=rubric)
    try:
        data.open()
        if rubric:
            data.rubric_for([])
    finally:
        data.close()
    required = access_token(host, token)
    app = create_app(
        data, host=host, port=port, reviewer=reviewer, extra_hosts=tuple(extra_hosts), access_token=required
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    )
    server.access_token = required
    return server


def _cannot_listen(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (in use, not this machine's), else None: said in one
    line before the server starts, instead of in the server's log."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return exc.strerror or str(exc)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


# --- what the commands check and compose --------------------------------------------------------


def gate_failure(result: dict, **limits: float | None) -> str | None:
    """The first quality gate ``result`` (an aggregate, or the report's data) fails, as a one-line
    reason, else None; ``limits``: fail_under, min_pass_rate, min_safe_pass_rate, max_unsafe_rate
    (evalkit.aggregate.gates, the one home of the gates)."""
    from evalkit.aggregate.gates import model_gate_failure

    return model_gate_failure(result, **limits)


def worse_failure(comparison: dict, candidate: str, baseline: str) -> str | None:
    """``compare --fail-if-worse``: why ``candidate`` is significantly worse than ``baseline`` in
    ``comparison`` (:func:`compare`'s result), else None."""
    from evalkit.aggregate.gates import worse_failure as worse

    return worse(comparison, candidate, baseline)


def load_scenarios(files: Iterable[str | Path]):
    """The scenarios of scenario files (docs/scenarios.md) for runs that name theirs; InputError
    naming the file and line when one is bad."""
    from evalkit.trajectory.scenario_files import load_scenarios as load

    return load(files)


def score_inputs(
    paths: Iterable[str],
    *,
    scenario_files: Iterable[str] = (),
    out_path: str | None = None,
    parquet_dir: str | None = None,
    db_path: str | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    warn: Warn | None = None,
) -> tuple[list[str], list[str]]:
    """The checks ``evalkit score`` makes before it opens anything: every path exists, some
    trajectory is found (else ``warn`` hears why each candidate was skipped), no output is an
    input or the database (evalkit.output.paths), the engine and Parquet can run. Returns the
    files found (listed once: scoring takes this list) and the skipped lines, for scoring to say.
    ValueError: a usage problem, one line."""
    import os
    import sys

    from evalkit.engines.sources import Listed, expand, is_url, url_exists
    from evalkit.output.paths import output_clash

    paths = list(paths)
    scenario_files = list(scenario_files)
    try:
        for p in paths:
            if p == "-" and sys.stdin is None:
                raise ValueError("-: standard input is closed (nothing to read trajectories from)")
            if p != "-" and not (url_exists(p) if is_url(p) else Path(p).exists()):
                raise ValueError(f"no such file or directory: {p}")
        skipped: list[str] = []
        found = Listed(expand(paths, skipped.append))
        if not found:
            for line in skipped:  # why nothing was found (when something is, scoring reports them)
                if warn is not None:
                    warn(line)
            raise ValueError("no trajectory files (*.jsonl) found in: " + " ".join(paths))
        local = [p for p in paths if p != "-" and not is_url(p)]
        problem = output_clash(
            [("--out", out_path), ("--parquet", parquet_dir)],
            database=db_path,
            # the files found in directories are listed only when an output exists to be overwritten
            inputs=itertools.chain(scenario_files, expand(local)),
        ) or output_clash(
            # the database against the files named: SQLite writes into no file that is not a
            # database, so searching every directory for it (~1 s per 50,000 files) buys nothing
            [],
            database=db_path,
            writes_database=True,
            inputs=[*scenario_files, *(p for p in local if not os.path.isdir(p))],
        )
    except InputError as exc:
        raise ValueError(str(exc)) from None
    if problem:
        raise ValueError(problem)
    if engine == "local" and ray_address:
        raise ValueError("--ray-address needs --engine ray")
    if engine == "ray":
        from evalkit.engines.ray_engine import ray_problem

        if problem := ray_problem():
            raise ValueError(problem)
    if parquet_dir and (problem := parquet_problem(parquet_dir)):
        raise ValueError(problem)
    return found, skipped


def workers_started(found: list[str], workers: int | None = None, engine: str = "local", parquet: bool = False):
    """A context in which :func:`score_run` over ``found`` with ``workers`` finds its pool's
    processes already started and loading the scorer (``evalkit.engines.local.started_pool``): the
    command enters it once the files are listed, before it opens its outputs. Nothing is started
    for one worker, another engine, or no more files than one process scores alone."""
    import contextlib

    from evalkit.engines import default_workers
    from evalkit.engines.local import POOL_FILES, started_pool

    workers = workers or default_workers()
    if engine != "local" or workers <= 1 or len(found) <= POOL_FILES:
        return contextlib.nullcontext()
    from evalkit.engines.job import preload

    if parquet:  # loaded once, here, for the workers to inherit: each would import it again (≈ 0.25 s)
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    return started_pool(workers, preload)


def score_run(
    found: Iterable[str],
    store: Store | None,
    on_error,
    warn: Warn,
    *,
    job: ScoreJob,
    on_file=None,
    on_output=None,
    on_finding=None,
    skipped: Iterable[str] = (),
    engine: str = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    include_errors: bool = False,
    level: float = DEFAULT_LEVEL,
    parquet_dir: str | None = None,
    aggregates: str | None = "full",
) -> tuple[dict | None, int]:
    """``evalkit score``'s run over the files :func:`score_inputs` found: scored by ``engine``
    (``workers`` processes, default the number of cores), stored in ``store``, aggregated, written
    as Parquet into ``parquet_dir``. ``on_file(n)`` is told the good files of each batch as it is
    done (n ≥ 1), ``on_output(data, count)`` per finished batch of ``job``'s output (``job`` is
    run batched: ``ScoreJob.batched``), ``on_error`` per bad file, ``warn`` per
    warning (the ``skipped`` lines first). Returns the aggregate and the number of good files; on
    any failure the Parquet directory is discarded. ``aggregates``: "full" (every field), "tables"
    (no pass^k bootstrap: what the tables and the gates read) or None (no aggregate: None
    returned). ``on_finding``: with ``job.observe``, each scenario warning once scoring is done
    (evalkit.engines.scenario_check; default ``warn``)."""
    from dataclasses import replace

    from evalkit.aggregate.groups import Aggregator
    from evalkit.engines import default_workers
    from evalkit.engines.pipeline import score_batches

    agg = Aggregator(include_errors, level, warn=warn)
    parquet = None
    try:
        if parquet_dir:
            from evalkit.output.parquet import ParquetWriter

            parquet = ParquetWriter(parquet_dir)
        for line in skipped:  # where scoring would have said them, listing the directories again
            warn(line)
        scored = 0
        for batch in score_batches(
            found,
            store,
            on_error,
            warn,
            job=replace(job, batched=True, partial=aggregates is not None),
            engine=engine,
            workers=workers or default_workers(),
            ray_address=ray_address,
            on_scenario=agg.note,  # per file: a warning comes where it would one by one
            on_finding=on_finding,
        ):
            good = batch.good
            scored += good
            if on_file is not None and good:
                on_file(good)
            pieces = batch.pieces  # the workers' finished pieces
            if pieces is None:
                continue
            if pieces.output is not None:
                if on_output is not None:
                    on_output(pieces.output, pieces.count)
                pieces.output = None  # written: a long run's text is not held through its database write
            if aggregates is not None:  # the scenarios' notes (agg.note) come per file, merged or not
                agg.merge(pieces.partial)
            if parquet is not None:
                parquet.add_many(pieces.parquet)
        if parquet is not None:
            parquet.close()
        return (None if aggregates is None else agg.result(bootstrap=aggregates == "full")), scored
    finally:
        if parquet is not None:
            parquet.discard()


# --- import -------------------------------------------------------------------------------------


def import_formats() -> dict[str, str]:
    """``evalkit import --list``: every importer name and where it comes from (``builtin`` or its
    entry point)."""
    from evalkit import importers

    return importers.available()


def import_options() -> list:
    """The importers' own CLI options, merged (one per flag; :func:`evalkit.importers.options.merge`):
    ``evalkit import`` generates its format flags from them."""
    from evalkit import importers
    from evalkit.importers.options import merge

    return merge(importers.loaded())


def importer_for(
    format_name: str,
    files: Iterable[str] = (),
    options: dict | None = None,
    *,
    db: str | None = None,
    listen: str | None = None,
):
    """The importer of ``format_name``, checked against what ``evalkit import`` was asked: its
    optional dependency present, only options it declares, the ones it requires, ``db`` only for a
    format that records ratings, directories only for a format that expands them, ``listen`` only
    for one that listens and never with files. ValueError: a usage problem, one line."""
    from evalkit import importers

    options = options or {}
    files = list(files)
    try:
        importer = importers.get_importer(format_name)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    require = getattr(importer, "require", None)
    if require is not None:
        try:
            require()
        except Exception as exc:  # the format's optional dependency is missing
            raise ValueError(str(exc)) from None
    accepted = importers.supported_options(importer)
    if accepted is not None:
        for name, value in options.items():
            if value is not None and name not in accepted:
                raise ValueError(f"--{name.replace('_', '-')} is not used by format {format_name}")
    for name in getattr(importer, "required", ()):
        if options.get(name) is None:
            raise ValueError(f"format {format_name} needs --{name.replace('_', '-')}")
    if db is not None and not getattr(importer, "ratings", False):
        raise ValueError(f"--db is not used by format {format_name} (it records no ratings)")
    if not getattr(importer, "expand", None):
        for path in files:
            if Path(path).is_dir():
                raise ValueError(f"{path} is a directory; format {format_name} reads files")
    if listen and (files or not getattr(importer, "listen", None)):
        raise ValueError("--listen takes no FILE" if files else f"--listen is not used by format {format_name}")
    return importer
