"""OpenAI-style chat messages → trajectory events, shared by the tau-bench and generic importers.

Mapping (the choices the issue leaves open):

* ``assistant`` message → an ``assistant`` record; its ``tool_calls`` (and a legacy
  ``function_call``) → ``tool_call`` records in the order given, ``call_index`` = position in the
  message. ``step`` counts assistant messages from 1.
* ``tool`` (or legacy ``function``) message → the ``result`` of the call it answers, matched by
  ``tool_call_id``, else the oldest unanswered call of the same name, else the oldest unanswered call.
* ``user`` message → a ``nudge`` record (the only record type that carries text to the agent), with
  the step of the assistant message it follows (0 before the first one).
* ``system`` / ``developer`` messages are not events; their text is returned for the caller.
* These sources have no simulator clock: ``sim_time`` counts agent turns (assistant messages), so a
  tool call of step s runs from s − 1 to s; ``wall_ms`` is null.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

SNIPPET = 60


class MessageError(Exception):
    """A message that cannot be converted; the importer adds file, line and record context."""


@dataclass
class Transcript:
    events: list[dict[str, Any]] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    steps: int = 0
    tool_calls: int = 0
    last_role: str | None = None
    last_text: str | None = None


def text_of(content: Any) -> str | None:
    """Message content as text: strings as-is, content-part lists joined, anything else JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def tools_named(ground_truth: dict[str, Any]) -> set[str]:
    """Every tool a ground truth names (actions, gates and their approvals): the agent could call them."""
    actions = [a for b in ground_truth.get("procedure") or [] if isinstance(b, dict) for a in b.get("actions") or []]
    actions += list(ground_truth.get("optional_actions") or []) + list(ground_truth.get("forbidden_actions") or [])
    for gate in ground_truth.get("gated_actions") or []:
        actions += [gate, gate.get("approval")] if isinstance(gate, dict) else []
    return {a["tool"] for a in actions if isinstance(a, dict) and isinstance(a.get("tool"), str)}


def parse_arguments(raw: Any, what: str) -> dict[str, Any]:
    """Tool-call arguments as a dict. A JSON string must decode to an object; an empty string or null
    means no arguments (some providers send ``""`` for argument-less tools)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise MessageError(f"{what}: arguments must be a JSON string or an object, not {type(raw).__name__}")
    try:
        value = safe_json.loads(raw)
    except JSONProblem as exc:
        snippet = raw if len(raw) <= SNIPPET else raw[:SNIPPET] + "..."
        raise MessageError(f"{what}: arguments are not valid JSON ({exc.reason}): {snippet!r}") from None
    if not isinstance(value, dict):
        raise MessageError(f"{what}: arguments must decode to a JSON object, got {type(value).__name__}")
    return value


def call_arguments(raw: Any, what: str) -> tuple[dict[str, Any], bool]:
    """A model's tool-call arguments and whether the call is malformed. JSON text that does not
    decode to an object is the model's malformed call, which no runtime runs as given (OpenAI's
    and Anthropic's SDKs, inspect_ai and langchain refuse it): kept whole as ``{"arguments": text}``
    and recorded as an errored call, so the run is scored with the call it made."""
    if isinstance(raw, str) and raw.strip():
        try:
            value = safe_json.loads(raw)
        except JSONProblem:
            return {"arguments": raw}, True
        return (value, False) if isinstance(value, dict) else ({"arguments": raw}, True)
    return parse_arguments(raw, what), False


Call = tuple[str | None, str, dict[str, Any], bool]


def _calls_of(message: dict[str, Any], mi: int, malformed_calls: bool) -> list[Call]:
    read = call_arguments if malformed_calls else lambda raw, what: (parse_arguments(raw, what), False)
    calls: list[Call] = []
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MessageError(f"message {mi}: tool_calls must be a list")
    for ci, call in enumerate(raw_calls):
        what = f"message {mi}, tool call {ci}"
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise MessageError(f"{what}: needs function.name")
        what += f" ({fn['name']})"
        call_id = call.get("id")
        calls.append((None if call_id is None else str(call_id), fn["name"], *read(fn.get("arguments"), what)))
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        what = f"message {mi}, function_call ({legacy['name']})"
        calls.append((None, legacy["name"], *read(legacy.get("arguments"), what)))
    return calls


def convert_messages(
    messages: Any,
    is_error: Callable[[dict[str, Any], Any], bool],
    missing_result_is_error: bool,
    malformed_calls: bool = False,
) -> Transcript:
    """Convert a message list. ``is_error(tool_message, result)`` decides whether a tool result is an
    error; a call that no tool message answers is an error (never executed) when
    ``missing_result_is_error``, otherwise a success with a null result. ``malformed_calls``: arguments
    that are not JSON of an object are the model's malformed call (:func:`call_arguments`), for
    transcripts of what a model wrote; otherwise an error (harnesses that record arguments they
    parsed, as tau-bench and tau2-bench do)."""
    if not isinstance(messages, list):
        raise MessageError("messages must be a list")
    out = Transcript()
    pending: list[dict[str, Any]] = []  # unanswered tool_call records, oldest first
    ids: dict[str, dict[str, Any]] = {}
    refused: set[int] = set()  # ids of the calls with malformed arguments: errored whatever the answer
    for mi, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise MessageError(f"message {mi} is not an object")
        role = msg.get("role")
        text = text_of(msg.get("content"))
        if role in ("system", "developer"):
            out.system.append(text or "")
            continue
        if role == "user":
            out.events.append({"type": "nudge", "step": out.steps, "text": text})
        elif role == "assistant":
            out.steps += 1
            calls = _calls_of(msg, mi, malformed_calls)
            stop = msg.get("finish_reason") or msg.get("stop_reason") or ("tool_use" if calls else "end_turn")
            out.events.append(
                {"type": "assistant", "step": out.steps, "text": text, "stop_reason": stop, "provider_raw": msg}
            )
            for ci, (call_id, name, args, malformed) in enumerate(calls):
                record = {
                    "type": "tool_call",
                    "step": out.steps,
                    "call_index": ci,
                    "name": name,
                    "args": args,
                    "result": None,
                    "is_error": missing_result_is_error or malformed,
                    "sim_time_before": out.steps - 1,
                    "sim_time_after": out.steps,
                    "wall_ms": None,
                }
                out.events.append(record)
                out.tool_calls += 1
                pending.append(record)
                if malformed:
                    refused.add(id(record))
                if call_id is not None:
                    ids[call_id] = record
        elif role in ("tool", "function"):
            record = _answered(msg, pending, ids)
            if record is None:
                raise MessageError(f"message {mi}: tool result answers no pending tool call")
            pending.remove(record)
            result = msg.get("content")
            record["result"] = result
            record["is_error"] = id(record) in refused or bool(is_error(msg, result))
        else:
            raise MessageError(f"message {mi}: unknown role {role!r}")
        out.last_role = role
        out.last_text = text
    return out


def _answered(
    msg: dict[str, Any], pending: list[dict[str, Any]], ids: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    call_id = msg.get("tool_call_id")
    if call_id is not None:
        record = ids.pop(str(call_id), None)
        if record is not None and record in pending:
            return record
    name = msg.get("name")
    for record in pending:
        if record["name"] == name:
            return record
    return pending[0] if pending and call_id is None else None


# -- the records around the events: one shape for every importer of chat transcripts -------------


def task_id_of(value: Any, error: Callable[[str], Exception]) -> str:
    """A tau-bench task id (a non-empty string or an integer) as text; else raises ``error(reason)``
    (the importer's error, naming file, line and record)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise error("task_id must be a non-empty string or an integer")
    return str(value)


def trial_of(value: Any, error: Callable[[str], Exception]) -> int:
    """A tau-bench trial number (an integer); else raises ``error(reason)``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error("trial must be an integer")
    return value


def slug(text: str) -> str:
    """``text`` with every character but letters, digits and ``-_.`` replaced by ``_``."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def provider_of(model: str) -> str | None:
    """The provider prefix of a model name (``openai`` of ``openai/gpt-4o``), None without one."""
    return model.split("/", 1)[0] if "/" in model else None


def instructions_profile(name: str, transcript: Transcript) -> str:
    """``name``, and when the transcript has system text, ``/system-sha256:`` and its first 16 hex digits."""
    system = "\n".join(transcript.system)
    if system:
        name += "/system-sha256:" + hashlib.sha256(system.encode("utf-8")).hexdigest()[:16]
    return name


def meta_record(
    *,
    run_id: str,
    ts_utc: str | None,
    scenario: dict[str, Any],
    scenario_path: str,
    adapter: dict[str, Any],
    instructions_profile: str | None,
    tool_surface: list[str],
    importer: str,
    seed: int | None = None,
) -> dict[str, Any]:
    """A run's meta record (``importer``: the importer's format version)."""
    return {
        "type": "meta",
        "run_id": run_id,
        "ts_utc": ts_utc,
        "scenario": scenario,
        "scenario_path": scenario_path,
        "adapter": adapter,
        "instructions_profile": instructions_profile,
        "tool_surface": tool_surface,
        "vendor_pin": None,
        "versions": {"importer": importer},
        "seed": seed,
    }


def setup_record() -> dict[str, Any]:
    """The setup record of a run without a simulator: valid, no failure injected, no snapshot."""
    return {
        "type": "setup",
        "sim_time": 0,
        "validity_gate": {"passed": True},
        "active_failures": [],
        "snapshot": None,
    }


def success_eval(final_state: list[dict[str, Any]], passed: Any) -> dict[str, Any]:
    """A final record's ``success_eval``: the checks, no ECAM condition, and whether all passed."""
    return {"final_state": final_state, "ecam_clear_of": [], "all_passed": passed}


def final_record(
    reason: str, done_payload: Any, transcript: Transcript, success: dict[str, Any] | None
) -> dict[str, Any]:
    """A run's final record: ``sim_time`` counts agent turns, no ECAM, no snapshot."""
    return {
        "type": "final",
        "reason": reason,
        "done_payload": done_payload,
        "sim_time": transcript.steps,
        "tool_calls_used": transcript.tool_calls,
        "ecam": [],
        "active_failures": [],
        "snapshot": None,
        "success_eval": success,
    }
