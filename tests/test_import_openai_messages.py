"""Generic OpenAI-messages importer: round trip into trajectories and scores, and its edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.aggregate.groups import aggregate
from evalkit.cli import cli
from evalkit.importers import ImportFormatError, import_files
from evalkit.importers.formats.openai_messages import IMPORTER
from evalkit.scoring import score_trajectory
from evalkit.trajectory.reader import read_trajectory

SRC = Path(__file__).parent / "fixtures" / "openai_messages" / "transcripts.jsonl"


def _by_run(out: Path) -> dict[str, Path]:
    return {read_trajectory(p).meta.run_id: p for p in sorted(out.glob("*.jsonl"))}


def test_openai_messages_round_trip(tmp_path):
    out = tmp_path / "out"
    result = import_files("openai-messages", [SRC], out, model="fallback-model")
    assert not result.errors
    runs = _by_run(out)
    assert sorted(runs) == ["greeting-1:fallback-model", "refund-1:acme/agent-1:trial0", "refund-2:acme/agent-1"]

    # every message comes back: user turns as nudges, assistant text, tool calls with args and results
    lines = [json.loads(line) for line in SRC.read_text().splitlines()]
    for line in lines:
        run_id = next(r for r in runs if r.startswith(f"{line['id']}:"))
        traj = read_trajectory(runs[run_id])
        src_msgs = [m for m in line["messages"] if m["role"] != "system"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]))
            for m in src_msgs
            if m["role"] == "assistant"
            for c in (m.get("tool_calls") or [])
        ]
        results = [m["content"] for m in src_msgs if m["role"] == "tool"]
        events = traj.events
        tool_calls = [e for e in events if e.type == "tool_call"]
        assert [(e.name, e.args) for e in tool_calls] == calls
        assert [e.result for e in tool_calls] == results
        assert [e.text for e in events if e.type == "nudge"] == [m["content"] for m in src_msgs if m["role"] == "user"]
        assert [e.text for e in events if e.type == "assistant"] == [
            m["content"] for m in src_msgs if m["role"] == "assistant"
        ]
        scenario = traj.meta.scenario
        expected = [(a["tool"], a["args"]) for a in line["expected_actions"]]
        assert [(a.tool, a.args) for _, _, a in scenario.required()] == expected
        if expected:
            (block,) = scenario.ground_truth.procedure
            assert block.ordered is bool(line.get("ordered", False))

    # and the scores follow from them
    refund = score_trajectory(read_trajectory(runs["refund-1:acme/agent-1:trial0"]))
    assert refund.scenario_id == "refund" and refund.status == "scored"
    assert [(c.tool, c.class_) for c in refund.commands] == [("refund_order", "matched_required")]
    assert refund.informative.reads == 1  # get_order is a read: the line lists its command_tools
    assert refund.vector.coverage == 1.0 and refund.vector.all_passed is True and refund.scalar == 1.0

    both = score_trajectory(read_trajectory(runs["refund-2:acme/agent-1"]))
    # errored cancel (is_error) is not a command; the later one matches but comes after the refund
    assert both.informative.errored_commands == 1
    assert [(c.tool, c.class_) for c in both.commands] == [
        ("refund_order", "matched_required"),
        ("cancel_subscription", "matched_required"),
    ]
    assert both.vector.coverage == 1.0 and both.vector.order == 0.0
    assert both.vector.all_passed is False and both.vector.end_state == 0.0


def test_tool_calls_become_commands_by_default(tmp_path):
    line = json.loads(SRC.read_text().splitlines()[0])
    del line["command_tools"]
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(line) + "\n")
    out = tmp_path / "out"
    import_files("openai-messages", [src], out)
    (path,) = out.glob("*.jsonl")
    card = score_trajectory(read_trajectory(path))
    assert [(c.tool, c.class_, c.subtype) for c in card.commands] == [
        ("get_order", "extraneous", "uncatalogued_in_gt"),
        ("refund_order", "matched_required", None),
    ]


def test_missing_success_means_no_end_state(tmp_path):
    out = tmp_path / "out"
    import_files("openai-messages", [SRC], out, model="fallback-model")
    card = score_trajectory(read_trajectory(_by_run(out)["greeting-1:fallback-model"]))
    assert card.status == "incomplete" and card.vector.end_state is None and card.scalar is None
    (group,) = [g for g in aggregate([card])["groups"]]
    assert group["n"] == 1 and group["n_scored"] == 0 and group["incomplete_rate"] == 1.0


def test_model_comes_from_the_line_else_the_flag(tmp_path):
    runs = IMPORTER.convert(str(SRC), model="fallback-model")
    assert [r[0]["adapter"]["model"] for r in runs] == ["acme/agent-1", "acme/agent-1", "fallback-model"]
    with pytest.raises(ImportFormatError, match=r":3: transcript greeting-1: no model"):
        IMPORTER.convert(str(SRC))


@pytest.mark.parametrize(
    "arguments",
    [
        "{'subscription_id': 'S9'}",  # a Python repr
        '{"subscription_id": "S9", "reason": "too exp',  # cut off at the model's token limit
        '["S9"]',  # JSON, but no object
        '{"subscription_id": "S9", "subscription_id": "S8"}',  # a key twice
    ],
)
def test_a_tool_call_with_malformed_arguments_is_the_models_errored_call_and_the_run_is_scored(tmp_path, arguments):
    """A model that writes arguments no runtime can read made a call that was not run: the run is
    imported and scored with it (its action not done), not dropped with the other runs of the file."""
    first, second = SRC.read_text().splitlines()[:2]
    line = json.loads(second)
    call = line["messages"][1]["tool_calls"][0]
    call["function"]["arguments"] = arguments
    line["messages"][2] = {"role": "tool", "tool_call_id": call["id"], "content": "cancelled"}  # no error flag
    src = tmp_path / "t.jsonl"
    src.write_text(first + "\n" + json.dumps(line) + "\n")
    out = tmp_path / "out"
    result = import_files("openai-messages", [src], out)
    assert not result.errors
    runs = _by_run(out)
    assert len(runs) == 2  # the file's other run is kept too
    traj = read_trajectory(runs["refund-2:acme/agent-1"])
    malformed = [e for e in traj.events if e.type == "tool_call"][0]
    assert (malformed.name, malformed.args, malformed.is_error) == (
        "cancel_subscription",
        {"arguments": arguments},
        True,
    )
    assert malformed.result == "cancelled"  # the answer is kept; it does not make the call run
    card = score_trajectory(traj)
    assert card.informative.errored_commands == 1
    assert [(c.tool, c.class_) for c in card.commands] == [
        ("refund_order", "matched_required"),
        ("cancel_subscription", "matched_required"),
    ]


def test_arguments_that_are_neither_text_nor_an_object_name_the_line_and_keep_the_file_out(tmp_path):
    line = json.loads(SRC.read_text().splitlines()[1])
    line["messages"][1]["tool_calls"][0]["function"]["arguments"] = 42
    src = tmp_path / "t.jsonl"
    src.write_text(SRC.read_text().splitlines()[0] + "\n" + json.dumps(line) + "\n")
    out = tmp_path / "out"
    result = import_files("openai-messages", [src], out)
    (error,) = result.errors
    assert str(error).startswith(f"{src}:2: transcript refund-2: message 1, tool call 0 (cancel_subscription)")
    assert "arguments must be a JSON string or an object, not int" in str(error)
    assert not out.exists()  # the good first line was not written either: all-or-nothing per file


@pytest.mark.parametrize(
    "text,message",
    [
        ("not json\n", r":1: not valid JSON"),
        ('{"messages": []}\n', r":1: id must be"),
        ('{"id": "a", "model": "m", "messages": {}}\n', r":1: transcript a: messages must be a list"),
        (
            '{"id": "a", "model": "m", "messages": [], "expected_actions": [{"args": {}}]}\n',
            r"expected_actions\[0\] needs a tool",
        ),
        ('{"id": "a", "model": "m", "messages": [], "success": "yes"}\n', r"success must be a boolean"),
        (
            '{"id": "a", "model": "m", "messages": [{"role": "tool", "content": "x"}]}\n',
            r"answers no pending tool call",
        ),
        (
            '{"id": "a", "model": "m", "messages": []}\n{"id": "a", "model": "m", "messages": []}\n',
            r":2: .*already produced by line 1",
        ),
        ("\n\n", r"no transcripts"),
        (
            '{"id": "a", "model": "m", "messages": [], "scenario_id": "s"}\n'
            '{"id": "b", "model": "m", "messages": [], "scenario_id": "s", "expected_actions": [{"tool": "t"}]}\n',
            r":2: scenario 's': expected_actions/ordered differ from line 1",
        ),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, text, message):
    src = tmp_path / "t.jsonl"
    src.write_text(text)
    with pytest.raises(ImportFormatError, match=message) as info:
        IMPORTER.convert(str(src))
    assert str(info.value).startswith(str(src))


def test_reimport_is_byte_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    import_files("openai-messages", [SRC], a, model="m")
    import_files("openai-messages", [SRC], b, model="m")
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir()) and len(names) == 3
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def _import_cli(path: Path, out: Path):
    from click.testing import CliRunner

    from evalkit.cli import cli

    return CliRunner().invoke(cli, ["import", "openai-messages", str(path), "-o", str(out)], prog_name="evalkit")


def test_a_pretty_printed_json_list_is_said_to_be_json_not_jsonl(tmp_path):
    lines = [json.loads(line) for line in SRC.read_text().splitlines() if line.strip()]
    pretty = tmp_path / "transcripts.json"
    pretty.write_text(json.dumps(lines, indent=2) + "\n")
    res = _import_cli(pretty, tmp_path / "out")
    n = len(pretty.read_text().splitlines())
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr == (
        f"{pretty}:1: expected JSONL, one JSON document per line (a transcript object {{id, messages, ...}}),"
        f" got one JSON list over {n} lines (jq -c '.[]' FILE writes one element a line)\n"
    )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_pretty_printed_transcript_object_is_said_to_be_json_not_jsonl(tmp_path):
    one = tmp_path / "one.json"
    one.write_text("\n\n" + json.dumps(json.loads(SRC.read_text().splitlines()[0]), indent=1))
    res = _import_cli(one, tmp_path / "out")
    assert res.exit_code == 1
    assert res.stderr.startswith(f"{one}:3: expected JSONL, one JSON document per line")
    assert "got one JSON object over" in res.stderr and "jq -c . FILE writes it on one line" in res.stderr
    assert res.stderr.count("\n") == 1


def test_a_broken_first_line_of_real_jsonl_keeps_its_parse_error(tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "a", "messages": [\n' + SRC.read_text())
    res = _import_cli(broken, tmp_path / "out")
    assert res.exit_code == 1 and res.stderr.startswith(f"{broken}:1: not valid JSON: EOF while parsing")


def test_a_json_list_on_one_line_says_a_line_holds_one_transcript(tmp_path):
    lines = [json.loads(line) for line in SRC.read_text().splitlines() if line.strip()]
    listed = tmp_path / "list.jsonl"
    listed.write_text(json.dumps(lines) + "\n")
    res = _import_cli(listed, tmp_path / "out")
    assert res.exit_code == 1
    assert res.stderr == (
        f"{listed}:1: a line must be an object {{id, messages, expected_actions, ...}},"
        " not a JSON list (JSONL: one transcript a line)\n"
    )


def test_tool_results_that_read_as_errors_without_is_error_are_named_in_one_note(tmp_path):
    # plain OpenAI logs carry no is_error: a failed refund answered "Error: ..." counted as done
    lines = [json.loads(line) for line in SRC.read_text().splitlines()]
    answers = ["Error: card declined", '{"error": "no such order", "code": 404}', '{"error": null, "ok": true}']
    for line, answer in zip(lines, answers):
        for message in line["messages"]:
            if message["role"] == "tool":
                message.pop("is_error", None)
                message["content"] = answer
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = CliRunner().invoke(
        cli, ["import", "openai-messages", str(src), "-o", str(tmp_path / "out"), "--model", "m"]
    )
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "read as errors" in line]
    tools = sorted({m["name"] for line in lines[:2] for m in line["messages"] if m["role"] == "tool"})
    errored = sum(1 for line in lines[:2] for m in line["messages"] if m["role"] == "tool")
    assert notes == [
        f'note: {errored} tool result(s) in {src} read as errors (a result starting "Error" or holding an "error" '
        f"key: {', '.join(tools)}) but carry no is_error, so those calls count as executed; if they failed, give "
        'their tool message "is_error": true'
    ]
