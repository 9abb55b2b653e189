"""The span dialects `evalkit import otel` reads, detected per span from the span's own attributes.

* **GenAI semantic conventions**: ``gen_ai.operation.name`` (``invoke_agent``; ``chat``,
  ``text_completion``, ``generate_content`` and any-agent's ``call_llm`` are model calls;
  ``execute_tool``).
* **OpenInference** (Arize Phoenix): ``openinference.span.kind`` ``AGENT`` / ``LLM`` / ``TOOL``;
  ``CHAIN``, ``RETRIEVER`` and the other kinds are other spans. A tool's name is ``tool.name``, the
  call's arguments ``input.value`` (``tool.parameters`` is the tool's schema, never the call), its
  result ``output.value``; a model call's messages are ``llm.input_messages.N.message.*`` and
  ``llm.output_messages.N.message.*`` (text in ``content`` or ``contents.M.message_content.text``,
  requested tools in ``tool_calls.M.tool_call.function.{name,arguments}``), its model ``llm.model_name``.
* **OpenLLMetry** (Traceloop): ``traceloop.span.kind`` ``agent`` / ``tool`` (``workflow`` and
  ``task`` are other spans); a model call has ``llm.request.type`` ``chat`` or ``completion`` and its
  messages as ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` (requested tools in
  ``gen_ai.completion.N.tool_calls.M.{name,arguments,id}``), or, in newer releases, the conventions'
  ``gen_ai.input.messages`` / ``gen_ai.output.messages``. A tool's name is ``traceloop.entity.name``,
  its call ``traceloop.entity.input``, its result ``traceloop.entity.output``.
* Otherwise the span name's first word (``execute_tool lookup``).

Arguments are written differently by each instrumentation; :func:`call_arguments` reads them all:
JSON text of an object; a Python literal (LangChain passes ``str(dict)``), read with
:func:`ast.literal_eval`, which evaluates literals only, never code; a bound call
``{"args": [], "kwargs": {...}}`` (smolagents, llama-index, Traceloop's decorators) is its
``kwargs``; OpenLLMetry's LangChain envelope ``{"input_str", "inputs", ...}`` its ``inputs`` (else its
``input_str`` read the same way); anything else is kept whole under ``"input"``.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

INVOKE_AGENT, CHAT, EXECUTE_TOOL = "invoke_agent", "chat", "execute_tool"
OPERATION_ALIASES = {"call_llm": CHAT, "text_completion": CHAT, "generate_content": CHAT}
OPENINFERENCE_KINDS = {"AGENT": INVOKE_AGENT, "LLM": CHAT, "TOOL": EXECUTE_TOOL}
TRACELOOP_KINDS = {"agent": INVOKE_AGENT, "tool": EXECUTE_TOOL}
TEXT_KEY = "input"  # arguments that are not an object are kept whole under this key
MAX_LITERAL = 1 << 20  # characters: a longer Python literal is kept as text, never evaluated
# a call bound to a function's signature: positional args, keyword args (smolagents adds its flag)
BOUND_CALL_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})
LANGCHAIN_TOOL_INPUT_KEYS = frozenset({"input_str", "inputs", "tags", "metadata", "kwargs"})

# where a tool span's arguments and result are found, first present wins. Strict ones must hold a
# JSON object (the conventions say so); the others are read by call_arguments.
STRICT_ARGUMENT_ATTRS = ("gen_ai.tool.call.arguments", "tool_arguments")
ARGUMENT_ATTRS = (
    "gen_ai.tool.call.arguments",  # GenAI conventions
    "gen_ai.tool.args",  # mozilla-ai/any-agent (its LangChain instrumentation: a Python literal)
    "tool_arguments",  # pydantic-ai (logfire)
    "input.value",  # OpenInference
    "traceloop.entity.input",  # OpenLLMetry
)
RESULT_ATTRS = (
    "gen_ai.tool.call.result",
    "gen_ai.output",
    "genai.output",  # any-agent's LangChain instrumentation
    "tool_response",
    "output.value",
    "traceloop.entity.output",
)
# attributes that say which span, dialect or tool it is, with nothing of the call to map
DESCRIPTIVE_ATTRS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.description",
        "gen_ai.tool.type",
        "gen_ai.output.type",
        "genai.output.type",
        "gen_ai.agent.name",
        "gen_ai.agent.id",
        "gen_ai.provider.name",
        "gen_ai.system",
        "gen_ai.conversation.id",
        "error.type",
        "openinference.span.kind",
        "tool.name",
        "tool.description",
        "tool.parameters",
        "tool.json_schema",
        "input.mime_type",
        "output.mime_type",
        "llm.system",
        "llm.provider",
        "session.id",
        "user.id",
        "service.name",
        "traceloop.span.kind",
        "traceloop.entity.name",
        "traceloop.entity.path",
        "traceloop.entity.version",
        "traceloop.workflow.name",
    }
)
SESSION_ATTRS = ("gen_ai.conversation.id", "session.id")


def operation(attrs: dict[str, Any], name: str) -> str:
    """What a span is, whatever its dialect: ``invoke_agent``, ``chat``, ``execute_tool`` or another
    operation's own name."""
    op = attrs.get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return OPERATION_ALIASES.get(op, op)
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return OPENINFERENCE_KINDS.get(kind.upper(), kind.lower())
    kind = attrs.get("traceloop.span.kind")
    if isinstance(kind, str) and kind:
        return TRACELOOP_KINDS.get(kind.lower(), kind.lower())
    if attrs.get("llm.request.type") in ("chat", "completion"):
        return CHAT
    first = name.split(" ", 1)[0]
    return OPERATION_ALIASES.get(first, first)


def tool_name(attrs: dict[str, Any], name: str) -> str:
    for key in ("gen_ai.tool.name", "tool.name", "traceloop.entity.name"):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return attrs[key]
    if "openinference.span.kind" in attrs:
        return name  # OpenInference names a tool span after its tool
    if "traceloop.span.kind" in attrs and name.endswith(".tool"):
        return name[: -len(".tool")]
    return name.split(" ", 1)[1] if " " in name else ""


# -- arguments ---------------------------------------------------------------------------------------


class _NotJSON(Exception):
    pass


def _jsonable(value: Any) -> Any:
    """A Python literal as JSON data (tuples as lists, a float that is not finite as its text);
    _NotJSON for sets, bytes, complex numbers or keys that are not strings."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return (
            value if math.isfinite(value) else ("NaN" if math.isnan(value) else str(value).replace("inf", "Infinity"))
        )
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    raise _NotJSON


def python_literal(text: str) -> tuple[bool, Any]:
    """(read, value) of a Python literal such as LangChain's ``str(dict)``: ``ast.literal_eval``
    evaluates literals only (never a name, call or operator beyond a number's sign)."""
    if len(text) > MAX_LITERAL:
        return False, None
    try:
        return True, _jsonable(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, _NotJSON):
        return False, None


def _decoded(raw: Any) -> tuple[bool, Any]:
    """(read, value) of an argument text: JSON, else a Python literal."""
    if not isinstance(raw, str):
        return True, raw
    try:
        return True, safe_json.loads(raw)
    except JSONProblem:
        return python_literal(raw.strip())


def call_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a JSON object, from whatever form the instrumentation wrote."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    read, value = _decoded(raw)
    if not read:
        return {TEXT_KEY: raw}
    value = _unwrapped(value)
    if isinstance(value, dict):
        return value
    return {} if value is None else {TEXT_KEY: value}


def _unwrapped(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "input_str" in value and set(value) <= LANGCHAIN_TOOL_INPUT_KEYS:
        inputs = value.get("inputs")
        if isinstance(inputs, dict) and inputs:
            return inputs
        text = value.get("input_str")
        read, decoded = _decoded(text) if isinstance(text, str) else (False, None)
        return _unwrapped(decoded) if read and isinstance(decoded, dict) else text
    if isinstance(value.get("kwargs"), dict) and set(value) <= BOUND_CALL_KEYS:
        positional = value.get("args") or []
        if not positional:
            return value["kwargs"]
        if isinstance(positional, list) and len(positional) == 1 and isinstance(positional[0], dict):
            if not value["kwargs"]:
                return positional[0]
    return value


# -- results -----------------------------------------------------------------------------------------


def tool_result(attr: str, raw: Any) -> tuple[Any, bool]:
    """(result, failed) of a tool span's result attribute. OpenLLMetry's LangChain result is
    ``{"output": ..., "kwargs": ...}``, its output a serialized ToolMessage whose ``status`` says
    whether the tool failed; every other form is the attribute as written."""
    if attr != "traceloop.entity.output" or not isinstance(raw, str):
        return raw, False
    try:
        value = safe_json.loads(raw)
    except JSONProblem:
        return raw, False
    if not (isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs"}):
        return raw, False
    output = value["output"]
    if isinstance(output, dict) and output.get("lc") == 1 and isinstance(output.get("kwargs"), dict):
        message = output["kwargs"]  # a LangChain object in its serialized form
        return message.get("content"), message.get("status") == "error"
    return output, False


def exception_message(events: list[tuple[str, int, dict[str, Any]]]) -> str | None:
    for name, _, attrs in events:
        if name == "exception" and isinstance(attrs.get("exception.message"), str):
            return attrs["exception.message"]
    return None


# -- model calls -------------------------------------------------------------------------------------


def unflatten(attrs: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``prefix.0.message.role = x`` and the like as nested objects ``{"0": {"message": {"role": x}}}``
    (a key that is both a value and a prefix keeps the first seen)."""
    root: dict[str, Any] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        parts = key[len(start) :].split(".")
        node = root
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                break
            node = nxt
        else:
            node.setdefault(parts[-1], value)
    return root


def indexed(tree: dict[str, Any]) -> list[Any]:
    """The values under numeric keys, by number."""
    return [tree[k] for k in sorted((k for k in tree if k.isdigit()), key=int)]


def _openinference_text(message: dict[str, Any]) -> str | None:
    if isinstance(message.get("content"), str):
        return message["content"]
    contents = message.get("contents")
    if isinstance(contents, dict):
        texts = [
            c["message_content"].get("text")
            for c in indexed(contents)
            if isinstance(c, dict) and isinstance(c.get("message_content"), dict)
        ]
        texts = [t for t in texts if isinstance(t, str)]
        return "".join(texts) if texts else None
    return None


def openinference_messages(attrs: dict[str, Any], which: str) -> list[dict[str, Any]]:
    """``llm.input_messages`` / ``llm.output_messages`` as ``[{role, text, tool_calls}]``."""
    out = []
    for item in indexed(unflatten(attrs, f"llm.{which}_messages")):
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            continue
        calls = []
        for call in indexed(message.get("tool_calls") or {}):
            tc = call.get("tool_call") if isinstance(call, dict) else None
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                calls.append(_requested(fn["name"], fn.get("arguments"), tc.get("id")))
        out.append({"role": message.get("role"), "text": _openinference_text(message), "tool_calls": calls})
    return out


def _requested(name: str, arguments: Any, call_id: Any) -> dict[str, Any]:
    return {"name": name, "args": call_arguments(arguments), "id": None if call_id is None else str(call_id)}


def requested_calls(attrs: dict[str, Any], events: list[tuple[str, int, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The tool calls a model call's output asks for, in every dialect: ``[{name, args, id}]``."""
    out: list[dict[str, Any]] = []
    messages = attrs.get("gen_ai.output.messages")
    if isinstance(messages, str):
        try:
            messages = safe_json.loads(messages)
        except JSONProblem:
            messages = None
    for message in messages if isinstance(messages, list) else []:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                out.append(_requested(part["name"], part.get("arguments"), part.get("id")))
    for message in openinference_messages(attrs, "output"):
        out.extend(message["tool_calls"])
    for completion in indexed(unflatten(attrs, "gen_ai.completion")):
        if not isinstance(completion, dict):
            continue
        for call in indexed(completion.get("tool_calls") or {}):
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                out.append(_requested(call["name"], call.get("arguments"), call.get("id")))
        legacy = completion.get("function_call")
        if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
            out.append(_requested(legacy["name"], legacy.get("arguments"), None))
    out.extend(any_agent_requested(attrs) or [])
    for name, _, event in events:
        if name == "gen_ai.choice":
            calls = event.get("tool_calls")
            if isinstance(calls, str):
                read, calls = _decoded(calls)
            for call in calls if isinstance(calls, list) else []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                    out.append(_requested(fn["name"], fn.get("arguments"), call.get("id")))
    return out


def any_agent_requested(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    """any-agent's model-call output ``[{"tool.name", "tool.args"}]`` as requested calls; None when
    ``gen_ai.output`` is not such a list (then it is the model's text)."""
    raw = attrs.get("gen_ai.output")
    if not isinstance(raw, str) or attrs.get("gen_ai.output.type") != "json":
        return None
    try:
        value = safe_json.loads(raw)
    except JSONProblem:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) and "tool.name" in v for v in value):
        return None
    return [_requested(str(v["tool.name"]), v.get("tool.args"), None) for v in value]


def model_text(attrs: dict[str, Any]) -> tuple[bool, str | None]:
    """(found, text) of a model call's output in the OpenInference and any-agent forms."""
    messages = openinference_messages(attrs, "output")
    if messages:
        return True, messages[0]["text"]
    raw = attrs.get("gen_ai.output")
    if isinstance(raw, str):
        return True, None if any_agent_requested(attrs) is not None else raw
    if "openinference.span.kind" in attrs and isinstance(attrs.get("output.value"), str):
        if attrs.get("output.mime_type") != "application/json":
            return True, attrs["output.value"]
    return False, None


def model_prompt(attrs: dict[str, Any]) -> str | None:
    """The first user message of an OpenInference model call (``llm.input_messages``, else the
    messages in ``input.value``)."""
    for message in openinference_messages(attrs, "input"):
        if message["role"] == "user":
            return message["text"]
    if "openinference.span.kind" in attrs and isinstance(attrs.get("input.value"), str):
        try:
            value = safe_json.loads(attrs["input.value"])
        except JSONProblem:
            return None
        for message in value if isinstance(value, list) else []:
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                return message["content"]
    return None


def model_name(attrs: dict[str, Any]) -> str | None:
    for key in ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return attrs[key]
    return None
