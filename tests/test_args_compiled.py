"""``args_test`` (an action's rule compiled once into a test of a call's arguments) answers as a
small reference written here from docs/scenarios.md does, for any rule, expected and actual
arguments: every mode, keys, dotted paths, every comparison, odd values (NaN, -0.0, 1 / 1.0 / True,
nested objects and lists, unicode, None, missing keys) and arguments that are no object."""

from __future__ import annotations

import math
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.scoring.args import Compare, Rule, args_test

NAMES = ["a", "b", "c", "a.b", "a.c", "ключ"]
scalars = st.sampled_from(
    [0, 1, 1.0, -0.0, 2.5, 10**20, 1e20, True, False, None, "x", "X ", "", "  ", "tp 201", "TP201", "Straße"]
    + ["STRASSE", "\ud800", math.nan, math.inf, "Caf\u00e9", "cafe\u0301", "\uff38"]
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["b", "c"]), inner, max_size=2),
    max_leaves=4,
)
arguments = st.dictionaries(st.sampled_from(NAMES), values, max_size=4)
RAW_COMPARES = [
    "exact",
    "casefold",
    "ignore",
    "nonempty",
    {"regex": "(?i)tp ?201"},
    {"fullmatch": "x"},
    {"substring": "x"},
    {"has_items": [1, "x"]},
    {"one_of": [1, "x", None]},
    {"abs_tol": 1.5},
    {"rel_tol": 0.1},
]
# a rule as a scenario writes it: (mode, keys, {key: comparison})
specs = st.tuples(
    st.sampled_from(["exact", "contains", "within", "ignore"]),
    st.none() | st.lists(st.sampled_from(NAMES), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(NAMES), st.sampled_from(RAW_COMPARES), max_size=3),
)


def compiled(spec) -> Rule:
    mode, keys, compare = spec
    return Rule(mode, keys, tuple(sorted((k, Compare.of(raw)) for k, raw in compare.items())))


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


# --- the reference: the rules as docs/scenarios.md states them, nothing shared with evalkit -------

MISSING = object()
TESTS = {"regex", "fullmatch", "substring", "has_items", "one_of"}  # and nonempty: tests of the value alone


def same(a, b) -> bool:
    """Values equal as evalkit compares them: 1 == 1.0, 0 == -0.0, true is no number, NaN and
    infinities equal to nothing, objects whatever their key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isfinite(a) and math.isfinite(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def finite_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def holds(raw, e, a) -> bool:
    """One key's comparison of the call's value ``a`` with the expected ``e``."""
    kind, param = (raw, None) if isinstance(raw, str) else next(iter(raw.items()))
    if kind == "casefold" and isinstance(e, str) and isinstance(a, str):

        def fold(text: str) -> str:  # Unicode's compatibility caseless match, spaces collapsed
            return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", " ".join(text.split())).casefold())

        return fold(e) == fold(a)
    if kind == "nonempty":
        return a not in (None, [], {}) and not (isinstance(a, str) and a.strip() == "")
    if kind in ("regex", "fullmatch", "substring"):
        if not isinstance(a, str):
            return False
        if kind == "substring":
            return param in a
        return (re.search if kind == "regex" else re.fullmatch)(param, a) is not None
    if kind == "one_of":
        return any(same(a, v) for v in param)
    if kind == "has_items":
        return isinstance(a, list) and all(any(same(x, v) for x in a) for v in param)
    if kind in ("abs_tol", "rel_tol") and finite_number(e) and finite_number(a):
        return abs(a - e) <= param if kind == "abs_tol" else abs(a - e) <= param * max(abs(a), abs(e))
    return same(a, e)


def at(args, path):
    if not isinstance(args, dict):
        return MISSING
    if path in args:
        return args[path]
    for part in path.split("."):
        if not isinstance(args, dict) or part not in args:
            return MISSING
        args = args[part]
    return args


def reference(spec, expected: dict, actual) -> bool:
    """Whether a call's arguments ``actual`` match ``expected`` under the rule ``spec``; arguments
    that are no object have no keys."""
    mode, keys, raw = spec
    if mode == "ignore":
        return True
    value_tests = {k for k, r in raw.items() if r == "nonempty" or (isinstance(r, dict) and next(iter(r)) in TESTS)}
    call_keys = list(actual) if isinstance(actual, dict) else []
    if keys is not None:
        names = set(keys)
    elif mode == "exact":
        names = set(expected) | set(call_keys) | set(raw)
    elif mode == "contains":
        names = set(expected) | value_tests
    else:  # within
        names = set(call_keys)
    for name in names:
        r = raw.get(name, "exact")
        if r == "ignore":
            continue
        e, a = at(expected, name), at(actual, name)
        if name in value_tests:
            if a is MISSING or not holds(r, e, a):
                return False
        elif e is MISSING and a is MISSING:
            continue
        elif e is MISSING:
            if not (mode == "contains" and keys is None):
                return False
        elif a is MISSING or not holds(r, e, a):
            return False
    return True


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(specs, arguments, st.data())
def test_args_test_answers_as_the_reference(spec, expected, data):
    test = args_test(compiled(spec), expected)
    # the expected arguments, a near miss, any arguments, and any value (mostly no object)
    for actual in (expected, data.draw(edited(expected)), data.draw(arguments), data.draw(values)):
        assert test(actual) is reference(spec, expected, actual), actual


def _rule(mode="exact", keys=None, **compare):
    return (mode, keys, compare)


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
    (_rule(), {"a": -0.0}, {"a": 0}, True),
    (_rule(a={"one_of": [1]}), {}, {"a": -0.0 + 1}, True),
    (_rule(a={"has_items": [True]}), {}, {"a": [1, 1.0]}, False),
    (_rule(a="casefold"), {"a": "STRASSE"}, {"a": "straße"}, True),
    (_rule(a="casefold"), {"a": "Caf\u00e9"}, {"a": "cafe\u0301"}, True),  # composed and decomposed
    (_rule(a="casefold"), {"a": "B22"}, {"a": "\uff42\uff12\uff12"}, True),  # full-width
    (_rule(a="casefold"), {"a": "Cafe"}, {"a": "Caf\u00e9"}, False),
    (_rule(), {"a": "Caf\u00e9"}, {"a": "Cafe\u0301"}, False),  # exact stays exact
    (_rule("contains", a={"substring": "\ud800"}), {}, {"a": "x\ud800"}, True),
    (_rule(), {"a": None}, None, False),  # arguments that are no object have no keys
    (_rule(), {}, [], True),
    (_rule("contains"), {}, "x", True),
    (_rule("within"), {"a": 1}, ["a"], True),
    (_rule(keys=("a",)), {}, 5, True),
]


def test_args_test_on_the_edges():
    for rule, expected, actual, answer in CASES:
        assert reference(rule, expected, actual) is answer, (rule, expected, actual)
        assert args_test(compiled(rule), expected)(actual) is answer, (rule, expected, actual)
