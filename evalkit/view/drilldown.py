"""One run, explained: its transcript with each command's class, the ground truth as a checklist,
why its status is what it is, and the transcript steps a judge's rationale cites.

Pure functions of the stored ScoreCard JSON (``scorecards.card``) and judge bundle
(``bundles.bundle``): the view's run page (:mod:`evalkit.view.app`) and the static report's
drill-down both show what these return, so the two never disagree.

Nothing here matches a command with an action: the classes are the card's own rows, and the
checklist is the card's ``matches`` (which command took each required action, which commands each
optional or forbidden action classified, which repeat a required action) and ``gated_calls``
(each gated command and the call that approved it). The rule column is the argument rule the
scorer applied to the action, resolved by its own precedence (``evalkit.scoring.args.resolve``).
A card scored before ``matches`` existed has no such record: its checklist lists the ground truth
and says so. Each end-state check is the harness's success evaluation as recorded
(``final.success_eval``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from evalkit.trajectory.records import unrecorded_calls
from evalkit.trajectory.values import canonical_json

# Tool calls the scorer did not classify: what they are, from the card and the bundle alone.
READ = "read"
ERRORED = "errored"  # an errored command or read: counted, never scored
OFF_SURFACE = "off_surface"

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
    """The bundle's transcript in order; each tool call carries ``command`` (its card row, or None),
    ``label`` (the command's class, else read / errored / off_surface) and ``approves`` (the gated
    commands whose approval it was, from the card's ``gated_calls``)."""
    commands = [c for c in _list(card.get("commands")) if isinstance(c, dict)]
    surface = _surface(bundle)
    approves: dict[int, list[int]] = {}
    for u in map(_dict, _list(card.get("gated_calls"))):
        if u.get("approved") and type(u.get("approval_position")) is int and type(u.get("index")) is int:
            approves.setdefault(u["approval_position"], []).append(u["index"])
    out = []
    pos = 0
    call = -1
    for i, entry in enumerate(_list(bundle.get("transcript"))):
        e = dict(_dict(entry))
        e["position"] = i
        if e.get("kind") == "tool_call":
            call += 1
            e["approves"] = approves.get(call, [])
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
                e["label"] = _unscored(e, surface) or READ
        out.append(e)
    return out


_SELECTION = {
    "exact": "exact: the same keys, every value equal",
    "contains": "contains: these keys equal, the call may have more",
    "within": "within: every key of the call is one of these, equal",
    "ignore": "ignore: any arguments",
}


def _levels(action: dict[str, Any], gt: dict[str, Any]) -> list[dict[str, Any]]:
    """The action's argument-rule levels as written, most specific first (the scorer's precedence)."""
    default = _dict(gt.get("args_match"))
    return [_dict(action.get("args_match")), _dict(_dict(default.get("tools")).get(action.get("tool"))), default]


def _compare_text(raw: Any) -> str:
    if isinstance(raw, dict) and len(raw) == 1:
        ((kind, param),) = raw.items()
        return f"{kind} {canonical_json(param)}"
    return str(raw) if isinstance(raw, str) else canonical_json(raw)


def _rule(expect: Any, action: dict[str, Any], gt: dict[str, Any]) -> dict[str, Any]:
    """The rule that applied to ``action`` (an ``evalkit.scoring.args.Expect``, or None when the
    ground truth could not be read): ``mode``, ``keys``, ``compare`` (key: comparison as written),
    ``any_args`` and ``text``."""
    if action.get("tool") is None:
        return {"mode": "exact", "keys": None, "compare": {}, "any_args": False, "text": "exact: control and value"}
    if expect is None:
        return {"mode": None, "keys": None, "compare": {}, "any_args": False, "text": "unknown (unreadable rule)"}
    if expect.any_args:
        return {"mode": None, "keys": None, "compare": {}, "any_args": True, "text": "any call of the tool"}
    rule = expect.rule
    levels = _levels(action, gt)
    compare = {}
    for key, _ in rule.compare:
        raw = next((_dict(lv.get("compare"))[key] for lv in levels if key in _dict(lv.get("compare"))), "exact")
        compare[key] = raw
    parts = [f"keys {', '.join(rule.keys) or '(none)'}" if rule.keys is not None else _SELECTION[rule.mode]]
    parts += [f"{k} {_compare_text(v)}" for k, v in compare.items()]
    return {
        "mode": rule.mode,
        "keys": list(rule.keys) if rule.keys is not None else None,
        "compare": compare,
        "any_args": False,
        "text": "; ".join(parts),
    }


def _shown_args(action: dict[str, Any], rule: dict[str, Any]) -> Any:
    """The action's arguments as its rule compares them: None for any arguments, only the compared
    keys under ``keys``, without the keys compared with ``ignore``."""
    if rule["any_args"] or rule["mode"] == "ignore":
        return None
    args = _dict(action.get("args"))
    if rule["keys"] is not None:
        tops = {k.split(".")[0] for k in rule["keys"]}
        args = {k: v for k, v in args.items() if k in tops or k in rule["keys"]}
    return {k: v for k, v in args.items() if rule["compare"].get(k) != "ignore"}


def _action_text(action: dict[str, Any], rule: dict[str, Any] | None = None) -> str:
    if action.get("tool") is not None:
        args = action.get("args") if rule is None else _shown_args(action, rule)
        return f"{action['tool']}({canonical_json(args) if args is not None else '*'})"
    return f"{action.get('control')} = {canonical_json(action.get('value'))}"


def _ref(cmd: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": cmd.get("index"),
        "step": cmd.get("step"),
        "call_index": cmd.get("call_index"),
        "tool": cmd.get("tool"),
        "label": command_label(cmd),
        "severity": cmd.get("severity"),
    }


def _catalog(gt: dict[str, Any]) -> Any:
    """The scorer's resolved rules for ``gt`` (``evalkit.scoring.args.Catalog``), None when the
    ground truth does not read as one (a hand-edited database)."""
    from evalkit.scoring.args import Catalog
    from evalkit.trajectory.scenario import GroundTruth

    try:
        truth = GroundTruth.model_validate({k: v for k, v in gt.items()})
        required = [(bi, ai, a) for bi, b in enumerate(truth.procedure) for ai, a in enumerate(b.actions)]
        return Catalog.of(_Scenario(truth, required))
    except Exception:  # noqa: BLE001 - any unreadable ground truth: the rule column says so
        return None


class _Scenario:
    """What ``Catalog.of`` reads of a scenario."""

    def __init__(self, ground_truth: Any, required: list[tuple[int, int, Any]]):
        self.ground_truth = ground_truth
        self._required = required

    def required(self) -> list[tuple[int, int, Any]]:
        return self._required


def _unscored_calls(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's tool calls the scorer counts and never scores: errored, or of a tool off the
    run's tool surface."""
    surface = _surface(bundle)
    out = []
    for e in map(_dict, _list(bundle.get("transcript"))):
        if e.get("kind") == "tool_call" and (label := _unscored(e, surface)):
            out.append(dict(e, label=label))
    return out


def _surface(bundle: dict[str, Any]) -> set | None:
    surface = bundle.get("tool_surface")
    return set(surface) if isinstance(surface, list) else None


def _unscored(call: dict[str, Any], surface: set | None) -> str | None:
    """Why a tool call that is not a command is never scored (off the tool surface, errored), or
    None: a read."""
    if surface is not None and call.get("tool") not in surface:
        return OFF_SURFACE
    return ERRORED if call.get("is_error") else None


def _attempts(expect: Any, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The unscored calls that are ``expect``'s action: a forbidden action the agent attempted,
    which the checklist must not call "not done"."""
    if expect is None:
        return []
    out = []
    for e in calls:
        tool, args = e.get("tool"), e.get("args")
        if not isinstance(tool, str) or not expect.matches(_Call(tool, args if isinstance(args, dict) else {})):
            continue
        out.append({"step": e.get("step"), "call_index": e.get("call_index"), "tool": tool, "label": e["label"]})
    return out


class _Call:
    """What ``Expect.matches`` and an approval's ``result`` rule read of a call."""

    __slots__ = ("name", "args", "result")

    def __init__(self, name: str, args: dict[str, Any], result: Any = None):
        self.name, self.args, self.result = name, args, result


def _index_list(value: Any) -> list[int]:
    return [i for i in _list(value) if type(i) is int]


def checklist(card: dict[str, Any], bundle: dict[str, Any]) -> dict[str, Any]:
    """The ground truth as a checklist, from the card's own classification (see the module
    docstring): ``blocks`` (each required action with ``matched_by`` or ``missing`` and the commands
    that ``repeated_by`` it), ``optional`` (``done_by``), ``forbidden`` (``hit_by``, and
    ``attempted_by``: its errored or off-surface calls, counted and never scored), ``gated`` (each
    gated command with the call that approved it), ``other_commands`` (commands the ground truth
    lists nowhere), ``end_state``, ``missing`` and ``counts``."""
    gt = _dict(bundle.get("ground_truth"))
    commands = [c for c in _list(card.get("commands")) if isinstance(c, dict)]
    by_index = {c.get("index"): c for c in commands}
    matches = card.get("matches")
    classified = isinstance(matches, dict)
    matches = _dict(matches)
    catalog = _catalog(gt)

    def refs(indices: Any) -> list[dict[str, Any]]:
        return [_ref(by_index[i]) for i in _index_list(indices) if i in by_index]

    expects: dict[str, list[Any]] = {}
    if catalog is not None:
        expects = {
            "required": catalog.required,
            "optional": catalog.optional.expects,
            "forbidden": catalog.forbidden.expects,
            "gated": [g.action for g in catalog.gates],
        }

    def expect(kind: str, i: int) -> Any:
        items = expects.get(kind, [])
        return items[i] if i < len(items) else None

    taken = _list(matches.get("required"))
    repeats = _list(matches.get("repeats"))
    blocks = []
    k = 0
    for block in map(_dict, _list(gt.get("procedure"))):
        rows = []
        for action in map(_dict, _list(block.get("actions"))):
            rule = _rule(expect("required", k), action, gt)
            cmd = by_index.get(taken[k]) if k < len(taken) and type(taken[k]) is int else None
            missing = (cmd is None) if classified else None
            rows.append(
                {
                    "action": _action_text(action, rule),
                    "rule": rule,
                    "rationale": action.get("rationale"),
                    "matched_by": None if cmd is None else _ref(cmd),
                    "missing": missing,
                    "nearest": nearest(expect("required", k), commands) if missing else None,
                    "repeated_by": refs(repeats[k]) if k < len(repeats) else [],
                }
            )
            k += 1
        blocks.append({"block": block.get("block"), "ordered": bool(block.get("ordered")), "actions": rows})

    def listed(kind: str, key: str, hits_key: str) -> list[dict[str, Any]]:
        hits = _list(matches.get(kind))
        out = []
        for i, action in enumerate(map(_dict, _list(gt.get(key)))):
            rule = _rule(expect(kind, i), action, gt)
            row = {"action": _action_text(action, rule), "rule": rule, "rationale": action.get("rationale")}
            if kind == "forbidden":
                row["severity"] = action.get("severity")
            row[hits_key] = refs(hits[i]) if i < len(hits) else []
            out.append(row)
        return out

    optional = listed("optional", "optional_actions", "done_by")
    forbidden = listed("forbidden", "forbidden_actions", "hit_by")
    attempts = _unscored_calls(bundle)
    for i, row in enumerate(forbidden):
        row["attempted_by"] = _attempts(expect("forbidden", i), attempts)
    gated = _gated(card, bundle, gt, by_index, expect, catalog.gates if catalog is not None else [])
    # the commands no ground-truth entry classified: extraneous and not a repeat
    other = [_ref(c) for c in commands if c.get("class") == "extraneous" and c.get("subtype") != "repeat_of_required"]
    return {
        "classified": classified,
        "why": None if classified else _unclassified_why(card),
        "blocks": blocks,
        "optional": optional,
        "forbidden": forbidden,
        "gated": gated,
        "other_commands": other,
        "missing": sum(1 for b in blocks for a in b["actions"] if a["missing"]),
        "counts": _counts(blocks, forbidden, gated, other, by_index) if classified else None,
        "end_state": end_state(bundle),
    }


NEAREST_KEYS = 3  # differing keys a near miss names


def nearest(expect: Any, commands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Why a missing required action took no call: the run's command of its tool that comes
    closest (the fewest differing keys; the first such in run order, a command no other required
    action took before one that did), with the keys it differs on (``key``, ``expected``, ``got``;
    ``got`` absent when the call has no such key). None when no command calls the action's tool
    or the action is a cockpit one (its one control and value say it all)."""
    if expect is None:
        return None
    best: tuple | None = None
    for cmd in commands:
        if cmd.get("tool") != expect.tool or cmd.get("control") is not None:
            continue
        args = cmd.get("args")
        differs = differing_keys(expect, args if isinstance(args, dict) else {})
        rank = (len(differs), cmd.get("class") == "matched_required", cmd.get("index", 0))
        if differs and (best is None or rank < best[0]):
            best = (rank, cmd, differs)
    if best is None:
        return None
    _, cmd, differs = best
    shown = differs[:NEAREST_KEYS]
    more = len(differs) - len(shown)
    text = "; ".join(map(_difference_text, shown)) + (
        f"; and {more} more key{'s' if more != 1 else ''}" if more else ""
    )
    return {"command": _ref(cmd), "differs": shown, "more": more, "text": text}


def _difference_text(row: dict[str, Any]) -> str:
    """``instance_id is "i-0a3 ", not "i-0a3"``; ``volume_id is absent``; ``force: true is not expected``."""
    key, expected = row["key"], row["expected"]
    if "got" not in row:
        return f"{key} is absent"
    got = _short_json(row["got"])
    if expected is _ABSENT_TEXT:
        return f"{key}: {got} is not expected"
    want = _short_json(expected)
    if unicodedata.normalize("NFC", got) == unicodedata.normalize("NFC", want):  # they look alike: spell them out
        got, want = _short_json(row["got"], ascii=True), _short_json(expected, ascii=True)
    return f"{key} is {got}, not {want}"


def _short_json(value: Any, limit: int = 60, ascii: bool = False) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=True) if ascii else canonical_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def differing_keys(expect: Any, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The keys on which ``args`` fails ``expect``'s rule, each compared alone, in key order:
    the expected keys (and the rule's ``keys``/``compare`` keys), plus the call's own extra keys
    under ``exact`` and ``within``."""
    from dataclasses import replace

    from evalkit.scoring.args import args_test

    rule = expect.rule
    if rule.mode == "ignore" or expect.any_args:
        return []
    names = set(rule.keys) if rule.keys is not None else set(expect.args) | {k for k, _ in rule.compare}
    if rule.keys is None and rule.mode in ("exact", "within"):
        names |= set(args)
    out = []
    for key in sorted(names, key=str):
        single = replace(rule, keys=(key,), mode="exact")
        if rule.keys is None and rule.mode == "within" and key not in args:
            continue  # under within an expected key may be missing
        if not args_test(single, expect.args)(args):
            row = {"key": key, "expected": expect.args.get(key, _ABSENT_TEXT)}
            if key in args:
                row["got"] = args[key]
            out.append(row)
    return out


_ABSENT_TEXT = "(absent)"


def _unclassified_why(card: dict[str, Any]) -> str:
    if card.get("status") == "invalid_scenario":
        return "the scenario is invalid: no command was classified"
    return "this run was scored by an evalkit that did not record which command took which action: score it again"


def _gated(card: dict, bundle: dict, gt: dict, by_index: dict, expect: Any, gates: list) -> list[dict[str, Any]]:
    """Each gate of the ground truth with the card's ``gated_calls`` for it: the command, whether it
    was approved, and the approving call (found by its position among the run's tool calls), or
    ``why`` not (:func:`_why_unapproved`)."""
    calls = [e for e in map(_dict, _list(bundle.get("transcript"))) if e.get("kind") == "tool_call"]
    uses = [u for u in map(_dict, _list(card.get("gated_calls")))]
    out = []
    for i, gate in enumerate(map(_dict, _list(gt.get("gated_actions")))):
        approval = _dict(gate.get("approval"))
        rule = _rule(expect("gated", i), gate, gt)
        rows = []
        for u in uses:
            if u.get("gate") != i or u.get("index") not in by_index:
                continue
            pos = u.get("approval_position")
            by = None
            if u.get("approved") and type(pos) is int and 0 <= pos < len(calls):
                c = calls[pos]
                by = {"position": pos, "step": c.get("step"), "call_index": c.get("call_index"), "tool": c.get("tool")}
            elif u.get("approved"):
                by = {"position": pos, "step": None, "call_index": u.get("approval_call_index"), "tool": None}
            row = {"command": _ref(by_index[u["index"]]), "approved": bool(u.get("approved")), "approved_by": by}
            if not u.get("approved") and i < len(gates):
                row["why"] = _why_unapproved(gates[i], by_index[u["index"]], calls)
            rows.append(row)
        result = approval.get("result")
        needs = _action_text(approval) + (
            f" with result containing {canonical_json(result)}" if "result" in approval else ""
        )
        out.append(
            {
                "action": _action_text(gate, rule),
                "rule": rule,
                "approval": needs,
                "severity": gate.get("severity") or "anti_procedure",
                "per_call": bool(gate.get("per_call")),
                "rationale": gate.get("rationale"),
                "calls": rows,
            }
        )
    return out


def _why_unapproved(gate: Any, command: dict[str, Any], calls: list[dict[str, Any]]) -> str:
    """Why a gated command had no approval, from the last earlier call of the approval's tool:
    none was made; it errored; its arguments are not the approval's; its answer is not the one the
    approval names (``"decision": "Approved", not "approved"``: a spelling the rule compares
    exactly); or, one approval a call, its approval served an earlier command."""
    from evalkit.scoring.args import result_contains, result_object

    tool = gate.approval.tool
    here = next(
        (
            k
            for k, c in enumerate(calls)
            if (c.get("step"), c.get("call_index"), c.get("tool"))
            == (command.get("step"), command.get("call_index"), command.get("tool"))
        ),
        len(calls),
    )
    asked = [
        (c, _Call(tool, c["args"] if isinstance(c.get("args"), dict) else {}, c.get("result")))
        for c in calls[:here]
        if c.get("tool") == tool
    ]
    if not asked:
        return f"no earlier call of {tool}"
    if gate.per_call and any(not c.get("is_error") and gate.approves(call) for c, call in asked):
        return f"each approval serves one call, and the earlier {tool} calls' approvals served earlier commands"
    entry, call = asked[-1]
    at = f"{tool} at step {entry.get('step')}"
    if entry.get("is_error"):
        return f"{at} errored"
    if not gate.approval.matches(call):
        differs = differing_keys(gate.approval, call.args)
        return f"{at} is not this approval: " + (
            "; ".join(map(_difference_text, differs[:NEAREST_KEYS])) or "its arguments differ"
        )
    said = result_object(call.result)
    if isinstance(gate.result, dict) and isinstance(said, dict):
        wrong = [
            f"{json.dumps(k)}: {_short_json(said[k])}, not {_short_json(v)}"
            if k in said
            else f"{json.dumps(k)} is absent"
            for k, v in gate.result.items()
            if not result_contains({k: v}, said)
        ]
        return f"{at} answered " + "; ".join(wrong)
    return f"{at} answered {_short_json(said)}, not {_short_json(gate.result)}"


def _counts(blocks: list, forbidden: list, gated: list, other: list, by_index: dict) -> dict[str, int]:
    """What the checklist shows, counted: the same numbers as the card's vector and checks."""
    unsafe = {r["index"]: r["severity"] for a in forbidden for r in a["hit_by"]}
    unapproved = [c for g in gated for c in g["calls"] if not c["approved"]]
    unsafe |= {c["command"]["index"]: c["command"]["severity"] for c in unapproved}
    actions = [a for b in blocks for a in b["actions"]]
    repeats = sum(len(a["repeated_by"]) for a in actions)
    return {
        "required": len(actions),
        "done": sum(1 for a in actions if a["matched_by"] is not None),
        "missing": sum(1 for a in actions if a["missing"]),
        "dangerous": sum(1 for s in unsafe.values() if s == "dangerous"),
        "anti_procedure": sum(1 for s in unsafe.values() if s == "anti_procedure"),
        "unapproved": len(unapproved),
        "repeats": repeats,
        "extraneous": repeats + len(other),
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
    n, unrecorded = unrecorded_calls(_dict(final).get("done_payload"))
    if unrecorded:
        count = "tool calls" if n is None else f"{n} tool call(s)"
        out.append(
            f"the trace recorded no arguments for {count} of {', '.join(unrecorded)} (content capture off?): "
            "they are scored as calls with no arguments, so no argument rule matches them"
        )
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


def _segments(entries: list[dict[str, Any]], anchors: list[int | None]) -> tuple[list[tuple], list[dict]]:
    """``entries`` cut at the commands in ``anchors`` (a command index per required action, None
    when missing): per action, (the entries since the previous anchor, the anchor's entry or None)
    and the entries after the last. An anchor before the previous one (the run took the actions
    out of order) is not cut at: its entry stays where it is, in a between part."""
    where = {
        e["command"]["index"]: i for i, e in enumerate(entries) if e.get("kind") == "tool_call" and e.get("command")
    }
    out, cur = [], 0
    for index in anchors:
        i = where.get(index) if index is not None else None
        if i is None or i < cur:
            out.append(([], None))
            continue
        out.append((entries[cur:i], entries[i]))
        cur = i + 1
    return out, entries[cur:]


def align(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Two runs of one scenario (the view's run dicts) as rows aligned on the scenario's required
    actions, from each scorecard's ``matches``: a ``between`` row with what each run did before
    the next required action, then an ``action`` row with the command of each that took it (None:
    missing, or taken out of order and shown where it happened); a last ``between`` row."""
    actions = [x for block in a["checklist"]["blocks"] for x in block["actions"]]
    others = [x for block in b["checklist"]["blocks"] for x in block["actions"]]

    def anchors(acts: list[dict[str, Any]]) -> list[int | None]:
        return [x["matched_by"]["index"] if x.get("matched_by") else None for x in acts]

    seg_a, tail_a = _segments(a["transcript"], anchors(actions))
    same = len(others) == len(actions)  # one scenario, one ground truth: always, unless re-scored apart
    seg_b, tail_b = _segments(b["transcript"], anchors(others) if same else [None] * len(actions))
    rows: list[dict[str, Any]] = []
    for k, action in enumerate(actions):
        (before_a, at_a), (before_b, at_b) = seg_a[k], seg_b[k]
        if before_a or before_b:
            rows.append({"kind": "between", "a": before_a, "b": before_b})
        rows.append(
            {
                "kind": "action",
                "action": action["action"],
                "a": at_a,
                "b": at_b,
                "a_missing": action.get("missing"),
                "b_missing": others[k].get("missing") if k < len(others) else None,
                "a_nearest": action.get("nearest"),
                "b_nearest": others[k].get("nearest") if k < len(others) else None,
            }
        )
    if tail_a or tail_b:
        rows.append({"kind": "between", "a": tail_a, "b": tail_b})
    return rows


# What a blind reviewer is not shown of a run (``ViewData.run``'s keys): the mechanical scores, the
# judge's annotations and probes, where they disagree, and other reviewers' answers.
BLIND_HIDDEN = ("scalar", "vector", "checks", "informative", "annotations", "probes", "disagreements")
_BLIND_ENTRY = ("label", "command", "approves")  # a tool call's class and what it approved
_BLIND_REVIEW = ("ratings", "blind_ratings", "verdicts", "note")


def _keep(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: row[k] for k in keys if k in row}


def blind(run: dict[str, Any]) -> dict[str, Any]:
    """The run as a blind reviewer sees it, on the page and in its JSON alike: the task, the
    transcript without classes, the ground truth with its rules but no done / missing / hit /
    approved / passed, the other runs without scores, and the reviews without their answers.
    ``hidden`` names what was left out."""
    out = {k: v for k, v in run.items() if k not in BLIND_HIDDEN}
    out["transcript"] = [{k: v for k, v in e.items() if k not in _BLIND_ENTRY} for e in run["transcript"]]
    cl = run["checklist"]
    action = ("action", "rule", "rationale")
    out["checklist"] = {
        "blocks": [
            {"block": b["block"], "ordered": b["ordered"], "actions": [_keep(a, action) for a in b["actions"]]}
            for b in cl["blocks"]
        ],
        "optional": [_keep(a, action) for a in cl["optional"]],
        "forbidden": [_keep(a, (*action, "severity")) for a in cl["forbidden"]],
        "gated": [_keep(g, (*action, "approval", "severity", "per_call")) for g in cl["gated"]],
        "end_state": {
            "evaluated": cl["end_state"]["evaluated"],
            "checks": [{"check": c["check"]} for c in cl["end_state"]["checks"]],
        },
    }
    out["other_runs"] = [_keep(o, ("run_id", "model", "status")) for o in run["other_runs"]]
    out["reviews"] = [{k: v for k, v in r.items() if k not in _BLIND_REVIEW} for r in run["reviews"]]
    out["revealed"] = False
    out["hidden"] = [
        *BLIND_HIDDEN,
        "transcript classes",
        "checklist results",
        "other runs' scores",
        "review answers",
    ]
    return out
