"""The ScoreCard: the JSON contract other tools read. Floats unrounded; null for missing values.

Non-finite numbers a trajectory carried (in args, values, sim times) are written as ``null`` by every
JSON dump of these models, so the output is standard JSON; ``informative.non_finite_numbers`` says
how many the file held.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field, model_validator

from evalkit.trajectory.bundle import Bundle
from evalkit.trajectory.values import compact_json, sha256_hex

Status = Literal["scored", "provider_error", "invalid_scenario", "incomplete"]
CommandClass = Literal["matched_required", "optional", "forbidden", "extraneous"]


class _Out(BaseModel):
    # NaN / Infinity become null in model_dump(mode="json") and model_dump_json(), at every depth.
    model_config = ConfigDict(ser_json_inf_nan="null")

    @classmethod
    def unknown(cls) -> Self:
        """Every field null: the result where none of it can be computed (an invalid scenario's
        vector and checks; a model with a required non-null field refuses it)."""
        return cls(**dict.fromkeys(cls.model_fields))


class Vector(_Out):
    """The result. The scalar is derived from it for rankings only."""

    coverage: float | None = Field(description="matched required actions / required actions")
    order: float | None = Field(description="satisfied / applicable order constraints; null without evidence")
    end_state: float | None = Field(description="fraction of success checks (final_state + ecam_clear_of) passed")
    all_passed: bool | None = Field(description="the harness's success evaluation passed entirely")
    safety_dangerous: int | None = Field(description="dangerous forbidden commands executed")
    safety_anti_procedure: int | None = Field(description="anti_procedure forbidden commands executed")
    extraneous: int | None = Field(description="commands that matched nothing usable in the ground truth")


class CommandRow(_Out):
    model_config = ConfigDict(populate_by_name=True, ser_json_inf_nan="null")

    index: int = Field(description="position among the run's effective commands (0-based)")
    step: int | None
    call_index: int | None
    tool: str
    args: dict[str, Any]
    control: str | None = Field(
        description="set_control's control; one that is not a string is shown as its canonical JSON"
    )
    value: Any = None
    class_: CommandClass = Field(alias="class")
    subtype: Literal["repeat_of_required", "uncatalogued_in_gt", "unapproved"] | None = None
    severity: Literal["dangerous", "anti_procedure"] | None = None
    block: str | None = Field(default=None, description="ground-truth block of the matched required action")


class GatedCall(_Out):
    """A command of a gated tool (``ground_truth.gated_actions``) and the approval it used."""

    index: int = Field(description="the command's index in commands")
    gate: int = Field(description="its gate's index in ground_truth.gated_actions")
    approved: bool = Field(
        description="an earlier call approved it; an unapproved one is a forbidden command (subtype unapproved)"
    )
    approval_call_index: int | None = Field(
        description="call_index of the approval it used, as recorded (null: none, or not recorded)"
    )
    approval_position: int | None = Field(
        description="0-based position of that approval among the run's tool calls (null: none)"
    )


class Matches(_Out):
    """Which ground-truth action gave each command its class: the scorer's own matching, recorded so
    that every view shows it instead of matching again. Numbers are command indices (``commands``);
    lists follow the ground truth's order (the required actions: every block's actions in order).
    Gated commands and their approvals are in ``gated_calls``."""

    required: list[int | None] = Field(description="per required action: the command that took it (null: missing)")
    optional: list[list[int]] = Field(description="per optional action: the commands classified optional by it")
    forbidden: list[list[int]] = Field(
        description="per forbidden action: the commands classified forbidden by it (the first listed one they match)"
    )
    repeats: list[list[int]] = Field(
        description="per required action: the extraneous commands that repeat it (subtype repeat_of_required)"
    )


class Checks(_Out):
    """The five mechanical checks (docs/glossary.md)."""

    reached_goal: bool | None
    used_only_expected_tools: bool | None
    correct_order: bool | None
    no_redundant_calls: bool | None
    approvals_respected: bool | None


class Informative(_Out):
    """Reported, never folded into the scalar."""

    final_reason: str | None
    tool_calls_used: int
    sim_time_used: float | None
    commands: int
    reads: int
    errored_commands: int
    off_surface_attempts: int
    observed_before_acting: bool
    required_actions: int
    reference_steps: int
    efficiency: float | None
    efficiency_grade: int | None
    unknown_records: int
    extra_fields: int
    dropped_last_line: bool
    non_finite_numbers: int = Field(
        default=0,
        description="NaN / Infinity / overflowing numbers in the file (read, never equal to anything, written as null)",
    )


class Provenance(_Out):
    """Where the run came from (from the meta record); not a score."""

    provider: str | None = None
    ts_utc: str | None = None
    scenario_path: str | None = None
    instructions_profile: str | None = None


def _schema_with_bundle(schema: dict[str, Any]) -> None:
    """``judge_bundle`` is an input too (see ``ScoreCard._hold_bundle``): the schema says so, as when
    it was a plain field."""
    schema["properties"]["judge_bundle"] = {"additionalProperties": True, "title": "Judge Bundle", "type": "object"}
    schema.setdefault("required", []).append("judge_bundle")


class ScoreCard(_Out):
    model_config = ConfigDict(populate_by_name=True, ser_json_inf_nan="null", json_schema_extra=_schema_with_bundle)

    run_id: str
    scenario_id: str
    model: str
    path: str
    status: Status
    vector: Vector
    scalar: float | None
    commands: list[CommandRow]
    checks: Checks
    informative: Informative
    provenance: Provenance = Field(default_factory=Provenance)
    scenario_hash: str = Field(
        default="", description="short hash of the scenario's content (tells apart two scenarios sharing an id)"
    )
    bundle_hash: str
    gated_calls: list[GatedCall] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="every command of a gated tool and the approval it used; absent when the scenario gates nothing",
    )
    matches: Matches | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="which ground-truth action gave each command its class; absent when nothing was scored",
    )
    # The judge bundle is held as its canonical JSON text (a long run's bundle is most of its card:
    # as text it is a third of the memory of the objects, and it is hashed, stored and printed as
    # is). ``judge_bundle`` (given as an object or an ``evalkit.trajectory.bundle.Bundle``) parses it on access.
    _bundle: Bundle = PrivateAttr()

    @model_validator(mode="wrap")
    @classmethod
    def _hold_bundle(cls, data: Any, handler: Any) -> ScoreCard:
        if not isinstance(data, dict):
            return handler(data)
        data = dict(data)
        bundle = data.pop("judge_bundle", None)
        card = handler(data)
        if isinstance(bundle, Bundle):
            card._bundle = bundle
        elif isinstance(bundle, dict) and all(type(k) is str for k in bundle):
            text = compact_json(bundle)
            card._bundle = Bundle(text, sha256_hex(text), bundle.get("title"))
        else:
            raise ValueError(f"judge_bundle: expected an object, got {type(bundle).__name__}")
        return card

    @computed_field  # type: ignore[prop-decorator]
    @property
    def judge_bundle(self) -> dict[str, Any]:
        return self._bundle.obj()

    @property
    def bundle(self) -> Bundle:
        """The judge bundle as built: its canonical JSON text (what ``bundle_hash`` hashes), and title."""
        return self._bundle

    def to_json_dict(self, with_bundle: bool = True) -> dict[str, Any]:
        data = self.model_dump(mode="json", by_alias=True, exclude={"judge_bundle"})
        if with_bundle:
            data["judge_bundle"] = self.judge_bundle
        return data


def card_head_json(card: ScoreCard) -> str:
    """The card without ``judge_bundle`` as compact UTF-8 JSON (what the database stores as the
    card), serialised by pydantic-core in one pass."""
    return card.model_dump_json(by_alias=True, exclude={"judge_bundle"})
