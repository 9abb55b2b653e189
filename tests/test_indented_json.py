"""indented_json writes what json.dumps(value, ensure_ascii=False, indent=2) writes, byte for byte:
`evalkit score --format json --aggregate` prints the aggregate with it."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from evalkit.present.score_output import indented_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TEXTS = ["", "a", "é", "ü\u2028x", "\x00\x1f", '"q\\', "😀", "\ud800", "a,\n  b", "]", "}", '"k": 1', "\t"]


class F(float):
    def __repr__(self) -> str:
        return "not this"


class I(int):  # noqa: E742
    def __repr__(self) -> str:
        return "not this"


def _scalar(rng: random.Random):
    return rng.choice(
        [
            0.0,
            -0.0,
            1e300,
            5e-324,
            math.inf,
            -math.inf,
            math.nan,
            0.1,
            1 / 3,
            rng.random(),
            1e16,
            0,
            -1,
            10**30,
            True,
            False,
            None,
            F(2.5),
            I(7),
            rng.choice(TEXTS) + str(rng.randint(0, 9)),
        ]
    )


def _key(rng: random.Random):
    if rng.random() < 0.8:
        return rng.choice(TEXTS) + str(rng.randint(0, 99))
    return rng.choice([1, 2.5, -0.0, True, False, None, -3, math.inf, math.nan, 10**20, F(1.5), I(3)])


def _value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        return _scalar(rng)
    if r < 0.7:
        items = [_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 2, 5]))]
        return items if rng.random() < 0.8 else tuple(items)
    if r < 0.8:  # a curve of repeated floats, zeros of both signs among them
        return [rng.choice([0.5, 1 / 3, 0.0, -0.0, math.nan]) for _ in range(rng.randint(1, 6))]
    return {_key(rng): _value(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 6]))}


@pytest.mark.parametrize("seed", range(4))
def test_same_text_as_json_dumps(seed):
    rng = random.Random(seed)
    for _ in range(2000):
        value = _value(rng)
        assert indented_json(value) == json.dumps(value, ensure_ascii=False, indent=2), repr(value)


def test_same_text_for_an_aggregate():
    from evalkit.engines.pipeline import score_files

    scoring = score_files([EXAMPLES], output=None, aggregate="full")
    scoring.collect()
    assert scoring.aggregate["groups"]
    assert indented_json(scoring.aggregate) == json.dumps(scoring.aggregate, ensure_ascii=False, indent=2)


def test_what_json_refuses_is_refused():
    for value in ({(1, 2): 0}, {"a": object()}, [b"x"]):
        with pytest.raises(TypeError):
            json.dumps(value, ensure_ascii=False, indent=2)
        with pytest.raises(TypeError):
            indented_json(value)
