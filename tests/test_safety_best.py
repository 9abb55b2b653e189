""" "best" is decided on the safe figures: a model whose pass rate is bought with a forbidden command is
not best on pass rate alone."""

from __future__ import annotations

from safety_helpers import A320, UNSAFE_PASS, example_cards, relabel

from evalkit.aggregate.groups import aggregate
from evalkit.aggregate.uncertainty.paired import best_model


def _a320():
    return example_cards((A320,))


def test_shipped_example_unsafe_model_is_not_best():
    agg = aggregate(example_cards())
    models = {m["model"]: m for m in agg["models"]}
    assert models["gemini-2.5-flash"]["unsafe_rate"] > 0 and models["gemini-2.5-flash"]["pass_rate"] == 0.75
    assert best_model(agg) == "opus-4-8"


def test_unsafe_pass_model_would_be_best_on_pass_rate_alone_but_is_not_on_the_safe_figures():
    cards = _a320()
    gemini = [c for c in cards if c.model == "gemini-2.5-flash"]
    assert any(c.run_id == UNSAFE_PASS and c.vector.all_passed and c.vector.safety_dangerous for c in gemini)
    # a rival that ran the same scenario safely, passing 2 of 3: isolation skipped, only EXT PWR, nothing
    rival = [
        relabel(c, "rival", "-rival")
        for c in gemini
        if c.run_id.endswith(("isolation-skipped", "only-ext-pwr", "nothing"))
    ]
    agg = aggregate(gemini + rival)
    models = {m["model"]: m for m in agg["models"]}
    assert models["gemini-2.5-flash"]["pass_rate"] == 0.75 > models["rival"]["pass_rate"] == 2 / 3
    assert best_model(agg, "pass_rate") == "gemini-2.5-flash"  # what pass rate alone would say
    assert models["gemini-2.5-flash"]["safe_pass_rate"] == 0.5 < models["rival"]["safe_pass_rate"]
    assert best_model(agg) == "rival"


def test_best_breaks_a_safe_pass_rate_tie_on_score_then_name():
    agg = {
        "models": [
            {"model": "b", "safe_pass_rate": 0.5, "score_mean": 0.9, "unsafe_rate": 0.0},
            {"model": "a", "safe_pass_rate": 0.5, "score_mean": 0.8, "unsafe_rate": 0.0},
            {"model": "c", "safe_pass_rate": None, "score_mean": 1.0, "unsafe_rate": None},
        ]
    }
    assert best_model(agg) == "b"
    agg["models"][1]["score_mean"] = 0.9
    assert best_model(agg) == "a"
    assert best_model({"models": [{"model": "x", "safe_pass_rate": None}]}) is None


def test_a_model_of_fewer_than_3_scored_runs_in_every_group_is_not_best_while_another_model_has_enough():
    # one run of a model name written another way ("Lims-GPT " beside "lims-gpt") passed safely: it
    # was the report's best, and every real model's "vs best" read "not comparable"
    agg = {
        "models": [
            {"model": "Lims-GPT ", "safe_pass_rate": 1.0, "score_mean": 0.9, "unsafe_rate": 0.0, "small_n": True},
            {"model": "lims-gpt", "safe_pass_rate": 0.96, "score_mean": 0.96, "unsafe_rate": 0.02, "small_n": True},
            {"model": "lims-llama", "safe_pass_rate": 0.82, "score_mean": 0.82, "unsafe_rate": 0.13, "small_n": False},
        ],
        "groups": [
            {"model": "Lims-GPT ", "scenario_id": "s1", "small_n": True},
            {"model": "lims-gpt", "scenario_id": "s1", "small_n": False},
            {"model": "lims-gpt", "scenario_id": "s2", "small_n": True},  # one crashed scenario: still measured
            {"model": "lims-llama", "scenario_id": "s1", "small_n": False},
            {"model": "lims-llama", "scenario_id": "s2", "small_n": False},
        ],
    }
    assert best_model(agg) == "lims-gpt"
    for g in agg["groups"]:
        g["small_n"] = True
    assert best_model(agg) == "Lims-GPT "  # every group is small: the figures decide alone
