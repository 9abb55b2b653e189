"""The report dict: numbers come from the same code as `evalkit score`, judge tables are read
apart, absent data is said, the database is never written."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import statistics
from collections import Counter

import pytest
import report_fixtures as rf

from evalkit.aggregate.groups import Aggregator
from evalkit.config.files import ConfigError
from evalkit.db.scores import Store
from evalkit.engines.pipeline import score_files
from evalkit.errors import InputError
from evalkit.report import ReportError, build_report, load_contamination


@pytest.fixture(scope="module")
def full_db(tmp_path_factory):
    return rf.build_db(tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="module")
def report(full_db):
    return build_report(full_db, made_at="2026-01-01T00:00:00Z")


def every_run(db) -> list[dict]:
    """Every run as the scenario pages list it (evalkit.report.data.iter_scenarios)."""
    from evalkit.db import open_readonly
    from evalkit.report.data import iter_scenarios

    with open_readonly(db) as d:
        return [run for _, batch in iter_scenarios(d) for run, _ in batch]


@pytest.fixture(scope="module")
def runs(full_db):
    return every_run(full_db)


def _cards(paths):
    return [c for c in score_files([str(p) for p in paths]) if not isinstance(c, InputError)]


def test_groups_and_models_equal_the_aggregate_of_the_scored_files(report, full_db):
    cards = _cards([rf.EXAMPLES, full_db.parent / "evil"])
    agg = Aggregator()
    for c in cards:
        agg.add(c)
    expected = json.loads(json.dumps(agg.result(bootstrap=False)))  # the pages show no pass^k interval
    assert report["groups"] == [
        dict(g, scenario_title=report["groups"][i]["scenario_title"]) for i, g in enumerate(expected["groups"])
    ]
    # each model row adds its paired comparison with the best model (the report's comparison section)
    assert [{k: v for k, v in m.items() if k != "versus_best"} for m in report["models"]] == expected["models"]
    assert report["counts"]["runs"] == len(cards)
    assert report["counts"]["by_status"] == dict(Counter(c.status for c in cards))


def test_every_run_counts_its_stored_commands_and_the_worst_list_them_with_classes(report, runs, full_db):
    con = sqlite3.connect(full_db)
    stored = Counter(r[0] for r in con.execute("SELECT run_id FROM commands"))
    classes = {(r[0], r[1]): r[2] for r in con.execute("SELECT run_id, idx, class FROM commands")}
    con.close()
    assert sum(r["n_commands"] for r in runs) == sum(stored.values()) > 0
    assert all(r["n_commands"] == stored.get(r["run_id"], 0) for r in runs)
    assert report["worst_runs"]
    for run in report["worst_runs"]:
        assert len(run["commands"]) == stored.get(run["run_id"], 0)
        for c in run["commands"]:
            assert c["class"] == classes[(run["run_id"], c["index"])]


def test_unsafe_runs_are_flagged_and_not_ranked(report, runs):
    unsafe = [r for r in runs if r["unsafe"]]
    assert unsafe, "the fixture has runs with a forbidden command"
    assert all(r["rank"] is None for r in unsafe)
    assert {r["safety"] for r in unsafe} == {"dangerous", "unapproved"}  # the support refunds made without approval
    assert all(r["safety_dangerous"] > 0 for r in unsafe if r["safety"] == "dangerous")
    named = {r["run_id"] for e in report["unsafe_by_group"] for r in e["runs"]}
    assert named == {r["run_id"] for r in unsafe}
    assert report["counts"]["unsafe"] == len(unsafe) == sum(e["n"] for e in report["unsafe_by_group"])


def test_worst_runs_follow_the_stated_rule(report, runs):
    from evalkit.report.data import SEVERITY_ORDER, failed

    worst = report["worst_runs"]
    assert report["disagreement_counts"]  # the judge disagrees on some runs: the rule's tie-break
    runs = [dict(r, disagreements=report["disagreement_counts"].get(r["run_id"], 0)) for r in runs]
    assert [r["run_id"] for r in worst] == [r["run_id"] for r in sorted(runs, key=_rule) if failed(r)][: len(worst)]
    assert all(failed(r) for r in worst) and not any(r["run_id"] == w for r in runs if not failed(r) for w in worst)
    tiers = [SEVERITY_ORDER.get(r["safety"], 3) if r["unsafe"] else 4 if r["status"] == "scored" else 5 for r in worst]
    assert tiers == sorted(tiers) and tiers[0] == 0  # the dangerous run first
    assert "unsafe runs first" in report["worst_rule"]


def _rule(r):
    """The rule as docs/report.md states it, written out again."""
    order = {"dangerous": 0, "unapproved": 1, "anti_procedure": 2}
    tier = order.get(r["safety"], 3) if r["unsafe"] else (4 if r["status"] == "scored" else 5)
    return (tier, r["scalar"] if r["scalar"] is not None else float("inf"), -r["disagreements"], r["run_id"])


def test_worst_list_is_capped_and_scenario_entries_count_every_run(tmp_path, monkeypatch):
    import evalkit.report.data as data

    monkeypatch.setattr(data, "WORST_RUNS", 3)
    db = rf.build_db(tmp_path)
    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    runs = every_run(db)
    assert len(report["worst_runs"]) == 3 < sum(1 for r in runs if data.failed(r))
    assert sum(s["runs"] for s in report["scenarios"]) == len(runs) == report["counts"]["runs"]
    for s in report["scenarios"]:
        mine = [r for r in runs if r["scenario_id"] == s["scenario_id"]]
        assert s["unsafe"] == sum(r["unsafe"] for r in mine) and s["failed"] == sum(data.failed(r) for r in mine)


def test_ranks_are_per_scenario_by_score_with_shared_ties(runs):
    by_scenario = {}
    for run in runs:
        if run["rank"] is not None:
            by_scenario.setdefault(run["scenario_id"], []).append(run)
    assert by_scenario
    for runs in by_scenario.values():
        for a in runs:
            higher = sum(1 for b in runs if b["scalar"] > a["scalar"])
            assert a["rank"] == higher + 1
    unranked = [r for r in runs if r["rank"] is None]
    assert all(r["unsafe"] or r["status"] != "scored" for r in unranked)


def test_judge_distributions_count_primary_ok_values(report, full_db):
    con = sqlite3.connect(full_db)
    rows = con.execute("SELECT judge_model, dimension, value FROM annotation_values WHERE replicate = 0").fetchall()
    con.close()
    expected = Counter((j, d, str(json.loads(v))) for j, d, v in rows)
    got = Counter()
    for m in report["judge"]["models"]:
        for dim in m["dimensions"]:
            for label, count in dim["counts"]:
                got[(m["judge_model"], dim["dimension"], label)] += count
    assert got == expected


def test_judge_cost_and_latency_per_model(report, full_db):
    con = sqlite3.connect(full_db)
    for m in report["judge"]["models"]:
        lat = [
            r[0]
            for r in con.execute(
                "SELECT latency_ms FROM annotations WHERE judge_model = ? ORDER BY created_at, annotation_id",
                (m["judge_model"],),
            )
        ]
        cost = [
            r[0] for r in con.execute("SELECT cost_usd FROM annotations WHERE judge_model = ?", (m["judge_model"],))
        ]
        errors = con.execute(
            "SELECT COUNT(*) FROM annotations WHERE judge_model = ? AND status != 'ok'", (m["judge_model"],)
        ).fetchone()[0]
        assert m["latency_median_ms"] == statistics.median(lat)
        assert m["latency_mean_excl_first_ms"] == pytest.approx(statistics.fmean(lat[1:]))
        assert m["cost_usd_total"] == pytest.approx(sum(cost))
        assert m["judge_errors"] == errors
    con.close()


def test_dimension_values_sorted_numbers_then_words(report):
    for m in report["judge"]["models"]:
        for dim in m["dimensions"]:
            if dim["dimension"] == "error_recovery":
                labels = [label for label, _ in dim["counts"]]
                assert labels[-1] == "n/a" and labels[:-1] == sorted(labels[:-1], key=float)


def test_provenance_names_versions_rubrics_judges_scenarios(report, runs):
    p = report["provenance"]
    assert p["evalkit_version"]
    assert p["made_at"] == "2026-01-01T00:00:00Z"
    assert p["judge_models"] == ["openai/judge-large", "openai/judge-small"]
    assert p["rubrics"] == [{"id": "procedure_v1", "version": "1", "hash": "abc123def4567890"}]
    assert p["scenarios"] == sorted({r["scenario_id"] for r in runs})


def test_agreement_section_is_the_audit(report, full_db):
    from evalkit.agreement.audit import build_audit

    assert report["agreement"]["available"]
    audit = json.loads(json.dumps(build_audit(full_db), sort_keys=True, default=str))
    assert report["agreement"]["audit"] == audit


def test_no_judge_yet_sections_say_so(tmp_path):
    db = rf.build_db(tmp_path, judge=False)
    report = build_report(db)
    assert report["judge"]["available"] is False and "no judge" in report["judge"]["reason"]
    assert report["agreement"]["available"] is False and "no judge annotations" in report["agreement"]["reason"]
    assert report["counts"]["runs"] and report["worst_runs"]


def test_empty_database_gives_an_empty_report(tmp_path):
    db = tmp_path / "empty.db"
    Store(db).close()
    report = build_report(db)
    assert (
        report["worst_runs"] == [] and report["scenarios"] == [] and report["groups"] == [] and report["models"] == []
    )
    assert report["counts"]["runs"] == 0


def test_database_without_evalkit_tables(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE unrelated (x)")
    con.commit()
    con.close()
    assert build_report(db)["counts"]["runs"] == 0


def test_missing_database_is_an_error_and_is_not_created(tmp_path):
    db = tmp_path / "nope.db"
    with pytest.raises(ReportError, match="nope.db: no such database"):
        build_report(db)
    assert not db.exists()


def test_not_a_database_is_a_one_line_error(tmp_path):
    db = tmp_path / "junk.db"
    db.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(ReportError) as err:
        build_report(db)
    assert "junk.db" in str(err.value) and "\n" not in str(err.value)


def test_corrupt_stored_card_is_left_out_with_a_warning_naming_the_row(tmp_path):
    db = rf.build_db(tmp_path, judge=False, evil=False)
    con = sqlite3.connect(db)
    con.execute("UPDATE scorecards SET card = '{\"run_id\": 1}' WHERE run_id = 'a320-opus-4-8-full-procedure'")
    con.commit()
    con.close()
    report = build_report(db)
    assert "a320-opus-4-8-full-procedure" not in {r["run_id"] for r in every_run(db)}
    assert report["counts"]["runs"] == len(every_run(db)) > 0  # the other runs are still reported
    [warning] = [w for w in report["warnings"] if "a320-opus-4-8-full-procedure" in w]
    assert warning.startswith("scorecards.card: row run_id='a320-opus-4-8-full-procedure' is not a ScoreCard")
    assert warning.endswith("the run is left out") and "\n" not in warning


def test_report_never_writes_the_database(tmp_path):
    db = rf.build_db(tmp_path)
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    build_report(db)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_broken_audit_config_is_a_warning_not_a_crash(tmp_path, monkeypatch):
    import evalkit.agreement.audit as audit_mod

    def broken(*_a, **_k):
        raise ValueError("configs/pairings.toml: pairing 'x': unknown signal")

    monkeypatch.setattr(audit_mod, "build_audit", broken)
    report = build_report(rf.build_db(tmp_path))
    assert report["agreement"]["available"] is False
    assert report["warnings"] == ["the audit failed: configs/pairings.toml: pairing 'x': unknown signal"]


def test_made_at_from_source_date_epoch(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    db = tmp_path / "e.db"
    Store(db).close()
    assert build_report(db)["made_at"] == "2023-11-14T22:13:20Z"


def test_default_contamination_is_an_undeclared_template():
    c = load_contamination()
    assert c["declared"] is False
    assert "declaration to fill in" in c["statement"]
    assert "closed-loop execution" in c["statement"]


def test_declared_contamination_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        '[contamination]\ndeclared = true\ndeclared_by = "bench team"\nstatement = "Procedures are public."\n'
        'evidence = ["smoke 2026-07-24: both models omitted the isolation step"]\n',
        encoding="utf-8",
    )
    c = load_contamination(path)
    assert c["declared"] is True and c["declared_by"] == "bench team"
    assert c["evidence"] == ["smoke 2026-07-24: both models omitted the isolation step"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[contamination\n", "c.toml:1: invalid TOML"),
        ("[other]\nx = 1\n", "c.toml: contamination: required key missing"),
        (
            '[contamination]\ndeclared = "yes"\n',
            "c.toml: contamination.declared: input should be a valid boolean, got 'yes'",
        ),
        ("[contamination]\nstatement = 3\n", "c.toml: contamination.statement: input should be a valid string, got 3"),
        (
            '[contamination]\nevidence = "one"\n',
            "c.toml: contamination.evidence: input should be a valid list, got 'one'",
        ),
        ("[contamination]\ndeclard = true\n", "c.toml: contamination.declard: unknown key"),
    ],
)
def test_bad_contamination_file_names_file_and_field(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_contamination(path)
    assert str(err.value).startswith(str(tmp_path / message))
    assert "\n" not in str(err.value)
