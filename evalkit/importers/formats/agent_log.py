"""What the ATIF and coding-agent importers (atif, swe-agent, mini-swe-agent, openhands) share.

* :class:`Log` collects one run's events in the order the agent produced them: the agent's turns
  (``assistant``), its tool calls with their results and error status (``tool_call``), the text the
  agent was given (``nudge``), and replies its runtime rejected (an ``assistant`` record with
  ``stop_reason`` ``rejected``, no call, and the runtime's answer as a ``nudge``).
* :func:`arguments`: a call's arguments as a JSON object — an object as recorded, JSON text of an
  object parsed, anything else kept whole under a named key (``{"command": "ls -la"}``).
* :class:`Scenarios`: the scenario a run is scored against. With ``--scenarios FILE`` the file's
  scenario whose id is the run's task id (``--scenario ID``: that one for every run), embedded
  whole; without it a scenario with no ground truth, every call a read (the run is scored on its
  end state alone), and the end-state checks the importer read.
* As in every importer of transcripts, ``sim_time`` counts agent turns; ``wall_ms`` is null.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

from evalkit.importers import ImportFormatError
from evalkit.importers.formats import messages as chat
from evalkit.importers.formats.messages import Transcript
from evalkit.importers.options import ImportOption
from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

REJECTED = "rejected"  # the stop_reason of a reply the agent's runtime refused
SUCCESS_TOLERANCE = 1e-6

OPTIONS = (
    ImportOption("model", "model name for the runs where the input does not record it"),
    ImportOption(
        "scenarios",
        "scenario file (JSON, JSONL or TOML; docs/scenarios.md): a run gets the scenario whose id is its task id",
        "file",
        metavar="FILE",
    ),
    ImportOption("scenario", "with --scenarios: the id of the scenario every run gets", metavar="ID"),
)


class Log:
    """One run's events, built in order."""

    def __init__(self) -> None:
        self.transcript = Transcript()
        self.rejected = 0
        self.final_message: str | None = None
        self._index = 0  # call_index within the current turn

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.transcript.events

    def system(self, text: str | None) -> None:
        self.transcript.system.append(text or "")

    def user(self, text: str | None) -> None:
        self.events.append({"type": "nudge", "step": self.transcript.steps, "text": text})

    def turn(self, text: str | None, raw: Any = None, stop_reason: str | None = None) -> None:
        """An agent turn: its text (the final message so far) and, as recorded, its raw form."""
        self.transcript.steps += 1
        self._index = 0
        self.events.append(
            {
                "type": "assistant",
                "step": self.transcript.steps,
                "text": text,
                "stop_reason": stop_reason,
                "provider_raw": raw,
            }
        )
        if text:
            self.final_message = text

    def call(self, name: str, args: dict[str, Any], result: Any = None, is_error: bool = False) -> dict[str, Any]:
        """A tool call of the current turn (a turn is opened when there is none)."""
        if self.transcript.steps == 0:
            self.turn(None)
        step = self.transcript.steps
        record = {
            "type": "tool_call",
            "step": step,
            "call_index": self._index,
            "name": name,
            "args": args,
            "result": result,
            "is_error": is_error,
            "sim_time_before": step - 1,
            "sim_time_after": step,
            "wall_ms": None,
        }
        self._index += 1
        self.transcript.tool_calls += 1
        self.events.append(record)
        return record

    def reject(self, text: str | None, answer: str | None, raw: Any = None) -> None:
        """A reply the runtime refused (a malformed action, a refused call): no call, the refusal as a nudge."""
        self.turn(text, raw, REJECTED)
        self.rejected += 1
        if answer is not None:
            self.user(answer)

    def called(self) -> set[str]:
        return {e["name"] for e in self.events if e["type"] == "tool_call"}


def arguments(raw: Any, key: str) -> dict[str, Any]:
    """A call's arguments as a JSON object: an object as it is, JSON text of an object parsed, null
    or blank text none, anything else kept whole under ``key``."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = safe_json.loads(raw)
        except JSONProblem:
            value = None
        if isinstance(value, dict):
            return value
    return {key: raw}


def python_literal(text: Any) -> Any:
    """A value some recorders write as Python's repr (``"[{'id': 'x'}]"``), read without evaluating
    code; the text itself when it is JSON or no literal."""
    if not isinstance(text, str):
        return text
    try:
        return safe_json.loads(text)
    except JSONProblem:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def text_of(content: Any) -> str | None:
    """Message content as text (a list of content parts joined, a repr of one read first)."""
    if isinstance(content, str) and content.startswith("[{") and "'type'" in content:
        content = python_literal(content)
    return chat.text_of(content)


def number(value: Any) -> float | None:
    """A finite number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def reward_checks(prefix: str, rewards: dict[str, float]) -> list[dict[str, Any]]:
    """One end-state check per reward, passed when it reaches 1 (full credit)."""
    return [
        {"var": f"{prefix}.{name}", "op": ">=", "value": 1, "passed": value >= 1 - SUCCESS_TOLERANCE}
        for name, value in sorted(rewards.items())
    ]


def success(checks: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """``final.success_eval`` of these checks (None: the run has no end state)."""
    if checks is None:
        return None
    return chat.success_eval(checks, all(c["passed"] for c in checks))


class Scenarios:
    """``--scenarios FILE`` (and ``--scenario ID``) read once per input; the scenario of each run."""

    def __init__(self, path: str, scenarios: str | None, scenario: str | None):
        self.path, self.file, self.chosen = path, scenarios, scenario
        self.found = None
        if scenario is not None and scenarios is None:
            raise ImportFormatError(path, None, "--scenario ID names a scenario of --scenarios FILE: give both")
        if scenarios is not None:
            from evalkit.trajectory.scenario_files import load_scenarios

            self.found = load_scenarios([scenarios])
            if scenario is not None and scenario not in self.found:
                raise ImportFormatError(scenarios, None, f'no scenario "{scenario}" in this file (--scenario)')

    def for_run(
        self, task_id: str, title: str, prompt: str | None, checks: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """The scenario of a run of task ``task_id``: the file's, or one without ground truth whose
        success lists ``checks`` (the end state the importer read; none: an empty list)."""
        if self.found is not None:
            wanted = self.chosen or task_id
            if wanted not in self.found:
                raise ImportFormatError(
                    self.path, None, f'no scenario "{wanted}" in {self.file} (--scenarios; --scenario ID picks one)'
                )
            return self.found.by_id[wanted][0]
        return {
            "id": task_id,
            "title": title,
            "task_prompt": prompt,
            "ground_truth": {
                "source": "none recorded",
                "procedure": [],
                "optional_actions": [],
                "forbidden_actions": [],
            },
            "success": {
                "final_state": [{k: v for k, v in c.items() if k != "passed"} for c in checks or []],
                "ecam_clear_of": [],
            },
            "budget": {"max_tool_calls": None, "max_sim_time_s": None},
            "command_tools": [],
        }


def build(
    *,
    log: Log,
    run_id: str,
    source: str,
    model: str,
    harness: str,
    importer: str,
    scenario: dict[str, Any],
    tool_surface: set[str],
    reason: str,
    payload: dict[str, Any],
    checks: list[dict[str, Any]] | None,
    ts_utc: str | None = None,
) -> list[dict[str, Any]]:
    """A run's records: meta, setup, the events, final. Where the file records no tools offered
    (``tool_surface`` empty), the surface is the tools called plus every tool the scenario names, so
    an approval never asked for leaves its gated commands unapproved rather than the run unscorable."""
    meta = chat.meta_record(
        run_id=run_id,
        ts_utc=ts_utc,
        scenario=scenario,
        scenario_path=source,
        adapter={"provider": chat.provider_of(model), "model": model, "harness": harness},
        instructions_profile=chat.instructions_profile(harness, log.transcript),
        tool_surface=sorted(
            tool_surface | log.called() | (set() if tool_surface else chat.tools_named(scenario["ground_truth"]))
        ),
        importer=importer,
    )
    payload = dict(payload, final_message=log.final_message, rejected_replies=log.rejected)
    final = chat.final_record(reason, payload, log.transcript, success(checks))
    return [meta, chat.setup_record(), *log.events, final]


def model_of(path: str, recorded: Any, given: str | None, where: str) -> str:
    """The model the file records, else ``--model``; else an error naming where it was looked for."""
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()
    if given:
        return given
    raise ImportFormatError(path, None, f"{where} does not name the model; pass --model NAME")


def load_json(path: str, text: str) -> Any:
    """The file as one JSON document, under evalkit's reading rules."""
    try:
        return safe_json.loads(text)
    except JSONProblem as exc:
        raise ImportFormatError(path, exc.line, f"not valid JSON: {exc.reason}") from None


def fail_with(path: str) -> Callable[[str], ImportFormatError]:
    return lambda message: ImportFormatError(path, None, message)
