"""tau-bench result files (sierra-research/tau-bench) → evalkit trajectories.

A result file is a JSON list with one ``{task_id, trial, reward, info, traj}`` record per
(task, trial). Each task becomes the scenario ``tau-<domain>-<task_id>``, each trial a run of
``--model`` (the result file does not name the model, so it is required). See docs/importers.md
for the full mapping; the choices in short:

* Commands are the tools that change tau-bench's database (``command_tools``); every other tool —
  lookups, ``calculate``, ``think``, ``transfer_to_human_agents`` — is a read. tau-bench's reward
  only looks at the database (and the replies), so these are exactly the calls its reward can see.
* The gold actions of command tools become one unordered block of required ``{tool, args}``
  actions; gold reads are dropped from the required list (reads are free in evalkit and tau-bench
  never checks them) and kept, with everything else tau-bench knows, under ``scenario.tau_bench``.
* The end state carries tau-bench's reward checks: the data-hash check and one check per required
  output. ``all_passed`` is ``|reward - 1| <= 1e-6``, tau-bench's own success test, so the
  per-model rollup's pass_hat_k is the benchmark's pass^k.
* ``reward_info: null`` (the step limit was hit) is a failed, scored run: final reason
  ``budget_tool_calls``, every check not passed. A record of a crashed episode (``info.error``,
  empty ``traj``) is also a failed, scored run (tau-bench counts it as reward 0), final reason
  ``harness_error``; its task definition is taken from another trial of the same task in the file.
* Transcripts of the ``act``/``react`` strategies (actions as JSON text) are rewritten into tool calls.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from evalkit.importers import ImportFormatError
from evalkit.importers.formats import messages as chat
from evalkit.importers.formats.messages import MessageError, convert_messages, parse_arguments
from evalkit.importers.jsonlist import iter_json_list, read_text
from evalkit.importers.options import ImportOption
from evalkit.trajectory import safe_json
from evalkit.trajectory.safe_json import JSONProblem

FORMAT_VERSION = "taubench/1"
SUCCESS_TOLERANCE = 1e-6
RESPOND = "respond"  # tau-bench's pseudo-action for a text reply; never a tool

# The upstream tools of each domain, split into database writes (commands) and everything else.
DOMAINS: dict[str, dict[str, frozenset[str]]] = {
    "airline": {
        "writes": frozenset(
            {
                "book_reservation",
                "cancel_reservation",
                "send_certificate",
                "update_reservation_baggages",
                "update_reservation_flights",
                "update_reservation_passengers",
            }
        ),
        "reads": frozenset(
            {
                "calculate",
                "get_reservation_details",
                "get_user_details",
                "list_all_airports",
                "search_direct_flight",
                "search_onestop_flight",
                "think",
                "transfer_to_human_agents",
            }
        ),
    },
    "retail": {
        "writes": frozenset(
            {
                "cancel_pending_order",
                "exchange_delivered_order_items",
                "modify_pending_order_address",
                "modify_pending_order_items",
                "modify_pending_order_payment",
                "modify_user_address",
                "return_delivered_order_items",
            }
        ),
        "reads": frozenset(
            {
                "calculate",
                "find_user_id_by_email",
                "find_user_id_by_name_zip",
                "get_order_details",
                "get_product_details",
                "get_user_details",
                "list_all_product_types",
                "think",
                "transfer_to_human_agents",
            }
        ),
    },
}
# A tool outside the tables (a fork's extra tool, another domain) is a read when its name says so.
READ_PREFIXES = ("get_", "find_", "search_", "list_", "lookup_", "check_", "calculate", "think", "transfer_to_")


def is_success(reward: float) -> bool:
    return abs(reward - 1.0) <= SUCCESS_TOLERANCE


def is_write(tool: str, domain: str) -> bool:
    table = DOMAINS.get(domain)
    if table is not None and tool in table["writes"]:
        return True
    if table is not None and tool in table["reads"]:
        return False
    return not tool.startswith(READ_PREFIXES)


def _unique_tools(domain: str) -> frozenset[str]:
    others = set()
    for name, table in DOMAINS.items():
        if name != domain:
            others |= table["writes"] | table["reads"]
    mine = DOMAINS[domain]["writes"] | DOMAINS[domain]["reads"]
    return frozenset(mine - others)


def infer_domain(tools: Iterable[str]) -> str | None:
    """The one known domain whose own tools (not shared with another domain) appear, else None."""
    names = set(tools)
    hits = [d for d in sorted(DOMAINS) if names & _unique_tools(d)]
    return hits[0] if len(hits) == 1 else None


class TauBenchImporter:
    name = "taubench"
    summary = "tau-bench result files (JSON list of {task_id, trial, reward, info, traj})"
    cli_options = (
        ImportOption("model", "model name for the runs where the input does not record it"),
        ImportOption("domain", "tau-bench domain (airline, retail); inferred from the tool names when omitted"),
    )
    required = ("model",)  # the result file does not name the model

    def convert(self, path: str, model: str | None = None, domain: str | None = None) -> list[list[dict[str, Any]]]:
        if not model:
            raise ImportFormatError(path, None, "tau-bench result files do not name the model; pass --model NAME")
        if domain is not None and (not domain or chat.slug(domain) != domain):
            raise ImportFormatError(path, None, f"--domain must be a plain name like airline or retail, not {domain!r}")
        text = read_text(path)
        items = list(
            iter_json_list(path, text, "a JSON list of tau-bench results {task_id, trial, reward, info, traj}")
        )
        if not items:
            raise ImportFormatError(path, None, "no results in file (an empty list)")
        parsed = [_Record.parse(path, line, index, item) for index, (line, item) in enumerate(items)]
        tasks: dict[str, dict[str, Any]] = {}
        for rec in parsed:
            if rec.task is not None:
                tasks.setdefault(rec.task_id, rec.task)
        if domain is None:
            domain = infer_domain(t for rec in parsed for t in rec.tool_names())
            if domain is None:
                raise ImportFormatError(
                    path, None, "cannot tell the domain from the tool names; pass --domain airline or --domain retail"
                )
        seen: dict[tuple[str, int], int] = {}
        runs = []
        for rec in parsed:
            key = (rec.task_id, rec.trial)
            if key in seen:
                raise rec.error(f"task_id {rec.task_id} trial {rec.trial} already occurs in record {seen[key]}")
            seen[key] = rec.index
            task = rec.task if rec.task is not None else tasks.get(rec.task_id)
            if task is None:
                raise rec.error(
                    f"no task definition (info.task) for task_id {rec.task_id}, here or in another trial of it"
                )
            runs.append(rec.to_run(os.path.basename(path), domain, model, task))
        return runs


IMPORTER = TauBenchImporter()


class _Record:
    """One result record, checked, with what is needed to build its run."""

    def __init__(self, path: str, line: int, index: int):
        self.path, self.line, self.index = path, line, index
        self.task_id = ""
        self.trial = 0
        self.reward = 0.0
        self.info: dict[str, Any] = {}
        self.traj: list[Any] = []
        self.task: dict[str, Any] | None = None
        self.transcript: Any = None

    def error(self, message: str) -> ImportFormatError:
        ids = f" (task_id {self.task_id}, trial {self.trial})" if self.task_id != "" else ""
        return ImportFormatError(self.path, self.line, f"record {self.index}{ids}: {message}")

    @classmethod
    def parse(cls, path: str, line: int, index: int, item: Any) -> _Record:
        rec = cls(path, line, index)
        if not isinstance(item, dict):
            raise rec.error("not an object {task_id, trial, reward, info, traj}")
        rec.task_id = chat.task_id_of(item.get("task_id"), rec.error)  # set first: a bad trial's error names the task
        rec.trial = chat.trial_of(item.get("trial", 0), rec.error)
        reward = item.get("reward")
        try:
            finite = not isinstance(reward, bool) and isinstance(reward, (int, float)) and math.isfinite(float(reward))
        except OverflowError:
            finite = False
        if not finite:
            raise rec.error("reward must be a finite number")
        rec.reward = float(reward)
        info = item.get("info") or {}
        if not isinstance(info, dict):
            raise rec.error("info must be an object")
        rec.info = info
        traj = item.get("traj") or []
        if not isinstance(traj, list):
            raise rec.error("traj must be a list of chat messages")
        rec.traj = traj
        if info.get("task") is not None:
            rec.task = rec._parse_task(info["task"])
        reward_info = info.get("reward_info")
        if reward_info is not None and not isinstance(reward_info, dict):
            raise rec.error("info.reward_info must be an object or null")
        try:
            rec.transcript = convert_messages(react_to_tool_calls(traj), _tool_error, missing_result_is_error=True)
        except MessageError as exc:
            raise rec.error(f"traj {exc}") from None
        return rec

    def _parse_task(self, task: Any) -> dict[str, Any]:
        if not isinstance(task, dict):
            raise self.error("info.task must be an object")
        actions = task.get("actions") or []
        if not isinstance(actions, list):
            raise self.error("info.task.actions must be a list")
        gold = []
        for ai, action in enumerate(actions):
            where = f"info.task.actions[{ai}]"
            if not isinstance(action, dict) or not isinstance(action.get("name"), str):
                raise self.error(f"{where} needs a name")
            # Older task files say `arguments` where current ones say `kwargs`.
            raw = action["kwargs"] if "kwargs" in action else action.get("arguments", {})
            try:
                args = parse_arguments(raw, where)
            except MessageError as exc:
                raise self.error(str(exc)) from None
            if action["name"] != RESPOND:
                gold.append({"tool": action["name"], "args": args})
        outputs = task.get("outputs") or []
        if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
            raise self.error("info.task.outputs must be a list of strings")
        instruction = task.get("instruction")
        return {
            "user_id": task.get("user_id"),
            "instruction": instruction if isinstance(instruction, str) else None,
            "outputs": outputs,
            "gold": gold,
        }

    def tool_names(self) -> list[str]:
        names = [e["name"] for e in self.transcript.events if e["type"] == "tool_call"]
        if self.task is not None:
            names += [g["tool"] for g in self.task["gold"]]
        return names

    # -- building the run ------------------------------------------------------------------

    def to_run(self, source: str, domain: str, model: str, task: dict[str, Any]) -> list[dict[str, Any]]:
        scenario = build_scenario(domain, self.task_id, task)
        surface = set(DOMAINS.get(domain, {}).get("writes", ())) | set(DOMAINS.get(domain, {}).get("reads", ()))
        surface |= {g["tool"] for g in task["gold"]}
        for event in self.transcript.events:
            # tau-bench answers a call of a tool it does not have with "Unknown action <name>".
            if event["type"] == "tool_call" and not str(event["result"] or "").startswith("Unknown action"):
                surface.add(event["name"])
        meta = chat.meta_record(
            run_id=f"tau-{domain}-{self.task_id}:{model}:trial{self.trial}",
            ts_utc=None,  # tau-bench records no time per run
            scenario=scenario,
            scenario_path=f"{source}#{self.index}",
            adapter={"provider": chat.provider_of(model), "model": model, "harness": "tau-bench"},
            instructions_profile=chat.instructions_profile(f"tau-bench/{domain}", self.transcript),
            tool_surface=sorted(surface),
            importer=FORMAT_VERSION,
        )
        return [meta, chat.setup_record(), *self.transcript.events, self._final(task)]

    def _final(self, task: dict[str, Any]) -> dict[str, Any]:
        reward_info = self.info.get("reward_info")
        success = is_success(self.reward)
        checks = _checks(task, reward_info, success)
        payload: dict[str, Any] = {"reward": self.reward}
        if self.info.get("error") is not None:
            reason = "harness_error"
            payload["error"] = str(self.info["error"])[:500]
        elif reward_info is None:
            reason = "budget_tool_calls"
        else:
            reason = "agent_done"
            payload["ended_by"] = self._ended_by()
            payload["reward_info"] = reward_info.get("info")
        return chat.final_record(reason, {"tau_bench": payload}, self.transcript, chat.success_eval(checks, success))

    def _ended_by(self) -> str:
        events = self.transcript.events
        last = events[-1] if events else None
        if last is not None and last["type"] == "tool_call":
            return last["name"]
        if last is not None and last["type"] == "nudge" and "###STOP###" in (last["text"] or ""):
            return "user_stop"
        return "unknown"


REACT_OUTPUT = "API output: "


def _react_action(message: Any) -> dict[str, Any] | None:
    """The tool action of a ReAct/Act assistant message (``...Action:\n{"name", "arguments"}``), parsed
    the way tau-bench's ChatReActAgent does; None for a reply (``respond``) or unparsable text."""
    if not isinstance(message, dict) or message.get("role") != "assistant" or message.get("tool_calls"):
        return None
    content = message.get("content")
    if not isinstance(content, str) or "Action:" not in content:
        return None
    try:
        action = safe_json.loads(content.split("Action:")[-1].strip())
    except JSONProblem:
        return None  # tau-bench sends such text to the user as a reply
    if not isinstance(action, dict) or not isinstance(action.get("name"), str) or action["name"] == RESPOND:
        return None
    return action if isinstance(action.get("arguments"), dict) else None


def react_to_tool_calls(traj: list[Any]) -> list[Any]:
    """Rewrite the ``act``/``react`` strategies' transcripts into tool-calling form.

    Those agents write their action as JSON after ``Action:`` in the text and get the tool's output
    back as a user message ``API output: ...``. Each such action becomes a tool call (id
    ``react-<message index>``) and its ``API output`` the tool message answering it, so their tool
    use is scored like the tool-calling agent's. Tool-calling transcripts pass through unchanged.
    """
    out: list[Any] = []
    waiting: tuple[str, str] | None = None
    for mi, message in enumerate(traj):
        content = message.get("content") if isinstance(message, dict) else None
        if (
            waiting
            and isinstance(message, dict)
            and message.get("role") == "user"
            and isinstance(content, str)
            and content.startswith(REACT_OUTPUT)
        ):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": waiting[0],
                    "name": waiting[1],
                    "content": content[len(REACT_OUTPUT) :],
                }
            )
            waiting = None
            continue
        waiting = None
        action = _react_action(message)
        if action is None:
            out.append(message)
            continue
        call_id = f"react-{mi}"
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": action["name"], "arguments": action["arguments"]},
        }
        out.append(dict(message, tool_calls=[call]))
        waiting = (call_id, action["name"])
    return out


def _tool_error(message: dict[str, Any], result: Any) -> bool:
    # tau-bench turns a failed tool into the text "Error: ..." and an unknown one into "Unknown action ...".
    return isinstance(result, str) and result.startswith(("Error:", "Unknown action"))


DATA_HASH_CHECK = {"var": "tau_bench.data_hash", "op": "==", "value": "hash after replaying the gold actions"}
OUTPUT_VAR, OUTPUT_OP = "tau_bench.output", "in_reply"


def build_scenario(domain: str, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
    """The scenario of one task: the same for every trial (it depends on the task only)."""
    gold = task["gold"]
    commands = sorted(
        set(DOMAINS.get(domain, {}).get("writes", ())) | {g["tool"] for g in gold if is_write(g["tool"], domain)}
    )
    required = [
        dict(g, rationale=f"tau-bench gold action {i}") for i, g in enumerate(gold) if is_write(g["tool"], domain)
    ]
    procedure = [{"block": "gold_actions", "ordered": False, "actions": required}] if required else []
    return {
        "id": f"tau-{domain}-{task_id}",
        "title": f"tau-bench {domain} task {task_id}",
        "task_prompt": task["instruction"],
        "ground_truth": {
            "source": "tau-bench task actions that change the database",
            "procedure": procedure,
            "optional_actions": [],
            "forbidden_actions": [],
        },
        "success": {
            "final_state": [dict(DATA_HASH_CHECK)]
            + [{"var": OUTPUT_VAR, "op": OUTPUT_OP, "value": o} for o in task["outputs"]],
            "ecam_clear_of": [],
        },
        "budget": {"max_tool_calls": None, "max_sim_time_s": None},
        "command_tools": commands,
        "tau_bench": {
            "domain": domain,
            "task_id": task_id,
            "user_id": task["user_id"],
            "outputs": task["outputs"],
            "gold_actions": gold,
        },
    }


def _checks(task: dict[str, Any], reward_info: dict[str, Any] | None, success: bool) -> list[dict[str, Any]]:
    """tau-bench's reward checks with their outcome.

    The data-hash outcome is ``r_actions`` when tau-bench reports it. Output-based tasks report only
    the outputs, so the hash passed iff the reward is 1 (a failed output hides it: counted as not
    passed). With ``reward_info: null`` tau-bench evaluated nothing: every check is not passed.
    """
    info = (reward_info or {}).get("info") or {}
    if reward_info is None:
        hash_passed = False
    elif "r_actions" in info:
        hash_passed = bool(info["r_actions"])
    else:
        hash_passed = success
    found = info.get("outputs") if isinstance(info.get("outputs"), dict) else None
    checks = [dict(DATA_HASH_CHECK, passed=hash_passed)]
    for output in task["outputs"]:
        if reward_info is None:
            passed = False
        elif found is not None and output in found:
            passed = bool(found[output])
        else:
            passed = success
        checks.append({"var": OUTPUT_VAR, "op": OUTPUT_OP, "value": output, "passed": passed})
    return checks
