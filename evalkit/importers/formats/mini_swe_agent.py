"""mini-swe-agent trajectories (``.traj.json``, ``trajectory_format`` ``mini-swe-agent-1`` and
``-1.1``) → evalkit runs, one per file.

A file is ``{info {exit_status, submission, model_stats, config}, messages[], trajectory_format}``.
See docs/importers.md; in short:

* Every command the agent ran is a call of tool ``bash`` with ``{"command": ...}``, in order: the
  one action block of an assistant message (```` ```bash ```` in 1.x, ```` ```mswea_bash_command ````
  in 2.x), or with tool calling (2.x) each call's arguments. The message that answers it is its
  result; a return code other than 0 (``<returncode>N</returncode>``, or ``extra.returncode``) is an
  error, and so is an answer with no return code (a timeout message).
* An assistant message with no action block or several (mini-swe-agent answers it with its format
  error and runs nothing) is a rejected reply; its answer is a ``nudge``.
* ``info.exit_status`` is the final reason (``Submitted`` → ``agent_done``, ``LimitsExceeded`` →
  ``budget_exceeded``, an exception's name → ``harness_error``); the end state is the check
  ``mini_swe_agent.submitted == true``; the submission is in the final record's payload.
* The model: ``info.config.model.model_name``, else ``--model``; the task: the file's name without
  ``.traj.json``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from evalkit.importers import ImportFormatError
from evalkit.importers.formats import agent_log
from evalkit.importers.formats.agent_log import Log
from evalkit.importers.jsonlist import read_text

FORMAT_VERSION = "mini-swe-agent/1"
SHELL_TOOL = "bash"
ACTION_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def final_reason(status: str) -> str:
    if status == "Submitted":
        return "agent_done"
    if status == "LimitsExceeded":
        return "budget_exceeded"
    if "ContextWindow" in status:
        return "budget_context"
    return "harness_error"


class MiniSweAgentImporter:
    name = "mini-swe-agent"
    summary = "mini-swe-agent .traj.json files, one run per file"
    cli_options = agent_log.OPTIONS

    def convert(
        self, path: str, model: str | None = None, scenarios: str | None = None, scenario: str | None = None
    ) -> list[list[dict[str, Any]]]:
        doc = agent_log.load_json(path, read_text(path))
        if not is_mini_swe_agent(doc):
            raise ImportFormatError(
                path, 1, "not a mini-swe-agent trajectory: needs messages (a list) and info, or trajectory_format"
            )
        fail = agent_log.fail_with(path)
        info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
        config = info.get("config") if isinstance(info.get("config"), dict) else {}
        model_cfg = config.get("model") if isinstance(config.get("model"), dict) else {}
        model = agent_log.model_of(path, model_cfg.get("model_name"), model, "info.config.model.model_name")
        status = info.get("exit_status")
        if status is not None and not isinstance(status, str):
            raise fail("info.exit_status must be a string")
        log = _events(doc["messages"], bool(status), fail)
        checks = None
        reason = "end_turn_without_done"
        if status:
            checks = [{"var": "mini_swe_agent.submitted", "op": "==", "value": True, "passed": status == "Submitted"}]
            reason = final_reason(status)
        name = os.path.basename(path)
        task = name.removesuffix(".json").removesuffix(".traj")
        prompt = next((e["text"] for e in log.events if e["type"] == "nudge" and e["text"]), None)
        payload = {
            "mini_swe_agent": {
                "exit_status": status,
                "submission": info.get("submission"),
                "model_stats": info.get("model_stats"),
                "version": info.get("mini_version"),
                "trajectory_format": doc.get("trajectory_format"),
            }
        }
        return [
            agent_log.build(
                log=log,
                run_id=f"mini-swe-agent:{task}:{model}",
                source=name,
                model=model,
                harness="mini-swe-agent",
                importer=FORMAT_VERSION,
                scenario=agent_log.Scenarios(path, scenarios, scenario).for_run(
                    f"mini-swe-agent/{task}", f"mini-swe-agent {task}", prompt, checks
                ),
                tool_surface={SHELL_TOOL},
                reason=reason,
                payload=payload,
                checks=checks,
            )
        ]


IMPORTER = MiniSweAgentImporter()


def is_mini_swe_agent(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    fmt = doc.get("trajectory_format")
    info = doc.get("info")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, dict) and "mini_version" in info
    )


def _commands(msg: dict[str, Any], text: str | None, where: str, fail: Any) -> list[str] | None:
    """The commands of an assistant message: its tool calls, ``extra.actions`` (mini-swe-agent's own
    parse), or its one action block; None when mini-swe-agent would refuse it."""
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        out = []
        for ci, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise fail(f"{where}.tool_calls[{ci}] needs a function")
            args = agent_log.arguments(fn.get("arguments"), "command")
            command = args.get("command")
            out.append(command if isinstance(command, str) else fn.get("arguments"))
        return out
    extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
    actions = extra.get("actions")
    if isinstance(actions, list) and actions:
        found = [a.get("command") for a in actions if isinstance(a, dict) and isinstance(a.get("command"), str)]
        return found or None
    blocks = ACTION_BLOCK.findall(text or "")
    return [blocks[0].strip()] if len(blocks) == 1 else None


def _events(messages: list[Any], exited: bool, fail: Any) -> Log:
    log = Log()
    pending: list[dict[str, Any]] = []  # calls of the last assistant message not yet answered
    last = len(messages) - 1
    for mi, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise fail(f"messages[{mi}] is not an object")
        role = msg.get("role")
        text = agent_log.text_of(msg.get("content"))
        extra = msg.get("extra") if isinstance(msg.get("extra"), dict) else {}
        if role == "system":
            log.system(text)
        elif role == "assistant":
            commands = _commands(msg, text, f"messages[{mi}]", fail)
            pending = []
            if commands is None:
                log.reject(text, None)
                continue
            log.turn(text, stop_reason="tool_use")
            pending = [log.call(SHELL_TOOL, {"command": c}) for c in commands]
        elif role in ("user", "tool") and pending:
            record = pending.pop(0)
            code = extra.get("returncode")
            if isinstance(code, bool) or not isinstance(code, int):
                found = RETURN_CODE.search(text or "")
                code = int(found.group(1)) if found else None
            record["result"] = text
            # the exit message after the final command is its answer too, but carries no return code
            record["is_error"] = code != 0 if code is not None else not (exited and mi == last)
        elif role == "exit":
            continue  # 2.x: the exit status and submission, also in info
        elif role in ("user", "tool"):
            log.user(text)  # the task, a format error's answer, or text between turns
        else:
            raise fail(f"messages[{mi}]: unknown role {role!r}")
    return log
