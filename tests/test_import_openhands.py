"""evalkit import openhands: OpenHands event streams and evaluation outputs, through the CLI, then scored."""

from __future__ import annotations

import json

from agent_log_helpers import calls, import_, records, score, trace, write

BASIC = "openhands/oh_events_basic.json"


def action(i, kind, args, source="agent", **extra):
    return {"id": i, "source": source, "action": kind, "args": args, "message": "", **extra}


def obs(i, cause, kind, content, **extras):
    return {"id": i, "source": "agent", "observation": kind, "cause": cause, "content": content, "extras": extras}


USER = action(0, "message", {"content": "fix it"}, source="user")


def one_run(tmp_path, events, *args):
    src = write(tmp_path / "e.json", events)
    import_("openhands", src, "-o", tmp_path / "out", "--model", "m", *args)
    (run,) = records(tmp_path / "out")
    return run


def test_basic_stream_scored_by_hand(tmp_path):
    """The real stream: the model created /workspace/game_2048.py, then called finish. Scenario:
    create a .py file under /workspace, then finish, in order. By hand: coverage 1, order 1, nothing
    extraneous; the stream records no verdict, so the run has no end state (incomplete, no scalar)."""
    scen = write(
        tmp_path / "s.json",
        {
            "id": "game",
            "command_tools": ["str_replace_editor", "finish"],
            "ground_truth": {
                "procedure": [
                    {
                        "block": "b",
                        "ordered": True,
                        "actions": [
                            {
                                "tool": "str_replace_editor",
                                "args": {"command": "create", "path": "/workspace/x.py"},
                                "args_match": {
                                    "mode": "contains",
                                    "compare": {"path": {"fullmatch": "/workspace/.+\\.py"}},
                                },
                            },
                            {"tool": "finish", "args": {}},
                        ],
                    }
                ]
            },
        },
    )
    import_("openhands", trace(BASIC), "-o", tmp_path / "out", "--scenarios", scen, "--scenario", "game")
    (run,) = records(tmp_path / "out")
    assert [c["name"] for c in calls(run)] == ["str_replace_editor", "finish"]
    assert calls(run)[0]["args"]["path"] == "/workspace/game_2048.py" and calls(run)[0]["args"]["command"] == "create"
    assert run[0]["adapter"]["model"] == "claude-3-5-sonnet-20241022" and run[-1]["reason"] == "agent_done"
    assert run[-1]["done_payload"]["final_message"].startswith("I've created a simple implementation")
    (card,) = score(tmp_path / "out").values()
    v = card["vector"]
    assert card["status"] == "incomplete" and card["scalar"] is None
    assert (v["coverage"], v["order"], v["extraneous"]) == (1.0, 1.0, 0)


def test_action_without_function_call_is_its_type_with_args_and_exit_code_error(tmp_path):
    events = [
        USER,
        action(1, "run", {"command": "make", "thought": "build it"}),
        obs(2, 1, "run", "make: *** [all] Error 2", metadata={"exit_code": 2}),
        action(3, "run", {"command": "ls"}),
        obs(4, 3, "run", "a", metadata={"exit_code": 0}),
    ]
    run = one_run(tmp_path, events)
    assert [(c["name"], c["args"], c["is_error"]) for c in calls(run)] == [
        ("run", {"command": "make"}, True),
        ("run", {"command": "ls"}, False),
    ]
    assert [r["text"] for r in run if r["type"] == "assistant"][0] == "build it"


def test_error_observation_is_an_errored_call(tmp_path):
    run = one_run(tmp_path, [USER, action(1, "read", {"path": "/x"}), obs(2, 1, "error", "no such file")])
    assert calls(run)[0]["is_error"] is True and calls(run)[0]["result"] == "no such file"


def test_refused_call_is_a_rejected_reply_not_a_call(tmp_path):
    events = [
        USER,
        action(1, "run", {"command": "rm -rf /"}),
        obs(2, 1, "user_rejected", "Action has been rejected by the user"),
    ]
    run = one_run(tmp_path, events)
    assert calls(run) == [] and run[-1]["done_payload"]["rejected_replies"] == 1
    assert [r["stop_reason"] for r in run if r["type"] == "assistant"] == ["rejected"]


def test_error_answering_no_action_is_a_rejected_reply(tmp_path):
    run = one_run(
        tmp_path, [USER, obs(1, None, "error", "Missing required argument 'command'"), action(2, "finish", {})]
    )
    assert [r["stop_reason"] for r in run if r["type"] == "assistant"] == ["rejected", "tool_use"]
    assert [c["name"] for c in calls(run)] == ["finish"]


def test_agent_state_is_the_final_reason(tmp_path):
    state = {
        "id": 9,
        "source": "environment",
        "observation": "agent_state_changed",
        "content": "",
        "extras": {"agent_state": "error"},
    }
    run = one_run(tmp_path, [USER, action(1, "run", {"command": "ls"}), state])
    assert run[-1]["reason"] == "harness_error"


def test_evaluation_output_lines_are_runs_with_swe_bench_verdict(tmp_path):
    line = {
        "instance_id": "repo__1",
        "history": [USER, action(1, "finish", {})],
        "metadata": {"llm_config": {"model": "llm/x"}},
    }
    lines = [
        dict(line, test_result={"report": {"resolved": True}}),
        dict(line, instance_id="repo__2", test_result={"report": {"resolved": False}}),
    ]
    src = tmp_path / "output.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    import_("openhands", src, "-o", tmp_path / "out")
    cards = score(tmp_path / "out")
    assert {k: c["vector"]["all_passed"] for k, c in cards.items()} == {
        "openhands:repo__1:llm/x": True,
        "openhands:repo__2:llm/x": False,
    }


def test_not_openhands_is_refused_in_one_line(tmp_path):
    src = write(tmp_path / "e.json", {"events": 1})
    result = import_("openhands", src, "-o", tmp_path / "out", "--model", "m", ok=False)
    assert result.exit_code == 1 and "not an OpenHands trajectory" in result.output
