"""tau2-bench results files (sierra-research/tau2-bench) → evalkit trajectories.

A results file is one JSON object ``{timestamp, info, tasks, simulations}`` (tau2's ``Results``).
Each simulation becomes a run, each task a scenario ``tau2-<domain>-<task_id>``. See
docs/importers.md for the full mapping; the choices in short:

* The task's expected actions of the agent (``requestor`` ``assistant``) are one unordered block of
  required ``{tool, args}`` actions, each with tau2's own comparison as its argument rule:
  ``compare_args`` null → ``within`` (tau2 compares the keys the call has), ``[]`` → ``ignore``, a
  list → ``keys``. The tools they name are the commands; every other call is a read.
* The end state is one check per reward-basis component (``tau2.DB``, ``tau2.COMMUNICATE``, ...),
  passed when tau2's breakdown gives it 1; ``all_passed`` is tau2's own success test on the reward
  (``|reward - 1| <= 1e-6``), so the per-model rollup's pass_hat_k is tau2's pass^k.
* ``infrastructure_error`` simulations are left out of tau2's metrics: they have no end state here
  (``incomplete``). Every other simulation is scored; one without ``reward_info`` fails.
* tau2's ``action_checks`` (and NL assertions, judged by an LLM in tau2) and its reward become
  ratings (raters ``tau2.action_checks``, ``tau2.nl_assertions``, ``tau2.reward``), so the audit
  sets them beside evalkit's matching and judges.
* The user simulator's own tool calls (``requestor`` ``user``) are not the agent's: they are counted
  in ``done_payload.tau2.user_tool_calls``, not recorded as calls.
"""

from __future__ import annotations

import math
import os
from typing import Any

from evalkit.importers import Converted, ImportFormatError
from evalkit.importers.formats import messages as chat
from evalkit.importers.formats.messages import MessageError, convert_messages, parse_arguments
from evalkit.importers.jsonlist import read_text
from evalkit.importers.options import ImportOption
from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

FORMAT_VERSION = "tau2/1"
SUCCESS_TOLERANCE = 1e-6
DEFAULT_BASIS = ("DB", "COMMUNICATE")  # tau2's EvaluationCriteria default
NOT_EVALUATED = frozenset({"infrastructure_error"})  # tau2's get_metrics_df drops these runs
EVALUATED_ENDINGS = frozenset({"user_stop", "agent_stop"})
# tau2's TerminationReason → evalkit's final reason (budgets named like inspect_ai's limits)
REASONS = {
    "user_stop": "agent_done",
    "agent_stop": "agent_done",
    "max_steps": "budget_turns",
    "timeout": "budget_time",
    "too_many_errors": "budget_errors",
    "context_window_exceeded": "budget_context",
}
SIMULATIONS_DIR = "simulations"  # tau2's run-folder layout: one <simulation id>.json a simulation
RATER_ACTIONS, RATER_NL, RATER_REWARD = "tau2.action_checks", "tau2.nl_assertions", "tau2.reward"


def is_success(reward: float | None) -> bool:
    return reward is not None and abs(reward - 1.0) <= SUCCESS_TOLERANCE


def args_rule(compare_args: Any) -> dict[str, Any]:
    """tau2's ``compare_args`` as an evalkit argument rule (``Action.compare_with_tool_call``)."""
    if compare_args is None:
        return {"mode": "within"}
    if not compare_args:
        return {"mode": "ignore"}
    return {"keys": list(compare_args)}


class Tau2Importer:
    name = "tau2"
    summary = "tau2-bench results files ({timestamp, info, tasks, simulations})"
    cli_options = (
        ImportOption("model", "model name for the runs where the input does not record it"),
        ImportOption(
            "tasks", "tasks file for simulations whose task the results file does not hold", "file", metavar="FILE"
        ),
    )
    ratings = True

    def expand(self, directory: str) -> list[str]:
        """A tau2 run folder (``results.json`` beside ``simulations/``) is its results file."""
        results = os.path.join(directory, "results.json")
        if not os.path.isfile(results):
            raise ImportFormatError(directory, None, "no results.json in this directory (a tau2-bench run folder)")
        return [results]

    def convert(self, path: str, model: str | None = None, tasks: str | None = None) -> Converted:
        doc = _load_object(path, read_text(path), "a tau2-bench results object {info, tasks, simulations}")
        sims = doc.get("simulations")
        folder = os.path.join(os.path.dirname(path), SIMULATIONS_DIR)
        if sims is None and os.path.isdir(folder):
            sims = _simulation_files(folder)
        if not isinstance(doc.get("info"), dict) or not isinstance(sims, list):
            raise ImportFormatError(
                path,
                None,
                "not a tau2-bench results file: needs info (an object) and simulations "
                f"(a list, or a {SIMULATIONS_DIR}/ folder beside the file)",
            )
        info = doc["info"]
        model = model or _get(info, "agent_info", "llm")
        if not isinstance(model, str) or not model:
            raise ImportFormatError(path, None, "info.agent_info.llm does not name the model; pass --model NAME")
        domain = _get(info, "environment_info", "domain_name")
        if not isinstance(domain, str) or not domain or chat.slug(domain) != domain:
            raise ImportFormatError(
                path, None, f"info.environment_info.domain_name must be a plain name, not {domain!r}"
            )
        by_id: dict[str, dict[str, Any]] = {}
        for source, listed in ((path, doc.get("tasks")), (tasks, _task_list(tasks) if tasks else None)):
            if listed is None:
                continue
            if not isinstance(listed, list):
                raise ImportFormatError(source, None, "tasks must be a list of tau2 tasks")
            for ti, task in enumerate(listed):
                if (
                    not isinstance(task, dict)
                    or isinstance(task.get("id"), bool)
                    or not isinstance(task.get("id"), (str, int))
                ):
                    raise ImportFormatError(source, None, f"tasks[{ti}] needs an id")
                by_id.setdefault(str(task["id"]), task)
        if not sims:
            raise ImportFormatError(path, None, "no simulations in file")
        surface = _tool_defs(info)
        runs, ratings = [], []
        seen: dict[tuple[str, int], int] = {}
        scenarios: dict[str, dict[str, Any]] = {}
        for si, sim in enumerate(sims):
            run = _Simulation(path, si, sim)
            key = (run.task_id, run.trial)
            if key in seen:
                raise run.error(f"task_id {run.task_id} trial {run.trial} already occurs in simulations[{seen[key]}]")
            seen[key] = si
            task = by_id.get(run.task_id)
            if task is None:
                raise run.error(
                    f"no task {run.task_id!r} in the file's tasks" + ("" if tasks else " (pass --tasks FILE)")
                )
            if run.task_id not in scenarios:
                scenarios[run.task_id] = _Task(run.error, task).scenario(domain, run.task_id)
            records = run.to_run(os.path.basename(path), domain, model, scenarios[run.task_id], surface)
            runs.append(records)
            ratings.extend(run.ratings(records[0]["run_id"]))
        return Converted(runs, ratings)


IMPORTER = Tau2Importer()


def _load_object(path: str, text: str, what: str) -> dict[str, Any]:
    try:
        doc = safe_json.loads(text)
    except JSONProblem as exc:
        raise ImportFormatError(path, exc.line, f"not valid JSON: {exc.reason}") from None
    if not isinstance(doc, dict):
        raise ImportFormatError(path, 1, f"expected {what}")
    return doc


def _simulation_files(folder: str) -> list[Any]:
    """The simulations of a run folder, one JSON object a file, in file-name order."""
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            file = os.path.join(folder, name)
            out.append(_load_object(file, read_text(file), "a tau2-bench simulation object"))
    return out


def _task_list(path: str) -> Any:
    doc = None
    try:
        doc = safe_json.loads(read_text(path))
    except JSONProblem as exc:
        raise ImportFormatError(path, exc.line, f"not valid JSON: {exc.reason}") from None
    # a domain's tasks.json is a list; a results file holds them under "tasks"
    return doc.get("tasks") if isinstance(doc, dict) else doc


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _tool_defs(info: dict[str, Any]) -> set[str]:
    defs = _get(info, "environment_info", "tool_defs")
    if isinstance(defs, dict):
        return {k for k in defs if isinstance(k, str)}
    return set()


class _Task:
    """One tau2 task, checked, as the scenario every simulation of it shares."""

    def __init__(self, error: Any, task: dict[str, Any]):
        self.error, self.task = error, task

    def scenario(self, domain: str, task_id: str) -> dict[str, Any]:
        criteria = self.task.get("evaluation_criteria") or {}
        if not isinstance(criteria, dict):
            raise self.error(f"task {task_id}: evaluation_criteria must be an object")
        actions = criteria.get("actions") or []
        if not isinstance(actions, list):
            raise self.error(f"task {task_id}: evaluation_criteria.actions must be a list")
        required, kept = [], []
        for ai, action in enumerate(actions):
            where = f"task {task_id}: evaluation_criteria.actions[{ai}]"
            if not isinstance(action, dict) or not isinstance(action.get("name"), str) or not action["name"]:
                raise self.error(f"{where} needs a name")
            try:
                args = parse_arguments(action.get("arguments"), where)
            except MessageError as exc:
                raise self.error(str(exc)) from None
            compare = action.get("compare_args")
            if compare is not None and (
                not isinstance(compare, list) or not all(isinstance(k, str) and k for k in compare)
            ):
                raise self.error(f"{where}.compare_args must be null or a list of argument names")
            action_id = action.get("action_id")
            kept.append(
                {
                    "action_id": action_id,
                    "requestor": action.get("requestor", "assistant"),
                    "name": action["name"],
                    "arguments": args,
                    "compare_args": compare,
                }
            )
            if action.get("requestor", "assistant") != "assistant":
                continue  # the user simulator's action, not the agent's
            required.append(
                {
                    "tool": action["name"],
                    "args": args,
                    "args_match": args_rule(compare),
                    "rationale": f"tau2 expected action {action_id if action_id is not None else ai}",
                }
            )
        basis = criteria.get("reward_basis", list(DEFAULT_BASIS))
        if not isinstance(basis, list) or not all(isinstance(b, str) and b for b in basis):
            raise self.error(f"task {task_id}: evaluation_criteria.reward_basis must be a list of names")
        return {
            "id": f"tau2-{domain}-{task_id}",
            "title": f"tau2-bench {domain} task {task_id}",
            "task_prompt": _instructions(self.task.get("user_scenario")),
            "ground_truth": {
                "source": "tau2-bench evaluation_criteria.actions of the agent",
                "procedure": [{"block": "expected_actions", "ordered": False, "actions": required}] if required else [],
                "optional_actions": [],
                "forbidden_actions": [],
            },
            "success": {
                "final_state": [{"var": f"tau2.{b}", "op": "==", "value": 1} for b in basis],
                "ecam_clear_of": [],
            },
            "budget": {"max_tool_calls": None, "max_sim_time_s": None},
            "command_tools": sorted({a["tool"] for a in required}),
            "tau2": {
                "domain": domain,
                "task_id": task_id,
                "reward_basis": basis,
                "actions": kept,
                "env_assertions": criteria.get("env_assertions"),
                "communicate_info": criteria.get("communicate_info"),
                "nl_assertions": criteria.get("nl_assertions"),
            },
        }


def _instructions(user_scenario: Any) -> str | None:
    """The user's instructions as text (tau2's own ``StructuredUserInstructions.__str__`` order)."""
    raw = user_scenario.get("instructions") if isinstance(user_scenario, dict) else None
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, dict):
        return None
    parts = []
    for key, label in (
        ("domain", "Domain"),
        ("reason_for_call", "Reason for call"),
        ("known_info", "Known info"),
        ("unknown_info", "Unknown info"),
        ("task_instructions", "Task instructions"),
    ):
        if isinstance(raw.get(key), str):
            parts.append(f"{label}: {raw[key]}")
    return "\n".join(parts) or None


class _Simulation:
    """One simulation, checked, with what is needed to build its run and its ratings."""

    def __init__(self, path: str, index: int, sim: Any):
        self.path, self.index = path, index
        self.task_id, self.trial = "", 0
        if not isinstance(sim, dict):
            raise self.error("not an object {task_id, trial, messages, reward_info, ...}")
        self.task_id = chat.task_id_of(sim.get("task_id"), self.error)  # set first: a bad trial's error names the task
        trial = sim.get("trial", 0)
        self.trial = chat.trial_of(0 if trial is None else trial, self.error)
        self.sim = sim
        reason = sim.get("termination_reason")
        if not isinstance(reason, str) or not reason:
            raise self.error("termination_reason must be a string")
        self.reason = reason
        info = sim.get("reward_info")
        if info is not None and not isinstance(info, dict):
            raise self.error("reward_info must be an object or null")
        self.reward_info = info or {}
        reward = self.reward_info.get("reward") if info is not None else None
        if reward is not None and (
            isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward)
        ):
            raise self.error("reward_info.reward must be a finite number")
        self.reward = None if reward is None else float(reward)
        self.user_tool_calls = 0
        messages = sim.get("messages")
        if messages is None and isinstance(sim.get("ticks"), list):
            messages = _tick_messages(sim["ticks"], self.error)
        try:
            self.transcript = convert_messages(
                self._agent_messages(messages or []), _tool_error, missing_result_is_error=True
            )
        except MessageError as exc:
            raise self.error(f"messages: {exc}") from None

    def error(self, message: str) -> ImportFormatError:
        ids = f" (task_id {self.task_id}, trial {self.trial})" if self.task_id != "" else ""
        return ImportFormatError(self.path, None, f"simulations[{self.index}]{ids}: {message}")

    def _agent_messages(self, messages: Any) -> list[Any]:
        """tau2's messages in the OpenAI form evalkit.importers.formats.messages reads: the agent's tool calls
        as ``function`` calls, tool results answering them by id, the user's own tool use left out."""
        if not isinstance(messages, list):
            raise self.error("messages must be a list")
        out: list[Any] = []
        flat: list[Any] = []
        for msg in messages:  # a MultiToolMessage holds several tool messages
            if isinstance(msg, dict) and msg.get("role") == "tool" and isinstance(msg.get("tool_messages"), list):
                flat.extend(msg["tool_messages"])
            else:
                flat.append(msg)
        for mi, msg in enumerate(flat):
            if not isinstance(msg, dict):
                raise self.error(f"messages[{mi}] is not an object")
            role = msg.get("role")
            if role == "tool":
                if msg.get("requestor", "assistant") != "assistant":
                    continue
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": msg.get("id"),
                        "content": msg.get("content"),
                        "is_error": msg.get("error") is True,
                    }
                )
                continue
            calls = msg.get("tool_calls")
            if role == "user":
                self.user_tool_calls += len(calls) if isinstance(calls, list) else 0
                out.append({"role": "user", "content": msg.get("content")})
                continue
            if role == "assistant" and calls is not None:
                if not isinstance(calls, list):
                    raise self.error(f"messages[{mi}].tool_calls must be a list")
                converted = []
                for ci, call in enumerate(calls):
                    if not isinstance(call, dict):
                        raise self.error(f"messages[{mi}].tool_calls[{ci}] is not an object")
                    converted.append(
                        {
                            "id": call.get("id") or None,
                            "type": "function",
                            "function": {"name": call.get("name"), "arguments": call.get("arguments")},
                        }
                    )
                msg = dict(msg, tool_calls=converted)
            out.append(msg)
        return out

    def to_run(
        self, source: str, domain: str, model: str, scenario: dict[str, Any], tools: set[str]
    ) -> list[dict[str, Any]]:
        called = {e["name"] for e in self.transcript.events if e["type"] == "tool_call"}
        expected = {a["name"] for a in scenario["tau2"]["actions"] if a["requestor"] == "assistant"}
        start = self.sim.get("start_time")
        seed = self.sim.get("seed")
        meta = chat.meta_record(
            run_id=f"tau2-{domain}-{self.task_id}:{model}:trial{self.trial}",
            ts_utc=start if isinstance(start, str) else None,
            scenario=scenario,
            scenario_path=f"{source}#simulations[{self.index}]",
            adapter={"provider": chat.provider_of(model), "model": model, "harness": "tau2-bench"},
            instructions_profile=chat.instructions_profile(f"tau2/{domain}", self.transcript),
            tool_surface=sorted(tools | called | expected),
            importer=FORMAT_VERSION,
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        )
        return [meta, chat.setup_record(), *self.transcript.events, self._final(scenario)]

    def _component_passed(self, component: str) -> bool:
        """One reward-basis component: tau2's breakdown when it has it, else its checks."""
        info = self.reward_info
        breakdown = info.get("reward_breakdown")
        if isinstance(breakdown, dict) and isinstance(breakdown.get(component), (int, float)):
            return is_success(float(breakdown[component]))
        if self.reason not in EVALUATED_ENDINGS:
            return False  # tau2 evaluated nothing: the run ended prematurely
        lists = {
            "COMMUNICATE": ("communicate_checks", "met"),
            "ACTION": ("action_checks", "action_match"),
            "NL_ASSERTION": ("nl_assertions", "met"),
            "ENV_ASSERTION": ("env_assertions", "met"),
        }
        if component == "DB" and isinstance(info.get("db_check"), dict):
            return info["db_check"].get("db_match") is True
        if component in lists and isinstance(info.get(lists[component][0]), list):
            key, flag = lists[component]
            return all(isinstance(c, dict) and c.get(flag) is True for c in info[key])
        return is_success(self.reward)

    def _final(self, scenario: dict[str, Any]) -> dict[str, Any]:
        success = is_success(self.reward)
        payload: dict[str, Any] = {
            "simulation_id": self.sim.get("id"),
            "termination_reason": self.reason,
            "reward": self.reward,
            "reward_breakdown": self.reward_info.get("reward_breakdown"),
            "db_check": self.reward_info.get("db_check"),
            "user_tool_calls": self.user_tool_calls,
        }
        if self.reason in NOT_EVALUATED:
            evaluation = None  # tau2 leaves the run out of its metrics; so does evalkit (incomplete)
        else:
            checks = [
                dict(c, passed=self._component_passed(c["var"].split(".", 1)[1]))
                for c in scenario["success"]["final_state"]
            ]
            evaluation = chat.success_eval(checks, success)
        return chat.final_record(
            REASONS.get(self.reason, "harness_error"), {"tau2": payload}, self.transcript, evaluation
        )

    def ratings(self, run_id: str) -> list[dict[str, Any]]:
        """tau2's own verdicts on this run: its reward, each action check and each NL assertion."""
        if self.reason in NOT_EVALUATED:
            return []
        rows = [
            {
                "item_id": run_id,
                "rater": RATER_REWARD,
                "rater_kind": "mechanical",
                "dimension": "outcome",
                "value": "pass" if is_success(self.reward) else "fail",
            }
        ]
        for ci, check in enumerate(self.reward_info.get("action_checks") or []):
            action = check.get("action") if isinstance(check, dict) else None
            if not isinstance(action, dict) or not isinstance(check.get("action_match"), bool):
                raise self.error(f"reward_info.action_checks[{ci}] needs action and action_match")
            name = action.get("action_id") if action.get("action_id") is not None else ci
            rows.append(
                {
                    "item_id": run_id,
                    "rater": RATER_ACTIONS,
                    "rater_kind": "mechanical",
                    "dimension": f"action:{name}",
                    "value": "match" if check["action_match"] else "no_match",
                }
            )
        for ni, check in enumerate(self.reward_info.get("nl_assertions") or []):
            if not isinstance(check, dict) or not isinstance(check.get("met"), bool):
                raise self.error(f"reward_info.nl_assertions[{ni}] needs met")
            # tau2 asks an LLM whether each assertion holds: a judge, not a mechanical check
            rows.append(
                {
                    "item_id": run_id,
                    "rater": RATER_NL,
                    "rater_kind": "judge",
                    "dimension": f"nl:{ni}",
                    "value": "pass" if check["met"] else "fail",
                }
            )
        return rows


def _tool_error(message: dict[str, Any], result: Any) -> bool:
    return message.get("is_error") is True


def _tick_messages(ticks: list[Any], error) -> list[Any]:
    """A full-duplex (voice) simulation's ticks as messages, in tau2's own order for a tick
    (``Tick.get_all_messages``): the agent's chunk with its tool calls, their results, the user's
    chunk with its tool calls, their results. Chunks without words or calls (silence) are left out."""
    out: list[Any] = []
    for ti, tick in enumerate(ticks):
        if not isinstance(tick, dict):
            raise error(f"ticks[{ti}] is not an object")
        for side, role in (("agent", "assistant"), ("user", "user")):
            chunk = tick.get(f"{side}_chunk") or {}
            calls = tick.get(f"{side}_tool_calls") or None
            content = chunk.get("content") if isinstance(chunk, dict) else None
            if calls or (isinstance(content, str) and content.strip()):
                out.append({"role": role, "content": content, "tool_calls": calls})
            results = tick.get(f"{side}_tool_results") or []
            if not isinstance(results, list):
                raise error(f"ticks[{ti}].{side}_tool_results must be a list")
            out.extend(results)
    return out
