"""Generic OpenAI-messages transcripts (JSONL) → evalkit trajectories.

One line per run: ``{id, messages, expected_actions: [{tool, args}], ordered?, success?, model?}``.
Optional extras: ``scenario_id`` (several runs of one task; default: ``id``), ``trial``, ``title``,
``task_prompt`` (default: the first user message), ``tools`` (what the agent could call: names or
OpenAI tool specs; default: every tool called or expected), ``command_tools`` (default: every tool
called or expected — the issue's "tool calls become commands"), ``ts_utc``.
Ground truth beyond the expected actions, in the scenario language of docs/scenarios.md:
``procedure`` (blocks, instead of ``expected_actions``), ``optional_actions``,
``forbidden_actions``, ``gated_actions``, ``args_match``; an expected action may carry
``args_match`` and ``rationale``. With ``--scenarios FILE``, a line whose ``scenario_id`` is in the
file takes that scenario whole (and gives no ground truth of its own).

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
* The ground truth is checked as a scenario's is: an unknown key in it, a near miss of a line key
  (``forbiden_actions``) or a rule that cannot hold is an error naming the line.
* Lines without ``command_tools`` get the default above; the importer says so once per file,
  naming the tools it made commands (a lookup among them is extraneous).
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from evalkit.importers import ImportFormatError, RunList
from evalkit.importers.formats import anthropic_messages
from evalkit.importers.formats.messages import (
    MessageError,
    final_record,
    meta_record,
    provider_of,
    setup_record,
    success_eval,
    tools_named,
)
from evalkit.importers.jsonlist import iter_json_lines, read_text
from evalkit.importers.notes import Note
from evalkit.importers.options import ImportOption
from evalkit.scoring.args import result_object

FORMAT_VERSION = "openai-messages/1"
GROUND_TRUTH_KEYS = ("procedure", "optional_actions", "forbidden_actions", "gated_actions", "args_match")
COMMANDS_NOTE = (
    "{lines} line(s) of {where} give no command_tools, so every tool they call or name is a command: "
    "{items} (a command no action names is extraneous; list the tools that change something in "
    "command_tools to make the others reads)"
)
ERRORS_NOTE = (
    '{lines} tool result(s) in {where} read as errors (a result starting "Error" or holding an "error" '
    "key: {items}) but carry no is_error, so those calls count as executed; if they failed, give their "
    'tool message "is_error": true'
)
LINE_KEYS = (
    "id",
    "messages",
    "expected_actions",
    "ordered",
    "success",
    "model",
    "scenario_id",
    "trial",
    "title",
    "task_prompt",
    "tools",
    "command_tools",
    "ts_utc",
    *GROUND_TRUTH_KEYS,
)


class OpenAIMessagesImporter:
    name = "openai-messages"
    summary = "JSONL of {id, messages, expected_actions, ordered?, success?, model?}"
    cli_options = (
        ImportOption("model", "model name for the runs where the input does not record it"),
        ImportOption(
            "dialect",
            "the transcripts' message format (default auto: sniffed per line)",
            "choice",
            choices=("openai", "anthropic", "auto"),
        ),
        ImportOption(
            "scenarios",
            "scenario file (JSON, JSONL or TOML; docs/scenarios.md) for lines that name a scenario_id",
            "file",
            metavar="FILE",
        ),
    )

    def convert(
        self, path: str, model: str | None = None, dialect: str = "auto", scenarios: str | None = None
    ) -> list[list[dict[str, Any]]]:
        if dialect not in anthropic_messages.DIALECTS:
            raise ImportFormatError(path, None, f"unknown dialect {dialect!r} (one of openai, anthropic, auto)")
        text = read_text(path)
        found = _scenario_file(scenarios) if scenarios else None
        runs = RunList()
        seen: dict[str, int] = {}
        truths: dict[str, tuple[int, Any]] = {}
        defaulted: tuple[set[str], list[int]] = (set(), [])  # the tools made commands by default, and on which lines
        erred: tuple[set[str], list[int]] = (set(), [])  # tools whose results read as errors, unflagged; how many
        for lineno, item in iter_json_lines(path, text, "a transcript object {id, messages, ...}"):
            run = _Line(path, lineno, item, found).to_run(os.path.basename(path), model, dialect, defaulted)
            run_id = run[0]["run_id"]
            if run_id in seen:
                raise ImportFormatError(path, lineno, f"run_id {run_id!r} already produced by line {seen[run_id]}")
            seen[run_id] = lineno
            for record in run:
                if record["type"] == "tool_call" and not record["is_error"] and _reads_as_error(record["result"]):
                    erred[0].add(record["name"])
                    erred[1].append(lineno)
            scenario = run[0]["scenario"]
            first = truths.setdefault(scenario["id"], (lineno, scenario["ground_truth"]))
            if first[1] != scenario["ground_truth"]:
                only_expected = {k: v for k, v in first[1].items() if k != "procedure"} == {
                    k: v for k, v in scenario["ground_truth"].items() if k != "procedure"
                }
                what = "expected_actions/ordered differ" if only_expected else "the ground truth differs"
                raise ImportFormatError(path, lineno, f"scenario {scenario['id']!r}: {what} from line {first[0]}")
            runs.append(run)
        if not runs:
            raise ImportFormatError(path, None, "no transcripts in file")
        tools, lines = defaulted
        if lines:
            runs.notes.append(Note("openai-messages/command_tools", COMMANDS_NOTE, tools, len(lines), [path]))
        if erred[1]:
            runs.notes.append(Note("openai-messages/errors", ERRORS_NOTE, erred[0], len(erred[1]), [path]))
        return runs


IMPORTER = OpenAIMessagesImporter()


def _tool_error(message: dict[str, Any], result: Any) -> bool:
    return message.get("is_error") is True


def _reads_as_error(result: Any) -> bool:
    """A tool result as failed tools commonly answer: text starting "Error", or an object (or JSON
    text of one) whose ``error`` is set. Only said in a note: a result's wording scores nothing."""
    if isinstance(result, str):
        text = result.lstrip()
        if text[:5].casefold() == "error":
            return True
        if not text.startswith("{"):
            return False
        result = result_object(text)
    return isinstance(result, dict) and bool(result.get("error"))


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


def _scenario_file(path: str) -> Any:
    from evalkit.trajectory.scenario_files import load_scenarios

    return load_scenarios([path]), path


def _line_path(loc: tuple[Any, ...], expected: bool) -> str:
    """Where a scenario problem is, as the line spells it (``forbidden_actions[0]``, ``expected_actions[1]``)."""
    parts = list(loc)
    if parts[:1] == ["ground_truth"]:
        parts = parts[1:]
        if expected and parts[:3] == ["procedure", 0, "actions"]:
            parts = ["expected_actions", *parts[3:]]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class _Line:
    def __init__(self, path: str, lineno: int, item: Any, scenarios: Any = None):
        self.path, self.lineno, self.item = path, lineno, item
        self.scenarios = scenarios  # (ScenarioSet, its path) of --scenarios

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
            actions.append(
                {"tool": action["tool"], "args": args, **{k: v for k, v in action.items() if k not in ("tool", "args")}}
            )
        return actions

    def _check_keys(self) -> None:
        from evalkit.trajectory.scenario import USER_PREFIX, suggestion

        for key in self.item:
            if (
                isinstance(key, str)
                and key not in LINE_KEYS
                and not key.startswith(USER_PREFIX)
                and difflib.get_close_matches(key, LINE_KEYS, n=1, cutoff=0.8)
            ):
                raise self.fail(f'unknown key "{key}"{suggestion(key, LINE_KEYS)}')
        if "procedure" in self.item and "expected_actions" in self.item:
            raise self.fail("give expected_actions (one block) or procedure (blocks), not both")

    def _from_file(self, scenario_id: str) -> dict[str, Any]:
        found, where = self.scenarios
        if scenario_id not in found:
            raise self.fail(f'scenario_id "{scenario_id}" is not in {where} (--scenarios)')
        own = [k for k in ("expected_actions", "ordered", "command_tools", *GROUND_TRUTH_KEYS) if k in self.item]
        if own:
            raise self.fail(f"the ground truth comes from --scenarios: the line cannot also give {', '.join(own)}")
        return found.by_id[scenario_id][0]

    def _validate(self, scenario: dict[str, Any]) -> None:
        from pydantic import ValidationError

        from evalkit.trajectory.scenario import Scenario

        try:
            Scenario.model_validate(scenario)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = _line_path(tuple(err["loc"]), "expected_actions" in self.item)
            message = err["msg"].removeprefix("Value error, ")
            raise self.fail(f"{where}: {message}" if where else message) from None

    def _scenario(
        self,
        scenario_id: str,
        expected: list[dict[str, Any]],
        transcript: Any,
        called: set[str],
        defaulted: tuple[set[str], list[int]] | None,
    ) -> dict[str, Any]:
        """The scenario the line describes (ground truth from its keys; ``success`` its one check)."""
        item = self.item
        prompt = item.get("task_prompt")
        if not isinstance(prompt, str):
            prompt = next((e["text"] for e in transcript.events if e["type"] == "nudge" and e["text"]), None)
        if "procedure" in item:
            procedure = item["procedure"]
        else:
            procedure = (
                [{"block": "expected_actions", "ordered": bool(item.get("ordered", False)), "actions": expected}]
                if expected
                else []
            )
        ground_truth = {
            "source": "expected_actions",
            "procedure": procedure,
            "optional_actions": item.get("optional_actions", []),
            "forbidden_actions": item.get("forbidden_actions", []),
        }
        for key in ("gated_actions", "args_match"):  # only when given: older lines import byte for byte as before
            if key in item:
                ground_truth[key] = item[key]
        if item.get("command_tools") is not None:
            commands = _names(item["command_tools"], "command_tools", self.fail)
        else:
            named = tools_named({k: v for k, v in ground_truth.items() if k != "gated_actions"})
            commands = sorted(
                called
                | named
                | {
                    g["tool"]
                    for g in item.get("gated_actions") or []
                    if isinstance(g, dict) and isinstance(g.get("tool"), str)
                }
            )
            if defaulted is not None:
                defaulted[0].update(commands)
                defaulted[1].append(self.lineno)
        return {
            "id": scenario_id,
            "title": item.get("title") if isinstance(item.get("title"), str) else scenario_id,
            "task_prompt": prompt,
            "ground_truth": ground_truth,
            "success": {"final_state": [{"var": "success", "op": "==", "value": True}], "ecam_clear_of": []},
            "budget": {"max_tool_calls": None, "max_sim_time_s": None},
            "command_tools": sorted(set(commands)),
        }

    def to_run(
        self,
        source: str,
        default_model: str | None,
        dialect: str = "auto",
        defaulted: tuple[set[str], list[int]] | None = None,
    ) -> list[dict[str, Any]]:
        item = self.item
        if not isinstance(item, dict):
            got = ", not a JSON list (JSONL: one transcript a line)" if isinstance(item, list) else ""
            raise self.fail(f"a line must be an object {{id, messages, expected_actions, ...}}{got}")
        self._check_keys()
        rid = item.get("id")
        if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
            raise self.fail("id must be a non-empty string or an integer")
        model = item.get("model") if item.get("model") is not None else default_model
        if not isinstance(model, str) or not model:
            raise self.fail("no model: give the line a model or pass --model NAME")
        for key, kind in (("ordered", bool), ("success", bool), ("trial", int), ("scenario_id", str)):
            value = item.get(key)
            if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                raise self.fail(
                    f"{key} must be {'a boolean' if kind is bool else 'an integer' if kind is int else 'a string'}"
                )
        from_file = self.scenarios is not None and isinstance(item.get("scenario_id"), str)
        expected = [] if from_file else self._expected()
        try:
            transcript = anthropic_messages.convert(item.get("messages"), _tool_error, False, dialect)
        except MessageError as exc:
            raise self.fail(str(exc)) from None
        called = {e["name"] for e in transcript.events if e["type"] == "tool_call"}
        success = item.get("success")
        scenario_id = item.get("scenario_id") or str(rid)
        if from_file:
            scenario = self._from_file(scenario_id)
            named = tools_named(scenario["ground_truth"])
            surface = (
                _names(item["tools"], "tools", self.fail) if item.get("tools") is not None else sorted(called | named)
            )
        else:
            scenario = self._scenario(scenario_id, expected, transcript, called, defaulted)
            named = tools_named(scenario["ground_truth"])
            surface = (
                _names(item["tools"], "tools", self.fail) if item.get("tools") is not None else sorted(called | named)
            )
            self._validate(scenario)
        run_id = f"{rid}:{model}" + (f":trial{item['trial']}" if item.get("trial") is not None else "")
        ts = item.get("ts_utc")
        meta = meta_record(
            run_id=run_id,
            ts_utc=ts if isinstance(ts, str) else None,
            scenario=scenario,
            scenario_path=f"{source}:{self.lineno}",
            adapter={"provider": provider_of(model), "model": model},
            instructions_profile=None,
            tool_surface=sorted(set(surface)),
            importer=FORMAT_VERSION,
        )
        finished = transcript.last_role == "assistant" and not (
            transcript.events and transcript.events[-1]["type"] == "tool_call"
        )
        final = final_record(
            "agent_done" if finished else "end_turn_without_done",
            None,
            transcript,
            None
            if success is None
            else success_eval([{"var": "success", "op": "==", "value": True, "passed": success}], success),
        )
        return [meta, setup_record(), *transcript.events, final]
