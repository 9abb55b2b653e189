"""`evalkit import otel`: traces from the real OpenTelemetry SDK (an `openai`-client agent loop
against the fake server, see otel_helpers.py) in the Collector file-exporter format, the older
gen_ai.prompt/event forms, every mapping rule and refusal, and --workers 1 vs 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
openai = pytest.importorskip("openai")

import otel_helpers as oh  # noqa: E402
import otel_json as oj  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from evalkit.cli import cli  # noqa: E402
from evalkit.engines.pipeline import score_files  # noqa: E402
from evalkit.errors import InputError  # noqa: E402
from evalkit.importers import ImportFormatError, import_files  # noqa: E402
from evalkit.importers.formats.otel_importer import IMPORTER  # noqa: E402

SCENARIO = {
    "id": "refund",
    "title": "refund order A1",
    "task_prompt": "Refund order A1.",
    "ground_truth": {
        "procedure": [
            {
                "block": "refund",
                "ordered": True,
                "actions": [
                    {"tool": "lookup_order", "args": {"order_id": "A1"}},
                    {"tool": "refund_order", "args": {"order_id": "A1"}},
                ],
            }
        ]
    },
    "success": {"final_state": [{"var": "evalkit.success", "op": "==", "value": True}]},
    "command_tools": ["lookup_order", "refund_order", "cancel_order"],
}
RUNS = [
    {"plan": ["lookup_order", "refund_order"], "success": False},  # refund fails: an errored call
    {"plan": ["lookup_order", "cancel_order"], "success": True},
    {"plan": [], "success": None, "scenario": None},  # no end state, no scenario id
]


@pytest.fixture
def traces(server, tmp_path):
    """Three runs' spans, exported in two batches (as a BatchSpanProcessor would) to a file."""
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    memory = oh.record_runs(client, RUNS)
    spans = memory.get_finished_spans()
    path = oh.write_collector_file(tmp_path / "traces.jsonl", [spans[:5], spans[5:]])
    return path, spans


def _convert(path: Path, **options):
    converted = IMPORTER.convert(str(path), **options)
    return {run[0]["otel"]["trace_id"]: run for run in converted.runs}, converted


def _by_order(runs: dict, spans) -> list[list[dict]]:
    tops = [s for s in spans if s.name.startswith("invoke_agent")]
    return [runs[format(s.context.trace_id, "032x")] for s in sorted(tops, key=lambda s: s.start_time)]


def test_one_run_per_invoke_agent_span_with_its_ids(traces):
    path, spans = traces
    runs, converted = _convert(path)
    assert not converted.errors and len(runs) == 3
    for top, run in zip(
        sorted((s for s in spans if s.name.startswith("invoke_agent")), key=lambda s: s.start_time),
        _by_order(runs, spans),
    ):
        trace_id, span_id = format(top.context.trace_id, "032x"), format(top.context.span_id, "016x")
        assert run[0]["run_id"] == f"otel:{trace_id}:{span_id}"
        assert run[0]["otel"] == {
            "trace_id": trace_id,
            "span_id": span_id,
            "agent": "support",
            "service": "refund-agent",
        }


def test_tool_calls_come_from_execute_tool_spans_in_start_order(traces):
    path, spans = traces
    first, second, third = _by_order(_convert(path)[0], spans)
    calls = [e for e in first if e["type"] == "tool_call"]
    assert [(c["name"], c["args"], c["step"], c["call_index"]) for c in calls] == [
        ("lookup_order", {"order_id": "A1"}, 1, 0),
        ("refund_order", {"order_id": "A1"}, 2, 0),
    ]
    assert calls[0]["result"] == '{"order_id": "A1", "status": "delivered"}' and calls[0]["is_error"] is False
    # the error comes from the span status; its message stands in for the missing result
    assert calls[1]["is_error"] is True and calls[1]["result"] == "order A1 is past the refund window"
    assert [e["name"] for e in second if e["type"] == "tool_call"] == ["lookup_order", "cancel_order"]
    assert not [e for e in third if e["type"] == "tool_call"]


def test_assistant_text_model_and_prompt_come_from_the_chat_spans(traces):
    path, spans = traces
    first = _by_order(_convert(path)[0], spans)[0]
    assistants = [e for e in first if e["type"] == "assistant"]
    assert [(a["step"], a["stop_reason"]) for a in assistants] == [(1, "tool_calls"), (2, "tool_calls"), (3, "stop")]
    assert assistants[-1]["text"] == '{"text": "ok"}'  # what the fake model said
    assert first[0]["adapter"] == {"provider": "openai", "model": oh.MODEL, "harness": "otel"}
    assert first[2] == {"type": "nudge", "step": 0, "text": "Please refund order A1."}
    assert first[-1]["done_payload"]["otel"]["unmapped"] == {
        "spans": 0,
        "chat_outputs": 0,
        "tool_arguments": 0,
        "tool_results": 0,
        "tool_attributes": 0,
    }


def test_scenario_comes_from_the_scenarios_file_by_attribute(traces, tmp_path):
    path, spans = traces
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([SCENARIO]))
    runs, converted = _convert(path, scenarios=str(scenarios))
    # the third run names no scenario: an error for it alone, the others are converted
    assert len(runs) == 2 and len(converted.errors) == 1
    assert "no scenario: attribute evalkit.scenario_id is not set on the run's spans or resource" in str(
        converted.errors[0]
    )
    assert all(run[0]["scenario"]["id"] == "refund" for run in runs.values())


def test_scenario_attr_option_and_unknown_scenario(traces, tmp_path):
    path, _ = traces
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text(json.dumps(SCENARIO) + "\n")
    runs, converted = _convert(path, scenarios=str(scenarios), scenario_attr="service.name")  # a resource attribute
    assert not runs and {str(e).split(": ", 1)[1].split(": ", 1)[1] for e in converted.errors} == {
        "scenario 'refund-agent' (attribute service.name) is not in --scenarios"
    }


def test_without_scenarios_every_tool_called_is_a_command_and_nothing_is_required(traces):
    path, spans = traces
    first = _by_order(_convert(path)[0], spans)[0]
    scenario = first[0]["scenario"]
    assert scenario["id"] == "refund" and scenario["ground_truth"]["procedure"] == []
    assert scenario["command_tools"] == ["lookup_order", "refund_order"]
    assert _by_order(_convert(path)[0], spans)[2][0]["scenario"]["id"] == "otel/support"


def test_end_state_from_the_attribute_or_a_results_file(traces, tmp_path):
    path, spans = traces
    runs = _by_order(_convert(path)[0], spans)
    assert [r[-1]["success_eval"] and r[-1]["success_eval"]["all_passed"] for r in runs] == [False, True, None]
    results = tmp_path / "results.jsonl"
    third = runs[2][0]
    results.write_text(
        json.dumps({"trace_id": third["otel"]["trace_id"].upper(), "success": True})
        + "\n"
        + json.dumps({"run_id": runs[0][0]["run_id"], "success": True})
        + "\n"
    )
    again = _by_order(_convert(path, results=str(results))[0], spans)
    assert [r[-1]["success_eval"]["all_passed"] for r in again] == [True, True, True]


def test_imported_runs_score_against_the_scenario(traces, tmp_path):
    path, _ = traces
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([SCENARIO]))
    out = tmp_path / "runs"
    result = import_files("otel", [path], out, scenarios=str(scenarios))
    assert result.runs == 2 and len(result.errors) == 1
    cards = {c.vector.all_passed: c for c in score_files([out]) if not isinstance(c, InputError)}
    assert cards[False].vector.coverage == 0.5  # refund_order errored: only lookup_order matched
    assert cards[True].vector.coverage == 0.5 and cards[True].vector.extraneous == 1  # cancel_order


def test_scenarios_file_with_a_repeated_id_is_refused_not_the_later_one_taken(traces, tmp_path):
    path, _ = traces
    other = {**SCENARIO, "title": "another task under the same id", "ground_truth": {"procedure": []}}
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([SCENARIO, other], indent=1))
    result = import_files("otel", [path], tmp_path / "runs", scenarios=str(scenarios))
    assert result.runs == 0 and len(result.errors) == 1
    assert 'scenario.id: "refund" is already the id of the scenario at' in str(result.errors[0])
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())


def test_scenarios_file_is_checked_as_score_checks_it(traces, tmp_path):
    """A scenario `evalkit score` refuses is refused at import, not embedded in runs none can score."""
    path, _ = traces
    bad = {
        **SCENARIO,
        "ground_truth": {
            **SCENARIO["ground_truth"],
            "forbidden_actions": [{"tool": "close_account", "severity": "dangerous"}],
        },
    }
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps([bad]))
    result = import_files("otel", [path], tmp_path / "runs", scenarios=str(scenarios))
    assert result.runs == 0 and len(result.errors) == 1
    assert 'tool "close_account" is not in command_tools' in str(result.errors[0])


def test_listen_with_an_unreadable_scenarios_file_is_one_error_line_not_a_traceback(tmp_path):
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text('[{"id": "x", "ground_truth": {}')  # cut short
    for option in ("--scenarios", "--results"):
        res = CliRunner().invoke(
            cli, ["import", "otel", "--listen", "127.0.0.1:0", "-o", str(tmp_path / "runs"), option, str(scenarios)]
        )
        assert res.exit_code == 1 and res.exception is None or isinstance(res.exception, SystemExit), res.output
        assert res.output.strip().splitlines() == [
            f"error: {scenarios}:1: not valid JSON: EOF while parsing an object (column 31)"
        ]


def _same_start_tools() -> list[dict]:
    """Four tool calls one after another, timed by a millisecond clock: the same start and end;
    their span ids sort in the reverse of the order they ran."""
    spans = [oj.agent(7, sid=1), oj.chat(7, 2, 1, start=1)]
    for sid, name in zip((0xD, 0xC, 0xB, 0xA), ("first", "second", "third", "fourth")):
        spans.append(oj.tool(7, sid, 1, name=name, start=5))
    return spans


def test_tool_spans_that_start_together_keep_their_input_order_not_their_span_ids(tmp_path):
    path = tmp_path / "ms_clock.json"
    path.write_text(json.dumps(oj.request(*_same_start_tools())))
    (run,) = IMPORTER.convert(str(path), model="acme/m1").runs
    assert [r["name"] for r in run if r["type"] == "tool_call"] == ["first", "second", "third", "fourth"]


def test_tool_spans_that_start_together_are_in_end_order(tmp_path):
    spans = _same_start_tools()
    spans[3]["endTimeUnixNano"] = str(int(spans[3]["endTimeUnixNano"]) + 1)  # "second" ends last
    path = tmp_path / "ms_clock.json"
    path.write_text(json.dumps(oj.request(*spans)))
    (run,) = IMPORTER.convert(str(path), model="acme/m1").runs
    assert [r["name"] for r in run if r["type"] == "tool_call"] == ["first", "third", "fourth", "second"]


def test_a_trace_cut_over_two_files_is_said_not_silently_two_runs(tmp_path):
    spans = [oj.agent(3), oj.chat(3, 2, 1, start=1), oj.tool(3, 3, 1, name="x", start=3), oj.tool(3, 4, 1, name="y")]
    first, second = tmp_path / "traces-1.json", tmp_path / "traces-2.json"  # a rotated exporter file
    first.write_text(json.dumps(oj.request(*spans[:3])))
    second.write_text(json.dumps(oj.request(spans[3])))
    result = import_files("otel", [first, second], tmp_path / "runs", model="acme/m1")
    assert result.runs == 2
    (cut,) = [n for n in result.notes if "part of a trace" in n]
    assert cut.startswith(f"note: 1 run(s) in {second} hold only part of a trace: their top span's parent is not")
    assert "(traces 00000000000000000000000000000003)" in cut
    whole = tmp_path / "whole.jsonl"
    whole.write_text(first.read_text() + "\n" + second.read_text() + "\n")  # the fix the note gives
    joined = import_files("otel", [whole], tmp_path / "joined", model="acme/m1")
    assert joined.runs == 1 and not [n for n in joined.notes if "part of a trace" in n]


def test_arguments_overflowing_to_infinity_are_an_error_naming_the_run(tmp_path):
    args = '{"zone": "all", "target_c": 1e400}'
    path = tmp_path / "inf.json"
    path.write_text(
        json.dumps(oj.request(oj.agent(5), oj.chat(5, 2, 1), oj.tool(5, 3, 1, **{"gen_ai.tool.call.arguments": args})))
    )
    result = import_files("otel", [path], tmp_path / "runs")
    (error,) = result.errors
    assert str(error).startswith(f"{path}: cannot write run 'otel:{5:032x}:{1:016x}' as JSON: Out of range float")


def test_a_trace_without_invoke_agent_is_one_run_and_other_spans_are_counted(tmp_path):
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("POST /chat", kind=SpanKind.SERVER):
        with tracer.start_as_current_span("db.query"):
            pass
        with tracer.start_as_current_span(
            "chat m",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.response.model": "acme/m",
                "gen_ai.output.messages": "not json",
            },
        ):
            pass
        with tracer.start_as_current_span("execute_tool lookup", attributes={"gen_ai.tool.call.arguments": '{"q": 1}'}):
            pass
    tp.shutdown()
    path = oh.write_collector_file(tmp_path / "t.jsonl", [memory.get_finished_spans()])
    (run,), _ = _convert(path)[1].runs, None
    root = [s for s in memory.get_finished_spans() if s.name == "POST /chat"][0]
    assert run[0]["run_id"] == f"otel:{root.context.trace_id:032x}:{root.context.span_id:016x}"
    assert run[0]["adapter"]["model"] == "acme/m" and run[0]["adapter"]["provider"] == "acme"
    assert [(e["name"], e["args"]) for e in run if e["type"] == "tool_call"] == [
        ("lookup", {"q": 1})
    ]  # name from the span name
    assert run[-1]["done_payload"]["otel"]["unmapped"] == {
        "spans": 1,
        "chat_outputs": 1,
        "tool_arguments": 0,
        "tool_results": 1,  # the tool span records no result
        "tool_attributes": 0,
    }
    (note,) = _convert(path)[1].notes  # and said once, on stderr, by evalkit import
    assert note.kind == "otel/unmapped" and note.lines == 3
    assert note.items == {"spans", "chat outputs", "tool results"}
    assert note.render().startswith("note: 3 span(s) or message(s) in ")
    assert "(chat outputs, spans, tool results)" in note.render()


def test_two_agents_in_one_trace_are_two_runs(server, tmp_path):
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("session"):
        oh.agent_run(tracer, client, ["lookup_order"], agent="triage")
        oh.agent_run(tracer, client, ["cancel_order"], agent="resolver")
    tp.shutdown()
    path = oh.write_collector_file(tmp_path / "t.jsonl", [memory.get_finished_spans()])
    runs = IMPORTER.convert(str(path)).runs
    assert [(r[0]["otel"]["agent"], [e["name"] for e in r if e["type"] == "tool_call"]) for r in runs] == [
        ("triage", ["lookup_order"]),
        ("resolver", ["cancel_order"]),
    ]
    assert len({r[0]["otel"]["trace_id"] for r in runs}) == 1


@pytest.mark.parametrize("form", ["openllmetry", "prompt_attr", "content_events", "choice_event"])
def test_older_conventions_are_read(tmp_path, form):
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span(
            "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        ) as chat:
            if form == "openllmetry":
                chat.set_attributes(
                    {
                        "gen_ai.prompt.0.role": "system",
                        "gen_ai.prompt.0.content": "be brief",
                        "gen_ai.prompt.1.role": "user",
                        "gen_ai.prompt.1.content": "hello",
                        "gen_ai.completion.0.role": "assistant",
                        "gen_ai.completion.0.content": "hi there",
                        "gen_ai.completion.0.finish_reason": "stop",
                    }
                )
            elif form == "prompt_attr":
                chat.set_attributes(
                    {
                        "gen_ai.prompt": json.dumps([{"role": "user", "content": "hello"}]),
                        "gen_ai.completion": json.dumps([{"role": "assistant", "content": "hi there"}]),
                    }
                )
            elif form == "content_events":
                chat.add_event(
                    "gen_ai.content.prompt", {"gen_ai.prompt": json.dumps([{"role": "user", "content": "hello"}])}
                )
                chat.add_event(
                    "gen_ai.content.completion",
                    {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "hi there"}])},
                )
            else:
                chat.add_event("gen_ai.user.message", {"content": "hello"})
                chat.add_event(
                    "gen_ai.choice",
                    {"finish_reason": "stop", "message": json.dumps({"role": "assistant", "content": "hi there"})},
                )
    tp.shutdown()
    path = oh.write_collector_file(tmp_path / "t.jsonl", [memory.get_finished_spans()])
    (run,) = IMPORTER.convert(str(path)).runs
    (assistant,) = [e for e in run if e["type"] == "assistant"]
    assert assistant["text"] == "hi there"
    assert [e["text"] for e in run if e["type"] == "nudge"] == ["hello"]
    assert run[-1]["done_payload"]["otel"]["unmapped"]["chat_outputs"] == 0


def test_one_json_document_and_base64_ids_are_read(traces, tmp_path):
    path, spans = traces
    doc = tmp_path / "one.json"
    doc.write_text(json.dumps(oh.otlp_json(spans), indent=2))
    proto_json = tmp_path / "proto.json"
    proto_json.write_text(json.dumps(oh.to_proto_json(oh.otlp_json(spans))))
    expected = sorted(r[0]["run_id"] for r in IMPORTER.convert(str(path)).runs)
    assert sorted(r[0]["run_id"] for r in IMPORTER.convert(str(doc)).runs) == expected
    assert sorted(r[0]["run_id"] for r in IMPORTER.convert(str(proto_json)).runs) == expected


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "empty file; expected OTLP JSON"),
        ('{"resourceSpans": []}\n{broken\n', r":2: not valid JSON"),
        ('{"resourceLogs": []}', r"request 0: no resourceSpans list \(not OTLP trace JSON\)"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "00f067aa0ba902b7"}]}]}]}',
            r"request 0: resourceSpans\[0\].scopeSpans\[0\].spans\[0\]: id 'zz' is neither hex nor base64",
        ),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "00f067aa0ba902b7"}]}]}]}',
            r"spans\[0\]: needs traceId and spanId",
        ),
        ('{"resourceSpans": []}', "no spans in file"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ImportFormatError, match=message) as info:
        IMPORTER.convert(str(path))
    assert "\n" not in str(info.value)


def test_bad_runs_are_errors_for_that_run_only(tmp_path):
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    for args in ('{"q": ', "[1]"):
        with tracer.start_as_current_span(
            "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "m"}
        ):
            with tracer.start_as_current_span("execute_tool t", attributes={"gen_ai.tool.call.arguments": args}):
                pass
    with tracer.start_as_current_span(
        "invoke_agent b", attributes={"gen_ai.operation.name": "invoke_agent", "evalkit.success": "yes"}
    ):
        pass
    with tracer.start_as_current_span(
        "invoke_agent c", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "m"}
    ):
        pass
    tp.shutdown()
    path = oh.write_collector_file(tmp_path / "t.jsonl", [memory.get_finished_spans()])
    converted = IMPORTER.convert(str(path))
    assert len(converted.runs) == 1
    messages = sorted(str(e).split(": ", 2)[2] for e in converted.errors)
    assert len(messages) == 3
    assert any("gen_ai.tool.call.arguments: arguments are not valid JSON" in m for m in messages)
    assert any("gen_ai.tool.call.arguments: arguments must decode to a JSON object" in m for m in messages)
    assert any(
        "no model: no chat span has gen_ai.request.model or gen_ai.response.model; pass --model NAME" in m
        for m in messages
    )
    assert IMPORTER.convert(str(path), model="fallback").errors[-1:] and any(
        "evalkit.success must be a boolean" in str(e) for e in IMPORTER.convert(str(path), model="fallback").errors
    )


def test_two_workers_write_the_same_bytes_as_one(server, tmp_path):
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    inputs = []
    for n in range(3):
        spans = oh.record_runs(client, RUNS[:2]).get_finished_spans()
        inputs.append(str(oh.write_collector_file(tmp_path / f"traces-{n}.jsonl", [spans])))
    outs = {}
    for workers in ("1", "2"):
        cwd = tmp_path / f"w{workers}"
        cwd.mkdir()
        old = os.getcwd()
        os.chdir(cwd)
        try:
            res = CliRunner().invoke(cli, ["import", "otel", *inputs, "-o", "runs", "--workers", workers])
        finally:
            os.chdir(old)
        assert res.exit_code == 0, res.output
        outs[workers] = (res.stdout, {p.name: p.read_bytes() for p in sorted((cwd / "runs").iterdir())})
    assert outs["1"] == outs["2"] and len(outs["1"][1]) == 6


def test_tool_calls_that_record_no_arguments_are_named_in_a_note_of_their_own_with_the_fix(tmp_path):
    bare = {"gen_ai.operation.name": "execute_tool"}  # content capture off: no arguments, no result
    spans = [
        oj.agent(1),
        oj.chat(1, 2, 1),
        oj.span(1, 3, 1, "execute_tool read_sensor", {**bare, "gen_ai.tool.name": "read_sensor"}, 3),
        oj.span(1, 4, 1, "execute_tool set_setpoint", {**bare, "gen_ai.tool.name": "set_setpoint"}, 4),
        oj.agent(2),
        oj.chat(2, 2, 1),
        oj.tool(2, 3, 1, **{"gen_ai.tool.call.result": "ok"}),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(oj.request(*spans)))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["import", "otel", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert (
        f"note: 2 tool call(s) in {path} record no arguments (read_sensor, set_setpoint): they are scored as "
        "calls with no arguments, so no argument rule matches them. GenAI instrumentations record arguments "
        "and results only with content capture on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
    ) in notes, notes
    (unmapped,) = [n for n in notes if "could not be mapped" in n]
    assert "tool results" in unmapped and "tool arguments" not in unmapped  # those are not "left out"
    # check names it, so a CI that runs `evalkit check --strict` on the imported runs fails
    checked = CliRunner().invoke(cli, ["check", str(out), "--strict"])
    assert checked.exit_code == 2, checked.output
    (line,) = [line for line in checked.stdout.splitlines() if "recorded without their arguments" in line]
    assert "scenario: 1 of the 2 runs hold 2 tool call(s) recorded without their arguments " in line
    assert "(read_sensor, set_setpoint; the first: " in line
    # the run page says it where the run's status is explained
    import view_helpers as vh

    db = str(tmp_path / "e.db")
    assert CliRunner().invoke(cli, ["score", str(out), "--db", db, "--format", "jsonl"]).exit_code == 0
    with vh.client(db) as c:
        reasons = {
            r["run_id"]: c.get("/api" + vh.run_url(r["run_id"])).json()["status_reason"]
            for r in c.get("/api/runs").json()["runs"]
        }
    said = [line for lines in reasons.values() for line in lines if "recorded no arguments" in line]
    assert said == [
        "the trace recorded no arguments for 2 tool call(s) of read_sensor, set_setpoint (content capture off?): "
        "they are scored as calls with no arguments, so no argument rule matches them"
    ], reasons


def test_a_tool_span_without_arguments_takes_those_of_the_model_request_with_its_call_id(tmp_path):
    """The model's chat span records the calls it asked for (with arguments); the framework's tool
    spans record only the call id. The call ran with what was asked: matched by id, never by name."""
    asked = [
        {"type": "tool_call", "id": "call_1", "name": "set_setpoint", "arguments": {"room": "3-114", "celsius": 21.5}},
        {"type": "tool_call", "id": "call_2", "name": "set_setpoint", "arguments": {"room": "3-115", "celsius": 20}},
    ]
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m1",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": asked}]),
    }
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "set_setpoint"}
    spans = [
        oj.agent(1),
        oj.span(1, 2, 1, "chat m1", chat, 2),
        oj.span(1, 3, 1, "execute_tool set_setpoint", {**tool, "gen_ai.tool.call.id": "call_2"}, 3),
        oj.span(1, 4, 1, "execute_tool set_setpoint", {**tool, "gen_ai.tool.call.id": "call_1"}, 4),
        oj.span(1, 5, 1, "execute_tool set_setpoint", {**tool, "gen_ai.tool.call.id": "call_9"}, 5),  # asked by none
        oj.span(1, 6, 1, "execute_tool set_setpoint", tool, 6),  # no id: nothing to match it by
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(oj.request(*spans)))
    runs, converted = _convert(path)
    (run,) = runs.values()
    assert [e["args"] for e in run if e["type"] == "tool_call"] == [
        {"room": "3-115", "celsius": 20},
        {"room": "3-114", "celsius": 21.5},
        {},
        {},
    ]
    otel = run[-1]["done_payload"]["otel"]
    assert otel["arguments_from_requests"] == 2 and otel["unmapped"]["tool_arguments"] == 2
    assert otel["requested_not_run"] == 0
    (note,) = [n for n in converted.notes if n.kind == "otel/no_arguments"]
    assert note.lines == 2
