"""`evalkit estimate` end to end: scorecards, judge annotations and human labels in a database
(labels imported with `evalkit annotations import`, as a team does), then the command; every n/a
reason a named test; the JSON shape the one docs/audit.md documents."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from audit_helpers import Annotator, card, save_cards
from click.testing import CliRunner

from evalkit.agreement.stats.corrected import corrected_rate, ppi_mean
from evalkit.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _db(tmp_path: Path, *, runs=200, q0=0.75, q1=0.9, labelled=60, seed=1, dim_values=None) -> tuple[Path, dict]:
    """Two models of ``runs`` runs; a judge right on q1 of passes and q0 of failures; ``labelled``
    runs a model labelled by a human through a ratings file imported with the CLI."""
    rng = random.Random(seed)
    db = tmp_path / "e.db"
    truth, cards = {}, []
    for model, rate in (("coder-alpha", 0.7), ("coder-beta", 0.4)):
        for i in range(runs):
            run = f"{model}-{i:03d}"
            truth[run] = rng.random() < rate
            cards.append(card(run, model=model, all_passed=truth[run]))
    save_cards(db, cards)
    ann = Annotator(db)
    judged = {}
    for run, t in truth.items():
        verdict = (rng.random() < q1) if t else (rng.random() >= q0)
        judged[run] = verdict
        values = {"outcome": "pass" if verdict else "fail"}
        if dim_values:
            values.update(dim_values(run, t, rng))
        ann.add(run, values, judge="openai/gpt-judge")
    ann.close()
    rows = ["item_id,rater,rater_kind,dimension,value"]
    chosen = {}
    for model in ("coder-alpha", "coder-beta"):
        runs_of = sorted(r for r in truth if r.startswith(model))
        for run in rng.sample(runs_of, labelled):
            chosen[run] = truth[run]
            rows.append(f"{run},ana,human,outcome,{'pass' if truth[run] else 'fail'}")
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(rows) + "\n")
    res = CliRunner().invoke(cli, ["annotations", "import", str(labels), "--db", str(db)])
    assert res.exit_code == 0, res.output
    return db, {"truth": truth, "judged": judged, "labelled": chosen}


def _estimate(db: Path, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["estimate", "--db", str(db), "--format", "json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _entry(result: dict, group: str, dimension: str = "outcome") -> dict:
    (e,) = [e for e in result["estimates"] if e["group"] == group and e["dimension"] == dimension]
    return e


def test_estimate_reproduces_the_formulas_per_model(tmp_path):
    db, data = _db(tmp_path)
    result = _estimate(db, "--method", "rogan-gladen")
    e = _entry(result, "coder-alpha")
    runs = [r for r in data["truth"] if r.startswith("coder-alpha")]
    test = [data["judged"][r] for r in runs if r not in data["labelled"]]
    lab = [r for r in runs if r in data["labelled"]]
    passes = [r for r in lab if data["truth"][r]]
    fails = [r for r in lab if not data["truth"][r]]
    q1 = sum(data["judged"][r] for r in passes) / len(passes)
    q0 = sum(not data["judged"][r] for r in fails) / len(fails)
    want = corrected_rate(sum(test) / len(test), len(test), q0, len(fails), q1, len(passes))
    assert e["method"] == "rogan-gladen" and e["reason"] is None
    assert e["estimate"] == pytest.approx(want.estimate, abs=1e-6)
    assert e["ci"] == pytest.approx([want.low, want.high], abs=1e-6)
    assert e["labels"] == {
        "n_labeled": 60,
        "m0": len(fails),
        "m1": len(passes),
        "q0": round(q0, 6),
        "q1": round(q1, 6),
        "left_out": 0,
    }
    assert e["n"] == 140 and e["judge"] == "openai/gpt-judge@procedure_v1"
    ppi = _estimate(db, "--method", "ppi")
    p = _entry(ppi, "coder-alpha")
    want_ppi = ppi_mean(
        [float(data["truth"][r]) for r in sorted(lab)],
        [float(data["judged"][r]) for r in sorted(lab)],
        [float(data["judged"][r]) for r in sorted(runs) if r not in data["labelled"]],
    )
    assert p["ci"] == pytest.approx([want_ppi.low, want_ppi.high], abs=1e-6)


def test_estimate_auto_picks_the_narrowest_valid_interval(tmp_path):
    db, _ = _db(tmp_path)
    e = _entry(_estimate(db), "coder-beta")
    widths = {name: m["width"] for name, m in e["methods"].items() if m["reason"] is None}
    assert e["method"] == min(widths, key=widths.get)
    assert e["labels_alone"]["ci"] is not None


def test_estimate_na_when_the_judge_is_no_better_than_chance(tmp_path):
    db, _ = _db(tmp_path, q0=0.4, q1=0.5)
    e = _entry(_estimate(db, "--method", "rogan-gladen"), "coder-alpha")
    assert e["estimate"] is None and "no better than chance" in e["reason"]


def test_estimate_na_with_too_few_labels_of_a_class(tmp_path):
    db, _ = _db(tmp_path, labelled=1)
    e = _entry(_estimate(db, "--method", "rogan-gladen"), "coder-alpha")
    assert e["estimate"] is None and "too few labels of a class" in e["reason"]
    assert "too few human labels" in e["methods"]["ppi"]["reason"]


def test_estimate_na_for_a_score_without_threshold_and_a_rate_with_one(tmp_path):
    score = lambda run, t, rng: {"politeness": rng.choice([2, 3]) if t else rng.choice([0, 1, 2])}
    db, data = _db(tmp_path, dim_values=score)
    e = _entry(_estimate(db, "--method", "rogan-gladen"), "coder-alpha", "politeness")
    assert e["kind"] == "mean" and "--threshold" in e["reason"]
    t = _entry(_estimate(db, "--threshold", "2"), "coder-alpha", "politeness")
    assert t["kind"] == "rate"


def test_estimate_table_says_na_with_the_reason(tmp_path):
    db, _ = _db(tmp_path, q0=0.4, q1=0.5)
    res = CliRunner().invoke(cli, ["estimate", "--db", str(db), "--method", "rogan-gladen"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    numbered = [line for line in lines if "n/a (1)" in line]
    assert len(numbered) >= 1
    reason = [line for line in lines if line.startswith("note: (1) ")]
    assert len(reason) == 1 and "the judge is no better than chance" in reason[0]  # written once
    assert "uniform random sample" in res.output
    csv = CliRunner().invoke(cli, ["estimate", "--db", str(db), "--method", "rogan-gladen", "--format", "csv"])
    assert "n/a (the judge is no better than chance" in csv.output  # a csv cell holds its reason


def test_estimate_baseline_difference(tmp_path):
    db, _ = _db(tmp_path)
    result = _estimate(db, "--baseline", "coder-alpha")
    (d,) = [d for d in result["differences"] if d["dimension"] == "outcome"]
    a, b = _entry(result, "coder-alpha"), _entry(result, "coder-beta")
    assert d["group"] == "coder-beta" and d["difference"] == pytest.approx(b["estimate"] - a["estimate"], abs=1e-6)
    assert d["ci"][0] < d["difference"] < d["ci"][1]


def test_estimate_plan_reaches_the_width(tmp_path):
    db, _ = _db(tmp_path, runs=1500)
    result = _estimate(db, "--plan", "--width", "0.3")
    plan = [p for p in result["plan"] if p["group"] == "coder-alpha" and p["dimension"] == "outcome"][0]
    assert plan["labels"] == plan["m0"] + plan["m1"]
    e = _entry(result, "coder-alpha")
    got = corrected_rate(e["judge_rate"], e["n"], plan["q0"], plan["m0"], plan["q1"], plan["m1"])
    assert got.high - got.low <= 0.3
    narrow = [p for p in _estimate(db, "--plan", "--width", "0.05")["plan"] if p["group"] == "coder-alpha"][0]
    assert narrow["labels"] is None and "more runs are needed" in narrow["reason"]


def test_a_plan_needing_more_labels_than_the_group_has_runs_says_so(tmp_path):
    """Labels are drawn from the group's own runs: a plan of more labels than it has runs is not
    printed as a number; labelling every run gives the rate exactly."""
    db, _ = _db(tmp_path, runs=40, labelled=12)
    result = _estimate(db, "--plan", "--width", "0.3")
    plans = [p for p in result["plan"] if p["dimension"] == "outcome"]
    too_many = [p for p in plans if "more than the group's" in (p["reason"] or "")]
    assert too_many, plans
    for plan in plans:
        e = _entry(result, plan["group"])
        runs = e["n"] + e["labels"]["n_labeled"]
        if plan["labels"] is not None:
            assert plan["labels"] <= runs
        elif plan in too_many:
            assert int(plan["reason"].split(" labels")[0]) > runs
            assert plan["reason"].endswith(
                f"more than the group's {runs} runs: labelling all {runs} gives its rate exactly"
            )


def test_validate_refuses_the_options_it_would_ignore(tmp_path):
    """--validate checks each method per model over the whole database: --by scenario printed the
    same per-model table as if it had been heard."""
    db, _ = _db(tmp_path, runs=40, labelled=12)
    res = CliRunner().invoke(cli, ["estimate", "--db", str(db), "--validate", "--by", "scenario", "--plan"])
    assert res.exit_code == 2
    assert "--validate checks coverage per model over the whole database; it takes no --by, --plan" in res.output


def test_estimate_validate_reports_coverage_on_the_database(tmp_path):
    db, _ = _db(tmp_path, runs=300)
    res = CliRunner().invoke(cli, ["estimate", "--db", str(db), "--validate", "--budget", "60", "--format", "json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.output)["validation"]
    assert row["repetitions"] == 200 and row["runs"] == 600
    for name in ("rogan-gladen", "ppi", "labels"):
        assert 0.85 <= row["coverage"][name]["coverage"] <= 1.0


def test_estimate_json_shape_is_the_documented_one(tmp_path):
    doc = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")
    section = doc.split("## Corrected estimates", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    documented = json.loads(block)
    db, _ = _db(tmp_path)
    result = _estimate(db, "--baseline", "coder-alpha")
    assert set(result) == set(documented)
    assert set(result["estimates"][0]) == set(documented["estimates"][0])
    assert set(result["estimates"][0]["labels"]) == set(documented["estimates"][0]["labels"])


def test_estimate_output_is_deterministic(tmp_path):
    db, _ = _db(tmp_path)
    runs = [
        CliRunner().invoke(cli, ["estimate", "--db", str(db), "--format", f]).output
        for f in ("json", "json", "csv", "csv")
    ]
    assert runs[0] == runs[1] and runs[2] == runs[3]


def test_estimate_rate_intervals_stay_in_0_1_and_keep_their_width_when_every_label_agrees(tmp_path):
    """Every labelled run a pass: the labels alone still give an interval with width (Wilson), and
    no rate's interval leaves [0, 1]."""
    db, data = _db(tmp_path, q0=0.9, q1=0.95)
    rows = ["item_id,rater,rater_kind,dimension,value"]
    passes = sorted(r for r, t in data["truth"].items() if t and r.startswith("coder-alpha"))[:12]
    rows += [f"{r},bo,human,outcome,pass" for r in passes]
    (tmp_path / "allpass.csv").write_text("\n".join(rows) + "\n")
    db2 = tmp_path / "only.db"
    db2.write_bytes(db.read_bytes())
    import sqlite3

    con = sqlite3.connect(db2)
    con.execute("DELETE FROM ratings")
    con.commit()
    con.close()
    assert (
        CliRunner().invoke(cli, ["annotations", "import", str(tmp_path / "allpass.csv"), "--db", str(db2)]).exit_code
        == 0
    )
    result = _estimate(db2)
    e = _entry(result, "coder-alpha")
    alone = e["labels_alone"]
    assert alone["estimate"] == 1.0 and alone["ci"][1] == 1.0 and alone["ci"][0] < 0.8
    for entry in result["estimates"]:
        for m in entry["methods"].values():
            if m["ci"] is not None and entry["kind"] == "rate":
                assert 0.0 <= m["ci"][0] <= m["ci"][1] <= 1.0, m


def test_a_ppi_interval_from_few_labels_says_it_covers_less_than_its_level(tmp_path):
    few, _ = _db(tmp_path, labelled=30)
    result = _estimate(few, "--method", "ppi")
    assert {e["labels"]["n_labeled"] for e in result["estimates"]} == {30}
    assert any("fewer than 60 labels covers less than its level" in a for a in result["assumptions"])
    table = CliRunner().invoke(cli, ["estimate", "--db", str(few), "--method", "ppi"]).output
    assert "fewer than 60 labels covers less than its level" in table
    many_dir = tmp_path / "many"
    many_dir.mkdir()
    many, _ = _db(many_dir, labelled=80)
    assert not any("fewer than" in a for a in _estimate(many, "--method", "ppi")["assumptions"])
    assert not any("fewer than" in a for a in _estimate(few, "--method", "rogan-gladen")["assumptions"])


def test_a_word_among_the_human_scores_of_a_scored_dimension_is_left_out_of_the_mean(tmp_path):
    """A human's "Pass" on a 0-3 dimension is no point of the scale (the audit leaves it out too):
    it is not read as 1 and averaged with the other humans' scores of that run."""
    score = lambda run, t, rng: {"safety": 3 if t else rng.choice([0, 1])}
    db, data = _db(tmp_path, dim_values=score)
    labelled = sorted(r for r in data["labelled"] if r.startswith("coder-alpha"))
    rows = ["item_id,rater,rater_kind,dimension,value"]
    for run in labelled:
        rows.append(f"{run},bo,human,safety,{3 if data['truth'][run] else 0}")
        rows.append(f"{run},cy,human,safety,{3 if data['truth'][run] else 0}")
    rows[1] = rows[1].rsplit(",", 1)[0] + ",Pass"  # one mistyped label among 120
    labels = tmp_path / "scores.csv"
    labels.write_text("\n".join(rows) + "\n")
    res = CliRunner().invoke(cli, ["annotations", "import", str(labels), "--db", str(db)])
    assert res.exit_code == 0, res.output
    e = _entry(_estimate(db, "--method", "labels"), "coder-alpha", "safety")
    expected = [3.0 if data["truth"][r] else 0.0 for r in labelled]  # each run's humans agree
    assert e["labels"]["n_labeled"] == len(labelled)
    assert e["estimate"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)
