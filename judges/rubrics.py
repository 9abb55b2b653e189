"""Rubric files (prompts/*.toml) and the pydantic model of a judge's reply.

A rubric file is TOML (stdlib `tomllib`): `id`, `version`, `title`, `instructions`, a `[scale]`,
`[[dimensions]]` (name, question, `na` = whether "n/a" is allowed, optional `na_when`, anchors
for 3..0), optional `[outcome]` (pass|fail plus a confidence in [0, 1]), `[rationale]`, and
optional `[[computed]]` entries — dimensions of the human rubric that the scorer computes
(efficiency); they are documentation only, never asked of the judge and never in the schema.

The text hash is the sha256 of the file's bytes, so any edit invalidates exactly that rubric's
cache entries. This module imports pydantic only; it never imports litellm.
"""
from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from evalkit.resources import data_dir

# Bump when the reply schema or how a reply is parsed changes: it is part of every cache key.
SCHEMA_VERSION = 1
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"outcome", "confidence", "rationale"}


def toml_error(path: str, exc: Exception) -> str:
    """`path:line: message` for a TOML error (tomllib puts the position in the message)."""
    text = str(exc)
    where = re.search(r" \(at line (\d+), column \d+\)$", text)
    if where:
        return f"{path}:{where.group(1)}: {text[: where.start()]}"
    return f"{path}: {text}"


class RubricError(ValueError):
    """A rubric cannot be found or is malformed; the message names the file and the field."""


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
    outcome: str | None           # the outcome question, None when the rubric judges no outcome
    confidence: str | None
    rationale: str
    computed: tuple[dict, ...]
    text_hash: str
    path: str

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


def available_rubrics() -> list[str]:
    return sorted(p.stem for p in rubric_dir().glob("*.toml"))


def load_rubric(name_or_path: str | Path) -> Rubric:
    """Load a rubric by name (a file `prompts/<name>.toml`) or by path."""
    path = Path(name_or_path)
    if not (path.suffix == ".toml" and path.is_file()):
        path = rubric_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            known = ", ".join(available_rubrics()) or "none"
            raise RubricError(f"unknown rubric {str(name_or_path)!r} (available: {known})")
    return _load(str(path.resolve()))


def _load(path: str) -> Rubric:
    data = Path(path).read_bytes()
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RubricError(toml_error(path, exc)) from None

    def need(table: dict, key: str, kind: type, where: str) -> Any:
        if key not in table:
            raise RubricError(f"{path}: {where}{key}: missing")
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise RubricError(f"{path}: {where}{key}: expected {kind.__name__}, got {value!r}")
        return value

    rubric_id = need(raw, "id", str, "")
    version = need(raw, "version", int, "")
    dims_raw = need(raw, "dimensions", list, "")
    if not dims_raw:
        raise RubricError(f"{path}: dimensions: at least one dimension is required")
    dims: list[Dimension] = []
    for i, d in enumerate(dims_raw):
        where = f"dimensions[{i}]."
        name = need(d, "name", str, where)
        if not _NAME.match(name) or name in _RESERVED or name in {x.name for x in dims}:
            raise RubricError(f"{path}: {where}name: {name!r} is not a unique snake_case name "
                              f"(reserved: {', '.join(sorted(_RESERVED))})")
        anchors = need(d, "anchors", dict, where)
        if sorted(anchors) != ["0", "1", "2", "3"]:
            raise RubricError(f"{path}: {where}anchors: need exactly the keys 0, 1, 2, 3")
        dims.append(Dimension(
            name=name, question=need(d, "question", str, where), na=bool(d.get("na", False)),
            na_when=d.get("na_when"),
            anchors=tuple((k, str(anchors[k])) for k in ("3", "2", "1", "0")),
        ))
    outcome = raw.get("outcome")
    scale = raw.get("scale", {})
    return Rubric(
        id=rubric_id, version=version, title=str(raw.get("title", rubric_id)),
        instructions=str(raw.get("instructions", "")).strip(),
        scale=tuple((k, str(scale[k])) for k in ("3", "2", "1", "0", "n/a") if k in scale),
        dimensions=tuple(dims),
        outcome=need(outcome, "question", str, "outcome.") if outcome is not None else None,
        confidence=str(outcome.get("confidence", "")) if outcome is not None else None,
        rationale=str(raw.get("rationale", {}).get("instruction", "Justify the scores; cite step numbers.")),
        computed=tuple(raw.get("computed", [])),
        text_hash=hashlib.sha256(data).hexdigest(),
        path=path,
    )


def _reject_bool(value: Any) -> Any:
    # JSON true/false would otherwise validate as 1/0 (bool is an int): fail closed.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a score")
    return value


_MODELS: dict[tuple[str, str], type[BaseModel]] = {}


def annotation_model(rubric: Rubric) -> type[BaseModel]:
    """The pydantic model of a valid reply: every field required, nothing extra, no defaults."""
    cached = _MODELS.get((rubric.path, rubric.text_hash))
    if cached is not None:
        return cached
    fields: dict[str, Any] = {}
    for dim in rubric.dimensions:
        kind = Literal[0, 1, 2, 3, "n/a"] if dim.na else Literal[0, 1, 2, 3]
        fields[dim.name] = (Annotated[kind, BeforeValidator(_reject_bool)], Field(description=dim.question))
    if rubric.outcome:
        fields["outcome"] = (Literal["pass", "fail"], Field(description=rubric.outcome))
        fields["confidence"] = (Annotated[float, BeforeValidator(_reject_bool)],
                                Field(ge=0.0, le=1.0, description=rubric.confidence or "probability"))
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
        "json_schema": {"name": re.sub(r"[^A-Za-z0-9_-]", "_", rubric.id),
                        "schema": annotation_model(rubric).model_json_schema(), "strict": True},
    }


def schema_hash(rubric: Rubric) -> str:
    schema = json.dumps(response_format(rubric), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{SCHEMA_VERSION}:{schema}".encode()).hexdigest()
