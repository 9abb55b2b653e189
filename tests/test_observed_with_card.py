"""The scenario check fed what the scorer matched each command with (``Observed.add_run(traj,
card)``, as ``evalkit score`` feeds it) notes exactly what it notes matching every call itself (as
``evalkit check`` does): random scenarios with argument rules, optional, forbidden and gated
actions, twins and approvals, and plain cockpit scenarios, against random runs with errored, unexecuted and off-surface calls;
and the argument and result paths it notes, walking only the calls (results) of a shape not seen
before, are those of every call."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from evalkit.engines.observed import Observed, _paths
from evalkit.engines.scenario_check import FIELDS
from evalkit.errors import InputError
from evalkit.scoring import score_trajectory
from evalkit.trajectory.builders import dumps_jsonl, trajectory
from evalkit.trajectory.reader import parse_trajectory

TOOLS = ["a", "b", "c", "ok"]
KEYS = ["k1", "k2", "k3"]
VALUES = [1, 2, "x", "y", True]


def _args(rng: random.Random, keys: int | None = None) -> dict[str, Any]:
    n = rng.randint(0, len(KEYS)) if keys is None else keys
    return {k: rng.choice(VALUES) for k in rng.sample(KEYS, n)}


def _rule(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice(
        [
            None,
            None,
            {"mode": "contains"},
            {"mode": "within"},
            {"keys": rng.sample(KEYS, rng.randint(1, 2))},
            {"compare": {"k1": {"abs_tol": 1}}},
            {"mode": "contains", "compare": {"k2": "ignore"}},
        ]
    )


def _action(rng: random.Random, wildcard: bool = False) -> dict[str, Any]:
    action: dict[str, Any] = {"tool": rng.choice(TOOLS[:3])}
    if not (wildcard and rng.random() < 0.2):
        action["args"] = _args(rng, rng.randint(1, 2))
    if (rule := _rule(rng)) is not None:
        action["args_match"] = rule
    return action


def _scenario(rng: random.Random, n: int) -> dict[str, Any]:
    required = [_action(rng) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        required.append(dict(required[0]))  # twins: a call serves one of them
    gt: dict[str, Any] = {
        "procedure": [{"block": "main", "actions": required}],
        "optional_actions": [_action(rng, True) for _ in range(rng.randint(0, 2))],
        "forbidden_actions": [{**_action(rng, True), "severity": "dangerous"} for _ in range(rng.randint(0, 2))],
        "gated_actions": [],
    }
    for _ in range(rng.randint(0, 2)):
        gate = {**_action(rng, True), "severity": "dangerous", "approval": {"tool": "ok"}}
        if rng.random() < 0.5:
            gate["approval"]["result"] = {"fine": True}
        if rng.random() < 0.3:
            gate["per_call"] = True
        gt["gated_actions"].append(gate)
    if rng.random() < 0.3:
        gt["args_match"] = {"tools": {rng.choice(TOOLS[:3]): {"mode": "contains"}}}
    return {"id": f"random-{n}", "command_tools": TOOLS, "ground_truth": gt, "success": {"final_state": []}}


CONTROLS = ["apu_gen", "ext_pwr", "bat_1"]


def _control(rng: random.Random) -> dict[str, Any]:
    return {"control": rng.choice(CONTROLS), "value": rng.choice([0, 1, 1.0, True])}


def _cockpit_scenario(rng: random.Random, n: int) -> dict[str, Any]:
    """A plain scenario: cockpit actions (``set_control``), matched by their key alone."""
    required = [_control(rng) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.3:
        required.append(dict(required[0]))
    forbidden = [{**_control(rng), "severity": rng.choice(["dangerous", "anti_procedure"])} for _ in range(2)]
    return {
        "id": f"cockpit-{n}",
        "ground_truth": {
            "procedure": [{"block": "main", "actions": required}],
            "optional_actions": [_control(rng) for _ in range(rng.randint(0, 2))],
            "forbidden_actions": forbidden[: rng.randint(0, 2)],
        },
        "success": {"final_state": []},
    }


def _cockpit_calls(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(0, 12)):
        args: dict[str, Any] = _control(rng)
        if rng.random() < 0.1:
            args["control"] = [args["control"]]  # not a string: matches no action
        out.append(
            {
                "name": rng.choice(["set_control", "set_control", "get_ecam", "zz"]),
                "args": args,
                "is_error": rng.choice([False, False, True, None]),
                "result": {"ok": True},
            }
        )
    return out


def _calls(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(0, 14)):
        args = _args(rng)
        if rng.random() < 0.3:  # nested objects, down past the depth the paths are noted to
            deepest = rng.choice([{}, {"x": rng.choice(VALUES)}, {"x": {"y": rng.choice(VALUES)}}])
            deeper = rng.choice([{}, {"k2": rng.choice(VALUES)}, {"k2": rng.choice(VALUES), "deepest": deepest}])
            args["nested"] = {"k1": rng.choice(VALUES), "deeper": deeper} if rng.random() < 0.7 else {}
        call = {
            "name": rng.choice([*TOOLS, "a", "b", "read", "zz"]),
            "args": args,
            "is_error": rng.choice([False, False, False, True, None]),
            "result": _result(rng),
        }
        out.append(call)
    return out


def _result(rng: random.Random) -> Any:
    """A call's result: mostly one object, at times nested, empty, an object as JSON text, or not
    an object at all."""
    fine = rng.random() < 0.6
    return rng.choice(
        [
            {"fine": fine},
            {"fine": fine},
            {"fine": fine, "more": {"a": rng.choice(VALUES), "b": rng.choice([{}, {"c": rng.choice(VALUES)}])}},
            {},
            json.dumps({"fine": fine, "n": rng.choice([1, 2.5])}),
            "plain text",
            [fine],
            None,
        ]
    )


def _run(rng: random.Random, scenario: dict[str, Any], i: int) -> bytes:
    cockpit = scenario["id"].startswith("cockpit")
    calls, surface = (_cockpit_calls(rng), ["set_control", "get_ecam"]) if cockpit else (_calls(rng), [*TOOLS, "read"])
    records = trajectory(scenario, calls, run_id=f"run-{i}", tool_surface=surface)
    surface = rng.random()
    if surface < 0.2:
        records[0]["tool_surface"] = None
    elif surface < 0.4:
        records[0]["tool_surface"] = ["get_ecam"] if cockpit else ["a", "c", "ok", "read"]
    for record in records:
        if record.get("type") == "tool_call" and record.get("is_error") is None:
            record.pop("is_error", None)
    return dumps_jsonl(records).encode()


def _state(observed: Observed) -> str:
    return json.dumps([_canonical(getattr(observed, name)) for name in FIELDS])


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("make", [_scenario, _cockpit_scenario])
def test_the_check_fed_the_scorers_classes_notes_what_it_notes_matching_every_call(make, seed):
    rng = random.Random(seed)
    compared = 0
    for n in range(10):
        scenario = make(rng, n)
        mine = theirs = None
        walked: dict[str, dict[str, set[str]]] = {}  # every call's argument paths, each call walked
        answered: dict[str, dict[str, set[str]]] = {}  # every call's result paths, likewise
        for i in range(8):
            try:
                traj = parse_trajectory(f"run-{i}.jsonl", _run(rng, scenario, i), compact=True)
            except InputError:
                break  # a scenario the reader refuses: nothing is scored
            card = score_trajectory(traj)
            if mine is None:
                mine, theirs = Observed(traj.meta.scenario), Observed(traj.meta.scenario)
            mine.add_run(traj, card)
            theirs.add_run(traj)
            for call in traj.tool_calls():
                if call.args:
                    _paths(call.args, walked.setdefault(call.name, {}))
                result = call.result
                if isinstance(result, str) and result.startswith("{"):
                    result = json.loads(result)
                if isinstance(result, dict):
                    _paths(result, answered.setdefault(call.name, {}))
            assert _state(mine) == _state(theirs)
            assert mine.args == walked
            assert mine.results == answered
            compared += 1
    assert compared


@pytest.mark.parametrize("seed", range(12))
def test_a_scenarios_notes_kept_from_batch_to_batch_merge_into_what_one_batch_of_all_its_runs_notes(seed):
    # scoring, a process keeps each scenario's Observed from batch to batch (restarted per batch) and
    # sends only what it had not sent, or, scoring where the notes are merged, sends them once at the
    # end; merged, its batches say what one batch of every run says
    from evalkit.engines import scenario_check as sc
    from evalkit.engines.job import ScoreJob, score_batch
    from evalkit.engines.scenario_check import merge, noted_here, scenario_warnings

    rng = random.Random(seed)
    scenarios = [(_scenario if n % 3 else _cockpit_scenario)(rng, n) for n in range(6)]
    for scenario in scenarios[::2]:  # success checks, which the runs report with many values
        scenario["success"]["final_state"] = [{"var": v, "op": "==", "value": 1} for v in ("v.a", "v.b", "v.c")]
    runs = []
    for i in range(90):  # interleaved: run i is of scenario i mod 6
        data = _run(rng, scenarios[i % 6], i).decode()
        if rng.random() < 0.2:  # an approval's answer written another way
            data = data.replace('"fine": true', '"fine": "True"')
        records = [json.loads(line) for line in data.splitlines()]
        checks = (records[-1].get("success_eval") or {}).get("final_state") or []
        for check in checks:
            check["value"] = rng.choice([*range(30), 1.0, "1", True])
        if checks and rng.random() < 0.2:
            del checks[rng.randrange(len(checks))]
        runs.append((f"run-{i}.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode()))

    def notes(job: ScoreJob, size: int, workers: int = 1) -> tuple[list[str], dict]:
        # ``workers``: each batch in turn scored by one of that many processes, each with what it
        # keeps and what it sent (scenario_check's module state, swapped in for its batches)
        processes = [({}, {}, {}, [None]) for _ in range(workers)]
        merged: dict = {}
        try:
            for n, start in enumerate(range(0, len(runs), size)):
                sc._SENT, sc._KEPT, sc._HERE, sc._SENT_TOKEN = processes[n % workers]
                seen = score_batch(job, runs[start : start + size])[0].seen
                if seen:
                    merge(merged, seen)
            merge(merged, noted_here(job.observe_token))
        finally:
            sc._SENT, sc._KEPT, sc._HERE, sc._SENT_TOKEN = saved
        return scenario_warnings(merged), {k: _plain(v.state) for k, v in merged.items()}

    saved = sc._SENT, sc._KEPT, sc._HERE, sc._SENT_TOKEN

    whole = notes(ScoreJob(observe=True), len(runs))
    assert whole[0]  # the random scenarios' mistakes are said
    for size in (1, 4, 7):
        assert notes(ScoreJob(observe=True, observe_token=f"kept-{seed}-{size}"), size) == whole
        assert notes(ScoreJob(observe=True, observe_token=f"pool-{seed}-{size}"), size, workers=2) == whole
        # scored in the process that merges the notes: taken once, when the scoring ends
        here = ScoreJob(observe=True, observe_token=f"here-{seed}-{size}", in_process=True)
        assert not score_batch(here, runs[:size])[0].seen
        noted_here(here.observe_token)
        assert notes(here, size) == whole


def _plain(state: list[Any]) -> dict[str, str]:
    """A merged state as comparable text, less what findings never read and batches count
    differently: near misses of an action some run matched (counted until one does), the answers
    of a gate some call approved (likewise), the sampled calls of a tool matched, a tool's empty
    paths (its calls' results were all empty)."""
    out = dict(zip(FIELDS, state))
    for name in ("args", "results"):
        out[name] = {tool: paths for tool, paths in out[name].items() if paths}
    for hit, near in (
        ("optional_hit", "optional_near"),
        ("forbidden_hit", "forbidden_near"),
        ("gated_hit", "gated_near"),
    ):
        out[near] = [{} if h else n for h, n in zip(out[hit], out[near])]
    out["asked"] = [0 if a else n for a, n in zip(out["approved"], out["asked"])]
    out["answers"] = [{} if a else n for a, n in zip(out["approved"], out["answers"])]
    out["samples"] = None
    return {name: json.dumps(_canonical(value)) for name, value in out.items()}


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {repr(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, value))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return repr(value)
