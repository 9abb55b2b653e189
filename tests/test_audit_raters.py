"""The raters section (judge ↔ judge ↔ human), the Alt-Test and judge drift."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from audit_helpers import Annotator, add_ratings, card, save_cards
from sklearn.metrics import cohen_kappa_score

from evalkit.agreement import alt_test as alt
from evalkit.agreement.audit import build_audit
from evalkit.agreement.pairings_config import DimensionSpec
from evalkit.agreement.raters import level_and_labels


def raters_entry(report, dim):
    return next(e for e in report["raters"] if e["dimension"] == dim)


def test_judge_annotations_count_as_one_rater_per_model_and_rubric(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}") for i in range(4)])
    ann = Annotator(db)
    for i in range(4):
        ann.add(f"r{i}", {"safety": i % 4}, judge="a")
        ann.add(f"r{i}", {"safety": (i + 1) % 4}, judge="b")
        ann.add(f"r{i}", {"safety": 3}, judge="b", rubric="other_v1")
    ann.close()
    e = raters_entry(build_audit(db, n_resamples=0), "safety")
    assert e["raters"] == ["a@procedure_v1", "b@other_v1", "b@procedure_v1"]
    assert set(e["rater_kinds"].values()) == {"judge"}
    assert e["n_items"] == 4 and len(e["pairwise_cohen_kappa"]["pairs"]) == 3


def test_judge_against_human_ratings_matches_sklearn(tmp_path):
    rnd = random.Random(3)
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i:02d}") for i in range(30)])
    ann = Annotator(db)
    human = []
    judge_vals = []
    for i in range(30):
        h = rnd.choice(["pass", "fail"])
        j = h if rnd.random() < 0.75 else ("fail" if h == "pass" else "pass")
        ann.add(f"r{i:02d}", {"outcome": j}, judge="gpt")
        human.append((f"r{i:02d}", "alice", "human", "outcome", h))
        judge_vals.append(j)
    ann.close()
    add_ratings(db, human)
    e = raters_entry(build_audit(db, n_resamples=0), "outcome")
    assert e["raters"] == ["alice", "gpt@procedure_v1"]
    assert e["rater_kinds"] == {"alice": "human", "gpt@procedure_v1": "judge"}
    h = [r[4] for r in human]
    assert e["cohen_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(h, judge_vals, labels=["fail", "pass"]), abs=1e-9
    )
    assert e["percent_agreement"]["value"] == pytest.approx(np.mean(np.array(h) == np.array(judge_vals)))


def test_item_rated_by_fewer_than_two_raters_is_not_counted(tmp_path):
    db = tmp_path / "e.db"
    add_ratings(
        db,
        [
            ("i1", "a", "human", "d", "x"),
            ("i1", "b", "human", "d", "x"),
            ("i2", "a", "human", "d", "y"),
            ("i2", "b", "human", "d", "z"),
            ("i3", "a", "human", "d", "z"),
        ],
    )  # i3: one rater only
    e = raters_entry(build_audit(db, n_resamples=0), "d")
    assert (e["n_items"], e["n_items_dropped"], e["n_ratings"]) == (2, 1, 4)
    assert e["percent_agreement"]["value"] == pytest.approx(0.5)  # i3's rating would not change it anyway
    assert e["cohen_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(["x", "y"], ["x", "z"], labels=e["labels"]), abs=1e-9
    )


def test_missing_ratings_match_krippendorff_reference(tmp_path):
    db = tmp_path / "e.db"
    grid = {  # item -> {rater: value}; None = not rated
        "i1": {"a": 1, "b": 1, "c": 2},
        "i2": {"a": 0, "b": None, "c": 0},
        "i3": {"a": 3, "b": 2, "c": None},
        "i4": {"a": None, "b": 3, "c": 3},
        "i5": {"a": 2, "b": None, "c": None},  # one rater only: does not count
        "i6": {"a": None, "b": None, "c": 1},  # one rater only
    }
    add_ratings(db, [(i, r, "human", "skill", v) for i, rs in grid.items() for r, v in rs.items() if v is not None])
    e = raters_entry(build_audit(db, n_resamples=0), "skill")
    assert e["n_items"] == 4 and e["n_items_dropped"] == 2
    assert e["level"] == "ordinal" and e["labels"] == [0, 1, 2, 3]
    data = np.array(
        [[grid[i][r] if grid[i][r] is not None else np.nan for i in sorted(grid)] for r in "abc"], dtype=float
    )
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    assert e["krippendorff_alpha"]["value"] == pytest.approx(ref, abs=1e-9)
    # pooled pairwise agreement: i1 1/3, i2 1/1, i3 0/1, i4 1/1 -> 3 agreeing pairs of 6
    assert e["percent_agreement"]["value"] == pytest.approx(3 / 6)
    assert e["cohen_kappa"]["value"] is None and e["cohen_kappa"]["reason"].startswith("not applicable")


def test_a_dimension_with_one_rater_is_skipped_with_reason(tmp_path):
    db = tmp_path / "e.db"
    add_ratings(db, [("i1", "a", "human", "solo", 1), ("i2", "a", "human", "solo", 2)])
    report = build_audit(db, n_resamples=0)  # a ratings-only database (no evalkit runs) is fine
    assert report["raters"] == []
    assert report["raters_skipped"] == [
        {"dimension": "solo", "raters": ["a"], "reason": "fewer than two raters on a shared item"}
    ]


def test_constant_raters_give_null_with_reason(tmp_path):
    db = tmp_path / "e.db"
    add_ratings(db, [(f"i{n}", r, "human", "flag", "yes") for n in range(5) for r in ("a", "b", "c")])
    save_cards(db, [card("r1")])
    e = raters_entry(build_audit(db, n_resamples=0), "flag")
    assert e["percent_agreement"]["value"] == 1.0
    assert e["fleiss_kappa"]["value"] is None and e["fleiss_kappa"]["reason"]
    assert e["krippendorff_alpha"]["value"] is None and e["krippendorff_alpha"]["reason"]
    assert all(p["value"] is None and p["reason"] for p in e["pairwise_cohen_kappa"]["pairs"])


def test_default_levels_strings_nominal_integers_ordinal_full_scale():
    assert level_and_labels(["pass", "fail", "pass"], None) == ("nominal", ["fail", "pass"])
    assert level_and_labels([0, 3, 3], None) == ("ordinal", [0, 1, 2, 3])  # classes never used still count
    assert level_and_labels([1, "n/a", 2], None) == ("nominal", [1, 2, "n/a"])
    assert level_and_labels([0.5, 1.5], None) == ("interval", [0.5, 1.5])
    assert level_and_labels([True, False], None) == ("nominal", [False, True])
    assert level_and_labels(["3", "1"], None) == ("nominal", ["1", "3"])  # strings that look numeric stay strings
    spec = DimensionSpec(level="ordinal", scale=("low", "mid", "high"))
    assert level_and_labels(["high", "low"], spec) == ("ordinal", ["low", "mid", "high"])


def test_string_and_integer_labels_in_the_audit(tmp_path):
    db = tmp_path / "e.db"
    rows = []
    for n, (a, b) in enumerate([(0, 0), (3, 2), (2, 2), (3, 3), (1, 3)]):
        rows += [(f"i{n}", "a", "human", "grade", a), (f"i{n}", "b", "human", "grade", b)]
    for n, (a, b) in enumerate([("x", "x"), ("y", "x"), ("z", "z"), ("y", "y")]):
        rows += [(f"i{n}", "a", "human", "kind", a), (f"i{n}", "b", "human", "kind", b)]
    add_ratings(db, rows)
    save_cards(db, [card("r1")])
    rep = build_audit(db, n_resamples=0)
    grade, kind = raters_entry(rep, "grade"), raters_entry(rep, "kind")
    assert grade["level"] == "ordinal" and kind["level"] == "nominal"
    ga = [0, 3, 2, 3, 1]
    gb = [0, 2, 2, 3, 3]
    assert grade["weighted_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-9
    )
    assert kind["weighted_kappa"]["value"] is None
    assert kind["cohen_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(["x", "y", "z", "y"], ["x", "x", "z", "y"], labels=["x", "y", "z"]), abs=1e-9
    )


def test_configured_level_overrides_default_and_excludes_off_scale_values(tmp_path):
    db = tmp_path / "e.db"
    rows = []
    for n, (a, b) in enumerate([(0, 0), (3, "n/a"), (2, 2), (3, 3), (1, 3)]):
        rows += [(f"i{n}", "a", "human", "recovery", a), (f"i{n}", "b", "human", "recovery", b)]
    add_ratings(db, rows)
    save_cards(db, [card("r1")])
    cfg = tmp_path / "c.toml"
    cfg.write_text('[dimensions.recovery]\nlevel = "ordinal"\nscale = [0, 1, 2, 3]\n', encoding="utf-8")
    default = raters_entry(build_audit(db, n_resamples=0), "recovery")
    assert default["level"] == "nominal"  # "n/a" is a string label
    e = raters_entry(build_audit(db, n_resamples=0, config=cfg), "recovery")
    assert e["level"] == "ordinal" and e["labels"] == [0, 1, 2, 3]
    assert e["n_excluded"] == 1 and e["n_items"] == 4


def _alt_db(tmp_path, n_items, judge_fn):
    rnd = random.Random(11)
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i:02d}") for i in range(n_items)])
    ann = Annotator(db)
    rows, truth = [], {}
    for i in range(n_items):
        t = rnd.choice(["pass", "fail"])
        truth[f"r{i:02d}"] = t
        for h in ("h1", "h2", "h3"):
            v = t if rnd.random() < 0.85 else ("fail" if t == "pass" else "pass")
            rows.append((f"r{i:02d}", h, "human", "outcome", v))
        ann.add(f"r{i:02d}", {"outcome": judge_fn(t, rnd)}, judge="j")
    ann.close()
    add_ratings(db, rows)
    return db, rows


def test_alt_test_with_three_humans(tmp_path):
    db, rows = _alt_db(tmp_path, 40, lambda t, rnd: t)  # a judge that always gives the true label
    e = raters_entry(build_audit(db, n_resamples=0), "outcome")
    (t,) = e["alt_test"]
    assert t["judge"] == "j@procedure_v1" and t["humans"] == ["h1", "h2", "h3"]
    assert t["metric"] == "accuracy" and t["epsilon"] == 0.2 and t["n_items"] == 40
    assert t["winning_rate"] == 1.0 and t["passed"] is True
    # the audit feeds the Alt-Test exactly the shared items
    humans = {h: {i: v for i, r, _, _, v in rows if r == h} for h in ("h1", "h2", "h3")}
    import json
    import sqlite3  # noqa: E401

    conn = sqlite3.connect(str(db))
    judge = {r: json.loads(v) for r, v in conn.execute("SELECT run_id, value FROM annotation_values")}
    conn.close()
    direct = alt.alt_test(judge, humans, epsilon=0.2, metric="accuracy", q=0.05)
    assert t["advantage_prob"] == pytest.approx(direct["advantage_prob"], abs=1e-12)
    assert [p["p_value"] for p in t["per_human"]] == pytest.approx([p["p_value"] for p in direct["per_human"]])


def test_alt_test_fails_a_coin_flip_judge(tmp_path):
    db, _ = _alt_db(tmp_path, 40, lambda t, rnd: rnd.choice(["pass", "fail"]))
    (t,) = raters_entry(build_audit(db, n_resamples=0), "outcome")["alt_test"]
    assert t["passed"] is False and t["winning_rate"] < 0.5


def test_alt_test_needs_three_humans(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}") for i in range(40)])
    ann = Annotator(db)
    for i in range(40):
        ann.add(f"r{i}", {"outcome": "pass"}, judge="j")
    ann.close()
    add_ratings(db, [(f"r{i}", h, "human", "outcome", "pass") for i in range(40) for h in ("h1", "h2")])
    e = raters_entry(build_audit(db, n_resamples=0), "outcome")
    assert e["alt_test"] == []


def test_drift_flag_more_than_one_dimension_moved_by_two(tmp_path):
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}") for i in range(3)])
    ann = Annotator(db)
    first = {"safety": 3, "procedure": 3, "action_execution": 3, "outcome": "pass"}
    for i in range(3):
        ann.add(f"r{i}", first)
    ann.add(
        "r0", {"safety": 1, "procedure": 0, "action_execution": 3, "outcome": "pass"}, replicate=1
    )  # two moved by >=2
    ann.add("r1", {"safety": 1, "procedure": 2, "action_execution": 2, "outcome": "fail"}, replicate=1)  # one moved
    ann.add("r2", {"safety": 3, "procedure": 3, "action_execution": 3, "outcome": "pass"}, replicate=1)  # stable
    ann.add("r2", {"safety": 0, "procedure": 0, "action_execution": 0, "outcome": "fail"}, replicate=2, blind=False)
    ann.close()
    (d,) = build_audit(db, n_resamples=0)["drift"]
    assert (d["judge_model"], d["rubric"], d["n_replicates"], d["n_flagged"]) == ("judge-a", "procedure_v1", 3, 1)
    assert d["flagged"][0]["run_id"] == "r0" and d["flagged"][0]["moved"] == ["procedure", "safety"]
    dims = {x["dimension"]: x for x in d["dimensions"]}
    assert dims["safety"]["n_moved"] == 2 and dims["action_execution"]["n_moved"] == 0
    assert dims["outcome"]["percent_agreement"]["value"] == pytest.approx(2 / 3)
    assert dims["safety"]["n"] == 3


def test_drift_kappa_of_a_dimension_answered_n_a_says_the_labels_are_off_the_scale(tmp_path):
    """error_recovery answered "n/a" both times: agreement counts the pairs (1.0), kappa cannot
    (off the 0-3 scale); its reason says so, not that no item was rated twice."""
    db = tmp_path / "e.db"
    save_cards(db, [card(f"r{i}") for i in range(3)])
    ann = Annotator(db)
    for i in range(3):
        ann.add(f"r{i}", {"error_recovery": "n/a", "safety": 3})
        ann.add(f"r{i}", {"error_recovery": "n/a", "safety": 3}, replicate=1)
    ann.close()
    (d,) = build_audit(db, n_resamples=0)["drift"]
    dims = {x["dimension"]: x for x in d["dimensions"]}
    er = dims["error_recovery"]
    assert er["n"] == 3 and er["percent_agreement"]["value"] == 1.0
    for stat in ("cohen_kappa", "weighted_kappa"):
        assert er[stat]["value"] is None
        assert er[stat]["reason"].startswith("3 of 3 pairs have a label off the scale (0, 1, 2, 3), left out")
    assert "off the scale" not in (dims["safety"]["cohen_kappa"]["reason"] or "")


def _cross(db, dim, config=None):
    return raters_entry(build_audit(db, n_resamples=0, config=config), dim)["judge_vs_mechanical"]


def test_judge_vs_mechanical_counts_direction_by_credit_and_matches_sklearn(tmp_path):
    db = tmp_path / "e.db"
    pairs = [("C", "C"), ("C", "I"), ("P", "I"), ("I", "C"), ("I", "I"), ("N", "I"), ("C", "P")]
    rows = []
    for n, (j, m) in enumerate(pairs):
        rows += [(f"i{n}", "grader", "judge", "value", j), (f"i{n}", "match", "mechanical", "value", m)]
    rows.append(("i9", "human1", "human", "value", "C"))  # a human on another item: not in the pair
    add_ratings(db, rows)
    save_cards(db, [card("r1")])
    [c] = _cross(db, "value")
    assert (c["judge"], c["mechanical"], c["n"], c["agree"]) == ("grader", "match", 7, 2)
    # lenient: C>I, P>I, C>P; strict: I<C; N vs I: equal credit, neither
    assert (c["lenient"], c["strict"]) == (3, 1)
    labels = c["confusion_matrix"]["labels"]
    assert c["confusion_matrix"]["matrix"] == [[sum(1 for p in pairs if p == (a, b)) for b in labels] for a in labels]
    js, ms = zip(*pairs)
    assert c["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(js, ms, labels=labels))


def test_judge_vs_mechanical_direction_undefined_without_credit_order(tmp_path):
    db = tmp_path / "e.db"
    rows = []
    for n, (j, m) in enumerate([("red", "blue"), ("blue", "blue")]):
        rows += [(f"i{n}", "g", "judge", "colour", j), (f"i{n}", "m", "mechanical", "colour", m)]
    add_ratings(db, rows)
    save_cards(db, [card("r1")])
    [c] = _cross(db, "colour")
    assert c["n"] == 2 and c["agree"] == 1
    assert c["lenient"]["value"] is None and "no credit order" in c["lenient"]["reason"]
    cfg = tmp_path / "c.toml"
    cfg.write_text('[dimensions.colour]\nlevel = "nominal"\nscale = ["blue", "red"]\n', encoding="utf-8")
    [c] = _cross(db, "colour", cfg)  # the configured scale is the credit order, least first
    assert (c["lenient"], c["strict"]) == (1, 0)


def test_mechanical_raters_are_not_humans_in_the_alt_test(tmp_path):
    db, rows = _alt_db(tmp_path, 40, lambda t, rnd: t)
    add_ratings(db, [(i, f"m{k}", "mechanical", "outcome", v) for i, _, _, _, v in rows for k in range(3)])
    e = raters_entry(build_audit(db, n_resamples=0), "outcome")
    [t] = e["alt_test"]
    assert t["humans"] == ["h1", "h2", "h3"]
    assert {c["mechanical"] for c in e["judge_vs_mechanical"]} == {"m0", "m1", "m2"}
