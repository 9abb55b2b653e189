"""OpenTelemetry GenAI traces (OTLP JSON) → evalkit trajectories.

Input: OTLP JSON as the OpenTelemetry Collector's file exporter writes it (one
``ExportTraceServiceRequest`` per line, ids in hex) or one such JSON document. The spans are read
under the GenAI semantic conventions; see docs/importers.md for the full mapping. In short:

* **Runs.** One run per outermost ``invoke_agent`` span (``gen_ai.operation.name`` or the span name),
  holding its descendants; a trace without one is one run. run_id ``otel:<trace_id>:<span_id>`` (the
  run's top span), which ``evalkit export otel`` reads back to attach scores to that span.
* **Calls.** ``execute_tool`` spans in start order (ties by span id): ``gen_ai.tool.name``, the
  arguments (a JSON object, as text or structured) and the result from the first attribute of
  :data:`ARGUMENT_ATTRS` / :data:`RESULT_ATTRS` present (the conventions' names, then the ones agent
  frameworks write); an error status (or ``error.type``) is an errored call. A chat span opens a step.
* **Text and model.** Chat spans (``chat``, ``text_completion``, ``generate_content``): the assistant's
  text and finish reason from ``gen_ai.output.messages``, or the older forms — ``gen_ai.completion``
  (text, or OpenLLMetry's ``gen_ai.completion.<i>.content``) and the ``gen_ai.content.completion`` /
  ``gen_ai.choice`` span events; the task prompt from the first user message of
  ``gen_ai.input.messages`` (or ``gen_ai.prompt`` / ``gen_ai.prompt.<i>.content`` /
  ``gen_ai.content.prompt`` / ``gen_ai.user.message``). The model is ``gen_ai.request.model``, else
  ``gen_ai.response.model``, of the first chat span that names one, else ``--model``.
* **Scenario.** ``--scenarios FILE`` (a JSON list or JSONL of scenarios) by the value of
  ``--scenario-attr`` (default ``evalkit.scenario_id``) on the run's spans or its resource. Without
  ``--scenarios`` the scenario has no ground truth and every tool called is a command.
* **End state.** ``evalkit.success`` (a boolean attribute) or ``--results FILE`` (JSONL
  ``{trace_id | run_id, success}``); without one the run has no end state (``incomplete``).
* What is not mapped — spans of other operations, messages that do not parse, tool spans without
  arguments or result, tool-span attributes evalkit does not read — is counted in the run's
  ``final.done_payload.otel.unmapped``, never guessed.
* Span trees are walked iteratively (a chain of any depth); a double that is not finite becomes the
  string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (as the protobuf JSON mapping writes it), so
  every run can be written as JSON.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from evalkit.importers import Converted, ImportFormatError
from evalkit.importers.formats import otel_dialects as dialects
from evalkit.importers.formats.messages import MessageError, parse_arguments, tools_named
from evalkit.importers.formats.otel_dialects import ARGUMENT_ATTRS, RESULT_ATTRS, STRICT_ARGUMENT_ATTRS
from evalkit.importers.jsonlist import iter_json_lines, read_text
from evalkit.importers.notes import Note
from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

FORMAT_VERSION = "otel/1"
DEFAULT_SCENARIO_ATTR = "evalkit.scenario_id"
SUCCESS_ATTR = "evalkit.success"
STATUS_ERROR = 2
MAX_FIXED64 = 2**64 - 1
MAX_SESSION_ID = 256  # characters of a session or conversation id carried in a run_id
# tool-span attributes read elsewhere, or that describe the call without anything to map
TOOL_ATTRS_KNOWN = dialects.DESCRIPTIVE_ATTRS | set(ARGUMENT_ATTRS) | set(RESULT_ATTRS)


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    status: int
    status_message: str
    resource: dict[str, Any]
    children: list[Span] = field(default_factory=list)

    @property
    def operation(self) -> str:
        """``invoke_agent``, ``chat``, ``execute_tool`` or another operation, in any dialect."""
        return dialects.operation(self.attrs, self.name)


# -- OTLP JSON → spans ------------------------------------------------------------------------------


def _field(obj: dict[str, Any], camel: str) -> Any:
    """A field by its JSON name or its proto name (the protobuf JSON mapping accepts both)."""
    if camel in obj:
        return obj[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return obj.get(snake)


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value (``intValue`` may be a JSON string, as proto3 writes it)."""
    if not isinstance(value, dict):
        return None
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return value[key]
    raw = _field(value, "intValue")
    if raw is not None:
        return _integer(raw, "intValue", -(2**63), 2**63 - 1)
    raw = _field(value, "doubleValue")
    if raw is not None:
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
            raise ValueError(f"doubleValue {raw!r} is not a number")
        number = float(raw)
        if math.isnan(number):
            return "NaN"
        return number if math.isfinite(number) else ("Infinity" if number > 0 else "-Infinity")
    raw = _field(value, "arrayValue")
    if raw is not None:
        return [any_value(v) for v in (raw.get("values") or [])]
    raw = _field(value, "kvlistValue")
    if raw is not None:
        return attributes(raw.get("values") or [])
    raw = _field(value, "bytesValue")
    if raw is not None:
        return raw
    return None


def _integer(raw: Any, what: str, low: int, high: int) -> int:
    """An integer field (a JSON number or a decimal string, as proto3 writes 64-bit ones) within
    [low, high]. ValueError naming the field otherwise."""
    value: int | None = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str) and re.fullmatch(r"-?[0-9]{1,20}", raw):
        value = int(raw)
    if value is None or not low <= value <= high:
        shown = raw if not isinstance(raw, str) or len(raw) <= 40 else raw[:40] + "..."
        raise ValueError(f"{what} {shown!r} is not an integer in {low}..{high}")
    return value


def _nanos(raw: Any, what: str) -> int:
    """A span or event time (fixed64 nanoseconds since the epoch); missing is 0."""
    return 0 if raw is None else _integer(raw, what, 0, MAX_FIXED64)


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


def hex_id(raw: Any, size: int) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex: OTLP JSON writes hex; a
    protobuf-JSON dump writes base64. Empty or all-zero: none."""
    if not isinstance(raw, str) or not raw:
        return None
    text = raw.lower()
    if len(text) != 2 * size or any(c not in "0123456789abcdef" for c in text):
        try:
            decoded = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"id {raw!r} is neither hex nor base64") from None
        if len(decoded) != size:
            raise ValueError(f"id {raw!r} is not {size} bytes")
        text = decoded.hex()
    return None if set(text) == {"0"} else text


def spans_of(request: Any) -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest`` (as JSON). Raises ValueError on a malformed one."""
    if not isinstance(request, dict):
        raise ValueError("not an ExportTraceServiceRequest object {resourceSpans: [...]}")
    if not request:
        return  # an empty request: every field at its default
    resource_spans = _field(request, "resourceSpans")
    if not isinstance(resource_spans, list):
        raise ValueError("no resourceSpans list (not OTLP trace JSON)")
    for ri, rs in enumerate(resource_spans):
        rs = _object(rs, f"resourceSpans[{ri}]")
        resource = attributes(_object(rs.get("resource"), f"resourceSpans[{ri}].resource").get("attributes"))
        for si, ss in enumerate(_list(_field(rs, "scopeSpans"), f"resourceSpans[{ri}].scopeSpans")):
            ss = _object(ss, f"resourceSpans[{ri}].scopeSpans[{si}]")
            for pi, raw in enumerate(_list(ss.get("spans"), f"resourceSpans[{ri}].scopeSpans[{si}].spans")):
                where = f"resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}]"
                try:
                    yield _span(_object(raw, where), resource)
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"{where}: {exc}") from None


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where} is not an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where} is not a list")
    return value


def _span(raw: dict[str, Any], resource: dict[str, Any]) -> Span:
    trace_id, span_id = hex_id(_field(raw, "traceId"), 16), hex_id(_field(raw, "spanId"), 8)
    parent = hex_id(_field(raw, "parentSpanId"), 8)
    if trace_id is None or span_id is None:
        raise ValueError("needs traceId and spanId")
    status = _object(raw.get("status"), "status")
    code = status.get("code", 0)
    code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, code)
    events = [
        (
            str(e.get("name", "")),
            _nanos(_field(e, "timeUnixNano"), f"events[{i}].timeUnixNano"),
            attributes(e.get("attributes")),
        )
        for i, e in enumerate(_list(raw.get("events"), "events"))
        if isinstance(e, dict)
    ]
    return Span(
        trace_id,
        span_id,
        parent,
        str(raw.get("name", "")),
        _nanos(_field(raw, "startTimeUnixNano"), "startTimeUnixNano"),
        _nanos(_field(raw, "endTimeUnixNano"), "endTimeUnixNano"),
        attributes(raw.get("attributes")),
        events,
        code if isinstance(code, int) and not isinstance(code, bool) else 0,
        str(status.get("message") or ""),
        resource,
    )


# -- OpenTelemetry SDK span JSON → spans -------------------------------------------------------------
# ReadableSpan.to_json(): context {trace_id, span_id} as "0x"-prefixed hex, parent_id, times as ISO
# 8601 text, status {status_code: "OK"}; any-agent's AgentTrace: the same fields with integer ids, a
# parent context object, times as integer nanoseconds, status codes in lower case.

SDK_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def sdk_id(raw: Any, size: int, what: str) -> str | None:
    """A trace (16 bytes) or span (8 bytes) id written as an integer, ``0x`` hex or hex."""
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 0 <= raw < 2 ** (8 * size):
            raise ValueError(f"{what} {raw} is not a {8 * size}-bit id")
        return None if raw == 0 else f"{raw:0{2 * size}x}"
    if isinstance(raw, str):
        text = raw[2:] if raw[:2].lower() == "0x" else raw
        if 0 < len(text) <= 2 * size and all(c in "0123456789abcdefABCDEF" for c in text):
            value = text.lower().rjust(2 * size, "0")
            return None if set(value) == {"0"} else value
        return hex_id(raw, size)  # base64, or a one-line error naming the id
    raise ValueError(f"{what} {raw!r} is neither an integer nor hex")


def _sdk_time(raw: Any, what: str) -> int:
    """Nanoseconds since the epoch from an integer or ISO 8601 text (the SDK's ``ns_to_iso_str``)."""
    if raw is None or isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return _nanos(raw, what)
    if isinstance(raw, str) and not re.fullmatch(r"-?[0-9]{1,20}", raw):
        from datetime import datetime

        try:
            when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{what} {raw[:40]!r} is neither nanoseconds nor an ISO 8601 time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        delta = when - datetime(1970, 1, 1, tzinfo=UTC)
        return _nanos((delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000, what)
    return _nanos(raw, what)


def _plain(value: Any) -> Any:
    """An SDK attribute value as the OTLP reader gives it: a float that is not finite as its text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _plain_attrs(raw: Any, what: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is not an object")
    return {str(k): _plain(v) for k, v in raw.items()}


def sdk_span(raw: Any) -> Span:
    """One span as the OpenTelemetry SDK's ``ReadableSpan.to_json()`` (or any-agent) writes it."""
    raw = _object(raw, "span")
    context = _object(raw.get("context"), "context")
    trace_id = sdk_id(context.get("trace_id"), 16, "context.trace_id")
    span_id = sdk_id(context.get("span_id"), 8, "context.span_id")
    if trace_id is None or span_id is None:
        raise ValueError("needs context.trace_id and context.span_id")
    parent_raw = raw.get("parent_id")
    if parent_raw is None and isinstance(raw.get("parent"), dict):
        parent_raw = raw["parent"].get("span_id")
    status = _object(raw.get("status"), "status")
    code = status.get("status_code", "UNSET")
    if isinstance(code, str):
        code = SDK_STATUS.get(code.upper().removeprefix("STATUSCODE."), 0)
    events = []
    for i, event in enumerate(_list(raw.get("events"), "events")):
        event = _object(event, f"events[{i}]")
        events.append(
            (
                str(event.get("name", "")),
                _sdk_time(event.get("timestamp"), f"events[{i}].timestamp"),
                _plain_attrs(event.get("attributes"), f"events[{i}].attributes"),
            )
        )
    resource = _object(raw.get("resource"), "resource")
    return Span(
        trace_id,
        span_id,
        sdk_id(parent_raw, 8, "parent span_id"),
        str(raw.get("name", "")),
        _sdk_time(raw.get("start_time"), "start_time"),
        _sdk_time(raw.get("end_time"), "end_time"),
        _plain_attrs(raw.get("attributes"), "attributes"),
        events,
        code if isinstance(code, int) and not isinstance(code, bool) else 0,
        str(status.get("description") or ""),
        _plain_attrs(resource.get("attributes"), "resource.attributes"),
    )


def _is_sdk_span(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("context"), dict) and "name" in doc


def spans_in(doc: Any) -> Iterator[Span]:
    """The spans of one JSON document, whichever form holds them: an OTLP ``ExportTraceServiceRequest``;
    oteltest's capture ``{trace_requests: [{pbreq: request}]}``; SDK span JSON as a list of spans,
    any-agent's ``{spans: [...]}`` or one span. Raises ValueError naming what is wrong."""
    if isinstance(doc, dict) and isinstance(doc.get("trace_requests"), list):
        for i, item in enumerate(doc["trace_requests"]):
            try:
                yield from spans_of(_object(item, "item").get("pbreq"))
            except ValueError as exc:
                raise ValueError(f"trace_requests[{i}].pbreq: {exc}") from None
        return
    sdk = None
    if isinstance(doc, list) and doc and all(_is_sdk_span(s) for s in doc):
        sdk = doc
    elif isinstance(doc, dict) and isinstance(doc.get("spans"), list) and "resourceSpans" not in doc:
        sdk = doc["spans"]
    elif _is_sdk_span(doc):
        sdk = [doc]
    if sdk is None:
        try:
            yield from spans_of(doc)
        except ValueError as exc:
            if "no resourceSpans list" in str(exc) or "not an ExportTraceServiceRequest" in str(exc):
                raise ValueError(
                    f"{exc}; nor OpenTelemetry SDK span JSON (a list of spans with context.trace_id, "
                    "{spans: [...]}, or one span per line)"
                ) from None
            raise
        return
    for i, raw in enumerate(sdk):
        try:
            yield sdk_span(raw)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"spans[{i}]: {exc}") from None


def read_requests(path: str, text: str) -> list[Any]:
    """The requests of an OTLP JSON file: one document, else one per line (the file exporter's form)."""
    if not text.strip():
        raise ImportFormatError(path, None, "empty file; expected OTLP JSON")
    try:
        return [safe_json.loads(text)]
    except JSONProblem:
        pass  # several lines: each is a request (a bad line is reported with its number)
    return [item for _, item in iter_json_lines(path, text, "an ExportTraceServiceRequest or a span")]


# -- spans → runs -----------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    """An attribute that holds JSON as text (the conventions' messages, arguments) decoded; anything
    else as it is. None when the text is not JSON."""
    if isinstance(value, str):
        try:
            return safe_json.loads(value)
        except JSONProblem:
            return None
    return value


def _parts_text(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [
            p.get("content")
            for p in parts
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
        ]
        return "".join(texts) if texts else None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenLLMetry's flattened messages: ``<prefix>.<i>.role`` / ``.content``."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix + "."):
            index, _, rest = key[len(prefix) + 1 :].partition(".")
            if index.isdigit() and rest in ("role", "content", "finish_reason"):
                found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def _event_body(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in attrs:
            return _json_value(attrs[key]) if isinstance(attrs[key], str) and attrs[key][:1] in "[{" else attrs[key]
    return None


def chat_output(span: Span) -> tuple[str | None, str | None, bool]:
    """(text, finish reason, understood) of a chat span's output, from the current or older forms."""
    messages = _json_value(span.attrs.get("gen_ai.output.messages"))
    if isinstance(messages, list) and messages:
        first = messages[0] if isinstance(messages[0], dict) else {}
        return (
            _parts_text(first),
            first.get("finish_reason") if isinstance(first.get("finish_reason"), str) else None,
            True,
        )
    completion = span.attrs.get("gen_ai.completion")
    if completion is not None:
        decoded = _json_value(completion) if isinstance(completion, str) and completion[:1] in "[{" else completion
        if isinstance(decoded, list) and decoded:
            return _parts_text(decoded[0]), None, True
        if isinstance(decoded, str):
            return decoded, None, True
    flat = _indexed(span.attrs, "gen_ai.completion")
    if flat:
        reason = flat[0].get("finish_reason")
        return (
            flat[0].get("content") if isinstance(flat[0].get("content"), str) else None,
            reason if isinstance(reason, str) else None,
            True,
        )
    for name, _, attrs in span.events:
        if name == "gen_ai.content.completion":
            body = _event_body(attrs, "gen_ai.completion")
            if isinstance(body, list) and body:
                return _parts_text(body[0]), None, True
            if isinstance(body, str):
                return body, None, True
        if name == "gen_ai.choice":
            message = _event_body(attrs, "message", "gen_ai.event.content")
            reason = attrs.get("finish_reason")
            return (
                _parts_text(message) if isinstance(message, dict) else None,
                reason if isinstance(reason, str) else None,
                True,
            )
    found, text = dialects.model_text(span.attrs)  # OpenInference's messages, any-agent's output
    return text, None, found


def chat_prompt(span: Span) -> str | None:
    """The first user message a chat span sent, from the current or older forms."""
    candidates: list[Any] = []
    messages = _json_value(span.attrs.get("gen_ai.input.messages"))
    if isinstance(messages, list):
        candidates = messages
    elif isinstance(span.attrs.get("gen_ai.prompt"), str):
        decoded = _json_value(span.attrs["gen_ai.prompt"])
        candidates = (
            decoded if isinstance(decoded, list) else [{"role": "user", "content": span.attrs["gen_ai.prompt"]}]
        )
    else:
        candidates = _indexed(span.attrs, "gen_ai.prompt")
        for name, _, attrs in span.events:
            if name == "gen_ai.content.prompt":
                body = _event_body(attrs, "gen_ai.prompt")
                candidates += body if isinstance(body, list) else []
            elif name == "gen_ai.user.message":
                candidates.append({"role": "user", "content": attrs.get("content")})
    for message in candidates:
        if isinstance(message, dict) and message.get("role") == "user":
            return _parts_text(message)
    return dialects.model_prompt(span.attrs)


class RunError(ValueError):
    """A run that cannot be converted (the others of its input still are)."""


@dataclass
class Options:
    model: str | None = None
    scenarios: dict[str, dict[str, Any]] | None = None
    scenario_attr: str = DEFAULT_SCENARIO_ATTR
    results: dict[str, bool] | None = None
    scenario: str | None = None  # the scenario every run gets, by id


def run_roots(spans: Iterable[Span]) -> list[Span]:
    """Link spans into trees and return each run's top span: outermost invoke_agent spans, else each
    trace's root (or its earliest span when the root is missing), ordered by trace then start."""
    by_id: dict[tuple[str, str], Span] = {}
    for span in spans:
        by_id[(span.trace_id, span.span_id)] = span
    roots: list[Span] = []
    for span in sorted(by_id.values(), key=lambda s: (s.trace_id, s.start, s.end)):  # stable: ties keep input order
        parent = by_id.get((span.trace_id, span.parent)) if span.parent else None
        if parent is not None:
            parent.children.append(span)
        else:
            roots.append(span)
    runs: list[Span] = []
    for trace_id in sorted({r.trace_id for r in roots}):
        tops = [r for r in roots if r.trace_id == trace_id]
        agents = [s for top in tops for s in _outermost_agents(top)]
        runs.extend(agents if agents else tops[:1])
        if not agents and len(tops) > 1:  # spans whose parent never arrived: one run of the trace
            for extra in tops[1:]:
                tops[0].children.append(extra)
    return runs


def _outermost_agents(span: Span) -> list[Span]:
    """The invoke_agent spans under ``span`` (itself included) with no invoke_agent above them, in
    tree order."""
    found, stack = [], [span]
    while stack:
        current = stack.pop()
        if current.operation == "invoke_agent":
            found.append(current)
        else:
            stack.extend(reversed(current.children))
    return found


def _walk(span: Span) -> Iterator[Span]:
    """``span`` and its descendants, depth first (iterative: a chain of any depth)."""
    stack = [span]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _attr(spans: list[Span], name: str) -> Any:
    for span in spans:
        if name in span.attrs:
            return span.attrs[name]
    for span in spans:
        if name in span.resource:
            return span.resource[name]
    return None


def _chat_owners(top: Span) -> dict[str, list[Span]]:
    """Each outermost model-call span of the run (by span id) with the model-call spans nested in it:
    one model call that several instrumentations each recorded (smolagents' model, then LiteLLM's,
    then the provider client's) is one step."""
    owners: dict[str, list[Span]] = {}
    stack: list[tuple[Span, str | None]] = [(top, None)]
    while stack:
        span, owner = stack.pop()
        if span.operation == dialects.CHAT:
            if owner is None:
                owner = span.span_id
                owners[owner] = []
            owners[owner].append(span)
        stack.extend((child, owner) for child in reversed(span.children))
    return owners


def _session(spans: list[Span]) -> str | None:
    for name in dialects.SESSION_ATTRS:
        value = _attr(spans, name)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            if len(str(value)) > MAX_SESSION_ID:
                raise RunError(f"{name} is longer than {MAX_SESSION_ID} characters")
            return str(value)
    return None


def _tool_call(span: Span, step: int, call_index: int) -> tuple[dict[str, Any], str | None, bool]:
    """(the tool_call event, the attribute its arguments came from, whether a result was found)."""
    name = dialects.tool_name(span.attrs, span.name)
    if not name:
        raise RunError(f"span {span.span_id} (execute_tool) has no gen_ai.tool.name")
    args_attr = next((a for a in ARGUMENT_ATTRS if span.attrs.get(a) is not None), None)
    raw = span.attrs.get(args_attr) if args_attr else None
    if args_attr is None or args_attr in STRICT_ARGUMENT_ATTRS:
        try:
            args = parse_arguments(raw, f"span {span.span_id} ({name}) {args_attr}")
        except MessageError as exc:
            raise RunError(str(exc)) from None
    else:
        args = dialects.call_arguments(raw)
    failed = span.status == STATUS_ERROR or span.attrs.get("error.type") is not None
    result_attr = next((a for a in RESULT_ATTRS if span.attrs.get(a) is not None), None)
    result = None
    if result_attr:
        result, tool_failed = dialects.tool_result(result_attr, span.attrs[result_attr])
        failed = failed or tool_failed
    if result is None and failed:
        result = span.status_message or dialects.exception_message(span.events)
    event = {
        "type": "tool_call",
        "step": step,
        "call_index": call_index,
        "name": name,
        "args": args,
        "result": result,
        "is_error": failed,
        "sim_time_before": step - 1,
        "sim_time_after": step,
        "wall_ms": (span.end - span.start) / 1e6 if span.end >= span.start > 0 else None,
    }
    return event, args_attr, result is not None


def _not_run(requested: list[dict[str, Any]], ran: list[tuple[str | None, str, dict[str, Any]]]) -> int:
    """How many requested calls no tool span ran: matched by call id where both have one, else by
    name and arguments, each ran call once."""
    left = list(ran)
    missing = 0
    for call in requested:
        match = next((r for r in left if call["id"] is not None and r[0] == call["id"]), None)
        if match is None:
            match = next((r for r in left if r[1] == call["name"] and r[2] == call["args"]), None)
        if match is None:
            missing += 1
        else:
            left.remove(match)
    return missing


def build_run(top: Span, options: Options, source: str) -> list[dict[str, Any]]:
    """The trajectory of the run whose top span is ``top``. Raises RunError."""
    spans = sorted(_walk(top), key=lambda s: (s.start, s.end))  # a tie keeps input order: span ids are random
    trace_run = f"{top.trace_id}:{top.span_id}"
    session = _session(spans)
    run_id = f"otel:{session}:{trace_run}" if session is not None else f"otel:{trace_run}"
    unmapped = {"spans": 0, "chat_outputs": 0, "tool_arguments": 0, "tool_results": 0, "tool_attributes": 0}
    unrecorded: set[str] = set()  # tools called with no arguments recorded
    from_request: set[str] = set()  # call ids whose arguments are those of the model's request
    unknown_attrs: set[str] = set()
    read_attrs = TOOL_ATTRS_KNOWN | {options.scenario_attr, SUCCESS_ATTR}
    events: list[dict[str, Any]] = []
    step, call_index, calls = 0, 0, 0
    prompt, model = None, None
    owners = _chat_owners(top)
    requested: list[dict[str, Any]] = []
    ran: list[tuple[str | None, str, dict[str, Any]]] = []
    nested_chats = 0
    for span in spans:
        op = span.operation
        if op == dialects.CHAT:
            if span.span_id not in owners:
                nested_chats += 1  # read with the model call that holds it
                continue
            step, call_index = step + 1, 0
            text, reason, understood, asked = None, None, False, []
            for part in owners[span.span_id]:
                if model is None:
                    model = dialects.model_name(part.attrs)
                if prompt is None:
                    prompt = chat_prompt(part)
                if not understood:
                    text, reason, understood = chat_output(part)
                asked = asked or dialects.requested_calls(part.attrs, part.events)
            unmapped["chat_outputs"] += 0 if understood else 1
            raw: dict[str, Any] = {"otel_span_id": span.span_id, "name": span.name}
            if asked:
                raw["requested_tool_calls"] = asked
                requested.extend(asked)
            events.append({"type": "assistant", "step": step, "text": text, "stop_reason": reason, "provider_raw": raw})
        elif op == dialects.EXECUTE_TOOL:
            if step == 0:
                step = 1  # a tool run before any recorded chat: its own step
            event, args_attr, has_result = _tool_call(span, step, call_index)
            call_id = _call_id(span)
            if args_attr is None and call_id is not None:
                # the span records no arguments: those of the model's request it ran (same call id)
                asked_for = next((c for c in requested if c["id"] == call_id and c["name"] == event["name"]), None)
                if asked_for is not None and call_id not in from_request:
                    event["args"] = asked_for["args"]
                    from_request.add(call_id)
                    args_attr = "request"
            ran.append((call_id, event["name"], event["args"]))
            unmapped["tool_arguments"] += args_attr is None
            if args_attr is None:
                unrecorded.add(event["name"])
            unmapped["tool_results"] += not has_result
            unknown = [key for key in span.attrs if key not in read_attrs]
            unmapped["tool_attributes"] += len(unknown)
            unknown_attrs.update(unknown)
            events.append(event)
            call_index += 1
            calls += 1
        elif op != dialects.INVOKE_AGENT and span is not top:
            unmapped["spans"] += 1
    if model is None:
        model = dialects.model_name(top.attrs) or options.model
    if not model:
        raise RunError(
            "no model: no chat span has gen_ai.request.model or gen_ai.response.model; pass --model NAME "
            "(OpenInference: llm.model_name)"
        )
    agent = _attr(spans, "gen_ai.agent.name")
    scenario = _scenario(spans, options, agent, prompt, events)
    success = _attr(spans, SUCCESS_ATTR)
    if options.results is not None:
        success = options.results.get(run_id, options.results.get(top.trace_id, success))
    if success is not None and not isinstance(success, bool):
        raise RunError(f"{SUCCESS_ATTR} must be a boolean, not {success!r}")
    called = {e["name"] for e in events if e["type"] == "tool_call"}
    if prompt is not None:
        events.insert(0, {"type": "nudge", "step": 0, "text": prompt})
    provider = (
        model.split("/", 1)[0]
        if "/" in model
        else _attr(spans, "gen_ai.provider.name")
        or _attr(spans, "gen_ai.system")
        or _attr(spans, "llm.provider")
        or _attr(spans, "llm.system")
    )
    named = options.scenario is not None and options.scenarios is None  # scored by the file that has it
    meta = {
        "type": "meta",
        "run_id": run_id,
        "ts_utc": _utc(top.start),
        **({"scenario_id": options.scenario} if named else {"scenario": scenario}),
        "scenario_path": f"{source}#{top.trace_id}",
        "adapter": {"provider": provider, "model": model, "harness": "otel"},
        "instructions_profile": None,
        "tool_surface": sorted(called | tools_named(scenario["ground_truth"])),
        "vendor_pin": None,
        "versions": {"importer": FORMAT_VERSION},
        "seed": None,
        "otel": {
            "trace_id": top.trace_id,
            "span_id": top.span_id,
            "agent": agent if isinstance(agent, str) else None,
            "service": top.resource.get("service.name"),
        },
    }
    if session is not None:
        meta["otel"]["session"] = session
    setup = {"type": "setup", "sim_time": 0, "validity_gate": {"passed": True}, "active_failures": [], "snapshot": None}
    final = {
        "type": "final",
        "reason": "harness_error" if top.status == STATUS_ERROR else "agent_done",
        "done_payload": {
            "otel": {
                "unmapped": unmapped,
                "unmapped_tool_attributes": sorted(unknown_attrs),
                "tools_without_arguments": sorted(unrecorded),
                "arguments_from_requests": len(from_request),
                "requested_tool_calls": len(requested),
                "requested_not_run": _not_run(requested, ran),
                "nested_chat_spans": nested_chats,
                "status": top.status_message or None,
            }
        },
        "sim_time": step,
        "tool_calls_used": calls,
        "ecam": [],
        "active_failures": [],
        "snapshot": None,
        "success_eval": None
        if success is None
        else {
            "final_state": [{"var": SUCCESS_ATTR, "op": "==", "value": True, "passed": success}],
            "ecam_clear_of": [],
            "all_passed": success,
        },
    }
    return [meta, setup, *events, final]


def _call_id(span: Span) -> str | None:
    value = span.attrs.get("gen_ai.tool.call.id")
    return None if value is None else str(value)


def _utc(unix_nano: int) -> str | None:
    """The span's recorded start as ISO 8601 UTC (the trace's own clock, never this machine's)."""
    if unix_nano <= 0:
        return None  # a fixed64 (at most 2**64 - 1 ns, the year 2554) is within datetime's range
    from datetime import datetime

    seconds, nanos = divmod(unix_nano, 10**9)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"


def _scenario(
    spans: list[Span], options: Options, agent: Any, prompt: str | None, events: list[dict[str, Any]]
) -> dict[str, Any]:
    key = options.scenario if options.scenario is not None else _attr(spans, options.scenario_attr)
    if options.scenarios is not None:
        if key is None:
            raise RunError(f"no scenario: attribute {options.scenario_attr} is not set on the run's spans or resource")
        if str(key) not in options.scenarios:
            where = "--scenario" if options.scenario is not None else f"attribute {options.scenario_attr}"
            raise RunError(f"scenario {key!r} ({where}) is not in --scenarios")
        return options.scenarios[str(key)]
    sid = str(key) if key is not None else f"otel/{agent}" if isinstance(agent, str) and agent else "otel"
    return {
        "id": sid,
        "title": sid,
        "task_prompt": prompt,
        "ground_truth": {
            "source": "none (OpenTelemetry traces carry no expected actions)",
            "procedure": [],
            "optional_actions": [],
            "forbidden_actions": [],
        },
        "success": {"final_state": [{"var": SUCCESS_ATTR, "op": "==", "value": True}], "ecam_clear_of": []},
        "budget": {"max_tool_calls": None, "max_sim_time_s": None},
        "command_tools": sorted({e["name"] for e in events if e["type"] == "tool_call"}),
    }


UNMAPPED_NOTE = (
    "{lines} span(s) or message(s) in {where} could not be mapped and were left out ({items}); each run "
    "counts its own in final.done_payload.otel.unmapped"
)


NO_ARGUMENTS_NOTE = (
    "{lines} tool call(s) in {where} record no arguments ({items}): they are scored as calls with no "
    "arguments, so no argument rule matches them. GenAI instrumentations record arguments and results "
    "only with content capture on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
)


def no_arguments(run: list[dict[str, Any]]) -> str | None:
    """What a run whose tool calls record no arguments is to be told: one line, or None."""
    otel = run[-1]["done_payload"]["otel"]
    n = otel["unmapped"]["tool_arguments"]
    if not n:
        return None
    calls = sum(1 for e in run if e["type"] == "tool_call")
    tools = ", ".join(otel["tools_without_arguments"])
    return f"{n} of {calls} tool call(s) record no arguments ({tools}): scored as calls with no arguments"


REQUESTED_NOTE = (
    "{lines} tool call(s) the model asked for in {where} have no tool span that ran them; they are kept "
    "apart on the assistant turns (provider_raw.requested_tool_calls), not counted as calls"
)
OUTSIDE_NOTE = (
    "{lines} span(s) in {where} lie outside every agent span and belong to no run ({items}); they were left out"
)
CUT_NOTE = (
    "{lines} run(s) in {where} hold only part of a trace: their top span's parent is not in the input (traces "
    "{items}); a trace cut over several files (a rotated exporter file) gives a partial run from each, and one "
    "whose root was never exported lacks it: import each trace from one file (cat the files into one)"
)


def convert_spans(spans: Iterable[Span], options: Options, source: str, path: str) -> Converted:
    spans = list(spans)
    runs, errors = [], []
    left_out: dict[str, int] = {}
    not_run = 0
    unrecorded: set[str] = set()
    in_runs: set[tuple[str, str]] = set()
    cut: set[str] = set()  # traces whose run here starts below an absent parent, not at an agent span
    for top in run_roots(spans):
        in_runs.update((s.trace_id, s.span_id) for s in _walk(top))
        if top.parent and top.operation != "invoke_agent":
            cut.add(top.trace_id)
        try:
            run = build_run(top, options, source)
        except RunError as exc:
            errors.append(ImportFormatError(path, None, f"trace {top.trace_id} span {top.span_id}: {exc}"))
            continue
        runs.append(run)
        otel = run[-1]["done_payload"]["otel"]
        not_run += otel["requested_not_run"]
        unrecorded.update(otel["tools_without_arguments"])
        for what, n in otel["unmapped"].items():
            if n:
                left_out[what] = left_out.get(what, 0) + n
    no_args = left_out.pop("tool_arguments", 0)  # not left out: scored with none, said in a note of its own
    notes = []
    if left_out:  # counted and said once per import, never guessed
        items = {f"{what.replace('_', ' ')}" for what in left_out}
        notes.append(Note("otel/unmapped", UNMAPPED_NOTE, items, sum(left_out.values()), [path]))
    if no_args:
        notes.append(Note("otel/no_arguments", NO_ARGUMENTS_NOTE, unrecorded, no_args, [path]))
    if not_run:
        notes.append(Note("otel/requested", REQUESTED_NOTE, set(), not_run, [path]))
    outside = {(s.trace_id, s.span_id): s for s in spans if (s.trace_id, s.span_id) not in in_runs}
    if outside:
        names = {s.name or s.operation for s in outside.values()}
        notes.append(Note("otel/outside", OUTSIDE_NOTE, names, len(outside), [path]))
    if cut:
        notes.append(Note("otel/cut", CUT_NOTE, cut, len(cut), [path]))
    return Converted(runs, [], errors, notes)


# -- the importer -----------------------------------------------------------------------------------


def load_scenarios(path: str) -> dict[str, dict[str, Any]]:
    """The scenarios of ``--scenarios FILE`` by id, as written, read and checked as `evalkit score`
    reads a scenario file (a bad scenario or a repeated id is an error naming its line)."""
    from evalkit.trajectory.scenario_files import load_scenarios as load_scenario_files

    return {scenario_id: raw for scenario_id, (raw, _) in load_scenario_files([path]).by_id.items()}


def load_results(path: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for lineno, item in safe_json.json_lines(
        read_text(path), lambda n, r: ImportFormatError(path, n, f"not valid JSON: {r}")
    ):
        key = item.get("run_id", item.get("trace_id")) if isinstance(item, dict) else None
        if not isinstance(key, str) or not isinstance(item.get("success"), bool):
            raise ImportFormatError(path, lineno, "a line must be {trace_id | run_id, success: true|false}")
        out[key.lower() if "trace_id" in item and "run_id" not in item else key] = item["success"]
    return out
