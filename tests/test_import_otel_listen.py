"""`evalkit import otel --listen`: the OTLP/HTTP receiver, fed by the SDK's own OTLP/HTTP exporter
(protobuf) and by OTLP JSON posts; runs are written as their top span arrives, the same runs as a
file import of the same spans."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
openai = pytest.importorskip("openai")

import otel_helpers as oh  # noqa: E402
import otel_json as oj  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402

from evalkit.cli import cli  # noqa: E402
from evalkit.importers.formats.otel import Options  # noqa: E402
from evalkit.importers.formats.otel_importer import IMPORTER  # noqa: E402
from evalkit.importers.formats.otel_receiver import Receiver, parse_address  # noqa: E402
from evalkit.trajectory.reader import read_trajectory  # noqa: E402

RUNS = [{"plan": ["lookup_order", "refund_order"], "success": False}, {"plan": ["lookup_order"], "success": True}]


@pytest.fixture
def receiver(tmp_path):
    lines: list[str] = []
    rec = Receiver("127.0.0.1:0", str(tmp_path / "live"), Options(), lines.append).start()
    rec.lines = lines
    yield rec
    rec.stop()


def _post(url: str, body: bytes, content_type: str) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _same_but_source(a: list[dict], b: list[dict]) -> bool:
    strip = lambda run: [{k: v for k, v in r.items() if k != "scenario_path"} for r in run]  # noqa: E731
    return strip(a) == strip(b)


def test_sdk_protobuf_export_writes_the_runs_a_file_import_gives(server, receiver, tmp_path):
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    memory = oh.record_runs(client, RUNS, OTLPSpanExporter(endpoint=receiver.url))
    files = sorted((tmp_path / "live").glob("*.jsonl"))
    assert len(files) == 2 and len([line for line in receiver.lines if " -> " in line]) == 2
    path = oh.write_collector_file(tmp_path / "t.jsonl", [memory.get_finished_spans()])
    by_id = {run[0]["run_id"]: json.loads(json.dumps(run)) for run in IMPORTER.convert(str(path)).runs}
    for f in files:
        live = _records(f)
        assert _same_but_source(live, by_id[live[0]["run_id"]])
        assert read_trajectory(f).meta.run_id == live[0]["run_id"]  # a valid trajectory


def test_json_posts_write_a_run_once_its_top_span_arrives(server, receiver, tmp_path):
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    spans = oh.record_runs(client, RUNS[:1]).get_finished_spans()
    inner, top = (
        [s for s in spans if not s.name.startswith("invoke_agent")],
        [s for s in spans if s.name.startswith("invoke_agent")],
    )
    status, body = _post(receiver.url, json.dumps(oh.otlp_json(inner)).encode(), "application/json")
    assert (status, body) == (200, b"{}")
    assert not list((tmp_path / "live").glob("*.jsonl"))  # the run is not complete yet
    assert _post(receiver.url, json.dumps(oh.otlp_json(top)).encode(), "application/json")[0] == 200
    (written,) = (tmp_path / "live").glob("*.jsonl")
    assert [e["name"] for e in _records(written) if e["type"] == "tool_call"] == ["lookup_order", "refund_order"]


def test_tool_spans_that_start_together_keep_their_arrival_order(receiver, tmp_path):
    names = ["first", "second", "third"]
    for sid, name in zip((0xD, 0xC, 0xB), names):  # one request per call, ids sorting backwards
        assert _post(receiver.url, oj.body(oj.tool(8, sid, 1, name=name, start=5)), "application/json")[0] == 200
    assert _post(receiver.url, oj.body(oj.chat(8, 2, 1, start=1), oj.agent(8)), "application/json")[0] == 200
    (written,) = (tmp_path / "live").glob("*.jsonl")
    assert [e["name"] for e in _records(written) if e["type"] == "tool_call"] == names


def test_a_trace_without_agent_waits_for_its_root(receiver, tmp_path):
    memory = oh.InMemorySpanExporter()
    tp = oh.provider(memory)
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("POST /chat"):
        with tracer.start_as_current_span(
            "chat m", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        ):
            pass
    tp.shutdown()
    child, root = memory.get_finished_spans()
    assert _post(receiver.url, json.dumps(oh.otlp_json([child])).encode(), "application/json")[0] == 200
    assert not list((tmp_path / "live").glob("*.jsonl"))
    assert _post(receiver.url, json.dumps(oh.otlp_json([root])).encode(), "application/json")[0] == 200
    assert len(list((tmp_path / "live").glob("*.jsonl"))) == 1


@pytest.mark.parametrize(
    "body,content_type",
    [
        (b"{not json", "application/json"),
        (b"\xff\x00garbage", "application/x-protobuf"),
        (b'{"resourceLogs": []}', "application/json"),
    ],
)
def test_a_request_that_cannot_be_read_is_400_and_keeps_nothing(receiver, body, content_type):
    status, text = _post(receiver.url, body, content_type)
    assert status == 400 and text.startswith(b"cannot read the request")
    assert receiver.traces == {}


def test_other_paths_are_404(receiver):
    assert _post(receiver.url.replace("/v1/traces", "/v1/logs"), b"", "application/x-protobuf")[0] == 404


@pytest.mark.parametrize("address", ["4318", "localhost:", ":4318", "host:port"])
def test_listen_address_must_be_host_and_port(address):
    with pytest.raises(ValueError, match="--listen needs HOST:PORT"):
        parse_address(address)


def test_cli_listen_usage_errors(tmp_path):
    (tmp_path / "t.jsonl").write_text("{}")
    res = CliRunner().invoke(
        cli, ["import", "otel", str(tmp_path / "t.jsonl"), "--listen", "127.0.0.1:0", "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 2 and "--listen takes no FILE" in res.stderr
    res = CliRunner().invoke(cli, ["import", "openai-messages", "--listen", "127.0.0.1:0", "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--listen is not used by format openai-messages" in res.stderr
