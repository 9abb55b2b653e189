"""Rubric files (prompts/*.toml) and the pydantic model of a judge's reply.

A rubric file is TOML, read and validated by evalkit's one config loader (`evalkit.config.files`,
model `RubricFile`: unknown keys and wrong types are one-line errors naming the file and key):
`id`, `version`, `title`, `instructions`, a `[scale]`, `[[dimensions]]` (name, question, `na` =
whether "n/a" is allowed, optional `na_when`, anchors for 3..0), optional `[outcome]` (pass|fail
plus a confidence in [0, 1]), `[rationale]`, and optional `[[computed]]` entries — dimensions of the
human rubric that the scorer computes (efficiency); they are documentation only, never asked of
the judge and never in the schema.
`prompt_layout` chooses how the bundle is shown to the judge (judges/prompt_layout.py:
`compact_v2`, the default, `compact_v1` or `indented_v0`); it is part of every cache key.

The text hash is the sha256 of the file's bytes, so any edit invalidates exactly that rubric's
cache entries. This module imports pydantic only; it never imports litellm.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator

from evalkit.config.files import ConfigError, ConfigModel, read_toml, validate
from evalkit.config.resources import data_dir
from evalkit.judges.prompt_layout import DEFAULT_LAYOUT, LAYOUTS

# Bump when the reply schema or how a reply is parsed changes: it is part of every cache key.
SCHEMA_VERSION = 1
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"outcome", "confidence", "rationale"}


class RubricError(ConfigError):
    """A rubric cannot be found or is malformed; ``str()`` is one line naming the file and the field."""


Anchors = Annotated[dict[str, str], AfterValidator(lambda a: _anchors(a))]


def _anchors(anchors: dict[str, str]) -> dict[str, str]:
    if sorted(anchors) != ["0", "1", "2", "3"]:
        raise ValueError("need exactly the keys 0, 1, 2, 3")
    return anchors


class DimensionSpec(ConfigModel):
    name: str
    question: str
    na: bool = False
    na_when: str | None = None
    anchors: Anchors

    @field_validator("name")
    @classmethod
    def _snake_case(cls, name: str) -> str:
        if not _NAME.match(name) or name in _RESERVED:
            raise ValueError(f"{name!r} is not a snake_case name (reserved: {', '.join(sorted(_RESERVED))})")
        return name


class OutcomeSpec(ConfigModel):
    question: str
    confidence: str = ""


class RationaleSpec(ConfigModel):
    instruction: str = "Justify the scores; cite step numbers."


class RubricFile(ConfigModel):
    """A rubric file as written (prompts/*.toml). ``computed`` entries are documentation only."""

    id: str
    version: int
    title: str | None = None
    instructions: str = ""
    scale: dict[str, str] = {}
    dimensions: list[DimensionSpec] = Field(min_length=1)
    outcome: OutcomeSpec | None = None
    rationale: RationaleSpec = RationaleSpec()
    computed: list[dict[str, Any]] = []
    prompt_layout: Literal[LAYOUTS] = DEFAULT_LAYOUT  # type: ignore[valid-type]

    @field_validator("dimensions")
    @classmethod
    def _unique(cls, dims: list[DimensionSpec]) -> list[DimensionSpec]:
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be unique, got {', '.join(names)}")
        return dims


@dataclass(frozen=True)
class Dimension:
    name: str
    question: str
    na: bool
    na_when: str | None
    anchors: tuple[tuple[str, str], ...]  # ("3", text) ... ("0", text)


@dataclass(frozen=True)
class Rubric:
    id: str
    version: int
    title: str
    instructions: str
    scale: tuple[tuple[str, str], ...]
    dimensions: tuple[Dimension, ...]
    outcome: str | None  # the outcome question, None when the rubric judges no outcome
    confidence: str | None
    rationale: str
    computed: tuple[dict, ...]
    text_hash: str
    path: str
    prompt_layout: str = DEFAULT_LAYOUT  # how the bundle is shown (judges/prompt_layout.py)

    @property
    def identity(self) -> dict:
        return {"id": self.id, "version": self.version, "text_hash": self.text_hash}

    @property
    def fields(self) -> list[str]:
        """Every key of a reply, in prompt order."""
        names = [d.name for d in self.dimensions]
        if self.outcome:
            names += ["outcome", "confidence"]
        return names + ["rationale"]


def rubric_dir() -> Path:
    return data_dir("prompts")


def rubric_kind(path: Path) -> str:
    """A rubric file's ``kind``: ``pairwise`` (judges/pairwise.py) or ``pointwise`` (this module's,
    also when the file cannot be read: loading it then says why)."""
    import tomllib

    try:
        kind = tomllib.loads(path.read_text(encoding="utf-8")).get("kind")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "pointwise"
    return "pairwise" if kind == "pairwise" else "pointwise"


def available_rubrics(kind: str = "pointwise") -> list[str]:
    return sorted(p.stem for p in rubric_dir().glob("*.toml") if rubric_kind(p) == kind)


def load_rubric(name_or_path: str | Path) -> Rubric:
    """Load a rubric by name (a file `prompts/<name>.toml`) or by path."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.is_file()):
        path = rubric_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            known = ", ".join(available_rubrics()) or "none"
            raise RubricError(str(rubric_dir()), None, f"unknown rubric {str(name_or_path)!r} (available: {known})")
    if rubric_kind(path) == "pairwise":
        raise RubricError(str(path), None, "kind: a pairwise rubric, for `evalkit judge --pairwise`")
    return _load(str(path.resolve()))


def _load(path: str) -> Rubric:
    try:
        data, raw = read_toml(path, "rubric")
        spec = validate(RubricFile, raw, path)
    except ConfigError as exc:
        raise RubricError(exc.path, exc.line, exc.message) from None
    return Rubric(
        id=spec.id,
        version=spec.version,
        title=spec.title if spec.title is not None else spec.id,
        instructions=spec.instructions.strip(),
        scale=tuple((k, spec.scale[k]) for k in ("3", "2", "1", "0", "n/a") if k in spec.scale),
        dimensions=tuple(
            Dimension(
                name=d.name,
                question=d.question,
                na=d.na,
                na_when=d.na_when,
                anchors=tuple((k, d.anchors[k]) for k in ("3", "2", "1", "0")),
            )
            for d in spec.dimensions
        ),
        outcome=spec.outcome.question if spec.outcome is not None else None,
        confidence=spec.outcome.confidence if spec.outcome is not None else None,
        rationale=spec.rationale.instruction,
        computed=tuple(spec.computed),
        text_hash=hashlib.sha256(data).hexdigest(),
        path=path,
        prompt_layout=spec.prompt_layout,
    )


def _reject_bool(value: Any) -> Any:
    # JSON true/false would otherwise validate as 1/0 (bool is an int): fail closed.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a score")
    return value


_MODELS: dict[tuple[str, str], type[BaseModel]] = {}


def annotation_model(rubric: Rubric) -> type[BaseModel]:
    """The pydantic model of a valid reply: every field required, nothing extra, no defaults."""
    own = getattr(rubric, "reply_model", None)
    if callable(own):  # a rubric with its own reply (a pairwise rubric: judges/pairwise.py)
        return own()
    cached = _MODELS.get((rubric.path, rubric.text_hash))
    if cached is not None:
        return cached
    fields: dict[str, Any] = {}
    for dim in rubric.dimensions:
        kind = Literal[0, 1, 2, 3, "n/a"] if dim.na else Literal[0, 1, 2, 3]
        fields[dim.name] = (Annotated[kind, BeforeValidator(_reject_bool)], Field(description=dim.question))
    if rubric.outcome:
        fields["outcome"] = (Literal["pass", "fail"], Field(description=rubric.outcome))
        fields["confidence"] = (
            Annotated[float, BeforeValidator(_reject_bool)],
            Field(ge=0.0, le=1.0, description=rubric.confidence or "probability"),
        )
    fields["rationale"] = (str, Field(min_length=1, description=rubric.rationale))
    name = "".join(part.capitalize() for part in rubric.id.split("_")) + "Annotation"
    model = create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
    _MODELS[(rubric.path, rubric.text_hash)] = model
    return model


def response_format(rubric: Rubric) -> dict:
    """OpenAI-style `response_format` carrying the reply's JSON Schema (strict structured output)."""
    cached = _FORMATS.get((rubric.path, rubric.text_hash))
    if cached is None:
        cached = _FORMATS[(rubric.path, rubric.text_hash)] = _response_format(rubric)
    return json.loads(json.dumps(cached))  # a copy: callers may keep it in stored requests


_FORMATS: dict[tuple[str, str], dict] = {}


def _response_format(rubric: Rubric) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": re.sub(r"[^A-Za-z0-9_-]", "_", rubric.id),
            "schema": annotation_model(rubric).model_json_schema(),
            "strict": True,
        },
    }


def schema_hash(rubric: Rubric) -> str:
    schema = json.dumps(response_format(rubric), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{SCHEMA_VERSION}:{schema}".encode()).hexdigest()
