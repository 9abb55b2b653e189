"""tau2-bench importer: every mapping rule and refusal, pass^k against tau2's own formula, evalkit's
per-action matches against tau2's action_checks, and --workers 1 vs 2.

The fixture (tests/fixtures/tau2/airline_results.json) is written by make_results.py beside it from
tau2's documented data model (tau2-bench is not on PyPI): 3 tasks x 4 trials, one
infrastructure_error, one max_steps, one too_many_errors, the three compare_args forms, a
MultiToolMessage, the user simulator's own tool call, a tool error and an NL assertion.
"""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from importer_helpers import cards_by_run, import_ok

from evalkit.aggregate.groups import aggregate
from evalkit.cli import cli
from evalkit.importers import ImportFormatError
from evalkit.importers.formats.tau2 import IMPORTER, args_rule
from evalkit.trajectory.reader import read_trajectory

FIX = Path(__file__).parent / "fixtures" / "tau2"
RESULTS = FIX / "airline_results.json"
MODEL = "openai/gpt-4.1"
RAW = json.loads(RESULTS.read_text())


def _convert(doc: dict, tmp_path: Path, **options):
    src = tmp_path / "results.json"
    src.write_text(json.dumps(doc))
    return IMPORTER.convert(str(src), **options)


def _runs(tmp_path: Path, doc: dict | None = None, **options) -> dict[str, list[dict]]:
    converted = _convert(doc or RAW, tmp_path, **options)
    return {run[0]["run_id"]: run for run in converted.runs}


def _import(tmp_path: Path, *paths: Path, **options) -> Path:
    out = tmp_path / "out"
    import_ok("tau2", list(paths) or [RESULTS], out, **options)
    return out


def rid(task: str, trial: int, model: str = MODEL) -> str:
    return f"tau2-airline-{task}:{model}:trial{trial}"


# -- tau2's own metrics, restated from src/tau2/metrics/agent_metrics.py --------------------------


def tau2_is_successful(reward) -> bool:
    return reward is not None and not math.isnan(reward) and (1 - 1e-6) <= reward <= (1 + 1e-6)


def tau2_pass_hat_ks(results: dict) -> dict[int, float]:
    """get_metrics_df + get_tasks_pass_hat_k + compute_metrics: infrastructure errors dropped, k up
    to the smallest trial count of a task (and num_trials), per-task C(c,k)/C(n,k), mean over tasks."""
    sims = [s for s in results["simulations"] if s["termination_reason"] != "infrastructure_error"]
    by_task: dict[str, list[bool]] = {}
    for s in sims:
        reward = s["reward_info"]["reward"] if s["reward_info"] else None
        by_task.setdefault(s["task_id"], []).append(tau2_is_successful(reward))
    max_k = min(results["info"]["num_trials"], min(len(v) for v in by_task.values()))
    return {
        k: sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in by_task.values()) / len(by_task)
        for k in range(1, max_k + 1)
    }


# -- mapping ---------------------------------------------------------------------------------------


def test_each_simulation_is_a_run_and_each_task_a_scenario(tmp_path):
    runs = _runs(tmp_path)
    assert sorted(runs) == sorted(rid(t, n) for t in "012" for n in range(4))
    meta = runs[rid("0", 1)][0]
    assert meta["scenario"]["id"] == "tau2-airline-0" and meta["scenario"]["title"] == "tau2-bench airline task 0"
    assert meta["adapter"] == {"provider": "openai", "model": MODEL, "harness": "tau2-bench"}
    assert meta["ts_utc"] == "2026-01-01T00:01:00" and meta["seed"] == 301
    assert meta["scenario_path"] == "results.json#simulations[1]"
    # structured user instructions become the task prompt, in tau2's own order
    assert meta["scenario"]["task_prompt"].splitlines()[:2] == [
        "Domain: airline",
        "Reason for call: You want to cancel reservation ABC123.",
    ]


@pytest.mark.parametrize(
    "compare_args,rule",
    [
        (None, {"mode": "within"}),
        ([], {"mode": "ignore"}),
        (["reservation_id", "cabin"], {"keys": ["reservation_id", "cabin"]}),
    ],
)
def test_compare_args_becomes_the_argument_rule(compare_args, rule):
    assert args_rule(compare_args) == rule


def test_expected_actions_are_one_unordered_block_with_tau2s_comparison(tmp_path):
    scenario = _runs(tmp_path)[rid("1", 0)][0]["scenario"]
    (block,) = scenario["ground_truth"]["procedure"]
    assert block["ordered"] is False and block["block"] == "expected_actions"
    assert [(a["tool"], a["args_match"]) for a in block["actions"]] == [
        ("update_reservation_flights", {"keys": ["reservation_id", "cabin"]}),
        ("send_certificate", {"mode": "ignore"}),
    ]
    assert block["actions"][0]["rationale"] == "tau2 expected action update_0"


def test_the_tools_of_expected_actions_are_the_commands(tmp_path):
    runs = _runs(tmp_path)
    assert runs[rid("0", 0)][0]["scenario"]["command_tools"] == ["cancel_reservation", "get_user_details"]
    assert runs[rid("2", 0)][0]["scenario"]["command_tools"] == ["book_reservation"]


def test_user_simulator_actions_are_not_required_and_its_calls_are_not_the_agents(tmp_path):
    run = _runs(tmp_path)[rid("2", 0)]
    actions = run[0]["scenario"]["ground_truth"]["procedure"][0]["actions"]
    assert [a["tool"] for a in actions] == ["book_reservation"]
    assert [a["name"] for a in run[0]["scenario"]["tau2"]["actions"]] == ["toggle_airplane_mode", "book_reservation"]
    assert [e["name"] for e in run if e["type"] == "tool_call"] == ["book_reservation"]
    assert run[-1]["done_payload"]["tau2"]["user_tool_calls"] == 1


def test_tool_error_flag_and_multi_tool_messages(tmp_path):
    runs = _runs(tmp_path)
    calls = [e for e in runs[rid("0", 2)] if e["type"] == "tool_call"]
    assert [(c["name"], c["is_error"]) for c in calls] == [("get_user_details", False), ("cancel_reservation", True)]
    assert calls[1]["result"] == "Error: reservation not found"
    multi = [e for e in runs[rid("1", 0)] if e["type"] == "tool_call"]
    assert [(c["call_index"], c["result"], c["is_error"]) for c in multi] == [
        (0, '{"ok": true}', False),
        (1, '{"ok": true}', False),
    ]


def test_reward_basis_components_are_the_success_checks(tmp_path):
    runs = _runs(tmp_path)
    final = runs[rid("0", 3)][-1]  # the database matched, "refund" was not said
    assert [(c["var"], c["passed"]) for c in final["success_eval"]["final_state"]] == [
        ("tau2.DB", True),
        ("tau2.COMMUNICATE", False),
    ]
    assert final["success_eval"]["all_passed"] is False
    final = runs[rid("2", 0)][-1]
    assert [(c["var"], c["passed"]) for c in final["success_eval"]["final_state"]] == [
        ("tau2.DB", True),
        ("tau2.ACTION", True),
        ("tau2.NL_ASSERTION", True),
    ]
    assert final["success_eval"]["all_passed"] is True and final["reason"] == "agent_done"


@pytest.mark.parametrize(
    "reason,final",
    [
        ("user_stop", "agent_done"),
        ("agent_stop", "agent_done"),
        ("max_steps", "budget_turns"),
        ("timeout", "budget_time"),
        ("too_many_errors", "budget_errors"),
        ("context_window_exceeded", "budget_context"),
        ("agent_error", "harness_error"),
        ("user_error", "harness_error"),
        ("unexpected_error", "harness_error"),
    ],
)
def test_termination_reason_maps_to_a_final_reason(tmp_path, reason, final):
    doc = copy.deepcopy(RAW)
    doc["simulations"][0]["termination_reason"] = reason
    run = _runs(tmp_path, doc)[rid("0", 0)]
    assert run[-1]["reason"] == final and run[-1]["done_payload"]["tau2"]["termination_reason"] == reason


def test_premature_termination_is_a_failed_scored_run(tmp_path):
    cards = cards_by_run(_import(tmp_path))
    card = cards[rid("1", 2)]  # max_steps: tau2 gave reward 0 and evaluated nothing
    assert card.status == "scored" and card.vector.all_passed is False and card.vector.end_state == 0.0
    assert card.informative.final_reason == "budget_turns"


def test_infrastructure_error_has_no_end_state_as_tau2_leaves_it_out(tmp_path):
    runs = _runs(tmp_path)
    assert runs[rid("2", 3)][-1]["success_eval"] is None
    assert cards_by_run(_import(tmp_path))[rid("2", 3)].status == "incomplete"


def test_missing_reward_info_is_a_failed_run(tmp_path):
    doc = copy.deepcopy(RAW)
    doc["simulations"][0]["reward_info"] = None
    final = _runs(tmp_path, doc)[rid("0", 0)][-1]
    assert final["success_eval"]["all_passed"] is False
    assert all(c["passed"] is False for c in final["success_eval"]["final_state"])


def test_model_comes_from_agent_info_and_model_option_overrides(tmp_path):
    assert rid("0", 0, "acme/other") in _runs(tmp_path, model="acme/other")
    doc = copy.deepcopy(RAW)
    doc["info"]["agent_info"]["llm"] = None
    with pytest.raises(ImportFormatError, match="info.agent_info.llm does not name the model; pass --model"):
        _convert(doc, tmp_path)


def test_tasks_file_supplies_tasks_the_results_file_lacks(tmp_path):
    doc = copy.deepcopy(RAW)
    tasks = doc.pop("tasks")
    doc["tasks"] = []
    with pytest.raises(
        ImportFormatError, match=r"simulations\[0\] \(task_id 0, trial 0\): no task '0'.*pass --tasks FILE"
    ):
        _convert(doc, tmp_path)
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps(tasks))
    assert sorted(_runs(tmp_path, doc, tasks=str(tasks_file))) == sorted(_runs(tmp_path))


# -- pass^k and agreement with tau2's evaluator -----------------------------------------------------


def test_pass_hat_k_equals_tau2s_formula(tmp_path):
    reference = tau2_pass_hat_ks(RAW)
    assert list(reference) == [1, 2, 3]  # task 2 has 3 evaluated trials: tau2 stops at k = 3
    (model,) = aggregate(cards_by_run(_import(tmp_path)).values())["models"]
    assert model["model"] == MODEL
    assert model["pass_hat_k"] == pytest.approx(list(reference.values()), abs=1e-12)
    # by hand: tasks pass 2/4, 1/4 and 1/3
    assert reference[1] == pytest.approx((2 / 4 + 1 / 4 + 1 / 3) / 3)


def test_evalkit_matches_agree_with_tau2_action_checks(tmp_path):
    """Wherever tau2 checked an agent action, evalkit's matching (the argument rule of the action)
    matched a call of it exactly when tau2's action_check says action_match."""
    cards = cards_by_run(_import(tmp_path))
    compared = 0
    for sim in RAW["simulations"]:
        checks = (sim["reward_info"] or {}).get("action_checks") or []
        card = cards[rid(sim["task_id"], sim["trial"])]
        matched = {c.tool for c in card.commands if c.class_ == "matched_required"}
        for check in checks:
            if check["action"]["requestor"] != "assistant":
                continue  # the user simulator's actions are not the agent's: evalkit does not require them
            assert (check["action"]["name"] in matched) is check["action_match"], (
                sim["id"],
                check["action"]["action_id"],
            )
            compared += 1
    assert compared == 15  # and both answers occur
    assert {
        c["action_match"] for s in RAW["simulations"] for c in ((s["reward_info"] or {}).get("action_checks") or [])
    } == {True, False}


def test_tau2_verdicts_become_ratings(tmp_path):
    out = _import(tmp_path)
    rows = [json.loads(line) for line in (out / "ratings.jsonl").read_text().splitlines()]
    mine = {(r["rater"], r["dimension"]): (r["rater_kind"], r["value"]) for r in rows if r["item_id"] == rid("2", 1)}
    assert mine == {
        ("tau2.reward", "outcome"): ("mechanical", "fail"),
        ("tau2.action_checks", "action:toggle_0"): ("mechanical", "match"),
        ("tau2.action_checks", "action:book_1"): ("mechanical", "match"),
        ("tau2.nl_assertions", "nl:0"): ("judge", "fail"),
    }
    assert not [r for r in rows if r["item_id"] == rid("2", 3)]  # the infrastructure error: tau2 rated nothing


# -- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mutate,message",
    [
        (
            lambda d: d.pop("simulations"),
            r"not a tau2-bench results file: needs info \(an object\) and simulations \(a list, or a simulations/ folder",
        ),
        (lambda d: d.update(simulations=[]), "no simulations in file"),
        (lambda d: d["info"]["environment_info"].update(domain_name="air line"), "domain_name must be a plain name"),
        (lambda d: d["simulations"][3].update(task_id=None), r"simulations\[3\]: task_id must be"),
        (
            lambda d: d["simulations"][3].update(trial="one"),
            r"simulations\[3\] \(task_id 0, trial 0\): trial must be an integer",
        ),
        (
            lambda d: d["simulations"][3].update(trial=0),
            r"simulations\[3\] \(task_id 0, trial 0\): task_id 0 trial 0 already occurs in simulations\[0\]",
        ),
        (
            lambda d: d["simulations"][1].update(termination_reason=None),
            r"simulations\[1\].*termination_reason must be a string",
        ),
        (
            lambda d: d["simulations"][1]["reward_info"].update(reward="1"),
            r"simulations\[1\].*reward_info.reward must be a finite number",
        ),
        (lambda d: d["simulations"][1].update(messages={"role": "user"}), r"simulations\[1\].*messages must be a list"),
        (
            lambda d: d["simulations"][1]["messages"][2]["tool_calls"][0].update(arguments="{bad"),
            r"simulations\[1\].*messages: message 2, tool call 0 \(get_user_details\): arguments are not valid JSON",
        ),
        (
            lambda d: d["tasks"][0]["evaluation_criteria"]["actions"][1].update(compare_args="reservation_id"),
            r"task 0: evaluation_criteria.actions\[1\].compare_args must be null or a list",
        ),
        (
            lambda d: d["tasks"][0]["evaluation_criteria"].update(reward_basis="DB"),
            "reward_basis must be a list of names",
        ),
        (
            lambda d: d["simulations"][1]["reward_info"]["action_checks"][0].pop("action_match"),
            r"reward_info.action_checks\[0\] needs action and action_match",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_simulation_and_field(tmp_path, mutate, message):
    doc = copy.deepcopy(RAW)
    mutate(doc)
    with pytest.raises(ImportFormatError, match=message) as info:
        _convert(doc, tmp_path)
    assert "\n" not in str(info.value) and str(info.value).startswith(str(tmp_path / "results.json"))


@pytest.mark.parametrize("content,message", [("[]", "expected a tau2-bench results object"), ("{", "not valid JSON")])
def test_not_a_results_file(tmp_path, content, message):
    src = tmp_path / "r.json"
    src.write_text(content)
    with pytest.raises(ImportFormatError, match=message):
        IMPORTER.convert(str(src))


# -- CLI and workers ---------------------------------------------------------------------------------


def _cli(cwd: Path, *args: str):
    cwd.mkdir(parents=True)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["import", "tau2", *args, "-o", "runs"])
    finally:
        os.chdir(old)


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_two_workers_write_the_same_bytes_as_one(tmp_path):
    inputs = []
    for n in range(3):  # three models' results files
        doc = copy.deepcopy(RAW)
        doc["info"]["agent_info"]["llm"] = f"acme/model-{n}"
        path = tmp_path / f"results-{n}.json"
        path.write_text(json.dumps(doc, indent=2))
        inputs.append(str(path))
    one = _cli(tmp_path / "one", *inputs, "--workers", "1")
    two = _cli(tmp_path / "two", *inputs, "--workers", "2")
    assert one.exit_code == two.exit_code == 0, one.output
    assert one.stdout == two.stdout and "36 ratings" not in one.stdout
    assert _tree(tmp_path / "one" / "runs") == _tree(tmp_path / "two" / "runs")
    assert len(_tree(tmp_path / "one" / "runs")) == 37  # 36 runs and ratings.jsonl


def test_cli_tasks_option_and_usage_errors(tmp_path):
    res = _cli(tmp_path / "a", str(RESULTS), "--tasks", str(RESULTS))  # a results file holds its tasks too
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0].endswith("airline_results.json: 12 runs -> runs")
    res = _cli(tmp_path / "b", str(RESULTS), "--domain", "airline")
    assert res.exit_code == 2 and "--domain is not used by format tau2" in res.stderr
    trajectory = read_trajectory(next((tmp_path / "a" / "runs").glob("tau2-airline-0_*trial0-*.jsonl")))
    assert trajectory.meta.run_id == rid("0", 0)


def test_an_errored_call_matches_for_tau2_but_not_for_evalkit(tmp_path):
    """A documented difference: tau2 compares every call, evalkit matches commands, and a call that
    failed is not a command."""
    doc = copy.deepcopy(RAW)
    doc["simulations"][0]["messages"][5]["error"] = True  # cancel_reservation failed
    (tmp_path / "in").mkdir()
    src = tmp_path / "in" / "results.json"
    src.write_text(json.dumps(doc))
    card = cards_by_run(_import(tmp_path, src))[rid("0", 0)]
    tau2 = {c["action"]["name"]: c["action_match"] for c in doc["simulations"][0]["reward_info"]["action_checks"]}
    assert tau2["cancel_reservation"] is True
    assert "cancel_reservation" not in {c.tool for c in card.commands if c.class_ == "matched_required"}
    assert card.vector.coverage == 0.5
