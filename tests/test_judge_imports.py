"""Import hygiene and plugins, each checked in a fresh interpreter (no litellm already loaded)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SCORE_PROBE = """
import json, sys
from click.testing import CliRunner
import evalkit.cli
import evalkit.commands.judge  # registered, but its heavy imports wait inside the command
result = CliRunner().invoke(evalkit.cli.cli, ["score", sys.argv[1], "--no-db", "--format", "jsonl"])
assert result.exit_code in (0, 1), result.output
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"litellm", "openai", "tenacity"} or m.startswith("evalkit.judges"))))
"""

JUDGE_LIGHT_PROBE = """
import json, sys
from click.testing import CliRunner
import evalkit.judges, evalkit.judges.api, evalkit.judges.rubrics, evalkit.judges.store, evalkit.judges.runner, evalkit.judges.render, evalkit.judges.prompt, evalkit.judges.probe_runner, evalkit.judges.context, evalkit.judges.output_modes, evalkit.judges.concurrency
import evalkit.cli
evalkit.judges.rubrics.annotation_model(evalkit.judges.rubrics.load_rubric("procedure_v1"))
for args in (["judge", "--help"], ["probe", "--help"], ["cache", "stats", "--db", sys.argv[1]]):
    result = CliRunner().invoke(evalkit.cli.cli, args)
    assert result.exit_code == 0, result.output
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"litellm", "openai"})))
"""

PLUGIN_MODULE = '''
import json
from evalkit.judges.protocol import Annotation

class EchoJudge:
    """Gives every dimension a 2; a stand-in for a third-party judge."""
    def __init__(self, model, **options):
        self.model = "echojudge:" + model
        self.params = {"flavour": model}

    async def annotate(self, bundle, rubric):
        values = {d.name: 2 for d in rubric.dimensions}
        if rubric.outcome:
            values.update(outcome="pass", confidence=0.5)
        values["rationale"] = "step 1 (echo)"
        return Annotation(status="ok", values=values, raw_response=json.dumps(values), request={"echo": True},
                          prompt_tokens=0, completion_tokens=0, cost_usd=0.0, latency_ms=1.0, attempts=1)
'''

PLUGIN_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[2])
sys.path.insert(0, sys.argv[3])
from judge_fixtures import make_cards
from evalkit.judges.api import judge_cards
from evalkit.judges.registry import plugin_names
first = judge_cards(make_cards(3), ["echojudge:v1"], db=sys.argv[1])
second = judge_cards(make_cards(3), ["echojudge:v1"], db=sys.argv[1])
print(json.dumps({"plugins": plugin_names(), "ok": first.summary.ok, "hits": second.summary.cache_hits,
                  "models": sorted({a["judge_model"] for a in first.annotations}),
                  "values": first.annotations[0]["values"],
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] == "litellm")}))
"""


def probe(code: str, *args: str) -> list | dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_score_path_never_imports_litellm():
    assert probe(SCORE_PROBE, str(EXAMPLES)) == []


def test_judges_package_and_judge_and_probe_command_help_do_not_import_litellm(tmp_path):
    from evalkit.judges.store import JudgeStore

    JudgeStore(tmp_path / "empty.db").close()
    assert probe(JUDGE_LIGHT_PROBE, str(tmp_path / "empty.db")) == []


def test_plugin_judge_from_entry_point_group(tmp_path):
    site = tmp_path / "site"
    (site / "echojudge_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "echojudge_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: echojudge-plugin\nVersion: 0.1\n"
    )
    (site / "echojudge_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[evalkit.judges]\nechojudge = echojudge_plugin:EchoJudge\n"
    )
    (site / "echojudge_plugin.py").write_text(PLUGIN_MODULE)
    out = probe(PLUGIN_PROBE, str(tmp_path / "p.db"), str(site), str(Path(__file__).parent))
    assert "echojudge" in out["plugins"]
    assert out["ok"] == 3 and out["hits"] == 3 and out["models"] == ["echojudge:v1"]
    assert out["values"]["safety"] == 2 and out["values"]["outcome"] == "pass"
    assert out["heavy"] == []  # a plugin judge never pays for litellm


def test_model_strings_with_colons_still_go_to_litellm():
    pytest.importorskip("litellm")
    from evalkit.judges.registry import make_judge

    judge = make_judge("ollama/llama3:8b")
    assert judge.model == "ollama/llama3:8b" and type(judge).__name__ == "LiteLLMJudge"
    assert make_judge("litellm:openai/gpt-4o-mini").model == "openai/gpt-4o-mini"
