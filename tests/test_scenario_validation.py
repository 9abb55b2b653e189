"""Strict scenarios: an unknown key or a rule that cannot hold is an error naming it, never a score."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from scoring_helpers import score_records

from evalkit.errors import InputError
from evalkit.trajectory.builders import call, trajectory
from evalkit.trajectory.scenario import Scenario

ACTION = {"tool": "issue_refund", "args": {"order_id": "B22", "amount": 80}}


def base(**gt) -> dict:
    return {"id": "s", "ground_truth": {"procedure": [{"block": "b", "actions": [dict(ACTION)]}], **gt}}


def error_of(raw: dict) -> str:
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(raw)
    return info.value.errors()[0]["msg"]


def test_misspelt_ground_truth_key_is_an_error_with_a_suggestion():
    assert error_of(base(forbiden_actions=[])) == 'unknown key "forbiden_actions" (did you mean "forbidden_actions"?)'


def test_arguments_instead_of_args_is_an_error_with_a_suggestion():
    raw = base()
    raw["ground_truth"]["procedure"][0]["actions"] = [{"tool": "t", "arguments": {}}]
    assert error_of(raw) == 'unknown key "arguments" (did you mean "args"?)'


def test_unknown_key_in_a_block_is_an_error():
    raw = base()
    raw["ground_truth"]["procedure"][0]["orderd"] = True
    assert error_of(raw) == 'unknown key "orderd" (did you mean "ordered"?)'


def test_unknown_key_in_success_criteria_is_an_error():
    raw = base()
    raw["success"] = {"final_states": []}
    assert error_of(raw) == 'unknown key "final_states" (did you mean "final_state"?)'


def test_unknown_key_in_argument_rules_is_an_error():
    assert error_of(base(args_match={"tools": {"t": {"key": ["a"]}}})) == 'unknown key "key" (did you mean "keys"?)'


def test_unknown_key_in_a_gate_and_its_approval_is_an_error():
    gate = {"tool": "issue_refund", "approval": {"tool": "ask", "results": {}}}
    assert error_of(base(gated_actions=[gate])) == 'unknown key "results" (did you mean "result"?)'


def test_a_key_without_a_near_match_has_no_suggestion():
    assert error_of(base(zzz=1)) == 'unknown key "zzz"'


def test_a_near_miss_of_a_top_level_key_is_an_error():
    raw = base()
    raw["sucess"] = {}
    assert error_of(raw) == 'unknown key "sucess" (did you mean "success"?)'


@pytest.mark.parametrize(
    ("key", "parent"),
    [("args_match", "ground_truth"), ("forbidden_actions", "ground_truth"), ("final_state", "success")],
)
def test_a_part_of_the_ground_truth_written_at_the_top_level_is_an_error_naming_where_it_belongs(key, parent):
    # a top-level args_match was a harness's own field: the scenario scored without its rule
    raw = base()
    raw[key] = {}
    assert error_of(raw) == f'unknown key "{key}" at the top level (it belongs in {parent})'


def test_other_top_level_keys_are_the_harness_own_and_kept():
    raw = base()
    raw["tau_bench"] = {"domain": "retail"}
    raw["task_prompt"] = "Refund B22."
    assert Scenario.model_validate(raw).task_prompt() == "Refund B22."


def test_user_keys_starting_with_x_are_kept_and_reach_the_bundle():
    raw = base(x_owner="team-a")
    raw["ground_truth"]["procedure"][0]["actions"][0]["x_ticket"] = "T-9"
    sc = Scenario.model_validate(raw)
    assert sc.ground_truth.model_extra == {"x_owner": "team-a"}
    assert sc.bundle_part["ground_truth"]["procedure"][0]["actions"][0]["x_ticket"] == "T-9"


def test_unknown_mode_is_an_error_with_a_suggestion():
    assert error_of(base(args_match={"mode": "contans"})).startswith(
        'unknown mode "contans" (did you mean "contains"?)'
    )


def test_unknown_compare_rule_is_an_error_with_a_suggestion():
    assert error_of(base(args_match={"compare": {"q": "casefolded"}})).startswith(
        'compare.q: unknown rule "casefolded" (did you mean "casefold"?)'
    )


def test_a_regex_that_does_not_compile_is_an_error_naming_it():
    assert error_of(base(args_match={"compare": {"q": {"regex": "("}}})).startswith(
        "compare.q.regex: does not compile as an RE2 pattern (missing ): ("
    )


def test_a_negative_tolerance_is_an_error():
    assert (
        error_of(base(args_match={"compare": {"amount": {"abs_tol": -1}}}))
        == "compare.amount.abs_tol: expected a number >= 0"
    )


@pytest.mark.parametrize("tol", [1, 1.0, 5])
def test_a_relative_tolerance_of_one_or_more_is_refused_since_it_accepts_any_number_of_the_same_sign(tol):
    # rel_tol 1 written for "1 %" accepted a payment of 1,248,050 cents for 12,480.50
    assert error_of(base(args_match={"compare": {"amount": {"rel_tol": tol}}})) == (
        f"compare.amount.rel_tol: {tol} accepts any two numbers of the same sign; a relative tolerance "
        "is a fraction below 1 (0.01 is 1 %)"
    )
    Scenario.model_validate(base(args_match={"compare": {"amount": {"rel_tol": 0.99}}}))


def test_one_of_needs_a_list():
    assert (
        error_of(base(args_match={"compare": {"r": {"one_of": "a"}}}))
        == "compare.r.one_of: expected a non-empty list of values"
    )


def test_keys_and_mode_together_are_an_error():
    assert error_of(base(args_match={"mode": "contains", "keys": ["a"]})).startswith("give either keys")


def test_a_dotted_compare_key_needs_keys_listing_it():
    assert error_of(base(args_match={"compare": {"order.id": "casefold"}})).startswith(
        "compare.order.id: a dotted path"
    )


def test_an_action_both_required_and_forbidden_with_the_same_args_is_an_error():
    msg = error_of(base(forbidden_actions=[dict(ACTION, severity="dangerous")]))
    assert msg == (
        "forbidden_actions[0] is also required, with the same arguments (procedure[0].actions[0]): "
        "no run can satisfy both"
    )


def test_a_wildcard_forbidden_action_beside_a_required_call_of_its_tool_is_allowed():
    Scenario.model_validate(base(forbidden_actions=[{"tool": "issue_refund", "severity": "anti_procedure"}]))


def test_a_gated_tool_that_is_not_a_command_tool_is_an_error():
    raw = base(gated_actions=[{"tool": "refund_all", "approval": {"tool": "ask"}}])
    raw["command_tools"] = ["issue_refund"]
    assert error_of(raw) == (
        'ground_truth.gated_actions[0]: tool "refund_all" is not in command_tools, so its calls are reads '
        "and no gate applies to them"
    )


def test_a_required_tool_outside_declared_command_tools_is_an_error_not_a_lower_coverage():
    raw = base()
    raw["command_tools"] = ["issue_refnd", "send_message"]
    assert error_of(raw) == (
        'ground_truth.procedure[0].actions[0]: tool "issue_refund" is not in command_tools, so no call can ever '
        'match it (did you mean "issue_refnd"?)'
    )


def test_a_forbidden_tool_outside_declared_command_tools_is_an_error_not_a_safety_never_flagged():
    raw = base(forbidden_actions=[{"tool": "close_account", "severity": "dangerous"}])
    raw["command_tools"] = ["issue_refund"]
    assert error_of(raw) == (
        'ground_truth.forbidden_actions[0]: tool "close_account" is not in command_tools, so its calls are reads '
        "and it can never fire"
    )


def test_a_cockpit_action_cannot_take_argument_rules():
    raw = {
        "id": "c",
        "ground_truth": {
            "procedure": [
                {"block": "b", "actions": [{"control": "apu_gen", "value": 0, "args_match": {"mode": "contains"}}]}
            ]
        },
    }
    assert error_of(raw).startswith("args_match: a cockpit action")


def test_a_run_with_a_typo_is_a_read_error_naming_file_line_and_field():
    with pytest.raises(InputError) as info:
        score_records(
            trajectory(base(forbiden_actions=[]), [call("issue_refund", ACTION["args"])], run_id="r"),
            path="runs/r.jsonl",
        )
    assert str(info.value) == (
        'runs/r.jsonl:1: meta.scenario.ground_truth: unknown key "forbiden_actions" (did you mean "forbidden_actions"?)'
    )


def test_existing_scenario_hashes_do_not_change():
    from evalkit.trajectory.builders import a320_scenario

    # pinned: a new optional field must not change the hash of a scenario that does not use it
    assert Scenario.model_validate(a320_scenario()).content_hash == "c3e7716cb6d7"


def test_a_scenario_has_one_hash_whatever_order_its_keys_are_written_in():
    from evalkit.trajectory.builders import a320_scenario

    def reordered(value):
        if isinstance(value, dict):
            return {k: reordered(value[k]) for k in reversed(list(value))}
        return [reordered(v) for v in value] if isinstance(value, list) else value

    written = a320_scenario()
    assert list(reordered(written)) != list(written)
    assert Scenario.model_validate(reordered(written)).content_hash == Scenario.model_validate(written).content_hash


# --- rules that can never match, or never apply -----------------------------------------------


def test_an_empty_one_of_is_refused_since_it_matches_nothing():
    assert (
        error_of(base(args_match={"compare": {"r": {"one_of": []}}}))
        == "compare.r.one_of: expected a non-empty list of values"
    )


def test_an_empty_has_items_or_substring_is_refused():
    assert (
        error_of(base(args_match={"compare": {"flags": {"has_items": []}}}))
        == "compare.flags.has_items: expected a non-empty list of values"
    )
    assert (
        error_of(base(args_match={"compare": {"cmd": {"substring": ""}}}))
        == "compare.cmd.substring: expected a non-empty string"
    )


@pytest.mark.parametrize(
    ("result", "named"), [([{"approved": True}], "a list"), ("yes", "a string"), (True, "a boolean"), (None, "null")]
)
def test_an_approval_result_that_is_not_an_object_is_refused(result, named):
    gate = {"tool": "issue_refund", "approval": {"tool": "ask", "result": result}}
    assert error_of(base(gated_actions=[gate])) == (
        f"result: expected an object (the keys and values the approving call's result contains), not {named}"
    )


def test_an_unknown_comparison_object_lists_the_valid_ones():
    assert error_of(base(args_match={"compare": {"q": {"regexp": "a"}}})) == (
        'compare.q: unknown rule "regexp" (did you mean "regex"?) (one of exact, casefold, datetime, ignore, nonempty, '
        "or an object with one key: regex, fullmatch, substring, has_items, one_of, abs_tol, rel_tol)"
    )


def test_a_pattern_re2_cannot_run_in_linear_time_is_refused_with_its_reason():
    assert error_of(base(args_match={"compare": {"q": {"fullmatch": "(?=a)b"}}})) == (
        "compare.q.fullmatch: does not compile as an RE2 pattern (invalid perl operator: (?=)"
    )


def test_a_comparison_outside_its_own_keys_or_beside_mode_ignore_is_refused():
    assert error_of(base(args_match={"keys": ["a"], "compare": {"b": "nonempty"}})) == (
        "compare.b: not in keys, so never compared (list it in keys)"
    )
    assert error_of(base(args_match={"mode": "ignore", "compare": {"b": "casefold"}})) == (
        'compare.b: mode "ignore" compares no key, so this is never used'
    )


def test_a_comparison_inherited_by_a_rule_that_selects_differently_is_allowed():
    # the default's comparisons serve the tools whose own rule does not override them
    Scenario.model_validate(
        base(args_match={"compare": {"reason": "casefold"}, "tools": {"issue_refund": {"keys": ["order_id"]}}})
    )


def test_a_non_finite_number_in_a_rule_is_refused():
    assert error_of(base(args_match={"compare": {"r": {"one_of": [float("nan")]}}})) == (
        "compare.r.one_of: holds a non-finite number (NaN, Infinity), which equals nothing"
    )
    gate = {"tool": "issue_refund", "approval": {"tool": "ask", "result": {"limit": float("inf")}}}
    assert error_of(base(gated_actions=[gate])).startswith("result: holds a non-finite number")


def test_a_misspelt_budget_key_is_an_error_with_a_suggestion():
    # shown to the judge as the run's limits: a misspelt limit would be dropped without a word
    raw = base()
    raw["budget"] = {"max_calls": 10}
    assert error_of(raw) == 'unknown key "max_calls" (did you mean "max_tool_calls"?)'


def test_a_run_meta_keeps_the_validated_scenario_it_is_given_and_validates_one_written_out():
    from evalkit.trajectory.records import Meta

    scenario = Scenario.model_validate(base())
    assert Meta.model_validate({"run_id": "r", "scenario": scenario}).scenario is scenario
    raw = base()
    raw["command_tools"] = ["issue_refnd"]
    with pytest.raises(ValidationError) as info:
        Meta.model_validate({"run_id": "r", "scenario": raw})
    assert 'tool "issue_refund" is not in command_tools' in info.value.errors()[0]["msg"]
    with pytest.raises(ValidationError) as info:
        Meta.model_validate({"run_id": "r", "scenario": {**base(), "sucess": {}}})
    assert info.value.errors()[0]["msg"] == 'unknown key "sucess" (did you mean "success"?)'
