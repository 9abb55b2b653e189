"""The reader's fast loop for scoring (assistant and tool_call lines of a file read whole, one search
for numbers that could overflow per file) against the line-by-line path it short-cuts: the same
card, the same warnings, the same one-line errors, on runs built to hit each of its exits."""

from __future__ import annotations

import pytest

from evalkit.engines import sources
from evalkit.errors import InputError
from evalkit.present.score_output import card_head_json
from evalkit.scoring import score_trajectory
from evalkit.trajectory import reader
from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, read, say, trajectory
from evalkit.trajectory.reader import parse_lines, parse_trajectory, read_trajectory

SC = a320_scenario()


def _lines() -> list[str]:
    recs = trajectory(SC, [say("hi"), read(), cmd("apu_gen", 0), cmd("apu_gen", 1), read("get_state")], run_id="fast")
    return dumps_jsonl(recs).rstrip("\n").split("\n")


def _variant(name: str) -> str:
    lines = _lines()
    call = next(i for i, line in enumerate(lines) if '"tool_call"' in line and '"apu_gen"' in line)
    said = next(i for i, line in enumerate(lines) if '"assistant"' in line)
    if name == "overflow_in_a_call":
        lines[call] = lines[call][:-1] + ', "big": 1e400, "also": 2E+999}'
    elif name == "nan_in_an_assistant_line":
        lines[said] = lines[said][:-1] + ', "x": [NaN, -Infinity]}'
    elif name == "long_digit_run":
        lines[call] = lines[call][:-1] + ', "big": ' + "9" * 320 + ".0}"
    elif name == "blank_and_whitespace_lines":
        lines[call:call] = ["", "   \t", "\x0c"]
    elif name == "half_written_last_line":
        lines.append(lines[call][: lines[call].index(", ") + 1])  # cut after a comma: EOF, not a bad string
    elif name == "half_written_middle_line":
        lines[call] = lines[call][: lines[call].index(", ") + 1]
    elif name == "duplicate_key_in_a_call":
        lines[call] = lines[call][:-1] + ', "name": "bat_1"}'
    elif name == "bad_field_in_a_call":
        lines[call] = lines[call].replace('"name": "set_control"', '"name": 7', 1)
    elif name == "call_after_final":
        lines.append(lines[call])
    elif name == "call_after_harness_error":
        lines[-1:] = ['{"type": "harness_error", "error": "boom"}', lines[call]]
    elif name == "list_line":
        lines[call] = "[1, 2]"
    elif name == "unknown_type_and_nudge":
        lines[call:call] = ['{"type": "telemetry", "x": 1}', '{"type": "nudge", "step": 1, "text": "go"}']
    elif name == "extra_fields":
        lines[call] = lines[call][:-1] + ', "extra_a": 1, "extra_b": {"c": []}}'
    elif name == "result_at_the_bundle_limit":  # lines around RESULT_MAX_CHARS, with and without newline
        head = '{"type": "tool_call", "step": 9, "call_index": 9, "name": "get_state", "args": {}, "is_error": false, "result": "'
        for n in (1998, 1999, 2000, 2001):
            pad = n - len(head) - 2
            lines.insert(-1, head + "y" * pad + '"}')
        lines[-1:] = [lines[-1][:0] + lines[-2]]  # ends with a call at the limit, no final, no newline
    elif name == "crlf":
        lines = [line + "\r" for line in lines]
    elif name != "plain":
        raise ValueError(name)
    text = "\n".join(lines)
    return text if name == "result_at_the_bundle_limit" else text + "\n"


VARIANTS = [
    "plain",
    "overflow_in_a_call",
    "nan_in_an_assistant_line",
    "long_digit_run",
    "blank_and_whitespace_lines",
    "half_written_last_line",
    "half_written_middle_line",
    "duplicate_key_in_a_call",
    "bad_field_in_a_call",
    "call_after_final",
    "call_after_harness_error",
    "list_line",
    "unknown_type_and_nudge",
    "extra_fields",
    "result_at_the_bundle_limit",
    "crlf",
]


def _outcome(fn) -> tuple[str, list[str]]:
    warnings: list[str] = []
    try:
        card = score_trajectory(fn(warnings.append))
    except InputError as exc:
        return f"error: {exc}", warnings
    return card_head_json(card) + card.bundle.json, warnings


@pytest.mark.parametrize("name", VARIANTS)
def test_fast_loop_gives_what_the_line_by_line_read_gives(tmp_path, monkeypatch, name):
    path = tmp_path / f"{name}.jsonl"
    path.write_text(_variant(name), encoding="utf-8")
    fast = _outcome(lambda warn: read_trajectory(path, warn, compact=True))

    def line_by_line(warn, lines=None):  # every line through the builder, every line searched for overflow
        builder = reader._Builder(str(path), warn, compact=True)
        with open(path, "rb") as fh:
            for lineno, line in enumerate(fh if lines is None else lines, 1):
                builder.line(lineno, line)
        return builder.finish()

    assert fast == _outcome(line_by_line)
    monkeypatch.setattr(reader, "_WHOLE_FILE_BYTES", 0)  # a large file: read line by line
    assert fast == _outcome(lambda warn: read_trajectory(path, warn, compact=True))
    # standard input and URLs: the bytes split into lines (without their newlines)
    data = path.read_bytes()
    assert _outcome(lambda warn: parse_trajectory(str(path), data, warn, compact=True)) == _outcome(
        lambda warn: line_by_line(warn, data.split(b"\n"))
    )


def test_numbers_that_overflow_are_counted_when_only_the_file_is_searched(tmp_path):
    path = tmp_path / "o.jsonl"
    path.write_text(_variant("overflow_in_a_call"), encoding="utf-8")
    assert read_trajectory(path, compact=True).non_finite_numbers == 2
    path.write_text(_variant("long_digit_run"), encoding="utf-8")
    assert read_trajectory(path, compact=True).non_finite_numbers == 1


def test_a_file_without_such_a_number_is_not_searched_line_by_line(tmp_path, monkeypatch):
    path = tmp_path / "p.jsonl"
    path.write_text(_variant("plain"), encoding="utf-8")
    searched: list[bytes] = []
    original = reader._maybe_overflow
    monkeypatch.setattr(reader, "_maybe_overflow", lambda data: searched.append(data) or original(data))
    read_trajectory(path, compact=True)
    assert searched == [path.read_bytes()]


def test_parse_lines_without_the_file_search_still_finds_literals():
    text = _variant("nan_in_an_assistant_line").encode()
    traj = parse_lines("x", text.split(b"\n"), compact=True, may_overflow=False)
    assert traj.non_finite_numbers == 2


def test_directories_are_listed_in_path_order_not_string_order(tmp_path):
    # "a/b" sorts before "a-b" as paths (part "a" < "a-b") but after it as strings ("/" > "-")
    for d in ("a", "a-b", "a.b", "A", "a/x", "a b"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        for f in ("1.jsonl", "a-.jsonl", "a.jsonl", "B.jsonl"):
            (tmp_path / d / f).write_text("")
    (tmp_path / "a0.jsonl").write_text("")
    listed = list(sources.expand_paths([tmp_path]))
    assert listed == [str(p) for p in sorted(tmp_path.rglob("*.jsonl"))]
    assert listed.index(str(tmp_path / "a" / "x" / "1.jsonl")) < listed.index(str(tmp_path / "a-b" / "1.jsonl"))
