"""OTLP JSON spans built by hand, for the cases no SDK would send on its own (a NaN, a huge time,
a 3,000-deep chain, a tool span with another framework's attribute names)."""

from __future__ import annotations

import json
from typing import Any

from evalkit.importers.formats.otel import ARGUMENT_ATTRS

MODEL = "acme/m1"


def value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP AnyValue (a float that is not finite as proto3 JSON writes it)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v if v == v and abs(v) != float("inf") else str(v).replace("nan", "NaN")}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": str(v)}


def span(trace: int, sid: int, parent: int | None, name: str, attrs: dict[str, Any], start: int = 1) -> dict:
    out = {
        "traceId": f"{trace:032x}",
        "spanId": f"{sid:016x}",
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + start * 1000 + 500),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def agent(trace: int, sid: int = 1, parent: int | None = None, **attrs: Any) -> dict:
    return span(trace, sid, parent, "invoke_agent bot", {"gen_ai.operation.name": "invoke_agent", **attrs})


def chat(trace: int, sid: int, parent: int, start: int = 2, model: str | None = MODEL) -> dict:
    attrs = {"gen_ai.operation.name": "chat"}
    if model:
        attrs["gen_ai.request.model"] = model
    return span(trace, sid, parent, "chat m1", attrs, start)


def tool(trace: int, sid: int, parent: int, name: str = "lookup", start: int = 3, **attrs: Any) -> dict:
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if not any(k in ARGUMENT_ATTRS for k in attrs):  # arguments under one of the names evalkit reads
        base["gen_ai.tool.call.arguments"] = '{"q": 1}'
    return span(trace, sid, parent, f"execute_tool {name}", {**base, **attrs}, start)


def request(*spans: dict) -> dict:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": list(spans)}]}]}


def body(*spans: dict) -> bytes:
    return json.dumps(request(*spans)).encode()
