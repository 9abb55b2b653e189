"""ScoreCards and judge annotations as OpenTelemetry ``gen_ai.evaluation.result`` events.

Each event is an OTLP log record with ``eventName`` ``gen_ai.evaluation.result`` and the GenAI
conventions' attributes ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` and ``gen_ai.evaluation.explanation``, plus ``evalkit.run_id``,
``evalkit.scenario_id`` and ``evalkit.model``. Per run, in this order:

* one per vector component (``evalkit.coverage``, ``evalkit.order``, ``evalkit.end_state``,
  ``evalkit.all_passed``, ``evalkit.safety_dangerous``, ``evalkit.safety_anti_procedure``,
  ``evalkit.extraneous``) and the scalar (``evalkit.scalar``);
* one per check (``evalkit.check.<name>``: label ``pass`` / ``fail``);
* one per judge dimension (``evalkit.judge.<rubric>.<dimension>``, the judge model in
  ``evalkit.judge.model``, its rationale as the explanation).

A value that is undefined (null) has no ``score.value`` and the label ``undefined``; a boolean is
the value 1 or 0 and the label ``pass`` or ``fail``. A run imported from traces (run_id
``otel:[<session>:]<trace_id>:<span_id>``, see evalkit.importers.formats.otel) carries that trace and span id, so the
event sits on the span it evaluates; its time is the run's recorded start (``ts_utc``), else 0.
Nothing comes from the clock: the same database gives the same bytes.

Output: OTLP JSON, one ``ExportLogsServiceRequest`` per run per line (the Collector file
exporter's form), runs by run_id; or sent to an OTLP/HTTP endpoint as protobuf, with the headers
the OpenTelemetry SDKs read from the environment, through evalkit's outbound client
(evalkit/config/outbound.py: one deadline per request, the reply bounded, no redirect followed).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

EVENT = "gen_ai.evaluation.result"
VECTOR = ("coverage", "order", "end_state", "all_passed", "safety_dangerous", "safety_anti_procedure", "extraneous")
_OTEL_RUN = re.compile(r"^otel:(?:.*:)?([0-9a-f]{32}):([0-9a-f]{16})$", re.S)  # a session id may come first
SCOPE = {"name": "evalkit"}


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v if isinstance(v, str) else json.dumps(v, sort_keys=True, ensure_ascii=False)}


def _attrs(items: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in items.items() if v is not None]


def _score(value: Any) -> dict[str, Any]:
    if value is None:
        return {"gen_ai.evaluation.score.label": "undefined"}
    if isinstance(value, bool):
        return {
            "gen_ai.evaluation.score.value": 1.0 if value else 0.0,
            "gen_ai.evaluation.score.label": "pass" if value else "fail",
        }
    if isinstance(value, (int, float)):
        return {"gen_ai.evaluation.score.value": float(value)}
    return {"gen_ai.evaluation.score.label": value if isinstance(value, str) else json.dumps(value, sort_keys=True)}


def _nanos(ts_utc: str | None) -> str:
    if not ts_utc:
        return "0"
    try:
        when = datetime.fromisoformat(ts_utc.replace("Z", "+00:00"))
    except ValueError:
        return "0"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return str((delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000)


def trace_ids(run_id: str) -> tuple[str, str] | None:
    """The (trace_id, span_id) of a run imported from traces, else None."""
    m = _OTEL_RUN.match(run_id)
    return (m.group(1), m.group(2)) if m else None


def run_events(card: Any, judged: Iterable[Any]) -> list[dict[str, Any]]:
    """The log records of one ScoreCard and its judge values (evalkit.db.judge.JudgeValue)."""
    base = {"evalkit.run_id": card.run_id, "evalkit.scenario_id": card.scenario_id, "evalkit.model": card.model}
    rows: list[dict[str, Any]] = []
    vector = card.vector.model_dump()
    for name in VECTOR:
        rows.append({"gen_ai.evaluation.name": f"evalkit.{name}", **_score(vector.get(name))})
    rows.append({"gen_ai.evaluation.name": "evalkit.scalar", **_score(card.scalar)})
    for name, value in card.checks.model_dump().items():
        rows.append({"gen_ai.evaluation.name": f"evalkit.check.{name}", **_score(value)})
    for jv in judged:
        rows.append(
            {
                "gen_ai.evaluation.name": f"evalkit.judge.{jv.rubric_id}.{jv.dimension}",
                **_score(jv.value),
                "gen_ai.evaluation.explanation": jv.rationale or None,
                "evalkit.judge.model": jv.judge_model,
            }
        )
    ids = trace_ids(card.run_id)
    time = _nanos(card.provenance.ts_utc)
    records = []
    for row in rows:
        record: dict[str, Any] = {"timeUnixNano": time, "eventName": EVENT, "attributes": _attrs({**row, **base})}
        if ids is not None:
            record["traceId"], record["spanId"] = ids
        records.append(record)
    return records


def requests(cards: Iterable[Any], annotations: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """One ExportLogsServiceRequest (OTLP JSON) per run, in the order of ``cards``."""
    by_run: dict[str, list[Any]] = {}
    for jv in annotations:
        by_run.setdefault(jv.run_id, []).append(jv)
    for card in cards:
        judged = sorted(
            by_run.get(card.run_id, []),
            key=lambda j: (j.judge_model, j.rubric_id, j.dimension, j.replicate, j.annotation_id),
        )
        yield {
            "resourceLogs": [
                {
                    "resource": {"attributes": _attrs({"service.name": "evalkit"})},
                    "scopeLogs": [{"scope": SCOPE, "logRecords": run_events(card, judged)}],
                }
            ]
        }


def read_database(db_path: str) -> list[dict[str, Any]]:
    from evalkit.db.connect import open_readonly
    from evalkit.db.judge import read_annotations
    from evalkit.db.scores import read_scorecards

    db = open_readonly(db_path)
    try:
        cards = list(read_scorecards(db, with_bundle=False))
        try:
            annotations = list(read_annotations(db))
        except Exception as exc:  # a scores-only database has no judge tables
            if "no such table" not in str(exc):
                raise
            annotations = []
    finally:
        db.close()
    return list(requests(cards, annotations))


def dumps(reqs: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for r in reqs)


def to_protobuf(request: dict[str, Any]) -> bytes:
    """One request as OTLP protobuf (opentelemetry-proto's own type; hex ids → bytes)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    def b64(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId") else b64(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [b64(v) for v in node]
        return node

    return json_format.ParseDict(b64(request), ExportLogsServiceRequest()).SerializeToString()


def logs_url(endpoint: str) -> str:
    return endpoint if endpoint.rstrip("/").endswith("/v1/logs") else endpoint.rstrip("/") + "/v1/logs"


REPLY_MAX_BYTES = 2**20  # an ExportLogsServiceResponse is a few bytes; a partial_success message at most
DEFAULT_TIMEOUT_S = 30.0
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110 token)


def env_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The headers of an OTLP/HTTP logs export from the environment, as the OpenTelemetry SDKs read
    them: ``OTEL_EXPORTER_OTLP_LOGS_HEADERS`` if set, else ``OTEL_EXPORTER_OTLP_HEADERS``; each a
    comma-separated list of ``key=value`` with URL-encoded values. ValueError naming the variable
    and the entry's position (never a value: they hold credentials)."""
    for name in HEADER_VARIABLES:
        raw = environ.get(name)
        if raw is None:
            continue
        headers: dict[str, str] = {}
        for n, entry in enumerate(raw.split(","), 1):
            if not entry.strip():
                continue
            key, sep, value = entry.partition("=")
            key, value = urllib.parse.unquote(key.strip()), urllib.parse.unquote(value.strip())
            if not sep or not _TOKEN.match(key):
                raise ValueError(f"{name}: entry {n} is not key=value with a header name as the key")
            if any(c in value for c in "\r\n\0"):
                raise ValueError(f"{name}: the value of entry {n} ({key}) holds a line break")
            headers[key] = value
        return headers
    return {}


def _shown(url: str) -> str:
    """A URL as errors show it: without a user and password."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc + (f":{parts.port}" if parts.port else "")))


def _rejected(body: bytes) -> str | None:
    """What an ExportLogsServiceResponse's partial_success says was rejected, else None."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    reply = ExportLogsServiceResponse()
    try:
        reply.ParseFromString(body)
    except DecodeError:
        return None
    n = reply.partial_success.rejected_log_records
    if n <= 0:
        return None
    said = " ".join(reply.partial_success.error_message.split())[:200]
    return f"rejected {n} event{'s' if n != 1 else ''}" + (f" ({said})" if said else "")


def send(
    reqs: Iterable[dict[str, Any]],
    endpoint: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    headers: Mapping[str, str] | None = None,
) -> int:
    """POST each request to the endpoint's /v1/logs as protobuf, through evalkit's outbound client
    (one deadline per request, the reply bounded, no redirect followed); the number sent. Raises
    OSError, one line naming the URL (never a header), when one is not delivered."""
    import asyncio

    import httpx

    from evalkit.config.outbound import DeadlineExceeded, Purpose, Redirected, ReplyRefused, http_client, within

    purpose = Purpose(
        request="the OTLP export",
        carries="the events and the OTEL_EXPORTER_OTLP_HEADERS go to the address given only",
        address="--endpoint",
        limit_setting="the limit of an OTLP export's reply",
        deadline_setting="--timeout",
    )
    url = logs_url(endpoint)
    shown = _shown(url)
    bodies = [to_protobuf(r) for r in reqs]
    sent_headers = {**(headers or {}), "Content-Type": "application/x-protobuf"}

    async def post_all() -> int:
        sent = 0
        async with http_client(REPLY_MAX_BYTES, timeout_s, purpose) as client:
            for body in bodies:
                done = f"; {sent} of {len(bodies)} requests were delivered before it" if sent else ""
                try:
                    reply = await within(timeout_s, purpose, client.post(url, content=body, headers=sent_headers))
                except Redirected as exc:  # names both URLs
                    raise OSError(f"{str(exc).replace(url, shown)}{done}") from None
                except (ReplyRefused, DeadlineExceeded) as exc:
                    raise OSError(f"{shown}: {exc}{done}") from None
                except httpx.HTTPError as exc:
                    reason = " ".join(str(exc).split()) or type(exc).__name__
                    raise OSError(f"cannot reach {shown}: {reason}{done}") from None
                if not 200 <= reply.status_code < 300:
                    raise OSError(f"{shown} answered {reply.status_code} {reply.reason_phrase}{done}")
                if problem := _rejected(reply.content):
                    raise OSError(f"{shown} {problem}{done}")
                sent += 1
        return sent

    return asyncio.run(post_all())
