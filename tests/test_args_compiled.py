"""``args_test`` (an action's rule worked out once) answers as ``args_match`` does, for any rule,
expected and actual arguments: modes, keys, dotted paths, every comparison, odd values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.scoring.args import Compare, Rule, args_match, args_test

NAMES = ["a", "b", "c", "a.b", "a.c"]
scalars = st.sampled_from(
    [0, 1, 1.0, 2.5, 10**20, 1e20, True, False, None, "x", "X ", "", "  ", "tp 201", math.nan, math.inf]
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["b", "c"]), inner, max_size=2),
    max_leaves=4,
)
arguments = st.dictionaries(st.sampled_from(NAMES), values, max_size=4)
compares = st.sampled_from(
    [
        Compare("exact"),
        Compare("casefold"),
        Compare("ignore"),
        Compare("nonempty"),
        Compare.of({"regex": "(?i)tp ?201"}),
        Compare.of({"fullmatch": "x"}),
        Compare.of({"substring": "x"}),
        Compare.of({"has_items": [1, "x"]}),
        Compare.of({"one_of": [1, "x", None]}),
        Compare.of({"abs_tol": 1.5}),
        Compare.of({"rel_tol": 0.1}),
    ]
)
rules = st.builds(
    lambda mode, keys, compare: Rule(mode if keys is None else "exact", keys, tuple(sorted(compare.items()))),
    st.sampled_from(["exact", "contains", "within", "ignore"]),
    st.none() | st.lists(st.sampled_from(NAMES), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(NAMES), compares, max_size=3),
)


@st.composite
def edited(draw, expected: dict) -> dict:
    """``expected`` with a few keys set to other values or left out: a call that nearly matches."""
    actual = dict(expected)
    for name, value in draw(st.lists(st.tuples(st.sampled_from(NAMES), st.none() | values), max_size=2)):
        if value is None:
            actual.pop(name, None)
        else:
            actual[name] = value
    return actual


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(rules, arguments, st.data())
def test_args_test_answers_as_args_match(rule, expected, data):
    for actual in (expected, data.draw(edited(expected)), data.draw(arguments)):
        assert args_test(rule, expected)(actual) == args_match(rule, expected, actual)


def _rule(mode="exact", keys=None, **compare) -> Rule:
    return Rule(mode, keys, tuple(sorted((k, Compare.of(v)) for k, v in compare.items())))


CASES = [
    (_rule(), {"a": 1}, {"a": 1.0}, True),
    (_rule(), {"a": 1}, {"a": True}, False),
    (_rule(), {"a": True}, {"a": 1}, False),
    (_rule(), {"a": 10**20}, {"a": 1e20}, True),
    (_rule(), {"a": math.nan}, {"a": math.nan}, False),
    (_rule(), {"a": None}, {"a": None}, True),
    (_rule(), {"a": None}, {}, False),
    (_rule(), {"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]}, True),
    (_rule(), {"a": 1}, {"a": 1, "b": None}, False),
    (_rule(), {"a": {"b": 1}}, {"a": {"b": 1}, "a.b": 1.0}, True),  # a key of the call found by path
    (_rule(), {"a": {"b": 1}}, {"a": {"b": 1}, "a.b": 2}, False),
    (_rule(b="ignore"), {"a": 1}, {"a": 1, "b": 2}, True),
    (_rule(b="casefold"), {"a": 1}, {"a": 1}, True),
    (_rule(b="casefold"), {"a": 1}, {"a": 1, "b": "x"}, False),
    (_rule(a="casefold"), {"a": " X  y"}, {"a": "x Y"}, True),
    (_rule(a={"abs_tol": 1.5}), {"a": 1}, {"a": 2.5}, True),
    (_rule(a={"abs_tol": 1.5}), {"a": 1}, {"a": 2.6}, False),
    (_rule(a={"abs_tol": 1.5}), {"a": 1}, {"a": True}, False),
    (_rule(a={"abs_tol": 1.5}), {"a": 1}, {"a": math.inf}, False),
    (_rule(a={"abs_tol": 1.5}), {"a": "1"}, {"a": "1"}, True),
    (_rule(a={"rel_tol": 0.1}), {"a": 100}, {"a": 109.0}, True),
    (_rule(a={"regex": "(?i)tp ?201"}), {}, {"a": "Your TP 201"}, True),
    (_rule(a={"regex": "(?i)tp ?201"}), {}, {"a": 201}, False),
    (_rule(a={"regex": "x"}), {}, {}, False),
    (_rule("contains"), {"a": 1}, {"a": 1, "b": 2}, True),
    (_rule("contains", b="nonempty"), {"a": 1}, {"a": 1}, False),
    (_rule("contains", b="casefold"), {"a": 1}, {"a": 1, "b": "x"}, True),
    (_rule("within"), {"a": 1, "b": 2}, {"a": 1.0}, True),
    (_rule("within"), {"a": 1}, {"c": 1}, False),
    (_rule("ignore"), {"a": 1}, {"b": 2}, True),
    (_rule(keys=("a.b",)), {"a": {"b": 1}}, {"a": {"b": 1.0, "c": 3}}, True),
    (_rule(keys=("a.b",)), {}, {"a": {"c": 3}}, True),
    (_rule(keys=("a.b",)), {}, {"a": {"b": None}}, False),
    (_rule(keys=("a",)), {"a": 1}, {"a": 1, "b": 2}, True),
]


def test_args_test_on_the_edges():
    for rule, expected, actual, answer in CASES:
        assert args_match(rule, expected, actual) is answer, (rule, expected, actual)
        assert args_test(rule, expected)(actual) is answer, (rule, expected, actual)
