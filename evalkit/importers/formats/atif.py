"""ATIF trajectories (Harbor's Agent Trajectory Interchange Format, RFC 0001, v1.0-1.7) → evalkit runs.

One JSON document ``{schema_version, session_id, agent {name, version, model_name}, steps[],
final_metrics, subagent_trajectories?}``; each trajectory is a run, and each embedded subagent
trajectory (``subagent_trajectories``) a run of its own. See docs/importers.md for the mapping; in
short:

* ``system`` steps are instructions (their hash is the instructions profile), ``user`` steps
  ``nudge`` records, ``agent`` steps an ``assistant`` record and their ``tool_calls`` (in order,
  ``arguments`` an object, or JSON text of one) ``tool_call`` records. Steps marked
  ``is_copied_context`` were copied from an earlier trajectory: not this run's work, left out.
* ``observation.results[]`` answer the call named by ``source_call_id``; a result without one is
  the result of its step's only call, and in a step of several calls (terminus-2 sends a batch of
  keystrokes and reads the terminal once) the text the agent was shown, a ``nudge``. A result with
  ``is_error: true`` is an errored call.
* An agent step without calls that the runtime answered ``Previous response had parsing errors``
  (terminus-2's refusal of a reply it could not parse) is a rejected reply, not a call.
* The model: the first agent step's ``model_name``, else ``agent.model_name``, else ``--model``.
* Harbor's trial ``result.json`` beside the file (same directory, or the trial directory above
  ``agent/``; or ``<name>.result.json`` for ``<name>.trajectory.json``): each
  ``verifier_result.rewards`` entry is an end-state check passed at 1; ``exception_info`` is the
  final reason (a timeout ``budget_time``, else ``harness_error``). Without one the run has no end
  state (``incomplete``).
"""

from __future__ import annotations

import os
from typing import Any

from evalkit.importers import ImportFormatError, RunList
from evalkit.importers.formats import agent_log
from evalkit.importers.formats.agent_log import Log
from evalkit.importers.jsonlist import read_text

FORMAT_VERSION = "atif/1"
PARSE_ERROR = "Previous response had parsing errors"  # terminus-2: the reply was not run


class AtifImporter:
    name = "atif"
    summary = "ATIF trajectories (Harbor, Terminal-Bench; RFC 0001), with Harbor's result.json beside them"
    cli_options = agent_log.OPTIONS

    def convert(
        self, path: str, model: str | None = None, scenarios: str | None = None, scenario: str | None = None
    ) -> list[list[dict[str, Any]]]:
        doc = agent_log.load_json(path, read_text(path))
        if not is_atif(doc):
            if isinstance(doc, dict) and ("verifier_result" in doc or "trial_name" in doc):
                raise ImportFormatError(
                    path,
                    1,
                    "Harbor's trial result, not an ATIF trajectory: give the trajectory "
                    "(agent/trajectory.json, or NAME.trajectory.json); its result.json beside it is read with it",
                )
            raise ImportFormatError(
                path, 1, "not an ATIF trajectory: needs schema_version, session_id, agent and steps (a list)"
            )
        chosen = agent_log.Scenarios(path, scenarios, scenario)
        trial = _harbor_result(path)
        runs = RunList()
        seen: set[str] = set()
        todo: list[tuple[dict[str, Any], str, str, dict[str, Any] | None]] = [(doc, "", "", trial)]
        while todo:  # the trajectory, then its subagents depth first
            traj, prefix, where, result = todo.pop(0)
            session = traj.get("session_id")
            if not isinstance(session, str) or not session:
                raise ImportFormatError(path, None, f"{where or 'trajectory'}: session_id must be a non-empty string")
            run_id = f"{prefix}{session}" if prefix else f"atif:{session}"
            if isinstance(traj.get("trajectory_id"), str) and traj["trajectory_id"]:
                run_id += f":{traj['trajectory_id']}"
            if run_id in seen:
                raise ImportFormatError(path, None, f"{where or 'trajectory'}: run_id {run_id!r} occurs twice")
            seen.add(run_id)
            runs.append(_Trajectory(path, traj, where).to_run(run_id, model, chosen, result))
            subs = traj.get("subagent_trajectories") or []
            if not isinstance(subs, list):
                raise ImportFormatError(path, None, f"{where or 'trajectory'}: subagent_trajectories must be a list")
            for si, sub in enumerate(subs):
                here = f"{where}subagent_trajectories[{si}]"
                if not is_atif(sub, root=False):
                    raise ImportFormatError(path, None, f"{here}: not an ATIF trajectory (session_id, agent, steps)")
                todo.insert(si, (sub, f"{run_id}/", here + ".", None))
        return runs


IMPORTER = AtifImporter()


def is_atif(doc: Any, root: bool = True) -> bool:
    """Whether ``doc`` is shaped like an ATIF trajectory (a root one names its schema version)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list) or not isinstance(doc.get("agent"), dict):
        return False
    version = doc.get("schema_version")
    return not root or (isinstance(version, str) and version.upper().startswith("ATIF"))


def _harbor_result(path: str) -> dict[str, Any] | None:
    """Harbor's trial result.json for the trajectory at ``path``, when there is one beside it."""
    folder, name = os.path.split(os.path.abspath(path))
    candidates = []
    for suffix in (".trajectory.json", ".json"):
        if name.endswith(suffix):
            candidates.append(os.path.join(folder, name[: -len(suffix)] + ".result.json"))
            break
    candidates.append(os.path.join(folder, "result.json"))
    if os.path.basename(folder) == "agent":  # a Harbor trial: TRIAL/agent/trajectory.json, TRIAL/result.json
        candidates.append(os.path.join(os.path.dirname(folder), "result.json"))
    for candidate in candidates:
        if candidate != os.path.abspath(path) and os.path.isfile(candidate):
            doc = agent_log.load_json(candidate, read_text(candidate))
            if isinstance(doc, dict) and ("verifier_result" in doc or "exception_info" in doc):
                return doc
    return None


def _rewards(result: dict[str, Any] | None, path: str) -> dict[str, float] | None:
    verifier = result.get("verifier_result") if result else None
    rewards = verifier.get("rewards") if isinstance(verifier, dict) else None
    if not isinstance(rewards, dict) or not rewards:
        return None
    out = {}
    for name, value in rewards.items():
        reward = agent_log.number(value)
        if reward is None:
            raise ImportFormatError(path, None, f"result.json: verifier_result.rewards.{name} must be a finite number")
        out[str(name)] = reward
    return out


class _Trajectory:
    def __init__(self, path: str, traj: dict[str, Any], where: str):
        self.path, self.traj, self.where = path, traj, where
        self.log = Log()
        self.copied = 0
        self.model: str | None = None
        for si, step in enumerate(traj["steps"]):
            self._step(si, step)

    def fail(self, message: str) -> ImportFormatError:
        return ImportFormatError(self.path, None, f"{self.where}{message}")

    def _step(self, si: int, step: Any) -> None:
        what = f"steps[{si}]"
        if not isinstance(step, dict):
            raise self.fail(f"{what} is not an object")
        if step.get("is_copied_context") is True:
            self.copied += 1
            return
        source = step.get("source")
        text = agent_log.text_of(step.get("message"))
        log = self.log
        if source == "system":
            log.system(text)
            return
        if source == "user":
            log.user(text)
            return
        if source != "agent":
            raise self.fail(f"{what}.source must be system, user or agent, not {source!r}")
        if self.model is None and isinstance(step.get("model_name"), str):
            self.model = step["model_name"]
        calls = step.get("tool_calls") or []
        if not isinstance(calls, list):
            raise self.fail(f"{what}.tool_calls must be a list")
        results = self._results(step, what)
        answers = [_content(r.get("content")) for r in results]
        refused = any(isinstance(a, str) and a.startswith(PARSE_ERROR) for a in answers)
        if not calls and refused:
            log.reject(text, "\n".join(a for a in answers if isinstance(a, str)))
            return
        log.turn(text, stop_reason="tool_use" if calls else "end_turn")
        by_id: dict[str, dict[str, Any]] = {}
        records = []
        for ci, call in enumerate(calls):
            name = call.get("function_name") if isinstance(call, dict) else None
            if not isinstance(name, str) or not name:
                raise self.fail(f"{what}.tool_calls[{ci}] needs a function_name")
            record = log.call(name, agent_log.arguments(call.get("arguments"), "arguments"))
            records.append(record)
            if isinstance(call.get("tool_call_id"), str):
                by_id[call["tool_call_id"]] = record
        shown = []
        for result in results:
            content = _content(result.get("content"))
            refs = result.get("subagent_trajectory_ref")
            if content is None and refs is not None:
                content = {"subagent_trajectory_ref": refs}
            target = by_id.get(result.get("source_call_id")) if result.get("source_call_id") is not None else None
            if target is None and result.get("source_call_id") is None and len(records) == 1:
                target = records[0]
            if target is None or target["result"] is not None:
                shown.append(content if isinstance(content, str) else agent_log.text_of(content))
                continue
            target["result"] = content
            target["is_error"] = result.get("is_error") is True
        if shown:
            log.user("\n".join(s for s in shown if s))

    def _results(self, step: dict[str, Any], what: str) -> list[dict[str, Any]]:
        observation = step.get("observation")
        if observation is None:
            return []
        results = observation.get("results") if isinstance(observation, dict) else None
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise self.fail(f"{what}.observation.results must be a list of objects")
        return results

    def to_run(
        self, run_id: str, given_model: str | None, chosen: agent_log.Scenarios, result: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        agent = self.traj["agent"]
        model = agent_log.model_of(
            self.path, self.model or agent.get("model_name"), given_model, f"{self.where}agent.model_name"
        )
        rewards = _rewards(result, self.path)
        checks = agent_log.reward_checks("harbor", rewards) if rewards is not None else None
        name = agent.get("name") if isinstance(agent.get("name"), str) else "agent"
        task = result.get("task_name") if result and isinstance(result.get("task_name"), str) else None
        prompt = next((e["text"] for e in self.log.events if e["type"] == "nudge" and e["text"]), None)
        task_id = f"atif/{task}" if task else f"atif/{name}"
        scenario = chosen.for_run(task_id, f"ATIF {task or name}", prompt, checks)
        exception = result.get("exception_info") if result else None
        reason = "agent_done"
        if isinstance(exception, dict):
            kind = str(exception.get("exception_type") or "")
            reason = "budget_time" if "Timeout" in kind else "harness_error"
        payload = {
            "atif": {
                "schema_version": self.traj.get("schema_version"),
                "session_id": self.traj.get("session_id"),
                "agent": {k: agent.get(k) for k in ("name", "version") if k in agent},
                "final_metrics": self.traj.get("final_metrics"),
                "copied_steps": self.copied,
                "rewards": rewards,
                "exception": exception,
                "trial_name": result.get("trial_name") if result else None,
            }
        }
        first = next((s.get("timestamp") for s in self.traj["steps"] if isinstance(s, dict)), None)
        return agent_log.build(
            log=self.log,
            run_id=run_id,
            source=os.path.basename(self.path) + (f"#{self.where.rstrip('.')}" if self.where else ""),
            model=model,
            harness=f"atif/{name}",
            importer=FORMAT_VERSION,
            scenario=scenario,
            tool_surface=_tool_surface(agent),
            reason=reason,
            payload=payload,
            checks=checks,
            ts_utc=first if isinstance(first, str) else None,
        )


def _content(content: Any) -> Any:
    """A result's content: text, or (ATIF v1.6) ContentParts; parts that are all text are that text,
    joined, as a string result is (an approval's answer is read from it), others kept as recorded."""
    if (
        isinstance(content, list)
        and content
        and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
    ):
        return "".join(p["text"] for p in content)
    return content


def _tool_surface(agent: dict[str, Any]) -> set[str]:
    """The tools ``agent.tool_definitions`` offers (OpenAI tool specs or bare names)."""
    names = set()
    for spec in agent.get("tool_definitions") or []:
        fn = spec.get("function") if isinstance(spec, dict) and isinstance(spec.get("function"), dict) else spec
        name = fn.get("name") if isinstance(fn, dict) else fn
        if isinstance(name, str) and name:
            names.add(name)
    return names
