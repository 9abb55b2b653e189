"""`evalkit audit` end to end: read-only, --pairs-out, ranking, formats, determinism, errors."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re

import pytest
from audit_helpers import Annotator, add_ratings, card, save_cards, table_dump
from click.testing import CliRunner
from test_agreement_registry import PAIRING_CSV_STATS

from evalkit.agreement.audit import build_audit
from evalkit.agreement.audit_output import audit_json
from evalkit.cli import cli


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "e.db"
    save_cards(
        path,
        [
            card(
                "r-safe-miss", all_passed=True, dangerous=1, scenario_id="s2", model="m2"
            ),  # judge says safe: lenient safety
            card("r-out-miss", all_passed=False, coverage=0.75, order=1.0),  # judge says pass: lenient outcome
            card("r-strict", all_passed=True),  # judge says fail: strict outcome
            card("r-gap3", all_passed=True, coverage=0.25),  # grade 0, judge 3: lenient gap 3 of 3
            card("r-gap1", all_passed=True, coverage=1.0, order=1.0, extraneous=1),  # grade 2, judge 3
            card("r-agree", all_passed=True),
            card("r-unsafe-strict", all_passed=True),  # judge says unsafe: strict safety
        ],
    )
    ann = Annotator(path)
    ann.add(
        "r-safe-miss",
        {"outcome": "pass", "safety": 3, "action_execution": 3},
        confidence=0.9,
        rationale="Step 4 switched BAT 1 off.\n   Looked\tdeliberate.",
    )
    ann.add("r-out-miss", {"outcome": "pass", "safety": 3, "action_execution": 1}, confidence=0.95, rationale="x" * 500)
    ann.add("r-strict", {"outcome": "fail", "safety": 3, "action_execution": 3}, confidence=0.6)
    ann.add("r-gap3", {"outcome": "pass", "safety": 3, "action_execution": 3}, confidence=0.8)
    ann.add("r-gap1", {"outcome": "pass", "safety": 3, "action_execution": 3}, confidence=0.8)
    ann.add("r-agree", {"outcome": "pass", "safety": 3, "action_execution": 3}, confidence=0.99)
    ann.add("r-unsafe-strict", {"outcome": "pass", "safety": 1, "action_execution": 3}, confidence=0.99)
    ann.add("r-agree", {"outcome": "fail", "safety": 0}, judge="judge-b", blind=False)
    ann.close()
    add_ratings(path, [("r-agree", "alice", "human", "safety", 3), ("r-strict", "alice", "human", "safety", 2)])
    return path


def run(*args: str):
    res = CliRunner().invoke(cli, list(args))
    return res


def test_audit_never_modifies_scorecards_or_runs(db):
    tables = ("scorecards", "runs", "commands", "bundles", "annotations", "annotation_values", "ratings")
    before = {t: table_dump(db, t) for t in tables}
    file_before = hashlib.sha256(db.read_bytes()).hexdigest()
    for fmt in ("table", "json", "markdown", "csv"):
        res = run("audit", "--db", str(db), "--format", fmt, "--resamples", "20", "--by", "scenario")
        assert res.exit_code == 0, res.output
    build_audit(db, n_resamples=10)
    assert {t: table_dump(db, t) for t in tables} == before
    assert hashlib.sha256(db.read_bytes()).hexdigest() == file_before


def test_pairs_out_columns_and_rows(db, tmp_path):
    out = tmp_path / "pairs.csv"
    res = run("audit", "--db", str(db), "--pairs-out", str(out), "--resamples", "0", "--format", "json")
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert rows[0] == ["pairing", "item_id", "judge_model", "judge_value", "mechanical_value"]
    body = rows[1:]
    report = json.loads(res.output)
    assert len(body) == sum(p["n"] for p in report["pairings"])
    assert ["safety", "r-safe-miss", "judge-a", "safe", "unsafe"] in body
    assert ["action_execution", "r-gap3", "judge-a", "3", "0"] in body
    assert not any(r[2] == "judge-b" for r in body)  # non-blind left out
    # anyone can recompute the figures from the file
    outcome = [r for r in body if r[0] == "outcome"]
    agree = sum(r[3] == r[4] for r in outcome) / len(outcome)
    assert next(p for p in report["pairings"] if p["pairing"] == "outcome")["percent_agreement"][
        "value"
    ] == pytest.approx(agree)


def test_disagreements_ranked_lenient_safety_then_lenient_outcome_then_gap(db):
    d = build_audit(db, n_resamples=0)["disagreements"]
    order = [(x["pairing"], x["run_id"], x["direction"]) for x in d]
    assert order == [
        ("safety", "r-safe-miss", "lenient"),  # lenient on safety first
        ("outcome", "r-out-miss", "lenient"),  # then lenient on outcome
        # then by gap as a share of the scale; ties in pairing order
        ("outcome", "r-strict", "strict"),  # 1 of 1 step
        ("safety", "r-unsafe-strict", "strict"),  # 1 of 1 step
        ("action_execution", "r-gap3", "lenient"),  # 3 of 3 steps
        ("action_execution", "r-gap1", "lenient"),  # 1 of 3 steps
    ]
    assert [x["gap"] for x in d] == [1, 1, 1, 1, 3, 1]
    first = d[0]
    assert first["path"] == "runs/r-safe-miss.jsonl" and first["scenario_id"] == "s2" and first["model"] == "m2"
    assert (
        first["judge_model"] == "judge-a" and first["judge_value"] == "safe" and first["mechanical_value"] == "unsafe"
    )
    assert first["rationale"] == "Step 4 switched BAT 1 off. Looked deliberate."
    long = next(x for x in d if x["run_id"] == "r-out-miss")
    assert len(long["rationale"]) <= 240 and long["rationale"].endswith("...")


def test_json_contract_names_every_statistic(db):
    res = run("audit", "--db", str(db), "--format", "json", "--resamples", "10")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert set(rep) >= {"schema", "pairings", "raters", "disagreements", "drift", "judge_costs"}
    for p in rep["pairings"]:
        for key in (*PAIRING_CSV_STATS, "confusion_matrix", "slices"):
            assert key in p, key
        for key in ("percent_agreement", "cohen_kappa", "gwet_ac1"):
            assert set(p[key]) >= {"value", "reason"}
    (r,) = rep["raters"]
    assert r["dimension"] == "safety" and r["raters"] == ["alice", "judge-a@procedure_v1"]
    for key in ("n", "percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1"):
        assert key in r


def test_output_is_deterministic(db):
    for fmt in ("json", "table", "markdown", "csv"):
        a = run("audit", "--db", str(db), "--format", fmt, "--resamples", "30", "--seed", "5")
        b = run("audit", "--db", str(db), "--format", fmt, "--resamples", "30", "--seed", "5")
        assert a.exit_code == 0 and a.output == b.output, fmt
    assert audit_json(build_audit(db, seed=1, n_resamples=30)) != audit_json(build_audit(db, seed=2, n_resamples=30))


def test_table_output_names_what_each_line_is(db):
    res = run("audit", "--db", str(db), "--resamples", "10", "--by", "judge")
    assert res.exit_code == 0, res.output
    text = res.output
    for title in (
        "== Pairings: judge against mechanical scores ==",
        "== Disagreements, ranked ==",
        "== Raters",
        "== Judge drift",
        "== Judge cost",
        "-- Per judge model --",
        "-- Calibration of the judge's confidence --",
    ):
        assert title in text
    # escalation below the pairing's threshold: 1 of 7 escalated, catching 1 of the 2 disagreements
    assert re.search(r"^outcome +judge-a +7 +0\.386 +0\.261 +0\.700 +1 +2 +1$", text, re.M)
    assert "note: outcome left out: non_blind 1" in text


def test_markdown_and_csv_formats(db):
    md = run("audit", "--db", str(db), "--format", "markdown", "--resamples", "0").output
    assert "| pairing | level | n | agreement | Cohen κ |" in md
    rows = list(
        csv.DictReader(io.StringIO(run("audit", "--db", str(db), "--format", "csv", "--resamples", "0").output))
    )
    assert list(rows[0]) == ["section", "name", "slice", "key", "statistic", "value", "reason"]
    wk = next(r for r in rows if r["name"] == "outcome" and r["statistic"] == "weighted_kappa" and not r["slice"])
    assert wk["value"] == "" and wk["reason"].startswith("not applicable")


def test_missing_database_is_a_usage_error(tmp_path):
    res = run("audit", "--db", str(tmp_path / "none.db"))
    assert res.exit_code == 2 and "no such database" in res.output
    assert not (tmp_path / "none.db").exists()  # the audit never creates a database


def test_bad_config_is_one_line_error(db, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[pairing]]\nname = "outcome"\nrubric = "procedure_v1"\njudge_dimension = "outcome"\nscale = ["x"]\n'
    )
    res = run("audit", "--db", str(db), "--pairings", str(bad))
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"error: {bad}: pairing 'outcome'.scale: required, an array of at least two labels (least credit first)"
    ]


def test_not_a_database_is_one_line_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_text("this is not sqlite\n" * 20)
    res = run("audit", "--db", str(junk))
    assert res.exit_code == 1
    assert res.stderr.startswith(f"error: {junk}: not a readable SQLite database")
    assert "Traceback" not in res.output


def test_audit_and_report_render_one_view(db):
    """`evalkit audit --format markdown` and the report's agreement section are the same view
    model: the same headings and the same table headers, in the same order."""
    from evalkit.report import build_report, render_markdown

    cli_md = run("audit", "--db", str(db), "--format", "markdown", "--resamples", "1000").output
    report_md = render_markdown(build_report(db, made_at="2026-01-01T00:00:00Z"))
    agreement = report_md[report_md.index("## Agreement audit") : report_md.index("## Provenance")]

    def shape(text: str, level: str) -> list[str]:
        return [
            ln.lstrip("#").strip() if ln.startswith("#") else ln
            for ln in text.splitlines()
            if ln.startswith(level)
            or ln.startswith("| pairing")
            or ln.startswith("| dimension")
            or ln.startswith("| rank")
        ]

    # the report shows the judge's costs in its judge section, the audit as its last section
    cli_shape = [x for x in shape(cli_md, "##") if x != "Judge cost and latency per call"]
    assert shape(agreement, "###") == cli_shape
    assert "Per judge model" in cli_shape and "Disagreements, ranked" in cli_shape


def test_out_is_the_stdout_bytes_written_atomically(db, tmp_path):
    out, pairs = tmp_path / "audit.md", tmp_path / "pairs.csv"
    shown = run("audit", "--db", str(db), "--format", "markdown", "--resamples", "0")
    res = run(
        "audit",
        "--db",
        str(db),
        "--format",
        "markdown",
        "--resamples",
        "0",
        "--out",
        str(out),
        "--pairs-out",
        str(pairs),
    )
    assert res.exit_code == 0 and res.output == ""
    assert out.read_bytes() == shown.output.encode("utf-8")
    assert pairs.read_text(encoding="utf-8").startswith("pairing,item_id,judge_model,judge_value,mechanical_value\n")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("e.db")) == ["audit.md", "pairs.csv"]


def test_out_failing_midway_keeps_the_old_file_whole(db, tmp_path, monkeypatch):
    import evalkit.output.atomic

    out = tmp_path / "audit.json"
    out.write_text("previous audit\n", encoding="utf-8")

    def disk_full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(evalkit.output.atomic.os, "replace", disk_full)
    res = run("audit", "--db", str(db), "--format", "json", "--resamples", "0", "--out", str(out))
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {out}: cannot write: No space left on device"
    assert out.read_text(encoding="utf-8") == "previous audit\n"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("e.db")] == ["audit.json"]  # no temporary left


def test_out_into_a_missing_directory_names_the_file(db, tmp_path):
    out = tmp_path / "no-such-dir" / "audit.txt"
    res = run("audit", "--db", str(db), "--resamples", "0", "--out", str(out))
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {out}: cannot write: no such directory: {out.parent}"


def test_a_judge_value_beyond_a_floats_range_is_a_text_label_not_infinity(tmp_path):
    """A stored value of 1e400 decodes to infinity; as a label it is its text (as NaN is), so the
    audit's JSON is still JSON and no statistic reads an infinite grade."""
    path = tmp_path / "e.db"
    save_cards(path, [card(f"r{i}", all_passed=i % 2 == 0) for i in range(6)])
    ann = Annotator(path)
    for i in range(6):
        ann.add(f"r{i}", {"outcome": "pass", "safety": 3, "action_execution": 3}, confidence=0.9)
    ann.close()
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("UPDATE annotation_values SET value = '1e400' WHERE run_id = 'r1' AND dimension = 'action_execution'")
    con.execute("UPDATE annotation_values SET value = '-1e400' WHERE run_id = 'r2' AND dimension = 'safety'")
    con.commit()
    con.close()
    res = run("audit", "--db", str(path), "--format", "json", "--resamples", "0")
    assert res.exit_code == 0, res.output
    json.loads(res.stdout)
    assert "Infinity" not in res.stdout
    from evalkit.db import open_readonly, read_annotations

    with open_readonly(path) as db:
        labels = {(v.run_id, v.dimension): v.value for v in read_annotations(db)}
    assert labels[("r1", "action_execution")] == "1e400" and labels[("r2", "safety")] == "-1e400"


def test_an_interval_of_zero_width_is_marked_since_a_few_runs_that_all_agree_leave_uncertainty(tmp_path):
    # a judge that agreed with the scores on all 8 runs: the bootstrap's every resample is 1, and
    # "1.000 [1.000, 1.000]" read as certainty that 8 runs cannot give
    path = tmp_path / "e.db"
    save_cards(path, [card(f"r{i}", all_passed=i % 2 == 0) for i in range(8)])
    ann = Annotator(path)
    for i in range(8):
        ann.add(f"r{i}", {"outcome": "pass" if i % 2 == 0 else "fail"})
    ann.close()
    out = CliRunner().invoke(cli, ["audit", "--db", str(path)]).output
    (row,) = [line for line in out.splitlines() if line.startswith("outcome ") and "nominal" in line]
    mark = re.search(r"1\.000 \[1\.000, 1\.000\] \((\d+)\)", row)
    assert mark, row
    assert f"note: ({mark.group(1)}) zero width: every resample gave this value (the runs all agree)" in out
    agreement = json.loads(CliRunner().invoke(cli, ["audit", "--db", str(path), "--format", "json"]).output)
    (outcome,) = [p for p in agreement["pairings"] if p["pairing"] == "outcome"]
    assert outcome["percent_agreement"]["ci_low"] == outcome["percent_agreement"]["ci_high"] == 1.0  # the figure stays
