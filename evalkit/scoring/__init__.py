"""The pure scorer: a Trajectory in, a ScoreCard out. No I/O, no clock, no randomness.

One module per step, so the folder reads as what a score is made of (``score_trajectory`` in
``scorer.py`` composes them in this order):

* ``classify``   — split the tool calls into commands, reads, errored and off-surface calls; give
  each command its class (matched_required, forbidden, optional, extraneous).
* ``match``      — assign required actions to commands (coverage).
* ``args``       — argument rules (modes, keys, comparisons) and the scenario's resolved catalog.
* ``approvals``  — which earlier call approved each gated command.
* ``order``      — the share of applicable order constraints satisfied.
* ``end_state``  — the share of success checks passed.
* ``efficiency`` — commands per reference step, graded 0–3.
* ``checks``     — the five mechanical checks (docs/glossary.md).
* ``scalar``     — safety × tidiness × base, for rankings only.
* ``status``     — scored / provider_error / invalid_scenario / incomplete.

The rules are those of the A320 procedure-compliance design note and its scorer issue
(docs/glossary.md), stated precisely in each module's docstring.
"""

from __future__ import annotations

import importlib

# Looked up lazily, so that importing ``evalkit.scoring.scorecard`` (the judge layer and the data
# layer do) does not load the scorer.
_WHERE = {
    "call_key": "classify",
    "EFFICIENCY_BANDS": "efficiency",
    "efficiency_grade": "efficiency",
    "SEVERITY_FACTOR": "scalar",
    "TIDINESS_CAP": "scalar",
    "TIDINESS_RENT": "scalar",
    "W_COVERAGE": "scalar",
    "W_END_STATE": "scalar",
    "W_ORDER": "scalar",
    "derive_scalar": "scalar",
    "score_trajectory": "scorer",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evalkit.scoring' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evalkit.scoring.{module}"), name)
