"""The procedure-compliance design note's verified ordering, pinned exactly: 1.00 > 0.90 > 0.55 > 0.00."""

import pytest
from scoring_helpers import score_records

from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory

SC = a320_scenario()
FULL = [
    read(),
    cmd("apu_gen", 0),
    cmd("apu_gen", 1),
    read(),
    cmd("apu_gen", 0),
    cmd("ext_pwr", 1),
    cmd("apu_master", 0),
]
ISOLATION_SKIPPED = [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("ext_pwr", 1)]
ONLY_EXT_PWR = [cmd("ext_pwr", 1)]


def _score(calls, passed=True):
    return score_records(trajectory(SC, calls, run_id="r", passed=passed))


def test_full_procedure_scores_one():
    card = _score(FULL)
    assert card.scalar == pytest.approx(1.0, abs=1e-12)
    assert card.vector.coverage == 1.0 and card.vector.order == 1.0 and card.vector.end_state == 1.0


def test_isolation_step_skipped_scores_point_nine():
    card = _score(ISOLATION_SKIPPED)
    assert card.vector.coverage == 0.75
    assert card.vector.order == 1.0  # the skipped action's constraints are not applicable
    assert card.scalar == pytest.approx(0.90, abs=1e-12)


def test_only_ext_pwr_scores_point_five_five():
    card = _score(ONLY_EXT_PWR)
    assert card.vector.coverage == 0.25
    assert card.vector.order is None  # one matched action: no applicable constraint, no vacuous 1.0
    assert card.scalar == pytest.approx(0.55, abs=1e-12)


def test_nothing_scores_zero():
    card = _score([read()], passed=False)
    assert card.vector.coverage == 0.0 and card.vector.end_state == 0.0
    assert card.scalar == 0.0


def test_seed_ordering_is_strict():
    scores = [
        _score(FULL).scalar,
        _score(ISOLATION_SKIPPED).scalar,
        _score(ONLY_EXT_PWR).scalar,
        _score([], passed=False).scalar,
    ]
    assert scores[0] > scores[1] > scores[2] > scores[3]
    assert [round(s, 2) for s in scores] == [1.0, 0.9, 0.55, 0.0]
