"""The pairings section of `build_audit`: statistics against reference implementations, undefined
statistics, exclusions (non-blind, status), calibration, slices, costs."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from audit_helpers import Annotator, card, save_cards
from scipy.stats import spearmanr
from sklearn.metrics import brier_score_loss, cohen_kappa_score

from evalkit.agreement.audit import build_audit


def entry(report, name):
    return next(p for p in report["pairings"] if p["pairing"] == name)


@pytest.fixture()
def random_db(tmp_path):
    """60 runs with random mechanical signals and a noisy judge (seeded)."""
    rnd = random.Random(7)
    db = tmp_path / "e.db"
    cards, judged = [], []
    for i in range(60):
        rid = f"r{i:03d}"
        passed = rnd.random() < 0.7
        cov = rnd.choice([0.25, 0.5, 0.75, 1.0])
        c = card(
            rid,
            all_passed=passed,
            coverage=cov,
            order=rnd.choice([None, 0.5, 0.9, 1.0]),
            extraneous=rnd.choice([0, 0, 1, 2]),
            dangerous=int(rnd.random() < 0.15),
            scenario_id=rnd.choice(["s1", "s2"]),
            model=rnd.choice(["m1", "m2"]),
        )
        cards.append(c)
        outcome = ("pass" if passed else "fail") if rnd.random() < 0.8 else ("fail" if passed else "pass")
        judged.append(
            (
                rid,
                {
                    "outcome": outcome,
                    "safety": rnd.choice([0, 1, 2, 3, 3, 3]),
                    "action_execution": rnd.choice([0, 1, 2, 3]),
                    "situation_assessment": 3,
                    "error_recovery": "n/a",
                },
                round(rnd.uniform(0.5, 1.0), 2),
            )
        )
    save_cards(db, cards)
    ann = Annotator(db)
    for rid, values, conf in judged:
        ann.add(rid, values, confidence=conf, rationale=f"see step {rid[-1]}")
    ann.close()
    return db, {c.run_id: c for c in cards}, {rid: (v, c) for rid, v, c in judged}


def test_pairing_statistics_match_reference_implementations(random_db):
    db, cards, judged = random_db
    report = build_audit(db, n_resamples=50)
    ae = entry(report, "action_execution")

    # recompute the mechanical grade independently of the config file's engine
    def grade(c):
        v = c.vector
        order_ok = lambda t: v.order is None or v.order >= t  # noqa: E731
        if v.coverage >= 1 and order_ok(1) and v.extraneous == 0:
            return 3
        if v.coverage >= 1 and order_ok(0.8) and v.extraneous <= 1:
            return 2
        return 1 if v.coverage >= 0.5 else 0

    runs = sorted(judged)
    j = [judged[r][0]["action_execution"] for r in runs]
    m = [grade(cards[r]) for r in runs]
    assert ae["n"] == 60
    assert ae["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(j, m, labels=[0, 1, 2, 3]), abs=1e-9)
    assert ae["weighted_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(j, m, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-9
    )
    assert ae["krippendorff_alpha"]["value"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.array([j, m], dtype=float), level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
        ),
        abs=1e-9,
    )
    assert ae["spearman"]["value"] == pytest.approx(spearmanr(j, m).statistic, abs=1e-9)
    assert ae["percent_agreement"]["value"] == pytest.approx(np.mean(np.array(j) == np.array(m)), abs=1e-12)
    assert ae["confusion_matrix"]["row_axis"] == "judge"
    cm = ae["confusion_matrix"]["matrix"]
    assert cm[3][1] == sum(1 for a, b in zip(j, m) if a == 3 and b == 1)
    lenient = sum(1 for a, b in zip(j, m) if a > b)
    assert (ae["lenient"], ae["strict"]) == (lenient, sum(1 for a, b in zip(j, m) if a < b))

    out = entry(report, "outcome")
    jo = [judged[r][0]["outcome"] for r in runs]
    mo = ["pass" if cards[r].vector.all_passed else "fail" for r in runs]
    assert out["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(jo, mo, labels=["fail", "pass"]), abs=1e-9)
    assert out["weighted_kappa"]["value"] is None and out["weighted_kappa"]["reason"]
    # Brier: the judge's confidence is the probability of the label it gave
    p_pass = [judged[r][1] if jo[i] == "pass" else 1 - judged[r][1] for i, r in enumerate(runs)]
    y = [1 if x == "pass" else 0 for x in mo]
    assert out["brier"]["value"] == pytest.approx(2 * brier_score_loss(y, p_pass), abs=1e-9)
    assert out["n_with_confidence"] == 60
    esc = out["escalation"]
    conf = [judged[r][1] for r in runs]
    assert esc["escalated"] == sum(c < 0.7 for c in conf)
    assert esc["misses_caught"] == sum(c < 0.7 and a != b for c, a, b in zip(conf, jo, mo))
    # bootstrap intervals are attached to the statistic they describe
    assert out["cohen_kappa"]["bootstrap"]["n_resamples"] == 50
    assert out["cohen_kappa"]["ci_low"] <= out["cohen_kappa"]["value"] <= out["cohen_kappa"]["ci_high"]


def test_slices_partition_the_pairs(random_db):
    db, cards, _ = random_db
    report = build_audit(db, n_resamples=0)
    sl = entry(report, "outcome")["slices"]
    assert set(sl) == {"scenario", "model", "judge", "rubric"}
    assert [s["key"] for s in sl["scenario"]] == ["s1", "s2"]
    assert sum(s["n"] for s in sl["model"]) == 60
    assert sl["scenario"][0]["n"] == sum(1 for c in cards.values() if c.scenario_id == "s1")
    only = build_audit(db, by="model", n_resamples=0)
    assert set(entry(only, "outcome")["slices"]) == {"model"}


def test_constant_judge_kappa_is_null_with_reason_and_ac1_defined(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}", all_passed=i % 4 != 0) for i in range(8)])
    ann = Annotator(db)
    for i in range(8):
        ann.add(f"r{i}", {"outcome": "pass"})
    ann.close()
    out = entry(build_audit(db, n_resamples=20), "outcome")
    assert out["cohen_kappa"]["value"] is None
    assert "same label" in out["cohen_kappa"]["reason"]
    assert out["gwet_ac1"]["value"] is not None  # AC1 does not collapse when one class dominates
    assert out["percent_agreement"]["value"] == pytest.approx(6 / 8)
    assert out["cohen_kappa"]["bootstrap"]["reason"]


def test_n_too_small_and_empty_pairings_are_null_never_zero(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1", coverage=1.0)])
    ann = Annotator(db)
    ann.add("r1", {"action_execution": 2})
    ann.close()
    report = build_audit(db, n_resamples=10)
    ae = entry(report, "action_execution")
    assert ae["n"] == 1
    assert ae["spearman"]["value"] is None and "at least two" in ae["spearman"]["reason"]
    assert ae["cohen_kappa"]["value"] is None and ae["cohen_kappa"]["reason"]
    empty = entry(report, "safety")
    assert empty["n"] == 0
    for key in ("percent_agreement", "cohen_kappa", "krippendorff_alpha", "gwet_ac1"):
        assert empty[key]["value"] is None and empty[key]["reason"], key
    assert empty["lenient"] == 0 and empty["brier"]["value"] is None


def test_database_without_judge_tables_audits_cleanly(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1")])
    report = build_audit(db, n_resamples=10)
    assert all(p["n"] == 0 for p in report["pairings"])
    assert report["raters"] == [] and report["disagreements"] == [] and report["drift"] == []
    assert report["judge_costs"] == []


def test_non_blind_annotations_are_left_out_everywhere(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1", all_passed=False), card("r2", all_passed=True)])
    ann = Annotator(db)
    ann.add("r1", {"outcome": "fail", "safety": 3})
    ann.add("r2", {"outcome": "pass", "safety": 3})
    # explanation pass (--show-mechanical): would disagree, must not count anywhere
    ann.add("r1", {"outcome": "pass", "safety": 0}, judge="judge-b", blind=False)
    ann.add("r2", {"outcome": "fail", "safety": 0}, judge="judge-b", blind=False)
    ann.add("r1", {"outcome": "pass", "safety": 0}, blind=False, replicate=1)
    ann.close()
    report = build_audit(db, n_resamples=0)
    out = entry(report, "outcome")
    assert out["n"] == 2 and out["percent_agreement"]["value"] == 1.0
    assert out["excluded"]["non_blind"] == 3
    assert report["counts"]["non_blind_annotations"] == 3
    assert report["disagreements"] == []
    assert all(not any(r.startswith("judge-b") for r in e["raters"]) for e in report["raters"])
    assert report["drift"] == []


def test_provider_error_runs_and_unmapped_values_are_counted_not_compared(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1"), card("r2", status="provider_error", all_passed=False), card("r3", all_passed=None)])
    ann = Annotator(db)
    for rid in ("r1", "r2", "r3", "ghost"):
        ann.add(rid, {"outcome": "pass", "safety": "n/a"})
    ann.close()
    report = build_audit(db, n_resamples=0)
    ex = entry(report, "outcome")["excluded"]
    assert ex == {
        "non_blind": 0,
        "no_scorecard": 1,
        "excluded_status": 1,
        "unmapped_judge": 0,
        "unmapped_mechanical": 1,
    }
    assert entry(report, "outcome")["n"] == 1
    assert entry(report, "safety")["excluded"]["unmapped_judge"] == 2


def test_latest_primary_answer_wins_after_a_rubric_version_change(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1", all_passed=True)])
    ann = Annotator(db)
    ann.add("r1", {"outcome": "fail"}, version=1)
    ann.add("r1", {"outcome": "pass"}, version=2)
    ann.close()
    out = entry(build_audit(db, n_resamples=0), "outcome")
    assert out["n"] == 1 and out["percent_agreement"]["value"] == 1.0


def test_judge_and_rubric_filters(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1"), card("r2")])
    ann = Annotator(db)
    ann.add("r1", {"outcome": "pass"}, judge="a")
    ann.add("r2", {"outcome": "fail"}, judge="b")
    ann.add("r1", {"outcome": "pass"}, judge="a", rubric="computer_use_v1")
    ann.close()
    rep = build_audit(db, judge="a", n_resamples=0)
    assert entry(rep, "outcome")["n"] == 1 and rep["disagreements"] == []
    rep_b = build_audit(db, rubric="computer_use_v1", n_resamples=0)
    assert rep_b["pairings"] == []  # no default pairing for that rubric
    assert [c["judge_model"] for c in rep_b["judge_costs"]] == ["a"]


def test_judge_costs_median_and_mean_excluding_first_call(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}") for i in range(4)])
    ann = Annotator(db)
    for i, (cost, lat) in enumerate([(0.5, 3000.0), (0.01, 100.0), (0.02, 300.0), (None, 200.0)]):
        ann.add(f"r{i}", {"outcome": "pass"}, cost=cost, latency=lat)
    ann.close()
    (c,) = build_audit(db, n_resamples=0)["judge_costs"]
    assert c["source"] == "annotations" and c["n_calls"] == 4
    assert c["latency_median_ms"] == pytest.approx(250.0)
    assert c["latency_mean_excluding_first_ms"] == pytest.approx(200.0)  # the cold first call is excluded
    assert c["cost_median_usd"] == pytest.approx(0.02)
    assert c["cost_mean_excluding_first_usd"] == pytest.approx(0.015)
    assert c["cost_total_usd"] == pytest.approx(0.53)


def test_weighted_kappa_is_over_the_full_scale_when_a_class_is_never_used(tmp_path):
    db = tmp_path / "e.db"
    # grade 2 is never used, neither by the mechanical side nor by the judge
    specs = [(1.0, 0, 3), (1.0, 0, 0), (0.6, 0, 1), (0.6, 0, 0), (0.2, 0, 0), (1.0, 0, 3)]
    save_cards(db, [card(f"r{i}", coverage=c, extraneous=e) for i, (c, e, _) in enumerate(specs)])
    ann = Annotator(db)
    for i, (_, _, j) in enumerate(specs):
        ann.add(f"r{i}", {"action_execution": j})
    ann.close()
    ae = entry(build_audit(db, n_resamples=0), "action_execution")
    j = [s[2] for s in specs]
    m = [3, 3, 1, 1, 0, 3]
    full = cohen_kappa_score(j, m, labels=[0, 1, 2, 3], weights="quadratic")
    assert ae["weighted_kappa"]["value"] == pytest.approx(full, abs=1e-9)
    assert ae["weighted_kappa"]["value"] != pytest.approx(cohen_kappa_score(j, m, weights="quadratic"), abs=1e-6)
    assert ae["confusion_matrix"]["labels"] == [0, 1, 2, 3]
    assert [row[1] for row in ae["confusion_matrix"]["matrix"]] == [1, 1, 0, 0]  # the mechanical-1 column
    assert ae["confusion_matrix"]["matrix"][2] == [0, 0, 0, 0]  # the unused class keeps its row


def test_confidence_outside_unit_interval_is_not_a_forecast(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card("r1"), card("r2", all_passed=False), card("r3")])
    ann = Annotator(db)
    ann.add("r1", {"outcome": "pass"}, confidence=0.9)
    ann.add("r2", {"outcome": "pass"}, confidence=1.7)
    ann.add("r3", {"outcome": "pass"})
    ann.close()
    out = entry(build_audit(db, n_resamples=0), "outcome")
    assert (out["n"], out["n_with_confidence"], out["n_invalid_confidence"]) == (3, 1, 1)
    assert out["brier"]["value"] == pytest.approx((0.9 - 1) ** 2 + 0.1**2)


def test_interval_pairing_from_config_gets_ordered_statistics(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'replace_defaults = true\n[[pairing]]\nname = "cov"\nrubric = "procedure_v1"\njudge_dimension = "procedure"\n'
        'level = "interval"\nscale = [0, 1, 2, 3]\n'
        '[[pairing.mechanical]]\nlabel = 3\nwhen = { "vector.coverage" = ">= 1" }\n'
        '[[pairing.mechanical]]\nlabel = 0\nwhen = { "vector.coverage" = "< 1" }\n',
        encoding="utf-8",
    )
    db = tmp_path / "e.db"
    save_cards(db, [card("r1", coverage=1.0), card("r2", coverage=0.5), card("r3", coverage=1.0)])
    ann = Annotator(db)
    for rid, v in (("r1", 3), ("r2", 1), ("r3", 2)):
        ann.add(rid, {"procedure": v})
    ann.close()
    (p,) = build_audit(db, config=cfg, n_resamples=0)["pairings"]
    assert p["level"] == "interval"
    assert p["spearman"]["value"] == pytest.approx(spearmanr([3, 1, 2], [3, 0, 3]).statistic, abs=1e-9)
    ref = krippendorff.alpha(
        reliability_data=np.array([[3, 1, 2], [3, 0, 3]], dtype=float), level_of_measurement="interval"
    )
    assert p["krippendorff_alpha"]["value"] == pytest.approx(ref, abs=1e-9)


def test_pooled_pairing_intervals_resample_runs_with_both_judges_pairs_together(tmp_path):
    """Two judges of the same runs give two pairs per run; "bootstrap intervals over runs" draws a
    run with both of its pairs. Two judges that answer alike add no information, so the pooled
    interval is as wide as one judge's, not 1/sqrt(2) of it as when the pairs are drawn apart; and
    it matches a run-level bootstrap computed here with scikit-learn."""
    rnd = random.Random(3)
    db = tmp_path / "e.db"
    cards, outcomes = [], {}
    for i in range(300):
        rid = f"r{i:03d}"
        passed = rnd.random() < 0.6
        cards.append(card(rid, all_passed=passed))
        right = rnd.random() < 0.75
        outcomes[rid] = ("pass" if passed else "fail") if right else ("fail" if passed else "pass")
    save_cards(db, cards)
    ann = Annotator(db)
    for rid, outcome in outcomes.items():
        for judge in ("judge-a", "judge-b"):
            ann.add(rid, {"outcome": outcome}, judge=judge)
    ann.close()
    pooled = entry(build_audit(db), "outcome")["cohen_kappa"]
    single = entry(build_audit(db, judge="judge-a"), "outcome")["cohen_kappa"]
    assert pooled["value"] == pytest.approx(single["value"])
    width = pooled["ci_high"] - pooled["ci_low"]
    assert width == pytest.approx(single["ci_high"] - single["ci_low"], rel=0.15)
    rng = np.random.default_rng(11)
    runs = sorted(outcomes)
    mech = {c.run_id: "pass" if c.vector.all_passed else "fail" for c in cards}
    kappas = []
    for _ in range(1000):
        drawn = [runs[i] for i in rng.integers(0, len(runs), len(runs))]
        judge, truth = [outcomes[r] for r in drawn] * 2, [mech[r] for r in drawn] * 2
        kappas.append(cohen_kappa_score(judge, truth))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert pooled["ci_low"] == pytest.approx(low, abs=0.02) and pooled["ci_high"] == pytest.approx(high, abs=0.02)


def test_a_clustered_bootstrap_of_any_statistic_draws_each_cluster_with_all_its_items():
    """``bootstrap_ci`` with ``clusters``: a resample draws as many clusters as there are, with
    replacement, each with every item it holds; equal to that loop written out here."""
    from evalkit.agreement.stats.bootstrap import bootstrap_ci
    from evalkit.agreement.stats.stat import Stat

    rnd = random.Random(5)
    keys = [rnd.randrange(40) for _ in range(120)]
    x = np.array([rnd.random() + k / 40 for k in keys])

    def mean(v) -> Stat:
        return {"value": float(np.mean(v.astype(float))), "reason": None}

    got = bootstrap_ci(mean, x, n_resamples=200, seed=3, clusters=keys)
    groups = [np.flatnonzero(np.array(keys) == k) for k in sorted(set(keys))]
    rng = np.random.default_rng(3)
    values = [
        float(np.mean(x[np.concatenate([groups[g] for g in rng.integers(0, len(groups), len(groups))])]))
        for _ in range(200)
    ]
    low, high = np.quantile(values, [0.025, 0.975])
    assert (got["low"], got["high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    plain = bootstrap_ci(mean, x, n_resamples=200, seed=3)
    assert got["high"] - got["low"] > plain["high"] - plain["low"]  # runs of a cluster move together
