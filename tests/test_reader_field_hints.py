"""A required field missing from a record, written under the name another recorder uses (or a near
miss of it), is named in the one-line error: the user sees which key to rename."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

META = {"type": "meta", "run_id": "r", "model": "m", "scenario": {"id": "s", "ground_truth": {"procedure": []}}}


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("tool", ' (the record has "tool": write it as "name")'),
        ("function_name", ' (the record has "function_name": write it as "name")'),
        ("nme", ' (the record has "nme": write it as "name")'),
        ("label", ""),  # nothing like it: no guess
    ],
)
def test_a_tool_call_with_its_name_under_another_key_says_which(tmp_path, key, hint):
    run = tmp_path / "run.jsonl"
    records = [META, {"type": "tool_call", key: "search", "args": {}}, {"type": "final", "reason": "agent_done"}]
    run.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(cli, ["score", str(run), "--no-db", "--format", "jsonl"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"error: {run}:2: tool_call.name: Field required{hint}"


def test_arguments_written_as_json_text_say_to_write_the_object(tmp_path):
    run = tmp_path / "run.jsonl"
    text_args = {"type": "tool_call", "name": "search", "args": json.dumps({"q": "mug"})}  # OpenAI's "arguments"
    records = [META, text_args, {"type": "final", "reason": "agent_done"}]
    run.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(cli, ["score", str(run), "--no-db", "--format", "jsonl"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {run}:2: tool_call.args: Input should be a valid dictionary "
        "(it is JSON text: write the object itself, not its text)"
    )
