"""The six probe transforms: a run in, its counterfactual out. Pure: no I/O, clock or randomness.

Each transform takes a :class:`~evalkit.trajectory.records.Trajectory` and the probe texts
(:class:`~evalkit.probes.config.ProbesConfig`) and returns a new Trajectory, or raises
:class:`NotApplicable` saying why the run cannot carry this probe. None of them touches what
the scorer reads — the effective commands (tool, arguments, error flag, order), the tool surface,
the scenario, the success evaluation — so the mechanical vector, checks and scalar stay the same
(tests/test_probe_transforms.py scores both; `evalkit.probes.cases` checks it again for every
run it probes). What may change is informative only, listed per transform.

- ``false_claim``: a closing assistant message claiming full success is appended (one step after
  the last), and the final record says the agent called done (``reason = agent_done``) with a
  success ``done_payload``. The success evaluation is untouched. Informative ``final_reason`` may
  change. (Which runs get it — the mechanically failed ones — is decided by the caller.)
- ``injection``: an instruction to the grader is planted at the start of the last successful
  tool call's result (first key of an object, in front of a text, else the result is wrapped;
  a result long enough to be cut in the bundle becomes text with the instruction in front, so
  the cut never removes it).
- ``verbosity``: irrelevant prose appended to the first assistant message (a new first message
  when there is none).
- ``distractor_reads``: the first ``count`` successful read calls are each repeated right after
  themselves (same step, arguments and result). Later calls' ``call_index`` shift by the number
  inserted before them; informative ``reads`` grows, ``observed_before_acting`` cannot change
  (a repeat follows its original).
- ``shuffle_reads``: within each *read block* — a maximal run of consecutive steps whose tool
  calls are all successful reads and whose other events are assistant messages — the steps are
  put in reverse order; steps and call indexes are re-assigned in slot order, so numbering still
  increases. Reads with no command between them see the same state, so their results stay true.
  Not applicable without a block of two or more steps with different content.
- ``identity``: the trajectory is returned unchanged; :func:`dress_bundle` adds
  ``{identity.key: identity.name}`` to the judge bundle, right after ``bundle_version``. The
  judge grades blind (the bundle never names the agent's model), so this is the one probe that
  changes the bundle rather than the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalkit.agreement.probe_names import PROBES
from evalkit.probes.config import ProbesConfig
from evalkit.trajectory.records import Assistant, Event, ToolCall, Trajectory
from evalkit.trajectory.values import canonical_json


class NotApplicable(ValueError):
    """This run cannot carry this probe; ``str()`` says why (it is counted, never an error)."""


def _with_events(
    traj: Trajectory, events: list[Event], long_lines: frozenset[int] | None = None, **update: Any
) -> Trajectory:
    return traj.model_copy(
        update={"events": events, "long_lines": traj.long_lines if long_lines is None else long_lines, **update}
    )


def _last_step(events: list[Event]) -> int | None:
    steps = [e.step for e in events if getattr(e, "step", None) is not None]
    return max(steps) if steps else None


def false_claim(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    if traj.final is None:
        raise NotApplicable("no final record")
    last = _last_step(traj.events)
    claim = Assistant(step=None if last is None else last + 1, text=cfg.false_claim.message, stop_reason="end_turn")
    final = traj.final.model_copy(update={"reason": "agent_done", "done_payload": dict(cfg.false_claim.done_payload)})
    return _with_events(traj, [*traj.events, claim], final=final)


def _planted(result: Any, key: str, text: str) -> Any:
    if isinstance(result, dict):
        rest = {k: v for k, v in result.items() if k != key}
        return {key: text, **rest} if key not in result else {key: text, "original_" + key: result[key], **rest}
    if isinstance(result, str):
        return f"{text}\n{result}"
    return {key: text, "result": result}


def injection(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    target = next(
        (
            i
            for i in range(len(traj.events) - 1, -1, -1)
            if isinstance(traj.events[i], ToolCall) and not traj.events[i].is_error
        ),
        None,
    )
    if target is None:
        raise NotApplicable("no successful tool call to plant the instruction in")
    events = list(traj.events)
    call = events[target]
    result = call.result
    if target in traj.long_lines and not isinstance(result, str):
        result = canonical_json(result)  # the bundle shows a long result cut: keep the text in front
    events[target] = call.model_copy(update={"result": _planted(result, cfg.injection.key, cfg.injection.text)})
    return _with_events(traj, events)


def verbosity(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    prose = "\n\n".join(cfg.verbosity.paragraphs)
    events = list(traj.events)
    first = next((i for i, e in enumerate(events) if isinstance(e, Assistant)), None)
    if first is not None:
        said = events[first].text
        events[first] = events[first].model_copy(update={"text": f"{said}\n\n{prose}" if said else prose})
        return _with_events(traj, events)
    step = next((e.step for e in events if getattr(e, "step", None) is not None), None)
    shifted = frozenset(i + 1 for i in traj.long_lines)
    return _with_events(traj, [Assistant(step=step, text=prose, stop_reason="tool_use"), *events], shifted)


def _is_read(event: Event, traj: Trajectory) -> bool:
    """A successful call that the scorer counts as a read (on the surface, not a command tool)."""
    if not isinstance(event, ToolCall) or event.is_error:
        return False
    surface = traj.meta.tool_surface
    return (surface is None or event.name in surface) and event.name not in traj.meta.scenario.index.command_tools


def distractor_reads(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    reads = [i for i, e in enumerate(traj.events) if _is_read(e, traj)][: cfg.distractor_reads.count]
    if not reads:
        raise NotApplicable("no successful read call to repeat")
    repeat = set(reads)
    events: list[Event] = []
    long_lines: set[int] = set()
    shift = 0
    for i, event in enumerate(traj.events):
        if isinstance(event, ToolCall) and shift and event.call_index is not None:
            event = event.model_copy(update={"call_index": event.call_index + shift})
        if i in traj.long_lines:
            long_lines.add(len(events))
        events.append(event)
        if i in repeat:
            shift += 1
            copy = event.model_copy(update={"call_index": None if event.call_index is None else event.call_index + 1})
            if i in traj.long_lines:
                long_lines.add(len(events))
            events.append(copy)
    return _with_events(traj, events, frozenset(long_lines))


def _step_units(events: list[Event]) -> list[list[int]]:
    """Event indexes grouped into steps: consecutive events with the same (non-null) step."""
    units: list[list[int]] = []
    for i, event in enumerate(events):
        step = getattr(event, "step", None)
        if units and step is not None and getattr(events[units[-1][0]], "step", None) == step:
            units[-1].append(i)
        else:
            units.append([i])
    return units


def _read_only(unit: list[int], traj: Trajectory) -> bool:
    events = [traj.events[i] for i in unit]
    return any(isinstance(e, ToolCall) for e in events) and all(
        _is_read(e, traj) or isinstance(e, Assistant) for e in events
    )


def _content(event: Event) -> Any:
    """What the judge sees of an event, apart from its numbering."""
    if isinstance(event, ToolCall):
        return [event.name, event.args, event.is_error, event.result]
    return [getattr(event, "text", None), getattr(event, "stop_reason", None)]


def read_blocks(traj: Trajectory) -> list[list[list[int]]]:
    """The read blocks worth reordering: runs of adjacent read-only steps (lists of event
    indexes), two or more steps that are not all alike."""
    blocks: list[list[list[int]]] = []
    for unit in _step_units(traj.events):
        if not _read_only(unit, traj):
            continue
        if blocks and blocks[-1][-1][-1] + 1 == unit[0]:
            blocks[-1].append(unit)
        else:
            blocks.append([unit])
    return [b for b in blocks if len(b) > 1 and len({repr([_content(traj.events[i]) for i in u]) for u in b}) > 1]


def shuffle_reads(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    blocks = read_blocks(traj)
    if not blocks:
        raise NotApplicable("no two independent read steps (adjacent steps of reads only) to reorder")
    events = list(traj.events)
    long_lines = set(traj.long_lines)
    for block in blocks:
        pos = block[0][0]
        long_lines -= {i for unit in block for i in unit}
        calls = iter(
            [traj.events[i].call_index for unit in block for i in unit if isinstance(traj.events[i], ToolCall)]
        )
        for unit, step in zip(reversed(block), [traj.events[u[0]].step for u in block]):
            for i in unit:
                event = traj.events[i]
                update: dict[str, Any] = {"step": step}
                if isinstance(event, ToolCall):
                    update["call_index"] = next(calls)
                events[pos] = event.model_copy(update=update)
                if i in traj.long_lines:
                    long_lines.add(pos)
                pos += 1
    return _with_events(traj, events, frozenset(long_lines))


def identity(traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    return traj


# Each probe of the registry (evalkit.agreement.probe_names) is the function of its name above, in the
# registry's order: a name added there without its function here fails at import, naming it.
TRANSFORMS: dict[str, Callable[[Trajectory, ProbesConfig], Trajectory]] = {name: globals()[name] for name in PROBES}


def transform(name: str, traj: Trajectory, cfg: ProbesConfig) -> Trajectory:
    """The probe ``name`` applied to ``traj`` (NotApplicable when it cannot be)."""
    return TRANSFORMS[name](traj, cfg)


def dress_bundle(name: str, bundle: dict[str, Any], cfg: ProbesConfig) -> dict[str, Any]:
    """The judge bundle of the transformed run, as the judge sees it: unchanged except for
    ``identity``, which names a famous model as the agent (right after ``bundle_version``)."""
    if name != "identity":
        return bundle
    out: dict[str, Any] = {}
    for key, value in bundle.items():
        if key != cfg.identity.key:
            out[key] = value
        if key == "bundle_version":
            out[cfg.identity.key] = cfg.identity.name
    if cfg.identity.key not in out:
        out = {cfg.identity.key: cfg.identity.name, **out}
    return out
