"""`evalkit judge --pairwise` end to end: click, the real litellm client and the fake server's
``pairwise_biased`` judge (a planted position bias and a planted length bias), then `evalkit audit`
reading the verdicts; the seeded pairing, `--pairs FILE`, the cache, blindness and secrets."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from judge_helpers import FAKE_KEY, fast_config, rows

import evalkit.cli

pytestmark = pytest.mark.slow

BASE, MODELS = "agent-base", ("agent-x", "agent-y")
SCENARIOS = ("elec-a", "elec-b")
POSITION_BIAS = 0.3  # the fake judge names the run shown first this often, else the longer run


def invoke(*args):
    return CliRunner().invoke(evalkit.cli.cli, [str(a) for a in args], catch_exceptions=False)


def write_corpus(directory: Path, base_runs: int, model_runs: int) -> Path:
    """Runs of the baseline and of two other models on two scenarios. A run's transcript has
    ``extra`` more reads: odd for the other models, even for the baseline, so no pair is as long on
    both sides, and which side is longer varies from pair to pair."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

    for scenario_id in SCENARIOS:
        scenario = a320_scenario(id=scenario_id)
        for model, count, offset in [(BASE, base_runs, 0)] + [(m, model_runs, 1) for m in MODELS]:
            for i in range(count):
                extra = 2 * ((i * 3 + len(model)) % 5) + offset
                calls = [say(f"run {i} of team {model.split('-')[1]}"), read()] + [
                    read("get_state", result={"n": k}) for k in range(extra)
                ]
                calls += [cmd("apu_gen", 0), cmd("apu_gen", 1)]
                run_id = f"{scenario_id}-{model}-{i:02d}"
                write_jsonl(
                    directory / f"{run_id}.jsonl",
                    trajectory(scenario, calls, run_id=run_id, model=model, passed=bool(i % 2)),
                )
    return directory


@pytest.fixture
def cfg(tmp_path):
    return fast_config(tmp_path)


def scored(tmp_path, base_runs=2, model_runs=3) -> str:
    db = str(tmp_path / "evalkit.db")
    res = invoke("score", write_corpus(tmp_path / "runs", base_runs, model_runs), "--db", db, "--format", "json")
    assert res.exit_code == 0, res.output
    return db


def pairwise(db, srv, cfg, *args, model="openai/judge-p"):
    return invoke(
        "judge", "--pairwise", "--db", db, "--model", model, "--api-base", srv.api_base, "--judge-config", cfg, *args
    )


def verdict_rows(db):
    return rows(db, "SELECT pair_id, a, b, shown, rater, rater_kind, dimension, verdict FROM pairwise_verdicts")


def test_pairwise_judge_then_audit_finds_the_planted_position_and_length_bias_and_a_rerun_is_free(
    tmp_path, server, cfg
):
    db = scored(tmp_path, base_runs=8, model_runs=15)  # 2 scenarios x 2 models x 15 runs = 60 pairs
    server.mode, server.position_bias, server.pair_seed = "pairwise_biased", POSITION_BIAS, "planted"
    res = pairwise(db, server, cfg, "--baseline", BASE, "--format", "json", "--concurrency", 8)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["pairs"] == 60 and doc["baseline"] == BASE and doc["seed"] == 0
    assert doc["summary"]["calls"] == 120 and doc["summary"]["failures"] == 0
    sent = server.count
    assert sent == 120
    stored = verdict_rows(db)
    assert len(stored) == 120 and {r[3] for r in stored} == {"ab", "ba"}
    assert {r[4] for r in stored} == {"openai/judge-p@pairwise_v1"} and {r[5] for r in stored} == {"judge"}
    models = dict(rows(db, "SELECT run_id, model FROM scorecards"))
    assert {models[r[1]] for r in stored} == set(MODELS) and {models[r[2]] for r in stored} == {BASE}

    res = invoke("audit", "--db", db, "--format", "json", "--resamples", 400)
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(res.stdout)["pairwise"]["judges"]
    assert entry["judge"] == "openai/judge-p@pairwise_v1" and entry["dimension"] == "overall"
    assert entry["n_pairs"] == 60 and entry["n_both_orders"] == 60
    p = POSITION_BIAS
    # the longer run is named unless the coin names the first-shown run: one order agrees, the other
    # agrees with probability 1 - p; first shown in (1 + p) / 2 of the verdicts; longer in 1 - p / 2
    planted = {
        "position_consistency": 1 - p,
        "strict_flips": p,
        "first_shown": (1 + p) / 2,
        "longer_wins": 1 - p / 2,
    }
    for name, value in planted.items():
        fig = entry[name]
        assert fig["ci_low"] <= value <= fig["ci_high"], (name, fig, value)
    assert entry["first_shown"]["ci_low"] > 0.5  # a position bias, found
    assert entry["longer_wins"]["ci_low"] > 0.5  # a length bias, found
    assert entry["position_consistency"]["ci_high"] < 1.0
    # each candidate's win rate against the baseline (the side every pair put as a)
    assert {(w["model"], w["opponent"]) for w in entry["win_rates"]} == {(m, BASE) for m in MODELS}
    assert {m["model"] for m in entry["bradley_terry"]["models"]} == {BASE, *MODELS}

    again = pairwise(db, server, cfg, "--baseline", BASE, "--format", "json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)["summary"]
    assert server.count == sent and summary["calls"] == 0 and summary["cache_hits"] == 120
    assert verdict_rows(db) == stored


def test_the_baseline_pairing_is_seeded_and_uses_each_baseline_run_in_turn(tmp_path, server, cfg):
    db = scored(tmp_path, base_runs=2, model_runs=3)
    res = pairwise(db, server, cfg, "--baseline", BASE, "--seed", "7", "--format", "jsonl")
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    pairs = sorted({(v["pair_id"], v["a"], v["b"]) for v in lines})
    assert len(pairs) == 2 * 2 * 3 and len(lines) == 2 * len(pairs)
    models = dict(rows(db, "SELECT run_id, model FROM scorecards"))
    scenario = dict(rows(db, "SELECT run_id, scenario_id FROM scorecards"))
    for _, a, b in pairs:
        assert models[a] in MODELS and models[b] == BASE and scenario[a] == scenario[b]
    for model in MODELS:  # 3 runs against 2 baseline runs: each baseline run once or twice
        for s in SCENARIOS:
            used = [b for _, a, b in pairs if models[a] == model and scenario[a] == s]
            assert sorted(used.count(b) for b in set(used)) == [1, 2]
    assert "calls made: 24" in res.stderr and "pairs: 12 (baseline agent-base, seed 7)" in res.stderr

    other = tmp_path / "other"
    other.mkdir()
    same = scored(other, base_runs=2, model_runs=3)
    again = pairwise(same, server, cfg, "--baseline", BASE, "--seed", "7", "--format", "jsonl")
    assert sorted({(v["pair_id"], v["a"], v["b"]) for v in map(json.loads, again.stdout.splitlines())}) == pairs
    draws = set()
    for seed in range(1, 6):
        res = pairwise(same, server, cfg, "--baseline", BASE, "--seed", seed, "--format", "jsonl")
        draws.add(frozenset((v["a"], v["b"]) for v in map(json.loads, res.stdout.splitlines())))
    assert len(draws) > 1


def test_a_pairs_file_judges_exactly_its_pairs_in_both_orders(tmp_path, server, cfg):
    db = scored(tmp_path)
    a1, b1 = "elec-a-agent-x-00", "elec-a-agent-base-01"
    a2, b2 = "elec-b-agent-y-02", "elec-b-agent-x-01"
    csv_file = tmp_path / "pairs.csv"
    csv_file.write_text(f"pair_id,a,b,rater\nmine-1,{a1},{b1},x\nmine-1,{a1},{b1},y\nmine-2,{a2},{b2},x\n")
    res = pairwise(db, server, cfg, "--pairs", csv_file)
    assert res.exit_code == 0, res.output
    assert server.count == 4
    stored = {(r[0], r[1], r[2], r[3]) for r in verdict_rows(db)}
    assert stored == {(p, a, b, o) for p, a, b in (("mine-1", a1, b1), ("mine-2", a2, b2)) for o in ("ab", "ba")}
    assert "mine-1" in res.stdout and "from --pairs" in res.stdout

    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(json.dumps({"pair_id": "mine-1", "a": a1, "b": b1}) + "\n")
    res = pairwise(db, server, cfg, "--pairs", jsonl)
    assert res.exit_code == 0 and server.count == 4  # the same two calls: served from the cache


@pytest.mark.parametrize(
    "body, line, message",
    [
        ("pair_id,a\np,elec-a-agent-x-00\n", 1, "needs the columns pair_id, a, b; missing b"),
        ("pair_id,a,b\np,elec-a-agent-x-00,nope\n", 2, "run 'nope' is not a scored run in the database"),
        ("pair_id,a,b\np,elec-a-agent-x-00,elec-a-agent-x-00\n", 2, "a and b are the same run"),
        ("pair_id,a,b\np,elec-a-agent-x-00,elec-b-agent-base-00\n", 2, "are of different scenarios"),
        (
            "pair_id,a,b\np,elec-a-agent-x-00,elec-a-agent-base-00\np,elec-a-agent-x-01,elec-a-agent-base-00\n",
            3,
            "line 2 named others",
        ),
        ("pair_id,a,b\np,elec-a-agent-x-00\n", 2, "expected 3 columns, found 2"),
    ],
)
def test_a_bad_pairs_file_is_one_line_naming_file_and_line(tmp_path, server, cfg, body, line, message):
    db = scored(tmp_path)
    bad = tmp_path / "pairs.csv"
    bad.write_text(body)
    res = pairwise(db, server, cfg, "--pairs", bad)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert f"{bad}:{line}: " in res.stderr and message in res.stderr
    assert server.count == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (("--pairwise",), "--pairwise needs --baseline MODEL or --pairs FILE"),
        (("--baseline", BASE), "--baseline and --pairs are options of --pairwise"),
        (("--pairwise", "--baseline", BASE, "--resample", "0.5"), "--pairwise does not take --resample"),
        (("--pairwise", "--baseline", BASE, "--batch-status"), "--pairwise does not take --batch-status"),
        (("--pairwise", "--baseline", BASE, "--rubric", "procedure_v1"), "not a pairwise rubric"),
    ],
)
def test_pairwise_option_mistakes_are_usage_errors(tmp_path, server, cfg, args, message):
    db = scored(tmp_path)
    res = invoke("judge", "--db", db, "--model", "openai/judge-p", "--api-base", server.api_base, *args)
    assert res.exit_code == 2, res.output
    assert message in res.stderr and server.count == 0


def test_pairs_and_baseline_together_and_seed_with_pairs_are_refused(tmp_path, server, cfg):
    db = scored(tmp_path)
    pairs = tmp_path / "p.csv"
    pairs.write_text("pair_id,a,b\n")
    both = pairwise(db, server, cfg, "--baseline", BASE, "--pairs", pairs)
    seeded = pairwise(db, server, cfg, "--pairs", pairs, "--seed", "3")
    assert both.exit_code == 2 and "one of them" in both.stderr
    assert seeded.exit_code == 2 and "--pairs FILE names its own" in seeded.stderr


def test_an_unknown_baseline_names_the_models_present(tmp_path, server, cfg):
    db = scored(tmp_path)
    res = pairwise(db, server, cfg, "--baseline", "agent-zzz")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "--baseline 'agent-zzz'" in res.stderr and "agent-base, agent-x, agent-y" in res.stderr


def test_a_pairwise_rubric_is_refused_by_the_pointwise_judge(tmp_path, server, cfg):
    db = scored(tmp_path)
    res = invoke("judge", "--db", db, "--model", "openai/j", "--api-base", server.api_base, "--rubric", "pairwise_v1")
    assert res.exit_code == 2 and "a pairwise rubric, for `evalkit judge --pairwise`" in res.stderr


def test_the_judge_sees_two_blind_runs_in_the_order_stored(tmp_path, server, cfg):
    db = scored(tmp_path)
    a, b = "elec-a-agent-x-00", "elec-a-agent-base-01"
    pairs = tmp_path / "p.csv"
    pairs.write_text(f"pair_id,a,b\nq,{a},{b}\n")
    res = pairwise(db, server, cfg, "--pairs", pairs)
    assert res.exit_code == 0, res.output
    prompts = ["".join(str(m.get("content")) for m in r["body"]["messages"]) for r in server.requests if r.get("body")]
    assert len(prompts) == 2
    for text in prompts:
        for leak in ("agent-x", "agent-base", a, b, "scalar", "coverage", "pair_id"):
            assert leak not in text, leak
        assert text.count("<<<BEGIN UNTRUSTED RUN 1 DATA ") == 1 and text.count("<<<BEGIN UNTRUSTED RUN 2 DATA ") == 1
    rows_by_order = {r[3]: r for r in verdict_rows(db)}
    first_shown = [text.split("## Run 2")[0] for text in prompts]
    assert sorted("run 0 of team x" in shown for shown in first_shown) == [False, True]
    assert sorted("run 1 of team base" in shown for shown in first_shown) == [False, True]
    assert set(rows_by_order) == {"ab", "ba"}


def test_the_api_key_never_reaches_the_database_or_the_output(tmp_path, server, cfg):
    db = scored(tmp_path)
    server.default = "echo_key"  # every answer's rationale quotes the Authorization header
    res = pairwise(db, server, cfg, "--baseline", BASE)
    assert res.exit_code == 0, res.output
    assert FAKE_KEY not in res.output
    assert rows(db, "SELECT COUNT(*) FROM pairwise_verdicts WHERE rationale LIKE '%your key is%'")[0][0] > 0
    for path in Path(db).parent.glob("evalkit.db*"):
        assert FAKE_KEY.encode() not in path.read_bytes()


def test_a_failed_call_stores_no_verdict_and_the_next_run_asks_again(tmp_path, server, cfg):
    db = scored(tmp_path)
    pairs = tmp_path / "p.csv"
    pairs.write_text("pair_id,a,b\nq,elec-a-agent-x-00,elec-a-agent-base-01\n")
    server.script("judge-p", ["malformed"] * 2)  # the first call and its one re-ask
    res = pairwise(db, server, cfg, "--pairs", pairs, "--concurrency", 1)
    assert res.exit_code == 1 and "failures: 1" in res.stdout
    assert [r[3] for r in verdict_rows(db)] == ["ba"]
    res = pairwise(db, server, cfg, "--pairs", pairs)
    assert res.exit_code == 0 and sorted(r[3] for r in verdict_rows(db)) == ["ab", "ba"]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM annotations").fetchone()[0] == 0  # never pointwise rows
    finally:
        conn.close()


def test_pairwise_with_paths_scores_them_first_and_prints_markdown(tmp_path, server, cfg):
    runs = write_corpus(tmp_path / "runs", base_runs=1, model_runs=1)
    db = str(tmp_path / "fresh.db")
    res = invoke(
        "judge", runs, "--pairwise", "--baseline", BASE, "--db", db, "--model", "openai/judge-p",
        "--api-base", server.api_base, "--judge-config", cfg, "--format", "markdown",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("| pair_id | a | b | judge_model | shown | status | overall | source |")
    assert "- pairs: 4 (baseline agent-base, seed 0), each asked in both orders" in res.stdout
    assert rows(db, "SELECT COUNT(*) FROM scorecards")[0][0] == 6 and len(verdict_rows(db)) == 8


def test_audit_judge_keeps_that_judges_pairwise_verdicts_and_the_references(tmp_path, server, cfg):
    """`audit --judge X` shows X's pairwise figures only (another judge's are left out), by the
    full model string or the part after the provider."""
    db = scored(tmp_path)
    server.mode = "pairwise_biased"
    for model in ("openai/judge-p", "openai/judge-q"):
        res = pairwise(db, server, cfg, "--baseline", BASE, model=model)
        assert res.exit_code == 0, res.output
    every = json.loads(invoke("audit", "--db", db, "--format", "json", "--resamples", 0).stdout)
    assert {e["judge"] for e in every["pairwise"]["judges"]} == {
        "openai/judge-p@pairwise_v1",
        "openai/judge-q@pairwise_v1",
    }
    for name in ("openai/judge-q", "judge-q"):
        res = invoke("audit", "--db", db, "--judge", name, "--format", "json", "--resamples", 0)
        assert res.exit_code == 0, res.output
        judges = json.loads(res.stdout)["pairwise"]["judges"]
        assert [e["judge"] for e in judges] == ["openai/judge-q@pairwise_v1"]
    table = invoke("audit", "--db", db, "--judge", "judge-q", "--resamples", 0).stdout
    assert "judge-q@pairwise_v1" in table and "judge-p@pairwise_v1" not in table


def test_pairwise_dry_run_sends_and_writes_nothing_and_counts_both_orders(tmp_path, server, cfg):
    db = scored(tmp_path)  # 2 scenarios x 2 models x 3 runs = 12 pairs
    before = Path(db).read_bytes()
    res = pairwise(db, server, cfg, "--baseline", BASE, "--dry-run", "--format", "json")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert (plan["items"], plan["to_send"], plan["cache_hits"]) == (24, 24, 0)  # each pair in both orders
    assert "run 1" in json.dumps(plan["first_prompt"]) and server.count == 0
    assert Path(db).read_bytes() == before and verdict_rows(db) == []
    assert pairwise(db, server, cfg, "--baseline", BASE).exit_code == 0
    again = json.loads(pairwise(db, server, cfg, "--baseline", BASE, "--dry-run", "--format", "json").stdout)
    assert (again["to_send"], again["cache_hits"]) == (0, 24)  # what was answered is not asked again


def test_pairwise_batch_goes_through_the_batch_api_and_stores_the_same_verdicts_as_live(tmp_path, server):
    from batch_helpers import batch_config

    cfg = batch_config(tmp_path)
    server.mode = "pairwise_biased"
    live_db = scored(tmp_path / "live")
    assert pairwise(live_db, server, cfg, "--baseline", BASE).exit_code == 0
    batch_db = scored(tmp_path / "batch")
    created = server.batch_api.created
    plan = json.loads(
        pairwise(batch_db, server, cfg, "--baseline", BASE, "--dry-run", "--batch", "--format", "json").stdout
    )
    assert plan["batch"] is not None and plan["to_send"] == 24
    res = pairwise(batch_db, server, cfg, "--baseline", BASE, "--batch", "--format", "json")
    assert res.exit_code == 0, res.output
    assert server.batch_api.created == created + 1
    # the batch answers all but the first call, asked live to find the model's output mode (as pointwise)
    assert rows(batch_db, "SELECT COUNT(*), COUNT(batch_id) FROM judge_calls") == [(24, 23)]
    diff = set(verdict_rows(batch_db)) ^ set(verdict_rows(live_db))
    assert not diff, sorted(diff)
    assert len(verdict_rows(batch_db)) == 24


def test_the_standalone_fake_server_takes_a_judging_mode_from_its_command_line(tmp_path, cfg):
    """`python tests/fake_llm_server.py --mode pairwise_biased --position-bias 1` is a judge that
    always names the run shown first: the audit finds no pair consistent and every verdict first."""
    from fake_llm_server import server_from_args

    srv = server_from_args(["--port", "0", "--mode", "pairwise_biased", "--position-bias", "1"])
    db = scored(tmp_path)
    with srv:
        res = pairwise(db, srv, cfg, "--baseline", BASE)
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(invoke("audit", "--db", db, "--format", "json").stdout)["pairwise"]["judges"]
    assert entry["n_both_orders"] == entry["n_pairs"] > 0
    assert entry["position_consistency"]["value"] == 0.0 and entry["first_shown"]["value"] == 1.0
    with pytest.raises(SystemExit):
        server_from_args(["--position-bias", "1.5"])
