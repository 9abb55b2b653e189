"""`evalkit schema scenario` and docs/scenarios.md: the documented support scenario is valid, a typo is not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema

from evalkit.report.schemas import json_schema
from evalkit.trajectory.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent


def doc_scenario() -> dict:
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    return json.loads(re.search(r"```json\n(\{.*?\})\n```", text, re.S).group(1))


def test_the_documented_support_scenario_is_valid_for_the_model_and_the_schema():
    raw = doc_scenario()
    sc = Scenario.model_validate(raw)
    assert sc.ground_truth.gated_actions[0].approval.tool == "request_approval"
    jsonschema.Draft202012Validator(json_schema("scenario")).validate(raw)


def test_the_schema_rejects_an_unknown_ground_truth_key_and_accepts_x_keys():
    validator = jsonschema.Draft202012Validator(json_schema("scenario"))
    raw = doc_scenario()
    raw["ground_truth"]["x_owner"] = "team-a"
    validator.validate(raw)
    raw["ground_truth"]["forbiden_actions"] = []
    assert not validator.is_valid(raw)
