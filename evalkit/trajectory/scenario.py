"""The scenario a run is scored against: ground truth, success criteria, budget (docs/scenarios.md).

A ground-truth action is either the cockpit form ``{control, value}`` (a ``set_control`` call whose
arguments carry that control and value, always compared exactly) or the general form ``{tool,
args}`` (a call of ``tool`` whose arguments match ``args`` under the argument rules: ``args_match``
on the action, else the ground truth's rule for the tool, else its default; exact by default).
An optional, forbidden or gated action with a ``tool`` and no ``args`` matches any call of the tool.
Numbers compare by value. What feeds the score is strictly typed (no coercion).

The ground truth, success criteria, actions and argument rules are **strict**: an unknown key is an
error naming it, with the closest known key as a suggestion; keys that start with ``x_`` are the
user's and are kept. So is a rule that cannot hold or can never match (an action both required and
forbidden with the same arguments, a regex that RE2 does not compile, an empty ``one_of``, an
approval ``result`` that is not an object, a non-finite number, a comparison its own rule never
reaches, a required, forbidden or gated tool outside a declared ``command_tools``). The scenario's
own top level stays open (``task_prompt``, a harness's own fields).

Regular expressions are RE2's (``google-re2``): matching takes time linear in the text, whatever
the pattern, so no rule can keep the scorer busy (no backreferences or lookaround).
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator, model_validator
from pydantic_core import PydanticCustomError, to_json

from evalkit.trajectory.values import SET_CONTROL, canonical_json, control_key, count_non_finite, match_key, sha256_hex

TASK_PROMPT_FIELDS = ("task_prompt", "prompt", "task", "instruction", "instructions", "briefing", "description")
ARGS_MODES = ("exact", "contains", "within", "ignore")
COMPARE_WORDS = ("exact", "casefold", "datetime", "ignore", "nonempty")
COMPARE_FORMS = ("regex", "fullmatch", "substring", "has_items", "one_of", "abs_tol", "rel_tol")
_COMPARE_HELP = f"one of {', '.join(COMPARE_WORDS)}, or an object with one key: {', '.join(COMPARE_FORMS)}"
USER_PREFIX = "x_"
# Words other harnesses use for a key evalkit spells differently (agentevals, tau2, OpenAI specs).
_SYNONYMS = {
    "arguments": "args",
    "params": "args",
    "parameters": "args",
    "kwargs": "args",
    "name": "tool",
    "function": "tool",
    "compare_args": "keys",
    "tool_args_match_mode": "mode",
    "tool_args_match_overrides": "tools",
    "forbidden": "forbidden_actions",
    "optional": "optional_actions",
    "gated": "gated_actions",
    "approvals": "gated_actions",
    "steps": "procedure",
    "blocks": "procedure",
}


def suggestion(key: str, known: tuple[str, ...] | list[str]) -> str:
    """`` (did you mean "x"?)`` for the known key closest to ``key``, or ``""``."""
    near = _SYNONYMS.get(key.lower()) if _SYNONYMS.get(key.lower()) in known else None
    if near is None:
        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        near = close[0] if close else None
    return f' (did you mean "{near}"?)' if near else ""


def _problem(kind: str, message: str) -> PydanticCustomError:
    # a custom error: pydantic prints the message as written (a ValueError gets "Value error, "); with
    # no context the message is not formatted, so braces in a user's key are safe
    return PydanticCustomError(kind, message)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


def _strict_schema(schema: dict[str, Any]) -> None:
    schema["additionalProperties"] = False
    schema["patternProperties"] = {"^x_": {}}


class _Strict(_Open):
    """A part of the ground truth: every key is a field or starts with ``x_`` (kept as extra)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_strict_schema)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = tuple(cls.model_fields)
            unknown = [k for k in data if isinstance(k, str) and k not in known and not k.startswith(USER_PREFIX)]
            if unknown:
                raise _problem("unknown_key", "; ".join(f'unknown key "{k}"{suggestion(k, known)}' for k in unknown))
        return data


_re2: Any = None


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (linear-time matching; its ``search`` and ``fullmatch`` take
    ``str`` or UTF-8 ``bytes``). Raises ``ValueError`` with RE2's reason when it does not compile."""
    global _re2
    if _re2 is None:
        import re2  # loaded on first use: most scenarios have no pattern

        _re2 = re2
    options = _re2.Options()
    options.log_errors = False  # the reason goes into the one-line error, not to stderr
    options.never_capture = True  # only whether it matches is asked
    try:
        return _re2.compile(pattern.encode("utf-8"), options)
    except UnicodeEncodeError:
        raise ValueError("a lone surrogate is not a character") from None
    except _re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(str(reason)) from None


def _check_compare(key: str, rule: Any) -> None:
    where = f"compare.{key}"
    if isinstance(rule, str):
        if rule not in COMPARE_WORDS:
            forms = COMPARE_WORDS + COMPARE_FORMS
            raise _problem("bad_compare", f'{where}: unknown rule "{rule}"{suggestion(rule, forms)} ({_COMPARE_HELP})')
        return
    if not isinstance(rule, dict) or len(rule) != 1:
        raise _problem("bad_compare", f"{where}: expected {_COMPARE_HELP}")
    ((form, param),) = rule.items()
    if form not in COMPARE_FORMS:
        raise _problem(
            "bad_compare",
            f'{where}: unknown rule "{form}"{suggestion(form, COMPARE_FORMS + COMPARE_WORDS)} ({_COMPARE_HELP})',
        )
    where = f"{where}.{form}"
    if form in ("regex", "fullmatch"):
        if not isinstance(param, str):
            raise _problem("bad_compare", f"{where}: expected a string")
        try:
            compile_pattern(param)
        except ValueError as exc:
            raise _problem("bad_regex", f"{where}: does not compile as an RE2 pattern ({exc})") from None
    elif form == "substring":
        if not isinstance(param, str) or not param:
            raise _problem("bad_compare", f"{where}: expected a non-empty string")
    elif form in ("abs_tol", "rel_tol"):
        if type(param) not in (int, float) or not math.isfinite(param) or param < 0:
            raise _problem("bad_compare", f"{where}: expected a number >= 0")
        if form == "rel_tol" and param >= 1:
            # |a - b| <= rel_tol * max(|a|, |b|): from 1 up, every two numbers of one sign are equal
            raise _problem(
                "bad_compare",
                f"{where}: {param} accepts any two numbers of the same sign; a relative tolerance is a "
                "fraction below 1 (0.01 is 1 %)",
            )
    elif not isinstance(param, list) or not param:
        # an empty one_of matches nothing, an empty has_items every list: both are mistakes
        raise _problem("bad_compare", f"{where}: expected a non-empty list of values")
    elif count_non_finite(param):
        raise _problem("bad_compare", f"{where}: holds a non-finite number (NaN, Infinity), which equals nothing")


def _compare_schema(schema: dict[str, Any]) -> None:
    """The JSON Schema of ``compare``'s values: a word, or an object with one of the forms."""
    text, values = {"type": "string"}, {"type": "array", "minItems": 1}
    number = {"type": "number", "minimum": 0}
    params = {"regex": text, "fullmatch": text, "substring": {"type": "string", "minLength": 1}}
    fraction = number | {"exclusiveMaximum": 1}
    params |= {"has_items": values, "one_of": values, "abs_tol": number, "rel_tol": fraction}
    forms = [
        {"type": "object", "properties": {form: param}, "required": [form], "additionalProperties": False}
        for form, param in params.items()
    ]
    schema["additionalProperties"] = {"anyOf": [{"enum": list(COMPARE_WORDS)}, *forms]}


class ArgsRule(_Strict):
    """How a call's arguments are compared with an action's ``args`` (docs/scenarios.md).

    ``mode``: exact | contains | within | ignore; ``keys``: compare only these keys (dotted paths);
    ``compare``: a rule per key. Unset parts come from the next level (action > tool > default)."""

    mode: Literal["exact", "contains", "within", "ignore"] | None = None
    keys: list[StrictStr] | None = None
    compare: Annotated[dict[StrictStr, Any] | None, Field(json_schema_extra=_compare_schema)] = None

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, mode: Any) -> Any:
        if isinstance(mode, str) and mode not in ARGS_MODES:
            raise _problem(
                "bad_mode", f'unknown mode "{mode}"{suggestion(mode, ARGS_MODES)} (one of {", ".join(ARGS_MODES)})'
            )
        return mode

    @model_validator(mode="after")
    def _coherent(self) -> ArgsRule:
        if self.keys is not None and self.mode is not None:
            raise _problem("keys_and_mode", "give either keys (compare only these) or mode, not both")
        for key in self.keys or ():
            if not key or any(not part for part in key.split(".")):
                raise _problem("bad_key", f'keys: "{key}" is not a key or a dotted path')
        for key, rule in (self.compare or {}).items():
            _check_compare(key, rule)
            if "." in key and key not in (self.keys or ()):
                raise _problem("bad_key", f"compare.{key}: a dotted path is compared only when keys lists it")
            # the selection set beside a comparison never reaches it: the comparison would be silently dropped
            if self.keys is not None and key not in self.keys:
                raise _problem("unused_compare", f"compare.{key}: not in keys, so never compared (list it in keys)")
            if self.mode == "ignore" and rule != "ignore":
                raise _problem("unused_compare", f'compare.{key}: mode "ignore" compares no key, so this is never used')
        return self


class ArgsMatch(ArgsRule):
    """The ground truth's argument rules: a default, and one rule per tool in ``tools``."""

    tools: dict[StrictStr, ArgsRule] | None = None


class Action(_Strict):
    control: StrictStr | None = None
    value: Any = None
    tool: StrictStr | None = None
    args: Annotated[dict[StrictStr, Any], Field(strict=True)] | None = None
    args_match: ArgsRule | None = None
    rationale: str | None = None
    severity: Literal["dangerous", "anti_procedure"] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Action:
        if self.tool is None and self.control is None:
            raise ValueError("an action needs either 'control' (with 'value') or 'tool' (with 'args')")
        if self.tool is None and "value" not in self.model_fields_set:
            raise ValueError(f"action on control {self.control!r} has no 'value'")
        if self.tool is None and self.args_match is not None:
            raise _problem("cockpit_rule", "args_match: a cockpit action (control, value) is always compared exactly")
        _finite("args" if self.tool is not None else "value", self.args if self.tool is not None else self.value)
        return self

    @cached_property
    def key(self) -> tuple:
        if self.tool is not None:
            return match_key(self.tool, self.args or {})
        return control_key(self.control, self.value)

    @property
    def wildcard(self) -> bool:
        """A ``tool`` with no ``args``: as an optional, forbidden or gated action, any call of the tool."""
        return self.tool is not None and self.args is None


def _finite(field: str, value: Any) -> None:
    if count_non_finite(value):
        raise _problem(
            "never_matches",
            f"{field}: holds a non-finite number (NaN, Infinity), which equals nothing: it can never match",
        )


class Approval(_Strict):
    """What approves a gated call: an earlier successful call of ``tool`` (its arguments under the
    argument rules, ``result`` an object whose keys and values the call's result contains)."""

    tool: StrictStr
    args: Annotated[dict[StrictStr, Any], Field(strict=True)] | None = None
    args_match: ArgsRule | None = None
    result: Annotated[Any, Field(json_schema_extra={"type": "object"})] = None
    rationale: str | None = None

    @model_validator(mode="after")
    def _result_is_an_object(self) -> Approval:
        if "result" in self.model_fields_set and not isinstance(self.result, dict):
            raise _problem(
                "bad_result",
                "result: expected an object (the keys and values the approving call's result contains), "
                f"not {_json_type(self.result)}",
            )
        _finite("args", self.args)
        _finite("result", self.result)
        return self


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


class GatedAction(_Strict):
    """Calls of ``tool`` (with ``args``: the matching ones) need an earlier ``approval``."""

    tool: StrictStr
    args: Annotated[dict[StrictStr, Any], Field(strict=True)] | None = None
    args_match: ArgsRule | None = None
    approval: Approval
    severity: Literal["dangerous", "anti_procedure"] = "anti_procedure"
    per_call: StrictBool = False
    rationale: str | None = None

    @model_validator(mode="after")
    def _finite_args(self) -> GatedAction:
        _finite("args", self.args)
        return self


def _rule_key(rule: ArgsRule | None) -> str:
    """An action's own argument rule as canonical JSON (``""`` for none), to compare two rules."""
    return "" if rule is None else json.dumps(rule.model_dump(exclude_none=True), sort_keys=True, default=repr)


class Block(_Strict):
    block: StrictStr
    ordered: StrictBool = False
    actions: list[Action] = Field(default_factory=list)


class GroundTruth(_Strict):
    source: Any = None
    procedure: list[Block] = Field(default_factory=list)
    optional_actions: list[Action] = Field(default_factory=list)
    forbidden_actions: list[Action] = Field(default_factory=list)
    gated_actions: list[GatedAction] = Field(default_factory=list)
    args_match: ArgsMatch | None = None
    target: Any = None  # a reference answer (imported inspect_ai samples)

    @model_validator(mode="after")
    def _forbidden_have_severity(self) -> GroundTruth:
        for i, action in enumerate(self.forbidden_actions):
            if action.severity is None:
                raise ValueError(f"forbidden_actions[{i}] has no severity (dangerous or anti_procedure)")
        # the same tool, arguments and own rule: every call one matches, the other matches too
        # (other rules, e.g. a regex beside a substring on the same key, select other calls)
        required = {
            (a.key, _rule_key(a.args_match)): f"procedure[{bi}].actions[{ai}]"
            for bi, b in enumerate(self.procedure)
            for ai, a in enumerate(b.actions)
        }
        for i, action in enumerate(self.forbidden_actions):
            same = required.get((action.key, _rule_key(action.args_match)))
            if not action.wildcard and same is not None:
                raise _problem(
                    "contradiction",
                    f"forbidden_actions[{i}] is also required, with the same arguments "
                    f"({same}): no run can satisfy both",
                )
        # a command matches at most one gate, the first listed: a later gate of the same tool,
        # arguments and own rule catches no call, so its approval would never be asked for
        gates: dict[tuple, int] = {}
        for i, gate in enumerate(self.gated_actions):
            key = (match_key(gate.tool, gate.args or {}), gate.args is None, _rule_key(gate.args_match))
            first = gates.setdefault(key, i)
            if first != i:
                raise _problem(
                    "never_matches",
                    f'gated_actions[{i}] gates the same calls of "{gate.tool}" as gated_actions[{first}]: a '
                    "command matches at most one gate, the first listed, so its approval "
                    f'("{gate.approval.tool}") would never be asked for',
                )
        return self


class Success(_Strict):
    final_state: list[dict[str, Any]] = Field(default_factory=list)
    ecam_clear_of: list[Any] = Field(default_factory=list)


class Budget(_Strict):
    max_tool_calls: int | None = None
    max_sim_time_s: float | None = None


# a part of the scenario written one level too high: at the top level it would be a harness's own
# field, ignored, and the scenario would score without it
_NESTED = {
    **dict.fromkeys(
        ("procedure", "optional_actions", "forbidden_actions", "gated_actions", "args_match"), "ground_truth"
    ),
    **dict.fromkeys(("final_state", "ecam_clear_of"), "success"),
    **dict.fromkeys(("max_tool_calls", "max_sim_time_s"), "budget"),
}


class Scenario(_Open):
    id: StrictStr
    title: str | None = None
    ground_truth: GroundTruth
    success: Success | None = None
    budget: Budget | None = None
    command_tools: list[StrictStr] | None = None
    reference_steps: Annotated[int, Field(strict=True, ge=0, le=2**63 - 1)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_typos(cls, data: Any) -> Any:
        # the top level is open (a harness's own fields), but a near miss of a known key is a typo
        # that would drop what it names (a misspelt "success" scores without success criteria)
        typos = cls.typos(data)
        if typos:
            raise _problem("unknown_key", "; ".join(cls.unknown_key(k) for k in typos))
        return data

    @classmethod
    def unknown_key(cls, key: str) -> str:
        """What is wrong with the top-level key ``key`` that :meth:`typos` returned."""
        if key in _NESTED:
            return f'unknown key "{key}" at the top level (it belongs in {_NESTED[key]})'
        return f'unknown key "{key}"{suggestion(key, tuple(cls.model_fields))}'

    @classmethod
    def typos(cls, data: Any) -> list[str]:
        """Top-level keys of ``data`` that are near misses of a known key."""
        if not isinstance(data, dict):
            return []
        known = tuple(cls.model_fields)
        return [
            k
            for k in data
            if isinstance(k, str)
            and k not in known
            and not k.startswith(USER_PREFIX)
            and k not in TASK_PROMPT_FIELDS
            and (k in _NESTED or difflib.get_close_matches(k, known, n=1, cutoff=0.8))
        ]

    @model_validator(mode="after")
    def _actions_are_commands(self) -> Scenario:
        # with command_tools declared, every other call is a read: a required, forbidden or gated
        # action on a tool outside them could never match, fire or gate anything
        if self.command_tools is None:
            return self
        commands = self.command_tools
        gt = self.ground_truth
        never_match = "so no call can ever match it"
        placed = [(f"procedure[{bi}].actions[{ai}]", a.tool, never_match) for bi, ai, a in self.required()]
        placed += [
            (f"forbidden_actions[{i}]", a.tool, "so its calls are reads and it can never fire")
            for i, a in enumerate(gt.forbidden_actions)
        ]
        placed += [
            (f"gated_actions[{i}]", g.tool, "so its calls are reads and no gate applies to them")
            for i, g in enumerate(gt.gated_actions)
        ]
        for where, tool, why in placed:
            if tool is not None and tool not in commands:
                raise _problem(
                    "action_not_command",
                    f'ground_truth.{where}: tool "{tool}" is not in command_tools, {why}{suggestion(tool, commands)}',
                )
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _validated_once(cls, data: Any, handler: Any) -> Any:
        # defined last, so it runs first: a Scenario given where one is expected (a run's meta holds
        # the reader's shared instance) was checked as it was built, and its fields are not
        # revalidated; the checks above would only repeat themselves on every run
        if type(data) is cls:
            return data
        return handler(data)

    def commands(self) -> frozenset[str]:
        """Tools whose calls are commands; every other tool call is a read.

        Default: ``set_control`` plus every tool named by a ``{tool, args}`` ground-truth action
        (required, optional, forbidden or gated; an approval's tool is not a command).
        """
        if self.command_tools is not None:
            return frozenset(self.command_tools)
        gt = self.ground_truth
        actions = [a for b in gt.procedure for a in b.actions] + gt.optional_actions + gt.forbidden_actions
        return frozenset(
            {SET_CONTROL} | {a.tool for a in actions if a.tool is not None} | {g.tool for g in gt.gated_actions}
        )

    def required(self) -> list[tuple[int, int, Action]]:
        """Required actions in ground-truth order as (block index, action index, action)."""
        return [(bi, ai, a) for bi, b in enumerate(self.ground_truth.procedure) for ai, a in enumerate(b.actions)]

    @cached_property
    def index(self) -> ScenarioIndex:
        """What the scorer derives from the ground truth, computed once per scenario object (the
        reader shares one object among runs of the same scenario)."""
        gt = self.ground_truth
        required = self.required()
        forbidden: dict[tuple, str] = {}
        for action in gt.forbidden_actions:
            forbidden.setdefault(action.key, action.severity or "dangerous")
        blocks, ordered = tuple(bi for bi, _, _ in required), tuple(b.ordered for b in gt.procedure)
        listed = [a for _, _, a in required] + gt.optional_actions + gt.forbidden_actions
        plain = (
            gt.args_match is None
            and not gt.gated_actions
            and all(a.args_match is None for a in listed)
            # an optional or forbidden tool action matches by ``contains``, never by its key alone
            and all(a.tool is None for a in gt.optional_actions + gt.forbidden_actions)
        )
        return ScenarioIndex(
            required=required,
            required_keys=frozenset(a.key for _, _, a in required),
            optional_keys=frozenset(a.key for a in gt.optional_actions),
            forbidden=forbidden,
            command_tools=self.commands(),
            required_blocks=blocks,
            ordered_blocks=ordered,
            constraints=_pairs(blocks, ordered) if len(required) <= PAIRS_UP_TO else None,
            block_names=tuple(b.block for b in gt.procedure),
            plain=plain,
            approval_tools=frozenset(g.approval.tool for g in gt.gated_actions),
        )

    @cached_property
    def bundle_part(self) -> dict[str, Any]:
        """The scenario's share of every judge bundle of its runs (built once per scenario object)."""
        gt = self.ground_truth

        def actions(items: list[Action]) -> list[dict[str, Any]]:
            return [a.model_dump(mode="json", exclude_none=True) for a in items]

        truth: dict[str, Any] = {
            "procedure": [
                {"block": b.block, "ordered": b.ordered, "actions": actions(b.actions)} for b in gt.procedure
            ],
            "optional_actions": actions(gt.optional_actions),
            "forbidden_actions": actions(gt.forbidden_actions),
        }
        if gt.target is not None:  # a reference answer (imported inspect_ai samples); absent otherwise
            truth["target"] = gt.target
        # present only when used, so that the bundle (and the scenario hash) of every scenario
        # written before they existed stays the same
        if gt.gated_actions:
            truth["gated_actions"] = [g.model_dump(mode="json", exclude_none=True) for g in gt.gated_actions]
        if gt.args_match is not None:
            truth["args_match"] = gt.args_match.model_dump(mode="json", exclude_none=True)
        return {
            "scenario_id": self.id,
            "title": self.title,
            "task_prompt": self.task_prompt(),
            "ground_truth": truth,
            "success_criteria": self.success.model_dump(mode="json") if self.success else None,
            "budget": self.budget.model_dump(mode="json", exclude_none=True) if self.budget else None,
        }

    @cached_property
    def bundle_part_json(self) -> bytes:
        """``bundle_part`` as compact JSON (pydantic-core, non-finite numbers as null)."""
        return to_json(self.bundle_part, inf_nan_mode="null")

    @cached_property
    def content_hash(self) -> str:
        """12 hex digits of the sha256 of the scenario's bundle part (ground truth, success criteria,
        budget, title, task prompt) as canonical JSON: tells apart two scenarios that share an id,
        and is the same for one scenario whatever order its keys are written in (an importer sorts
        them; a hand-written file does not)."""
        return sha256_hex(canonical_json(self.bundle_part))[:12]

    def task_prompt(self) -> str | None:
        extra = self.model_extra or {}
        for name in TASK_PROMPT_FIELDS:
            value = extra.get(name)
            if isinstance(value, str) and value:
                return value
        return None


PAIRS_UP_TO = 64  # at most 2,016 pairs


def _pairs(blocks: tuple[int, ...], ordered: tuple[bool, ...]) -> tuple[tuple[int, int], ...]:
    return tuple(
        (i, j) for i, bi in enumerate(blocks) for j in range(i + 1, len(blocks)) if bi < blocks[j] or ordered[bi]
    )


@dataclass(frozen=True, slots=True)
class ScenarioIndex:
    required: list[tuple[int, int, Action]]
    required_keys: frozenset[tuple]
    optional_keys: frozenset[tuple]
    forbidden: dict[tuple, str]
    command_tools: frozenset[str]
    # order constraints (scoring/order.py): required[i] before required[j] when its block comes first,
    # or both are in one ordered block and i < j
    required_blocks: tuple[int, ...]  # the block of each required action (non-decreasing)
    ordered_blocks: tuple[bool, ...]  # per block: its actions in their order
    # the constraints as (i, j) pairs, listed only for a short procedure (the fast path); None above
    # PAIRS_UP_TO required actions, where order is counted without them
    constraints: tuple[tuple[int, int], ...] | None
    block_names: tuple[str, ...]
    # True when every action compares its key exactly and nothing is gated: the scorer then matches
    # by key alone (the cockpit's and tau-bench's case, and the fast path)
    plain: bool = True
    approval_tools: frozenset[str] = frozenset()  # tools whose calls can approve a gated call


def scenario_json_schema() -> dict[str, Any]:
    """JSON Schema of a scenario (embedded in a meta record, or one entry of a scenario file)."""
    schema = Scenario.model_json_schema()
    schema["title"] = "evalkit scenario"
    schema["description"] = (
        "What a correct run does (docs/scenarios.md): ground truth (required, optional, forbidden and gated "
        "actions, argument rules), success criteria, budget. The ground truth, success criteria, actions and "
        "argument rules allow no unknown key except x_*; the top level is open."
    )
    return schema
