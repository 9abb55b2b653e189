"""`evalkit judge` and `evalkit cache` through click, in-process, against the fake server."""

from __future__ import annotations

import json

from click.testing import CliRunner
from judge_helpers import FAST, count, fast_config, rows, scored_db, write_runs

import evalkit.cli


def invoke(*args):
    return CliRunner().invoke(evalkit.cli.cli, list(args), catch_exceptions=False)


def judge(db, srv, *args):
    return invoke("judge", "--db", db, "--model", "openai/judge-a", "--api-base", srv.api_base, *args)


def test_cli_judges_stored_runs_and_prints_summary(tmp_path, server):
    db = scored_db(tmp_path, 3)
    res = judge(db, server, "--judge-config", fast_config(tmp_path))
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    assert out.splitlines()[0].split()[:4] == ["run_id", "judge_model", "rep", "status"]
    for line in (
        "runs annotated: 3 of 3",
        "calls made: 3 for 3 runs",
        "cache hits: 0",
        "requests sent: 3 (retries: 0)",
        "failures: 0",
        "rubric: procedure_v1 v1 (blind)",
    ):
        assert line in out
    assert "latency per call: median" in out and "mean excluding first call" in out
    res = judge(db, server)
    assert "cache hits: 3" in res.stdout and server.count == 3


def test_cli_with_paths_scores_first_and_reports_bad_files(tmp_path, server):
    runs = write_runs(tmp_path / "runs", 2)
    (runs / "broken.jsonl").write_text('{"type": "meta"\n')
    db = str(tmp_path / "new.db")
    res = judge(db, server, str(runs), "--judge-config", fast_config(tmp_path))
    assert res.exit_code == 1
    bad = [line for line in res.stderr.splitlines() if "broken.jsonl" in line]
    assert bad and bad[0].startswith(str(runs / "broken.jsonl") + ":1:") and "Traceback" not in res.stderr
    assert count(db, "scorecards") == 2 and count(db, "annotations") == 2 and server.count == 2


def test_python_scores_with_score_files_then_judges_with_judge_db_like_the_command(tmp_path, server):
    """`evalkit judge PATHS` in Python: evalkit.score_files into a Store, then evalkit.judge_db."""
    import evalkit

    runs = write_runs(tmp_path / "runs", 2)
    (runs / "broken.jsonl").write_text('{"type": "meta"\n')
    db = str(tmp_path / "new.db")
    with evalkit.Store(db) as store:
        _, errors = evalkit.score_files([str(runs)], store=store).collect()
    result = evalkit.judge_db(db, ["openai/judge-a"], api_base=server.api_base, config=FAST)
    assert [str(e).split(":")[0] for e in errors] == [str(runs / "broken.jsonl")]
    assert sorted(a["run_id"] for a in result.annotations) == ["run-000", "run-001"]
    assert count(db, "scorecards") == 2 and count(db, "annotations") == 2 and server.count == 2


def test_cli_json_jsonl_markdown_are_deterministic(tmp_path, server):
    db = scored_db(tmp_path, 2)
    judge(db, server)
    first = judge(db, server, "--format", "json").stdout
    assert first == judge(db, server, "--format", "json").stdout  # cached reruns print the same bytes
    doc = json.loads(first)
    assert [a["run_id"] for a in doc["annotations"]] == ["run-000", "run-001"]
    assert doc["summary"]["cache_hits"] == 2 and doc["rubric"] == {"id": "procedure_v1", "version": 1}
    jsonl = judge(db, server, "--format", "jsonl")
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(lines) == 2 and lines[0]["values"]["outcome"] in ("pass", "fail")
    assert "cache hits: 2" in jsonl.stderr
    md = judge(db, server, "--format", "markdown").stdout
    assert md.startswith("| run_id | judge_model |") and "- cache hits: 2" in md


def test_cli_401_exits_1_with_one_line_message(tmp_path, server):
    db = scored_db(tmp_path, 2)
    server.default = "401"
    res = judge(db, server, "--concurrency", "1")
    assert res.exit_code == 1 and server.count == 1
    message = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert message and "AuthenticationError (401)" in message[0] and "API key" in message[0]
    assert "Traceback" not in res.stderr


def test_cli_max_cost_says_it_stopped_and_the_calls_line_counts_only_the_runs_judged(tmp_path, server):
    """One call made, three runs not run: the calls line says 1 call for 1 run, not for 4."""
    db = scored_db(tmp_path, 4)
    cfg = tmp_path / "priced.toml"
    cfg.write_text('[prices."openai/judge-a"]\ninput_per_mtok = 1000000.0\noutput_per_mtok = 0.0\n')
    res = judge(db, server, "--judge-config", str(cfg), "--max-cost", "0.5", "--concurrency", "1")
    assert res.exit_code == 1 and server.count == 1
    assert "--max-cost $0.5000 reached" in res.stderr and "stopped: --max-cost" in res.stdout
    assert "calls made: 1 for 1 run\n" in res.stdout and "not run: 3" in res.stdout


def test_cli_dry_run_sends_nothing(tmp_path, server):
    db = scored_db(tmp_path, 2)
    res = judge(db, server, "--dry-run")
    assert res.exit_code == 0 and server.count == 0
    assert "dry run: nothing was sent" in res.stdout and "would send: 2" in res.stdout
    assert "--- system ---" in res.stdout and "<<<BEGIN UNTRUSTED RUN DATA" in res.stdout
    assert count(db, "judge_calls") == 0


def test_cli_usage_errors_exit_2(tmp_path, server):
    db = scored_db(tmp_path, 1)
    assert judge(db, server, "--rubric", "nope").exit_code == 2
    assert judge(db, server, "--resample", "0.1").exit_code == 2
    assert judge(db, server, "--seed", "3").exit_code == 2
    assert judge(str(tmp_path / "missing.db"), server).exit_code == 2
    assert judge(db, server, str(tmp_path / "no-such-dir")).exit_code == 2
    assert invoke("judge", "--db", db).exit_code == 2  # --model is required
    assert server.count == 0


def test_cache_stats_and_clear(tmp_path, server):
    db = scored_db(tmp_path, 2)
    judge(db, server)
    invoke("judge", "--db", db, "--model", "openai/judge-b", "--api-base", server.api_base)
    stats = invoke("cache", "stats", "--db", db)
    assert stats.exit_code == 0
    calls, modes = stats.stdout.split("\n\n")
    assert [line.split()[:5] for line in calls.splitlines()[2:]] == [
        ["openai/judge-a", "procedure_v1", "v1", "ok", "2"],
        ["openai/judge-b", "procedure_v1", "v1", "ok", "2"],
    ]
    assert modes.splitlines()[0] == "output modes (remembered per model and api base):"
    assert [line.split() for line in modes.splitlines()[3:]] == [
        ["openai/judge-a", server.api_base, "json_schema"],
        ["openai/judge-b", server.api_base, "json_schema"],
    ]
    doc = json.loads(invoke("cache", "stats", "--db", db, "--format", "json").stdout)
    assert doc["calls"][0]["calls"] == 2
    assert doc["output_modes"][0] == {
        "judge_model": "openai/judge-a",
        "api_base": server.api_base,
        "output_mode": "json_schema",
    }
    assert invoke("cache", "clear", "--db", db, "--model", "judge-a").stdout.strip() == "cleared 2 cached calls"
    assert rows(db, "SELECT DISTINCT judge_model FROM judge_calls") == [("openai/judge-b",)]
    assert count(db, "annotations") == 4  # annotations are results, not cache
    assert (
        invoke("cache", "clear", "--db", db, "--rubric", "computer_use_v1").stdout.strip() == "cleared 0 cached calls"
    )
    assert invoke("cache", "clear", "--db", db).stdout.strip() == "cleared 2 cached calls"
    judge(db, server)
    assert server.count == 6  # cleared entries are asked again


def _runs_naming_their_scenario(directory):
    """Two runs that name their scenario instead of embedding it, and the scenario file elsewhere."""
    from evalkit.trajectory.builders import a320_scenario, cmd, trajectory, write_jsonl

    scenario = a320_scenario()
    (directory / "runs").mkdir(parents=True)
    for i in range(2):
        records = trajectory(scenario, [cmd("apu_gen", 0), cmd("apu_gen", 1 + i)], run_id=f"named-{i}")
        del records[0]["scenario"]
        records[0]["scenario_id"] = scenario["id"]
        write_jsonl(directory / "runs" / f"named-{i}.jsonl", records)
    (directory / "tasks.json").write_text(json.dumps([scenario]), encoding="utf-8")
    return directory / "runs", directory / "tasks.json"


def test_cli_judge_paths_takes_the_scenario_files_their_runs_name(tmp_path, server):
    runs, tasks = _runs_naming_their_scenario(tmp_path)
    db = str(tmp_path / "j.db")
    without = judge(db, server, str(runs))
    assert without.exit_code == 1 and "names a scenario that is not embedded" in without.stderr
    res = judge(db, server, str(runs), "--scenarios", str(tasks), "--judge-config", fast_config(tmp_path))
    assert res.exit_code == 0, res.stderr
    assert count(db, "scorecards") == 2 and count(db, "annotations") == 2


def test_cli_judge_scenarios_without_paths_is_a_usage_error(tmp_path, server):
    runs, tasks = _runs_naming_their_scenario(tmp_path / "named")
    db = scored_db(tmp_path, 1)
    res = judge(db, server, "--scenarios", str(tasks))
    assert res.exit_code == 2 and "--scenarios applies to trajectory PATHS" in res.stderr


def test_cli_judge_without_the_judge_extra_says_how_to_install_it(tmp_path, server):
    """The built-in judge in an environment without litellm: one line naming the extra, exit 2."""
    import subprocess
    import sys

    db = scored_db(tmp_path, 1)
    code = (
        "import sys; sys.modules['litellm'] = None\n"  # as if it were not installed
        "import evalkit.cli; sys.argv = ['evalkit'] + sys.argv[1:]; evalkit.cli.main()"
    )
    args = ["judge", "--db", db, "--model", "openai/judge-a", "--api-base", server.api_base]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "error: the built-in judge needs the judge extra: pip install 'evalkit[judge]' (litellm is missing)"
    )


def test_cli_judge_paths_with_a_bad_scenario_file_is_one_line_and_makes_no_database(tmp_path, server):
    runs, _ = _runs_naming_their_scenario(tmp_path)
    (tmp_path / "broken.json").write_text('[{"id": "x", "ground_truth": ', encoding="utf-8")
    db = tmp_path / "never.db"
    res = judge(str(db), server, str(runs), "--scenarios", str(tmp_path / "broken.json"))
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'broken.json'}:1: not valid JSON: EOF while parsing a value (column 29); "
        "nothing is scored while a scenario file given has a problem ('evalkit check' lists every one)"
    ]
    assert not db.exists() and server.count == 0
