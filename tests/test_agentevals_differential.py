"""evalkit's verdicts equal langchain agentevals' trajectory match (create_trajectory_match_evaluator)
on seeded random reference/output trajectories with random argument modes and per-tool key lists,
where the two define the same thing (docs/scenarios.md, "evalkit and agentevals"):

* agentevals ``superset``  = evalkit coverage 1;
* ``unordered``            = coverage 1 and no extraneous command (every tool a command);
* ``strict``               = the same with one ordered block, and order 1.

Argument modes: agentevals ``exact`` / ``superset`` / ``subset`` / ``ignore`` are evalkit's
``exact`` / ``contains`` / ``within`` / ``ignore``; a per-tool list of keys is ``keys``. The
differences on purpose are kept out of the generator and pinned by their own tests below: agentevals'
unordered and strict apply an asymmetric argument mode in both directions, an empty key list is no
override for agentevals, a key whose value is null equals a missing key for agentevals, and ``True
== 1`` for Python but not for evalkit.
"""

from __future__ import annotations

import json
import random

import pytest

agentevals_match = pytest.importorskip("agentevals.trajectory.match")

from scoring_helpers import score_records  # noqa: E402

from evalkit.trajectory.builders import call, trajectory  # noqa: E402

pytestmark = pytest.mark.slow  # the differential run against agentevals

TOOLS = ["lookup", "refund", "notify"]
KEYS = ["a", "b", "c", "m"]  # "m" holds an object, so that dotted keys ("m.x") walk into it
KEY_PATHS = ["a", "b", "c", "m.x", "m.y"]
EVALKIT_MODE = {"exact": "exact", "superset": "contains", "subset": "within", "ignore": "ignore"}
SYMMETRIC = {"exact", "ignore"}  # and key lists: the same test both ways
CASES = 300


def _value(rng: random.Random):
    return rng.choice([0, 1, 2, 1.0, "p", "q", "P"])


def _args(rng: random.Random) -> dict:
    args = {}
    for key in rng.sample(KEYS, rng.randint(0, len(KEYS))):
        args[key] = {k: _value(rng) for k in rng.sample(["x", "y"], rng.randint(0, 2))} if key == "m" else _value(rng)
    return args


def _mutate(rng: random.Random, args: dict) -> dict:
    args = json.loads(json.dumps(args))
    what = rng.choice(["add", "drop", "change", "nested"])
    if what == "add" or not args:
        key = rng.choice([k for k in KEYS if k != "m"])
        args[key] = _value(rng)
    elif what == "drop":
        del args[rng.choice(sorted(args))]
    elif what == "nested" and isinstance(args.get("m"), dict):
        args["m"][rng.choice(["x", "y"])] = _value(rng)
    else:
        key = rng.choice(sorted(args))
        args[key] = _value(rng)
    return args


def _case(rng: random.Random) -> tuple[list, list, str, dict]:
    reference = [(rng.choice(TOOLS), _args(rng)) for _ in range(rng.randint(1, 4))]
    output = [(t, json.loads(json.dumps(a))) for t, a in reference]
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
        kind = rng.choice(["swap", "drop", "extra", "repeat", "mutate", "rename"])
        if kind == "swap" and len(output) > 1:
            i, j = rng.sample(range(len(output)), 2)
            output[i], output[j] = output[j], output[i]
        elif kind == "drop" and output:
            output.pop(rng.randrange(len(output)))
        elif kind == "extra":
            output.insert(rng.randint(0, len(output)), (rng.choice(TOOLS), _args(rng)))
        elif kind == "repeat" and output:
            output.insert(rng.randint(0, len(output)), rng.choice(output))
        elif kind == "mutate" and output:
            i = rng.randrange(len(output))
            output[i] = (output[i][0], _mutate(rng, output[i][1]))
        elif kind == "rename" and output:
            i = rng.randrange(len(output))
            output[i] = (rng.choice(TOOLS), output[i][1])
    mode = rng.choice(list(EVALKIT_MODE))
    overrides = {}
    for tool in TOOLS:
        if rng.random() < 0.4:
            overrides[tool] = (
                rng.choice(list(EVALKIT_MODE)) if rng.random() < 0.5 else rng.sample(KEY_PATHS, rng.randint(1, 3))
            )
    return reference, output, mode, overrides


def _messages(calls: list) -> list[dict]:
    """One assistant message per call, each answered by its tool message: the same shape on both
    sides, so that agentevals' strict mode compares the calls one by one."""
    msgs = [{"role": "user", "content": "go"}]
    for i, (tool, args) in enumerate(calls):
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return msgs


def _agentevals(trajectory_mode: str, reference, output, mode, overrides) -> bool:
    evaluator = agentevals_match.create_trajectory_match_evaluator(
        trajectory_match_mode=trajectory_mode, tool_args_match_mode=mode, tool_args_match_overrides=overrides or None
    )
    return bool(evaluator(outputs=_messages(output), reference_outputs=_messages(reference))["score"])


def _evalkit_card(reference, output, mode, overrides, ordered: bool):
    tools = {t: ({"keys": o} if isinstance(o, list) else {"mode": EVALKIT_MODE[o]}) for t, o in overrides.items()}
    scenario = {
        "id": "differential",
        "command_tools": TOOLS,
        "ground_truth": {
            "args_match": {"mode": EVALKIT_MODE[mode], "tools": tools},
            "procedure": [
                {"block": "all", "ordered": ordered, "actions": [{"tool": t, "args": a} for t, a in reference]}
            ],
        },
        "success": {"final_state": []},
    }
    return score_records(trajectory(scenario, [call(t, a) for t, a in output], run_id="d", tool_surface=TOOLS))


def _symmetric(reference, output, mode, overrides) -> bool:
    for tool in {t for t, _ in reference + output}:
        rule = overrides.get(tool, mode)
        if not isinstance(rule, list) and rule not in SYMMETRIC:
            return False
    return True


@pytest.fixture(scope="module")
def verdicts():
    rng = random.Random(20260724)
    rows = []
    for _ in range(CASES):
        reference, output, mode, overrides = _case(rng)
        unordered = _evalkit_card(reference, output, mode, overrides, ordered=False)
        ordered = _evalkit_card(reference, output, mode, overrides, ordered=True)
        row = {
            "case": (reference, output, mode, overrides),
            "superset": (unordered.vector.coverage == 1.0, _agentevals("superset", reference, output, mode, overrides)),
        }
        if _symmetric(reference, output, mode, overrides):
            row["unordered"] = (
                unordered.vector.coverage == 1.0 and unordered.vector.extraneous == 0,
                _agentevals("unordered", reference, output, mode, overrides),
            )
            row["strict"] = (
                ordered.vector.coverage == 1.0
                and ordered.vector.extraneous == 0
                and ordered.vector.order in (1.0, None),
                _agentevals("strict", reference, output, mode, overrides),
            )
        rows.append(row)
    return rows


@pytest.mark.parametrize("trajectory_mode", ["superset", "unordered", "strict"])
def test_evalkit_agrees_with_agentevals(verdicts, trajectory_mode):
    compared = [r for r in verdicts if trajectory_mode in r]
    disagree = [r["case"] for r in compared if r[trajectory_mode][0] != r[trajectory_mode][1]]
    assert disagree == [], disagree[:3]
    outcomes = [r[trajectory_mode][1] for r in compared]
    # the generator reaches both verdicts often enough for the agreement to mean something
    assert len(compared) >= 100 and 0.2 < sum(outcomes) / len(outcomes) < 0.8, (len(compared), sum(outcomes))


def test_the_cases_cover_every_argument_mode_and_key_lists(verdicts):
    modes = {r["case"][2] for r in verdicts}
    overrides = [o for r in verdicts for o in r["case"][3].values()]
    assert modes == set(EVALKIT_MODE)
    assert any(isinstance(o, list) and any("." in k for k in o) for o in overrides)
    assert {o for o in overrides if isinstance(o, str)} == set(EVALKIT_MODE)


# -- the differences on purpose ----------------------------------------------------------------------


def test_asymmetric_modes_apply_both_ways_in_agentevals_unordered_but_once_in_evalkit():
    reference, output = [("refund", {"a": 1})], [("refund", {"a": 1, "b": 2})]
    card = _evalkit_card(reference, output, "superset", {}, ordered=False)
    assert card.vector.coverage == 1.0 and card.vector.extraneous == 0  # the call contains the expected args
    assert _agentevals("unordered", reference, output, "superset", {}) is False  # and must also be contained


def test_an_empty_key_list_is_no_override_for_agentevals_and_compares_nothing_in_evalkit():
    reference, output = [("refund", {"a": 1})], [("refund", {"a": 2})]
    assert _evalkit_card(reference, output, "exact", {"refund": []}, ordered=False).vector.coverage == 1.0
    assert _agentevals("superset", reference, output, "exact", {"refund": []}) is False


def test_a_null_value_equals_a_missing_key_for_agentevals_key_lists_not_for_evalkit():
    reference, output = [("refund", {"a": 1})], [("refund", {"a": 1, "b": None})]
    assert _evalkit_card(reference, output, "exact", {"refund": ["a", "b"]}, ordered=False).vector.coverage == 0.0
    assert _agentevals("superset", reference, output, "exact", {"refund": ["a", "b"]}) is True


def test_true_equals_one_for_agentevals_not_for_evalkit():
    reference, output = [("refund", {"a": 1})], [("refund", {"a": True})]
    assert _evalkit_card(reference, output, "exact", {}, ordered=False).vector.coverage == 0.0
    assert _agentevals("superset", reference, output, "exact", {}) is True
