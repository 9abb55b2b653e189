"""`evalkit judge --batch`: the OpenAI-compatible Batch API through litellm's file and batch
functions against the fake server (tests/fake_batch_api.py): batch pricing, the same cache and
tables, fail-closed validation with bounded live re-asks, partial failures, an expired or failed
batch, resuming a killed judge without resubmitting, --batch-status and the dry-run plan."""

from __future__ import annotations

import pytest
from batch_helpers import (
    annotation_values,
    batch_config,
    check_batch_stored_and_served,
    check_split,
    judge_until_stopped,
    kill_while_polling,
    run_to_the_end,
    sources,
)
from judge_helpers import FAST, cards_of, judge_command, rows, scored_db

from evalkit.judges.api import dry_run, judge_db
from evalkit.judges.batch import chunks
from evalkit.judges.protocol import JudgeSetupError

pytestmark = pytest.mark.slow

PRICE = {"input_per_mtok": 1.0, "cached_input_per_mtok": 0.1, "output_per_mtok": 4.0}
CONFIG = {**FAST, "batch": {"poll_s": 0.01}, "prices": {"openai/judge-b": PRICE}}


def judge(db, server, **options):
    options.setdefault("config", CONFIG)
    options.setdefault("output_mode", "json_schema")
    return judge_db(db, ["openai/judge-b"], api_base=server.api_base, batch=True, **options)


def live_chat(server) -> list[dict]:
    return [
        r for r in server.requests if r["path"].endswith("/chat/completions") and "X-Fake-Batch" not in r["headers"]
    ]


def test_batch_answers_land_in_the_cache_at_the_batch_price(tmp_path, server):
    server.batch_api.in_progress_polls = 2
    db = scored_db(tmp_path, 4)
    res = judge(db, server)
    assert res.ok and res.summary.calls == 4 and not live_chat(server)
    assert set(sources(res)) == {"batch"}
    assert server.batch_api.created == 1
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE batch_id IS NOT NULL AND status = 'ok'") == [(4,)]
    check_batch_stored_and_served(db, server, judge, "batch-fake-0002", 4)


def test_without_a_price_entry_litellm_batch_prices_apply(tmp_path, server):
    import litellm

    db = scored_db(tmp_path, 2)
    res = judge_db(
        db,
        ["openai/gpt-4o-mini"],
        api_base=server.api_base,
        batch=True,
        output_mode="json_schema",
        config={**FAST, "batch": {"poll_s": 0.01}},
    )
    assert res.ok and res.summary.cost_unknown == 0 and set(sources(res)) == {"batch"}
    info = litellm.get_model_info("gpt-4o-mini")
    for p, c, cost in rows(db, "SELECT prompt_tokens, completion_tokens, cost_usd FROM judge_calls"):
        expected = p * info["input_cost_per_token_batches"] + c * info["output_cost_per_token_batches"]
        assert cost == pytest.approx(expected)


def test_batch_and_live_annotations_are_identical(tmp_path, server):
    server.mode = "per_run"
    live_db, batch_db = scored_db(tmp_path / "live", 3), scored_db(tmp_path / "batch", 3)
    live = judge_db(live_db, ["openai/judge-b"], api_base=server.api_base, config=CONFIG, output_mode="json_schema")
    batched = judge(batch_db, server)
    assert live.ok and batched.ok and annotation_values(live) == annotation_values(batched)


def test_invalid_batch_answer_is_asked_again_live_and_keeps_its_cost(tmp_path, server):
    db = scored_db(tmp_path, 3)
    server.script("judge-b", ["malformed"])  # the first batch line's answer is not JSON
    res = judge(db, server)
    check_split(db, res, live_chat(server), batch=2, call=1)
    (live_row,) = rows(db, "SELECT batch_id, attempts, cost_usd, prompt_tokens FROM judge_calls WHERE batch_id IS NULL")
    assert live_row[1] == 2  # the batch answer and the live call
    one = rows(db, "SELECT prompt_tokens FROM judge_calls WHERE batch_id IS NOT NULL")[0][0]
    assert live_row[3] > one  # the batch answer's tokens are added to the live call's


def test_live_re_ask_of_a_batch_answer_is_bounded(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.script("judge-b", ["malformed"] * 5)
    res = judge(db, server)
    assert not res.ok and res.summary.failures == 1
    assert len(live_chat(server)) == 2  # one live call + its one re-ask ([request].reask = 1), then judge_error
    assert rows(db, "SELECT status FROM judge_calls") == [("judge_error",)]


def test_partial_failure_goes_live_for_the_failed_lines_only(tmp_path, server):
    db = scored_db(tmp_path, 3)
    server.script("judge-b", ["ok", "500"])  # the batch's second line fails
    res = judge(db, server)
    check_split(db, res, live_chat(server), batch=2, call=1)


def test_expired_batch_keeps_what_it_answered_and_asks_the_rest_live(tmp_path, server):
    server.batch_api.expire_after = 2
    db = scored_db(tmp_path, 4)
    res = judge(db, server)
    check_split(db, res, live_chat(server), batch=2, call=2)


def test_failed_batch_is_judged_live(tmp_path, server):
    server.batch_api.fail_batch = True
    db = scored_db(tmp_path, 2)
    check_split(db, judge(db, server), live_chat(server), batch=0, call=2)


def test_stopped_polling_resumes_without_resubmitting(tmp_path, server):
    db = scored_db(tmp_path, 3)
    judge_until_stopped(db, server, judge, CONFIG, 3)
    ((status, has_id),) = rows(db, "SELECT status, batch_id IS NOT NULL FROM judge_batches")
    assert status in ("validating", "in_progress") and has_id
    res = judge(db, server)
    assert res.ok and server.batch_api.created == 1 and len(server.batch_api.files) == 2  # input + output


def test_batch_status_collects_finished_batches_and_submits_nothing(tmp_path, server):
    server.batch_api.in_progress_polls = 10**6
    db = scored_db(tmp_path, 2)
    judge(db, server, config={**CONFIG, "batch": {"poll_s": 0.01, "max_wait_s": 0.02}})
    server.batch_api.in_progress_polls = 0
    status = judge(db, server, batch_status=True)
    assert status.ok and status.summary.calls == 2 and server.batch_api.created == 1
    nothing = judge(scored_db(tmp_path / "other", 1), server, batch_status=True)
    assert nothing.summary.not_run == 1 and server.batch_api.created == 1


def test_killed_between_creating_and_storing_adopts_the_batch(tmp_path, server, monkeypatch):
    from evalkit.db import batches

    db = scored_db(tmp_path, 2)
    real = batches.update_submission

    def killed(database, submission_id, **fields):
        if "batch_id" in fields:
            raise KeyboardInterrupt  # the process dies right after the provider made the batch
        real(database, submission_id, **fields)

    monkeypatch.setattr(batches, "update_submission", killed)
    with pytest.raises(KeyboardInterrupt):
        judge(db, server)
    monkeypatch.setattr(batches, "update_submission", real)
    assert rows(db, "SELECT status, batch_id, input_file_id IS NOT NULL FROM judge_batches") == [
        ("submitting", None, 1)
    ]
    res = judge(db, server)
    assert res.ok and server.batch_api.created == 1  # found by its input file, not made again


@pytest.mark.timeout(600)
def test_killed_batch_judge_resumes_polling_without_resubmitting(tmp_path, server):
    db = scored_db(tmp_path, 3)
    server.batch_api.in_progress_polls = 10**6
    config = batch_config(tmp_path)
    command = judge_command(
        db, "openai/judge-b", server.api_base, "--output-mode", "json_schema", "--judge-config", config, "--batch"
    )
    kill_while_polling(
        command,
        lambda: server.batch_api.created == 1 and any(b["polls"] >= 2 for b in server.batch_api.batches.values()),
    )
    assert rows(db, "SELECT batch_id FROM judge_batches") == [("batch-fake-0002",)]
    server.batch_api.in_progress_polls = 0
    run_to_the_end(command)
    assert server.batch_api.created == 1 and rows(db, "SELECT COUNT(*) FROM annotations WHERE status = 'ok'") == [(3,)]


def test_batch_files_stay_within_the_limits(tmp_path, server):
    lines = [(str(i), b"x" * 10) for i in range(7)]
    assert [len(c) for c in chunks(lines, 3, 10**6)] == [3, 3, 1]
    assert [len(c) for c in chunks(lines, 100, 25)] == [2, 2, 2, 1]
    db = scored_db(tmp_path, 5)
    res = judge(db, server, config={**CONFIG, "batch": {"poll_s": 0.01, "max_requests": 2}})
    assert res.ok and server.batch_api.created == 3
    assert sorted(r for (r,) in rows(db, "SELECT requests FROM judge_batches")) == [1, 2, 2]


def test_max_cost_limits_what_is_submitted(tmp_path, server):
    db = scored_db(tmp_path, 4)
    res = judge(db, server, max_cost=0.002)  # about two requests' input at the batch rate
    assert not res.ok and "--max-cost" in res.summary.stopped and 0 < res.summary.calls < 4
    assert res.summary.not_run == 4 - res.summary.calls


def test_batch_needs_a_provider_with_a_batch_api(tmp_path, server):
    db = scored_db(tmp_path, 1)
    with pytest.raises(JudgeSetupError, match="ollama/llama3:8b: --batch needs the OpenAI Batch API"):
        judge_db(db, ["ollama/llama3:8b"], batch=True, config=CONFIG)
    assert server.count == 0


def test_dry_run_shows_the_batch_plan_and_both_costs(tmp_path, server):
    db = scored_db(tmp_path, 3)
    plan = dry_run(cards_of(db), ["openai/judge-b"], db=db, api_base=server.api_base, config=CONFIG, batch=True)
    b = plan.batch
    assert b["requests"] == 3 and b["files"] == 1 and server.count == 0
    assert b["estimated_input_cost_batch_usd"] == pytest.approx(b["estimated_input_cost_live_usd"] / 2)
    assert b["estimated_input_cost_live_usd"] == pytest.approx(plan.estimated_prompt_tokens * 1.0 / 1e6)
    assert "batch" not in dry_run(cards_of(db), ["openai/judge-b"], db=db, api_base=server.api_base).as_dict()


def test_a_refused_upload_is_one_line_not_a_traceback_and_the_rerun_submits(tmp_path, server):
    server.batch_api.refuse = (401, "Incorrect API key provided: sk-fake-upl*****")
    db = scored_db(tmp_path, 2)
    res = judge(db, server)
    assert not res.ok and res.summary.not_run == 2 and not live_chat(server)
    assert res.summary.fatal.startswith("create_file: ") and "batch call refused" in res.summary.fatal
    assert "\n" not in res.summary.fatal and "Traceback" not in res.summary.fatal
    assert rows(db, "SELECT status, input_file_id FROM judge_batches") == [("submitting", None)]
    server.batch_api.refuse = None
    again = judge(db, server)
    assert again.ok and server.batch_api.created == 1 and set(sources(again)) == {"batch"}


def test_a_refused_upload_exits_with_one_error_line_from_the_cli(tmp_path, server):
    import subprocess

    server.batch_api.refuse = (401, "Incorrect API key provided")
    db = scored_db(tmp_path, 1)
    config = batch_config(tmp_path)
    command = judge_command(db, "openai/judge-b", server.api_base, "--output-mode", "json_schema", "--batch")
    proc = subprocess.run([*command, "--judge-config", config], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "create_file" in proc.stderr and "batch call refused" in proc.stderr


def test_killed_while_the_batch_was_made_finds_it_past_150_newer_batches(tmp_path, server, monkeypatch):
    """The kill lands after the provider made the batch and before its id was stored; 150 batches of
    another client are made since, so it is on the list's second page: the rerun finds it there,
    by the submission id in its metadata, and submits nothing again."""
    from judge_helpers import invoke

    from evalkit.db import batches

    db = scored_db(tmp_path, 2)
    command = ("judge", "--db", db, "--model", "openai/judge-b", "--api-base", server.api_base)
    command += ("--output-mode", "json_schema", "--judge-config", batch_config(tmp_path), "--batch")
    real = batches.update_submission

    def killed(database, submission_id, **fields):
        if "batch_id" in fields:
            raise KeyboardInterrupt  # the process dies right after the provider made the batch
        real(database, submission_id, **fields)

    monkeypatch.setattr(batches, "update_submission", killed)
    first = invoke(*command)
    assert first.exit_code == 130, first.output
    monkeypatch.setattr(batches, "update_submission", real)
    ((sub_id, status, batch_id),) = rows(db, "SELECT submission_id, status, batch_id FROM judge_batches")
    assert (status, batch_id) == ("submitting", None)
    (ours,) = server.batch_api.batches.values()
    assert ours["metadata"] == {"evalkit_submission": sub_id}
    server.batch_api.add_foreign_batches(150)
    server.batch_api.in_progress_polls = 0
    again = invoke(*command)
    assert again.exit_code == 0, again.output
    assert server.batch_api.created == 1  # found, not made and billed again
    assert rows(db, "SELECT batch_id FROM judge_batches") == [(ours["id"],)]
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE status = 'ok' AND batch_id = ?", ours["id"]) == [(2,)]
    (page_1, page_2) = server.batch_api.listed  # the second page was read, and no more
    assert "limit=100" in page_1 and f"after={first_page_last(server)}" in page_2


def first_page_last(server) -> str:
    """The id of the 100th newest batch: the cursor of the list's second page."""
    return sorted(server.batch_api.batches, reverse=True)[99]


def test_the_fake_lists_batches_as_the_provider_does(server):
    """Newest first, `limit` (default 20, at most 100), `after`, `has_more`: what the search
    above relies on the fake to do as OpenAI does."""
    import json
    import urllib.request

    server.batch_api.add_foreign_batches(150)

    def page(query: str) -> dict:
        with urllib.request.urlopen(f"{server.api_base}/batches{query}") as reply:
            return json.load(reply)

    first = page("?limit=100")
    ids = [b["id"] for b in first["data"]]
    assert len(ids) == 100 and first["has_more"] and ids == sorted(ids, reverse=True)
    second = page(f"?limit=100&after={first['last_id']}")
    assert len(second["data"]) == 50 and not second["has_more"]
    assert len(page("")["data"]) == 20 and len(page("?limit=500")["data"]) == 100
