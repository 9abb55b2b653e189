"""A run's status: ``invalid_scenario`` (the harness said so, or its validity gate failed), else
``incomplete`` (no final record or no success evaluation), else ``provider_error`` (the final reason or
a provider_error event), else ``scored``."""

from __future__ import annotations

from evalkit.trajectory.records import Trajectory


def run_status(traj: Trajectory) -> str:
    final = traj.final
    gate = traj.setup.validity_gate if traj.setup else None
    if (final is not None and final.reason == "invalid_scenario") or (gate and gate.get("passed") is False):
        return "invalid_scenario"
    if final is None or final.success_eval is None:
        return "incomplete"
    if final.reason == "provider_error" or traj.has_provider_error():
        return "provider_error"
    return "scored"
