"""OpenHands event streams and evaluation outputs → evalkit runs.

Input: a JSON list of events (a conversation's trajectory), an object holding one under ``history``
or ``trajectory``, or an evaluation ``output.jsonl`` (one ``{instance_id, history, test_result,
metadata, error}`` per line; a run per line). See docs/importers.md; in short:

* An action of the agent (``run``, ``edit``, ``read``, ``write``, ``run_ipython``, ``browse``,
  ``think``, ``finish``, ...) is a call, in order: the function the model called
  (``tool_call_metadata.function_name``) with its arguments as the model sent them, else the action
  type with its ``args`` (without ``thought``). Actions of one model response are one turn.
* The observation whose ``cause`` is the action's id is its result: an ``error`` observation, or a
  command's exit code other than 0 (``extras.metadata.exit_code``), is an error. A ``user_rejected``
  observation means the call was refused and never ran: the reply is recorded as rejected, not as a
  call; so is an ``error`` observation answering no action (a reply OpenHands could not turn into an
  action).
* ``message`` actions: the user's are ``nudge`` records, the agent's its turns; ``system`` actions
  are instructions; ``recall``, state changes and ``null`` events are bookkeeping.
* The final reason: the last ``agent_state_changed`` state (``finished`` → ``agent_done``,
  ``error`` → ``harness_error``, ``awaiting_user_input`` → ``end_turn_without_done``, others
  ``agent_<state>``); an evaluation output's ``error`` → ``harness_error``. The end state:
  ``test_result.report.resolved`` (SWE-bench's verdict) as the check ``openhands.resolved == true``;
  without it the run has no end state.
* The model: the first model response's ``model``, else ``metadata.llm_config.model``, else
  ``--model``; the task: ``instance_id``, else the file's name.
"""

from __future__ import annotations

import os
from typing import Any

from evalkit.importers import ImportFormatError, RunList
from evalkit.importers.formats import agent_log
from evalkit.importers.formats.agent_log import REJECTED, Log
from evalkit.importers.jsonlist import iter_json_lines, read_text

FORMAT_VERSION = "openhands/1"
BOOKKEEPING = frozenset({"recall", "change_agent_state", "null", "condensation", "condensation_request"})
STATES = {"finished": "agent_done", "error": "harness_error", "awaiting_user_input": "end_turn_without_done"}


class OpenHandsImporter:
    name = "openhands"
    summary = "OpenHands event streams (a JSON list of events) and evaluation output.jsonl"
    cli_options = agent_log.OPTIONS

    def convert(
        self, path: str, model: str | None = None, scenarios: str | None = None, scenario: str | None = None
    ) -> list[list[dict[str, Any]]]:
        text = read_text(path)
        chosen = agent_log.Scenarios(path, scenarios, scenario)
        stem = os.path.basename(path).rsplit(".", 1)[0]
        try:
            doc = agent_log.load_json(path, text)
            items: list[tuple[int | None, Any]] = [(None, doc)]
        except ImportFormatError:
            items = list(iter_json_lines(path, text, "an OpenHands evaluation output {instance_id, history, ...}"))
        runs = RunList()
        seen: dict[str, str] = {}
        for line, item in items:
            events, record = _events_of(item)
            if events is None:
                raise ImportFormatError(
                    path, line or 1, "not an OpenHands trajectory: a list of events, or an object with history"
                )
            run = _Run(path, line, events, record).to_run(stem, model, chosen)
            run_id = run[0]["run_id"]
            if run_id in seen:
                raise ImportFormatError(path, line, f"run_id {run_id!r} already produced by {seen[run_id]}")
            seen[run_id] = f"line {line}" if line else "this file"
            runs.append(run)
        return runs


IMPORTER = OpenHandsImporter()


def is_event(item: Any) -> bool:
    return isinstance(item, dict) and ("action" in item or "observation" in item) and "source" in item


def _events_of(item: Any) -> tuple[list[Any] | None, dict[str, Any]]:
    """The events of one run and the record around them (an evaluation output's line)."""
    if isinstance(item, list) and item and all(is_event(e) for e in item[:3]):
        return item, {}
    if isinstance(item, dict):
        for key in ("history", "trajectory"):
            events = item.get(key)
            if isinstance(events, list) and (not events or is_event(events[0])):
                return events, item
    return None, {}


def is_openhands(doc: Any) -> bool:
    return _events_of(doc)[0] is not None


class _Run:
    def __init__(self, path: str, line: int | None, events: list[Any], record: dict[str, Any]):
        self.path, self.line, self.record = path, line, record
        self.log = Log()
        self.model: str | None = None
        self.state: str | None = None
        self.finished = False
        self.actions: dict[str, dict[str, Any]] = {}  # event id -> its tool_call record
        self.response: Any = None  # the id of the model response of the current turn
        for ei, event in enumerate(events):
            if not isinstance(event, dict):
                raise self.fail(f"event {ei} is not an object")
            if "action" in event:
                self._action(ei, event)
            elif "observation" in event:
                self._observation(ei, event)

    def fail(self, message: str) -> ImportFormatError:
        return ImportFormatError(self.path, self.line, message)

    def _action(self, ei: int, event: dict[str, Any]) -> None:
        kind, source = event.get("action"), event.get("source")
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if not isinstance(kind, str) or kind in BOOKKEEPING:
            return
        text = args.get("content") if isinstance(args.get("content"), str) else event.get("message")
        if kind == "system":
            self.log.system(text)
            return
        if kind == "message" and source != "agent":
            self.log.user(text)
            self.response = None
            return
        meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
        if self.model is None and isinstance(response.get("model"), str):
            self.model = response["model"]
        said = _response_text(response)
        thought = args.get("thought") if isinstance(args.get("thought"), str) else None
        if kind == "message":
            self.log.turn(text, stop_reason="end_turn")
            self.response = None
            return
        rid = response.get("id")
        if rid is None or rid != self.response:  # a new model response: a new turn
            self.log.turn(said or thought or event.get("message") or None, stop_reason="tool_use")
        self.response = rid
        name = meta.get("function_name") if isinstance(meta.get("function_name"), str) else kind
        call_args = _called_args(response, meta.get("tool_call_id"))
        if call_args is None:
            call_args = {k: v for k, v in args.items() if k != "thought"}
        record = self.log.call(name, call_args)
        if event.get("id") is not None:
            self.actions[str(event["id"])] = record
        if kind == "finish":
            self.finished = True
            final = args.get("final_thought") or args.get("message") or thought or event.get("message")
            if isinstance(final, str) and final:
                self.log.final_message = final

    def _observation(self, ei: int, event: dict[str, Any]) -> None:
        kind = event.get("observation")
        extras = event.get("extras") if isinstance(event.get("extras"), dict) else {}
        if kind == "agent_state_changed":
            if isinstance(extras.get("agent_state"), str):
                self.state = extras["agent_state"]
            return
        content = event.get("content") if isinstance(event.get("content"), str) else event.get("message")
        cause = event.get("cause")
        record = self.actions.get(str(cause)) if cause is not None else None
        if record is None:
            if kind == "error":  # answers no action: OpenHands could not act on the reply
                self.log.reject(None, content)
            return
        if kind == "user_rejected":
            self._refuse(record, content)
            return
        metadata = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
        code = metadata.get("exit_code", extras.get("exit_code"))
        record["result"] = content
        record["is_error"] = kind == "error" or (isinstance(code, int) and not isinstance(code, bool) and code != 0)

    def _refuse(self, record: dict[str, Any], content: Any) -> None:
        """A call the user (or a confirmation policy) refused: it never ran, so it is no call."""
        events = self.log.events
        events.remove(record)
        self.log.transcript.tool_calls -= 1
        self.log.rejected += 1
        turn = next(e for e in reversed(events) if e["type"] == "assistant" and e["step"] == record["step"])
        if not any(e["type"] == "tool_call" and e["step"] == record["step"] for e in events):
            turn["stop_reason"] = REJECTED
        events.insert(events.index(turn) + 1, {"type": "nudge", "step": record["step"], "text": content})

    def to_run(self, stem: str, given_model: str | None, chosen: agent_log.Scenarios) -> list[dict[str, Any]]:
        record = self.record
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        llm = metadata.get("llm_config") if isinstance(metadata.get("llm_config"), dict) else {}
        model = agent_log.model_of(self.path, self.model or llm.get("model"), given_model, "the model responses")
        instance = record.get("instance_id")
        task = str(instance) if isinstance(instance, (str, int)) and not isinstance(instance, bool) else stem
        report = record.get("test_result")
        report = report.get("report") if isinstance(report, dict) else None
        resolved = report.get("resolved") if isinstance(report, dict) else None
        checks = None
        if isinstance(resolved, bool):
            checks = [{"var": "openhands.resolved", "op": "==", "value": True, "passed": resolved}]
        if record.get("error"):
            reason = "harness_error"
        elif self.state is not None:
            reason = STATES.get(self.state, f"agent_{self.state}")
        else:
            reason = "agent_done" if self.finished else "end_turn_without_done"
        prompt = next((e["text"] for e in self.log.events if e["type"] == "nudge" and e["text"]), None)
        if not prompt and isinstance(record.get("instruction"), str):
            prompt = record["instruction"]
        payload = {
            "openhands": {
                "instance_id": instance,
                "agent_state": self.state,
                "error": record.get("error"),
                "resolved": resolved,
            }
        }
        return agent_log.build(
            log=self.log,
            run_id=f"openhands:{task}:{model}",
            source=os.path.basename(self.path) + (f"#line{self.line}" if self.line else ""),
            model=model,
            harness="openhands",
            importer=FORMAT_VERSION,
            scenario=chosen.for_run(f"openhands/{task}", f"OpenHands {task}", prompt, checks),
            tool_surface=set(),
            reason=reason,
            payload=payload,
            checks=checks,
        )


def _response_text(response: dict[str, Any]) -> str | None:
    choices = response.get("choices")
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    content = message.get("content") if isinstance(message, dict) else None
    return agent_log.text_of(content) if content else None


def _called_args(response: dict[str, Any], call_id: Any) -> dict[str, Any] | None:
    """The arguments the model sent with the call ``call_id`` (None when the response lacks it)."""
    choices = response.get("choices")
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict) and call.get("id") == call_id and isinstance(call.get("function"), dict):
            return agent_log.arguments(call["function"].get("arguments"), "arguments")
    return None
