"""SWE-agent ``.traj`` files (0.x and 1.x) → evalkit runs, one per file.

A ``.traj`` is ``{trajectory[], history[], info, environment, replay_config?}``: ``trajectory`` holds
the actions SWE-agent executed (``action``, ``observation``, ``thought``, ``response``), ``history``
the messages the model saw and wrote, ``info`` the ``exit_status``, ``submission`` and
``model_stats``. See docs/importers.md; in short:

* Every executed action is a call, in order. When the model called a function (1.x function
  calling: the assistant message of that action in ``history`` holds ``tool_calls``), the call is
  that function with its parsed arguments; otherwise the action is a command line SWE-agent ran in
  its shell: tool ``bash``, ``{"command": action}``. Its result is the observation.
* An assistant message of ``history`` that no executed action follows (a reply SWE-agent rejected:
  a format error, a blocked command) is a rejected reply, with SWE-agent's answer as a ``nudge``.
* ``info.exit_status`` is the final reason (``submitted`` → ``agent_done``, ``exit_cost`` →
  ``budget_cost``, ``exit_context`` → ``budget_context``, ``exit_format`` → ``budget_errors``,
  ``exit_error`` and other ``exit_*`` errors → ``harness_error``; ``submitted (exit_cost)``: the
  budget ran out and SWE-agent submitted for the agent → ``budget_cost``); the end state is the one
  check ``swe_agent.submitted == true`` (the run ended with a submission); the patch is in the final
  record's payload. Whether it resolves the issue is the benchmark's verdict, not the file's.
* The model: ``replay_config.agent.model.name`` (1.x), else ``--model``. The task: the problem
  statement's id (1.x), else the file's name without ``.traj``.
"""

from __future__ import annotations

import os
from typing import Any

from evalkit.importers import ImportFormatError
from evalkit.importers.formats import agent_log
from evalkit.importers.formats.agent_log import Log
from evalkit.importers.jsonlist import read_text

FORMAT_VERSION = "swe-agent/1"
SHELL_TOOL = "bash"


def final_reason(status: str) -> str:
    """SWE-agent's exit status as an evalkit final reason (an unknown status is kept as it is)."""
    inner = status[status.find("(") + 1 : status.rfind(")")] if "(" in status else status
    for key, reason in (
        ("exit_cost", "budget_cost"),
        ("exit_context", "budget_context"),
        ("exit_format", "budget_errors"),
        ("exit_api", "provider_error"),
    ):
        if key in inner:
            return reason
    if status.startswith("submitted"):
        return "agent_done"
    if inner.startswith("exit_") or "error" in inner.lower():
        return "harness_error"
    return status


class SweAgentImporter:
    name = "swe-agent"
    summary = "SWE-agent .traj files (0.x and 1.x), one run per file"
    cli_options = agent_log.OPTIONS

    def convert(
        self, path: str, model: str | None = None, scenarios: str | None = None, scenario: str | None = None
    ) -> list[list[dict[str, Any]]]:
        doc = agent_log.load_json(path, read_text(path))
        if not is_swe_agent(doc):
            raise ImportFormatError(
                path, 1, "not a SWE-agent trajectory: needs trajectory (a list) and info (an object)"
            )
        fail = agent_log.fail_with(path)
        replay = agent_log.python_literal(doc.get("replay_config"))
        replay = replay if isinstance(replay, dict) else {}
        agent_cfg = replay.get("agent") if isinstance(replay.get("agent"), dict) else {}
        model_cfg = agent_cfg.get("model") if isinstance(agent_cfg.get("model"), dict) else {}
        recorded = model_cfg.get("name") or model_cfg.get("model_name")
        model = agent_log.model_of(path, recorded, model, "replay_config.agent.model.name")
        problem = replay.get("problem_statement") if isinstance(replay.get("problem_statement"), dict) else {}
        name = os.path.basename(path)
        task = problem.get("id") if isinstance(problem.get("id"), str) and problem["id"] else name.removesuffix(".traj")

        log = _events(doc, fail)
        info = doc["info"]
        status = info.get("exit_status")
        if status is not None and not isinstance(status, str):
            raise fail("info.exit_status must be a string")
        checks = None
        reason = "end_turn_without_done"
        if status:
            submitted = status.startswith("submitted")
            checks = [{"var": "swe_agent.submitted", "op": "==", "value": True, "passed": submitted}]
            reason = final_reason(status)
        prompt = next((e["text"] for e in log.events if e["type"] == "nudge" and e["text"]), None)
        stats = agent_log.python_literal(info.get("model_stats"))
        payload = {
            "swe_agent": {
                "exit_status": status,
                "submission": info.get("submission"),
                "model_stats": stats if isinstance(stats, dict) else None,
            }
        }
        return [
            agent_log.build(
                log=log,
                run_id=f"swe-agent:{task}:{model}",
                source=name,
                model=model,
                harness="swe-agent",
                importer=FORMAT_VERSION,
                scenario=agent_log.Scenarios(path, scenarios, scenario).for_run(
                    f"swe-agent/{task}", f"SWE-agent {task}", prompt, checks
                ),
                tool_surface=set(),
                reason=reason,
                payload=payload,
                checks=checks,
            )
        ]


IMPORTER = SweAgentImporter()


def is_swe_agent(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("trajectory"), list)
        and isinstance(doc.get("info"), dict)
        and "trajectory_format" not in doc
    )


def _action(step: dict[str, Any]) -> str:
    action = step.get("action")
    return action.strip() if isinstance(action, str) else ""


def _structured(message: dict[str, Any], where: str, fail: Any) -> list[tuple[str, dict[str, Any]]] | None:
    """The function calls of a history message (1.x function calling), None when it has none."""
    calls = agent_log.python_literal(message.get("tool_calls"))
    if not calls:
        return None
    if not isinstance(calls, list):
        raise fail(f"{where}.tool_calls must be a list")
    out = []
    for ci, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise fail(f"{where}.tool_calls[{ci}] needs function.name")
        out.append((fn["name"], agent_log.arguments(fn.get("arguments"), "arguments")))
    return out


def _events(doc: dict[str, Any], fail: Any) -> Log:
    steps = doc["trajectory"]
    for si, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            raise fail(f"trajectory[{si}] needs an action (a string)")
    history = doc.get("history") or []
    if not isinstance(history, list):
        raise fail("history must be a list")
    log = Log()
    done = 0  # executed steps emitted
    pending_reject = False  # the message after a rejected reply is SWE-agent's answer to it
    for hi, msg in enumerate(history):
        if not isinstance(msg, dict):
            raise fail(f"history[{hi}] is not an object")
        role = msg.get("role")
        text = agent_log.text_of(msg.get("content"))
        if msg.get("is_demo") is True:
            continue
        if role == "system":
            log.system(text)
        elif role == "assistant":
            action = _action(msg)
            if done < len(steps) and action and action == _action(steps[done]):
                _executed(log, steps[done], msg, f"history[{hi}]", fail)
                done += 1
                pending_reject = False
            else:
                log.reject(msg.get("thought") if isinstance(msg.get("thought"), str) else text, None, None)
                pending_reject = True
        elif role in ("user", "tool"):
            if pending_reject:
                log.user(text)
                pending_reject = False
            elif log.transcript.steps == 0:
                log.user(text)  # the task, before the agent's first turn
            # other user/tool messages are the observations of executed steps: their results
    for step in steps[done:]:  # executed after the history was last written (the final submit)
        _executed(log, step, None, "", fail)
    return log


def _executed(log: Log, step: dict[str, Any], message: dict[str, Any] | None, where: str, fail: Any) -> None:
    thought = step.get("thought") if isinstance(step.get("thought"), str) else None
    calls = _structured(message, where, fail) if message is not None else None
    log.turn(thought, stop_reason="tool_use")
    observation = step.get("observation")
    if calls is None:
        calls = [(SHELL_TOOL, {"command": _action(step)})]
    for ci, (name, args) in enumerate(calls):
        log.call(name, args, observation if ci == 0 else None)
