"""How the report reads a run's REAL and count cells, odd ones included (evalkit.report.data)."""

from __future__ import annotations

import math

import pytest

from evalkit.report.data import _count, _real


class Int(int):
    pass


class Float(float):
    pass


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        (0.25, 0.25),
        (-0.0, -0.0),
        (1e308, 1e308),
        (3, 3.0),
        (Int(2), 2.0),
        (Float(0.5), 0.5),
        (float("nan"), None),
        (float("inf"), None),
        (-float("inf"), None),
        (Float("nan"), None),
        (True, None),
        (None, None),
        ("0.5", None),
        (b"0.5", None),
    ],
)
def test_real(cell, expected):
    got = _real(cell)
    assert got == expected and type(got) is type(expected)
    if expected is not None:
        assert math.copysign(1, got) == math.copysign(1, expected)


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        (3, 3),
        (0, 0),
        (-2, 0),
        (2**70, 2**70),
        (Int(4), 4),
        (True, 0),
        (False, 0),
        (1.0, 0),
        (None, 0),
        ("3", 0),
        (b"3", 0),
    ],
)
def test_count(cell, expected):
    got = _count(cell)
    assert got == expected and isinstance(got, int) and not isinstance(got, bool)
