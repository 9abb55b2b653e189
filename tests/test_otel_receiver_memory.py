"""The OTLP receiver's memory stays bounded over a long life: finished traces are forgotten once they
settle (their late spans refused, never written as a second run), and spans of traces not yet
complete are capped (503 with Retry-After, which exporters retry). Driven over real HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("opentelemetry.sdk")

import otel_helpers as oh  # noqa: E402

from evalkit.importers.formats.otel import Options  # noqa: E402
from evalkit.importers.formats.otel_receiver import Receiver  # noqa: E402


def _post(url: str, spans) -> tuple[int, dict, bytes]:
    body = json.dumps(oh.otlp_json(spans)).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _trace(n_children: int = 1):
    """One trace without an agent span: ``n_children`` chat spans under a root; (children, root)."""
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("POST /chat"):
        for _ in range(n_children):
            with tracer.start_as_current_span(
                "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
            ):
                pass
    tp.shutdown()
    *children, root = memory.get_finished_spans()
    return children, root


@pytest.fixture
def make_receiver(tmp_path):
    started = []

    def make(**kwargs) -> Receiver:
        warnings: list[str] = []
        rec = Receiver("127.0.0.1:0", str(tmp_path / "live"), Options(), lambda line: None, warnings.append, **kwargs)
        rec.warnings = warnings
        started.append(rec.start())
        return rec

    yield make
    for rec in started:
        rec.stop()


def test_a_settled_trace_is_forgotten_and_its_late_span_refused_not_written_twice(make_receiver, tmp_path):
    rec = make_receiver(settle=0.3)
    children, root = _trace(2)
    assert _post(rec.url, [children[0], root])[0] == 200
    assert len(list((tmp_path / "live").glob("*.jsonl"))) == 1
    time.sleep(0.5)
    other_children, other_root = _trace()
    assert _post(rec.url, [*other_children, other_root])[0] == 200  # this request sweeps the first trace
    assert len(rec.traces) == 1 and rec.held == 2  # the first trace is gone
    status, _, body = _post(rec.url, [children[1]])
    answer = json.loads(body)
    assert status == 200 and answer["partialSuccess"]["rejectedSpans"] == "1"
    assert "forgotten" in answer["partialSuccess"]["errorMessage"]
    assert any("not merged" in w for w in rec.warnings)
    assert len(list((tmp_path / "live").glob("*.jsonl"))) == 2  # no partial second run of the first trace
    assert rec.flush() == 0
    # the closing line still counts the forgotten trace's run
    assert rec.summary() == f"wrote 2 run(s) to {tmp_path / 'live'}"


def test_a_late_span_within_the_settle_time_still_rebuilds_its_run(make_receiver, tmp_path):
    rec = make_receiver(settle=60)
    children, root = _trace(2)
    assert _post(rec.url, [children[0], root])[0] == 200
    (path,) = (tmp_path / "live").glob("*.jsonl")
    before = path.read_text()
    assert _post(rec.url, [children[1]])[0] == 200
    assert path.read_text() != before and rec.held == 3


def test_an_incomplete_trace_is_kept_past_the_settle_time_and_written_at_stop(make_receiver, tmp_path):
    rec = make_receiver(settle=0.2)
    children, _root = _trace(1)
    assert _post(rec.url, children)[0] == 200
    time.sleep(0.4)
    assert _post(rec.url, _trace()[0])[0] == 200  # sweeps: nothing complete to forget
    assert rec.held == 2 and rec.flush() == 2  # both orphans written at Ctrl-C, as a file import does


def test_spans_held_beyond_the_cap_get_503_with_retry_after_until_traces_complete(make_receiver, tmp_path):
    rec = make_receiver(settle=0.2, max_held=3)
    a_children, a_root = _trace(2)
    assert _post(rec.url, a_children)[0] == 200  # 2 held, incomplete
    b_children, b_root = _trace(1)
    status, headers, body = _post(rec.url, [*b_children, b_root])
    assert status == 503 and headers.get("Retry-After") == "5" and b"retry later" in body
    assert not list((tmp_path / "live").glob("*.jsonl"))  # the refused request kept nothing
    assert _post(rec.url, [a_root])[0] == 200  # completes trace a (3 held)
    time.sleep(0.3)
    assert _post(rec.url, [*b_children, b_root])[0] == 200  # a settled and was forgotten: room again
    assert len(list((tmp_path / "live").glob("*.jsonl"))) == 2 and rec.held == 2


def test_spans_sent_twice_are_counted_once(make_receiver):
    rec = make_receiver()
    children, root = _trace(1)
    for _ in range(3):
        assert _post(rec.url, children)[0] == 200
    assert rec.held == 1


def _nested_agents():
    """An orchestrator agent that calls a researcher agent, each with a chat turn; the spans in the
    order the SDK exports them (each as it ends: the inner agent before the outer)."""
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")

    def chat():
        with tracer.start_as_current_span(
            "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        ):
            pass

    agent = lambda name: {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}  # noqa: E731
    with tracer.start_as_current_span("invoke_agent orchestrator", attributes=agent("orchestrator")):
        chat()
        with tracer.start_as_current_span("invoke_agent researcher", attributes=agent("researcher")):
            chat()
        chat()
    tp.shutdown()
    return list(memory.get_finished_spans())


def test_nested_agents_sent_live_end_as_the_one_run_a_file_import_gives(make_receiver, tmp_path):
    from evalkit.importers.formats.otel_importer import IMPORTER

    rec = make_receiver()
    lines: list[str] = []
    rec.echo = lines.append
    spans = _nested_agents()
    for span in spans:  # one request a span, as a SimpleSpanProcessor exports them
        assert _post(rec.url, [span])[0] == 200
    files = sorted((tmp_path / "live").glob("*.jsonl"))
    path = oh.write_collector_file(tmp_path / "t.jsonl", [spans])
    (expected,) = IMPORTER.convert(str(path)).runs  # the file import: the outermost agent's run
    assert len(files) == 1
    live = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert live[0]["run_id"] == expected[0]["run_id"]
    assert any("is part of run" in line and "removed" in line for line in lines)  # the inner run written first


def test_nested_agents_in_one_request_write_only_the_outer_run(make_receiver, tmp_path):
    rec = make_receiver()
    lines: list[str] = []
    rec.echo = lines.append
    assert _post(rec.url, _nested_agents())[0] == 200
    assert len(list((tmp_path / "live").glob("*.jsonl"))) == 1
    assert not any("removed" in line for line in lines)  # nothing written to be taken back
