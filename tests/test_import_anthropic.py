"""The Anthropic dialect of the messages importer (`evalkit import openai-messages --dialect
anthropic|openai|auto`): tool_use blocks are calls, tool_result blocks their results, the same
line fields and errors as the OpenAI dialect, and auto sniffing."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.importers import ImportFormatError
from evalkit.importers.formats.anthropic_messages import sniff
from evalkit.importers.formats.openai_messages import IMPORTER

# What Anthropic's Messages API returns and is sent back: an assistant turn with text and two
# tool_use blocks, the user turn with both tool_results (one an error, one with block content).
ANTHROPIC = [
    {"role": "user", "content": "Refund order A1 and tell me the balance."},
    {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "stop_reason": "tool_use",
        "content": [
            {"type": "thinking", "thinking": "two calls", "signature": "sig"},
            {"type": "text", "text": "Let me do both."},
            {"type": "tool_use", "id": "toolu_01", "name": "refund_order", "input": {"order_id": "A1"}},
            {"type": "tool_use", "id": "toolu_02", "name": "get_balance", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01",
                "content": "order A1 is not refundable",
                "is_error": True,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_02",
                "content": [{"type": "text", "text": "balance: "}, {"type": "text", "text": "12"}],
            },
            {"type": "text", "text": "Why did the refund fail?"},
        ],
    },
    {
        "id": "msg_02",
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "A1 is past the refund window. Your balance is 12."}],
    },
]
OPENAI = [
    {"role": "user", "content": "Refund order A1 and tell me the balance."},
    {
        "role": "assistant",
        "content": "Let me do both.",
        "stop_reason": "tool_use",
        "tool_calls": [
            {
                "id": "toolu_01",
                "type": "function",
                "function": {"name": "refund_order", "arguments": '{"order_id": "A1"}'},
            },
            {"id": "toolu_02", "type": "function", "function": {"name": "get_balance", "arguments": ""}},
        ],
    },
    {"role": "tool", "tool_call_id": "toolu_01", "content": "order A1 is not refundable", "is_error": True},
    {"role": "tool", "tool_call_id": "toolu_02", "content": "balance: 12"},
    {"role": "user", "content": "Why did the refund fail?"},
    {"role": "assistant", "content": "A1 is past the refund window. Your balance is 12.", "stop_reason": "end_turn"},
]
LINE = {
    "id": "refund-1",
    "expected_actions": [{"tool": "refund_order", "args": {"order_id": "A1"}}],
    "success": False,
    "model": "anthropic/claude-sonnet-4-5",
}


def _convert(tmp_path: Path, messages, dialect: str = "auto", **extra):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(dict(LINE, messages=messages, **extra)) + "\n")
    (run,) = IMPORTER.convert(str(src), dialect=dialect)
    return run


def _events(run):
    return [e for e in run if e["type"] in ("assistant", "nudge", "tool_call")]


def test_several_tool_use_blocks_are_calls_in_block_order_with_their_results(tmp_path):
    calls = [e for e in _convert(tmp_path, ANTHROPIC, "anthropic") if e["type"] == "tool_call"]
    assert [(c["name"], c["args"], c["call_index"], c["step"]) for c in calls] == [
        ("refund_order", {"order_id": "A1"}, 0, 1),
        ("get_balance", {}, 1, 1),
    ]
    assert [(c["result"], c["is_error"]) for c in calls] == [
        ("order A1 is not refundable", True),
        ("balance: 12", False),
    ]


def test_is_error_false_or_absent_is_a_successful_call(tmp_path):
    messages = copy.deepcopy(ANTHROPIC)
    messages[2]["content"][0]["is_error"] = False
    calls = [e for e in _convert(tmp_path, messages, "anthropic") if e["type"] == "tool_call"]
    assert [c["is_error"] for c in calls] == [False, False]


def test_same_records_as_the_openai_transcript_except_the_raw_message(tmp_path):
    ours = _convert(tmp_path, ANTHROPIC, "anthropic")
    theirs = _convert(tmp_path, OPENAI, "openai")
    strip = lambda run: [{k: v for k, v in e.items() if k != "provider_raw"} for e in run]  # noqa: E731
    assert strip(ours) == strip(theirs)
    raws = [e["provider_raw"] for e in ours if e["type"] == "assistant"]
    assert raws == [ANTHROPIC[1], ANTHROPIC[3]]  # the assistant record keeps Anthropic's message as it was


def test_text_blocks_of_a_user_turn_are_a_nudge_after_its_tool_results(tmp_path):
    events = _events(_convert(tmp_path, ANTHROPIC, "anthropic"))
    assert [(e["type"], e.get("text")) for e in events if e["type"] == "nudge"] == [
        ("nudge", "Refund order A1 and tell me the balance."),
        ("nudge", "Why did the refund fail?"),
    ]
    assert events[-1]["type"] == "assistant" and events[-1]["stop_reason"] == "end_turn"


def test_thinking_blocks_are_not_text(tmp_path):
    (first, _) = [e for e in _convert(tmp_path, ANTHROPIC, "anthropic") if e["type"] == "assistant"]
    assert first["text"] == "Let me do both." and first["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    "messages,dialect",
    [
        (ANTHROPIC, "anthropic"),
        (OPENAI, "openai"),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
            ],
            "anthropic",
        ),
        ([{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}], "openai"),
        (
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "openai",
        ),  # plain text reads the same in both
        ("not a list", "openai"),
    ],
)
def test_auto_sniffs_the_first_message_that_tells_the_dialects_apart(messages, dialect):
    assert sniff(messages) == dialect


def test_auto_reads_anthropic_and_openai_lines_of_one_file(tmp_path):
    src = tmp_path / "mixed.jsonl"
    src.write_text(
        json.dumps(dict(LINE, messages=ANTHROPIC))
        + "\n"
        + json.dumps(dict(LINE, id="refund-2", messages=OPENAI))
        + "\n"
    )
    first, second = IMPORTER.convert(str(src))
    assert [e["name"] for e in first if e["type"] == "tool_call"] == [
        e["name"] for e in second if e["type"] == "tool_call"
    ]


def test_line_fields_are_the_same_in_both_dialects(tmp_path):
    run = _convert(tmp_path, ANTHROPIC, "anthropic", scenario_id="refunds", trial=2)
    meta, final = run[0], run[-1]
    assert meta["run_id"] == "refund-1:anthropic/claude-sonnet-4-5:trial2" and meta["scenario"]["id"] == "refunds"
    assert meta["adapter"]["provider"] == "anthropic"
    assert meta["scenario"]["ground_truth"]["procedure"][0]["actions"] == [
        {"tool": "refund_order", "args": {"order_id": "A1"}}
    ]
    assert final["success_eval"]["all_passed"] is False and final["reason"] == "agent_done"


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda m: m[1]["content"][2].pop("name"), r"message 1, content block 2 \(tool_use\): needs name"),
        (lambda m: m[1]["content"][2].pop("id"), r"message 1, content block 2 \(tool_use refund_order\): needs id"),
        (
            lambda m: m[1]["content"][2].update(input=[1]),
            r"message 1, content block 2 \(tool_use refund_order\): arguments must be",
        ),
        (
            lambda m: m[2]["content"][1].update(tool_use_id="toolu_99"),
            r"message 2, content block 1 \(tool_result\): tool_use_id 'toolu_99' answers no pending tool_use",
        ),
        (
            lambda m: m[2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_01", "content": "again"}),
            r"message 2, content block 3 \(tool_result\): tool_use_id 'toolu_01' answers no pending tool_use",
        ),
        (lambda m: m[1].update(content=7), "message 1: content must be a string or a list of content blocks"),
        (lambda m: m[1]["content"].append("text"), "message 1, content block 4: needs a type"),
        (lambda m: m.append({"role": "robot", "content": "x"}), "message 4: unknown role 'robot'"),
        (lambda m: m.append(3), "message 4 is not an object"),
    ],
)
def test_bad_anthropic_messages_are_one_line_errors_naming_line_message_and_block(tmp_path, mutate, message):
    messages = copy.deepcopy(ANTHROPIC)
    mutate(messages)
    with pytest.raises(ImportFormatError, match=message) as info:
        _convert(tmp_path, messages, "anthropic")
    assert str(info.value).startswith(f"{tmp_path / 't.jsonl'}:1: transcript refund-1: ")


def test_same_errors_for_line_fields_in_the_anthropic_dialect(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(dict(LINE, messages=ANTHROPIC, expected_actions="refund_order")) + "\n")
    with pytest.raises(ImportFormatError, match=r"t.jsonl:1: transcript refund-1: expected_actions must be a list"):
        IMPORTER.convert(str(src), dialect="anthropic")


def test_unknown_dialect_is_refused(tmp_path):
    with pytest.raises(ImportFormatError, match="unknown dialect 'gemini'"):
        _convert(tmp_path, ANTHROPIC, "gemini")


def test_cli_dialect_option(tmp_path):
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(dict(LINE, messages=ANTHROPIC)) + "\n")
    res = CliRunner().invoke(
        cli,
        [
            "import",
            "openai-messages",
            str(src),
            "-o",
            str(tmp_path / "runs"),
            "--dialect",
            "anthropic",
            "--workers",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        cli, ["import", "openai-messages", str(src), "-o", str(tmp_path / "runs"), "--dialect", "klingon"]
    )
    assert res.exit_code == 2 and "--dialect" in res.stderr
    res = CliRunner().invoke(
        cli, ["import", "taubench", str(src), "-o", str(tmp_path / "r2"), "--model", "m", "--dialect", "anthropic"]
    )
    assert res.exit_code == 2 and "--dialect is not used by format taubench" in res.stderr
