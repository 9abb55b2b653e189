"""The scenario embedded in a trajectory's meta record: ground truth, success criteria, budget.

A ground-truth action is either the cockpit form ``{control, value}`` (a ``set_control`` call whose
arguments carry that control and value) or the general form ``{tool, args}`` (a call of ``tool``
whose arguments equal ``args``). Numbers compare by value; extra fields are kept and ignored.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalkit.values import control_key, match_key

from evalkit.values import SET_CONTROL
TASK_PROMPT_FIELDS = ("task_prompt", "prompt", "task", "instruction", "instructions", "briefing", "description")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Action(_Open):
    control: str | None = None
    value: Any = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    rationale: str | None = None
    severity: Literal["dangerous", "anti_procedure"] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> "Action":
        if self.tool is None and self.control is None:
            raise ValueError("an action needs either 'control' (with 'value') or 'tool' (with 'args')")
        if self.tool is None and "value" not in self.model_fields_set:
            raise ValueError(f"action on control {self.control!r} has no 'value'")
        return self

    @property
    def tool_name(self) -> str:
        return self.tool if self.tool is not None else SET_CONTROL

    @property
    def key(self) -> tuple:
        if self.tool is not None:
            return match_key(self.tool, self.args or {})
        return control_key(self.control, self.value)

    def label(self) -> str:
        if self.tool is not None:
            return f"{self.tool}({self.args or {}})"
        return f"{self.control}={self.value}"


class Block(_Open):
    block: str
    ordered: bool = False
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
    id: str
    title: str | None = None
    ground_truth: GroundTruth
    success: Success | None = None
    budget: Budget | None = None
    command_tools: list[str] | None = None
    reference_steps: int | None = None

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

    def task_prompt(self) -> str | None:
        extra = self.model_extra or {}
        for name in TASK_PROMPT_FIELDS:
            value = extra.get(name)
            if isinstance(value, str) and value:
                return value
        return None
