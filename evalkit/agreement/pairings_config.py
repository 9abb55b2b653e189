"""Audit configuration: pairings of a judge dimension with a mechanical ScoreCard signal.

A pairing puts both sides on one scale, ordered by credit (least first), through declarative
cases (see configs/pairings.toml for the grammar). Nothing here needs code to add a pairing.

Where the configuration comes from, and how a user's file is merged onto the shipped
``configs/pairings.toml`` (pairings by ``name``; ``replace_defaults = true`` drops the shipped ones),
is the rule every configuration follows (:mod:`evalkit.config.files`); a pairing with
``enabled = false`` is left out after the merge, so a user can switch off a shipped one.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from evalkit.config.files import ConfigModel, find_user_config, load_layered, load_toml, validate
from evalkit.config.resources import data_dir
from evalkit.errors import InputError

LEVELS = ("nominal", "ordinal", "interval")
_OPS = ("==", "!=", ">=", "<=", ">", "<")


def default_config_path() -> Path:
    return data_dir("configs") / "pairings.toml"


# ---------------------------------------------------------------------------------------------
# conditions and cases


@dataclass(frozen=True)
class Condition:
    """One alternative: ``null``, ``not null`` or ``<op> <literal>``."""

    op: str  # "null", "not null" or one of _OPS
    literal: Any = None

    def holds(self, value: Any) -> bool:
        if self.op == "null":
            return value is None
        if self.op == "not null":
            return value is not None
        if value is None:
            return False
        if self.op in ("==", "!="):
            equal = _same(value, self.literal)
            return equal if self.op == "==" else not equal
        if not (_is_number(value) and _is_number(self.literal)):
            return False  # order comparisons are defined on numbers only
        return {
            ">=": value >= self.literal,
            "<=": value <= self.literal,
            ">": value > self.literal,
            "<": value < self.literal,
        }[self.op]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def _same(a: Any, b: Any) -> bool:
    # true must not equal 1: a boolean signal compared with a number is a configuration mistake
    # we would rather see as "unmapped" than silently match.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def parse_condition(raw: Any, where: str, path: str) -> tuple[Condition, ...]:
    """A TOML value → alternatives (any one holding satisfies the condition)."""
    if not isinstance(raw, str):
        if isinstance(raw, (bool, int, float)):
            return (Condition("==", raw),)
        raise InputError(path, None, f"{where}: condition must be a string, number or boolean, got {raw!r}")
    alts = []
    for part in raw.split(" or "):
        text = part.strip()
        if text in ("null", "not null"):
            alts.append(Condition(text))
            continue
        m = re.fullmatch(r"(==|!=|>=|<=|>|<)\s*(.+)", text)
        if not m:
            raise InputError(
                path,
                None,
                f"{where}: cannot read condition {text!r} "
                "(want null, not null or '<op> <value>' with op in == != >= <= > <)",
            )
        literal = _literal(m.group(2).strip())
        if m.group(1) not in ("==", "!=") and not _is_number(literal):
            raise InputError(
                path, None, f"{where}: cannot read condition {text!r} ({m.group(1)} compares numbers, got {literal!r})"
            )
        alts.append(Condition(m.group(1), literal))
    return tuple(alts)


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare word such as n/a or pass


def lookup(doc: Any, dotted: str | tuple[str, ...]) -> Any:
    """Follow a dotted path into nested dicts; a missing key gives None (treated like null)."""
    cur = doc
    for key in dotted.split(".") if isinstance(dotted, str) else dotted:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


@dataclass(frozen=True)
class Case:
    label: Any
    when: tuple[tuple[str, tuple[Condition, ...]], ...]

    def matches(self, doc: Any) -> bool:
        for sig, alts in self.when:
            value = lookup(doc, _split(sig))
            if not any(c.holds(value) for c in alts):
                return False
        return True


_SPLIT: dict[str, tuple[str, ...]] = {}


def _split(path: str) -> tuple[str, ...]:
    if path not in _SPLIT:
        _SPLIT[path] = tuple(path.split("."))
    return _SPLIT[path]


# ---------------------------------------------------------------------------------------------
# pairings


@dataclass(frozen=True)
class Pairing:
    name: str
    rubric: str
    judge_dimension: str
    level: str
    scale: tuple[Any, ...]
    judge_cases: tuple[Case, ...]
    mechanical_cases: tuple[Case, ...]
    lenient_rank: int | None = None
    confidence: bool = False
    description: str = ""
    _judge_memo: dict = field(default_factory=dict, compare=False, repr=False)

    def judge_label(self, value: Any) -> Any:
        """The judge's value on the pairing scale, or None when it maps to nothing."""
        key = (type(value), value) if isinstance(value, (str, int, float, bool, type(None))) else None
        if key is not None and key in self._judge_memo:
            return self._judge_memo[key]
        if not self.judge_cases:
            label = value if _in_scale(value, self.scale) else None
        else:
            label = _first(self.judge_cases, {"value": value})
        if key is not None:
            self._judge_memo[key] = label  # a judge uses few distinct values: map each once
        return label

    def mechanical_label(self, card: dict[str, Any]) -> Any:
        """The mechanical label of a ScoreCard JSON dict, or None when no case matches."""
        return _first(self.mechanical_cases, card)

    def index(self, label: Any) -> int:
        for i, s in enumerate(self.scale):
            if _same(s, label):
                return i
        raise ValueError(f"{label!r} not on the scale of pairing {self.name}")


def _first(cases: tuple[Case, ...], doc: Any) -> Any:
    for case in cases:
        if case.matches(doc):
            return case.label
    return None


def _in_scale(value: Any, scale: tuple[Any, ...]) -> bool:
    return value is not None and any(_same(value, s) for s in scale)


@dataclass(frozen=True)
class DimensionSpec:
    level: str | None = None
    scale: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class AuditConfig:
    """The audit's settings as the statistics read them: the merged file (:class:`PairingsFile`,
    where every default and bound is stated) with its pairings compiled."""

    path: str
    pairings: tuple[Pairing, ...]
    escalation_threshold: float
    ece_bins: int
    ci: float
    epsilon: float
    q: float
    min_humans: int
    alt_min_items: int
    alt_metric: str  # "auto": accuracy for nominal labels, neg_rmse for numbers (the Alt-Test authors' choice)
    moved_by: float
    max_moved: int
    dimensions: dict[str, DimensionSpec]

    def pairings_for(self, rubric: str | None = None) -> tuple[Pairing, ...]:
        return tuple(p for p in self.pairings if rubric is None or p.rubric == rubric)


# ---------------------------------------------------------------------------------------------
# loading


def _scalar(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"must be a string or a number, got {value!r}")
    return value


def _condition_value(value: Any) -> Any:
    if not isinstance(value, (str, int, float, bool)):
        raise ValueError(f"a condition is a string, number or boolean, got {value!r}")
    return value


Label = Annotated[Any, AfterValidator(_scalar)]
ConditionValue = Annotated[Any, AfterValidator(_condition_value)]
Level = Literal["nominal", "ordinal", "interval"]


class CaseSpec(ConfigModel):
    """One ``[[pairing.judge]]`` / ``[[pairing.mechanical]]`` case as written in the file."""

    label: Label
    when: dict[str, ConditionValue] = {}


class PairingSpec(ConfigModel):
    """One ``[[pairing]]`` as written. Keys are optional here because a user file may only switch
    a default pairing off (``name`` + ``enabled = false``); what a pairing needs is checked after
    merging (:func:`_build_pairing`)."""

    name: str | None = None
    rubric: str | None = None
    judge_dimension: str | None = None
    level: str = "nominal"  # checked, with the pairing's name, in _build_pairing
    scale: list[Label] | None = None
    lenient_rank: int | None = None
    confidence: bool = False
    description: str = ""
    enabled: bool = True
    judge: list[CaseSpec] = []
    mechanical: list[CaseSpec] | None = None


class CalibrationSpec(ConfigModel):
    escalation_threshold: float = Field(0.7, ge=0.0, le=1.0)
    ece_bins: int = Field(10, ge=1, le=1000)


class BootstrapSpec(ConfigModel):
    ci: float = Field(0.95, ge=0.5, le=0.999999)


class AltTestSpec(ConfigModel):
    epsilon: float = Field(0.2, ge=0.0, le=1.0)
    q: float = Field(0.05, ge=1e-9, le=1.0)
    min_humans: int = Field(3, ge=3)
    min_items: int = Field(30, ge=2)
    metric: Literal["auto", "accuracy", "neg_rmse", "neg_abs_error"] = "auto"


class DriftSpec(ConfigModel):
    moved_by: float = Field(2, ge=0)
    max_moved: int = Field(1, ge=0)


class DimensionSpecModel(ConfigModel):
    level: Level | None = None
    scale: list[Label] | None = Field(None, min_length=1)


class PairingsFile(ConfigModel):
    """The layout of configs/pairings.toml (and of a user's pairings file): every key, its default
    and its bounds, stated once. A file is checked against it as read; the merged result again,
    then compiled (:func:`_build`)."""

    replace_defaults: bool = False
    calibration: CalibrationSpec = CalibrationSpec()
    bootstrap: BootstrapSpec = BootstrapSpec()
    alt_test: AltTestSpec = AltTestSpec()
    drift: DriftSpec = DriftSpec()
    dimensions: dict[str, DimensionSpecModel] = {}
    pairing: list[PairingSpec] = []


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's TOML, checked against :class:`PairingsFile` (unknown keys and wrong types are
    errors naming the key path); the raw dict is returned so a user file merges onto the defaults
    key by key."""
    raw = load_toml(path, "config")
    validate(PairingsFile, raw, path)
    return raw


def resolve_config_path(config: str | Path | None) -> Path | None:
    """The user file in effect by the discovery rule (:func:`evalkit.config.files.find_user_config`)."""
    return find_user_config("pairings", config)


def load_audit_config(config: str | Path | None = None) -> AuditConfig:
    """Load the shipped defaults and merge the user's file (explicit or found by the discovery rule)."""
    merged, source = load_layered("pairings", config, read=_read_toml, shipped=default_config_path())
    merged = dict(merged)
    merged["pairing"] = [p for p in merged.get("pairing", []) if p.get("enabled", True)]
    return _build(merged, source)


def _build(doc: dict[str, Any], path: str) -> AuditConfig:
    raw_pairings = doc.get("pairing", [])
    model = validate(PairingsFile, {**doc, "pairing": []}, path)  # the pairings: checked by name below
    pairings = []
    seen: set[str] = set()
    if not isinstance(raw_pairings, list):
        raise InputError(path, None, "pairing: must be an array of tables ([[pairing]])")
    for i, raw in enumerate(raw_pairings):
        p = _build_pairing(raw, f"pairing[{i}]", path)
        if p.name in seen:
            raise InputError(path, None, f"pairing[{i}].name: duplicate pairing name {p.name!r}")
        seen.add(p.name)
        pairings.append(p)
    return AuditConfig(
        path=path,
        pairings=tuple(pairings),
        escalation_threshold=model.calibration.escalation_threshold,
        ece_bins=model.calibration.ece_bins,
        ci=model.bootstrap.ci,
        epsilon=model.alt_test.epsilon,
        q=model.alt_test.q,
        min_humans=model.alt_test.min_humans,
        alt_min_items=model.alt_test.min_items,
        alt_metric=model.alt_test.metric,
        moved_by=model.drift.moved_by,
        max_moved=model.drift.max_moved,
        dimensions={
            name: DimensionSpec(spec.level, tuple(spec.scale) if spec.scale is not None else None)
            for name, spec in sorted(model.dimensions.items())
        },
    )


def _build_pairing(raw: Any, where: str, path: str) -> Pairing:
    if not isinstance(raw, dict):
        raise InputError(path, None, f"{where}: must be a table")

    def text(key: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(path, None, f"{where}.{key}: required, a non-empty string")
        return value

    name = text("name")
    where = f"pairing {name!r}"
    rubric = text("rubric")
    dimension = text("judge_dimension")
    level = raw.get("level", "nominal")
    if level not in LEVELS:
        raise InputError(path, None, f"{where}.level: must be one of {', '.join(LEVELS)}, got {level!r}")
    scale = raw.get("scale")
    if not isinstance(scale, list) or len(scale) < 2:
        raise InputError(path, None, f"{where}.scale: required, an array of at least two labels (least credit first)")
    for i, a in enumerate(scale):
        if not isinstance(a, (str, int, float)) or any(_same(a, b) for b in scale[:i]):
            raise InputError(path, None, f"{where}.scale: labels must be distinct strings or numbers, got {a!r}")
    if level != "nominal" and not all(_is_number(s) for s in scale):
        raise InputError(path, None, f"{where}.scale: a {level} scale needs numeric labels")
    rank = raw.get("lenient_rank")
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool)):
        raise InputError(path, None, f"{where}.lenient_rank: must be an integer")
    conf = raw.get("confidence", False)
    if not isinstance(conf, bool):
        raise InputError(path, None, f"{where}.confidence: must be true or false")
    judge_cases = _build_cases(raw.get("judge", []), tuple(scale), f"{where}.judge", path, judge=True)
    mech_cases = _build_cases(raw.get("mechanical"), tuple(scale), f"{where}.mechanical", path, judge=False)
    if not mech_cases:
        raise InputError(path, None, f"{where}.mechanical: at least one case is required")
    return Pairing(
        name=name,
        rubric=rubric,
        judge_dimension=dimension,
        level=level,
        scale=tuple(scale),
        judge_cases=judge_cases,
        mechanical_cases=mech_cases,
        lenient_rank=rank,
        confidence=conf,
        description=str(raw.get("description", "")),
    )


def _build_cases(raw: Any, scale: tuple[Any, ...], where: str, path: str, judge: bool) -> tuple[Case, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(path, None, f"{where}: must be an array of tables")
    cases = []
    for i, c in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(c, dict) or "label" not in c:
            raise InputError(path, None, f"{w}: a case needs a label")
        if not _in_scale(c["label"], scale):
            raise InputError(path, None, f"{w}.label: {c['label']!r} is not on the scale {list(scale)}")
        when = c.get("when", {})
        if not isinstance(when, dict):
            raise InputError(path, None, f"{w}.when: must be a table of signal = condition")
        conds = []
        for sig, cond in sorted(when.items()):
            if judge and sig not in ("value",):
                raise InputError(path, None, f"{w}.when: the judge side has one signal, 'value' (got {sig!r})")
            conds.append((sig, parse_condition(cond, f"{w}.when.{sig}", path)))
        cases.append(Case(label=c["label"], when=tuple(conds)))
    return tuple(cases)


def describe(p: Pairing) -> dict[str, Any]:
    """A JSON-friendly description of a pairing's mapping (for the report's `pairings` entries)."""

    def cases(cs: tuple[Case, ...]) -> list[dict[str, Any]]:
        out = []
        for c in cs:
            when = {}
            for sig, alts in c.when:
                when[sig] = " or ".join(
                    a.op if a.op in ("null", "not null") else f"{a.op} {json.dumps(a.literal)}" for a in alts
                )
            out.append({"label": c.label, "when": when})
        return out

    return {
        "judge": cases(p.judge_cases) if p.judge_cases else "value as is",
        "mechanical": cases(p.mechanical_cases),
    }
