"""The judge_bundle: everything a judge needs to grade a run without re-simulating it.

It carries the scenario (task prompt, ground-truth procedure with rationales, optional and forbidden
actions, success criteria, budget), the transcript (assistant text, nudges, tool calls with args,
is_error and results, errors) and the final record (reason, done_payload, success_eval). It carries
**no** mechanical score and not the agent's model name, so a judge grades blind and agreement means
something. A tool result is kept whole when its record's line in the file is at most
``RESULT_MAX_CHARS`` characters (so short results are never re-serialised); otherwise its canonical
JSON is cut at ``RESULT_MAX_CHARS`` characters, with a marker saying how much was cut. Snapshots are left out (they are simulator state, not behaviour).
Canonical JSON here means: compact (no whitespace), UTF-8, evalkit's own keys in a fixed order and
recorded values (args, results, payloads) in the order they were recorded, serialised by
pydantic-core (five times faster than ``json.dumps(sort_keys=True)``, which matters on the score
path). The same file always gives the same bytes; ``bundle_hash`` is their sha256, and storage keeps
exactly those bytes, so ``sha256(bundles.bundle) == bundle_hash``.
"""
from __future__ import annotations

from typing import Any

from evalkit.records import Assistant, HarnessError, Nudge, ProviderError, ToolCall, Trajectory
from evalkit.values import canonical_json, compact_json, sha256_hex

BUNDLE_VERSION = 1
RESULT_MAX_CHARS = 2000


def truncate(value: Any, limit: int = RESULT_MAX_CHARS) -> Any:
    """Keep a value whose JSON fits in ``limit`` characters; otherwise a cut string with a marker."""
    text = value if isinstance(value, str) else canonical_json(value)
    if len(text) <= limit:
        return value
    return f"{text[:limit]}...[truncated {len(text) - limit} chars]"


def _event(event: Any, long_line: bool) -> dict[str, Any]:
    if isinstance(event, ToolCall):
        return {
            "kind": "tool_call",
            "step": event.step,
            "call_index": event.call_index,
            "tool": event.name,
            "args": event.args,
            "is_error": event.is_error,
            "result": truncate(event.result) if long_line else event.result,
        }
    if isinstance(event, Assistant):
        return {"kind": "assistant", "step": event.step, "text": event.text, "stop_reason": event.stop_reason}
    if isinstance(event, Nudge):
        return {"kind": "nudge", "step": event.step, "text": event.text}
    if isinstance(event, ProviderError):
        return {"kind": "provider_error", "step": event.step, "error": truncate(event.error)}
    if isinstance(event, HarnessError):
        return {"kind": "harness_error", "error": truncate(event.error)}
    raise TypeError(f"unexpected event {type(event).__name__}")


def build_bundle(traj: Trajectory) -> dict[str, Any]:
    final = traj.final
    return {
        "bundle_version": BUNDLE_VERSION,
        **traj.meta.scenario.bundle_part,
        "tool_surface": traj.meta.tool_surface,
        "transcript": [_event(e, i in traj.long_lines) for i, e in enumerate(traj.events)],
        "final": None
        if final is None
        else {
            "reason": final.reason,
            "done_payload": final.done_payload,
            "success_eval": final.success_eval.model_dump(mode="json") if final.success_eval else None,
        },
    }


def bundle_json(bundle: dict[str, Any]) -> str:
    return compact_json(bundle)


def bundle_hash(bundle: dict[str, Any]) -> str:
    return sha256_hex(bundle_json(bundle))
