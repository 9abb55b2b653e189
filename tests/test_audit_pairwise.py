"""Pairwise verdicts: `evalkit annotations import` of pair rows and the audit's position-bias figures,
against hand-computed values, scikit-learn's Cohen's κ, and public judge data with published numbers
(LLMBar's MT-Bench set judged by ChatGPT, JudgeBench judged by Claude-3-Haiku; read in place from
../shared/judgeref, never copied here)."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from evalkit.cli import cli

JUDGEREF = Path(__file__).resolve().parents[2] / "shared" / "judgeref"
HEADER = ["pair_id", "a", "b", "order", "rater", "rater_kind", "dimension", "verdict"]


def judgeref(*parts: str) -> Path:
    path = JUDGEREF.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"public judge data not found: {JUDGEREF} (the shared/judgeref folder beside the checkout)")
    return path


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def write_csv(path: Path, rows: list[list], header: list[str] = HEADER) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def import_and_audit(tmp_path: Path, rows: list[list], header: list[str] = HEADER, *audit_args: str) -> dict:
    db = tmp_path / "e.db"
    res = invoke("annotations", "import", str(write_csv(tmp_path / "pairs.csv", rows, header)), "--db", str(db))
    assert res.exit_code == 0, res.output
    assert "pairwise verdicts" in res.output
    res = invoke("audit", "--db", str(db), "--format", "json", *audit_args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def only_judge(audit: dict, judge: str) -> dict:
    (entry,) = [j for j in audit["pairwise"]["judges"] if j["judge"] == judge]
    return entry


def assert_covered(fig: dict) -> None:
    assert fig["ci_low"] is not None and fig["ci_low"] <= fig["value"] <= fig["ci_high"]


# --- a small dataset of our own: every rule, hand-computed --------------------------------------

LEN = ["a_length", "b_length"]
OWN = [
    # p1: a in both orders, gold a; a longer
    ["p1", "r1", "r2", "ab", "j1", "judge", "overall", "a", 100, 50],
    ["p1", "r1", "r2", "ba", "j1", "judge", "overall", "a", 100, 50],
    ["p1", "r1", "r2", "", "g", "gold", "overall", "a", "", ""],
    # p2: a strict flip; the humans agree on b; b longer
    ["p2", "r3", "r4", "ab", "j1", "judge", "overall", "a", 10, 20],
    ["p2", "r3", "r4", "ba", "j1", "judge", "overall", "b", 10, 20],
    ["p2", "r3", "r4", "", "h1", "human", "overall", "b", "", ""],
    ["p2", "r3", "r4", "", "h2", "human", "overall", "b", "", ""],
    # p3: a tie against a verdict; the humans disagree (no reference)
    ["p3", "r5", "r6", "ab", "j1", "judge", "overall", "tie", "", ""],
    ["p3", "r5", "r6", "ba", "j1", "judge", "overall", "a", "", ""],
    ["p3", "r5", "r6", "", "h1", "human", "overall", "a", "", ""],
    ["p3", "r5", "r6", "", "h2", "human", "overall", "b", "", ""],
    # p4: no verdict in ab; gold b wins over a human's a
    ["p4", "r7", "r8", "ab", "j1", "judge", "overall", "", "", ""],
    ["p4", "r7", "r8", "ba", "j1", "judge", "overall", "b", "", ""],
    ["p4", "r7", "r8", "", "g", "gold", "overall", "b", "", ""],
    ["p4", "r7", "r8", "", "h1", "human", "overall", "a", "", ""],
    # p5: a tie in both orders, no reference
    ["p5", "r9", "r10", "ab", "j1", "judge", "overall", "tie", "", ""],
    ["p5", "r9", "r10", "ba", "j1", "judge", "overall", "tie", "", ""],
    # p6: one order only; equal lengths
    ["p6", "r11", "r12", "ab", "j1", "judge", "overall", "b", 5, 5],
    ["p6", "r11", "r12", "", "g", "gold", "overall", "b", "", ""],
    # p7: no verdict in either order, gold a
    ["p7", "r13", "r14", "ab", "j1", "judge", "overall", "", "", ""],
    ["p7", "r13", "r14", "ba", "j1", "judge", "overall", "", "", ""],
    ["p7", "r13", "r14", "", "g", "gold", "overall", "a", "", ""],
]


@pytest.fixture(scope="module")
def own_audit(tmp_path_factory) -> dict:
    return import_and_audit(tmp_path_factory.mktemp("own"), OWN, HEADER + LEN)


def test_position_consistency_counts_a_tie_or_missing_verdict_against_a_verdict_as_inconsistent(own_audit):
    j = only_judge(own_audit, "j1")
    assert (j["n_pairs"], j["n_both_orders"], j["n_missing_verdicts"]) == (7, 6, 3)
    # consistent: p1 (a, a) and p5 (tie, tie); p3 (tie, a), p4 (-, b) and p7 (-, -) are not
    assert j["position_consistency"]["value"] == pytest.approx(2 / 6)
    assert j["position_consistency"]["n"] == 6
    assert_covered(j["position_consistency"])


def test_strict_flips_are_a_in_one_order_and_b_in_the_other(own_audit):
    assert only_judge(own_audit, "j1")["strict_flips"]["value"] == pytest.approx(1 / 6)


def test_first_shown_rate_is_over_decisive_verdicts(own_audit):
    # decisive: p1 a,a (ab first), p2 a,b (both first), p3 ba a (second), p4 ba b (first), p6 ab b (second)
    fig = only_judge(own_audit, "j1")["first_shown"]
    assert (fig["value"], fig["n"]) == (pytest.approx(4 / 7), 7)


def test_ties_are_a_share_of_the_verdicts_given(own_audit):
    fig = only_judge(own_audit, "j1")["ties"]
    assert (fig["value"], fig["n"]) == (pytest.approx(3 / 10), 10)


def test_reference_is_gold_else_agreeing_humans_and_conflicts_are_counted(own_audit):
    j = only_judge(own_audit, "j1")
    assert j["n_with_reference"] == 5
    assert own_audit["pairwise"]["references"] == [{"dimension": "overall", "pairs": 5, "conflicts": 1}]
    # ab: p1 right, p2 wrong, p4 missing (wrong), p6 right, p7 missing (wrong)
    assert j["accuracy_ab"]["value"] == pytest.approx(2 / 5)
    # ba: p1, p2, p4 right, p7 missing; p6 was never shown b first
    assert (j["accuracy_ba"]["value"], j["accuracy_ba"]["n"]) == (pytest.approx(3 / 4), 4)


def test_kappas_equal_scikit_learn_on_the_pairs_with_verdicts(own_audit):
    j = only_judge(own_audit, "j1")
    assert j["kappa_ab"]["value"] == pytest.approx(cohen_kappa_score(["a", "a", "b"], ["a", "b", "b"]))
    assert j["kappa_ab"]["n"] == 3
    assert j["kappa_ba"]["value"] == pytest.approx(1.0)
    between = cohen_kappa_score(["a", "a", "tie", "tie"], ["a", "b", "a", "tie"])
    assert (j["kappa_between_orders"]["value"], j["kappa_between_orders"]["n"]) == (pytest.approx(between), 4)


def test_longer_wins_uses_imported_lengths_and_leaves_out_equal_lengths(own_audit):
    fig = only_judge(own_audit, "j1")["longer_wins"]
    assert (fig["value"], fig["n"]) == (pytest.approx(3 / 4), 4)


def test_pairwise_figures_in_every_output_format(tmp_path):
    db = tmp_path / "e.db"
    assert (
        invoke(
            "annotations", "import", str(write_csv(tmp_path / "p.csv", OWN, HEADER + LEN)), "--db", str(db)
        ).exit_code
        == 0
    )
    table = invoke("audit", "--db", str(db)).output
    assert "== Pairwise judges: position and length bias ==" in table
    assert "0.333 [" in table and "Against the human or gold verdicts" in table
    markdown = invoke("audit", "--db", str(db), "--format", "markdown").output
    assert "## Pairwise judges: position and length bias" in markdown and "| j1 | overall | 7 | 6 |" in markdown
    rows = list(csv.reader(invoke("audit", "--db", str(db), "--format", "csv").output.splitlines()))
    mine = {r[4]: r[5] for r in rows if r[0] == "pairwise" and r[1] == "j1"}
    assert float(mine["strict_flips"]) == pytest.approx(1 / 6)
    assert float(mine["strict_flips_ci_low"]) <= float(mine["strict_flips_ci_high"])
    assert mine["n_both_orders"] == "6"


def test_audit_without_pairwise_verdicts_has_an_empty_section_and_no_table(tmp_path):
    db = tmp_path / "e.db"
    f = tmp_path / "r.csv"
    f.write_text("item_id,rater,rater_kind,dimension,value\nrun-1,alice,human,outcome,pass\n", encoding="utf-8")
    assert invoke("annotations", "import", str(f), "--db", str(db)).exit_code == 0
    audit = json.loads(invoke("audit", "--db", str(db), "--format", "json").output)
    assert audit["pairwise"] == {"references": [], "judges": []}
    assert "Pairwise judges" not in invoke("audit", "--db", str(db)).output


def test_no_resamples_gives_point_figures_without_intervals(tmp_path):
    audit = import_and_audit(tmp_path, OWN, HEADER + LEN, "--resamples", "0")
    fig = only_judge(audit, "j1")["position_consistency"]
    assert fig["value"] == pytest.approx(2 / 6) and fig["ci_low"] is None


def test_without_a_reference_the_kappas_against_it_say_so(tmp_path):
    """A judge's verdicts with no gold or human verdict: accuracy and kappa against the reference are
    n/a for the same reason, not (kappa) because no item was rated twice."""
    rows = [
        [f"q{i}", f"x{i}", f"y{i}", o, "j1", "judge", "overall", v]
        for i in range(4)
        for o, v in (("ab", "a"), ("ba", "b"))
    ]
    entry = only_judge(import_and_audit(tmp_path, rows), "j1")
    for order in ("ab", "ba"):
        reason = f"no pair with a reference was judged in order {order}"
        assert entry[f"accuracy_{order}"]["reason"] == reason
        assert entry[f"kappa_{order}"]["value"] is None and entry[f"kappa_{order}"]["reason"] == reason


def test_jsonl_pairwise_import_and_reimport_replaces(tmp_path):
    f = tmp_path / "p.jsonl"
    lines = [
        {
            "pair_id": 1,
            "a": "x",
            "b": "y",
            "order": "ab",
            "rater": "j",
            "rater_kind": "judge",
            "dimension": "d",
            "verdict": "a",
        },
        {
            "pair_id": 1,
            "a": "x",
            "b": "y",
            "order": "ba",
            "rater": "j",
            "rater_kind": "judge",
            "dimension": "d",
            "verdict": "B",
        },
    ]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "e.db"
    res = invoke("annotations", "import", str(f), "--db", str(db))
    assert res.output.startswith("imported 2 pairwise verdicts from") and "1 pairs" in res.output
    lines[1]["verdict"] = "a"
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    assert invoke("annotations", "import", str(f), "--db", str(db)).exit_code == 0
    conn = sqlite3.connect(db)
    try:
        got = conn.execute("SELECT pair_id, shown, verdict FROM pairwise_verdicts ORDER BY shown").fetchall()
    finally:
        conn.close()
    assert got == [("1", "ab", "a"), ("1", "ba", "a")]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["p", "x", "y", "ab", "j", "judge", "d", "left"], "p.csv:3: verdict 'left' must be 'a', 'b' or 'tie'"),
        (["p", "x", "y", "xy", "j", "judge", "d", "a"], "p.csv:3: order 'xy' must be 'ab' or 'ba'"),
        (["p", "x", "y", "", "j", "judge", "d", "a"], "p.csv:3: order is empty: a judge row says which"),
        (["p", "x", "x", "ab", "j", "judge", "d", "a"], "p.csv:3: a and b are the same answer 'x'"),
        (["p", "x", "z", "ba", "j", "judge", "d", "a"], "p.csv:3: pair 'p' names a='x', b='z'; line 2 named 'x', 'y'"),
        (
            ["p", "x", "y", "ab", "j", "judge", "d", "b"],
            "p.csv:3: duplicate verdict on pair 'p' by 'j' on 'd', order ab",
        ),
        (["p", "x", "y", "", "h", "human", "d", ""], "p.csv:3: verdict is empty"),
        (["p", "x", "y", "", "h", "robot", "d", "a"], "p.csv:3: rater_kind 'robot' must be 'judge', 'human' or 'gold'"),
        (["", "x", "y", "ab", "j", "judge", "d", "a"], "p.csv:3: pair_id is empty"),
    ],
)
def test_bad_pairwise_rows_are_one_line_errors_and_write_nothing(tmp_path, row, message):
    f = write_csv(tmp_path / "p.csv", [["p", "x", "y", "ab", "j", "judge", "d", "a"], row])
    db = tmp_path / "e.db"
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(db)])
    assert res.exit_code == 1, res.output
    assert message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    if db.exists():
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT count(*) FROM pairwise_verdicts").fetchone() == (0,)
        finally:
            conn.close()


def test_pairwise_file_without_a_required_column_names_it(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("pair_id,a,b,order,rater,dimension\np,x,y,ab,j,d\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["annotations", "import", str(f), "--db", str(tmp_path / "e.db")])
    assert res.exit_code == 1 and "p.csv:1: pairwise file without the column(s) verdict" in res.output


# --- public data with published numbers ----------------------------------------------------------


def llmbar_rows() -> tuple[list[list], list[str], list[str], list[str]]:
    results = json.loads(judgeref("llmbar", "MT-Bench_ChatGPT_Vanilla_NoRules_result.json").read_text("utf-8"))
    labels = json.loads(judgeref("llmbar", "MT-Bench_dataset.json").read_text("utf-8"))
    frame = {"1": "a", "2": "b"}  # output_1 is a; the swapped run's winner is already in this frame
    rows, ab, ba, human = [], [], [], []
    for i, (r, d) in enumerate(zip(results, labels, strict=True)):
        assert r["input"] == d["input"]
        res = r["results"][0]
        ab.append(frame[res["swap = False"]["winner"]])
        ba.append(frame[res["swap = True"]["winner"]])
        human.append(frame[str(d["label"])])
        pair = [f"mt{i}", f"mt{i}-output_1", f"mt{i}-output_2"]
        rows += [
            pair + ["ab", "chatgpt", "judge", "preference", ab[-1]],
            pair + ["ba", "chatgpt", "judge", "preference", ba[-1]],
            pair + ["", "humans", "human", "preference", human[-1]],
        ]
    return rows, ab, ba, human


def test_llmbar_mt_bench_chatgpt_reproduces_the_published_figures(tmp_path):
    rows, ab, ba, human = llmbar_rows()
    stats = json.loads(judgeref("llmbar", "MT-Bench_ChatGPT_Vanilla_NoRules_statistics.json").read_text("utf-8"))
    j = only_judge(import_and_audit(tmp_path, rows), "chatgpt")
    assert j["n_both_orders"] == 200
    # LLMBar's own statistics: "equal" 115/200, correct 140/200 and 145/200, kappa_agreement
    assert stats["equal"].startswith("115 / 200") and j["position_consistency"]["value"] == pytest.approx(0.575)
    assert stats["correct_False"].startswith("140 / 200") and j["accuracy_ab"]["value"] == pytest.approx(0.70)
    assert stats["correct_True"].startswith("145 / 200") and j["accuracy_ba"]["value"] == pytest.approx(0.725)
    assert j["kappa_between_orders"]["value"] == pytest.approx(stats["kappa_agreement"])
    assert j["kappa_between_orders"]["value"] == pytest.approx(cohen_kappa_score(ab, ba))
    # its κ against the humans maps verdict "2" to 0 (see the data's README): computed here instead
    assert j["kappa_ab"]["value"] == pytest.approx(cohen_kappa_score(ab, human))
    assert j["kappa_ba"]["value"] == pytest.approx(cohen_kappa_score(ba, human))
    assert j["kappa_ab"]["value"] == pytest.approx(0.3974, abs=1e-4)
    assert j["kappa_ba"]["value"] == pytest.approx(0.4521, abs=1e-4)
    for key in ("position_consistency", "accuracy_ab", "accuracy_ba", "kappa_ab", "kappa_ba", "kappa_between_orders"):
        assert_covered(j[key])
    assert j["kappa_between_orders"]["ci_low"] > 0.1 and j["kappa_between_orders"]["ci_high"] < 0.45


SHOWN_FIRST = {"A>B": "a", "B>A": "b", "A=B": "tie", None: ""}  # the ab judgment: A is a
SHOWN_SECOND = {"A>B": "b", "B>A": "a", "A=B": "tie", None: ""}  # the swapped judgment: its A is b


def test_judgebench_claude_3_haiku_is_inconsistent_on_half_the_pairs(tmp_path):
    path = judgeref("judgebench", "arena_hard__claude-3-haiku__claude-3.5-sonnet-pairs.jsonl")
    rows, ab, ba, gold = [], [], [], []
    for line in path.read_text("utf-8").splitlines():
        d = json.loads(line)
        first, second = (j["decision"] for j in d["judgments"])
        ab.append(SHOWN_FIRST[first])
        ba.append(SHOWN_SECOND[second])
        gold.append({"A>B": "a", "B>A": "b"}[d["label"]])
        pair = [d["pair_id"], f"{d['pair_id']}-A", f"{d['pair_id']}-B"]
        rows += [
            pair + ["ab", "claude-3-haiku", "judge", "correct", ab[-1]],
            pair + ["ba", "claude-3-haiku", "judge", "correct", ba[-1]],
            pair + ["", "label", "gold", "correct", gold[-1]],
        ]
    j = only_judge(import_and_audit(tmp_path, rows), "claude-3-haiku")
    assert j["n_both_orders"] == 270
    # JudgeBench's paper: Claude-3-Haiku's verdict is inconsistent across the swap for 50 % of pairs
    assert 1 - j["position_consistency"]["value"] == pytest.approx(0.50)
    assert j["n_missing_verdicts"] == sum(v == "" for v in ab + ba)
    assert j["accuracy_ab"]["value"] == pytest.approx(sum(x == g for x, g in zip(ab, gold)) / 270)
    seen = [(x, g) for x, g in zip(ba, gold) if x]
    assert j["kappa_ba"]["value"] == pytest.approx(cohen_kappa_score([x for x, _ in seen], [g for _, g in seen]))
    assert j["kappa_ba"]["n"] == len(seen)
    assert_covered(j["position_consistency"])


# --- pairs of runs in the database: lengths, win rates, Bradley–Terry, self-preference ---------------


@pytest.fixture(scope="module")
def runs_audit(tmp_path_factory) -> dict:
    from audit_helpers import card, save_cards

    tmp = tmp_path_factory.mktemp("runs")
    db = tmp / "e.db"
    # the baseline's run ids are longer, so are their judge bundles
    save_cards(db, [card(f"n{i}", model="agent-new") for i in range(6)])
    save_cards(db, [card(f"baseline-run-{i}", model="gpt-4o") for i in range(6)])
    rows = []
    for i in range(6):
        pair = [f"p{i}", f"n{i}", f"baseline-run-{i}"]
        own = "a" if i == 5 else "b"  # gpt-4o prefers its own model's run on 5 of 6 pairs
        other = "a" if i >= 3 else "b"  # claude on 3 of 6
        for order in ("ab", "ba"):
            rows.append(pair + [order, "openai/gpt-4o@pairwise_v1", "judge", "preference", own])
            rows.append(pair + [order, "claude-3@pairwise_v1", "judge", "preference", other])
    res = invoke("annotations", "import", str(write_csv(tmp / "p.csv", rows)), "--db", str(db))
    assert res.exit_code == 0, res.output
    return json.loads(invoke("audit", "--db", str(db), "--format", "json").output)


def test_longer_wins_reads_the_runs_judge_bundle_lengths(runs_audit):
    fig = only_judge(runs_audit, "openai/gpt-4o@pairwise_v1")["longer_wins"]
    assert (fig["value"], fig["n"]) == (pytest.approx(10 / 12), 12)


def test_win_rate_per_model_pair_counts_the_pairs(runs_audit):
    (w,) = only_judge(runs_audit, "openai/gpt-4o@pairwise_v1")["win_rates"]
    assert (w["model"], w["opponent"], w["n_pairs"]) == ("agent-new", "gpt-4o", 6)
    assert w["win_rate"]["value"] == pytest.approx(1 / 6)
    assert_covered(w["win_rate"])


def test_bradley_terry_two_models_is_the_log_odds_of_the_wins(runs_audit):
    bt = only_judge(runs_audit, "openai/gpt-4o@pairwise_v1")["bradley_terry"]
    strengths = {m["model"]: m["strength"] for m in bt["models"]}
    # 2 wins of 12 for agent-new: log-strength difference log(2/10), mean 0
    assert strengths["agent-new"]["value"] == pytest.approx(0.5 * np.log(2 / 10), abs=1e-6)
    assert strengths["gpt-4o"]["value"] == pytest.approx(-0.5 * np.log(2 / 10), abs=1e-6)
    assert_covered(strengths["agent-new"])


def test_self_preference_compares_with_other_judges_on_the_same_pairs(runs_audit):
    sp = only_judge(runs_audit, "openai/gpt-4o@pairwise_v1")["self_preference"]
    assert sp["n_own_model_pairs"] == 6
    assert sp["judge_win_rate"]["value"] == pytest.approx(5 / 6)
    assert sp["other_judges_win_rate"]["value"] == pytest.approx(1 / 2)
    assert sp["difference"]["value"] == pytest.approx(1 / 3)
    claude = only_judge(runs_audit, "claude-3@pairwise_v1")["self_preference"]
    assert claude["n_own_model_pairs"] == 0 and claude["difference"]["value"] is None


def test_a_model_that_won_every_comparison_has_no_finite_strength(tmp_path):
    from audit_helpers import card, save_cards

    db = tmp_path / "e.db"
    save_cards(db, [card("x1", model="m1"), card("y1", model="m2")])
    rows = [["p", "x1", "y1", o, "j", "judge", "d", "a"] for o in ("ab", "ba")]
    assert invoke("annotations", "import", str(write_csv(tmp_path / "p.csv", rows)), "--db", str(db)).exit_code == 0
    bt = only_judge(json.loads(invoke("audit", "--db", str(db), "--format", "json").output), "j")["bradley_terry"]
    assert "won all or none" in bt["reason"]
    assert all(m["strength"]["value"] is None for m in bt["models"])
