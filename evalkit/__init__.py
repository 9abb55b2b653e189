"""evalkit: deterministic scoring of agent trajectories, an optional LLM judge, and agreement audits.

The package face holds the names a user needs::

    import evalkit

    cards, errors = evalkit.score(["examples/"], db="evalkit.db")
    audit = evalkit.audit("evalkit.db")

``aggregate`` and ``report`` are not here: ``evalkit.aggregate`` and ``evalkit.report`` are the
folders of those steps (their functions: ``evalkit.api.aggregate``, ``evalkit.api.report``).

Each name is imported from the module that defines it the first time it is used: every
``import evalkit.x`` runs this file, and `evalkit score`'s parent process must not load pydantic,
numpy or the judge for names it never uses. ``__all__`` is the table below's keys. The rest of the
Python surface (the building blocks each command is made of) is :mod:`evalkit.api`.

The pipeline, one folder a step (docs/architecture.md)::

    trajectory/ → scoring/ → aggregate/ → engines/ → db/ → judges/ → probes/ → agreement/
                → present/ → report/ → commands/   (beside them: importers/, output/, config/, verdicts/)
"""

from importlib import import_module

__version__ = "0.1.0"

# name -> the module that defines it
_FACE = {
    # one function per command
    "score": "evalkit.api",
    "judge": "evalkit.api",
    "audit": "evalkit.api",
    "compare": "evalkit.api",
    "plan": "evalkit.api",
    "check": "evalkit.api",
    "import_runs": "evalkit.api",
    "probe": "evalkit.api",
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
