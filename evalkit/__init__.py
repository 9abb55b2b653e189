"""evalkit: deterministic scoring of agent trajectories, an optional LLM judge, and agreement audits.

The package face holds the names a user needs, each the function or class of the module that
defines it::

    import evalkit

    with evalkit.Store("evalkit.db") as store:
        scoring = evalkit.score_files(["examples/"], store=store, aggregate="full")
        cards, errors = scoring.collect()
    print(scoring.aggregate["models"])
    audit = evalkit.build_audit("evalkit.db")

Each name is imported from its module the first time it is used: every ``import evalkit.x`` runs
this file, and `evalkit score`'s parent process must not load pydantic, numpy or the judge for
names it never uses. ``__all__`` is the table below's keys. The folders are the pipeline
(docs/architecture.md).
"""

from importlib import import_module

__version__ = "0.1.0"

# name -> the module that defines it
_FACE = {
    # the steps, one function each: score, aggregate and compare, judge, audit, report, import, probe, check
    "score_files": "evalkit.engines.pipeline",
    "load_scenarios": "evalkit.trajectory.scenario_files",
    "Aggregator": "evalkit.aggregate.groups",
    "compare_models": "evalkit.aggregate.uncertainty.paired",
    "judge_db": "evalkit.judges.api",
    "build_audit": "evalkit.agreement.audit",
    "build_report": "evalkit.report.data",
    "import_files": "evalkit.importers",
    "run_probes": "evalkit.probes.pipeline",
    "check_paths": "evalkit.engines.checking",
    # the pure scorer, its input and output, the store and the error every bad input raises
    "read_trajectory": "evalkit.trajectory.reader",
    "score_trajectory": "evalkit.scoring.scorer",
    "ScoreCard": "evalkit.scoring.scorecard",
    "Store": "evalkit.db.scores",
    "InputError": "evalkit.errors",
}
__all__ = sorted(_FACE)


def __getattr__(name: str):
    if name not in _FACE:
        raise AttributeError(f"module 'evalkit' has no attribute {name!r}")
    found = getattr(import_module(_FACE[name]), name)
    globals()[name] = found
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACE})
