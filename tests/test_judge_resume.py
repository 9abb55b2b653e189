"""Crash safety: kill a judge process mid-run, run again; and two processes on one database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from judge_helpers import FAKE_KEY, cards_of, count, fast_config, judge_command, rows, scored_db

from evalkit.judges.api import judge_db

pytestmark = pytest.mark.slow


def start_judge(db, srv, config, model="openai/judge-a", concurrency="2"):
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
    return subprocess.Popen(
        judge_command(
            db, model, srv.api_base, "--concurrency", concurrency, "--judge-config", config, "--format", "jsonl"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def user_prompt(request_body: dict) -> str:
    return request_body["messages"][1]["content"]


def wait_for(condition, what: str, guard_s: float = 300.0) -> None:
    """Poll until `condition()`; the guard only turns a hang into a failure, it measures nothing."""
    deadline = time.monotonic() + guard_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def ok_calls(db) -> int:
    if not os.path.exists(db):
        return 0
    if not rows(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'judge_calls'")[0][0]:
        return 0
    return rows(db, "SELECT COUNT(*) FROM judge_calls WHERE status = 'ok'")[0][0]


@pytest.mark.timeout(600)  # two judge processes import litellm: slow on a busy machine, not a hang
def test_kill_and_resume_no_duplicates_no_repeated_call(tmp_path, server):
    """Deterministic: the fake answers exactly 3 requests and holds the next ones, so the process
    is killed with exactly 3 calls stored and 2 in flight, however slow the machine is."""
    db = scored_db(tmp_path, 8)
    config = fast_config(tmp_path)
    server.hold_after(3)
    proc = start_judge(db, server, config)
    try:
        wait_for(lambda: server.held == 2 and ok_calls(db) == 3, "3 stored calls and 2 held requests")
        os.kill(proc.pid, signal.SIGKILL)  # mid-run: two requests are in flight
    finally:
        proc.wait(timeout=60)
        server.release()
    assert proc.returncode == -signal.SIGKILL
    finished = {row[0] for row in rows(db, "SELECT cache_key FROM judge_calls WHERE status = 'ok'")}
    assert len(finished) == 3 and server.count == 5
    assert count(db, "annotations") == 3  # each finished call was committed with its annotation
    done_prompts = {
        user_prompt(json.loads(r[0])) for r in rows(db, "SELECT request FROM judge_calls WHERE status = 'ok'")
    }
    wait_for(lambda: server.answered == 5, "the held requests to be answered to a dead client")
    before = server.count
    res = judge_db(
        db,
        ["openai/judge-a"],
        api_base=server.api_base,
        config={"retry": {"initial_wait_s": 0.001, "max_wait_s": 0.005, "jitter_s": 0.001}},
    )
    resent = [user_prompt(r["body"]) for r in server.requests[before:]]
    assert not done_prompts & set(resent)  # nothing already finished was asked again
    assert len(resent) == 5 and res.summary.cache_hits == 3 and res.ok
    assert count(db, "annotations") == 8 and count(db, "judge_calls") == 8 and count(db, "annotation_values") == 48
    assert rows(db, "SELECT COUNT(DISTINCT run_id) FROM annotations") == [(8,)]
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.timeout(600)
def test_two_judge_processes_share_one_database(tmp_path, server):
    db = scored_db(tmp_path, 6)
    config = fast_config(tmp_path)
    server.latency = 0.02
    procs = [start_judge(db, server, config, model=m) for m in ("openai/judge-a", "openai/judge-b")]
    for proc in procs:
        out, err = proc.communicate(timeout=600)  # a hang guard on a busy machine, not a speed check
        assert proc.returncode == 0, err.decode()
    assert rows(db, "SELECT judge_model, COUNT(*) FROM annotations GROUP BY judge_model ORDER BY 1") == [
        ("openai/judge-a", 6),
        ("openai/judge-b", 6),
    ]
    assert count(db, "judge_calls") == 12 and count(db, "annotation_values") == 72
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert len(cards_of(db)) == 6
