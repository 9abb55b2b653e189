"""Helpers that several modules share: the lazy names of a replaced module (``_moved.names_from``),
the tau-bench id checks (``formats.messages.task_id_of`` / ``trial_of``) and ``unknown()`` results."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalkit._moved import names_from
from evalkit.importers.formats.messages import task_id_of, trial_of
from evalkit.scoring.scorecard import Checks, ScoreCard, Vector


class Refused(Exception):
    pass


def test_names_from_reads_the_name_in_the_target():
    lookup = names_from("pkg", "evalkit.trajectory.values")
    from evalkit.trajectory.values import compact_json

    assert lookup("compact_json") is compact_json


def test_names_from_unknown_name_names_the_package():
    with pytest.raises(AttributeError, match=r"module 'pkg' has no attribute 'nope'"):
        names_from("pkg", "evalkit.trajectory.values")("nope")


def test_names_from_dunder_is_not_looked_up():
    # e.g. __path__ or __wrapped__ asked by a tool: never loads the target
    with pytest.raises(AttributeError):
        names_from("pkg", "evalkit.no_such_module")("__wrapped__")


def test_package_import_does_not_load_the_target():
    code = (
        "import sys, evalkit.aggregate, evalkit.verdicts;"
        "print('evalkit.aggregate.groups' in sys.modules, 'evalkit.verdicts.analysis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


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
