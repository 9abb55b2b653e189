"""Crash safety: kill a judge process mid-run, run again; and two processes on one database."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from judge_helpers import FAKE_KEY, cards_of, count, rows, scored_db
from judges.api import judge_db

FAST_TOML = "[retry]\nattempts = 3\ninitial_wait_s = 0.001\nmax_wait_s = 0.005\njitter_s = 0.001\n"


def start_judge(db, srv, config, model="openai/judge-a", concurrency="2"):
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
    return subprocess.Popen(
        [sys.executable, "-m", "evalkit", "judge", "--db", db, "--model", model, "--api-base", srv.api_base,
         "--concurrency", concurrency, "--config", config, "--format", "jsonl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def user_prompt(request_body: dict) -> str:
    return request_body["messages"][1]["content"]


def test_kill_and_resume_no_duplicates_no_repeated_call(tmp_path, server):
    db = scored_db(tmp_path, 8)
    config = tmp_path / "fast.toml"
    config.write_text(FAST_TOML)
    server.latency = 0.3
    proc = start_judge(db, server, str(config))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if os.path.exists(db) and rows(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'judge_calls'")[0][0]:
                if rows(db, "SELECT COUNT(*) FROM judge_calls WHERE status = 'ok'")[0][0] >= 3:
                    break
        os.kill(proc.pid, signal.SIGKILL)  # mid-run: two requests are in flight
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    finished = {row[0] for row in rows(db, "SELECT cache_key FROM judge_calls WHERE status = 'ok'")}
    assert 3 <= len(finished) < 8
    assert count(db, "annotations") == len(finished)  # each finished call was committed with its annotation
    done_prompts = {user_prompt(__import__("json").loads(r[0]))
                    for r in rows(db, "SELECT request FROM judge_calls WHERE status = 'ok'")}
    before = server.count
    server.latency = 0.0
    res = judge_db(db, ["openai/judge-a"], api_base=server.api_base,
                   config={"retry": {"initial_wait_s": 0.001, "max_wait_s": 0.005, "jitter_s": 0.001}})
    resent = [user_prompt(r["body"]) for r in server.requests[before:]]
    assert not done_prompts & set(resent)  # nothing already finished was asked again
    assert len(resent) == 8 - len(finished) and res.summary.cache_hits == len(finished) and res.ok
    assert count(db, "annotations") == 8 and count(db, "judge_calls") == 8 and count(db, "annotation_values") == 48
    assert rows(db, "SELECT COUNT(DISTINCT run_id) FROM annotations") == [(8,)]
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]


def test_two_judge_processes_share_one_database(tmp_path, server):
    db = scored_db(tmp_path, 6)
    config = tmp_path / "fast.toml"
    config.write_text(FAST_TOML)
    server.latency = 0.02
    procs = [start_judge(db, server, str(config), model=m) for m in ("openai/judge-a", "openai/judge-b")]
    for proc in procs:
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err.decode()
    assert rows(db, "SELECT judge_model, COUNT(*) FROM annotations GROUP BY judge_model ORDER BY 1") == [
        ("openai/judge-a", 6), ("openai/judge-b", 6)]
    assert count(db, "judge_calls") == 12 and count(db, "annotation_values") == 72
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert len(cards_of(db)) == 6
