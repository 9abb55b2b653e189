"""JSON Schemas of evalkit's formats, generated from their pydantic models.

``trajectory`` (one JSONL line of a trajectory, :func:`evalkit.trajectory.records.trajectory_json_schema`),
``scorecard`` (:class:`evalkit.scoring.scorecard.ScoreCard`), ``annotation`` (a judge's reply under a
rubric, :func:`evalkit.judges.rubrics.annotation_model`; ``procedure_v1`` unless another rubric is named)
``ratings`` (one imported rating, :class:`evalkit.agreement.ratings.RatingRow`) and ``aggregate``
(``evalkit score --aggregate --format json``, :mod:`evalkit.aggregate.schema`).

Text output is canonical (sorted keys, two-space indent, trailing newline), so the copies
published in docs/schemas/ can be compared byte for byte; regenerate them with
``python -m evalkit.report.schemas docs/schemas``. The annotation schema is built from
``evalkit.judges.rubrics``, which imports pydantic only (never litellm).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError

SCHEMA_NAMES = ("trajectory", "scorecard", "annotation", "ratings", "aggregate", "scenario")
DEFAULT_RUBRIC = "procedure_v1"


class SchemaError(EvalkitError, ValueError):
    """An unknown schema or rubric name; the message lists the known ones."""


def json_schema(name: str, rubric: str | None = None) -> dict[str, Any]:
    """The JSON Schema of ``name`` as a dict."""
    if name == "trajectory":
        from evalkit.trajectory.records import trajectory_json_schema

        return trajectory_json_schema()
    if name == "scorecard":
        from evalkit.scoring.scorecard import ScoreCard

        return ScoreCard.model_json_schema()
    if name == "aggregate":
        from evalkit.aggregate.schema import aggregate_json_schema

        return aggregate_json_schema()
    if name == "scenario":
        from evalkit.trajectory.scenario import scenario_json_schema

        return scenario_json_schema()
    if name == "ratings":
        from evalkit.agreement.ratings import RatingRow

        return RatingRow.model_json_schema()
    if name == "annotation":
        from evalkit.judges.rubrics import RubricError, annotation_model, load_rubric

        try:
            loaded = load_rubric(rubric or DEFAULT_RUBRIC)
        except RubricError as exc:
            raise SchemaError(str(exc)) from None
        schema = annotation_model(loaded).model_json_schema()
        schema["description"] = (
            f"A judge's reply under rubric {loaded.id} version {loaded.version}: every field required, "
            "no other field allowed."
        )
        return schema
    raise SchemaError(f"unknown schema {name!r} (known: {', '.join(SCHEMA_NAMES)})")


def schema_text(name: str, rubric: str | None = None) -> str:
    """Canonical JSON text of the schema (what ``evalkit schema NAME`` prints)."""
    return json.dumps(json_schema(name, rubric), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def published() -> dict[str, str]:
    """File name -> text of every schema published in docs/schemas/: the four formats (the
    annotation one for the default rubric) plus one annotation schema per shipped rubric."""
    from evalkit.judges.rubrics import available_rubrics

    files = {f"{name}.json": schema_text(name) for name in SCHEMA_NAMES}
    for rubric in available_rubrics():
        files[f"annotation.{rubric}.json"] = schema_text("annotation", rubric)
    return files


def write_published(directory: str | Path) -> list[Path]:
    """(Re)write the published copies; removes stale ``*.json`` files there. Returns the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = published()
    for stale in directory.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    written = []
    for fname, text in sorted(files.items()):
        path = directory / fname
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m evalkit.report.schemas docs/schemas
    for p in write_published(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas"):
        print(p)
