"""Hostile but well-formed replies: each becomes a `judge_error` with a one-line reason (or, for
implausible usage numbers, an annotation whose usage is unknown), never a traceback.

Everything goes through the real litellm client to tests/fake_llm_server.py on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from judge_helpers import judge_cli, request_config, rows, scored_db


def judge(tmp_path, server, behaviour, *, runs=1, extra=""):
    server.default = behaviour
    db = scored_db(tmp_path, runs)
    return db, judge_cli(db, server.api_base, request_config(tmp_path, 10.0, 2, extra))


def the_error(res) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert not [line for line in res.stderr.splitlines() if line.startswith("error:")], res.stderr  # not fatal
    (annotation,) = json.loads(res.stdout)["annotations"]
    assert annotation["status"] == "judge_error"
    error = annotation["error"]
    assert error and "\n" not in error and len(error) < 400, error
    return error


def test_deeply_nested_content_is_a_judge_error(tmp_path, server):
    db, res = judge(tmp_path, server, "nested")
    error = the_error(res)
    assert error.startswith("invalid reply after 2 asks: ") and "recursion limit exceeded" in error
    (raw,) = rows(db, "SELECT raw_response FROM judge_calls")[0]
    assert raw == "[" * 10**5  # kept, for whoever investigates (it is bounded by the size limit)


def test_no_choices_is_a_judge_error(tmp_path, server):
    _, res = judge(tmp_path, server, "no_choices")
    assert "the reply has no choices" in the_error(res)


def test_non_string_content_is_a_judge_error_not_a_mode_refusal(tmp_path, server):
    _, res = judge(tmp_path, server, "content_int")
    error = the_error(res)
    assert "refused" not in error and "mode" not in error.split(":")[0]
    assert "the reply's message content is a number, not text" in error
    assert server.count == 1  # a server fault, not the model's: no re-ask, no other output mode
    assert all(r["body"].get("response_format", {}).get("type") == "json_schema" for r in server.requests)


def test_huge_usage_numbers_are_recorded_as_unknown(tmp_path, server):
    db, res = judge(tmp_path, server, "huge_usage")
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    assert rows(db, "SELECT prompt_tokens, cost_usd FROM judge_calls") == [(None, None)]
    assert rows(db, "SELECT status, prompt_tokens FROM annotations") == [("ok", None)]


def test_reask_sends_a_bounded_excerpt_of_the_bad_reply(tmp_path, server):
    server.content = "not json " + "x" * 50_000
    db, res = judge(tmp_path, server, "ok")
    the_error(res)
    assert server.count == 2
    echoed = server.requests[1]["body"]["messages"][-2]
    assert echoed["role"] == "assistant"
    assert echoed["content"].startswith("not json xxx") and len(echoed["content"]) < 2_100
    assert echoed["content"].endswith("[... the reply went on: 50009 characters; the first 2000 are shown]")
    (request,) = rows(db, "SELECT request FROM judge_calls")[0]
    assert len(request) < 40_000  # the stored request holds the excerpt, not the whole reply


def test_an_oversized_rationale_is_refused_and_the_database_stays_small(tmp_path, server):
    """Rationales of 3 MB each, under the reply limit: refused as invalid, not stored three times."""
    server.rationale_chars = 3 * 2**20
    db, res = judge(tmp_path, server, "long_rationale", runs=3)
    assert res.exit_code == 1 and "Traceback" not in res.output
    errors = [a["error"] for a in json.loads(res.stdout)["annotations"]]
    assert len(errors) == 3
    assert all(
        "rationale: 3145728 characters, over the limit of 20000 ([request].rationale_limit_chars)" in e for e in errors
    ), errors
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE rationale IS NOT NULL") == [(0,)]
    size = sum(os.path.getsize(p) for p in Path(db).parent.glob(Path(db).name + "*"))
    assert size < 16 * 2**20, size  # the raw replies (one per call) only: 3 MB each


def test_a_rationale_within_the_limit_is_stored_whole(tmp_path, server):
    server.rationale_chars = 5000
    db, res = judge(tmp_path, server, "long_rationale")
    assert res.exit_code == 0, res.output
    assert rows(db, "SELECT length(rationale) FROM annotations") == [(5000,)]
