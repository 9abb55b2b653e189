"""A scenario checked against its runs: what the runs did (:class:`Observed`) and every reference of
the scenario they contradict (:func:`findings`). Pure: runs in, findings out.

Strict validation sees a scenario alone; a name or a value that is well-formed but refers to
nothing the runs show needs the runs. Over all runs of one scenario, a finding is:

* a tool of a required, optional, forbidden or gated action, an approval or a per-tool rule that no
  run called, that is on no run's tool surface, while a similar name is called or on the surface
  ("did you mean"); an optional action or a per-tool rule outside ``command_tools`` only when a
  similar command tool exists (a required, forbidden or gated one there is a scenario error);
* an approval tool among the commands that no required or optional action names, while the runs
  call it (each call is then an extraneous command);
* a key of ``keys``, ``compare`` or an approval (its ``args`` and ``result``) that never appears
  in the calls (results) of its tool; where a rule need not fire in a good run (forbidden, optional
  and gated actions, per-tool rules of tools only these name, the default rule) only when a
  similar key appears;
* a value whose JSON type never matches what the runs send for that key (``"true"`` where calls
  send ``true``), for every action, gate and approval, and the values of ``one_of``;
* a required action that none of the calls of its tool matches, naming the keys no call agrees on;
* an approval that no executed call of its tool gives (every gated command is then unapproved),
  with what the results of the calls its arguments match hold under the keys of its ``result``,
  or, when no run calls its tool (one on the surface) while commands fall under the gate, that;
* a success variable the runs' ``success_eval`` never reports, and an operator that is neither a
  known one nor the one the runs report for that variable;
* runs whose tool calls were recorded without their arguments (an importer names them in
  ``final.done_payload.otel``): they match no argument rule.

Forbidden actions nobody took are normal: only a name that cannot match at all is reported.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from evalkit.scoring.args import args_test, result_object, rules_of, when
from evalkit.scoring.status import run_status
from evalkit.trajectory.records import unrecorded_calls
from evalkit.trajectory.values import freeze, match_key, sense

KNOWN_OPS = ("==", "!=", "<", "<=", ">", ">=", "in", "not_in", "contains", "not_contains", "in_reply", "matches")
_OP_SYNONYMS = {"=": "==", "eq": "==", "ne": "!=", "<>": "!=", "=>": ">=", "=<": "<=", "gt": ">", "lt": "<"}
# the comparisons under which the expected value's type must occur among the calls
_TYPED_COMPARE = frozenset({"exact", "casefold", "datetime", "abs_tol", "rel_tol"})
_SAMPLE_CALLS = 200  # calls kept per required tool, to say which key no call agrees on
VALUES_KEPT = 20  # values kept per success variable, to name those the runs' checks compare with
_DEPTH = 3  # dotted paths recorded into nested objects


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


_TYPE_NAMES = {
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    type(None): "null",
    list: "array",
    dict: "object",
}


def _paths(value: Any, into: dict[str, set[str]], prefix: str = "", depth: int = 0) -> None:
    """Each key of ``value`` (and dotted paths into nested objects) -> the JSON types seen there."""
    for key, item in value.items():
        path = prefix + key if type(key) is str else prefix + str(key)
        kind = _TYPE_NAMES.get(type(item)) or json_type(item)  # parsed JSON: the exact types, looked up
        types = into.get(path)
        if types is None:
            into[path] = {kind}
        elif kind not in types:
            types.add(kind)
        if kind == "object" and depth < _DEPTH and isinstance(item, dict) and item:
            _paths(item, into, path + ".", depth + 1)


def _shape(value: dict[str, Any], depth: int = 0) -> tuple:
    """The keys of ``value`` then, per value, its type, or the shape of the nested object
    :func:`_paths` walks into: objects of one shape hold the same paths of the same types."""
    out = [*value]  # a loop rather than a comprehension: this runs for every call with nested arguments
    for item in value.values():
        out.append(_shape(item, depth + 1) if depth < _DEPTH and isinstance(item, dict) and item else type(item))
    return tuple(out)


_WORDS = re.compile(r"[_.\-]+")


def near(name: str, candidates: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The candidate closest to ``name`` (not ``name`` itself) that reads as its misspelling, or None:
    the same name in other case first.

    Names of as many words (``_``, ``.``, ``-``) must differ word by word by a slip, not by a whole
    word: ``git_comit`` is ``git_commit`` misspelt, while ``restore_backup`` is a sibling of
    ``create_backup``, not a typo of it (a tool set often holds both; only one may be called)."""
    pool = sorted({c for c in candidates if c != name})
    folded = name.casefold()
    for guess in pool:  # the commonest slip: the same name in other case (``Update_ATS``)
        if guess.casefold() == folded:
            return guess
    for guess in difflib.get_close_matches(name, pool, n=5, cutoff=cutoff):
        words, other = _WORDS.split(name), _WORDS.split(guess)
        if len(words) != len(other) or all(
            a == b or difflib.SequenceMatcher(None, a, b).ratio() >= cutoff for a, b in zip(words, other)
        ):
            return guess
    return None


def near_key(key: str, keys: Iterable[str]) -> str | None:
    """The argument key of ``keys`` that ``key`` most likely means: a misspelling (:func:`near`), or
    a key whose words hold all of ``key``'s or the reverse (``rx`` for ``rx_id``, ``filePath`` for
    ``path``), the closest such; None when none is."""
    pool = sorted(set(keys) - {key})
    guess = near(key, pool)
    if guess is not None:
        return guess
    mine = _key_words(key)
    related = [k for k in pool if (theirs := _key_words(k)) and mine and (mine <= theirs or theirs <= mine)]
    return max(related, key=lambda k: difflib.SequenceMatcher(None, key, k).ratio(), default=None)


def _key_words(key: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORDS.split(_CAMEL.sub("_", key)) if w)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _mean(near_name: str | None) -> str:
    return f' (did you mean "{near_name}"?)' if near_name else ""


_name = attrgetter("name")
_UNKNOWN = object()  # what the scorer did not decide of a call (see _Classes)
# a near miss counted under ADDED + key: a call that agrees on every key an action names and adds
# ``key``, which the action's mode (exact, within) refuses
ADDED = "\x00"

# final reasons of a run the harness could not finish: no success_eval is expected of it
_HARNESS_FAILED = frozenset({"harness_error", "provider_error"})


@dataclass
class Observed:
    """What the runs of one scenario did, as far as :func:`findings` needs (fed run by run)."""

    scenario: Any  # evalkit.trajectory.scenario.Scenario
    runs: int = 0
    calls: Counter = field(default_factory=Counter)  # tool -> calls
    surface: set[str] = field(default_factory=set)  # tools on any run's tool_surface
    args: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # tool -> key path -> JSON types
    results: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # tool -> result key path -> types
    unevaluated: int = 0  # runs the scorer calls incomplete though their harness finished them
    success_runs: int = 0  # runs with a success_eval
    variables: dict[str, set[Any]] = field(default_factory=dict)  # reported var -> ops
    hit: list[bool] = field(default_factory=list)  # per required action: some call matched it
    # required tool -> the arguments of its first calls, until each of its required actions is matched
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    approved: list[bool] = field(default_factory=list)  # per gate: some executed call was its approval
    # per gate: executed calls of its approval tool whose arguments match, and their results' values
    # of each key the approval's result names (JSON text -> calls)
    asked: list[int] = field(default_factory=list)
    answers: list[dict[str, Counter]] = field(default_factory=list)
    optional_hit: list[bool] = field(default_factory=list)  # per optional action: some executed call matched it
    # per optional action: key -> executed calls of its tool that no action (required, optional,
    # forbidden, gated) matches and that differ from it on that key alone (extraneous near misses,
    # which an optional action with a mistaken argument causes)
    optional_near: list[dict[str, int]] = field(default_factory=list)
    # per forbidden action, the same: matched, and its tool's extraneous near misses by key (a
    # mistaken argument lets the very call it names through)
    forbidden_hit: list[bool] = field(default_factory=list)
    forbidden_near: list[dict[str, int]] = field(default_factory=list)
    # per gate: some executed call was gated by it; key -> executed calls of its tool that no gate
    # takes and that differ from its action on that key alone (a mistaken argument ungates them)
    gated_hit: list[bool] = field(default_factory=list)
    gated_near: list[dict[str, int]] = field(default_factory=list)
    # a scenario success variable -> [runs that report success checks but not it, the first of them]
    left_out: dict[str, list[Any]] = field(default_factory=dict)
    # reported var -> the values its checks compared with (as values.freeze keys them: 60 = 60.0,
    # true != 1) -> that value as JSON text; at most VALUES_KEPT a variable
    values: dict[str, dict[Any, str]] = field(default_factory=dict)
    # per gate: the answers of calls that match its approval's arguments and answer its result
    # written another way ("Approved" for "approved"), as ``"key": value`` text -> calls; they
    # approve nothing, so what they were asked for is unapproved
    spelled: list[dict[str, int]] = field(default_factory=list)
    # runs whose importer found tool calls recorded without their arguments (an OpenTelemetry trace
    # taken with content capture off): [runs, calls, the tools, the first run]
    unrecorded: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        catalog = rules_of(self.scenario)
        fixed = _fixed(self.scenario, catalog)
        self._required = catalog.required
        self.hit = [False] * len(self._required)
        # identical required actions: a call serves one of them, so the k-th is hit by a run that
        # calls it k times
        self._twins, self._twin, self._by_tool = fixed.twins, fixed.twin, fixed.by_tool
        self._matched: set[str] = set()  # tools whose required actions are all matched already
        self._gates = catalog.gates
        self._gates_of = fixed.gates_of
        self._optional = catalog.optional.expects
        self._gate_actions = fixed.gate_actions
        self._forbidden = catalog.forbidden.expects
        self._key_tests = fixed.key_tests  # id of an action -> its per-key tests (_key_tests)
        self._caught_of = fixed.caught_of
        # the shapes (:func:`_shape`) of the calls' arguments and results walked (add_run)
        self._shapes: set[tuple] = set()
        self._result_shapes: set[tuple] = set()
        self._success_vars = fixed.success_vars
        self.values = {}
        self.approved = [False] * len(self._gates)
        self.optional_hit = [False] * len(self._optional)
        self.forbidden_hit = [False] * len(self._forbidden)
        self.gated_hit = [False] * len(self._gates)
        self.restart()

    def restart(self) -> None:
        """Start counting afresh, keeping what is known for good: the tool surface, the argument and
        result paths and their shapes, the success variables' operators and values, which actions
        some call matched (required, optional, forbidden, gated) and which gates some call approved. One
        ``Observed`` notes a scenario's runs batch by batch, each batch's counts its own; what a
        count is kept for (near misses, an approval's answers) is read only of an action no call
        matched (a gate no call approved), and it is counted alike until one does."""
        gates = len(self._gates)
        self.runs = self.unevaluated = self.success_runs = 0
        self.calls = Counter()
        self.samples = {}
        self.left_out = {}
        self.asked = [0] * gates
        self.answers = [{} for _ in range(gates)]
        self.spelled = [{} for _ in range(gates)]
        self.optional_near = [{} for _ in self._optional]
        self.forbidden_near = [{} for _ in self._forbidden]
        self.gated_near = [{} for _ in range(gates)]
        self.unrecorded = [0, 0, set(), None]
        # the (hit, near) of each group of _Fixed.caught_of: optional, forbidden, gated
        self._marks = (
            (self.optional_hit, self.optional_near),
            (self.forbidden_hit, self.forbidden_near),
            (self.gated_hit, self.gated_near),
        )

    def matched_tools(self, hit: list[bool]) -> set[str]:
        """The required tools whose every required action ``hit`` marks as matched by some call."""
        if all(hit):  # the usual case once the runs are many
            return set(self._by_tool)
        return {tool for tool, todo in self._by_tool.items() if all(hit[i] for i in todo)}

    def add_run(self, traj: Any, card: Any = None) -> None:
        """One run (a :class:`~evalkit.trajectory.records.Trajectory`): its ``meta.tool_surface``, its
        tool calls (``name``, ``args``, ``result``), its ``final`` record and the status the scorer
        gives it. ``card``: its ScoreCard, when scored: what the scorer matched each command with
        (:class:`_Classes`) spares matching it again."""
        tool_surface, tool_calls, final = traj.meta.tool_surface, traj.tool_calls(), traj.final
        self.runs += 1
        if tool_surface:
            self.surface.update(tool_surface)
        tool_calls = tool_calls if isinstance(tool_calls, list) else list(tool_calls)
        self.calls.update(map(_name, tool_calls))
        by_tool = self._by_tool
        twin, taken = self._twin, None
        caught, gates_of, shapes, samples = self._caught_of, self._gates_of, self._shapes, self.samples
        result_shapes, marks = self._result_shapes, self._marks
        # what the scorer matched each command with, when the card says it: a command is a call the
        # scorer splits off (classify.split_calls: a command tool's, on the surface, not errored)
        classes = None
        if caught and card is not None and card.matches is not None:
            classes = _Classes(card)
            surface = None if tool_surface is None else frozenset(tool_surface)
            command_tools = self.scenario.index.command_tools
            command = -1  # the index among the commands of the last one
        for call in tool_calls:
            name, args, result, is_error = call.name, call.args, call.result, call.is_error
            pos = None
            if classes is not None and not is_error and name in command_tools and (surface is None or name in surface):
                command += 1
                pos = command
            if is_error is False:
                if name in gates_of:
                    self._ask(call)
                groups = caught.get(name)
                if groups is not None:
                    if pos is None:
                        for g, todo, expects, takers in groups:
                            self._near_misses(call, todo, expects, *marks[g], takers)
                    else:
                        found = classes.of(pos)
                        for g, todo, expects, takers in groups:
                            hit, near = marks[g]
                            first, by = found[g]
                            if first is _UNKNOWN or (first is None and by is not True):
                                self._near_misses(call, todo, expects, hit, near, takers, first, by)
                            elif first is not None:  # what _near_misses would do
                                hit[first] = True
            if not args and result is None and name not in by_tool:  # most reads, as scoring keeps them
                continue
            if args:
                # a call of the keys and value types of one seen before adds no path: its shape (tool,
                # keys, then the values' types) is looked up rather than walked
                shape = (name, *args, *map(type, args.values()))
                if shape not in shapes:
                    if dict in shape:  # nested objects: their keys and types are part of the shape,
                        shape = (name, _shape(args))  # so a flat one holding dict is never added
                    if shape not in shapes:
                        paths = self.args.get(name)
                        if paths is None:
                            paths = self.args[name] = {}
                        _paths(args, paths)
                        shapes.add(shape)
            if result is not None:
                if isinstance(result, str) and result[:1] == "{":
                    result = result_object(result)
                if isinstance(result, dict):
                    # as the arguments above: a result of a shape walked before adds no path
                    shape = (name, *result, *map(type, result.values()))
                    if shape not in result_shapes:
                        if dict in shape:
                            shape = (name, _shape(result))
                        if shape not in result_shapes:
                            _paths(result, self.results.setdefault(name, {}))
                            result_shapes.add(shape)
            todo = by_tool.get(name)
            if todo:
                # nothing left to learn from its calls (nor from its samples, which findings and
                # Noting.seen read only while one of its required actions is unmatched)
                if name in self._matched:
                    continue
                sample = samples.get(name)
                if sample is None:
                    sample = samples[name] = []
                if len(sample) < _SAMPLE_CALLS:
                    sample.append(args)
                key = None
                for i in todo:
                    if i in twin:
                        if i != twin[i] or self.hit[self._twins[i][-1]]:  # the first of its twins counts
                            continue
                    elif self.hit[i]:
                        continue
                    expect = self._required[i]
                    if key is None and expect.key is not None:  # computed once, where an action needs it
                        key = match_key(name, args)
                    if expect.matches(call, key):
                        if i in twin:
                            taken = taken or Counter()
                            taken[i] += 1
                        else:
                            self.hit[i] = True
                if all(self.hit[i] for i in todo):
                    self._matched.add(name)
        if taken:
            for first, n in taken.items():
                for i in self._twins[first][:n]:
                    self.hit[i] = True
        if (
            final is not None
            and final.reason not in _HARNESS_FAILED
            and (card.status if card is not None else run_status(traj)) == "incomplete"
        ):
            # a final record without success_eval, from the user's harness (an importer writes none
            # where its source records no outcome, as docs/importers.md says)
            versions = traj.meta.versions
            if not (isinstance(versions, dict) and "importer" in versions):
                self.unevaluated += 1
        payload = getattr(final, "done_payload", None)
        if type(payload) is dict and "otel" in payload:  # the usual run: no otel payload to read
            n, tools = unrecorded_calls(payload)
            if tools:
                note = self.unrecorded
                note[0] += 1
                note[1] += n or 0
                note[2].update(tools)
                if note[3] is None:
                    note[3] = traj.path
        success = getattr(final, "success_eval", None)
        if success is not None:
            self.success_runs += 1
            if success.final_state and self._success_vars:
                reported = {check.var for check in success.final_state}
                for var in self._success_vars:
                    if var not in reported:
                        entry = self.left_out.get(var)
                        if entry is None:
                            self.left_out[var] = [1, traj.path]
                        else:
                            entry[0] += 1
            for check in success.final_state:
                if check.var is not None:
                    self.variables.setdefault(check.var, set()).add(check.op)
                    values = self.values.setdefault(check.var, {})
                    if len(values) < VALUES_KEPT:
                        key = freeze(check.value)
                        if key not in values:
                            values[key] = _json(check.value)

    def _near_misses(
        self,
        call: Any,
        todo: list[int],
        expects: list[Any],
        hit: list[bool],
        near: list[dict[str, int]],
        takers: tuple,
        first: Any = _UNKNOWN,
        taken: Any = _UNKNOWN,
    ) -> None:
        """An executed call of the tool of the actions ``todo`` (of ``expects``): the first it
        matches is hit; else, when it misses an unmatched action by one key and none of ``takers``
        (lookups, and with them the gates' actions) takes it, it is counted under that key.
        ``first`` (the action it matches first, or None) and ``taken`` (whether one of ``takers``
        takes it), where the scorer found them (:class:`_Classes`)."""
        if all(hit[i] for i in todo):  # nothing left to learn from its calls
            return
        key = None  # the call's match key, computed once where an action needs it
        if first is _UNKNOWN:
            for i in todo:
                expect = expects[i]
                if key is None and expect.key is not None:
                    key = match_key(call.name, call.args)
                if expect.matches(call, key):
                    hit[i] = True
                    return
        elif first is not None:
            hit[first] = True
            return
        if taken is True:
            return
        missed = _one_key_misses(call, todo, expects, hit, self._key_tests)
        if not missed:  # most calls: nothing to count, so the lookups below are not made
            return
        if taken is False:
            for i, differs in missed:
                near[i][differs] = near[i].get(differs, 0) + 1
            return
        if key is None:
            key = match_key(call.name, call.args)
        if any(lookup.first(call, key) is not None for lookup in takers) or (
            takers and any(a.matches(call, key) for a in self._gate_actions)
        ):
            return
        for i, differs in missed:
            near[i][differs] = near[i].get(differs, 0) + 1

    def _ask(self, call: Any) -> None:
        """An executed call of an approval tool: which gates it approves, and for the others whose
        arguments it matches, what its result says under the keys their ``result`` names."""
        for i in self._gates_of[call.name]:
            gate = self._gates[i]
            if gate.approves(call):
                self.approved[i] = True
            elif gate.approval.matches(call) and isinstance(gate.result, dict):
                said = result_object(call.result)
                if (spelt := _spelt(gate.result, said)) is not None:
                    self.spelled[i][spelt] = self.spelled[i].get(spelt, 0) + 1
                if self.approved[i]:
                    continue
                self.asked[i] += 1
                for key in gate.result:
                    value = said.get(key, _ABSENT) if isinstance(said, dict) else _ABSENT
                    self.answers[i].setdefault(key, Counter())[_shown(value)] += 1
            elif not self.approved[i] and gate.approval.matches(call):
                self.asked[i] += 1


_ABSENT = object()


@dataclass(frozen=True, slots=True)
class _Fixed:
    """What an ``Observed`` derives from its scenario alone (never changed after it is made), made
    once per scenario object: a worker notes the runs of a scenario in every batch that holds one,
    and with many scenarios interleaved that is every batch."""

    twins: dict[int, list[int]]  # the first of identical required actions -> all of them
    twin: dict[int, int]  # a required action -> the first of its identical ones
    by_tool: dict[str, list[int]]  # tool -> its required actions
    gates_of: dict[str, list[int]]  # approval tool -> its gates
    gate_actions: list[Any]
    key_tests: dict[int, list]  # id of an action -> its per-key tests, filled as they are needed
    # what catches a call, by tool: (the group: 0 optional, 1 forbidden, 2 gated; the group's
    # actions of the tool, the group's expects, what else takes a call), the groups in that order.
    # Optional and forbidden actions count near misses no other action takes; gates count any
    caught_of: dict[str, list[tuple]]
    success_vars: list[str]  # the variables of the scenario's final_state checks, each once


def _fixed(scenario: Any, catalog: Any) -> _Fixed:
    """The scenario's :class:`_Fixed`, kept in its ``__dict__`` (as ``rules_of`` keeps its rules)."""
    found = scenario.__dict__.get("_observed_fixed")
    if found is not None:
        return found

    def by(items: Iterable[tuple[int, str]]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, tool in items:
            out.setdefault(tool, []).append(i)
        return out

    twinned = {members[0]: members for members in twins(catalog.required)}
    optional_of = by((i, e.tool) for i, e in enumerate(catalog.optional.expects))
    forbidden_of = by((i, e.tool) for i, e in enumerate(catalog.forbidden.expects))
    gated_of = by((i, g.action.tool) for i, g in enumerate(catalog.gates))
    gate_actions = [g.action for g in catalog.gates]
    groups = (
        (optional_of, catalog.optional.expects, (catalog.required_lookup, catalog.forbidden)),
        (forbidden_of, catalog.forbidden.expects, (catalog.required_lookup, catalog.optional)),
        (gated_of, gate_actions, ()),
    )
    caught_of: dict[str, list[tuple]] = {}
    for g, (of, expects, takers) in enumerate(groups):
        for tool, todo in of.items():
            caught_of.setdefault(tool, []).append((g, todo, expects, takers))
    wanted = scenario.success.final_state if scenario.success is not None else []
    found = scenario.__dict__["_observed_fixed"] = _Fixed(
        twins=twinned,
        twin={i: first for first, members in twinned.items() for i in members},
        by_tool=by((i, e.tool) for i, e in enumerate(catalog.required)),
        gates_of=by((i, g.approval.tool) for i, g in enumerate(catalog.gates)),
        gate_actions=gate_actions,
        key_tests={},
        caught_of=caught_of,
        success_vars=list(
            dict.fromkeys(c["var"] for c in wanted if isinstance(c, dict) and isinstance(c.get("var"), str))
        ),
    )
    return found


class _Classes:
    """What the scorer found of a run's commands (its ScoreCard's ``commands``, ``matches`` and
    ``gated_calls``), as :meth:`Observed._near_misses` asks it of a call: per group of
    ``Observed._caught`` (optional, forbidden, gated), the first action of it the call matches
    and whether another action takes the call, each ``_UNKNOWN`` where the scorer did not decide
    it. The commands are the calls the scorer splits off (``classify.split_calls``): of a command
    tool, on the run's tool surface, not errored."""

    __slots__ = ("rows", "owned", "forbidden", "optional", "repeats", "gates")

    def __init__(self, card: Any) -> None:
        matches = card.matches
        self.rows = card.commands
        self.owned = {pos for pos in matches.required if pos is not None}
        self.forbidden = {pos: i for i, rows in enumerate(matches.forbidden) for pos in rows}
        self.optional = {pos: i for i, rows in enumerate(matches.optional) for pos in rows}
        self.repeats = {pos for rows in matches.repeats for pos in rows}
        self.gates = {g.index: g.gate for g in card.gated_calls or ()}

    def of(self, pos: int) -> tuple[tuple[Any, Any], tuple[Any, Any], tuple[Any, Any]]:
        """(first, taken) for command ``pos`` per group: optional, forbidden, gated."""
        gate = self.gates.get(pos)
        if pos in self.owned:  # a required action takes it
            return (_UNKNOWN, True), (_UNKNOWN, True), (gate, False)
        row = self.rows[pos]
        forbidden = self.forbidden.get(pos)
        if forbidden is not None:
            return (_UNKNOWN, True), (forbidden, None), (gate, False)
        if row.subtype == "unapproved":  # its gate takes it
            return (_UNKNOWN, True), (None, True), (gate, False)
        optional = self.optional.get(pos)
        if optional is not None:
            return (optional, None), (None, True), (gate, False)
        # optional by its gate's approval, or extraneous (a repeat of a required action or not)
        taken = gate is not None or pos in self.repeats
        return (None, taken), (None, taken), (gate, False)


def _counted(keys: dict[str, int]) -> str:
    """Keys with how many calls each, the most first: ``"amount" (3), "to" (1)``."""
    return ", ".join(f"{_q(k)} ({n})" for k, n in sorted(keys.items(), key=lambda kn: (-kn[1], kn[0])))


def _one_key_misses(call: Any, todo: list[int], expects: list[Any], hit: list[bool], tests: dict) -> list:
    """``(action, key)`` for each unmatched action of ``todo`` that ``call`` differs from on that
    one key alone (``tests``: each action's per-key tests, made once by :func:`_key_tests`)."""
    args = call.args
    if not isinstance(args, dict):
        return []
    out = []
    for i in todo:
        expect = expects[i]
        if hit[i] or expect.any_args:
            continue
        keyed = tests.get(id(expect))
        if keyed is None:
            keyed = tests[id(expect)] = _key_tests(expect)
        differs = [key for key, agrees in keyed if not agrees(args)]
        if len(differs) == 1:
            out.append((i, differs[0]))
        elif not differs and keyed and expect.rule.mode in ("exact", "within"):
            # it agrees on every key the action names: the keys it adds are what the mode refuses
            named = {key for key, _ in keyed}
            out.extend((i, ADDED + key) for key in args if key not in named)
    return out


def twins(required: list[Any]) -> list[list[int]]:
    """The groups of identical required actions (the same tool, arguments and rule), each as its
    indices in order."""
    groups: dict[tuple, list[int]] = {}
    for i, e in enumerate(required):
        groups.setdefault((e.tool, e.key, _json(e.args), repr(e.rule)), []).append(i)
    return [members for members in groups.values() if len(members) > 1]


def _spelt(expected: dict[str, Any], said: Any) -> str | None:
    """``"key": value`` of each key where ``said`` holds ``expected``'s value written another way
    (case or spacing, a number or boolean as text), when every other key is equal; else None."""
    if not isinstance(said, dict):
        return None
    shown = []
    for key, want in expected.items():
        if key not in said:
            return None
        got = said[key]
        if freeze(got) == freeze(want):
            continue
        if sense(got) != sense(want):
            return None
        shown.append(f'"{key}": {_shown(got)}')
    return "; ".join(shown) or None


def _shown(value: Any) -> str:
    import json

    return "absent" if value is _ABSENT else json.dumps(value, ensure_ascii=False, sort_keys=True)[:60]


@dataclass(frozen=True, slots=True)
class Finding:
    """One reference the runs contradict: ``loc`` is its path in the scenario, ``needle`` the text
    that finds its line (a quoted name or key), ``error`` whether it is an error (else a warning)."""

    loc: tuple[Any, ...]
    message: str
    needle: str | None = None
    error: bool = False


def where(loc: tuple[Any, ...], prefix: str = "scenario") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _q(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def _json(value: Any) -> str:
    # the values success checks compare with are mostly booleans and integers: their text as
    # json.dumps writes it, without its encoder
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def findings(seen: Observed) -> list[Finding]:
    """Every reference of ``seen.scenario`` its runs contradict (see the module docstring), in the
    scenario's order."""
    sc = seen.scenario
    gt = sc.ground_truth
    out: list[Finding] = []
    if seen.runs == 0:
        return out
    n = seen.runs
    runs = f"{n} run{'s' if n != 1 else ''}"
    commands = sc.commands()
    explicit = sc.command_tools is not None
    called = {t for t, c in seen.calls.items() if c}
    known_names = called | seen.surface

    required = [(("ground_truth", "procedure", bi, "actions", ai), a) for bi, ai, a in sc.required()]
    optional = [(("ground_truth", "optional_actions", i), a) for i, a in enumerate(gt.optional_actions)]
    forbidden = [(("ground_truth", "forbidden_actions", i), a) for i, a in enumerate(gt.forbidden_actions)]
    gated = [(("ground_truth", "gated_actions", i), g) for i, g in enumerate(gt.gated_actions)]
    approvals = [((*loc, "approval"), g.approval) for loc, g in gated]
    per_tool = dict((gt.args_match.tools or {}) if gt.args_match is not None else {})
    # tools a good run calls: their rules must find their keys in the calls
    strict_tools = {a.tool for _, a in required if a.tool} | {a.tool for _, a in approvals}

    # -- tool names ------------------------------------------------------------------------------
    def unknown_tool(loc: tuple, tool: str, kind: str) -> bool:
        """A name no run called and no surface holds, while a similar one is: reported."""
        if tool in called or tool in seen.surface:
            return False
        guess = near(tool, known_names)
        if guess is None and kind == "required" and seen.surface:
            out.append(
                Finding(
                    (*loc, "tool"),
                    f'required tool "{tool}" is on no tool surface of the {runs}, so no run could do this action',
                    _q(tool),
                )
            )
            return True
        if guess is None:
            return False
        out.append(
            Finding(
                (*loc, "tool") if kind != "rule" else loc,
                f'{kind} tool "{tool}" is never called in the {runs} and on no tool surface, '
                f'while "{guess}" is{_mean(guess)}',
                _q(tool),
            )
        )
        return True

    # a required or forbidden tool outside a declared command_tools is a scenario error (Scenario)
    for loc, a in required:
        if a.tool is not None:
            unknown_tool(loc, a.tool, "required")
    for loc, a in forbidden:
        if a.tool is not None:
            unknown_tool(loc, a.tool, "forbidden")
    for loc, a in optional:
        if a.tool is None:
            continue
        if explicit and a.tool not in commands and (guess := near(a.tool, commands)):
            out.append(
                Finding(
                    (*loc, "tool"),
                    f'optional tool "{a.tool}" is not in command_tools, while "{guess}" is{_mean(guess)}',
                    _q(a.tool),
                )
            )
            continue
        unknown_tool(loc, a.tool, "optional")
    for loc, g in gated:
        unknown_tool(loc, g.tool, "gated")
    listed = {a.tool for _, a in required + optional if a.tool is not None}
    warned: set[str] = set()
    for loc, ap in approvals:
        if unknown_tool(loc, ap.tool, "approval"):
            continue
        # a command no action names is extraneous: asking first would cost the run that asks
        if ap.tool in commands and ap.tool not in listed and seen.calls.get(ap.tool) and ap.tool not in warned:
            warned.add(ap.tool)
            out.append(
                Finding(
                    (*loc, "tool"),
                    f'approval tool "{ap.tool}" is in command_tools but no required or optional action names it, '
                    f"so each of its {seen.calls[ap.tool]} call(s) in the {runs} counts as extraneous (list it "
                    "as an optional action, or leave it out of command_tools)",
                    _q(ap.tool),
                )
            )
    approval_tools = {ap.tool for _, ap in approvals}
    for tool in per_tool:
        loc = ("ground_truth", "args_match", "tools", tool)
        if tool not in commands and tool not in approval_tools and (guess := near(tool, commands | approval_tools)):
            out.append(
                Finding(
                    loc,
                    f'a rule for "{tool}", which is not a command tool (nor an approval\'s), while "{guess}" '
                    f"is{_mean(guess)}",
                    _q(tool),
                )
            )
            continue
        unknown_tool(loc, tool, "rule")

    # -- calls of tools on no run's tool_surface: off-surface, counted and never scored ----------
    if seen.surface:
        naming: dict[str, tuple] = {}
        for loc, a in required + forbidden + gated + approvals + optional:
            if a.tool is not None:
                naming.setdefault(a.tool, loc)
        for tool in sorted(called - seen.surface):
            guess = near(tool, seen.surface) or next(
                (t for t in sorted(seen.surface) if t.casefold() == tool.casefold()), None
            )
            loc = naming.get(tool) or naming.get(guess)
            if loc is None and guess is None:
                continue  # a tool the agent made up: its calls are off-surface attempts, as they should be
            out.append(
                Finding(
                    (*loc, "tool") if loc is not None else ("id",),
                    f'tool "{tool}" is called {seen.calls[tool]} time(s) in the {runs} but is on no run\'s '
                    f"tool_surface, so its calls are off-surface and never scored{_mean(guess)}",
                    _q(tool if tool in naming else guess) if loc is not None else None,
                )
            )

    # -- keys of rules ---------------------------------------------------------------------------
    def check_keys(loc: tuple, rule: Any, tools: list[str], strict: bool) -> None:
        if rule is None:
            return
        tools = [t for t in tools if seen.calls.get(t)]
        if not tools:
            return
        seen_keys: set[str] = set()
        for t in tools:
            seen_keys.update(seen.args.get(t, {}))
        names = [("keys", k) for k in rule.keys or ()] + [("compare", k) for k in rule.compare or {}]
        for part, key in names:
            if key in seen_keys:
                continue
            guess = near(key, seen_keys, 0.6) or near_key(key, seen_keys)
            if guess is None and not strict:
                continue
            label = f'"{tools[0]}"' if len(tools) == 1 else "any command tool"
            out.append(
                Finding(
                    (*loc, part),
                    f'key "{key}" never appears in the calls of {label} in the {runs}{_mean(guess)}',
                    _q(key),
                )
            )

    for loc, a in required:
        if a.tool is not None:
            check_keys((*loc, "args_match"), a.args_match, [a.tool], True)
    for group, strict in ((optional, False), (forbidden, False), (gated, False), (approvals, True)):
        for loc, a in group:
            if a.tool is not None:
                check_keys((*loc, "args_match"), a.args_match, [a.tool], strict)
    for tool, rule in per_tool.items():
        check_keys(("ground_truth", "args_match", "tools", tool), rule, [tool], tool in strict_tools)
    if gt.args_match is not None:
        check_keys(("ground_truth", "args_match"), gt.args_match, sorted(commands | approval_tools), False)

    # an action's own args keys: a near miss of a key the calls have (a key no call has is normal for
    # a forbidden action: good runs never send it)
    def check_arg_names(loc: tuple, tool: str | None, args: dict | None) -> None:
        if not tool or not args or not seen.calls.get(tool):
            return
        keys = seen.args.get(tool, {})
        for key in args:
            if key not in keys and (guess := near_key(key, keys)):
                out.append(
                    Finding(
                        (*loc, "args", key),
                        f'key "{key}" never appears in the calls of "{tool}" in the {runs}{_mean(guess)}',
                        _q(key),
                    )
                )

    for group in (required, optional, forbidden, gated, approvals):
        for loc, a in group:
            check_arg_names(loc, a.tool, a.args)
    for loc, ap in approvals:  # an approval's result keys
        result = ap.result
        if isinstance(result, dict) and seen.calls.get(ap.tool):
            keys = seen.results.get(ap.tool, {})
            for key, value in result.items():
                if key not in keys:
                    out.append(
                        Finding(
                            (*loc, "result", key),
                            f'key "{key}" never appears in the results of "{ap.tool}" in the {runs}'
                            f"{_mean(near(key, keys, 0.6))}",
                            _q(key),
                        )
                    )
                elif json_type(value) not in keys[key]:
                    out.append(_type_finding((*loc, "result", key), key, value, keys[key], ap.tool, "results"))

    # -- value types -----------------------------------------------------------------------------
    catalog = rules_of(sc)
    expects = (
        list(zip(required, catalog.required))
        + list(zip(optional, catalog.optional.expects))
        + list(zip(forbidden, catalog.forbidden.expects))
        + [((loc, g), gate.action) for (loc, g), gate in zip(gated, catalog.gates)]
        + [((loc, ap), gate.approval) for (loc, ap), gate in zip(approvals, catalog.gates)]
    )
    typed: set[tuple[tuple, str]] = set()  # (an action, a key of it) whose value is of a type no call sends
    for (loc, action), expect in expects:
        if action.tool is None or not action.args:
            continue
        for key, cmp in expect.rule.compare:  # a datetime comparison of a value that names no date
            value = action.args.get(key)
            if cmp.kind == "datetime" and isinstance(value, str) and when(value) is None:
                out.append(
                    Finding(
                        (*loc, "args", key),
                        f'"{key}" is compared as a datetime, but {_json(value)} is no ISO 8601 date or time '
                        '(such as "2026-12-10" or "2026-12-10T14:00:00Z"), so it is compared as written',
                        _q(key),
                    )
                )
        types = seen.args.get(action.tool)
        if not types:
            continue
        compare = dict(expect.rule.compare)
        for key, value in action.args.items():
            cmp = compare.get(key)
            kind = cmp.kind if cmp is not None else "exact"
            if kind not in _TYPED_COMPARE or key not in types:
                continue
            if json_type(value) not in types[key]:
                out.append(_type_finding((*loc, "args", key), key, value, types[key], action.tool, "calls"))
                typed.add((loc, key))

    # -- optional, forbidden and gated actions that no call matches while near misses do ---------
    extraneous = "those that differ from it on one key alone match no other action and count as extraneous"
    missed = (
        (
            optional,
            catalog.optional.expects,
            seen.optional_hit,
            seen.optional_near,
            "matches this optional action",
            extraneous,
        ),
        (
            forbidden,
            catalog.forbidden.expects,
            seen.forbidden_hit,
            seen.forbidden_near,
            "matches this forbidden action",
            extraneous,
        ),
        (
            gated,
            [gate.action for gate in catalog.gates],
            seen.gated_hit,
            seen.gated_near,
            "falls under this gate, so none needed its approval",
            "those that differ from it on one key alone",
        ),
    )
    for group, expects, hits, nears, what, which in missed:
        for ((loc, action), expect), hit, misses in zip(zip(group, expects), hits, nears):
            tool = action.tool or expect.tool
            if hit:
                continue
            added = {k[len(ADDED) :]: n for k, n in misses.items() if k.startswith(ADDED)}
            # a key no call has, or a value of a type no call sends, is said above, where it is written
            misses = {
                k: n
                for k, n in misses.items()
                if not k.startswith(ADDED) and k in seen.args.get(tool, ()) and (loc, k) not in typed
            }
            said = []
            if misses:
                said.append(f"{which}: {_counted(misses)}")
            if added:
                said.append(
                    f"those that agree on every key it names also send {_counted(added)}, which its args_match "
                    f'mode "{expect.rule.mode}" refuses (mode "contains" lets a call send more)'
                )
            if said:
                out.append(
                    Finding(
                        loc,
                        f'none of the {seen.calls[tool]} call(s) of "{tool}" in the {runs} {what}; ' + "; ".join(said),
                        _q(action.tool) if action.tool else None,
                    )
                )

    # -- a block that repeats an earlier one (pasted twice): each of its actions is required again --
    repeated: set[int] = set()
    blocks = [b.model_dump(exclude_unset=True) for b in gt.procedure]
    for j, block in enumerate(blocks):
        i = next((i for i in range(j) if blocks[i] == block), None)
        if i is not None and block.get("actions"):
            repeated.add(j)
            out.append(
                Finding(
                    ("ground_truth", "procedure", j),
                    f"this block is procedure[{i}] again, word for word: each of its actions is required twice, "
                    "so a run that does them once misses the copy (rename the block if twice is meant)",
                    _q(gt.procedure[j].block) if gt.procedure[j].block else None,
                )
            )

    # -- required actions that nothing matches ---------------------------------------------------
    twin_of = {i: members for members in twins(catalog.required) for i in members}
    for k, ((loc, action), expect, hit) in enumerate(zip(required, catalog.required, seen.hit)):
        tool = action.tool or expect.tool
        if hit or not seen.calls.get(tool):
            continue
        members = twin_of.get(k)
        if members and k != members[0] and seen.hit[members[0]]:
            if loc[2] in repeated:  # the repeated block's finding says it
                continue
            nth = members.index(k) + 1
            first = where(required[members[0]][0], "").lstrip(".")
            out.append(
                Finding(
                    loc,
                    f"this action is required {len(members)} times (the first is {first}), but no run calls it "
                    f"{nth} times: a call serves one required action",
                    _q(action.tool) if action.tool else None,
                )
            )
            continue
        culprits = _disagreeing_keys(expect, seen.samples.get(tool, []))
        why = f"; no call agrees on {', '.join(_q(k) for k in culprits)}" if culprits else ""
        out.append(
            Finding(
                loc,
                f'none of the {seen.calls[tool]} call(s) of "{tool}" in the {runs} matches this required action{why}',
                _q(action.tool) if action.tool else None,
            )
        )

    # -- approvals that no call gives ------------------------------------------------------------
    for i, ((loc, ap), gate) in enumerate(zip(approvals, catalog.gates)):
        if seen.approved[i]:
            continue
        if any(f.loc[: len(loc)] == loc for f in out):  # a finding above already names why
            continue
        if not seen.calls.get(ap.tool):
            # a tool on the surface that no run calls: the commands under the gate are all unapproved
            if seen.gated_hit[i]:
                guess = near(ap.tool, called)
                out.append(
                    Finding(
                        (*loc, "tool"),
                        f'approval tool "{ap.tool}" is never called in the {runs}, while commands fall under '
                        f"this gate, so every one of them is unapproved{_mean(guess)}",
                        _q(ap.tool),
                    )
                )
            continue
        if not seen.asked[i]:
            why = "no executed call's arguments match it"
        else:
            said = []
            for key, values in seen.answers[i].items():
                top = ", ".join(f"{v} ({c})" for v, c in sorted(values.items(), key=lambda vc: (-vc[1], vc[0]))[:3])
                said.append(f"{_q(key)}: {top}")
            why = f"no result of the {seen.asked[i]} that match its arguments holds {_json(gate.result)}" + (
                f"; they hold {'; '.join(said)}" if said else ""
            )
        out.append(
            Finding(
                loc,
                f'none of the {seen.calls[ap.tool]} call(s) of "{ap.tool}" in the {runs} is this approval, so every '
                f"gated command is unapproved: {why}",
                _q(ap.tool),
            )
        )

    # -- approvals some calls answer in another spelling -----------------------------------------
    for i, ((loc, ap), gate) in enumerate(zip(approvals, catalog.gates)):
        spelled = seen.spelled[i] if i < len(seen.spelled) else {}
        if not spelled or not seen.approved[i]:  # none approved: the warning above names the answers
            continue
        n = sum(spelled.values())
        said = ", ".join(f"{text} ({c})" for text, c in sorted(spelled.items(), key=lambda tc: (-tc[1], tc[0])))
        out.append(
            Finding(
                (*loc, "result"),
                f'{n} call(s) of "{ap.tool}" in the {runs} that match this approval\'s arguments answer {said}: '
                f"{_json(gate.result)} written another way, and a result is compared as written, so they approve "
                "nothing and the commands they were asked for count as unapproved",
                _q(next(iter(gate.result))),
            )
        )

    # -- success checks --------------------------------------------------------------------------
    if seen.unevaluated:  # a run is scored only when its harness evaluated the checks
        unevaluated = seen.unevaluated
        if unevaluated == seen.runs:
            said = f"none of the {runs} reports final.success_eval"
        else:
            said = f"{unevaluated} of the {runs} {'end' if unevaluated > 1 else 'ends'} without final.success_eval"
        out.append(
            Finding(
                ("success",) if sc.success is not None else ("id",),
                f"{said}, so {'they are' if unevaluated > 1 else 'it is'} incomplete (no end state, no scalar): "
                "the harness writes the results of the success checks there (docs/trajectory-format.md)",
            )
        )
    if sc.success is not None and seen.success_runs:
        reported = seen.variables
        for i, check in enumerate(sc.success.final_state):
            loc = ("success", "final_state", i)
            var, op = check.get("var"), check.get("op")
            if isinstance(var, str) and var not in reported:
                out.append(
                    Finding(
                        (*loc, "var"),
                        f'variable "{var}" is never reported by the success_eval of the {runs}'
                        f"{_mean(near(var, reported, 0.6))}",
                        _q(var),
                    )
                )
                continue
            if isinstance(var, str) and var in seen.left_out:
                n, first = seen.left_out[var]
                out.append(
                    Finding(
                        (*loc, "var"),
                        f"{n} of the {runs} {'report' if n > 1 else 'reports'} success checks, but not this one "
                        f"(the first: {first}): the end state is the share of the checks reported, so a check the "
                        "harness left out cannot fail",
                        _q(var),
                    )
                )
            values = seen.values.get(var)
            if values and "value" in check and freeze(check["value"]) not in values:
                said = ", ".join(sorted(values.values())[:3]) + (" ..." if len(values) > 3 else "")
                out.append(
                    Finding(
                        (*loc, "value"),
                        f'value {_json(check["value"])} is not one the runs\' checks of "{var}" compare with '
                        f"({said}): the end state is what the harness checked",
                        _json(check["value"]),
                    )
                )
            if op is None:
                continue
            theirs = reported.get(var, set()) - {None}
            if op in theirs or (op in KNOWN_OPS and not theirs):
                continue
            if theirs:
                said = ", ".join(_q(str(o)) for o in sorted(map(str, theirs)))
                message = f'operator {_q(str(op))} is not the one the runs report for "{var}" ({said})'
            else:
                guess = _OP_SYNONYMS.get(str(op)) or near(str(op), KNOWN_OPS, 0.5)
                message = f"unknown operator {_q(str(op))}{_mean(guess)} (one of {', '.join(KNOWN_OPS)})"
            out.append(Finding((*loc, "op"), message, _q(str(op))))
    runs_n, calls_n, tools, first = seen.unrecorded
    if runs_n:
        out.append(
            Finding(
                (),
                f"{runs_n} of the {runs} hold {calls_n} tool call(s) recorded without their arguments "
                f"({', '.join(sorted(tools))}; the first: {first}): they are scored as calls with no arguments, so "
                "no argument rule matches them and their coverage and safety say nothing of what the agent sent "
                "(traces recorded with content capture off: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
            )
        )
    return out


# The comparisons args_match.compare takes as {kind: parameter}: an expected value of that shape in
# ``args`` is most likely a rule put in the wrong place.
_RULE_KINDS = ("regex", "fullmatch", "substring", "nonempty", "has_items", "one_of", "abs_tol", "rel_tol")


def _type_finding(loc: tuple, key: str, value: Any, types: set[str], tool: str, what: str) -> Finding:
    import json

    sent = " or ".join(sorted(types))
    kind = json_type(value)
    hint = ""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _RULE_KINDS:
        rule = json.dumps({key: value}, ensure_ascii=False)
        hint = f'; a rule goes in args_match.compare, not in args: "args_match": {{"compare": {rule}}}'
    return Finding(
        loc,
        f"{json.dumps(value, ensure_ascii=False)} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, but the {what} "
        f'of "{tool}" hold "{key}" only as {sent}, so it never matches{hint}',
        _q(key),
    )


def _disagreeing_keys(expect: Any, samples: list[dict[str, Any]]) -> list[str]:
    """The keys of an action on which no sampled call agrees, each compared alone."""
    if not samples:
        return []
    return [key for key, agrees in _key_tests(expect) if not any(agrees(actual) for actual in samples)]


def _key_tests(expect: Any) -> list[tuple[str, Any]]:
    """Each key of an action with the test of a call's arguments on that key alone (none under
    ``mode: ignore``)."""
    rule = expect.rule
    if rule.mode == "ignore":
        return []
    names = list(rule.keys) if rule.keys is not None else sorted(set(expect.args) | {k for k, _ in rule.compare})
    return [(key, args_test(replace(rule, keys=(key,)), expect.args)) for key in names]
