"""What the batch tests (tests/test_judge_batch*.py) check the same way for every provider."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from judge_helpers import rows


def annotation_values(result) -> list:
    """The content of a judge result's annotations, in a comparable order."""
    return sorted((a["run_id"], json.dumps(a["values"], sort_keys=True)) for a in result.annotations)


def check_batch_stored_and_served(db: str, server, judge, batch_id: str, n: int) -> None:
    """n calls of batch `batch_id`, each priced at half the reference price (input 1.00, cached
    0.10, output 4.00 per Mtok), the submission collected, and a rerun served from the cache
    without a request."""
    calls = rows(db, "SELECT batch_id, prompt_tokens, cached_tokens, completion_tokens, cost_usd FROM judge_calls")
    assert len(calls) == n and {c[0] for c in calls} == {batch_id}
    for _, p, k, c, cost in calls:
        assert cost == pytest.approx(0.5 * ((p - k) * 1.0 + k * 0.1 + c * 4.0) / 1e6)
    assert rows(db, "SELECT status FROM judge_batches") == [("collected",)]
    before = len(server.requests)
    again = judge(db, server)
    assert again.summary.cache_hits == n and len(server.requests) == before  # a cached rerun sends nothing


def sources(result) -> list[str]:
    """Where each annotation came from (batch, call, cache, shared), sorted."""
    return sorted(a["source"] for a in result.annotations)


def check_split(db: str, result, live: list, batch: int, call: int) -> None:
    """Every run judged: `batch` of them by the batch's answers (stored with the batch id) and
    `call` asked again live, one request each (`live`: the live requests the server got)."""
    assert result.ok and len(live) == call
    assert sources(result) == ["batch"] * batch + ["call"] * call
    assert rows(db, "SELECT COUNT(*) FROM judge_calls WHERE batch_id IS NOT NULL AND status = 'ok'") == [(batch,)]


def judge_until_stopped(db: str, server, judge, config: dict, n: int) -> None:
    """Judge the n runs of `db` while the batches stay in progress, waiting 50 ms: the command
    stops with its runs not judged and says to run it again; then let the batches finish."""
    server.batch_api.in_progress_polls = 10**6
    first = judge(db, server, config={**config, "batch": {"poll_s": 0.01, "max_wait_s": 0.05}})
    assert not first.ok and first.summary.not_run == n and "run the same command again" in first.summary.stopped
    server.batch_api.in_progress_polls = 0


def kill_while_polling(command: list[str], polling) -> None:
    """Start the judge `command`, and SIGKILL it once `polling()` says its batch is being polled
    (the batch id is stored by then)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 300
        while not polling():
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)


def run_to_the_end(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr


def batch_config(tmp_path) -> str:
    """A judge config file for a judge process: polls every 50 ms, retries at once."""
    path = tmp_path / "judge.toml"
    path.write_text("[batch]\npoll_s = 0.05\n[retry]\ninitial_wait_s = 0.001\nmax_wait_s = 0.005\njitter_s = 0.001\n")
    return str(path)
