"""A judge server that never finishes, answers too much, or points elsewhere: each attempt is
bounded in time (connect + headers + body) and in size while it is read, and a redirect is an
error naming both URLs that sends nothing (no transcript, no key) to the other host.

Everything goes through the real litellm client to tests/fake_llm_server.py on 127.0.0.1; the
other host is a RecordingListener on 127.0.0.2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_llm_server import RecordingListener, gzip_bomb
from judge_helpers import FAKE_KEY, judge_cli, judge_command, rows, scored_db
from judge_helpers import HOSTILE_MODEL as MODEL
from judge_helpers import request_config as config

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="module")
def _litellm_loaded():
    """Import litellm before any clock starts: the timings below are of the calls, not the import."""
    import evalkit.judges.litellm_judge  # noqa: F401


def judge(tmp_path, server, *, timeout_s=1.0, attempts=2, extra="", runs=1):
    db = scored_db(tmp_path, runs)
    start = time.monotonic()
    res = judge_cli(db, server.api_base, config(tmp_path, timeout_s, attempts, extra))
    return res, time.monotonic() - start


def errors(res) -> list[str]:
    return [a["error"] for a in json.loads(res.stdout)["annotations"]]


def one_line_judge_error(res) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    (error,) = errors(res)
    assert error and "\n" not in error
    return error


# -- a total deadline per attempt -----------------------------------------------------------------


def test_trickled_body_is_cut_at_the_deadline(tmp_path, server):
    server.default, server.trickle_s = "trickle", 2.0  # a byte every 2 s: each read is within 2.5 s
    res, took = judge(tmp_path, server, timeout_s=2.5, attempts=1)
    error = one_line_judge_error(res)
    assert "after 1 attempt" in error and "no complete reply within 2.5 s" in error
    assert server.count == 1 and took < 6


def cut_at_the_deadline(tmp_path, server, behaviour):
    """A server that never ends its reply (``behaviour``): each of 2 attempts cut after 1 s."""
    server.default, server.trickle_s = behaviour, 0.05
    res, took = judge(tmp_path, server, timeout_s=1.0, attempts=2)
    error = one_line_judge_error(res)
    assert "no complete reply within 1 s" in error
    assert server.count == 2 and took < 6


def test_endless_chunked_body_is_cut_at_the_deadline(tmp_path, server):
    cut_at_the_deadline(tmp_path, server, "endless_chunked")


def test_endless_headers_are_cut_at_the_deadline(tmp_path, server):
    cut_at_the_deadline(tmp_path, server, "endless_headers")


def test_a_slow_but_complete_reply_within_the_deadline_is_read(tmp_path, server):
    server.default, server.slow_s = "slow", 0.3
    res, _ = judge(tmp_path, server, timeout_s=2.0, attempts=1)
    assert res.exit_code == 0, res.output


# -- a reply size limit -----------------------------------------------------------------------------


def test_huge_reply_is_refused_quickly_with_bounded_memory(tmp_path):
    """100 MB announced by Content-Length: refused before the body is read, in a separate process
    whose peak RSS is measured (an unbounded read took 1.56 GB and 116 s)."""
    db = scored_db(tmp_path, 1)
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_llm_server.py"), "--port", "0", "--default", "huge"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        api_base = fake.stdout.readline().split(" on ")[-1].strip()
        start = time.monotonic()
        env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
        rss_file = tmp_path / "peak_kib"
        # a fresh parent for the judge, so the peak measured is the judge's alone (RUSAGE_CHILDREN of
        # this test process would be the largest child the whole session ever waited for)
        measure = (
            "import resource, subprocess, sys; code = subprocess.run(sys.argv[2:]).returncode; "
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
            "sys.exit(code)"
        )
        done = subprocess.run(
            [sys.executable, "-c", measure, str(rss_file)]
            + judge_command(
                db,
                MODEL,
                api_base,
                "--output-mode",
                "json_schema",
                "--format",
                "json",
                "--judge-config",
                str(config(tmp_path, 30.0, 2)),
            ),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            cwd=ROOT,
        )
        took = time.monotonic() - start
    finally:
        fake.terminate()
        fake.wait()
    peak_mb = int(rss_file.read_text()) / 1024
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    (error,) = [a["error"] for a in json.loads(done.stdout)["annotations"]]
    assert "larger than 4 MiB" in error and "reply_max_bytes" in error
    (latency_ms,) = rows(db, "SELECT latency_ms FROM judge_calls")[0]
    # the call itself, not the process start (litellm's import alone takes seconds on a busy machine);
    # reading the 100 MB body took 116 s, refusing it takes well under a second on an idle machine
    assert latency_ms < 15000 and took < 50 and peak_mb < 400, (latency_ms, took, peak_mb)


def test_huge_chunked_reply_is_cut_while_reading(tmp_path, server):
    server.default, server.huge_bytes = "huge_chunked", 100 * 2**20  # no length to refuse up front
    res, took = judge(tmp_path, server, timeout_s=30.0, attempts=2)
    error = one_line_judge_error(res)
    assert "larger than 4 MiB" in error
    assert server.count == 1 and took < 8  # not retried: the same request gets the same answer


def test_a_compressed_reply_is_bounded_after_decoding(tmp_path, server):
    """64 MiB of spaces in a gzip body of a few hundred KB: counted as decoded, refused at the limit."""
    server.default, server.huge_bytes = "gzip_bomb", 64 * 2**20
    assert len(gzip_bomb(server.huge_bytes)) < 2**20  # made before the clock starts
    res, took = judge(tmp_path, server, timeout_s=30.0)
    assert "larger than 4 MiB" in one_line_judge_error(res)
    assert server.count == 1 and took < 8


def test_reply_size_limit_is_configurable(tmp_path, server):
    server.default = "ok"
    res, _ = judge(tmp_path, server, extra="reply_max_bytes = 200")
    error = one_line_judge_error(res)
    assert "larger than 200 bytes" in error and "[request].reply_max_bytes" in error


def test_reply_size_limit_rejects_nonsense(tmp_path):
    from evalkit.judges.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="reply_max_bytes"):
        load_config(overrides={"request": {"reply_max_bytes": 0}})
    assert load_config().reply_max_bytes == 4 * 2**20


# -- redirects ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["302", "307"])
def test_redirect_of_a_judge_request_is_an_error_naming_both_urls(tmp_path, server, code):
    with RecordingListener("127.0.0.2") as other:
        server.default, server.redirect_to = f"redirect_{code}", other.url + "/v1"
        res, _ = judge(tmp_path, server)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert other.requests == []  # neither the transcript nor the key went to the other host
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "nothing listening" not in lines[0]
    assert f"{server.api_base}/chat/completions" in lines[0] and f"{other.url}/v1/chat/completions" in lines[0]
    assert f"redirected ({code})" in lines[0]
    assert server.count == 1  # a redirect is not retried


def test_model_listing_sends_no_credentials_to_another_host(tmp_path, server):
    """A 404 from chat lists the server's models; a redirect of that listing is not followed."""
    with RecordingListener("127.0.0.2") as other:
        server.models = ["smollm2-135m-instruct"]
        server.models_redirect = other.url + "/v1/models"
        res, _ = judge(tmp_path, server)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert other.requests == []
    (listing,) = server.listings
    assert listing["headers"].get("Authorization") == f"Bearer {FAKE_KEY}"  # its own host gets the key
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert lines == [f"error: {server.api_base} has no model 'judge-a' (404: The model `judge-a` does not exist.)"]


def test_model_listing_goes_through_httpx_with_the_key(tmp_path, server, monkeypatch):
    """The listing uses the judge's own HTTP client (httpx), not urllib."""
    import urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError("urllib used for the model listing")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    server.models = ["smollm2-135m-instruct", "qwen2.5-0.5b"]
    res, _ = judge(tmp_path, server)
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert lines == [
        f"error: {server.api_base} has no model 'judge-a'; it offers: qwen2.5-0.5b, "
        "smollm2-135m-instruct (use --model openai/<id>)"
    ]
