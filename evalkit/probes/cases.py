"""Probe cases: a scored run and a probe in, the counterfactual bundle the judge will see out.

Pure (no I/O, clock or randomness beyond the seeded sample). For every case the transformed
trajectory is scored again with the pure scorer and its mechanical result — vector, checks,
scalar — compared with the original run's: a case whose score moved is refused
(:class:`ScoreMoved`), so a probe can never measure anything but the judge.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from evalkit.probes.config import ProbesConfig
from evalkit.probes.transforms import NotApplicable, dress_bundle, transform
from evalkit.scoring import score_trajectory
from evalkit.scoring.scorecard import ScoreCard
from evalkit.trajectory.bundle import build_bundle, bundle_hash
from evalkit.trajectory.records import Trajectory


class ScoreMoved(NotApplicable):
    """The transform changed the mechanical result (a bug in a transform; the case is refused)."""


@dataclass(frozen=True)
class ProbeCase:
    probe: str
    run_id: str  # the original run
    bundle: dict[str, Any]  # the counterfactual judge bundle
    bundle_hash: str


def mechanical(card: Any) -> dict[str, Any]:
    """What a probe must leave unchanged: the vector, the five checks and the scalar."""
    return {
        "vector": card.vector.model_dump(mode="json"),
        "checks": card.checks.model_dump(mode="json"),
        "scalar": card.scalar,
    }


def failed_mechanically(card: Any) -> bool:
    return card.vector.all_passed is False


def check_source(traj: Trajectory, card: Any) -> None:
    """The trajectory is the run that was scored: its bundle has the stored bundle hash."""
    if bundle_hash(build_bundle(traj)) != card.bundle_hash:
        raise NotApplicable(f"{traj.path} is not the file that was scored (its judge bundle differs)")


def build_case(probe: str, traj: Trajectory, card: ScoreCard, cfg: ProbesConfig) -> ProbeCase:
    """The counterfactual of ``card``'s run under ``probe``; NotApplicable (or ScoreMoved) when
    there is none. ``false_claim`` applies only to runs that failed mechanically."""
    if probe == "false_claim" and not failed_mechanically(card):
        raise NotApplicable("the run passed mechanically (false_claim probes failed runs only)")
    new = score_trajectory(transform(probe, traj, cfg))
    if mechanical(new) != mechanical(card):
        raise ScoreMoved("the transform changed the mechanical score: not probed (a bug in the transform)")
    bundle = dress_bundle(probe, new.judge_bundle, cfg)
    return ProbeCase(probe=probe, run_id=card.run_id, bundle=bundle, bundle_hash=bundle_hash(bundle))


def sample_runs(run_ids: list[str], n: int | None, seed: int) -> list[str]:
    """``n`` of the run ids, drawn with ``random.Random(seed)`` over the sorted ids (all when
    ``n`` is None or at least their number), returned sorted."""
    pool = sorted(set(run_ids))
    if n is None or n >= len(pool):
        return pool
    return sorted(random.Random(seed).sample(pool, n))
