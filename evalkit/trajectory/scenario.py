"""The scenario embedded in a trajectory's meta record: ground truth, success criteria, budget.

A ground-truth action is either the cockpit form ``{control, value}`` (a ``set_control`` call whose
arguments carry that control and value) or the general form ``{tool, args}`` (a call of ``tool``
whose arguments equal ``args``). Numbers compare by value; extra fields are kept and ignored.
What feeds the score is strictly typed (no coercion): ids, block names, ``ordered``, an action's
``control`` / ``tool`` / ``args`` / ``severity``, ``command_tools`` and ``reference_steps``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal


from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator
from pydantic_core import to_json

from evalkit.trajectory.values import SET_CONTROL, control_key, match_key, sha256_hex

TASK_PROMPT_FIELDS = ("task_prompt", "prompt", "task", "instruction", "instructions", "briefing", "description")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Action(_Open):
    control: StrictStr | None = None
    value: Any = None
    tool: StrictStr | None = None
    args: Annotated[dict[StrictStr, Any], Field(strict=True)] | None = None
    rationale: str | None = None
    severity: Literal["dangerous", "anti_procedure"] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> "Action":
        if self.tool is None and self.control is None:
            raise ValueError("an action needs either 'control' (with 'value') or 'tool' (with 'args')")
        if self.tool is None and "value" not in self.model_fields_set:
            raise ValueError(f"action on control {self.control!r} has no 'value'")
        return self

    @cached_property
    def key(self) -> tuple:
        if self.tool is not None:
            return match_key(self.tool, self.args or {})
        return control_key(self.control, self.value)


class Block(_Open):
    block: StrictStr
    ordered: StrictBool = False
    actions: list[Action] = Field(default_factory=list)


class GroundTruth(_Open):
    source: Any = None
    procedure: list[Block] = Field(default_factory=list)
    optional_actions: list[Action] = Field(default_factory=list)
    forbidden_actions: list[Action] = Field(default_factory=list)

    @model_validator(mode="after")
    def _forbidden_have_severity(self) -> "GroundTruth":
        for i, action in enumerate(self.forbidden_actions):
            if action.severity is None:
                raise ValueError(f"forbidden_actions[{i}] has no severity (dangerous or anti_procedure)")
        return self


class Success(_Open):
    final_state: list[dict[str, Any]] = Field(default_factory=list)
    ecam_clear_of: list[Any] = Field(default_factory=list)


class Budget(_Open):
    max_tool_calls: int | None = None
    max_sim_time_s: float | None = None


class Scenario(_Open):
    id: StrictStr
    title: str | None = None
    ground_truth: GroundTruth
    success: Success | None = None
    budget: Budget | None = None
    command_tools: list[StrictStr] | None = None
    reference_steps: Annotated[int, Field(strict=True, ge=0, le=2**63 - 1)] | None = None

    def commands(self) -> frozenset[str]:
        """Tools whose calls are commands; every other tool call is a read.

        Default: ``set_control`` plus every tool named by a ``{tool, args}`` ground-truth action.
        """
        if self.command_tools is not None:
            return frozenset(self.command_tools)
        gt = self.ground_truth
        actions = [a for b in gt.procedure for a in b.actions] + gt.optional_actions + gt.forbidden_actions
        return frozenset({SET_CONTROL} | {a.tool for a in actions if a.tool is not None})

    def required(self) -> list[tuple[int, int, Action]]:
        """Required actions in ground-truth order as (block index, action index, action)."""
        return [(bi, ai, a) for bi, b in enumerate(self.ground_truth.procedure) for ai, a in enumerate(b.actions)]

    @cached_property
    def index(self) -> "ScenarioIndex":
        """What the scorer derives from the ground truth, computed once per scenario object (the
        reader shares one object among runs of the same scenario)."""
        gt = self.ground_truth
        required = self.required()
        forbidden: dict[tuple, str] = {}
        for action in gt.forbidden_actions:
            forbidden.setdefault(action.key, action.severity or "dangerous")
        ordered = [b.ordered for b in gt.procedure]
        constraints = tuple(
            (i, j)
            for i, (bi, _, _) in enumerate(required)
            for j in range(i + 1, len(required))
            if bi < required[j][0] or ordered[bi]
        )
        return ScenarioIndex(
            required=required,
            required_keys=frozenset(a.key for _, _, a in required),
            optional_keys=frozenset(a.key for a in gt.optional_actions),
            forbidden=forbidden,
            command_tools=self.commands(),
            constraints=constraints,
            block_names=tuple(b.block for b in gt.procedure),
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
        target = (gt.model_extra or {}).get("target")
        if target is not None:  # a reference answer (imported inspect_ai samples); absent otherwise
            truth["target"] = target
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
        budget, title, task prompt): tells apart two scenarios that share an id."""
        return sha256_hex(self.bundle_part_json.decode("utf-8"))[:12]

    def task_prompt(self) -> str | None:
        extra = self.model_extra or {}
        for name in TASK_PROMPT_FIELDS:
            value = extra.get(name)
            if isinstance(value, str) and value:
                return value
        return None


@dataclass(frozen=True, slots=True)
class ScenarioIndex:
    required: list[tuple[int, int, Action]]
    required_keys: frozenset[tuple]
    optional_keys: frozenset[tuple]
    forbidden: dict[tuple, str]
    command_tools: frozenset[str]
    constraints: tuple[tuple[int, int], ...]  # (i, j): required[i] must come before required[j]
    block_names: tuple[str, ...]
