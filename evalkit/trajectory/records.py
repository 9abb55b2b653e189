"""Trajectory records (A320 cockpit benchmark, trajectory schema 1), modelled with pydantic.

A trajectory is JSONL, one record per line with a ``type`` key: ``meta``, ``setup``, then any mix of
``assistant`` / ``nudge`` / ``tool_call``, an optional ``provider_error`` (or a ``harness_error`` that
replaces everything after setup), then ``final``. Extra fields and unknown record types are
tolerated and counted (``Trajectory.extra_fields``, ``Trajectory.unknown_records``), never fatal.

Types: fields that feed the score are **strict** — no coercion, a wrong type is an error at its line:
the tool name, ``args`` (an object), ``is_error``, ``step`` / ``call_index``, the success checks
(``passed``, ``clear``, ``all_passed``), the final ``reason`` and ``tool_calls_used``, ``sim_time``
(a number), ``run_id``, ``tool_surface`` and the model (``adapter.model`` or ``meta.model``, a string when given;
so is ``adapter.provider``). Integers are 64-bit (they are stored in SQLite columns). Everything else
(texts, results, payloads, snapshots) is kept as recorded.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictStr,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from evalkit.trajectory.scenario import Scenario, suggestion

FINAL_REASONS = (
    "agent_done",
    "end_turn_without_done",
    "budget_tool_calls",
    "budget_sim_time",
    "provider_error",
    "invalid_scenario",
    "harness_error",  # importers: a crashed episode of another harness (scored as a failure)
)


# Keys under which recorders name the model that evalkit does not read it from (it reads adapter.model
# or meta.model)
MODEL_ELSEWHERE = ("model_name", "model_id", "modelName", "modelId", "llm", "agent_model", "llm_model")

Int64 = Annotated[int, Field(strict=True, ge=-(2**63), le=2**63 - 1)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class Meta(_Record):
    type: Literal["meta"] = "meta"
    run_id: StrictStr
    ts_utc: str | None = None
    scenario: Scenario
    scenario_id: StrictStr | None = None  # the scenario file's scenario this run names (when not embedded)
    scenario_path: str | None = None
    adapter: dict[str, Any] = Field(default_factory=dict)
    instructions_profile: str | None = None
    tool_surface: list[StrictStr] | None = None
    vendor_pin: Any = None
    versions: Any = None
    seed: Any = None

    @field_validator("adapter")
    @classmethod
    def _names_are_strings(cls, adapter: dict[str, Any]) -> dict[str, Any]:
        for key in ("model", "provider"):
            value = adapter.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"adapter.{key} must be a string, got {type(value).__name__}")
        return adapter

    @model_validator(mode="after")
    def _approvals_on_surface(self) -> Meta:
        # a gate whose approval the agent could not call can never be satisfied: say so, not score it
        if self.tool_surface is not None:
            for i, gate in enumerate(self.scenario.ground_truth.gated_actions):
                if gate.approval.tool not in self.tool_surface:
                    raise PydanticCustomError(
                        "approval_off_surface",
                        (
                            f'scenario.ground_truth.gated_actions[{i}].approval.tool: "{gate.approval.tool}" is not on '
                            "the tool surface, so no call can approve the gated tool"
                            f"{suggestion(gate.approval.tool, self.tool_surface)}"
                        ),
                    )
        return self

    @model_validator(mode="after")
    def _model_named_once(self) -> Meta:
        # the model is read from adapter.model or meta.model; a run that names it elsewhere would
        # score as "unknown" and be lumped with other models: refused with the fix instead
        extra = self.__pydantic_extra__ or {}
        top, inner = extra.get("model"), self.adapter.get("model")
        if top is not None and not isinstance(top, str):
            raise PydanticCustomError("model_type", f"model must be a string, got {type(top).__name__}")
        if top is not None and inner is not None and top != inner:
            raise PydanticCustomError(
                "model_twice",
                f'model "{top}" and adapter.model "{inner}" name different models: keep one of them',
            )
        if top is None and inner is None:
            for prefix, fields in (("", extra), ("adapter.", self.adapter)):
                for key in MODEL_ELSEWHERE:
                    if isinstance(fields.get(key), str) and fields[key]:
                        raise PydanticCustomError(
                            "model_elsewhere",
                            f"{prefix}{key}: the model is read from adapter.model or meta.model, so this run "
                            f'would score as model "unknown": write it as "model"',
                        )
        return self

    @property
    def model(self) -> str:
        return str(self.adapter.get("model") or (self.__pydantic_extra__ or {}).get("model") or "unknown")

    @property
    def provider(self) -> str | None:
        provider = self.adapter.get("provider")
        return None if provider is None else str(provider)


class Setup(_Record):
    type: Literal["setup"] = "setup"
    sim_time: StrictFloat | None = None
    validity_gate: dict[str, Any] | None = None
    active_failures: Any = None
    snapshot: Any = None


class Assistant(_Record):
    type: Literal["assistant"] = "assistant"
    step: Int64 | None = None
    text: str | None = None
    stop_reason: str | None = None
    provider_raw: Any = None


class Nudge(_Record):
    type: Literal["nudge"] = "nudge"
    step: Int64 | None = None
    text: str | None = None


class ToolCall(_Record):
    type: Literal["tool_call"] = "tool_call"
    step: Int64 | None = None
    call_index: Int64 | None = None
    name: StrictStr
    args: Annotated[dict[StrictStr, Any], Field(strict=True)] = Field(default_factory=dict)
    result: Any = None
    is_error: StrictBool = False
    sim_time_before: float | None = None
    sim_time_after: float | None = None
    wall_ms: float | None = None


class ProviderError(_Record):
    type: Literal["provider_error"] = "provider_error"
    step: Int64 | None = None
    error: Any = None


class HarnessError(_Record):
    type: Literal["harness_error"] = "harness_error"
    error: Any = None


class FinalStateCheck(_Record):
    var: str | None = None
    op: str | None = None
    value: Any = None
    passed: StrictBool


class EcamCheck(_Record):
    message: str | None = None
    clear: StrictBool


class SuccessEval(_Record):
    final_state: list[FinalStateCheck] = Field(default_factory=list)
    ecam_clear_of: list[EcamCheck] = Field(default_factory=list)
    all_passed: StrictBool


def unrecorded_calls(done_payload: Any) -> tuple[int | None, list[str]]:
    """The tool calls an importer found recorded without their arguments, as a final record's
    ``done_payload.otel`` names them (a trace taken with content capture off): (how many, when it
    says; the tools). ``(None, [])`` when it names none."""
    otel = done_payload.get("otel") if type(done_payload) is dict else None
    tools = otel.get("tools_without_arguments") if type(otel) is dict else None
    if not tools or type(tools) is not list:
        return None, []
    unmapped = otel.get("unmapped")
    n = unmapped.get("tool_arguments") if type(unmapped) is dict else None
    return (n if type(n) is int else None), [str(t) for t in tools]


class Final(_Record):
    type: Literal["final"] = "final"
    reason: StrictStr
    done_payload: Any = None
    sim_time: StrictFloat | None = None
    tool_calls_used: Int64 | None = None
    ecam: Any = None
    active_failures: Any = None
    snapshot: Any = None
    success_eval: SuccessEval | None = None


RECORD_TYPES: dict[str, type[_Record]] = {
    cls.model_fields["type"].default: cls
    for cls in (Meta, Setup, Assistant, Nudge, ToolCall, ProviderError, HarnessError, Final)
}

Event = Assistant | Nudge | ToolCall | ProviderError | HarnessError


class Call:
    """What scoring needs of one tool call, held compactly: a long run holds 10^5 of them, and a
    ToolCall record costs twenty times the memory (its result lives on in the judge bundle's text).
    A call of a tool that is not a command tool (a read) needs only its name and ``is_error``:
    :meth:`read` gives one shared object per (name, is_error), without args, step or call index;
    except a call of an approval tool (``ScenarioIndex.approval_tools``), kept whole with its result."""

    __slots__ = ("name", "args", "is_error", "step", "call_index", "result")

    def __init__(
        self,
        name: str,
        args: dict[str, Any],
        is_error: bool,
        step: int | None,
        call_index: int | None,
        result: Any = None,
    ):
        self.name, self.args, self.is_error, self.step, self.call_index = name, args, is_error, step, call_index
        self.result = result  # kept only for calls that may approve a gated call (the rest need none)

    @classmethod
    def of(cls, record: ToolCall, keep_result: bool = False) -> Call:
        return cls(
            record.name,
            record.args,
            record.is_error,
            record.step,
            record.call_index,
            record.result if keep_result else None,
        )

    @classmethod
    def read(cls, record: ToolCall) -> Call:
        return cls.read_named(record.name, record.is_error)

    @classmethod
    def read_named(cls, name: str, is_error: bool) -> Call:
        """:meth:`read` given the call's name and ``is_error``."""
        key = (name, is_error)
        call = _READS.get(key)
        if call is None:
            call = cls(name, {}, is_error, None, None)
            if len(_READS) < 1024:  # tool names come from files: keep the table bounded
                _READS[key] = call
        return call


_READS: dict[tuple[str, bool], Call] = {}


class Trajectory(BaseModel):
    """One run, as read from a file: meta, setup, the events in order, final (None when truncated).

    Read for scoring (``compact=True`` in :mod:`evalkit.trajectory.reader`), ``events`` is left empty: the
    tool calls are in ``calls`` (as :class:`Call`), the judge bundle is already built (``bundle``,
    an ``evalkit.trajectory.bundle.Bundle``) and ``provider_errors`` counts the provider_error events."""

    path: str
    meta: Meta
    setup: Setup | None = None
    events: list[Event] = Field(default_factory=list)
    final: Final | None = None
    unknown_records: int = 0
    extra_fields: int = 0
    dropped_last_line: bool = False
    non_finite_numbers: int = 0
    # Indices (into events) of tool calls whose line in the file is long: only their results can
    # need cutting in the judge bundle, so short ones are never re-serialised.
    long_lines: frozenset[int] = frozenset()
    calls: list[Any] | None = None
    bundle: Any = None
    provider_errors: int = 0

    def tool_calls(self) -> list[Any]:
        """The tool calls in order: ``Call`` objects when read compactly, else the ToolCall records."""
        return self.calls if self.calls is not None else [e for e in self.events if isinstance(e, ToolCall)]

    def has_provider_error(self) -> bool:
        return self.provider_errors > 0 or any(isinstance(e, ProviderError) for e in self.events)


def trajectory_json_schema() -> dict[str, Any]:
    """JSON Schema of one trajectory line: a record discriminated by its ``type``."""
    union = Meta | Setup | Assistant | Nudge | ToolCall | ProviderError | HarnessError | Final
    schema = TypeAdapter(union).json_schema()
    # a meta record embeds its scenario or names one of a scenario file (``evalkit score --scenarios``)
    meta = schema["$defs"]["Meta"]
    meta["required"] = [k for k in meta["required"] if k != "scenario"]
    meta["anyOf"] = [{"required": ["scenario"]}, {"required": ["scenario_id"]}]
    schema["title"] = "evalkit trajectory record (one JSONL line)"
    schema["description"] = (
        "A trajectory is a JSONL file: meta, setup, then assistant/nudge/tool_call records, an optional "
        "provider_error (or a harness_error replacing everything after setup), then final. Extra fields "
        "and unknown record types are tolerated."
    )
    return schema
