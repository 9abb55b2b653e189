"""How the judge asks for structured output, and how it reads the answer back.

Five modes, from the most to the least constrained; every reply, whatever the mode, is validated
by the same pydantic model (`evalkit.judges.rubrics.annotation_model`), so a mode changes how the JSON
is requested and located, never what counts as a valid answer:

- `json_schema`        — `response_format={"type": "json_schema", ...}` (OpenAI strict output);
- `json_object_schema` — `response_format={"type": "json_object", "schema": S}` (llama.cpp's
                          server and llama-cpp-python constrain decoding with S);
- `json_object`        — `response_format={"type": "json_object"}`, S stated in the prompt;
- `tool`               — one forced function call whose parameters are S;
- `prompt`             — no response_format, S in the prompt, the JSON taken from the reply
                          tolerantly (a ```json fence, prose around it, the first balanced object).

`next_mode` reads a server's refusal of the request *shape* (which parameter it names) and picks
the mode to try next; `rejected_parameter` says whether an error is such a refusal at all. Pure
functions of their arguments: no I/O, no litellm.
"""
from __future__ import annotations

import json
import re

MODES = ("json_schema", "json_object_schema", "json_object", "tool", "prompt")
AUTO = "auto"
TOOL_NAME = "submit_annotation"


def check_mode(mode: str) -> str:
    if mode != AUTO and mode not in MODES:
        raise ValueError(f"unknown output mode {mode!r}: expected auto or one of {', '.join(MODES)}")
    return mode


def schema_in_prompt(mode: str) -> bool:
    """Modes whose request does not carry the schema in a form the server enforces."""
    return mode in ("json_object_schema", "json_object", "prompt")


def schema_instruction(schema: dict) -> dict:
    """The extra user message stating the schema, for the modes where the server may not see it."""
    return {"role": "user", "content": (
        "Your reply must be one JSON object valid against this JSON Schema (no other text):\n"
        + json.dumps(schema, sort_keys=True, ensure_ascii=False) + "\n")}


def bounded_strings(schema: dict, max_chars: int) -> dict:
    """S with `maxLength` on its free-text strings, for a server that turns S into a decoding
    grammar: the grammar then closes the string in time, so a model that rambles cannot run past
    max_tokens and cut its own JSON short. Only the request changes; replies are still validated
    by the rubric's own model."""
    out = json.loads(json.dumps(schema))
    for prop in (out.get("properties") or {}).values():
        if prop.get("type") == "string" and "enum" not in prop and "maxLength" not in prop:
            prop["maxLength"] = max_chars
    return out


def request_shape(mode: str, json_schema_format: dict, max_tokens: int | None = None) -> dict:
    """The keyword arguments a mode adds to a chat-completions request.

    `json_schema_format` is the rubric's `{"type": "json_schema", "json_schema": {...}}`;
    `max_tokens` (the reply budget) bounds free text in the json_object_schema grammar at two
    characters per token, about half the budget."""
    schema = json_schema_format["json_schema"]["schema"]
    if mode == "json_schema":
        return {"response_format": json_schema_format}
    if mode == "json_object_schema":
        if max_tokens:
            schema = bounded_strings(schema, 2 * max_tokens)
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    if mode == "tool":
        return {"tools": [{"type": "function", "function": {
                    "name": TOOL_NAME, "description": "Submit the graded annotation of the run.",
                    "parameters": schema}}],
                "tool_choice": {"type": "function", "function": {"name": TOOL_NAME}}}
    if mode == "prompt":
        return {}
    raise ValueError(f"unknown output mode {mode!r}")


def reply_text(mode: str, message) -> str:
    """The text to validate from a response message (litellm's Message or a dict)."""
    get = message.get if isinstance(message, dict) else (lambda k, d=None: getattr(message, k, d))
    if mode == "tool":
        for call in get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else getattr(call, "function", None)
            args = fn.get("arguments") if isinstance(fn, dict) else getattr(fn, "arguments", None)
            if args is not None:
                return args if isinstance(args, str) else json.dumps(args)
        return get("content") or ""
    return get("content") or ""


_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)


def _parses(text: str) -> bool:
    try:
        json.loads(text, strict=False)
        return True
    except ValueError:
        return False


def first_json_object(text: str) -> str | None:
    """The JSON object in a prose reply: a fenced block first, else the first balanced `{...}`
    that parses. Located, never repaired: the caller still validates what comes back."""
    for block in _FENCE.findall(text):
        candidate = block.strip()
        if candidate.startswith("{") and _parses(candidate):
            return candidate
    start = text.find("{")
    while start != -1:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    candidate = text[start:i + 1]
                    if _parses(candidate):
                        return candidate
                    break
        start = text.find("{", start + 1)
    return None


def extract_json(mode: str, text: str) -> str:
    """What the pydantic model validates: the reply as is, or (prompt mode) the object in it.

    Raw control characters inside strings (a newline in the rationale: llama.cpp's older JSON
    grammars allow them, strict JSON does not) are read as the characters they are: the text is
    re-encoded with them escaped, every value unchanged. Anything else that is not JSON is left
    as it is, for the validator to reject."""
    if mode == "prompt":
        found = first_json_object(text)
        text = found if found is not None else text
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return text


def ignored_format(mode: str, text: str) -> bool:
    """A structured-mode reply that is prose around a JSON object: the server ignored the
    structured-output request (a constrained decoder never writes prose), so prompt mode fits."""
    if mode == "prompt" or _parses(text):
        return False
    return first_json_object(text) is not None


# -- reading a refusal ----------------------------------------------------------------------------

_VALIDATION = re.compile(
    r"(input should be|extra (inputs|fields?) (are|is) not permitted|not permitted|not supported|"
    r"unsupported|unrecognized|unknown (field|parameter|argument)|invalid (value|parameter|type)|"
    r"is not (one of|a valid|allowed)|must be one of|field required|validation error|"
    r"does not support|not allowed|unexpected)", re.IGNORECASE)
_PARAMS = (
    ("response_format.schema", re.compile(r"response_format\W+schema|'schema'|\"schema\"", re.I)),
    ("response_format.type", re.compile(r"response_format\W+type|json_schema|'json_object'", re.I)),
    ("response_format", re.compile(r"response_format|response format|structured output|json mode", re.I)),
    ("tool_choice", re.compile(r"tool_choice", re.I)),
    ("tools", re.compile(r"\btools?\b|function.?call", re.I)),
)


def rejected_parameter(status: int | None, text: str) -> str | None:
    """The request parameter a server refused, when `text` (an error body) shows a rejection of
    the request's shape: a 400/422, or a 5xx whose body is a request-validation error (llama-cpp-
    python answers a json_schema response_format with a 500 carrying pydantic's message). None
    for anything else (including a 5xx that is an ordinary server fault)."""
    if status is None:
        return None
    if status >= 500 and not _VALIDATION.search(text):
        return None
    if status not in (400, 422) and status < 500:
        return None
    for name, pattern in _PARAMS:
        if pattern.search(text):
            return name
    return None


def next_mode(mode: str, parameter: str, text: str = "") -> str | None:
    """The mode to try after `mode` was refused because of `parameter`; None when none is left.

    The refusal says how far to step: a server that lists json_object among allowed types keeps
    response_format; one that refuses response_format itself skips to tools; one that refuses
    tools (or the tool_choice) skips to the prompt."""
    order = list(MODES)
    later = order[order.index(mode) + 1:] if mode in order else []
    allows_object = "json_object" in text
    if parameter == "response_format.schema":
        candidates = [m for m in later if m in ("json_object", "tool", "prompt")]
    elif parameter == "response_format.type":
        candidates = later if (allows_object or mode == "json_schema") else \
            [m for m in later if m in ("tool", "prompt")]
    elif parameter == "response_format":
        candidates = later if allows_object else [m for m in later if m in ("tool", "prompt")]
    elif parameter in ("tools", "tool_choice"):
        candidates = [m for m in later if m == "prompt"]
    else:
        candidates = later
    return candidates[0] if candidates else None
