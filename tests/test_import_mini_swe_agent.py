"""evalkit import mini-swe-agent: .traj.json files (1.x text actions, 2.x tool calls), through the CLI, then scored."""

from __future__ import annotations

from agent_log_helpers import calls, import_, records, score, shell_scenario, trace, write

HELLO = "mini-swe-agent/mswea_v1.13.4_claude-sonnet_hello-world.traj.json"


def mini(messages, status="Submitted"):
    return {
        "info": {"exit_status": status, "submission": "", "config": {"model": {"model_name": "m"}}},
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}, *messages],
        "trajectory_format": "mini-swe-agent-1",
    }


def said(command):
    return {"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{command}\n```"}


def answer(code, output=""):
    return {"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{output}</output>"}


def one_run(tmp_path, doc):
    src = write(tmp_path / "t1.traj.json", doc)
    import_("mini-swe-agent", src, "-o", tmp_path / "out")
    (run,) = records(tmp_path / "out")
    return run


def test_hello_world_scored_by_hand(tmp_path):
    """The real run: write hello.txt, cat it, (pytest: never), submit, in order. By hand: coverage
    3/4, order 1, end state 1 (Submitted), scalar 0.4 + 0.4 x 0.75 + 0.2 = 0.9."""
    scen = shell_scenario(
        tmp_path / "s.json",
        "hello",
        "bash",
        "command",
        [
            ("echo hi > hello.txt", r"> *hello\.txt"),
            ("cat hello.txt", r"^cat hello\.txt"),
            ("python -m pytest", r"\bpytest\b"),
            ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
        ],
    )
    import_("mini-swe-agent", trace(HELLO), "-o", tmp_path / "out", "--scenarios", scen, "--scenario", "hello")
    (run,) = records(tmp_path / "out")
    assert [c["args"]["command"] for c in calls(run)] == [
        'echo "Hello, world!" > hello.txt',
        "cat hello.txt",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    assert [c["is_error"] for c in calls(run)] == [False, False, False]
    assert run[0]["adapter"]["model"] == "anthropic/claude-3-5-sonnet-20241022"
    (card,) = score(tmp_path / "out").values()
    v = card["vector"]
    assert (v["coverage"], v["order"], v["end_state"], v["extraneous"], v["safety_dangerous"]) == (0.75, 1.0, 1.0, 0, 0)
    assert abs(card["scalar"] - 0.9) < 1e-9


def test_nonzero_return_code_is_an_error(tmp_path):
    run = one_run(tmp_path, mini([said("false"), answer(1), said("true"), answer(0)], status="LimitsExceeded"))
    assert [(c["args"]["command"], c["is_error"]) for c in calls(run)] == [("false", True), ("true", False)]
    assert run[-1]["reason"] == "budget_exceeded" and run[-1]["success_eval"]["all_passed"] is False


def test_answer_without_return_code_is_an_error(tmp_path):
    timeout = {"role": "user", "content": "The last command <command>sleep 99</command> timed out and has been killed."}
    run = one_run(tmp_path, mini([said("sleep 99"), timeout, said("ls"), answer(0)]))
    assert [c["is_error"] for c in calls(run)] == [True, False]


def test_reply_without_one_action_block_is_rejected(tmp_path):
    two = {"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"}
    none = {"role": "assistant", "content": "I am done thinking."}
    error = {
        "role": "user",
        "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
    }
    run = one_run(tmp_path, mini([two, error, none, error, said("ls"), answer(0)]))
    assert [r["stop_reason"] for r in run if r["type"] == "assistant"] == ["rejected", "rejected", "tool_use"]
    assert len(calls(run)) == 1 and run[-1]["done_payload"]["rejected_replies"] == 2
    assert [r["text"] for r in run if r["type"] == "nudge"][1].startswith("Please always provide EXACTLY ONE")


def test_v2_tool_calls_returncode_in_extra_and_exit_message(tmp_path):
    doc = mini(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": '{"command": "make"}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "boom", "extra": {"returncode": 2}},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}},
        ]
    )
    doc["trajectory_format"] = "mini-swe-agent-1.1"
    run = one_run(tmp_path, doc)
    assert [(c["name"], c["args"], c["result"], c["is_error"]) for c in calls(run)] == [
        ("bash", {"command": "make"}, "boom", True)
    ]
    assert run[-1]["reason"] == "agent_done"


def test_unknown_exit_is_a_harness_error(tmp_path):
    run = one_run(tmp_path, mini([said("ls"), answer(0)], status="RuntimeError"))
    assert run[-1]["reason"] == "harness_error"


def test_not_mini_is_refused_in_one_line(tmp_path):
    src = write(tmp_path / "x.traj.json", {"messages": []})
    result = import_("mini-swe-agent", src, "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1 and "not a mini-swe-agent trajectory" in result.output
