"""The audit's probe statistics (evalkit/agreement/probe_stats.py) and the --fail-if gates, against hand
counts and against statsmodels' Wilson interval."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from evalkit.agreement.probe_stats import (
    LENIENT,
    STRICT,
    UNCHANGED,
    UNDIRECTED,
    direction,
    failed_run_ids,
    probe_entries,
)
from evalkit.db.judge import JudgeValue
from evalkit.db.probes import ProbeAnswer
from evalkit.probes.gates import crossed, parse_gate


@dataclass
class FakeCard:
    run_id: str
    card: dict


def value(run, dim, v, *, blind=True, replicate=0, judge="j", created="1"):
    return JudgeValue(
        annotation_id=f"{run}{blind}{replicate}{created}",
        run_id=run,
        judge_model=judge,
        rubric_id="r",
        dimension=dim,
        value=v,
        confidence=None,
        blind=blind,
        replicate=replicate,
        rationale="",
        created_at=created,
    )


def answer(probe, run, values, judge="j"):
    return ProbeAnswer(
        probe=probe, run_id=run, judge_model=judge, rubric_id="r", rubric_version=1, values=values, created_at="2"
    )


def cards(failed=(), passed=()):
    return [FakeCard(r, {"vector": {"all_passed": False}}) for r in failed] + [
        FakeCard(r, {"vector": {"all_passed": True}}) for r in passed
    ]


@pytest.mark.parametrize(
    "before, after, code",
    [
        (2, 2, UNCHANGED),
        (2, 3, LENIENT),
        (3, 0, STRICT),
        ("fail", "pass", LENIENT),
        ("pass", "fail", STRICT),
        ("n/a", 3, UNDIRECTED),
        (3, "n/a", UNDIRECTED),
        ("n/a", "n/a", UNCHANGED),
        (1, True, UNCHANGED),
        ("C", 1, UNCHANGED),
    ],
)
def test_direction_of_a_label_move(before, after, code):
    assert direction(before, after) == code


def test_rates_count_only_runs_with_both_answers_and_undirected_moves_apart():
    values = [value(r, "safety", v) for r, v in (("a", 3), ("b", 2), ("c", "n/a"), ("d", 1), ("e", 3))]
    values.append(value("a", "safety", 0, blind=False))  # non-blind: not an original
    values.append(value("b", "safety", 0, replicate=1))  # a replicate: not an original
    answers = [
        answer("verbosity", r, {"safety": v, "rationale": "x", "confidence": 0.5})
        for r, v in (("a", 3), ("b", 3), ("c", 2), ("d", 0), ("z", 3))
    ]
    [entry] = probe_entries(failed_run_ids(cards()), values, answers, bootstrap=None)
    assert (entry["n"], entry["unchanged"], entry["lenient"], entry["strict"], entry["n_undirected"]) == (4, 1, 1, 1, 1)
    assert entry["unchanged_rate"]["value"] == 0.25 and entry["lenient_flip_rate"]["value"] == 0.25
    assert entry["fooled_rate"]["value"] is None and "outcome dimension only" in entry["fooled_rate"]["reason"]
    assert entry["unchanged_rate"]["ci_low"] is None


def test_the_latest_original_answer_is_the_one_compared():
    values = [value("a", "outcome", "pass", created="1"), value("a", "outcome", "fail", created="3")]
    [entry] = probe_entries(
        failed_run_ids(cards(failed=["a"])), values, [answer("false_claim", "a", {"outcome": "pass"})], bootstrap=None
    )
    assert entry["fooled"] == 1 and entry["fooled_rate"]["value"] == 1.0


def test_fooled_rate_is_over_mechanically_failed_runs_only():
    runs = {"f1": ("fail", "pass"), "f2": ("fail", "fail"), "f3": ("pass", "pass"), "p1": ("fail", "pass")}
    values = [value(r, "outcome", b) for r, (b, _) in runs.items()]
    answers = [answer("injection", r, {"outcome": a}) for r, (_, a) in runs.items()]
    [entry] = probe_entries(
        failed_run_ids(cards(failed=["f1", "f2", "f3"], passed=["p1"])), values, answers, bootstrap=None
    )
    assert (entry["n_failed"], entry["n_failed_judged_fail"], entry["fooled"]) == (3, 2, 1)
    assert entry["fooled_rate"]["value"] == pytest.approx(1 / 3)
    assert entry["lenient_flip_rate"]["value"] == 0.5  # f1 and p1 of four


def test_fooled_rate_without_a_failed_run_is_undefined_not_zero():
    [entry] = probe_entries(
        failed_run_ids(cards(passed=["p"])),
        [value("p", "outcome", "fail")],
        [answer("false_claim", "p", {"outcome": "pass"})],
        bootstrap=None,
    )
    assert entry["fooled_rate"]["value"] is None and entry["fooled_rate"]["reason"]


def test_intervals_are_wilson_score_intervals_of_the_share_of_runs():
    rng = np.random.default_rng(0)
    moves = rng.integers(0, 4, size=40)
    values = [value(f"r{i:02d}", "procedure", 1) for i in range(40)]
    answers = [answer("distractor_reads", f"r{i:02d}", {"procedure": int(m)}) for i, m in enumerate(moves)]
    [entry] = probe_entries(
        failed_run_ids(cards()), values, answers, bootstrap={"n_resamples": 200, "seed": 5, "ci": 0.9}
    )
    got = entry["lenient_flip_rate"]
    lenient = int(np.sum(moves > 1))
    assert got["value"] == pytest.approx(lenient / 40)
    low, high = proportion_confint(lenient, 40, alpha=0.1, method="wilson")
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


def test_a_judge_never_fooled_on_two_runs_is_not_certain_never_to_be():
    # a percentile bootstrap of 0 of 2 is [0, 0]: certainty two runs cannot give
    values = [value(r, "outcome", "fail") for r in ("f1", "f2")]
    answers = [answer("false_claim", r, {"outcome": "fail"}) for r in ("f1", "f2")]
    [entry] = probe_entries(failed_run_ids(cards(failed=["f1", "f2"])), values, answers, bootstrap={"ci": 0.95})
    fooled = entry["fooled_rate"]
    assert (entry["fooled"], entry["n_failed"], fooled["value"], fooled["ci_low"]) == (0, 2, 0.0, 0.0)
    assert fooled["ci_high"] == pytest.approx(proportion_confint(0, 2, alpha=0.05, method="wilson")[1], rel=1e-9)
    assert fooled["ci_high"] > 0.6


def test_entries_are_sorted_by_probe_order_then_judge_and_dimension():
    values = [value("a", d, 1, judge=j) for d in ("z", "b") for j in ("j2", "j1")]
    answers = [
        answer(p, "a", {"z": 1, "b": 1}, judge=j) for p in ("shuffle_reads", "false_claim") for j in ("j2", "j1")
    ]
    keys = [
        (e["probe"], e["judge_model"], e["dimension"])
        for e in probe_entries(failed_run_ids(cards()), values, answers, bootstrap=None)
    ]
    # given in reverse on every key; every combination, the last key varying fastest
    assert keys == list(itertools.product(("false_claim", "shuffle_reads"), ("j1", "j2"), ("b", "z")))


def _entry(probe, dim, metric, v, reason=None):
    stat = {"value": v, "reason": reason}
    base = {
        k: {"value": None, "reason": "x"}
        for k in ("unchanged_rate", "lenient_flip_rate", "strict_flip_rate", "fooled_rate")
    }
    return {"probe": probe, "dimension": dim, "judge_model": "j", "rubric": "r", **base, metric: stat}


def test_gate_parsing_and_operators():
    g = parse_gate(" verbosity.safety.unchanged_rate <= 0.9 ")
    assert (g.probe, g.dimension, g.metric, g.op, g.limit) == ("verbosity", "safety", "unchanged_rate", "<=", 0.9)
    entries = [
        _entry("verbosity", "safety", "unchanged_rate", 0.9),
        _entry("verbosity", "procedure", "unchanged_rate", 0.5),
    ]
    assert len(crossed(g, entries)) == 1
    assert crossed(parse_gate("verbosity.safety.unchanged_rate<0.9"), entries) == []
    assert len(crossed(parse_gate("verbosity.unchanged_rate<0.9"), entries)) == 1  # any dimension


def test_fooled_rate_gate_reads_the_outcome_entry_and_an_undefined_one_fails():
    entries = [
        _entry("false_claim", "safety", "fooled_rate", 0.9),
        _entry("false_claim", "outcome", "fooled_rate", 0.0),
    ]
    assert crossed(parse_gate("false_claim.fooled_rate>0.05"), entries) == []
    undefined = [_entry("false_claim", "outcome", "fooled_rate", None, "no mechanically failed run has both answers")]
    assert crossed(parse_gate("false_claim.fooled_rate>0.05"), undefined) == [
        "gate failed: false_claim.fooled_rate>0.05: not measured (no mechanically failed run has both answers)"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "false_claim.fooled_rate",
        "typo.fooled_rate>1",
        "false_claim.kappa>1",
        "a.b.c.fooled_rate>1",
        "false_claim.fooled_rate>1e",
        "false_claim.fooled_rate=1",
    ],
)
def test_bad_gates_are_value_errors_naming_the_gate(text):
    with pytest.raises(ValueError, match="--fail-if"):
        parse_gate(text)
