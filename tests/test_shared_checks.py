"""Helpers that several modules share: the tau-bench id checks (``formats.messages.task_id_of`` / ``trial_of``) and ``unknown()`` results."""

from __future__ import annotations

import pytest

from evalkit.importers.formats.messages import task_id_of, trial_of
from evalkit.scoring.scorecard import Checks, ScoreCard, Vector


class Refused(Exception):
    pass


@pytest.mark.parametrize("value, expected", [("t-1", "t-1"), (7, "7"), (0, "0")])
def test_task_id_of_accepts_strings_and_integers(value, expected):
    assert task_id_of(value, Refused) == expected


@pytest.mark.parametrize("value", [None, "", True, 1.5, ["a"]])
def test_task_id_of_refuses_the_rest(value):
    with pytest.raises(Refused, match="task_id must be a non-empty string or an integer"):
        task_id_of(value, Refused)


@pytest.mark.parametrize("value", [None, False, "1", 1.0])
def test_trial_of_refuses_what_is_not_an_integer(value):
    with pytest.raises(Refused, match="trial must be an integer"):
        trial_of(value, Refused)


def test_trial_of_keeps_an_integer():
    assert trial_of(3, Refused) == 3


def test_unknown_is_every_field_null():
    assert set(Vector.unknown().model_dump().values()) == {None}
    assert Checks.unknown() == Checks(**dict.fromkeys(Checks.model_fields))


def test_unknown_refused_by_a_model_with_required_values():
    with pytest.raises(ValueError):
        ScoreCard.unknown()
