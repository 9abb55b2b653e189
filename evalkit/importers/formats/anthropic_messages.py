"""Anthropic Messages transcripts → trajectory events: the ``anthropic`` dialect of the messages importer.

Anthropic's form carries tool use as content blocks: an assistant message's ``tool_use`` blocks
``{id, name, input}`` are its tool calls (several per message, in block order), a user message's
``tool_result`` blocks ``{tool_use_id, content, is_error}`` answer them, and its ``text`` blocks are
what the user said. Each message is restated in the OpenAI form that
:func:`evalkit.importers.formats.messages.convert_messages` reads, so both dialects map to the same records;
the assistant record's ``provider_raw`` is the original Anthropic message. Errors name the message
and the content block as they are in the input.

``sniff`` tells the dialects apart by the first message that shows one: a ``tool_use`` /
``tool_result`` / ``thinking`` block or a ``tool_use`` stop reason is Anthropic's; a ``tool`` /
``function`` / ``system`` / ``developer`` role, ``tool_calls`` or ``function_call`` is OpenAI's. Messages
that show neither (plain text) read the same in both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.importers.formats.messages import MessageError, Transcript, convert_messages, parse_arguments, text_of

DIALECTS = ("openai", "anthropic", "auto")
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
_OPENAI_ROLES = frozenset({"tool", "function", "system", "developer"})


def sniff(messages: Any) -> str:
    """``anthropic`` or ``openai`` (also for messages that do not tell them apart, or are malformed:
    the OpenAI reader then reports what is wrong)."""
    if not isinstance(messages, list):
        return "openai"
    for msg in messages:
        if not isinstance(msg, dict):
            break
        if msg.get("role") in _OPENAI_ROLES or "tool_calls" in msg or "function_call" in msg:
            return "openai"
        content = msg.get("content")
        if msg.get("stop_reason") == "tool_use" or (
            isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content)
        ):
            return "anthropic"
    return "openai"


def convert(
    messages: Any, is_error: Callable[[dict[str, Any], Any], bool], missing_result_is_error: bool, dialect: str = "auto"
) -> Transcript:
    """The transcript of ``messages`` in ``dialect`` (``auto``: :func:`sniff`)."""
    if dialect == "auto":
        dialect = sniff(messages)
    if dialect == "openai":
        return convert_messages(messages, is_error, missing_result_is_error, malformed_calls=True)
    originals: list[dict[str, Any]] = []
    transcript = convert_messages(to_openai(messages, originals), is_error, missing_result_is_error)
    assistants = iter(originals)
    for event in transcript.events:
        if event["type"] == "assistant":
            event["provider_raw"] = next(assistants)
    return transcript


def _blocks(content: Any, mi: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise MessageError(f"message {mi}: content must be a string or a list of content blocks")
    for bi, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise MessageError(f"message {mi}, content block {bi}: needs a type")
    return content


def to_openai(messages: Any, originals: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Anthropic messages restated as OpenAI chat messages (``originals`` collects the assistant
    messages as given, one per assistant message returned)."""
    if not isinstance(messages, list):
        raise MessageError("messages must be a list")
    out: list[dict[str, Any]] = []
    pending: set[str] = set()
    for mi, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise MessageError(f"message {mi} is not an object")
        role = msg.get("role")
        blocks = _blocks(msg.get("content"), mi)
        text = "".join(b["text"] for b in blocks if b["type"] == "text" and isinstance(b.get("text"), str))
        if role == "assistant":
            calls = []
            for bi, block in enumerate(blocks):
                if block["type"] != "tool_use":
                    continue
                name = block.get("name")
                if not isinstance(name, str) or not name:
                    raise MessageError(f"message {mi}, content block {bi} (tool_use): needs name")
                call_id = block.get("id")
                if not isinstance(call_id, str) or not call_id:
                    raise MessageError(f"message {mi}, content block {bi} (tool_use {name}): needs id")
                args = parse_arguments(block.get("input"), f"message {mi}, content block {bi} (tool_use {name})")
                calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": args}})
                pending.add(call_id)
            restated: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
            if calls:
                restated["tool_calls"] = calls
            if msg.get("stop_reason") is not None:
                restated["stop_reason"] = msg["stop_reason"]
            out.append(restated)
            if originals is not None:
                originals.append(msg)
        elif role == "user":
            for bi, block in enumerate(blocks):
                if block["type"] != "tool_result":
                    continue
                call_id = block.get("tool_use_id")
                if call_id not in pending:
                    raise MessageError(
                        f"message {mi}, content block {bi} (tool_result): tool_use_id {call_id!r} "
                        "answers no pending tool_use"
                    )
                pending.discard(call_id)
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": _result_text(block.get("content")),
                        "is_error": block.get("is_error") is True,
                    }
                )
            if text or not any(b["type"] == "tool_result" for b in blocks):
                out.append({"role": "user", "content": text})
        elif role == "system":  # not a Messages role (system is a request parameter), but logs keep it so
            out.append({"role": "system", "content": text})
        else:
            raise MessageError(f"message {mi}: unknown role {role!r}")
    return out


def _result_text(content: Any) -> Any:
    """A tool_result's content: a string as it is, text blocks joined, anything else as JSON text."""
    if content is None or isinstance(content, str):
        return content
    return text_of(content)
