"""Real OpenTelemetry traces for the otel importer and exporter tests: a tiny tool-calling agent loop
that uses the `openai` client against the tests' fake server, instrumented by hand with the
OpenTelemetry SDK under the GenAI semantic conventions (invoke_agent / chat / execute_tool spans,
gen_ai.* attributes), exported by the SDK's own exporters and OTLP encoder."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

MODEL = "gpt-4o-mini"


def tool_spec(name: str) -> dict[str, Any]:
    # one-value enums: the fake server's model fills them in deterministically
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "enum": ["A1"]}},
                "required": ["order_id"],
            },
        },
    }


def lookup_order(order_id: str) -> str:
    return json.dumps({"order_id": order_id, "status": "delivered"})


def refund_order(order_id: str) -> str:
    raise RuntimeError(f"order {order_id} is past the refund window")


TOOLS = {"lookup_order": lookup_order, "refund_order": refund_order, "cancel_order": lambda order_id: "cancelled"}


def agent_run(
    tracer: Any,
    client: Any,
    plan: Sequence[str],
    *,
    scenario: str | None = "refund",
    success: bool | None = None,
    agent: str = "support",
) -> None:
    """One run: an invoke_agent span; per planned tool a chat turn offering only that tool (so the
    fake model calls it) and its execute_tool span; then a last chat turn that answers in text."""
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if scenario is not None:
        attrs["evalkit.scenario_id"] = scenario
    if success is not None:
        attrs["evalkit.success"] = success
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please refund order A1."}]
    with tracer.start_as_current_span(f"invoke_agent {agent}", kind=SpanKind.INTERNAL, attributes=attrs):
        for step in [*plan, None]:
            with tracer.start_as_current_span(
                f"chat {MODEL}",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": MODEL,
                    "gen_ai.input.messages": json.dumps(
                        [
                            {"role": m["role"], "parts": [{"type": "text", "content": m.get("content") or ""}]}
                            for m in messages
                            if m["role"] == "user"
                        ]
                    ),
                },
            ) as chat:
                kwargs = {"tools": [tool_spec(step)]} if step else {}
                reply = client.chat.completions.create(model=MODEL, messages=messages, **kwargs)
                choice = reply.choices[0]
                message = choice.message
                parts = []
                if message.content:
                    parts.append({"type": "text", "content": message.content})
                for call in message.tool_calls or []:
                    parts.append(
                        {
                            "type": "tool_call",
                            "id": call.id,
                            "name": call.function.name,
                            "arguments": json.loads(call.function.arguments),
                        }
                    )
                chat.set_attribute("gen_ai.response.model", reply.model)
                chat.set_attribute(
                    "gen_ai.output.messages",
                    json.dumps([{"role": "assistant", "parts": parts, "finish_reason": choice.finish_reason}]),
                )
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls or []:
                name = call.function.name
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call.id,
                        "gen_ai.tool.call.arguments": call.function.arguments,
                    },
                ) as span:
                    try:
                        result = TOOLS[name](**json.loads(call.function.arguments))
                        span.set_attribute("gen_ai.tool.call.result", result)
                    except Exception as exc:
                        result = f"error: {exc}"
                        span.set_status(Status(StatusCode.ERROR, str(exc)))
                        span.set_attribute("error.type", type(exc).__name__)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def provider(*exporters: SpanExporter, service: str = "refund-agent") -> TracerProvider:
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    for exporter in exporters:
        tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def record_runs(client: Any, runs: Sequence[dict[str, Any]], *extra: SpanExporter) -> InMemorySpanExporter:
    """Run ``runs`` (keyword arguments of agent_run) and keep their finished spans in memory."""
    memory = InMemorySpanExporter()
    tp = provider(memory, *extra)
    tracer = tp.get_tracer("evalkit.tests.agent")
    for run in runs:
        agent_run(tracer, client, **run)
    tp.shutdown()
    return memory


ID_KEYS = ("traceId", "spanId", "parentSpanId")


def map_ids(node: Any, convert: Callable[[str], str]) -> Any:
    """``node`` with ``convert`` applied to every trace and span id (a string), however deep."""
    if isinstance(node, dict):
        return {k: convert(v) if k in ID_KEYS and isinstance(v, str) else map_ids(v, convert) for k, v in node.items()}
    if isinstance(node, list):
        return [map_ids(v, convert) for v in node]
    return node


def hex_ids(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes (the ids) in base64; OTLP JSON writes them in hex."""
    return map_ids(node, lambda v: base64.b64decode(v).hex())


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """Spans as one ExportTraceServiceRequest in OTLP JSON, encoded by the SDK's own OTLP encoder."""
    return hex_ids(json_format.MessageToDict(encode_spans(spans)))


def write_collector_file(path: Path, batches: Sequence[Sequence[Any]]) -> Path:
    """The Collector file exporter's format: one ExportTraceServiceRequest per line."""
    path.write_text("".join(json.dumps(otlp_json(batch), separators=(",", ":")) + "\n" for batch in batches))
    return path


def to_proto_json(node: Any) -> Any:
    """OTLP JSON (hex ids) back to protobuf's JSON mapping (base64 ids), for json_format.Parse."""
    return map_ids(node, lambda v: base64.b64encode(bytes.fromhex(v)).decode())
