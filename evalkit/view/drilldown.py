"""One run, explained: its transcript with each command's class, the ground truth as a checklist,
why its status is what it is, and the transcript steps a judge's rationale cites.

Pure functions of the stored ScoreCard JSON (``scorecards.card``) and judge bundle
(``bundles.bundle``): the view's run page (:mod:`evalkit.view.app`) and the static report's
drill-down both show what these return, so the two never disagree.

The classes are the card's own (whatever class, subtype and severity the scorer wrote); the
checklist is derived from them, never by scoring again:

- each required action of a block takes, in ground-truth order, the first of the commands the
  scorer assigned to that block (their ``block``; an unapproved call keeps its block) that has the
  same control and value (the cockpit form) or the same tool and arguments, else the same tool
  (argument rules can match unequal arguments); a required action left without one is
  **missing**. The number missing per block is exact; for a block with two actions of one tool
  under loose argument rules, which of them is named missing can differ from the scorer's own
  pairing.
- an optional or forbidden action lists the commands of its class that have its control and value,
  or its tool (and its arguments, when it has some);
- each end-state check is the harness's success evaluation as recorded (``final.success_eval``).
"""

from __future__ import annotations

import re
from typing import Any

from evalkit.trajectory.values import canonical_json

# Tool calls the scorer did not classify: what they are, from the card and the bundle alone.
READ = "read"
ERRORED = "errored"  # an errored command or read: counted, never scored
OFF_SURFACE = "off_surface"
COMMAND_CLASSES = ("matched_required", "optional", "forbidden", "extraneous")

STATUS_REASONS = {
    "scored": "scored: the run finished and the harness evaluated its end state",
    "incomplete": "incomplete: the trajectory has no final record, or its final record has no success evaluation, "
    "so the end state is unknown",
    "provider_error": "provider_error: the model provider failed during the run (final reason or an error event)",
    "invalid_scenario": "invalid_scenario: the harness reported the scenario invalid, or its validity gate failed",
}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _same_args(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


def command_label(cmd: dict[str, Any]) -> str:
    """``matched_required``, ``forbidden (dangerous)``, ``extraneous (repeat_of_required)``: the
    class with whatever subtype or severity the card carries."""
    extra = [str(x) for x in (cmd.get("severity"), cmd.get("subtype")) if x]
    return str(cmd.get("class") or "?") + (f" ({', '.join(extra)})" if extra else "")


def transcript(card: dict[str, Any], bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The bundle's transcript in order; each tool call carries ``command`` (its card row, or None)
    and ``label`` (the command's class, else read / errored / off_surface)."""
    commands = [c for c in _list(card.get("commands")) if isinstance(c, dict)]
    surface = bundle.get("tool_surface")
    surface = set(surface) if isinstance(surface, list) else None
    out = []
    pos = 0
    for i, entry in enumerate(_list(bundle.get("transcript"))):
        e = dict(_dict(entry))
        e["position"] = i
        if e.get("kind") == "tool_call":
            cmd = commands[pos] if pos < len(commands) else None
            # commands are the run's effective calls, in order: a subsequence of its tool calls
            if (
                cmd is not None
                and cmd.get("tool") == e.get("tool")
                and cmd.get("step") == e.get("step")
                and cmd.get("call_index") == e.get("call_index")
                and not e.get("is_error")
                and _same_args(cmd.get("args"), e.get("args"))
            ):
                e["command"], e["label"] = cmd, command_label(cmd)
                pos += 1
            else:
                e["command"] = None
                if surface is not None and e.get("tool") not in surface:
                    e["label"] = OFF_SURFACE
                elif e.get("is_error"):
                    e["label"] = ERRORED
                else:
                    e["label"] = READ
        out.append(e)
    return out


def _action_text(action: dict[str, Any]) -> str:
    if action.get("tool") is not None:
        args = action.get("args")
        return f"{action['tool']}({canonical_json(args) if args is not None else '*'})"
    return f"{action.get('control')} = {canonical_json(action.get('value'))}"


def _takes(action: dict[str, Any], cmd: dict[str, Any], loose: bool) -> bool:
    if action.get("tool") is None:
        return cmd.get("control") == action.get("control") and _same_args(cmd.get("value"), action.get("value"))
    if cmd.get("tool") != action.get("tool"):
        return False
    return loose or action.get("args") is None or _same_args(cmd.get("args"), action.get("args"))


def _ref(cmd: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": cmd.get("index"),
        "step": cmd.get("step"),
        "call_index": cmd.get("call_index"),
        "label": command_label(cmd),
    }


def checklist(card: dict[str, Any], bundle: dict[str, Any]) -> dict[str, Any]:
    """The ground truth as a checklist (see the module docstring): ``blocks`` (each required action
    with ``matched_by`` or ``missing``), ``optional``, ``forbidden``, ``end_state`` checks,
    ``missing`` (how many required actions no command took)."""
    gt = _dict(bundle.get("ground_truth"))
    commands = [c for c in _list(card.get("commands")) if isinstance(c, dict)]
    blocks = []
    missing = 0
    for block in _list(gt.get("procedure")):
        block = _dict(block)
        name = block.get("block")
        # every command the scorer assigned to a required action carries its block, whatever its class:
        # an unapproved call still took its required action (coverage counts it)
        free = [c for c in commands if c.get("block") is not None and c.get("block") == name]
        actions = [_dict(a) for a in _list(block.get("actions"))]
        taken: list[dict[str, Any] | None] = [None] * len(actions)
        for loose in (False, True):
            for i, action in enumerate(actions):
                if taken[i] is None:
                    hit = next((c for c in free if _takes(action, c, loose)), None)
                    if hit is not None:
                        taken[i] = hit
                        free.remove(hit)
        rows = []
        for action, cmd in zip(actions, taken):
            missing += cmd is None
            rows.append(
                {
                    "action": _action_text(action),
                    "rationale": action.get("rationale"),
                    "matched_by": None if cmd is None else _ref(cmd),
                    "missing": cmd is None,
                }
            )
        blocks.append({"block": name, "ordered": bool(block.get("ordered")), "actions": rows})

    def hits(action: dict[str, Any], classes: tuple[str, ...]) -> list[dict[str, Any]]:
        return [_ref(c) for c in commands if c.get("class") in classes and _takes(action, c, False)]

    optional = [
        {"action": _action_text(a), "rationale": a.get("rationale"), "done_by": hits(a, ("optional",))}
        for a in map(_dict, _list(gt.get("optional_actions")))
    ]
    forbidden = [
        {
            "action": _action_text(a),
            "rationale": a.get("rationale"),
            "severity": a.get("severity"),
            "hit_by": hits(a, ("forbidden",)),
        }
        for a in map(_dict, _list(gt.get("forbidden_actions")))
    ]
    # commands of a class the ground truth lists nowhere above (gated actions and the like)
    other = [_ref(c) for c in commands if c.get("class") not in COMMAND_CLASSES]
    return {
        "blocks": blocks,
        "optional": optional,
        "forbidden": forbidden,
        "other_commands": other,
        "missing": missing,
        "end_state": end_state(bundle),
    }


def _not_evaluated(why: str) -> dict[str, Any]:
    return {"evaluated": False, "why": why, "checks": [], "all_passed": None}


def end_state(bundle: dict[str, Any]) -> dict[str, Any]:
    """The success evaluation as recorded: each check with ``passed`` (None when not evaluated)."""
    final = bundle.get("final")
    if not isinstance(final, dict):
        return _not_evaluated("no final record: the run stopped before the harness wrote one")
    ev = final.get("success_eval")
    if not isinstance(ev, dict):
        return _not_evaluated("the final record has no success evaluation")
    checks = []
    for c in map(_dict, _list(ev.get("final_state"))):
        checks.append(
            {
                "check": f"{c.get('var')} {c.get('op')} {canonical_json(c.get('value'))}",
                "passed": c.get("passed") if isinstance(c.get("passed"), bool) else None,
            }
        )
    for c in _list(ev.get("ecam_clear_of")):
        c = c if isinstance(c, dict) else {"message": c}
        checks.append(
            {
                "check": f"clear of {c.get('message')}",
                "passed": c.get("clear") if isinstance(c.get("clear"), bool) else None,
            }
        )
    all_passed = ev.get("all_passed")
    return {
        "evaluated": True,
        "why": None,
        "checks": checks,
        "all_passed": all_passed if isinstance(all_passed, bool) else None,
    }


def status_reason(card: dict[str, Any], bundle: dict[str, Any]) -> list[str]:
    """Why the run's status is what it is, in sentences: the rule, then what this run shows."""
    status = str(card.get("status") or "")
    out = [STATUS_REASONS.get(status, f"{status}: a status this evalkit does not know")]
    info = _dict(card.get("informative"))
    final = bundle.get("final")
    if status == "incomplete":
        out.append("no final record" if not isinstance(final, dict) else "the final record has no success evaluation")
        if info.get("dropped_last_line"):
            out.append("the file's last line was cut off (a recorder that crashed mid-write) and was dropped")
    if isinstance(final, dict) and final.get("reason"):
        out.append(f"final reason: {final['reason']}")
    if status == "provider_error":
        errors = [e for e in _list(bundle.get("transcript")) if _dict(e).get("kind") == "provider_error"]
        if errors:
            out.append(f"{len(errors)} provider error event{'s' if len(errors) != 1 else ''} in the transcript")
    return out


# A step number has at most 9 digits: a longer run of digits cites nothing (int() of thousands of
# digits would raise, and no transcript has a billion steps).
_CITE = re.compile(r"\b(steps?)((?:\s*(?:,|and|&amp;|&|to|-|\u2013|through)?\s*\d{1,9}(?!\d))+)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<!\d)\d{1,9}(?!\d)")


def cited_steps(text: str) -> list[int]:
    """The step numbers a rationale cites (``step 4``, ``steps 2 and 3``, ``Steps 1-2``), in order."""
    seen: list[int] = []
    for m in _CITE.finditer(text or ""):
        for n in _NUMBER.findall(m.group(2)):
            if int(n) not in seen:
                seen.append(int(n))
    return seen


def link_citations(escaped: str, steps: set[int], href: str = "#step-{n}") -> str:
    """HTML of an already-escaped rationale with each cited step that exists turned into a link.
    Only digits and the fixed ``href`` pattern are inserted, so the text stays inert."""

    def numbers(m: re.Match) -> str:
        def one(n: re.Match) -> str:
            k = int(n.group(0))
            return f'<a href="{href.format(n=k)}">{k}</a>' if k in steps else n.group(0)

        return m.group(1) + _NUMBER.sub(one, m.group(2))

    return _CITE.sub(numbers, escaped)


def run_steps(entries: list[dict[str, Any]]) -> set[int]:
    return {e["step"] for e in entries if isinstance(e.get("step"), int) and not isinstance(e.get("step"), bool)}
