"""prompts/tool_use_v1.toml: the generic rubric for tool-using agents (tools, arguments, approvals,
policies) loads like the shipped rubrics, and the judge's dry run on the support examples uses it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from judge_fixtures import make_bundle

from evalkit.cli import cli
from evalkit.judges import registry
from evalkit.judges.prompt import render_messages
from evalkit.judges.rubrics import available_rubrics, load_rubric, response_format

SUPPORT = Path(__file__).resolve().parent.parent / "examples" / "support"
DIMS = ["information_gathering", "tool_selection", "arguments", "approvals", "policy", "error_recovery"]


def test_tool_use_v1_loads_with_its_dimensions_and_the_cockpit_rubric_stays():
    assert {"tool_use_v1", "procedure_v1"} <= set(available_rubrics())
    rubric = load_rubric("tool_use_v1")
    assert (rubric.id, rubric.version) == ("tool_use_v1", 1)
    assert [d.name for d in rubric.dimensions] == DIMS
    assert {d.name: d.na for d in rubric.dimensions} == {
        "information_gathering": True,
        "tool_selection": False,
        "arguments": True,
        "approvals": True,
        "policy": False,
        "error_recovery": True,
    }
    assert rubric.fields == DIMS + ["outcome", "confidence", "rationale"]
    schema = response_format(rubric)["json_schema"]["schema"]
    assert schema["required"] == rubric.fields and schema["additionalProperties"] is False
    assert load_rubric("procedure_v1").dimensions[0].name == "situation_assessment"


def test_tool_use_v1_speaks_of_tools_arguments_approvals_and_policies_not_cockpits():
    system = render_messages(make_bundle(0), load_rubric("tool_use_v1"))[0]["content"].lower()
    for word in ("tool", "argument", "approval", "polic"):
        assert word in system, word
    for cockpit in ("control", "ecam", "cockpit", "pilot"):
        assert cockpit not in system, cockpit


class _Silent:
    """A plugin judge: the dry run needs a judge but sends nothing (and litellm's import takes seconds)."""

    def __init__(self, model, **_):
        self.model, self.params = f"silent:{model}", {}

    async def annotate(self, bundle, rubric):
        raise AssertionError("a dry run never asks the judge")


def test_the_judge_dry_run_on_the_support_examples_uses_tool_use_v1(tmp_path, monkeypatch):
    monkeypatch.setitem(registry._REGISTERED, "silent", _Silent)
    res = CliRunner().invoke(
        cli,
        [
            "judge",
            str(SUPPORT),
            "--model",
            "silent:judge-x",
            "--rubric",
            "tool_use_v1",
            "--dry-run",
            "--db",
            str(tmp_path / "j.db"),
        ],
    )
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "would send: 6" in out and "skipped (not judged): 1 with status incomplete" in out
    system = out[out.index("--- system ---") : out.index("--- user ---")]
    assert "does its work by calling tools" in system and "### approvals" in system
    assert "situation_assessment" not in system  # not the cockpit rubric
    assert '"gated_actions"' in out[out.index("--- user ---") :]  # the run data the judge grades
