"""The jury rater: majority for nominal, median for ordinal, ties to the lower
credit; a rater like any judge in pairings, raters and the Alt-Test; only with --jury."""

from __future__ import annotations

import json

import pytest
from audit_helpers import Annotator, add_ratings, card, save_cards
from click.testing import CliRunner

from evalkit.agreement.audit import build_audit_with_pairs
from evalkit.agreement.jury import credit_key, jury_values, verdict
from evalkit.agreement.pairings_config import DimensionSpec, load_audit_config
from evalkit.cli import cli
from evalkit.db import JudgeValue

ORDINAL = DimensionSpec(level="ordinal", scale=(0, 1, 2, 3))


def jv(run, judge, dim, value, *, rubric="procedure_v1", blind=True, replicate=0, at="2026-01-01T00:00:00Z"):
    return JudgeValue(f"{run}-{judge}-{replicate}", run, judge, rubric, dim, value, None, blind, replicate, "", at)


def test_majority_vote_for_nominal_dimension():
    assert verdict(["pass", "fail", "pass"], "nominal", credit_key(None)) == "pass"
    assert verdict(["fail", "fail", "pass"], "nominal", credit_key(None)) == "fail"


def test_median_for_ordinal_dimension():
    key = credit_key(ORDINAL)
    assert verdict([0, 3, 2], "ordinal", key) == 2
    assert verdict([3, 3, 0, 1, 2], "ordinal", key) == 2


def test_nominal_tie_goes_to_lower_credit():
    # pass/fail has credit 1/0 whatever order the votes came in
    assert verdict(["pass", "fail"], "nominal", credit_key(None)) == "fail"
    assert verdict(["fail", "pass"], "nominal", credit_key(None)) == "fail"
    # inspect_ai grades: C 1, P 0.5, I 0; the 2-2 tie between C and P goes to P
    assert verdict(["C", "C", "P", "P", "I"], "nominal", credit_key(None)) == "P"


def test_ordinal_even_jury_takes_lower_middle():
    assert verdict([3, 1], "ordinal", credit_key(ORDINAL)) == 1
    assert verdict([0, 2, 3, 3], "ordinal", credit_key(ORDINAL)) == 2


def test_configured_scale_order_decides_credit():
    # a scale that puts "good" below "poor" (least credit first) makes "good" the lower credit
    spec = DimensionSpec(level="nominal", scale=("good", "poor"))
    assert verdict(["poor", "good"], "nominal", credit_key(spec)) == "good"


def test_unscaled_label_is_not_a_vote_on_ordinal_dimension():
    key = credit_key(ORDINAL)
    assert verdict([2, "n/a", 3], "ordinal", key) == 2
    assert verdict([2, "n/a"], "ordinal", key) is None  # one vote left: no jury


def test_jury_values_use_latest_blind_primary_answer_per_model():
    cfg = load_audit_config(None)
    values = [
        jv("r1", "a", "outcome", "pass", at="1"),
        jv("r1", "a", "outcome", "fail", at="2"),  # a re-ran: the later answer counts
        jv("r1", "b", "outcome", "pass", at="3"),
        jv("r1", "c", "outcome", "pass", blind=False),  # non-blind: not a juror
        jv("r1", "c", "outcome", "pass", replicate=1),  # a replicate: not a juror
        jv("r2", "a", "outcome", "pass"),  # one judge only: no jury
    ]
    out = jury_values(values, cfg)
    assert [(v.run_id, v.judge_model, v.rubric_id, v.dimension, v.value) for v in out] == [
        ("r1", "jury", "procedure_v1", "outcome", "fail")
    ]
    assert out[0].rationale == "jury of a, b"


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "j.db"
    save_cards(
        path, [card("r1", all_passed=True), card("r2", all_passed=False, coverage=0.5), card("r3", all_passed=True)]
    )
    ann = Annotator(path)
    votes = {  # run: (judge-a, judge-b, judge-c) outcome, safety
        "r1": (("pass", 3), ("pass", 2), ("fail", 0)),
        "r2": (("pass", 3), ("fail", 1), ("fail", 1)),
        "r3": (("fail", 3), ("pass", 3), ("pass", 2)),
    }
    for run, answers in votes.items():
        for judge, (outcome, safety) in zip(("judge-a", "judge-b", "judge-c"), answers):
            ann.add(run, {"outcome": outcome, "safety": safety}, judge=judge)
    ann.close()
    add_ratings(
        path,
        [
            (r, h, "human", "outcome", v)
            for h in ("h1", "h2", "h3")
            for r, v in (("r1", "pass"), ("r2", "fail"), ("r3", "pass"))
        ],
    )
    return path


def test_jury_appears_in_raters_pairings_and_alt_test(db):
    report, pairs = build_audit_with_pairs(db, jury=True, n_resamples=0)
    jury_pairs = {(p["pairing"], p["item_id"]): p["judge_value"] for p in pairs if p["judge_model"] == "jury"}
    assert jury_pairs[("outcome", "r1")] == "pass"
    assert jury_pairs[("outcome", "r2")] == "fail"
    assert jury_pairs[("outcome", "r3")] == "pass"
    outcome = next(e for e in report["pairings"] if e["pairing"] == "outcome")
    assert outcome["n"] == 12  # 3 runs x (3 judges + the jury)
    raters = {e["dimension"]: e for e in report["raters"]}
    assert "jury@procedure_v1" in raters["outcome"]["raters"]
    assert raters["outcome"]["rater_kinds"]["jury@procedure_v1"] == "judge"
    assert "jury@procedure_v1" in raters["safety"]["raters"]
    assert "jury@procedure_v1" in [a["judge"] for a in raters["outcome"]["alt_test"]]
    assert report["filters"]["jury"] is True
    # the jury is not an annotation: counts are the judges' own
    assert report["counts"]["annotations"] == 9


def test_jury_median_reaches_the_safety_pairing(db):
    _, pairs = build_audit_with_pairs(db, jury=True, n_resamples=0)
    raw = {p["item_id"]: p for p in pairs if p["judge_model"] == "jury" and p["pairing"] == "safety"}
    # medians of (3,2,0), (3,1,1), (3,3,2) are 2, 1, 3; the safety pairing maps them onto its scale
    assert set(raw) == {"r1", "r2", "r3"}
    _, plain = build_audit_with_pairs(db, n_resamples=0)
    by_value = {}
    for p in plain:
        if p["pairing"] == "safety":
            by_value[(p["item_id"], p["judge_model"])] = p["judge_value"]
    assert raw["r1"]["judge_value"] == by_value[("r1", "judge-b")]  # judge-b said 2, the median
    assert raw["r2"]["judge_value"] == by_value[("r2", "judge-b")]  # 1
    assert raw["r3"]["judge_value"] == by_value[("r3", "judge-a")]  # 3


def test_no_jury_without_the_flag(db):
    report, pairs = build_audit_with_pairs(db, n_resamples=0)
    assert all(p["judge_model"] != "jury" for p in pairs)
    assert all("jury@procedure_v1" not in e["raters"] for e in report["raters"])
    assert report["filters"]["jury"] is False


def test_cli_jury_flag(db):
    runner = CliRunner()
    with_jury = runner.invoke(cli, ["audit", "--db", str(db), "--jury", "--format", "json", "--resamples", "0"])
    assert with_jury.exit_code == 0, with_jury.output
    data = json.loads(with_jury.output)
    assert any("jury@procedure_v1" in e["raters"] for e in data["raters"])
    table = runner.invoke(cli, ["audit", "--db", str(db), "--jury", "--resamples", "0"])
    assert table.exit_code == 0 and "jury@procedure_v1" in table.output
    plain = runner.invoke(cli, ["audit", "--db", str(db), "--resamples", "0"])
    assert "jury" not in plain.output


def test_report_carries_the_jury_when_asked(db):
    from evalkit.report import build_report

    with_jury = build_report(db, jury=True)["agreement"]["audit"]
    assert any("jury@procedure_v1" in e["raters"] for e in with_jury["raters"])
    plain = build_report(db)["agreement"]["audit"]
    assert all("jury@procedure_v1" not in e["raters"] for e in plain["raters"])
