"""The audit's columnar pairs (PairList) and the orderings build_pairs and collect_ratings work out
once: checked against plain reference orderings, with more (judge, rubric, dimension) names and
(rater, dimension) keys than the shared sorted list serves (the per-item sort)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from evalkit.agreement import judge_vs_mechanical as jvm
from evalkit.agreement.pairings_config import Case, Condition, Pairing, load_audit_config
from evalkit.agreement.ratings import collect_ratings
from evalkit.db import JudgeColumns, JudgeValue, Rating
from evalkit.db.scores import Card

SCALE = (0, 1, 2, 3)


def value(run: str, judge: str, dimension: str, label, *, confidence=None, created: str = "t0") -> JudgeValue:
    return JudgeValue(
        f"{run}/{judge}/{created}", run, judge, "procedure_v1", dimension, label, confidence, True, 0, "why", created
    )


def pairing(confidence: bool = False) -> Pairing:
    # the mechanical label is the card's "m" (each of 0..3), the judge's value taken as it is when on the scale
    cases = tuple(Case(label, (("m", (Condition("==", label),)),)) for label in SCALE)
    return Pairing("p", "procedure_v1", "safety", "ordinal", SCALE, (), cases, confidence=confidence)


def config(p: Pairing):
    return dataclasses.replace(load_audit_config(None), pairings=(p,))


def cards(runs: list[str], rnd: random.Random) -> list[Card]:
    return [
        Card(r, f"s{i % 3}", f"agent-{i % 2}", f"{r}.jsonl", "scored", {"m": rnd.choice(SCALE)})
        for i, r in enumerate(runs)
    ]


@pytest.mark.parametrize("n_judges", [3, 40])  # 40 names: more than one shared sorted list serves
def test_pairs_follow_runs_then_judges_and_read_as_pairs(n_judges):
    rnd = random.Random(n_judges)
    runs = [f"run-{i:02d}" for i in range(12)]
    judges = [f"judge-{i:02d}" for i in range(n_judges)]
    values = [
        value(r, j, "safety", rnd.choice([*SCALE, "n/a"]), confidence=rnd.choice([None, 0.7]))
        for r in runs
        for j in judges
    ]
    rnd.shuffle(values)
    later = [
        v._replace(value=rnd.choice(SCALE), created_at="t1") for v in rnd.sample(values, 20)
    ]  # the latest answer wins
    p = pairing(confidence=True)
    held = cards(runs[:-1], rnd)  # the last run has no scorecard
    [ps] = jvm.build_pairs(held, JudgeColumns.of(values + later), config(p))

    latest = {(v.run_id, v.judge_model): v for v in values + later}
    mechanical = {c.run_id: c.card["m"] for c in held}
    expected = [latest[key] for key in sorted(latest) if key[0] in mechanical and latest[key].value in SCALE]
    pairs = list(ps.pairs)
    assert [(x.run_id, x.judge_model, x.judge_value) for x in pairs] == [
        (v.run_id, v.judge_model, v.value) for v in expected
    ]
    assert [x.mechanical_index for x in pairs] == [mechanical[v.run_id] for v in expected]
    assert [x.confidence for x in pairs] == [v.confidence for v in expected]
    assert ps.counts["no_scorecard"] == n_judges and ps.counts["unmapped_judge"] == len(latest) - n_judges - len(
        expected
    )
    # the sequence reads the same pairs however it is indexed
    assert len(ps.pairs) == len(pairs) and ps.pairs[-1] == pairs[-1] and ps.pairs[2:5] == pairs[2:5]
    with pytest.raises(IndexError):
        ps.pairs[len(pairs)]
    # counts and lists of disagreements read the columns: the same as the pairs say
    wrong = [x for x in pairs if x.judge_index != x.mechanical_index]
    assert jvm.count_disagreements([ps]) == len(wrong)
    assert jvm.disagreeing_runs([ps]) == ({"p": {x.run_id for x in wrong}} if wrong else {})
    assert jvm.disagreeing_runs([jvm.PairSet(ps.pairing, pairs, ps.counts)]) == jvm.disagreeing_runs([ps])
    listed = jvm.disagreements([ps])
    assert sorted((d["run_id"], d["judge_model"]) for d in listed) == sorted((x.run_id, x.judge_model) for x in wrong)
    assert jvm.disagreements([ps], 3) == listed[:3]
    # statistics over the columns and over the same pairs as a plain list agree
    cfg = config(p)
    assert jvm.pairing_stats(p, ps.pairs, cfg) == jvm.pairing_stats(p, pairs, cfg)
    assert jvm.slice_stats(p, ps.pairs, cfg, jvm.SLICE_KINDS) == jvm.slice_stats(p, pairs, cfg, jvm.SLICE_KINDS)


def test_pairs_without_confidence_carry_none():
    rnd = random.Random(1)
    runs = ["a", "b", "c"]
    values = [value(r, "j", "safety", 1, confidence=0.9) for r in runs]
    [ps] = jvm.build_pairs(cards(runs, rnd), JudgeColumns.of(values), config(pairing(confidence=False)))
    assert [x.confidence for x in ps.pairs] == [None, None, None]
    assert jvm.pairing_stats(ps.pairing, ps.pairs, config(ps.pairing))["n_with_confidence"] == 0


@pytest.mark.parametrize("n_raters", [2, 40])  # 40 keys: more than one shared sorted list serves
def test_ratings_follow_items_then_raters_and_the_latest_answer_wins(n_raters):
    rnd = random.Random(n_raters)
    items = [f"i{k}" for k in range(15)]
    judges = [f"judge-{k:02d}" for k in range(n_raters)]
    values = [
        value(i, j, d, rnd.choice(SCALE), created="t0") for i in items for j in judges for d in ("safety", "outcome")
    ]
    rnd.shuffle(values)
    values += [v._replace(value=9, created_at="t1") for v in rnd.sample(values, 10)]
    values += [v._replace(blind=False, value=8) for v in rnd.sample(values, 5)]  # not blind: not a rating
    stored = [
        Rating(rnd.choice(items + ["other"]), f"human-{k % 3}", "human", "safety", k % 4, None, "ratings")
        for k in range(12)
    ]
    stored.append(
        Rating(items[0], "judge-00@procedure_v1", "human", "safety", 7, None, "ratings")
    )  # a judge value wins

    expected: dict[tuple[str, str, str], Rating] = {}
    for s in stored:
        expected[(s.item_id, s.rater, s.dimension)] = s
    for v in values:
        if v.blind and v.replicate == 0:
            rater = f"{v.judge_model}@{v.rubric_id}"
            expected[(v.run_id, rater, v.dimension)] = Rating(
                v.run_id, rater, "judge", v.dimension, v.value, v.confidence, "annotations"
            )
    assert list(collect_ratings(stored, JudgeColumns.of(values))) == [expected[k] for k in sorted(expected)]
