"""`evalkit judge --batch` with an `anthropic/...` model: Anthropic's Message Batches API
(judges/anthropic_batch.py; litellm cannot create these batches) against the fake server's
/v1/messages/batches on 127.0.0.1: batch pricing, the same cache and tables, fail-closed
validation of each result, errored and expired requests asked again live, resuming by the stored
batch id, and the API key sent only where it belongs."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import batch_helpers as batches_check
import pytest
from judge_helpers import FAST, judge_command, rows, scored_db

from evalkit.judges.api import judge_db
from evalkit.judges.protocol import JudgeFatalError

pytestmark = pytest.mark.slow

MODEL = "anthropic/claude-haiku-4-5-20251001"
KEY = "sk-ant-batch-test-not-real-0123456789"
PRICE = {"input_per_mtok": 1.0, "cached_input_per_mtok": 0.1, "output_per_mtok": 4.0}
CONFIG = {**FAST, "batch": {"poll_s": 0.01}, "prices": {MODEL: PRICE}}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def judge(db, server, **options):
    options.setdefault("config", CONFIG)
    options.setdefault("output_mode", "json_schema")
    return judge_db(db, [MODEL], api_base=server.api_base.removesuffix("/v1"), batch=True, **options)


def live_messages(server) -> list[dict]:
    return [r for r in server.requests if r["path"].endswith("/v1/messages") and "X-Fake-Batch" not in r["headers"]]


def batch_requests(server) -> list[dict]:
    return [r for r in server.requests if "/messages/batches" in r["path"]]


def test_message_batch_answers_land_in_the_cache_at_the_batch_price(tmp_path, server):
    server.batch_api.in_progress_polls = 2
    db = scored_db(tmp_path, 4)
    res = judge(db, server)
    assert res.ok and res.summary.calls == 4 and not live_messages(server)
    assert set(batches_check.sources(res)) == {"batch"} and server.batch_api.created == 1
    (batch,) = server.batch_api.message_batches.values()
    assert len(batch["requests"]) == 4 and batch["polls"] == 3  # in_progress twice, then ended
    params = batch["requests"][0]["params"]
    assert params["model"] == "claude-haiku-4-5-20251001" and params["max_tokens"] == 1024
    assert params["system"][0]["cache_control"] == {"type": "ephemeral"}  # the live request's marks
    assert "output_format" in params and "response_format" not in params  # litellm's translation
    batches_check.check_batch_stored_and_served(db, server, judge, batch["id"], 4)


def test_message_batch_and_live_annotations_are_identical(tmp_path, server):
    server.mode = "per_run"
    live_db, batch_db = scored_db(tmp_path / "live", 3), scored_db(tmp_path / "batch", 3)
    base = server.api_base.removesuffix("/v1")
    live = judge_db(live_db, [MODEL], api_base=base, config=CONFIG, output_mode="json_schema")
    batched = judge(batch_db, server)
    assert live.ok and batched.ok and batches_check.annotation_values(live) == batches_check.annotation_values(batched)


def test_cache_reads_in_a_message_batch_are_recorded_and_billed_cached(tmp_path, server):
    server.prompt_cache.enabled = True
    db = scored_db(tmp_path, 3)
    assert judge(db, server).ok
    cached = [k for (k,) in rows(db, "SELECT cached_tokens FROM judge_calls ORDER BY run_id")]
    assert cached[0] == 0 and all(k >= 1024 for k in cached[1:])  # the shared prefix, read from the 2nd on


def test_without_a_price_entry_litellm_batch_prices_apply(tmp_path, server):
    import litellm

    db = scored_db(tmp_path, 2)
    assert judge(db, server, config={**FAST, "batch": {"poll_s": 0.01}}).ok
    info = litellm.get_model_info(MODEL)
    (batch,) = server.batch_api.message_batches.values()
    billed = dict(rows(db, "SELECT cache_key, cost_usd FROM judge_calls"))
    for result in batch["results"]:  # what the provider reported, at Anthropic's batch rates (half of each)
        usage = result["result"]["message"]["usage"]
        expected = (
            usage["input_tokens"] * info["input_cost_per_token_batches"]
            + usage["cache_read_input_tokens"] * info["cache_read_input_token_cost"] / 2
            + usage["cache_creation_input_tokens"] * info["cache_creation_input_token_cost"] / 2
            + usage["output_tokens"] * info["output_cost_per_token_batches"]
        )
        assert billed[result["custom_id"]] == pytest.approx(expected)


def test_errored_and_expired_requests_are_asked_again_live(tmp_path, server):
    server.batch_api.errored = {0}
    server.batch_api.expire_after = 2
    db = scored_db(tmp_path, 4)
    batches_check.check_split(db, judge(db, server), live_messages(server), batch=1, call=3)


def test_prose_result_fails_closed_and_is_asked_again_live(tmp_path, server):
    server.batch_api.prose = {1}
    db = scored_db(tmp_path, 2)
    batches_check.check_split(db, judge(db, server), live_messages(server), batch=1, call=1)
    (attempts,) = rows(db, "SELECT attempts FROM judge_calls WHERE batch_id IS NULL")[0]
    assert attempts == 2  # the batch answer and the live call: what the batch answer cost is kept


def test_stopped_polling_resumes_by_the_stored_batch_id(tmp_path, server):
    db = scored_db(tmp_path, 3)
    batches_check.judge_until_stopped(db, server, judge, CONFIG, 3)
    ((status, batch_id),) = rows(db, "SELECT status, batch_id FROM judge_batches")
    assert status == "in_progress" and batch_id.startswith("msgbatch_fake_")
    res = judge(db, server)
    assert res.ok and server.batch_api.created == 1 and set(batches_check.sources(res)) == {"batch"}


def test_killed_before_the_batch_was_made_submits_it_once_on_resume(tmp_path, server, monkeypatch):
    from evalkit.judges.anthropic_batch import AnthropicBatches

    db = scored_db(tmp_path, 2)
    real = AnthropicBatches.create

    async def killed(self, sub, data):
        raise KeyboardInterrupt  # the process dies before the create call is sent

    monkeypatch.setattr(AnthropicBatches, "create", killed)
    with pytest.raises(KeyboardInterrupt):
        judge(db, server)
    monkeypatch.setattr(AnthropicBatches, "create", real)
    assert rows(db, "SELECT status, batch_id FROM judge_batches") == [("submitting", None)]
    res = judge(db, server)  # the requests are made again from the stored ones
    assert res.ok and server.batch_api.created == 1 and res.summary.calls == 2


def test_a_refused_create_stops_in_one_line_and_the_rerun_submits_once(tmp_path, server):
    server.batch_api.refuse = (401, "invalid x-api-key")
    db = scored_db(tmp_path, 2)
    res = judge(db, server)
    assert not res.ok and res.summary.not_run == 2 and not live_messages(server)
    assert "answered 401: invalid x-api-key" in res.summary.fatal and KEY not in res.summary.fatal
    assert "\n" not in res.summary.fatal
    assert rows(db, "SELECT status, batch_id FROM judge_batches") == [("submitting", None)]
    server.batch_api.refuse = None
    again = judge(db, server)
    assert again.ok and server.batch_api.created == 1 and set(batches_check.sources(again)) == {"batch"}


@pytest.mark.timeout(600)
def test_killed_judge_process_resumes_the_message_batch_by_its_id(tmp_path, server):
    db = scored_db(tmp_path, 3)
    server.batch_api.in_progress_polls = 10**6
    base = server.api_base.removesuffix("/v1")
    command = judge_command(
        db, MODEL, base, "--output-mode", "json_schema", "--judge-config", batches_check.batch_config(tmp_path)
    )
    command.append("--batch")
    polled = server.batch_api.message_batches.values
    batches_check.kill_while_polling(command, lambda: any(b["polls"] >= 2 for b in polled()))
    ((batch_id,),) = rows(db, "SELECT batch_id FROM judge_batches")
    assert batch_id.startswith("msgbatch_fake_") and server.batch_api.created == 1
    server.batch_api.in_progress_polls = 0
    batches_check.run_to_the_end(command)
    assert server.batch_api.created == 1 and not live_messages(server)
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE status = 'ok' AND batch_id = ?", batch_id) == [(3,)]


def test_the_key_goes_only_in_the_header_and_never_into_the_database(tmp_path, server):
    db = scored_db(tmp_path, 2)
    assert judge(db, server).ok
    sent = batch_requests(server)
    assert sent and all(r["headers"].get("x-api-key") == KEY for r in sent)
    assert all(r["headers"].get("anthropic-version") == "2023-06-01" for r in sent)
    with sqlite3.connect(db) as conn:
        dump = "\n".join(conn.iterdump())
    assert KEY not in dump


def test_a_results_url_on_another_host_is_refused_before_any_request(server):
    from evalkit.judges.anthropic_batch import AnthropicBatches

    asked = []

    class Client:
        async def request(self, *args, **kwargs):
            asked.append(args)

    batches = AnthropicBatches(
        MODEL,
        api_base="http://127.0.0.1:9",
        key=lambda: KEY,
        client=lambda: Client(),
        timeout_s=5,
        to_params=dict,
        to_chat=dict,
    )
    with pytest.raises(JudgeFatalError, match="sends the API key only to the API base"):
        asyncio.run(batches.results("http://127.0.0.2:9/v1/messages/batches/x/results"))
    assert asked == []


def test_no_key_stops_before_any_batch_request(tmp_path, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    db = scored_db(tmp_path, 1)
    res = judge(db, server)
    assert not res.ok and "no API key" in res.summary.fatal and "ANTHROPIC_API_KEY" in res.summary.fatal
    assert not batch_requests(server)


def test_result_types_read_as_output_or_error_lines():
    from evalkit.judges.anthropic_batch import AnthropicBatches
    from evalkit.judges.litellm_judge import anthropic_chat, anthropic_params

    batches = AnthropicBatches(
        MODEL,
        api_base=None,
        key=lambda: KEY,
        client=lambda: None,
        timeout_s=5,
        to_params=anthropic_params,
        to_chat=anthropic_chat,
    )
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": '{"a": 1}'}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 1024},
    }
    ok = batches.result_line({"custom_id": "k1", "result": {"type": "succeeded", "message": message}})
    body = ok["response"]["body"]
    assert ok["response"]["status_code"] == 200 and body["choices"][0]["message"]["content"] == '{"a": 1}'
    assert body["usage"]["prompt_tokens"] == 1034 and body["usage"]["prompt_tokens_details"]["cached_tokens"] == 1024
    tool = dict(message, content=[{"type": "tool_use", "id": "t", "name": "json_tool_call", "input": {"a": 2}}])
    json_tool = batches.result_line({"custom_id": "k4", "result": {"type": "succeeded", "message": tool}})
    assert json.loads(json_tool["response"]["body"]["choices"][0]["message"]["content"]) == {"a": 2}  # as live
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}
    bad = batches.result_line({"custom_id": "k2", "result": {"type": "errored", "error": error}})
    assert bad["response"] is None and bad["error"]["message"] == "invalid_request_error: max_tokens: too large"
    for kind in ("canceled", "expired", "something_new"):
        line = batches.result_line({"custom_id": "k3", "result": {"type": kind}})
        assert line["response"] is None and line["error"]["code"] == kind
    assert batches.state({"id": "b", "processing_status": "ended", "request_counts": {"expired": 2}})["status"] == (
        "expired"
    )
    assert batches.state({"id": "b", "processing_status": "canceling"})["status"] == "cancelling"


def test_killed_while_the_message_batch_was_made_finds_it_by_its_requests(tmp_path, server, monkeypatch):
    """Message batches carry no metadata: the rerun pages through the list (1,150 newer ended
    batches: a page is at most 1,000), checks the results of each candidate with as many requests
    for the custom ids it chose, waits for its own batch while it runs, and submits nothing again."""
    from judge_helpers import invoke

    from evalkit.db import batches

    db = scored_db(tmp_path, 2)
    config = batches_check.batch_config(tmp_path)
    base = server.api_base.removesuffix("/v1")
    command = ("judge", "--db", db, "--model", MODEL, "--api-base", base, "--output-mode", "json_schema")
    command += ("--judge-config", config, "--batch")
    real = batches.update_submission

    def killed(database, submission_id, **fields):
        if "batch_id" in fields:
            raise KeyboardInterrupt  # the process dies right after the provider made the batch
        real(database, submission_id, **fields)

    monkeypatch.setattr(batches, "update_submission", killed)
    assert invoke(*command).exit_code == 130
    monkeypatch.setattr(batches, "update_submission", real)
    assert rows(db, "SELECT status, batch_id FROM judge_batches") == [("submitting", None)]
    (ours,) = server.batch_api.message_batches
    server.batch_api.add_foreign_message_batches(1130, size=3)
    server.batch_api.add_foreign_message_batches(20, size=2)  # as many requests: their results are read
    server.batch_api.in_progress_polls = 2  # still running when the rerun finds it
    again = invoke(*command)
    assert again.exit_code == 0, again.output
    assert server.batch_api.created == 1  # found, not made and billed again
    assert rows(db, "SELECT batch_id FROM judge_batches") == [(ours,)]
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE status = 'ok' AND batch_id = ?", ours) == [(2,)]
    assert any("after_id=" in p for p in server.batch_api.listed)  # past the first page of 1,000
