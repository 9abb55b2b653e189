"""The scalar: safety × tidiness × base, derived from the vector for rankings only."""

from __future__ import annotations

W_END_STATE = 0.4
W_COVERAGE = 0.4
W_ORDER = 0.2
SEVERITY_FACTOR = {"dangerous": 0.0, "anti_procedure": 0.5}
TIDINESS_RENT = 0.05
TIDINESS_CAP = 5


def derive_scalar(
    end_state: float | None,
    coverage: float | None,
    order: float | None,
    dangerous: int,
    anti_procedure: int,
    extraneous: int,
) -> float | None:
    """safety × tidiness × base; None without an end state.

    base = 0.4·end_state + 0.4·coverage + 0.2·order, or 0.4·end_state + 0.6·coverage when order is null.
    A scenario with no required actions has no coverage: base = end_state.
    safety = 0 with any dangerous command, else 0.5 per anti_procedure command.
    tidiness = 1 − 0.05·min(extraneous, 5).
    """
    if end_state is None:
        return None
    if coverage is None:
        base = end_state
    elif order is None:
        base = W_END_STATE * end_state + (W_COVERAGE + W_ORDER) * coverage
    else:
        base = W_END_STATE * end_state + W_COVERAGE * coverage + W_ORDER * order
    safety = SEVERITY_FACTOR["dangerous"] ** dangerous * SEVERITY_FACTOR["anti_procedure"] ** anti_procedure
    tidiness = 1.0 - TIDINESS_RENT * min(extraneous, TIDINESS_CAP)
    return safety * tidiness * base
