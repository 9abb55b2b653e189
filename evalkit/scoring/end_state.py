"""End state = passed checks / all checks of success_eval (final_state + ecam_clear_of); with no checks
it is 1.0 when all_passed else 0.0. No final record or no success_eval: None (and all_passed None)."""

from __future__ import annotations

from evalkit.trajectory.records import Final


def end_state(final: Final | None) -> tuple[float | None, bool | None]:
    """(end_state, all_passed)."""
    success = final.success_eval if final is not None else None
    if success is None:
        return None, None
    checks = [c.passed for c in success.final_state] + [c.clear for c in success.ecam_clear_of]
    value = sum(checks) / len(checks) if checks else float(success.all_passed)
    return value, success.all_passed
