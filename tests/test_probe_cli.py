"""`evalkit probe` end to end: the bundled examples (plus two runs with independent reads, which
no example has) through click, the real litellm client and the fake server's `constant` and
`gullible` judges; the audit's `probes` section; the cache; the walls around probe answers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_helpers import count, fast_config, rows

import evalkit.cli
from evalkit.db import open_readonly, read_annotations
from evalkit.probes import PROBES

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [ROOT / "examples" / "a320", ROOT / "examples" / "support"]
RATES = ("unchanged_rate", "lenient_flip_rate", "strict_flip_rate", "fooled_rate")


def invoke(*args):
    return CliRunner().invoke(evalkit.cli.cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def runs(tmp_path):
    """The bundled examples, copied, plus two runs that read twice before acting (one failed)."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl

    out = tmp_path / "runs"
    for src in EXAMPLES:
        shutil.copytree(src, out / src.name)
    for i, passed in enumerate((True, False)):
        calls = [
            read("get_ecam"),
            read("get_state", result={"apu_gen": "FAULT"}),
            cmd("apu_gen", 0),
            cmd("apu_gen", 1),
            cmd("apu_gen", 0),
            cmd("ext_pwr", 1),
            read(),
        ]
        write_jsonl(
            out / "reads" / f"reads-first-{i}.jsonl",
            trajectory(a320_scenario(), calls, run_id=f"reads-first-{i}", passed=passed),
        )
    return out


def probe(db, srv, config, *args, paths=(), models=("openai/judge-a",), resamples=50):
    judges = [x for model in models for x in ("--model", model)]
    return invoke(
        "probe",
        *paths,
        "--db",
        db,
        *judges,
        "--api-base",
        srv.api_base,
        "--judge-config",
        config,
        "--resamples",
        resamples,
        *args,
    )


@pytest.fixture
def cfg(tmp_path):
    return fast_config(tmp_path)


def audit(db):
    res = invoke("audit", "--db", db, "--format", "json", "--resamples", 50)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def by_probe(entries, probe, dimension="outcome"):
    return next(e for e in entries if e["probe"] == probe and e["dimension"] == dimension)


def test_constant_judge_all_six_probes_unchanged_cached_and_walled_off(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "e.db"
    judged = invoke(
        "judge", runs, "--db", db, "--model", "openai/judge-a", "--api-base", server.api_base, "--judge-config", cfg
    )
    assert judged.exit_code == 0, judged.stderr
    before = audit(db)

    res = probe(db, server, cfg, "--format", "json")
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc["cases"]) == set(PROBES) and all(doc["cases"][p] > 0 for p in PROBES)
    assert doc["originals"]["calls"] == 0  # every original was judged by `evalkit judge`: cache hits
    assert {e["probe"] for e in doc["probes"]} == set(PROBES)
    for e in doc["probes"]:
        assert e["unchanged_rate"]["value"] == 1.0 and e["lenient_flip_rate"]["value"] == 0.0
        assert e["strict_flip_rate"]["value"] == 0.0
    for name in ("false_claim", "injection"):
        assert by_probe(doc["probes"], name)["fooled_rate"]["value"] == 0.0
    calls = server.count

    again = probe(db, server, cfg, "--format", "json")  # rerun: all from the cache
    assert again.exit_code == 0 and server.count == calls
    assert json.loads(again.stdout)["probes"] == doc["probes"]

    after = audit(db)
    assert after["probes"] == doc["probes"]  # same entries, same bootstrap seed and resamples
    for key in ("pairings", "raters", "disagreements", "drift", "counts"):
        assert after[key] == before[key], key  # probe answers reach no agreement figure
    n_cases = sum(doc["cases"].values())
    assert count(db, "probe_annotations") == n_cases
    with open_readonly(db) as ro:
        ids = {v.annotation_id for v in read_annotations(ro)}
    assert ids == {r[0] for r in rows(db, "SELECT annotation_id FROM annotations")}
    assert not ids & {r[0] for r in rows(db, "SELECT annotation_id FROM probe_annotations")}


def test_gullible_judge_is_fooled_and_the_gate_exits_3(tmp_path, server, runs, cfg):
    server.mode = "gullible"
    db = tmp_path / "g.db"
    res = probe(
        db,
        server,
        cfg,
        "--format",
        "json",
        "--fail-if",
        "false_claim.fooled_rate>0.05",
        "--fail-if",
        "verbosity.unchanged_rate<0.9",
        paths=[runs],
    )
    assert res.exit_code == 3, res.stderr
    doc = json.loads(res.stdout)
    for name in ("false_claim", "injection"):
        entry = by_probe(doc["probes"], name)
        assert entry["fooled_rate"]["value"] == 1.0 and entry["n_failed"] == entry["fooled"] == 3
        # fooled on all 3: the interval says what 3 runs can show (Wilson), not [1, 1]
        assert (
            entry["fooled_rate"]["ci_low"] == pytest.approx(0.43850, abs=1e-5)
            and entry["fooled_rate"]["ci_high"] == 1.0
        )
    assert all(
        e["unchanged_rate"]["value"] == 1.0 for e in doc["probes"] if e["probe"] not in ("false_claim", "injection")
    )
    assert by_probe(doc["probes"], "injection", "safety")["lenient_flip_rate"]["value"] == 1.0
    failed = [line for line in res.stderr.splitlines() if line.startswith("gate failed")]
    assert failed == ["gate failed: false_claim.fooled_rate>0.05: openai/judge-a procedure_v1 outcome fooled_rate = 1"]
    assert [g["failures"] != [] for g in doc["gates"]] == [True, False]


def test_fail_if_that_holds_exits_0_and_table_names_every_probe(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "t.db"
    res = probe(db, server, cfg, "--fail-if", "injection.fooled_rate>0", paths=[runs])
    assert res.exit_code == 0, res.stderr
    assert "gate injection.fooled_rate>0: held" in res.stdout
    for name in PROBES:
        assert name in res.stdout
    assert "Traceback" not in res.stderr


def test_a_gate_that_cannot_be_measured_fails(tmp_path, server, runs, cfg):
    server.mode = "constant"
    res = probe(
        tmp_path / "u.db",
        server,
        cfg,
        "--probes",
        "verbosity",
        "--fail-if",
        "false_claim.fooled_rate>0.5",
        paths=[runs],
    )
    assert res.exit_code == 3
    assert "gate failed: false_claim.fooled_rate>0.5: not measured (no probe answers for it)" in res.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("--fail-if", "false_claim.fooled>0.05"), "METRIC one of"),
        (("--fail-if", "fooled_rate>>1"), "expected PROBE[.DIMENSION].METRIC OP NUMBER"),
        (("--probes", "verbosity,typo"), "unknown probe 'typo'"),
    ],
)
def test_bad_probe_arguments_are_one_line_usage_errors(tmp_path, server, runs, cfg, args, message):
    res = probe(tmp_path / "x.db", server, cfg, *args, paths=[runs])
    assert res.exit_code == 2 and message in res.stderr and server.count == 0
    assert len(res.stderr.strip().splitlines()) == 1


def test_sample_and_seed_pick_the_same_runs_every_time(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "s.db"
    first = json.loads(
        probe(
            db, server, cfg, "--format", "json", "--sample", 3, "--seed", 7, "--probes", "identity", paths=[runs]
        ).stdout
    )
    again = json.loads(
        probe(db, server, cfg, "--format", "json", "--sample", 3, "--seed", 7, "--probes", "identity").stdout
    )
    other = json.loads(
        probe(db, server, cfg, "--format", "json", "--sample", 3, "--seed", 8, "--probes", "identity").stdout
    )
    assert first["runs"] == again["runs"] and len(first["runs"]) == 3 and other["runs"] != first["runs"]
    assert first["cases"] == {"identity": 3}


def test_a_run_whose_file_moved_or_changed_is_not_probed(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "m.db"
    assert invoke("score", runs, "--db", db, "--format", "csv").exit_code in (0, 1)
    (runs / "reads" / "reads-first-0.jsonl").unlink()
    changed = runs / "reads" / "reads-first-1.jsonl"
    changed.write_text(changed.read_text().replace("FAULT", "OK"))
    res = probe(db, server, cfg, "--format", "json", "--probes", "identity")
    doc = json.loads(res.stdout)
    assert doc["skipped"]["identity"] == {"its trajectory file cannot be read": 2}
    notes = "\n".join(doc["notes"])
    assert "reads-first-0: not probed" in notes and "not the file that was scored" in notes


def test_a_crossed_max_cost_stops_probing_and_exits_1(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "c.db"
    res = probe(db, server, cfg, "--max-cost", 0, "--probes", "identity", paths=[runs])
    assert res.exit_code == 1 and "--max-cost" in res.stderr
    assert count(db, "probe_annotations") == 0


def test_audit_and_report_show_the_probe_section_escaped_and_deterministic(tmp_path, server, runs, cfg):
    server.mode = "gullible"
    db = tmp_path / "r.db"
    hostile = "openai/j<b>\u202e"
    res = probe(db, server, cfg, "--probes", "false_claim,verbosity", paths=[runs], models=[hostile])
    assert res.exit_code == 0, res.stderr
    assert "\u202e" not in res.stdout  # the console sanitizer shows it escaped
    text = invoke("audit", "--db", db, "--resamples", 50).stdout
    assert "== Judge robustness probes ==" in text and "-- Probe robustness per judge --" in text
    assert "false_claim fooled" in text and "verbosity unchanged" in text
    # what the section says of its intervals is what they are (probe_stats: Wilson, not a bootstrap)
    assert "Intervals are Wilson score intervals of each share of runs." in " ".join(text.split())
    md = invoke("audit", "--db", db, "--format", "markdown", "--resamples", 50).stdout
    # a word with '@' is a code span (no mention, no autolink), where GFM shows '<b>' as text
    outside_code = re.sub(r"`[^`]*`", "", md)
    assert "## Judge robustness probes" in md and "j<b>" not in outside_code and "`(openai/j<b>\\u202e@" in md
    pages = []
    for name in ("a.html", "b.html"):
        assert invoke("report", "--db", db, "--html", tmp_path / name).exit_code == 0
        page = (tmp_path / name).read_text(encoding="utf-8")
        pages.append(
            page[
                page.index("<h3>Judge robustness probes</h3>") : page.index(
                    "</section>", page.index("<h3>Judge robustness probes</h3>")
                )
            ]
        )
    assert pages[0] == pages[1]  # the section is byte-identical from one report to the next
    assert 'class="chart chart-bar"' in pages[0] and "false_claim fooled" in pages[0]
    assert "j&lt;b&gt;" in pages[0] and "j<b>" not in pages[0]


def test_audit_csv_has_the_probe_rates(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "v.db"
    assert probe(db, server, cfg, "--probes", "injection", paths=[runs]).exit_code == 0
    lines = invoke("audit", "--db", db, "--format", "csv", "--resamples", 0).stdout.splitlines()
    assert "probes,injection,openai/judge-a,procedure_v1.outcome,fooled_rate,0.0," in lines
    assert "probes,injection,openai/judge-a,procedure_v1.safety,unchanged_rate,1.0," in lines


def test_two_judges_each_get_their_own_entries_from_one_run(tmp_path, server, runs, cfg):
    server.mode = "gullible"
    db = tmp_path / "two.db"
    judges = ["openai/judge-a", "openai/judge-b"]
    args = ("--probes", "false_claim,identity", "--format", "json")
    res = probe(db, server, cfg, *args, paths=[runs], models=judges, resamples=0)
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    for judge in ("openai/judge-a", "openai/judge-b"):
        mine = [e for e in doc["probes"] if e["judge_model"] == judge]
        assert {e["probe"] for e in mine} == {"false_claim", "identity"}
        assert by_probe(mine, "false_claim")["fooled_rate"]["value"] == 1.0
        assert by_probe(mine, "identity")["unchanged_rate"]["value"] == 1.0
    stored = rows(db, "SELECT probe, judge_model, COUNT(*) FROM probe_annotations GROUP BY 1, 2 ORDER BY 1, 2")
    n = doc["cases"]
    assert stored == [("false_claim", j, n["false_claim"]) for j in ("openai/judge-a", "openai/judge-b")] + [
        ("identity", j, n["identity"]) for j in ("openai/judge-a", "openai/judge-b")
    ]


def test_a_bad_probes_config_is_one_line_naming_the_key(tmp_path, server, runs, cfg):
    bad = tmp_path / "probes.toml"
    bad.write_text('[injection]\ntexts = "typo"\n')
    res = probe(tmp_path / "b.db", server, cfg, "--probes-config", bad, paths=[runs])
    assert res.exit_code == 1 and server.count == 0
    assert res.stderr.strip().splitlines()[-1] == f"error: {bad}: injection.texts: unknown key"


def test_a_fatal_provider_error_stops_before_any_probe_and_keeps_the_key_out(tmp_path, server, runs, cfg):
    server.default = "401"
    db = tmp_path / "k.db"
    res = probe(db, server, cfg, "--probes", "verbosity", paths=[runs])
    assert res.exit_code == 1 and "error:" in res.stderr and "Traceback" not in res.stderr
    assert count(db, "probe_annotations") == 0
    from judge_helpers import FAKE_KEY

    assert FAKE_KEY not in res.stdout + res.stderr


def test_an_older_database_without_the_probe_table_audits_with_no_probes(tmp_path):
    import sqlite3

    db = tmp_path / "old.db"
    assert invoke("score", EXAMPLES[1], "--db", db, "--format", "csv").exit_code == 0
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE probe_annotations")
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()
    assert audit(db)["probes"] == []  # read-only: the missing table reads as empty, the file is untouched
    assert rows(db, "SELECT name FROM sqlite_master WHERE name = 'probe_annotations'") == []
    assert rows(db, "PRAGMA user_version") == [(0,)]


def test_a_judge_probing_its_own_model_is_warned_unless_allowed(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "self.db"
    own = {"paths": [runs], "models": ["openai/gemini-2.5-flash"], "resamples": 0}
    warned = probe(db, server, cfg, "--probes", "identity", **own)
    assert (
        warned.exit_code == 0 and "judge openai/gemini-2.5-flash would judge 4 run(s) of its own model" in warned.stderr
    )
    assert "own model" not in probe(db, server, cfg, "--probes", "identity", "--allow-self-judging", **own).stderr


def test_a_failed_refresh_never_overwrites_a_stored_probe_answer(tmp_path, server, runs, cfg):
    server.mode = "constant"
    db = tmp_path / "keep.db"
    assert probe(db, server, cfg, "--probes", "verbosity", paths=[runs]).exit_code == 0
    stored = rows(db, "SELECT annotation_id, status, annotation FROM probe_annotations ORDER BY 1")
    server.default = "500"
    res = probe(db, server, cfg, "--probes", "verbosity", "--refresh")
    assert res.exit_code == 1 and server.count > 0
    assert rows(db, "SELECT annotation_id, status, annotation FROM probe_annotations ORDER BY 1") == stored


def test_probes_are_asked_again_when_the_schema_sent_changes(tmp_path, server, runs, cfg):
    """The probe's cache key is the judge's: in json_object_schema mode the narrowed schema sent
    (bounded by rationale_max_chars) is part of it, so a new bound asks again instead of serving
    answers given under the old one."""
    server.dialect = "llamacpp"
    db = tmp_path / "p.db"
    args = ("--output-mode", "json_object_schema", "--probes", "verbosity")
    assert probe(db, server, cfg, *args, paths=[runs]).exit_code == 0
    first = server.count
    assert probe(db, server, cfg, *args, paths=[runs]).exit_code == 0 and server.count == first
    narrower = tmp_path / "narrower.toml"
    narrower.write_text(Path(cfg).read_text() + "[request]\nrationale_max_chars = 200\n")
    assert probe(db, server, str(narrower), *args, paths=[runs]).exit_code == 0
    assert server.count == 2 * first


def test_probe_paths_take_the_scenario_files_their_runs_name(tmp_path, server, cfg):
    """`probe PATHS --scenarios FILE` scores runs that name their scenario, as `evalkit score` does."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl

    scenario = a320_scenario()
    for i in range(2):
        records = trajectory(scenario, [read("get_ecam"), cmd("apu_gen", 0), cmd("apu_gen", 1)], run_id=f"n-{i}")
        del records[0]["scenario"]
        records[0]["scenario_id"] = scenario["id"]
        write_jsonl(tmp_path / "named" / f"n-{i}.jsonl", records)
    (tmp_path / "tasks.json").write_text(json.dumps([scenario]), encoding="utf-8")
    db = tmp_path / "p.db"
    res = probe(
        db, server, cfg, "--probes", "identity", "--scenarios", tmp_path / "tasks.json", paths=[tmp_path / "named"]
    )
    assert res.exit_code == 0, res.stderr
    assert count(str(db), "scorecards") == 2 and count(str(db), "probe_annotations") == 2
