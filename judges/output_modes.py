"""How the judge asks for structured output, and how it reads the answer back.

Five modes (one record each in `TABLE`), from the most to the least constrained; every reply,
whatever the mode, is validated by the same pydantic model (`evalkit.judges.rubrics.annotation_model`),
so a mode changes how the JSON is requested and located, never what counts as a valid answer:

- `json_schema`        — `response_format={"type": "json_schema", ...}` (OpenAI strict output);
- `json_object_schema` — `response_format={"type": "json_object", "schema": S'}` (llama.cpp's
                          server and llama-cpp-python constrain decoding with S'; S' is S
                          narrowed to what a grammar enforces, see `grammar_schema`);
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
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

AUTO = "auto"
TOOL_NAME = "submit_annotation"


@dataclass(frozen=True)
class OutputMode:
    """One way of asking for structured output. A new mode is one record in :data:`TABLE` (its
    place there is its rank: ``auto`` steps down the table in order); its name reaches the judge
    config's ``output_mode``, the CLI's ``--output-mode`` and the step-down logic from there.

    ``request(json_schema_format, sent_schema)`` gives the keyword arguments it adds to a chat
    request; ``sends``: which schema the request carries (``rubric``: the rubric's own S,
    ``grammar``: S narrowed for a decoding grammar, None: none); ``schema_in_prompt``: the schema is
    also stated in a user message, since the server may not enforce it; ``reads``: where the answer
    is (``content``, or ``tool_call`` arguments); ``finds_object``: the JSON is located in prose;
    ``uses``: the request parameters it needs (a server refusing one of them rules the mode out)."""

    name: str
    request: Callable[[dict, dict | None], dict]
    sends: Literal["rubric", "grammar"] | None
    schema_in_prompt: bool
    reads: Literal["content", "tool_call"] = "content"
    finds_object: bool = False
    uses: frozenset[str] = frozenset()


def _tool_request(_format: dict, schema: dict | None) -> dict:
    return {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": TOOL_NAME,
                    "description": "Submit the graded annotation of the run.",
                    "parameters": schema,
                },
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": TOOL_NAME}},
    }


_RESPONSE_FORMAT = frozenset({"response_format", "response_format.type"})
TABLE: tuple[OutputMode, ...] = (
    OutputMode("json_schema", lambda fmt, _schema: {"response_format": fmt}, "rubric", False, uses=_RESPONSE_FORMAT),
    OutputMode(
        "json_object_schema",
        lambda _fmt, schema: {"response_format": {"type": "json_object", "schema": schema}},
        "grammar",
        True,
        uses=_RESPONSE_FORMAT | {"response_format.schema"},
    ),
    OutputMode(
        "json_object",
        lambda _fmt, _schema: {"response_format": {"type": "json_object"}},
        None,
        True,
        uses=_RESPONSE_FORMAT,
    ),
    OutputMode("tool", _tool_request, "rubric", False, reads="tool_call", uses=frozenset({"tools", "tool_choice"})),
    OutputMode("prompt", lambda _fmt, _schema: {}, None, True, finds_object=True),
)
BY_NAME = {m.name: m for m in TABLE}
MODES = tuple(BY_NAME)


def mode_record(mode: str) -> OutputMode:
    try:
        return BY_NAME[mode]
    except KeyError:
        raise ValueError(f"unknown output mode {mode!r}") from None


def check_mode(mode: str) -> str:
    if mode != AUTO and mode not in MODES:
        raise ValueError(f"unknown output mode {mode!r}: expected auto or one of {', '.join(MODES)}")
    return mode


def schema_in_prompt(mode: str) -> bool:
    """Modes whose request does not carry the schema in a form the server enforces."""
    return mode_record(mode).schema_in_prompt


def schema_instruction(schema: dict) -> dict:
    """The extra user message stating the schema, for the modes where the server may not see it."""
    return {
        "role": "user",
        "content": (
            "Your reply must be one JSON object valid against this JSON Schema (no other text):\n"
            + json.dumps(schema, sort_keys=True, ensure_ascii=False)
            + "\n"
        ),
    }


# The default bound on free text in a grammar, in characters (configs/judge.toml: rationale_max_chars)
TEXT_CHARS = 800
# A bounded number becomes this many + 1 evenly spaced values (confidence in [0, 1]: 0.0, 0.1, ..., 1.0)
NUMBER_STEPS = 10
# Whitespace a grammar lets a model put around each key and value (llama.cpp's `space` rule), in
# characters: counted against the reply budget with the fixed fields, see `text_budget`
_SPACE_PER_FIELD = 8


def _enum_for_bounds(prop: dict) -> list | None:
    """The values a grammar can enforce for a bounded number: llama.cpp's json-schema-to-grammar
    ignores minimum/maximum on numbers, so a model may write 4 for a confidence in [0, 1]."""
    lo, hi = prop.get("minimum"), prop.get("maximum")
    if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)) or lo > hi:
        return None
    if prop.get("type") == "integer":
        first, last = math.ceil(lo), math.floor(hi)
        return list(range(first, last + 1)) if 0 <= last - first <= 100 else None
    return sorted({round(lo + (hi - lo) * k / NUMBER_STEPS, 6) for k in range(NUMBER_STEPS + 1)})


def _free_text(prop: dict) -> bool:
    return prop.get("type") == "string" and not {"enum", "const", "pattern", "format"} & prop.keys()


def grammar_schema(schema: dict, text_chars: int) -> dict:
    """S narrowed to what a decoding grammar can enforce (the schema a json_object_schema request
    carries; llama.cpp's server and llama-cpp-python compile it into a grammar).

    - a number with minimum and maximum becomes an `enum` of NUMBER_STEPS + 1 evenly spaced values
      in its range (an integer: every integer in it), since the grammar ignores number bounds;
    - free-text strings get `maxLength` = text_chars (never below their `minLength`), so the
      grammar closes the string in time instead of the reply budget cutting the JSON short;
    - free-text properties move after the short ones: scores are written before the model can
      ramble.
    Strictly narrower: every instance of the result is an instance of S (a test checks this for
    every rubric), and replies are still validated by the rubric's own model, never by this."""
    out = json.loads(json.dumps(schema))
    props = out.get("properties") or {}
    for prop in props.values():
        if "enum" in prop or "const" in prop:
            continue
        if prop.get("type") in ("number", "integer"):
            values = _enum_for_bounds(prop)
            if values is not None:
                prop["enum"] = values
        elif _free_text(prop):
            floor = int(prop.get("minLength", 0))
            prop["maxLength"] = max(floor, min(int(prop.get("maxLength", text_chars)), text_chars))
    if props:
        out["properties"] = dict(sorted(props.items(), key=lambda kv: _free_text(kv[1])))
    return out


def _widest(prop: dict) -> int:
    """Characters of the longest value a non-free-text property can take in JSON."""
    if "enum" in prop:
        return max(len(json.dumps(v)) for v in prop["enum"])
    if "const" in prop:
        return len(json.dumps(prop["const"]))
    return 24  # a number without bounds: as long as a float's repr


def text_budget(schema: dict, max_tokens: int | None, text_chars: int) -> int:
    """The free-text bound for a grammar: `text_chars`, lowered so that the whole reply fits in
    `max_tokens` at worst one token per character — the fixed fields (keys, widest values,
    punctuation, the whitespace the grammar allows) first, the rest shared by the free-text
    fields. ASCII text never takes more than one token per character; other scripts can, and a
    reply cut short by the budget is then a judge_error, as before."""
    if not max_tokens:
        return text_chars
    props = (schema.get("properties") or {}).items()
    texts = [name for name, prop in props if _free_text(prop)]
    fixed = 2 + sum(
        len(json.dumps(name)) + 2 + _SPACE_PER_FIELD + (2 if name in texts else _widest(prop)) for name, prop in props
    )
    room = (max_tokens - fixed) // max(1, len(texts))
    return max(1, min(text_chars, room))


def sent_schema(
    mode: str, json_schema_format: dict, max_tokens: int | None = None, text_chars: int | None = None
) -> dict | None:
    """The schema a request in `mode` carries (None: the mode sends none). Only json_object_schema
    sends something other than the rubric's own schema: its grammar-friendly narrowing."""
    schema = json_schema_format["json_schema"]["schema"]
    sends = mode_record(mode).sends
    if sends == "grammar":
        chars = text_budget(schema, max_tokens, text_chars or TEXT_CHARS)
        return grammar_schema(schema, chars)
    return schema if sends == "rubric" else None


def request_shape(
    mode: str, json_schema_format: dict, max_tokens: int | None = None, text_chars: int | None = None
) -> dict:
    """The keyword arguments a mode adds to a chat-completions request.

    `json_schema_format` is the rubric's `{"type": "json_schema", "json_schema": {...}}`;
    `max_tokens` (the reply budget) and `text_chars` bound free text in the json_object_schema
    grammar (`sent_schema`, `text_budget`)."""
    record = mode_record(mode)
    return record.request(json_schema_format, sent_schema(mode, json_schema_format, max_tokens, text_chars))


_JSON_TYPE = {"int": "number", "float": "number", "bool": "boolean", "list": "array", "dict": "object"}


def content_problem(content) -> str | None:
    """Why a reply message's content is not text a judge answer can be read from (None: it is)."""
    if content is None or isinstance(content, str):
        return None
    kind = _JSON_TYPE.get(type(content).__name__, type(content).__name__)
    return f"the reply's message content is a{'n' if kind[0] in 'aeiou' else ''} {kind}, not text"


def body_problem(body: bytes | None) -> str | None:
    """Why a 200 reply body is not a chat completion evalkit can read, in one line (None: no
    fault found in its shape). Used when the client library failed on a reply the server sent
    whole, so the reason names the reply, not the library."""
    if body is None:
        return None
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return "the reply body is not JSON"
    if not isinstance(payload, dict):
        return "the reply body is not a JSON object"
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the reply has no choices"
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return "the reply's first choice has no message"
    return content_problem(message.get("content"))


# A count a server reports that is above this is not believed (SQLite's integers stop at 2**63)
MAX_TOKENS_REPORTED = 10**12


def token_count(value) -> int | None:
    """A usage figure as reported, or None when it is not a plausible count (not an integer,
    negative, or beyond MAX_TOKENS_REPORTED): unknown, never a made-up number."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_REPORTED:
        return None
    return value


def reply_text(mode: str, message) -> str:
    """The text to validate from a response message (litellm's Message or a dict)."""
    get = message.get if isinstance(message, dict) else (lambda k, d=None: getattr(message, k, d))
    if mode_record(mode).reads == "tool_call":
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
    except (ValueError, RecursionError):  # nested deeper than the parser's stack: not an answer
        return False


def first_json_object(text: str) -> str | None:
    """The JSON object in a prose reply: a fenced block first, else the first balanced `{...}`
    that parses. Located, never repaired: the caller still validates what comes back."""
    for block in _FENCE.findall(text):
        candidate = block.strip()
        if candidate.startswith("{") and _parses(candidate):
            return candidate
    # every start rescans what follows it: bound the total, or a reply of a million `{` takes hours
    budget = 4 * len(text) + 100_000
    start = text.find("{")
    while start != -1:
        depth, in_str, escape = 0, False, False
        end = len(text)
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
                    candidate = text[start : i + 1]
                    if _parses(candidate):
                        return candidate
                    end = i
                    break
        budget -= end - start + 1
        if budget < 0:
            return None
        start = text.find("{", start + 1)
    return None


def extract_json(mode: str, text: str) -> str:
    """What the pydantic model validates: the reply as is, or (prompt mode) the object in it.

    Raw control characters inside strings (a newline in the rationale: llama.cpp's older JSON
    grammars allow them, strict JSON does not) are read as the characters they are: the text is
    re-encoded with them escaped, every value unchanged. Anything else that is not JSON is left
    as it is, for the validator to reject."""
    if mode_record(mode).finds_object:
        found = first_json_object(text)
        text = found if found is not None else text
    try:
        json.loads(text)
        return text
    except (ValueError, RecursionError):
        pass
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except (ValueError, RecursionError):  # the validator says why (its parser stops at a depth)
        return text


def ignored_format(mode: str, text: str) -> bool:
    """A structured-mode reply that is prose around a JSON object: the server ignored the
    structured-output request (a constrained decoder never writes prose), so prompt mode fits."""
    if mode_record(mode).finds_object or _parses(text):
        return False
    return first_json_object(text) is not None


# -- reading a refusal ----------------------------------------------------------------------------

_VALIDATION = re.compile(
    r"(input should be|extra (inputs|fields?) (are|is) not permitted|not permitted|not supported|"
    r"unsupported|unrecognized|unknown (field|parameter|argument)|invalid (value|parameter|type)|"
    r"is not (one of|a valid|allowed)|must be one of|field required|validation error|"
    r"does not support|not allowed|unexpected)",
    re.IGNORECASE,
)
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
    later = [BY_NAME[m] for m in order[order.index(mode) + 1 :]] if mode in order else []
    allows_object = "json_object" in text

    def without(*params: str) -> list[OutputMode]:
        return [m for m in later if not m.uses & set(params)]

    if parameter == "response_format.schema":
        candidates = without("response_format.schema")
    elif parameter == "response_format.type":
        candidates = later if (allows_object or mode == "json_schema") else without("response_format")
    elif parameter == "response_format":
        candidates = later if allows_object else without("response_format")
    elif parameter in ("tools", "tool_choice"):
        candidates = without("tools", "tool_choice")
    else:
        candidates = later
    return candidates[0].name if candidates else None
