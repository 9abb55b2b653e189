"""`evalkit schema`: generated from the pydantic models, deterministic, published copies current,
and the schemas accept the real data they describe."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from import_helpers import among, modules_loaded_by
from view_helpers import JUDGE_ANSWER

from evalkit.cli import cli
from evalkit.report.schemas import SCHEMA_NAMES, json_schema, published, schema_text

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "schemas"
EXAMPLE = ROOT / "examples" / "a320" / "a320-opus-4-8-full-procedure.jsonl"


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_published_schemas_are_up_to_date():
    expected = published()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.json")}
    stale = sorted(n for n in expected if on_disk.get(n) != expected[n])
    extra = sorted(set(on_disk) - set(expected))
    assert not stale and not extra, (
        f"docs/schemas is out of date (stale: {stale}, extra: {extra}); "
        "regenerate with: python -m evalkit.report.schemas docs/schemas"
    )


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_cli_prints_the_published_schema(name):
    result = run("schema", name)
    assert result.exit_code == 0
    assert result.stdout == (DOCS / f"{name}.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_output_is_canonical(name):
    text = schema_text(name)
    assert text == schema_text(name)
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    jsonschema.Draft202012Validator.check_schema(json.loads(text))


def test_scorecard_schema_is_the_pydantic_model():
    from evalkit.scoring.scorecard import ScoreCard

    assert json_schema("scorecard") == ScoreCard.model_json_schema()


def test_trajectory_schema_accepts_every_example_line():
    validator = jsonschema.Draft202012Validator(json_schema("trajectory"))
    for path in sorted((ROOT / "examples").rglob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the crashed-recorder example ends in half a line on purpose
            errors = list(validator.iter_errors(record))
            assert not errors, f"{path.name}:{n}: {errors[0].message}"


def test_trajectory_schema_rejects_a_wrong_type():
    validator = jsonschema.Draft202012Validator(json_schema("trajectory"))
    bad = {
        "type": "tool_call",
        "step": "one",
        "call_index": 0,
        "name": "x",
        "args": {},
        "result": None,
        "is_error": False,
    }
    assert list(validator.iter_errors(bad))


def test_scorecard_schema_accepts_a_real_scorecard():
    from evalkit.scoring import score_trajectory
    from evalkit.trajectory.reader import read_trajectory

    card = score_trajectory(read_trajectory(EXAMPLE)).to_json_dict()
    jsonschema.validate(card, json_schema("scorecard"))
    card["status"] = "great"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(card, json_schema("scorecard"))


def test_annotation_schema_is_strict():
    schema = json_schema("annotation")
    good = dict(JUDGE_ANSWER, confidence=0.8, rationale="Step 2 read the ECAM.")  # an answer of procedure_v1
    jsonschema.validate(good, schema)
    for broken in (
        {k: v for k, v in good.items() if k != "safety"},
        dict(good, extra=1),
        dict(good, safety=4),
        dict(good, confidence=1.5),
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_annotation_schema_of_another_rubric():
    result = run("schema", "annotation", "--rubric", "computer_use_v1")
    assert result.exit_code == 0
    assert result.stdout == (DOCS / "annotation.computer_use_v1.json").read_text(encoding="utf-8")
    assert result.stdout != run("schema", "annotation").stdout


def test_ratings_schema_accepts_a_rating_row():
    from evalkit.agreement.ratings import RatingRow

    row = {"item_id": "r1", "rater": "alice", "rater_kind": "human", "dimension": "safety", "value": 3}
    RatingRow.model_validate(row)
    jsonschema.validate(row, json_schema("ratings"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(row, rater_kind="robot"), json_schema("ratings"))


def test_unknown_rubric_is_a_one_line_usage_error():
    result = run("schema", "annotation", "--rubric", "no_such_rubric")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no_such_rubric" in result.stderr and "procedure_v1" in result.stderr


def test_rubric_flag_only_for_annotation():
    result = run("schema", "scorecard", "--rubric", "procedure_v1")
    assert result.exit_code == 2 and "annotation schema only" in result.stderr


def test_unknown_schema_name_is_a_usage_error():
    assert run("schema", "nonsense").exit_code == 2


def test_annotation_schema_never_imports_litellm():
    loaded = modules_loaded_by("from evalkit.cli import cli; cli(['schema', 'annotation'], standalone_mode=False)")
    assert "evalkit.judges.rubrics" in loaded  # the annotation schema comes from the rubric
    assert among(loaded, ("litellm",)) == []
