"""Generic OpenAI-messages transcripts (JSONL) → evalkit trajectories.

One line per run: ``{id, messages, expected_actions: [{tool, args}], ordered?, success?, model?}``.
Optional extras: ``scenario_id`` (several runs of one task; default: ``id``), ``trial``, ``title``,
``task_prompt`` (default: the first user message), ``tools`` (what the agent could call: names or
OpenAI tool specs; default: every tool called or expected), ``command_tools`` (default: every tool
called or expected — the issue's "tool calls become commands"), ``ts_utc``.

* The expected actions are one block of required ``{tool, args}`` actions, ordered when
  ``ordered`` is true. Lines sharing a ``scenario_id`` must agree on them.
* ``success`` becomes the single end-state check ``success == true`` and ``all_passed``. Without
  ``success`` nothing says whether the run reached its goal, so the run has no end state
  (``success_eval: null``): it is reported as ``incomplete`` — its coverage and order are still in
  its ScoreCard, but it is not averaged as if it had failed or passed.
* The model is the line's ``model``, else ``--model``; one of them is required.
* A tool result is an error when its message says ``"is_error": true``; a call without a result
  counts as executed (plain chat logs often drop tool results).
* run_id = ``<id>:<model>`` (plus ``:trial<n>`` with a ``trial``).
"""
from __future__ import annotations

import os
from typing import Any

from evalkit.trajectory import safe_json
from evalkit.importers import ImportFormatError
from evalkit.importers.jsonlist import read_text
from evalkit.importers import anthropic_messages
from evalkit.importers.messages import MessageError
from evalkit.importers.options import ImportOption

FORMAT_VERSION = "openai-messages/1"


class OpenAIMessagesImporter:
    name = "openai-messages"
    summary = "JSONL of {id, messages, expected_actions, ordered?, success?, model?}"
    cli_options = (
        ImportOption("model", "model name for the runs where the input does not record it"),
        ImportOption("dialect", "the transcripts' message format (default auto: sniffed per line)", "choice",
                     choices=("openai", "anthropic", "auto")),
    )

    def convert(self, path: str, model: str | None = None, dialect: str = "auto") -> list[list[dict[str, Any]]]:
        if dialect not in anthropic_messages.DIALECTS:
            raise ImportFormatError(path, None, f"unknown dialect {dialect!r} (one of openai, anthropic, auto)")
        text = read_text(path)
        runs: list[list[dict[str, Any]]] = []
        seen: dict[str, int] = {}
        truths: dict[str, tuple[int, Any]] = {}
        for lineno, item in safe_json.json_lines(
                text, lambda n, reason: ImportFormatError(path, n, f"not valid JSON: {reason}")):
            run = _Line(path, lineno, item).to_run(os.path.basename(path), model, dialect)
            run_id = run[0]["run_id"]
            if run_id in seen:
                raise ImportFormatError(path, lineno, f"run_id {run_id!r} already produced by line {seen[run_id]}")
            seen[run_id] = lineno
            scenario = run[0]["scenario"]
            first = truths.setdefault(scenario["id"], (lineno, scenario["ground_truth"]))
            if first[1] != scenario["ground_truth"]:
                raise ImportFormatError(
                    path, lineno, f"scenario {scenario['id']!r}: expected_actions/ordered differ from line {first[0]}"
                )
            runs.append(run)
        if not runs:
            raise ImportFormatError(path, None, "no transcripts in file")
        return runs


IMPORTER = OpenAIMessagesImporter()


def _tool_error(message: dict[str, Any], result: Any) -> bool:
    return message.get("is_error") is True


def _names(value: Any, what: str, fail: Any) -> list[str]:
    if not isinstance(value, list):
        raise fail(f"{what} must be a list")
    names = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            item = (item.get("function") or {}).get("name") if "function" in item else item.get("name")
        if not isinstance(item, str) or not item:
            raise fail(f"{what}[{i}] must be a tool name or a tool spec with a name")
        names.append(item)
    return names


class _Line:
    def __init__(self, path: str, lineno: int, item: Any):
        self.path, self.lineno, self.item = path, lineno, item

    def fail(self, message: str) -> ImportFormatError:
        rid = self.item.get("id") if isinstance(self.item, dict) else None
        prefix = f"transcript {rid}: " if isinstance(rid, (str, int)) and not isinstance(rid, bool) else ""
        return ImportFormatError(self.path, self.lineno, prefix + message)

    def _expected(self) -> list[dict[str, Any]]:
        raw = self.item.get("expected_actions", [])
        if not isinstance(raw, list):
            raise self.fail("expected_actions must be a list of {tool, args}")
        actions = []
        for i, action in enumerate(raw):
            if not isinstance(action, dict) or not isinstance(action.get("tool"), str) or not action["tool"]:
                raise self.fail(f"expected_actions[{i}] needs a tool name")
            args = action.get("args", {})
            if not isinstance(args, dict):
                raise self.fail(f"expected_actions[{i}].args must be an object")
            actions.append({"tool": action["tool"], "args": args})
        return actions

    def to_run(self, source: str, default_model: str | None, dialect: str = "auto") -> list[dict[str, Any]]:
        item = self.item
        if not isinstance(item, dict):
            raise self.fail("a line must be an object {id, messages, expected_actions, ...}")
        rid = item.get("id")
        if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
            raise self.fail("id must be a non-empty string or an integer")
        model = item.get("model") if item.get("model") is not None else default_model
        if not isinstance(model, str) or not model:
            raise self.fail("no model: give the line a model or pass --model NAME")
        for key, kind in (("ordered", bool), ("success", bool), ("trial", int), ("scenario_id", str)):
            value = item.get(key)
            if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                raise self.fail(f"{key} must be {'a boolean' if kind is bool else 'an integer' if kind is int else 'a string'}")
        expected = self._expected()
        try:
            transcript = anthropic_messages.convert(item.get("messages"), _tool_error, False, dialect)
        except MessageError as exc:
            raise self.fail(str(exc)) from None
        called = {e["name"] for e in transcript.events if e["type"] == "tool_call"}
        default_tools = sorted(called | {a["tool"] for a in expected})
        surface = _names(item["tools"], "tools", self.fail) if item.get("tools") is not None else default_tools
        commands = (
            _names(item["command_tools"], "command_tools", self.fail) if item.get("command_tools") is not None else default_tools
        )
        success = item.get("success")
        scenario_id = item.get("scenario_id") or str(rid)
        prompt = item.get("task_prompt")
        if not isinstance(prompt, str):
            prompt = next((e["text"] for e in transcript.events if e["type"] == "nudge" and e["text"]), None)
        scenario = {
            "id": scenario_id,
            "title": item.get("title") if isinstance(item.get("title"), str) else scenario_id,
            "task_prompt": prompt,
            "ground_truth": {
                "source": "expected_actions",
                "procedure": (
                    [{"block": "expected_actions", "ordered": bool(item.get("ordered", False)), "actions": expected}]
                    if expected
                    else []
                ),
                "optional_actions": [],
                "forbidden_actions": [],
            },
            "success": {"final_state": [{"var": "success", "op": "==", "value": True}], "ecam_clear_of": []},
            "budget": {"max_tool_calls": None, "max_sim_time_s": None},
            "command_tools": sorted(set(commands)),
        }
        run_id = f"{rid}:{model}" + (f":trial{item['trial']}" if item.get("trial") is not None else "")
        ts = item.get("ts_utc")
        meta = {
            "type": "meta",
            "run_id": run_id,
            "ts_utc": ts if isinstance(ts, str) else None,
            "scenario": scenario,
            "scenario_path": f"{source}:{self.lineno}",
            "adapter": {"provider": model.split("/", 1)[0] if "/" in model else None, "model": model},
            "instructions_profile": None,
            "tool_surface": sorted(set(surface)),
            "vendor_pin": None,
            "versions": {"importer": FORMAT_VERSION},
            "seed": None,
        }
        setup = {"type": "setup", "sim_time": 0, "validity_gate": {"passed": True}, "active_failures": [], "snapshot": None}
        finished = transcript.last_role == "assistant" and not (
            transcript.events and transcript.events[-1]["type"] == "tool_call"
        )
        final = {
            "type": "final",
            "reason": "agent_done" if finished else "end_turn_without_done",
            "done_payload": None,
            "sim_time": transcript.steps,
            "tool_calls_used": transcript.tool_calls,
            "ecam": [],
            "active_failures": [],
            "snapshot": None,
            "success_eval": (
                None
                if success is None
                else {
                    "final_state": [{"var": "success", "op": "==", "value": True, "passed": success}],
                    "ecam_clear_of": [],
                    "all_passed": success,
                }
            ),
        }
        return [meta, setup, *transcript.events, final]
