"""The judge_bundle: everything a judge needs to grade a run without re-simulating it.

It carries the scenario (task prompt, ground-truth procedure with rationales, optional and forbidden
actions, success criteria, budget), the transcript (assistant text, nudges, tool calls with args,
is_error and results, errors) and the final record (reason, done_payload, success_eval). It carries
**no** mechanical score and not the agent's model name, so a judge grades blind and agreement means
something. A tool result is kept whole when its record's line in the file is at most
``RESULT_MAX_CHARS`` characters (so short results are never re-serialised); otherwise its canonical
JSON is cut at ``RESULT_MAX_CHARS`` characters, with a marker saying how much was cut. Snapshots
are left out (they are simulator state, not behaviour).
Canonical JSON here means: compact (no whitespace), UTF-8, evalkit's own keys in a fixed order and
recorded values (args, results, payloads) in the order they were recorded, serialised by
pydantic-core (five times faster than ``json.dumps(sort_keys=True)``, which matters on the score
path). The same file always gives the same bytes; ``bundle_hash`` is their sha256, and storage keeps
exactly those bytes, so ``sha256(bundles.bundle) == bundle_hash``.

The bundle is built as JSON text, never as one Python object: :class:`BundleBuilder` serialises the
transcript a few hundred entries at a time as the reader validates them, so a long run's transcript
is held once, as its text (a 200,000-call run); the ScoreCard keeps that text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import from_json, to_json

from evalkit.trajectory.records import Assistant, Final, HarnessError, Meta, Nudge, ProviderError, ToolCall, Trajectory
from evalkit.trajectory.values import canonical_json, compact_json, sha256_hex

BUNDLE_VERSION = 1
RESULT_MAX_CHARS = 2000
_FLUSH_ENTRIES = 256  # transcript entries serialised together: one pydantic-core call, little memory


@dataclass(frozen=True, slots=True)
class Bundle:
    """A built bundle: its canonical JSON, the sha256 of that JSON, and the scenario title (stored
    beside it in the database without parsing the bundle again). ``obj()`` is the bundle as an
    object, parsed on first use and kept (read it, do not change it: the JSON is what counts)."""

    json: str
    hash: str
    title: str | None
    _obj: Any = field(default=None, compare=False, repr=False)

    def obj(self) -> dict[str, Any]:
        if self._obj is None:
            object.__setattr__(self, "_obj", from_json(self.json))
        return self._obj


def truncate(value: Any, limit: int = RESULT_MAX_CHARS) -> Any:
    """Keep a value whose JSON fits in ``limit`` characters; otherwise a cut string with a marker."""
    text = value if isinstance(value, str) else canonical_json(value)
    if len(text) <= limit:
        return value
    return f"{text[:limit]}...[truncated {len(text) - limit} chars]"


def _other_event(event: Any) -> dict[str, Any]:
    """The entry of an event that is neither a tool call nor an assistant record."""
    if isinstance(event, Nudge):
        return {"kind": "nudge", "step": event.step, "text": event.text}
    if isinstance(event, ProviderError):
        return {"kind": "provider_error", "step": event.step, "error": truncate(event.error)}
    if isinstance(event, HarnessError):
        return {"kind": "harness_error", "error": truncate(event.error)}
    raise TypeError(f"unexpected event {type(event).__name__}")


def _json(value: Any) -> bytes:
    return to_json(value, inf_nan_mode="null")


class BundleBuilder:
    """One run's bundle, written as its events arrive: ``add`` each event in order, then ``finish``.

    The bytes are those of ``compact_json`` of the whole bundle object: the head (version, the
    scenario's part, tool surface) is written first, the transcript entries are serialised in
    groups and appended without their brackets, the final record closes it."""

    def __init__(self, meta: Meta):
        scenario = meta.scenario
        self._title = scenario.title
        # the bytes of {"bundle_version": 1, **bundle_part, "tool_surface": ...}; the scenario's
        # part serialised once per scenario object (runs of one scenario share it)
        self._buf = bytearray(b'{"bundle_version":%d,' % BUNDLE_VERSION)
        self._buf += memoryview(scenario.bundle_part_json)[1:-1]
        self._buf += b',"tool_surface":'
        self._buf += _json(meta.tool_surface)
        self._buf += b',"transcript":['
        self._empty = True
        self._pending: list[dict[str, Any]] = []

    def add(self, event: Any, long_line: bool = False) -> None:
        if isinstance(event, ToolCall):
            self.add_call(event, long_line)
        elif isinstance(event, Assistant):
            self.add_assistant(event)
        else:
            self._pending.append(_other_event(event))
            if len(self._pending) >= _FLUSH_ENTRIES:
                self._flush()

    def add_call(self, event: ToolCall, long_line: bool) -> None:
        """``add`` for a tool call."""
        self.add_call_values(
            event.step, event.call_index, event.name, event.args, event.is_error, event.result, long_line
        )

    def add_call_values(
        self,
        step: int | None,
        call_index: int | None,
        name: str,
        args: dict[str, Any],
        is_error: bool,
        result: Any,
        long_line: bool,
    ) -> None:
        """``add_call`` given a tool call's validated fields (the reader's fast loop)."""
        self._pending.append(
            {
                "kind": "tool_call",
                "step": step,
                "call_index": call_index,
                "tool": name,
                "args": args,
                "is_error": is_error,
                "result": truncate(result) if long_line else result,
            }
        )
        if len(self._pending) >= _FLUSH_ENTRIES:
            self._flush()

    def add_assistant(self, event: Assistant) -> None:
        """``add`` for an assistant record."""
        self.add_assistant_values(event.step, event.text, event.stop_reason)

    def add_assistant_values(self, step: int | None, text: str | None, stop_reason: str | None) -> None:
        """``add_assistant`` given an assistant record's validated fields (the reader's fast loop)."""
        self._pending.append({"kind": "assistant", "step": step, "text": text, "stop_reason": stop_reason})
        if len(self._pending) >= _FLUSH_ENTRIES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        if not self._empty:
            self._buf += b","
        self._buf += memoryview(_json(self._pending))[1:-1]
        self._pending = []
        self._empty = False

    def finish(self, final: Final | None) -> Bundle:
        self._flush()
        buf, self._buf = self._buf, bytearray()
        buf += b'],"final":'
        buf += _json(
            None
            if final is None
            else {
                "reason": final.reason,
                "done_payload": final.done_payload,
                "success_eval": final.success_eval.model_dump(mode="json") if final.success_eval else None,
            }
        )
        buf += b"}"
        digest = hashlib.sha256(buf).hexdigest()
        return Bundle(buf.decode("utf-8"), digest, self._title)


def bundle_of(traj: Trajectory) -> Bundle:
    """The bundle of a trajectory: the one the reader built while reading, or built from its events."""
    if traj.bundle is not None:
        return traj.bundle
    builder = BundleBuilder(traj.meta)
    for i, event in enumerate(traj.events):
        builder.add(event, i in traj.long_lines)
    return builder.finish(traj.final)


def build_bundle(traj: Trajectory) -> dict[str, Any]:
    """The bundle of a trajectory as an object (non-finite numbers already ``None``)."""
    return bundle_of(traj).obj()


def bundle_json(bundle: dict[str, Any]) -> str:
    """The canonical JSON of a bundle given as an object (what ``Bundle.json`` holds)."""
    return compact_json(bundle)


def bundle_hash(bundle: dict[str, Any]) -> str:
    return sha256_hex(bundle_json(bundle))
