"""Argument rules: when a call's arguments match an action's ``args``. Pure.

A rule has a **selection** and per-key **comparisons** (docs/scenarios.md):

* selection, one of: ``mode`` ``exact`` (the same keys, every value equal; the default of a
  required action), ``contains`` (every expected key present and equal, extra keys allowed; the
  default of an optional, forbidden or gated action and of an approval), ``within`` (every key of the call is
  an expected key and equal, expected keys may be missing), ``ignore`` (the tool name alone); or
  ``keys``: compare only these keys (dotted paths walk into objects), a key absent on both sides is
  equal, absent on one side is a mismatch.
* ``compare``, per key: ``exact`` (values equal as evalkit compares values: 1 == 1.0, true != 1),
  ``casefold`` (strings equal after Unicode casefolding and NFKC normalization with whitespace
  collapsed), ``ignore`` (the
  key is left out), and tests of the call's value alone, which need the key in the call:
  ``nonempty`` (not null, "", [] or {}; a string of spaces is empty), ``{"regex": p}`` (a string
  in which RE2 pattern ``p`` matches somewhere), ``{"fullmatch": p}`` (a string ``p`` matches
  whole), ``{"substring": s}`` (a string holding ``s``), ``{"has_items": [...]}`` (a list holding
  each of these values), ``{"one_of": [...]}`` (equal to one of these); for numbers
  ``{"abs_tol": x}`` and ``{"rel_tol": x}`` (two finite numbers within the tolerance; anything else
  compares exactly). A key with a test counts as expected (``exact`` and ``contains`` compare it
  even when ``args`` lacks it). Patterns are RE2's: matching is linear in the text, whatever the
  pattern.

Precedence: the action's ``args_match``, then the ground truth's rule for the tool
(``args_match.tools``), then its default (``args_match``): the most specific level that sets a
selection gives it; comparisons merge key by key, the most specific winning.

:class:`Catalog` holds a scenario's actions resolved into :class:`Expect` objects (what matching,
classification and the gates use when the scenario is not ``index.plain``).
"""

from __future__ import annotations

import datetime
import json
import math
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evalkit.trajectory.scenario import compile_pattern
from evalkit.trajectory.values import SET_CONTROL, freeze, match_key

_MISSING = object()
_VALUE_TESTS = frozenset({"nonempty", "regex", "fullmatch", "substring", "has_items", "one_of"})


@dataclass(frozen=True, slots=True)
class Compare:
    """One key's comparison: ``kind`` (exact, casefold, datetime, ignore, nonempty, regex, fullmatch,
    substring, has_items, one_of, abs_tol, rel_tol) and its parameter (a compiled RE2 pattern, a
    string, frozen values, a tolerance)."""

    kind: str
    param: Any = None

    @classmethod
    def of(cls, raw: Any) -> Compare:
        if isinstance(raw, str):
            return cls(raw)
        ((kind, param),) = raw.items()
        if kind in ("regex", "fullmatch"):
            return cls(kind, compile_pattern(param))
        if kind == "substring":
            return cls(kind, param)
        if kind in ("one_of", "has_items"):
            return cls(kind, tuple(freeze(v) for v in param))
        return cls(kind, float(param))

    @property
    def tests_value(self) -> bool:
        return self.kind in _VALUE_TESTS

    def test(self, expected: Any = None) -> Callable[[Any], bool]:
        """This comparison of the call's value with ``expected`` as a function of the call's value,
        what ``expected`` alone decides worked out once (a test of the value alone ignores it)."""
        kind, param = self.kind, self.param
        if kind == "nonempty":
            return _nonempty
        if kind in ("regex", "fullmatch"):
            find = param.search if kind == "regex" else param.fullmatch

            def matched(actual: Any) -> bool:
                return isinstance(actual, str) and find(_utf8(actual)) is not None

            return matched
        if kind == "substring":
            return lambda actual: isinstance(actual, str) and param in actual
        if kind == "one_of":

            def listed(actual: Any) -> bool:
                frozen = freeze(actual)
                return any(frozen == v for v in param)

            return listed
        if kind == "has_items":

            def holds_items(actual: Any) -> bool:
                if not isinstance(actual, list):
                    return False
                items = {freeze(v) for v in actual}
                return all(v in items for v in param)

            return holds_items
        equal = _equals(freeze(expected))
        if kind == "datetime" and isinstance(expected, str) and (moment := when(expected)) is not None:
            return lambda actual: (isinstance(actual, str) and when(actual) == moment) or equal(actual)
        if kind == "casefold" and isinstance(expected, str):
            folded = fold(expected)
            return lambda actual: fold(actual) == folded if isinstance(actual, str) else equal(actual)
        if kind in ("abs_tol", "rel_tol") and _number(expected):
            if kind == "abs_tol":

                def within_abs(actual: Any) -> bool:
                    if type(actual) in (int, float) and math.isfinite(actual):
                        return abs(actual - expected) <= param
                    return equal(actual)

                return within_abs

            def within_rel(actual: Any) -> bool:
                if type(actual) in (int, float) and math.isfinite(actual):
                    return math.isclose(actual, expected, rel_tol=param, abs_tol=0.0)
                return equal(actual)

            return within_rel
        return equal  # exact, and casefold or a tolerance where ``expected`` is no string or number


EXACT = Compare("exact")


def when(text: str) -> tuple[str, Any] | None:
    """What an ISO 8601 date or date-time names, for the ``datetime`` comparison: a moment (a time
    with an offset, in UTC), a local time (without one: it equals only the same local time) or a
    date; None for text that is none of these."""
    text = text.strip()
    try:
        return ("date", datetime.date.fromisoformat(text))
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return ("local", moment)
    return ("moment", moment.astimezone(datetime.UTC))


def _utf8(text: str) -> bytes:
    # RE2 reads UTF-8; a lone surrogate (valid in a JSON string) passes through as bytes no
    # character of a pattern matches, rather than failing the encoding
    return text.encode("utf-8", "surrogatepass")


def fold(text: str) -> str:
    """Whitespace collapsed, then Unicode caseless matching under compatibility normalization
    (NFKC before and after casefolding): "Café" composed or decomposed, "Ｂ２２" and "b22" fold alike."""
    text = " ".join(text.split())
    if text.isascii():
        return text.casefold()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _nonempty(actual: Any) -> bool:
    """Not null, "", [] or {}; a string of spaces is empty."""
    return actual is not None and actual != [] and actual != {} and not (isinstance(actual, str) and not actual.strip())


# the types of parsed JSON whose canonical form (``freeze``) equals the value as Python compares it;
# a non-finite float compares unequal either way (bool is apart: ``True == 1`` holds in Python)
_PLAIN_TYPES = frozenset({str, int, float, type(None)})


def _equals(frozen: Any) -> Callable[[Any], bool]:
    """``freeze(actual) == frozen``, as a function of ``actual``."""

    def test(actual: Any) -> bool:
        return actual == frozen if type(actual) in _PLAIN_TYPES else freeze(actual) == frozen

    return test


@dataclass(frozen=True, slots=True)
class Rule:
    """A resolved argument rule (see the module docstring)."""

    mode: str = "exact"
    keys: tuple[str, ...] | None = None
    compare: tuple[tuple[str, Compare], ...] = ()

    @property
    def plain(self) -> bool:
        """Exact on every key: matching by the canonical key alone gives the same answer."""
        return self.mode == "exact" and self.keys is None and all(c.kind == "exact" for _, c in self.compare)


PLAIN = Rule()


def resolve(levels: Iterable[Any], selection: str = "exact") -> Rule:
    """The rule of ``levels`` (``ArgsRule`` models or None), most specific first; ``selection`` is the
    mode when no level sets ``mode`` or ``keys``."""
    mode: str | None = None
    keys: tuple[str, ...] | None = None
    selected = False
    compare: dict[str, Compare] = {}
    for level in levels:
        if level is None:
            continue
        if not selected and (level.mode is not None or level.keys is not None):
            selected = True
            mode = level.mode
            keys = tuple(level.keys) if level.keys is not None else None
        for key, raw in (level.compare or {}).items():
            compare.setdefault(key, Compare.of(raw))
    return Rule(mode or selection, keys, tuple(sorted(compare.items())))


def _get(args: Any, path: str) -> Any:
    """The value at ``path`` (a key, or a dotted path into objects), or ``_MISSING``."""
    if not isinstance(args, dict):
        return _MISSING
    if path in args:
        return args[path]
    value: Any = args
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _always(actual: Any) -> bool:
    return True


def _never(actual: Any) -> bool:
    return False


_NO_KEYS: dict[str, Any] = {}


def args_test(rule: Rule, expected: dict[str, Any]) -> Callable[[Any], bool]:
    """Whether a call's arguments match an action's ``expected`` ones under ``rule``, as a function
    of the call's arguments (a value that is no object has no keys): the keys to compare, each key's
    expected value and comparison are worked out once, per action rather than per call."""
    mode = rule.mode
    if mode == "ignore":
        return _always
    compare = dict(rule.compare)
    extra_keys_allowed = mode == "contains" and rule.keys is None

    def check_of(name: str) -> Callable[[Any], bool] | None:
        """The comparison of key ``name`` as a function of the call's value; None where the call
        must not hold the key (absent from ``expected`` and compared)."""
        cmp = compare.get(name, EXACT)
        if cmp.kind == "ignore":
            return _always
        if cmp.tests_value:
            return cmp.test()
        e = _get(expected, name)
        if e is not _MISSING:
            return cmp.test(e)
        return _always if extra_keys_allowed else None

    def extra_key_ok(name: str, a: Any) -> bool:
        """A key of the call that ``rule`` names nowhere: equal to the expected value at its path."""
        e = _get(expected, name)
        return e is not _MISSING and freeze(a) == freeze(e)

    if mode == "within" and rule.keys is None:  # the keys compared are the call's own
        checks = {name: check_of(name) or _never for name in sorted(set(expected) | set(compare))}

        def within(actual: Any) -> bool:
            if type(actual) is not dict:
                return True
            for name, a in actual.items():
                check = checks.get(name)
                if check is None:
                    if not extra_key_ok(name, a):
                        return False
                elif not check(a):
                    return False
            return True

        return within
    if rule.keys is not None:
        names: Iterable[str] = rule.keys
    elif mode == "exact":
        names = sorted(set(expected) | set(compare))
    else:  # contains
        names = sorted(set(expected) | {k for k, c in compare.items() if c.tests_value})
    # per compared key: (key, a dotted path, test); a key missing from the call fails any test
    plan: list[tuple[str, bool, Callable[[Any], bool] | None]] = []
    for name in names:
        check = check_of(name)
        if check is not _always:
            plan.append((name, "." in name, check))
    # exact: a key of the call that is none of these is compared with ``expected`` as well
    known = frozenset(names) if mode == "exact" and rule.keys is None else None

    def test(actual: Any) -> bool:
        if type(actual) is not dict:
            actual = _NO_KEYS
        get = actual.get
        for name, dotted, check in plan:
            a = _get(actual, name) if dotted else get(name, _MISSING)
            if a is _MISSING:
                if check is not None:
                    return False
            elif check is None or not check(a):
                return False
        if known is not None:
            for name, a in actual.items():
                if name not in known and not extra_key_ok(name, a):
                    return False
        return True

    return test


def result_object(actual: Any) -> Any:
    """A call's result as an approval's ``result`` rule reads it: a result recorded as JSON text
    (chat transcripts) is the value it holds, text that is no JSON stays as it is (so does text
    nested too deep for Python's decoder: a run's bytes never stop the scorer)."""
    if isinstance(actual, str):
        try:
            return json.loads(actual)
        except (ValueError, RecursionError):
            return actual
    return actual


def result_contains(expected: Any, actual: Any) -> bool:
    """An approval's ``result`` rule: every expected key present with an equal value (``contains``),
    in the result as :func:`result_object` reads it."""
    if isinstance(expected, dict):
        actual = result_object(actual)
        return isinstance(actual, dict) and all(
            k in actual and freeze(actual[k]) == freeze(v) for k, v in expected.items()
        )
    return freeze(actual) == freeze(expected)


class Expect:
    """One action as matching sees it: a call matches when its canonical key equals ``key`` (a
    cockpit action, or a plain rule), or its tool is ``tool`` and ``any_args`` (a wildcard) or its
    arguments match ``args`` under ``rule``."""

    __slots__ = ("tool", "key", "args", "rule", "any_args", "args_ok")

    def __init__(self, action: Any, rule: Rule, wildcard_ok: bool):
        cockpit = action.tool is None
        self.tool = SET_CONTROL if cockpit else action.tool
        self.any_args = wildcard_ok and not cockpit and action.args is None
        self.args = action.args or {}
        self.rule = rule
        self.key = action.key if cockpit or (rule.plain and not self.any_args) else None
        # a call's arguments -> whether they match under this action's rule
        self.args_ok = _always if self.any_args else args_test(rule, self.args)

    def matches(self, call: Any, key: tuple | None = None) -> bool:
        """Whether ``call`` is this action; ``key``: the call's match key, computed here when it is
        None and this action is compared by key (a key's first part is always the call's tool)."""
        if self.key is not None:
            if call.name != self.key[0]:
                return False
            return (key if key is not None else match_key(call.name, call.args)) == self.key
        if call.name != self.tool:
            return False
        return self.args_ok(call.args)


class Lookup:
    """Actions in listing order; ``first(call, key)`` is the index of the first one a call matches."""

    __slots__ = ("expects", "_by_key", "_by_tool", "tools")

    def __init__(self, expects: list[Expect]):
        self.expects = expects
        self._by_key: dict[tuple, int] = {}
        # tool -> (index, its arguments test) of the actions of that tool not compared by key
        self._by_tool: dict[str, list[tuple[int, Callable[[Any], bool]]]] = {}
        for i, e in enumerate(expects):
            if e.key is not None:
                self._by_key.setdefault(e.key, i)
            else:
                self._by_tool.setdefault(e.tool, []).append((i, e.args_ok))
        # the tools of its actions (a match key's first part is its tool): a call of any other
        # tool matches none, so ``first`` need not be asked
        self.tools = frozenset(self._by_tool) | {key[0] for key in self._by_key}

    def first(self, call: Any, key: tuple | None) -> int | None:
        best = self._by_key.get(key) if key is not None else None
        tests = self._by_tool.get(call.name)
        if tests is None:
            return best
        args = call.args
        for i, args_ok in tests:
            if best is not None and i > best:
                break
            if args_ok(args):
                return i
        return best


@dataclass(frozen=True, slots=True)
class Gate:
    """A gated action: calls ``action`` matches need an earlier call ``approval`` matches whose
    result contains ``result`` (when given)."""

    index: int
    action: Expect
    approval: Expect
    result: Any
    has_result: bool
    severity: str
    per_call: bool

    def approves(self, call: Any) -> bool:
        if not self.approval.matches(call):
            return False
        return not self.has_result or result_contains(self.result, getattr(call, "result", None))


@dataclass(frozen=True, slots=True)
class Catalog:
    """A scenario's actions resolved under their argument rules."""

    required: list[Expect]
    optional: Lookup
    forbidden: Lookup
    severities: list[str]
    required_lookup: Lookup
    gates: list[Gate]
    required_tools: frozenset[str]  # tools a required action names: their other calls are extraneous
    # the tools of the actions compared by match key (no argument rule of their own): a call of any
    # other tool is matched by its tool and arguments alone, and its key is never computed
    key_tools: frozenset[str]

    @classmethod
    def of(cls, scenario: Any) -> Catalog:
        gt = scenario.ground_truth
        default = gt.args_match
        tools = (default.tools or {}) if default is not None else {}

        def expect(action: Any, required: bool = False) -> Expect:
            # a required action says what the call is; any other action's args name what makes a
            # call that action (a call with more arguments is still it): ``contains`` unless set
            selection = "exact" if required else "contains"
            levels = [action.args_match, tools.get(action.tool), default]
            rule = resolve(levels, selection) if action.tool is not None else PLAIN
            return Expect(action, rule, wildcard_ok=not required)

        required = [expect(a, required=True) for _, _, a in scenario.required()]
        gates = [
            Gate(
                i,
                expect(g),
                expect(g.approval),
                g.approval.result,
                "result" in g.approval.model_fields_set,
                g.severity,
                g.per_call,
            )
            for i, g in enumerate(gt.gated_actions)
        ]
        optional = [expect(a) for a in gt.optional_actions]
        forbidden = [expect(a) for a in gt.forbidden_actions]
        keyed = [*required, *optional, *forbidden, *(e for g in gates for e in (g.action, g.approval))]
        return cls(
            required=required,
            optional=Lookup(optional),
            forbidden=Lookup(forbidden),
            severities=[a.severity or "dangerous" for a in gt.forbidden_actions],
            required_lookup=Lookup(required),
            gates=gates,
            required_tools=frozenset(e.tool for e in required),
            key_tools=frozenset(e.key[0] for e in keyed if e.key is not None),
        )


def rules_of(scenario: Any) -> Catalog:
    """The scenario's argument rules and gates resolved for matching, built once per scenario
    object (kept in its ``__dict__``, beside its fields); only scenarios that are not
    ``index.plain`` need them."""
    found = scenario.__dict__.get("_rules")
    if found is None:
        found = scenario.__dict__["_rules"] = Catalog.of(scenario)
    return found
