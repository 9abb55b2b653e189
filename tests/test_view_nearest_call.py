"""A missing required action says which call came closest and on which keys it differs, in the
view's checklist (page and JSON, once revealed) and the report's drill-down: "instance_id is
"i-0a3 ", not "i-0a3"" tells the user a trailing space cost the run its coverage."""

from __future__ import annotations

import json

import view_helpers as vh
from click.testing import CliRunner
from scoring_helpers import score_records

from evalkit.cli import cli
from evalkit.trajectory.builders import call, trajectory, write_jsonl
from evalkit.view.drilldown import checklist

SCENARIO = {
    "id": "retire",
    "command_tools": ["snapshot_volume", "terminate_instance", "notify_owner"],
    "ground_truth": {
        "procedure": [
            {
                "block": "retire",
                "ordered": True,
                "actions": [
                    {"tool": "snapshot_volume", "args": {"volume_id": "vol-77"}},
                    {"tool": "terminate_instance", "args": {"instance_id": "i-0a3"}},
                    {
                        "tool": "notify_owner",
                        "args": {"owner": "dana", "template": "retired"},
                        "args_match": {"mode": "contains"},
                    },
                ],
            }
        ]
    },
    "success": {"final_state": []},
}
SURFACE = ["snapshot_volume", "terminate_instance", "notify_owner"]


def missing_rows(calls):
    card = score_records(trajectory(SCENARIO, calls, run_id="r", tool_surface=SURFACE))
    data = json.loads(card.model_dump_json(by_alias=True))
    cl = checklist(data, card.judge_bundle)
    return {a["action"].split("(")[0]: a["nearest"] for b in cl["blocks"] for a in b["actions"] if a["missing"]}


def test_a_trailing_space_is_named_as_the_difference():
    near = missing_rows(
        [call("snapshot_volume", {"volume_id": "vol-77"}), call("terminate_instance", {"instance_id": "i-0a3 "})]
    )
    assert list(near) == ["terminate_instance", "notify_owner"]
    assert near["terminate_instance"]["command"]["index"] == 1
    assert near["terminate_instance"]["text"] == 'instance_id is "i-0a3 ", not "i-0a3"'
    assert near["notify_owner"] is None  # no call of the tool at all


def test_an_extra_key_under_exact_and_an_absent_key_under_contains_are_named():
    near = missing_rows(
        [
            call("snapshot_volume", {"volume_id": "vol-77", "tag": "pre-retire"}),
            call("notify_owner", {"owner": "dana", "body": "gone"}),
        ]
    )
    assert near["snapshot_volume"]["text"] == 'tag: "pre-retire" is not expected'
    assert near["notify_owner"]["text"] == "template is absent"  # body is allowed under contains


def test_the_closest_call_wins_and_a_call_another_action_took_comes_last():
    near = missing_rows(
        [
            call("terminate_instance", {"instance_id": "i-9", "force": True}),
            call("terminate_instance", {"instance_id": "i-0a3", "force": True}),
            call("snapshot_volume", {"volume_id": "vol-77"}),
        ]
    )
    assert near["terminate_instance"]["command"]["index"] == 1
    assert near["terminate_instance"]["text"] == "force: true is not expected"


def test_the_page_shows_it_once_revealed_and_never_blind(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    write_jsonl(
        runs / "r.jsonl",
        trajectory(SCENARIO, [call("terminate_instance", {"instance_id": "i-0a3 "})], run_id="r", tool_surface=SURFACE),
    )
    db = str(tmp_path / "e.db")
    assert CliRunner().invoke(cli, ["score", str(runs), "--db", db, "--format", "jsonl"]).exit_code == 0
    said = "instance_id is &#34;i-0a3 &#34;, not &#34;i-0a3&#34;"
    with vh.client(db) as app:  # blind first: once shown, the run stays shown to its reviewer
        assert "nearest" not in app.get(vh.run_url("r")).text
        assert "nearest" not in app.get("/api/runs/r").text
        assert said in app.get(vh.run_url("r") + "?reveal=1").text
        shown = app.get("/api/runs/r", params={"reveal": "1"}).json()["checklist"]["blocks"][0]["actions"][1]
        assert shown["nearest"]["differs"] == [{"key": "instance_id", "expected": "i-0a3", "got": "i-0a3 "}]
    html = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["report", "--db", db, "--html", str(html)]).exit_code == 0
    page = (tmp_path / "r-scenarios" / next(p.name for p in (tmp_path / "r-scenarios").iterdir())).read_text()
    assert "nearest: command 0, step 1: instance_id is &quot;i-0a3 &quot;, not &quot;i-0a3&quot;" in page


def test_values_that_look_alike_are_spelt_out():
    decomposed = "Cafe\u0301"
    scenario_calls = [call("terminate_instance", {"instance_id": decomposed})]
    card = score_records(
        trajectory(
            dict(
                SCENARIO,
                ground_truth={
                    "procedure": [
                        {
                            "block": "b",
                            "actions": [{"tool": "terminate_instance", "args": {"instance_id": "Caf\u00e9"}}],
                        }
                    ]
                },
            ),
            scenario_calls,
            run_id="r",
            tool_surface=SURFACE,
        )
    )
    cl = checklist(json.loads(card.model_dump_json(by_alias=True)), card.judge_bundle)
    assert cl["blocks"][0]["actions"][0]["nearest"]["text"] == 'instance_id is "Cafe\\u0301", not "Caf\\u00e9"'


def test_the_side_by_side_page_says_the_nearest_call_beside_a_missing_action(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    good = [call("snapshot_volume", {"volume_id": "vol-77"}), call("terminate_instance", {"instance_id": "i-0a3"})]
    spaced = [good[0], call("terminate_instance", {"instance_id": "i-0a3 "})]
    for run_id, calls in (("good", good), ("spaced", spaced)):
        write_jsonl(runs / f"{run_id}.jsonl", trajectory(SCENARIO, calls, run_id=run_id, tool_surface=SURFACE))
    db = str(tmp_path / "e.db")
    assert CliRunner().invoke(cli, ["score", str(runs), "--db", db, "--format", "jsonl"]).exit_code == 0
    with vh.client(db) as app:
        assert "nearest" not in app.get("/compare", params={"a": "good", "b": "spaced"}).text  # blind
        page = app.get("/compare", params={"a": "good", "b": "spaced", "reveal": "1"}).text
    row = page.split("terminate_instance(")[1].split("</tr>")[0]
    assert "nearest: step 2: instance_id is &#34;i-0a3 &#34;, not &#34;i-0a3&#34;" in row
