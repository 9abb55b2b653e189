"""evalkit import swe-agent: SWE-agent .traj files (0.x and 1.x), through the CLI, then scored."""

from __future__ import annotations

import pytest
from agent_log_helpers import calls, import_, records, score, shell_scenario, trace, write

V1 = "swe-agent/sweagent_1.0_gpt4o_test-repo_6e44b9.traj"
V0 = "swe-agent/sweagent_0.x_gpt4_test-repo-i1.traj"


def traj(steps, history=None, status="submitted", **extra):
    return {
        "trajectory": [{"action": a, "observation": o, "thought": t} for a, o, t in steps],
        "history": history or [],
        "info": {"exit_status": status, "submission": "diff"},
        **extra,
    }


def one_run(tmp_path, doc, *args):
    src = write(tmp_path / "i1.traj", doc)
    import_("swe-agent", src, "-o", tmp_path / "out", "--model", "m", *args)
    (run,) = records(tmp_path / "out")
    return run


def test_v1_function_calls_scored_by_hand(tmp_path):
    """1.x: find_file and open are reads; edit, run the script, submit in order; submitted. By hand:
    coverage 1, order 1, end state 1, nothing extraneous, scalar 1."""
    scen = shell_scenario(
        tmp_path / "s.json",
        "fix",
        "bash",
        "command",
        [("python3 x.py", r"^python3? \S*missing_colon\.py"), ("submit", r"^submit\b")],
        command_tools=["bash", "edit"],
    )
    data = __import__("json").loads(scen.read_text())
    data["ground_truth"]["procedure"][0]["actions"].insert(
        0, {"tool": "edit", "args": {}, "args_match": {"mode": "ignore"}}
    )
    write(scen, data)
    import_("swe-agent", trace(V1), "-o", tmp_path / "out", "--scenarios", scen, "--scenario", "fix")
    (run,) = records(tmp_path / "out")
    assert [c["name"] for c in calls(run)] == ["find_file", "open", "edit", "bash", "bash"]
    assert calls(run)[0]["args"] == {"file_name": "missing_colon.py"}
    assert calls(run)[-1]["args"] == {"command": "submit"}  # executed after the history was written
    assert run[0]["adapter"]["model"] == "gpt-4o" and run[0]["run_id"] == "swe-agent:SWE-agent__test-repo-i1:gpt-4o"
    (card,) = score(tmp_path / "out").values()
    v = card["vector"]
    assert (v["coverage"], v["order"], v["end_state"], v["extraneous"], v["safety_dangerous"]) == (1.0, 1.0, 1.0, 0, 0)
    assert card["scalar"] == 1.0


def test_v0_tests_before_submit_scored_by_hand(tmp_path):
    """0.x: every action a shell command line; the agent never ran pytest before submit. By hand:
    coverage 1/2, no order (one action matched: nothing to order), end state 1 (submitted), the
    other commands optional: scalar 0.4 x 1 + 0.6 x 0.5 = 0.7."""
    scen = shell_scenario(
        tmp_path / "s.json",
        "tests-first",
        "bash",
        "command",
        [("python -m pytest", r"\bpytest\b"), ("submit", r"^submit\b")],
        optional_actions=[{"tool": "bash"}],
    )
    bad = import_("swe-agent", trace(V0), "-o", tmp_path / "out", ok=False)
    assert (
        bad.exit_code == 1 and "replay_config.agent.model.name does not name the model; pass --model NAME" in bad.output
    )
    import_(
        "swe-agent",
        trace(V0),
        "-o",
        tmp_path / "out",
        "--model",
        "gpt4",
        "--scenarios",
        scen,
        "--scenario",
        "tests-first",
    )
    (run,) = records(tmp_path / "out")
    assert [c["args"]["command"].split()[0] for c in calls(run)] == ["find_file", "open", "edit", "python", "submit"]
    assert calls(run)[2]["args"]["command"] == "edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit"
    (card,) = score(tmp_path / "out").values()
    v = card["vector"]
    assert (v["coverage"], v["order"], v["end_state"], v["extraneous"]) == (0.5, None, 1.0, 0)
    assert abs(card["scalar"] - 0.7) < 1e-9


def test_text_action_is_a_bash_command_with_its_observation(tmp_path):
    run = one_run(tmp_path, traj([("ls -la\n", "a b", "look")]))
    (call,) = calls(run)
    assert (call["name"], call["args"], call["result"], call["is_error"]) == (
        "bash",
        {"command": "ls -la"},
        "a b",
        False,
    )


def test_function_call_in_history_gives_name_and_parsed_arguments(tmp_path):
    history = [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "t",
            "action": "open x.py",
            "tool_calls": [{"function": {"name": "open", "arguments": '{"path": "x.py"}'}}],
        },
    ]
    run = one_run(tmp_path, traj([("open x.py", "ok", "t")], history))
    assert [(c["name"], c["args"]) for c in calls(run)] == [("open", {"path": "x.py"})]


def test_python_repr_tool_calls_are_read_as_literals(tmp_path):
    history = [
        {
            "role": "assistant",
            "action": "ls",
            "tool_calls": "[{'function': {'name': 'bash', 'arguments': '{\"command\": \"ls\"}'}}]",
        }
    ]
    run = one_run(tmp_path, traj([("ls", "", "t")], history))
    assert calls(run)[0]["args"] == {"command": "ls"}


def test_reply_swe_agent_rejected_is_recorded_as_such(tmp_path):
    history = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "no code block", "thought": "no code block", "action": ""},
        {"role": "user", "content": "Your output was not formatted correctly."},
        {"role": "assistant", "content": "t", "thought": "t", "action": "ls"},
    ]
    run = one_run(tmp_path, traj([("ls", "", "t")], history))
    assert [r["type"] for r in run[2:-1]] == ["nudge", "assistant", "nudge", "assistant", "tool_call"]
    assert run[3]["stop_reason"] == "rejected" and run[4]["text"] == "Your output was not formatted correctly."
    assert len(calls(run)) == 1 and run[-1]["done_payload"]["rejected_replies"] == 1


@pytest.mark.parametrize(
    "status, reason, passed",
    [
        ("submitted", "agent_done", True),
        ("submitted (exit_cost)", "budget_cost", True),
        ("exit_context", "budget_context", False),
        ("exit_format", "budget_errors", False),
        ("exit_error", "harness_error", False),
    ],
)
def test_exit_status_is_the_final_reason_and_submission_the_end_state(tmp_path, status, reason, passed):
    run = one_run(tmp_path, traj([("submit", "diff", "t")], status=status))
    assert run[-1]["reason"] == reason
    assert run[-1]["success_eval"]["final_state"][0]["passed"] is passed
    assert run[-1]["done_payload"]["swe_agent"]["exit_status"] == status


def test_not_a_traj_is_refused_in_one_line(tmp_path):
    src = write(tmp_path / "x.traj", {"history": []})
    result = import_("swe-agent", src, "-o", tmp_path / "out", "--model", "m", ok=False)
    assert result.exit_code == 1 and "not a SWE-agent trajectory: needs trajectory (a list) and info" in result.output
