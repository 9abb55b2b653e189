"""`evalkit export otel`: ScoreCards and judge annotations as gen_ai.evaluation.result events, read
back with opentelemetry-proto's own message types, on the trace and span of runs that came from
traces (real SDK traces of an `openai`-client agent loop, see otel_helpers.py)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytestmark = pytest.mark.slow

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


# -- an endpoint as rude as the world: redirects, trickles, floods; authenticated backends ----------


class _Rude:
    """An OTLP endpoint on 127.0.0.1 that reads each request whole, records it (path, headers,
    body), then answers as ``behaviour`` says: ``ok``; ``redirect_302`` / ``redirect_307`` to
    ``redirect_to``; ``trickle`` (a 200 whose body comes a byte every ``trickle_s``, never ending);
    ``flood`` (a chunked 200 body of ``flood_bytes``); ``partial`` (a 200 whose partial_success
    rejected 13 log records); ``status_401``."""

    def __init__(self, behaviour: str = "ok"):
        self.behaviour, self.redirect_to, self.trickle_s, self.flood_bytes = behaviour, "", 0.3, 64 * 2**20
        self.requests: list[dict] = []
        rude = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                rude.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
                try:
                    self._answer(rude.behaviour)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: what the deadline is for

            def _answer(self, behaviour: str):
                if behaviour.startswith("redirect_"):
                    self.send_response(int(behaviour[-3:]))
                    self.send_header("Location", rude.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif behaviour == "trickle":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    while True:
                        self.wfile.write(b"\0")
                        self.wfile.flush()
                        time.sleep(rude.trickle_s)
                elif behaviour == "flood":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    block = b"x" * 2**16
                    for _ in range(rude.flood_bytes // len(block)):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                    self.wfile.write(b"0\r\n\r\n")
                elif behaviour == "partial":
                    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

                    reply = ExportLogsServiceResponse()
                    reply.partial_success.rejected_log_records = 13
                    reply.partial_success.error_message = "quota\nexceeded"
                    data = reply.SerializeToString()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    code = 401 if behaviour == "status_401" else 200
                    self.send_response(code)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> _Rude:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def two_runs(tmp_path):
    from judge_helpers import scored_db

    return scored_db(tmp_path, 2)


def _send(db, endpoint, *extra, env=None):
    """``evalkit export otel --db DB --endpoint URL`` through the CLI, timed."""
    start = time.monotonic()
    res = CliRunner().invoke(cli, ["export", "otel", "--db", db, "--endpoint", endpoint, *extra], env=env)
    return res, time.monotonic() - start


def _one_error_line(res) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "evaluation events" not in res.stdout
    (line,) = res.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize("code", ["302", "307"])
def test_a_redirect_to_another_host_is_not_followed_and_fails(two_runs, code):
    from fake_llm_server import RecordingListener

    with RecordingListener("127.0.0.2") as other, _Rude(f"redirect_{code}") as rude:
        rude.redirect_to = other.url + "/v1/logs"
        res, _ = _send(two_runs, rude.url)
    line = _one_error_line(res)
    assert other.requests == []  # neither a GET nor the POST went to the other host
    assert f"{rude.url}/v1/logs was redirected ({code}) to {other.url}/v1/logs" in line
    assert "use the final address as --endpoint" in line
    assert len(rude.requests) == 1  # stopped at the first request, not sent again


def test_a_trickling_endpoint_is_cut_at_one_deadline(two_runs):
    """A byte every 0.3 s: no read waits long enough for a per-read timeout; the request's one
    deadline (--timeout 1.5) ends it."""
    with _Rude("trickle") as rude:
        res, took = _send(two_runs, rude.url, "--timeout", "1.5")
    line = _one_error_line(res)
    assert "no complete reply within 1.5 s" in line and "--timeout" in line
    assert len(rude.requests) == 1 and took < 4.0, took


def test_a_huge_reply_is_cut_at_the_size_limit(two_runs):
    with _Rude("flood") as rude:
        res, took = _send(two_runs, rude.url)
    assert "the reply is larger than 1 MiB" in _one_error_line(res)
    assert took < 10, took


def test_the_timeout_is_positive_and_its_default_shown(two_runs):
    res = CliRunner().invoke(cli, ["export", "otel", "--help"])
    assert res.exit_code == 0 and "--timeout SECONDS" in res.stdout and "default: 30.0" in res.stdout
    res, _ = _send(two_runs, "http://127.0.0.1:9", "--timeout", "0")
    assert res.exit_code == 2 and "--timeout" in res.stderr


def test_otlp_headers_from_the_environment_reach_the_endpoint(two_runs):
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20s3cr3t-token, x-tenant = a%2Cb%3Dc"}
    with _Rude("ok") as rude:
        res, _ = _send(two_runs, rude.url, env=env)
    assert res.exit_code == 0, res.output
    assert len(rude.requests) == 2
    for request in rude.requests:
        assert request["headers"]["Authorization"] == "Bearer s3cr3t-token"
        assert request["headers"]["x-tenant"] == "a,b=c"
        assert request["headers"]["Content-Type"] == "application/x-protobuf"


def test_logs_headers_take_the_place_of_the_general_ones(two_runs):
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "x-general=1", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-logs=2"}
    with _Rude("ok") as rude:
        res, _ = _send(two_runs, rude.url, env=env)
    assert res.exit_code == 0, res.output
    headers = rude.requests[0]["headers"]
    assert headers.get("x-logs") == "2" and "x-general" not in headers


def test_header_values_are_never_printed(two_runs):
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cr3t-token"}
    with _Rude("status_401") as rude:
        refused, _ = _send(two_runs, rude.url, env=env)
    assert "answered 401" in _one_error_line(refused) and "s3cr3t" not in refused.output
    bad = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cr3t-token,s3cr3t-no-equals"}
    res, _ = _send(two_runs, "http://127.0.0.1:9", env=bad)
    assert res.exit_code == 2 and "s3cr3t" not in res.output
    assert "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value" in res.stderr


def test_credentials_in_the_endpoint_url_are_not_printed(two_runs):
    with _Rude("status_401") as rude:
        res, _ = _send(two_runs, rude.url.replace("http://", "http://user:pa55word@"))
    line = _one_error_line(res)
    assert "pa55word" not in line and f"{rude.url}/v1/logs answered 401" in line


def test_events_the_endpoint_rejected_are_not_reported_as_sent(two_runs):
    with _Rude("partial") as rude:
        res, _ = _send(two_runs, rude.url)
    assert f"{rude.url}/v1/logs rejected 13 events (quota exceeded)" in _one_error_line(res)
