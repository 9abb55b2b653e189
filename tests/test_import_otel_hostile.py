"""`evalkit import otel FILE` on what an SDK would not write but a file can hold: a time past
fixed64, a 3,000-deep span chain, a NaN; and tool spans written by agent frameworks under their own
attribute names (mozilla-ai/any-agent's, read from its real trace file), every unknown one counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import otel_json as oj
import pytest
from otel_listen_helpers import ROOT, Listener, post

pytestmark = pytest.mark.slow

ANY_AGENT = ROOT.parent / "shared" / "traces" / "otel-anyagent" / "otel_anyagent_openai_trace.json"


def import_otel(path: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalkit", "import", "otel", str(path), "-o", str(out), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def runs_in(out: Path) -> list[list[dict]]:
    return [[json.loads(line) for line in p.read_text().splitlines()] for p in sorted(out.glob("*.jsonl"))]


@pytest.mark.parametrize("start", [10**30, "1000000000000000000000000000000", -5, "1e999", 1e300])
def test_a_time_outside_fixed64_is_a_one_line_error_naming_the_file(tmp_path, start):
    top = oj.agent(1)
    top["startTimeUnixNano"] = start
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(oj.request(top, oj.chat(1, 2, 1))))
    done = import_otel(path, tmp_path / "out")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{path}: request 0: resourceSpans[0].scopeSpans[0].spans[0]: startTimeUnixNano ")
    assert line.endswith("is not an integer in 0..18446744073709551615")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_the_largest_fixed64_time_is_a_correct_import(tmp_path):
    top = oj.agent(1)
    top["startTimeUnixNano"] = str(2**64 - 1)
    path = tmp_path / "edge.json"
    path.write_text(json.dumps(oj.request(top, oj.chat(1, 2, 1))))
    assert import_otel(path, tmp_path / "out").returncode == 0
    ((meta, *_),) = runs_in(tmp_path / "out")
    assert meta["ts_utc"] == "2554-07-21T23:34:33.709551Z"


def test_a_3000_deep_span_chain_is_one_run_from_a_file_and_from_the_receiver(tmp_path):
    chain = [oj.agent(1), oj.chat(1, 2, 1)] + [oj.tool(1, i, i - 1, start=i) for i in range(3, 3003)]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(oj.request(*chain)))
    done = import_otel(path, tmp_path / "out")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    (run,) = runs_in(tmp_path / "out")
    calls = [e for e in run if e["type"] == "tool_call"]
    assert len(calls) == 3000 and [c["call_index"] for c in calls[:3]] == [0, 1, 2]
    live = Listener(tmp_path / "live")
    try:
        assert post(live.port, oj.body(*chain))[0] == 200
        (received,) = live.runs().values()
        assert [r for r in received if "scenario_path" not in r] == [r for r in run if "scenario_path" not in r]
    finally:
        live.stop()


def test_a_nan_attribute_from_a_file_is_the_text_nan(tmp_path):
    path = tmp_path / "nan.json"
    args = {"threshold": float("nan"), "limit": float("inf")}
    path.write_text(json.dumps(oj.request(oj.agent(1), oj.chat(1, 2, 1), oj.tool(1, 3, 1, **{"tool_arguments": args}))))
    done = import_otel(path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    ((call,),) = [[e for e in run if e["type"] == "tool_call"] for run in runs_in(tmp_path / "out")]
    assert call["args"] == {"threshold": "NaN", "limit": "Infinity"}


def _any_agent_tool_spans() -> list[dict]:
    """The execute_tool spans any-agent wrote (its own JSON dump, not OTLP: see issue 36), their
    attributes as they are."""
    if not ANY_AGENT.exists():
        pytest.skip(f"{ANY_AGENT} is not here")
    spans = json.loads(ANY_AGENT.read_text())["spans"]
    return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]


def test_any_agent_tool_arguments_and_results_are_mapped(tmp_path):
    written = _any_agent_tool_spans()
    assert {"gen_ai.tool.args", "gen_ai.output"} <= set(written[0]["attributes"])
    tools = [
        oj.span(1, 10 + i, 1, s["name"], s["attributes"], start=10 + i)  # the same attributes, in OTLP JSON
        for i, s in enumerate(written)
    ]
    path = tmp_path / "any-agent.json"
    path.write_text(json.dumps(oj.request(oj.agent(1, **{"gen_ai.request.model": "mistral/mistral-small"}), *tools)))
    done = import_otel(path, tmp_path / "out")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (run,) = runs_in(tmp_path / "out")
    calls = [e for e in run if e["type"] == "tool_call"]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_current_time", {"timezone": "America/New_York"}),
        ("write_file", {"text": "2025"}),
    ]
    assert [c["result"] for c in calls] == [s["attributes"]["gen_ai.output"] for s in written]
    otel = run[-1]["done_payload"]["otel"]
    assert otel["unmapped"]["tool_arguments"] == 0 and otel["unmapped"]["tool_results"] == 0
    assert otel["unmapped"]["tool_attributes"] == 0 and otel["unmapped_tool_attributes"] == []


@pytest.mark.parametrize(
    "args_attr,result_attr",
    [("tool_arguments", "tool_response"), ("input.value", "output.value"), ("gen_ai.tool.args", "gen_ai.output")],
)
def test_the_tool_attribute_names_agent_frameworks_write_are_read(tmp_path, args_attr, result_attr):
    path = tmp_path / "t.json"
    tool = oj.tool(1, 3, 1, **{args_attr: '{"city": "Oslo"}', result_attr: "sunny"})
    path.write_text(json.dumps(oj.request(oj.agent(1), oj.chat(1, 2, 1), tool)))
    assert import_otel(path, tmp_path / "out").returncode == 0
    ((call,),) = [[e for e in run if e["type"] == "tool_call"] for run in runs_in(tmp_path / "out")]
    assert (call["args"], call["result"]) == ({"city": "Oslo"}, "sunny")


def test_tool_span_attributes_left_unmapped_are_counted_and_named(tmp_path):
    path = tmp_path / "t.json"
    tool = oj.tool(
        1,
        3,
        1,
        **{"acme.tool.input": '{"city": "Oslo"}', "acme.tool.output": "sunny", "gen_ai.tool.description": "weather"},
    )
    path.write_text(json.dumps(oj.request(oj.agent(1), oj.chat(1, 2, 1), tool)))
    done = import_otel(path, tmp_path / "out")
    assert done.returncode == 0
    (run,) = runs_in(tmp_path / "out")
    otel = run[-1]["done_payload"]["otel"]
    assert otel["unmapped"]["tool_attributes"] == 2 and otel["unmapped"]["tool_results"] == 1
    assert otel["unmapped_tool_attributes"] == ["acme.tool.input", "acme.tool.output"]
    assert "tool attributes" in done.stderr and "tool results" in done.stderr  # the import's note
