"""`evalkit export otel`: ScoreCards and judge annotations as gen_ai.evaluation.result events, read
back with opentelemetry-proto's own message types, on the trace and span of runs that came from
traces (real SDK traces of an `openai`-client agent loop, see otel_helpers.py)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("opentelemetry.proto")
openai = pytest.importorskip("openai")

import otel_helpers as oh  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from judge_helpers import PATIENT  # noqa: E402
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402

from evalkit.cli import cli  # noqa: E402
from evalkit.importers import import_files  # noqa: E402

RUNS = [{"plan": ["lookup_order", "refund_order"], "success": False}, {"plan": ["lookup_order"], "success": True}]
PER_RUN = 7 + 1 + 5  # vector components, the scalar, the checks


@pytest.fixture
def judged_db(server, tmp_path):
    """Runs imported from real traces, scored, and judged by the fake judge: (db, spans, runs dir)."""
    client = openai.OpenAI(base_url=server.api_base, api_key="sk-fake", max_retries=0)
    spans = oh.record_runs(client, RUNS).get_finished_spans()
    path = oh.write_collector_file(tmp_path / "traces.jsonl", [spans])
    runs = tmp_path / "runs"
    assert not import_files("otel", [path], runs).errors
    db = str(tmp_path / "e.db")
    res = CliRunner().invoke(cli, ["score", str(runs), "--db", db])
    assert res.exit_code == 0, res.output
    from evalkit.judges.api import judge_db

    judge_db(db, ["openai/smollm2"], api_base=server.api_base, config=PATIENT)
    return db, spans, runs


def _parse(line: str) -> ExportLogsServiceRequest:
    return json_format.Parse(json.dumps(oh.to_proto_json(json.loads(line))), ExportLogsServiceRequest())


def _records(req: ExportLogsServiceRequest):
    (rl,) = req.resource_logs
    (sl,) = rl.scope_logs
    return list(sl.log_records)


def _attrs(record) -> dict:
    out = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def _export(tmp_path, db, *extra):
    out = tmp_path / "evals.jsonl"
    res = CliRunner().invoke(cli, ["export", "otel", str(out), "--db", db, *extra])
    assert res.exit_code == 0, res.output
    return out, res


def test_events_parse_as_otlp_and_sit_on_the_runs_invoke_agent_span(judged_db, tmp_path):
    db, spans, _ = judged_db
    out, res = _export(tmp_path, db)
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    tops = {
        format(s.context.trace_id, "032x"): format(s.context.span_id, "016x")
        for s in spans
        if s.name.startswith("invoke_agent")
    }
    for line in lines:
        records = _records(_parse(line))
        trace_id, span_id = records[0].trace_id.hex(), records[0].span_id.hex()
        assert tops[trace_id] == span_id
        assert all(r.event_name == "gen_ai.evaluation.result" and r.trace_id.hex() == trace_id for r in records)
        assert _attrs(records[0])["evalkit.run_id"] == f"otel:{trace_id}:{span_id}"
    assert res.stdout.strip().endswith(f"-> {out}")


def test_one_event_per_vector_component_check_and_judge_dimension(judged_db, tmp_path):
    db, _, _ = judged_db
    out, _ = _export(tmp_path, db)
    for line in out.read_text().splitlines():
        records = [_attrs(r) for r in _records(_parse(line))]
        names = [r["gen_ai.evaluation.name"] for r in records]
        assert names[:8] == [
            "evalkit.coverage",
            "evalkit.order",
            "evalkit.end_state",
            "evalkit.all_passed",
            "evalkit.safety_dangerous",
            "evalkit.safety_anti_procedure",
            "evalkit.extraneous",
            "evalkit.scalar",
        ]
        assert names[8:PER_RUN] == [
            "evalkit.check.reached_goal",
            "evalkit.check.used_only_expected_tools",
            "evalkit.check.correct_order",
            "evalkit.check.no_redundant_calls",
            "evalkit.check.approvals_respected",
        ]
        judge = records[PER_RUN:]
        assert judge and all(n.startswith("evalkit.judge.") for n in names[PER_RUN:])
        assert all(r["evalkit.judge.model"] == "openai/smollm2" for r in judge)
        # the rationale of the judge is the explanation; a label or a value is always there
        assert all(r.get("gen_ai.evaluation.explanation") for r in judge)
        assert all("gen_ai.evaluation.score.label" in r or "gen_ai.evaluation.score.value" in r for r in records)
        by_name = dict(zip(names, records))
        passed = by_name["evalkit.all_passed"]
        assert passed["gen_ai.evaluation.score.label"] in ("pass", "fail")
        assert passed["gen_ai.evaluation.score.value"] == (
            1.0 if passed["gen_ai.evaluation.score.label"] == "pass" else 0.0
        )
        assert by_name["evalkit.order"]["gen_ai.evaluation.score.label"] == "undefined"  # no ground truth: no order
        assert "gen_ai.evaluation.score.value" not in by_name["evalkit.order"]


def test_export_is_deterministic(judged_db, tmp_path):
    db, _, _ = judged_db
    first, _ = _export(tmp_path, db)
    text = first.read_text()
    again, _ = _export(tmp_path, db)
    assert again.read_text() == text


def test_runs_not_from_traces_have_no_trace_ids(tmp_path):
    from judge_helpers import scored_db

    db = scored_db(tmp_path, 2)
    out, _ = _export(tmp_path, db)
    for line in out.read_text().splitlines():
        records = _records(_parse(line))
        assert len(records) == PER_RUN and all(r.trace_id == b"" and r.span_id == b"" for r in records)


class _Collector:
    def __init__(self, code: int = 200):
        self.bodies: list[tuple[str, str, bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.bodies.append((self.path, self.headers["Content-Type"], body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_endpoint_receives_the_same_events_as_protobuf(judged_db, tmp_path):
    db, _, _ = judged_db
    collector = _Collector()
    try:
        out, res = _export(tmp_path, db, "--endpoint", collector.url)
    finally:
        collector.close()
    assert [(p, t) for p, t, _ in collector.bodies] == [("/v1/logs", "application/x-protobuf")] * 2
    sent = []
    for _, _, body in collector.bodies:
        req = ExportLogsServiceRequest()
        req.ParseFromString(body)
        sent.append(req)
    assert sent == [_parse(line) for line in out.read_text().splitlines()]
    assert f"and {collector.url}/v1/logs" in res.stdout


def test_refusing_endpoint_is_a_one_line_error(judged_db, tmp_path):
    db, _, _ = judged_db
    collector = _Collector(code=404)
    try:
        res = CliRunner().invoke(cli, ["export", "otel", "--db", db, "--endpoint", collector.url + "/v1/logs"])
    finally:
        collector.close()
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "/v1/logs answered 404" in res.stderr


def test_neither_out_nor_endpoint_is_a_usage_error(tmp_path):
    from judge_helpers import scored_db

    db = scored_db(tmp_path, 1)
    res = CliRunner().invoke(cli, ["export", "otel", "--db", db])
    assert res.exit_code == 2 and "give OUT, --endpoint URL, or both" in res.stderr
