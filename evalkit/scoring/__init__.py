"""The pure scorer: a Trajectory in, a ScoreCard out. No I/O, no clock, no randomness.

One module per step, so the folder reads as what a score is made of (``score_trajectory`` in
``scorer.py`` composes them in this order):

* ``classify``   — split the tool calls into commands, reads, errored and off-surface calls; give
  each command its class (matched_required, forbidden, optional, extraneous).
* ``match``      — assign required actions to commands (coverage).
* ``order``      — the share of applicable order constraints satisfied.
* ``end_state``  — the share of success checks passed.
* ``efficiency`` — commands per reference step, graded 0–3.
* ``checks``     — the five mechanical checks (docs/glossary.md).
* ``scalar``     — safety × tidiness × base, for rankings only.
* ``status``     — scored / provider_error / invalid_scenario / incomplete.

The rules are those of the A320 procedure-compliance design note and its scorer issue
(docs/glossary.md), stated precisely in each module's docstring.
"""
from evalkit.scoring.classify import call_key
from evalkit.scoring.efficiency import EFFICIENCY_BANDS, efficiency_grade
from evalkit.scoring.scalar import SEVERITY_FACTOR, TIDINESS_CAP, TIDINESS_RENT, W_COVERAGE, W_END_STATE, W_ORDER, derive_scalar
from evalkit.scoring.scorer import score_trajectory

__all__ = [
    "EFFICIENCY_BANDS", "SEVERITY_FACTOR", "TIDINESS_CAP", "TIDINESS_RENT", "W_COVERAGE", "W_END_STATE",
    "W_ORDER", "call_key", "derive_scalar", "efficiency_grade", "score_trajectory",
]
