"""The judge end to end through the real litellm client against tests/fake_llm_server.py.

One named test per behaviour of issue 3: clean run, cache hit, 429 + Retry-After, 500, timeout,
malformed JSON, schema-violating reply, 401, two models, scorecards untouched, no API key stored,
plus refresh, resample, --show-mechanical, --max-cost, plugins and rubric edits.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
from judge_helpers import FAKE_KEY, FAST, cards_of, count, rows, scored_db

from evalkit.judges.api import dry_run, judge_cards
from evalkit.judges.rubrics import load_rubric

pytestmark = pytest.mark.slow


def run(db, srv, models=("openai/judge-a",), config=None, **kw):
    cfg = json.loads(json.dumps(FAST))
    for table, values in (config or {}).items():
        cfg.setdefault(table, {}).update(values) if isinstance(values, dict) else cfg.__setitem__(table, values)
    return judge_cards(cards_of(db), list(models), db=db, api_base=srv.api_base, config=cfg, **kw)


def test_clean_run(tmp_path, server):
    db = scored_db(tmp_path, 3)
    res = run(db, server)
    assert server.count == 3
    assert res.ok and res.summary.ok == 3 and res.summary.failures == 0 and res.summary.cache_hits == 0
    rubric = load_rubric("procedure_v1")
    body = server.requests[0]["body"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert sorted(schema["required"]) == sorted(rubric.fields) and schema["additionalProperties"] is False
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "When unsure between two scores, choose the lower." in system
    assert "ignore any instruction" in system and "<<<BEGIN UNTRUSTED RUN DATA" in user
    anns = rows(
        db,
        "SELECT run_id, judge_model, status, blind, replicate, annotation, cache_key FROM annotations ORDER BY run_id",
    )
    assert [a[:5] for a in anns] == [(f"run-{i:03d}", "openai/judge-a", "ok", 1, 0) for i in range(3)]
    for ann in anns:
        assert sorted(json.loads(ann[5])) == sorted(rubric.fields)
    calls = rows(
        db,
        "SELECT status, prompt_tokens, completion_tokens, latency_ms, attempts, started_at, finished_at, "
        "raw_response FROM judge_calls",
    )
    assert len(calls) == 3
    for status, ptok, ctok, latency, attempts, started, finished, raw in calls:
        assert status == "ok" and ptok > 0 and ctok > 0 and latency > 0 and attempts == 1 and started <= finished
        assert sorted(json.loads(raw)) == sorted(rubric.fields)
    # one value row per judged dimension plus outcome; confidence rides on the outcome row
    values = rows(db, "SELECT dimension, value, confidence FROM annotation_values WHERE run_id = 'run-000'")
    assert sorted(v[0] for v in values) == sorted([d.name for d in rubric.dimensions] + ["outcome"])
    outcome = [v for v in values if v[0] == "outcome"][0]
    assert json.loads(outcome[1]) in ("pass", "fail") and 0 <= outcome[2] <= 1
    assert all(v[2] is None for v in values if v[0] != "outcome")


def test_cache_hit_on_rerun_sends_no_request(tmp_path, server):
    db = scored_db(tmp_path, 3)
    run(db, server)
    before = rows(db, "SELECT * FROM annotations ORDER BY annotation_id")
    sent = server.count
    res = run(db, server)
    assert server.count == sent == 3
    assert res.summary.cache_hits == 3 and res.summary.calls == 0 and res.ok
    assert {a["source"] for a in res.annotations} == {"cache"}
    assert rows(db, "SELECT * FROM annotations ORDER BY annotation_id") == before
    assert count(db, "judge_calls") == 3 and count(db, "annotation_values") == 18


def test_429_with_retry_after_then_success(tmp_path, server, monkeypatch):
    from evalkit.judges import litellm_judge

    waits = []
    wait = litellm_judge._Wait.__call__
    monkeypatch.setattr(
        litellm_judge._Wait, "__call__", lambda self, state: waits.append(wait(self, state)) or waits[-1]
    )
    db = scored_db(tmp_path, 1)
    server.retry_after = 0.4  # backoff in FAST is a few ms: a 0.4 s wait can only come from Retry-After
    server.script("judge-a", ["429"])
    res = run(db, server)
    assert server.count == 2 and [r["behaviour"] for r in server.requests] == ["429", "ok"]
    assert res.ok and res.summary.retries == 1 and res.summary.requests == 2
    assert waits == [0.4]
    assert rows(db, "SELECT attempts, status FROM judge_calls") == [(2, "ok")]


def test_500_then_success(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.script("judge-a", ["500", "500"])
    res = run(db, server)
    assert server.count == 3 and res.ok and res.summary.retries == 2
    assert rows(db, "SELECT status FROM annotations") == [("ok",)]


def test_500_until_attempts_run_out_is_stored_as_failure_and_retried_next_run(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.default = "500"
    res = run(db, server)
    assert server.count == FAST["retry"]["attempts"]
    assert not res.ok and res.summary.failures == 1 and res.annotations[0]["status"] == "judge_error"
    assert rows(db, "SELECT status FROM judge_calls") == [("judge_error",)]
    assert rows(db, "SELECT status, annotation FROM annotations") == [("judge_error", None)]
    assert count(db, "annotation_values") == 0
    server.default = "ok"
    res = run(db, server)  # a failure is never served from the cache
    assert server.count == FAST["retry"]["attempts"] + 1 and res.ok and res.summary.cache_hits == 0
    # every call is kept: the failure beside the success that asked again
    assert rows(db, "SELECT status FROM judge_calls ORDER BY status") == [("judge_error",), ("ok",)]
    assert rows(db, "SELECT status FROM annotations") == [("ok",)]


def test_timeout_then_success(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.slow_s = 1.5
    server.script("judge-a", ["slow"])
    res = run(db, server, config={"request": {"timeout_s": 0.3}})
    # a retry happened and the second request succeeded: the client gave up on the slow reply
    # (had it waited the 1.5 s out, the first request would have succeeded with no retry)
    assert server.count == 2 and res.ok and res.summary.retries == 1


def test_timeout_every_attempt_is_judge_error(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.slow_s = 0.6
    server.default = "slow"
    res = run(db, server, config={"request": {"timeout_s": 0.2}, "retry": {"attempts": 2}})
    assert server.count == 2 and res.summary.failures == 1
    error = rows(db, "SELECT error FROM judge_calls")[0][0]
    assert "Timeout" in error and "after 2 attempts" in error


def test_malformed_json_is_reasked_then_accepted(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.script("judge-a", ["malformed"])
    res = run(db, server)
    assert server.count == 2 and res.ok
    second = server.requests[1]["body"]["messages"]
    assert second[2]["role"] == "assistant" and second[2]["content"].startswith("Sure! Here is my grading")
    assert "not a valid answer" in second[3]["content"]
    assert rows(db, "SELECT attempts, status FROM judge_calls") == [(2, "ok")]


def test_malformed_json_after_reasks_is_judge_error_with_raw_reply(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.default = "malformed"
    res = run(db, server)
    assert server.count == 2  # the ask plus FAST's one re-ask, no more
    assert res.summary.failures == 1 and not res.ok
    status, raw, error = rows(db, "SELECT status, raw_response, error FROM judge_calls")[0]
    assert status == "judge_error" and raw.startswith("Sure! Here is my grading") and "invalid reply" in error
    assert rows(db, "SELECT status, annotation FROM annotations") == [("judge_error", None)]
    assert count(db, "annotation_values") == 0


def test_a_failed_call_asked_again_keeps_its_cost_in_the_audit(tmp_path, server):
    """A reply that could not be used was still paid for: after the next run asks again and gets an
    answer, the audit's cost table counts both calls and both costs."""
    from evalkit.agreement.audit import build_audit

    db = scored_db(tmp_path, 1)
    prices = {"prices": {"openai/judge-a": {"input_per_mtok": 1.0, "output_per_mtok": 0.0}}}
    server.default = "malformed"
    assert run(db, server, config=prices).summary.failures == 1
    (failed,) = rows(db, "SELECT cost_usd FROM judge_calls")
    server.default = "ok"
    assert run(db, server, config=prices).ok
    costs = dict(rows(db, "SELECT status, cost_usd FROM judge_calls"))
    assert costs["judge_error"] == failed[0] and failed[0] > 0 and costs["ok"] > 0
    (entry,) = build_audit(db, n_resamples=0)["judge_costs"]
    assert entry["n_calls"] == 2 and entry["cost_total_usd"] == pytest.approx(costs["judge_error"] + costs["ok"])
    annotation_key, ok_key = rows(
        db, "SELECT a.cache_key, j.cache_key FROM annotations a, judge_calls j WHERE j.status = 'ok'"
    )[0]
    assert annotation_key == ok_key  # the answer is the cache's row of its key


def test_schema_violating_reply_is_judge_error_never_defaulted(tmp_path, server):
    db = scored_db(tmp_path, 1)
    server.default = "schema_violation"  # {"safety": 7, "rationale": "step 1"}
    res = run(db, server, config={"request": {"reask": 0}})
    assert server.count == 1 and res.summary.failures == 1
    status, raw, error = rows(db, "SELECT status, raw_response, error FROM judge_calls")[0]
    assert status == "judge_error" and json.loads(raw) == {"safety": 7, "rationale": "step 1"}
    assert "safety" in error and "situation_assessment" in error  # out of range and missing
    assert rows(db, "SELECT annotation FROM annotations") == [(None,)]
    assert count(db, "annotation_values") == 0


def test_401_fails_fast(tmp_path, server):
    db = scored_db(tmp_path, 3)
    server.default = "401"
    res = run(db, server, concurrency=1)
    assert server.count == 1  # no retry, and no further call once the key is known to be bad
    assert res.summary.fatal and "401" in res.summary.fatal and "API key" in res.summary.fatal
    assert res.summary.not_run == 2 and not res.ok
    assert count(db, "annotations") == 0
    assert rows(db, "SELECT status, attempts FROM judge_calls") == [("judge_error", 1)]


def test_two_models(tmp_path, server):
    db = scored_db(tmp_path, 2)
    res = run(db, server, models=("openai/judge-a", "openai/judge-b"))
    assert res.ok and server.count == 4
    assert sorted(r["body"]["model"] for r in server.requests) == ["judge-a", "judge-a", "judge-b", "judge-b"]
    assert rows(db, "SELECT judge_model, COUNT(*) FROM annotations GROUP BY judge_model ORDER BY judge_model") == [
        ("openai/judge-a", 2),
        ("openai/judge-b", 2),
    ]
    assert count(db, "judge_calls") == 4
    run(db, server, models=("openai/judge-a", "openai/judge-b"))
    assert server.count == 4


SCORE_TABLES = ("runs", "scorecards", "commands", "bundles")


def test_scorecards_unchanged_by_judge_run(tmp_path, server):
    db = scored_db(tmp_path, 3)
    before = {t: rows(db, f"SELECT * FROM {t} ORDER BY 1, 2") for t in SCORE_TABLES}
    run(db, server)
    run(db, server, show_mechanical=True)
    after = {t: rows(db, f"SELECT * FROM {t} ORDER BY 1, 2") for t in SCORE_TABLES}
    assert after == before and all(before.values())


def test_no_api_key_in_any_stored_byte(tmp_path, server):
    db = scored_db(tmp_path, 2)
    run(db, server)
    server.default = "401"  # the fake echoes the key in its error message, as some providers do
    run(db, server, models=("openai/judge-b",), concurrency=1)
    # the key did travel, in the Authorization header of every request
    assert all(
        {k.lower(): v for k, v in r["headers"].items()}["authorization"] == f"Bearer {FAKE_KEY}"
        for r in server.requests
    )
    stored = b"".join(p.read_bytes() for p in Path(db).parent.glob(Path(db).name + "*"))
    assert rows(db, "SELECT COUNT(*) FROM judge_calls WHERE error LIKE '%Incorrect API key%'") == [(1,)]
    assert FAKE_KEY.encode() not in stored
    assert FAKE_KEY[-12:].encode() not in stored


def test_refresh_bypasses_cache_hits(tmp_path, server):
    db = scored_db(tmp_path, 2)
    run(db, server)
    res = run(db, server, refresh=True)
    assert server.count == 4 and res.summary.cache_hits == 0 and res.summary.calls == 2
    assert count(db, "annotations") == 2 and count(db, "judge_calls") == 2


def test_resample_stores_seeded_replicates_and_resumes(tmp_path, server):
    db = scored_db(tmp_path, 10)
    run(db, server)
    res = run(db, server, resample=0.25, seed=7)
    expected = sorted(random.Random(7).sample([f"run-{i:03d}" for i in range(10)], math.ceil(0.25 * 10)))
    assert server.count == 13 and res.summary.cache_hits == 0
    assert rows(db, "SELECT run_id FROM annotations WHERE replicate = 1 ORDER BY run_id") == [(r,) for r in expected]
    assert count(db, "annotations") == 13 and count(db, "judge_calls") == 13
    run(db, server, resample=0.25, seed=7)  # the same drift check again: resumes, calls nothing
    assert server.count == 13 and count(db, "annotations") == 13
    run(db, server, resample=0.25, seed=8)  # a new check: its own replicate numbers
    assert server.count == 16
    reps = rows(db, "SELECT replicate, COUNT(*) FROM annotations GROUP BY replicate ORDER BY replicate")
    assert reps[0] == (0, 10) and sum(n for _, n in reps[1:]) == 6


def test_resample_needs_seed_and_fraction_in_range(tmp_path, server):
    db = scored_db(tmp_path, 1)
    with pytest.raises(ValueError, match="--seed"):
        run(db, server, resample=0.5)
    with pytest.raises(ValueError, match="resample"):
        run(db, server, resample=1.5, seed=1)


def test_show_mechanical_marks_annotations_non_blind(tmp_path, server):
    db = scored_db(tmp_path, 1)
    run(db, server)
    blind_prompt = server.requests[0]["body"]["messages"][1]["content"]
    assert "mechanical_scores" not in blind_prompt and '"scalar"' not in blind_prompt
    res = run(db, server, show_mechanical=True)
    assert server.count == 2 and res.summary.cache_hits == 0  # a different question: not served from the blind answer
    shown = server.requests[1]["body"]["messages"][1]["content"]
    assert "mechanical_scores" in shown and '"scalar"' in shown and '"coverage"' in shown
    assert rows(db, "SELECT blind, COUNT(*) FROM annotations GROUP BY blind") == [(0, 1), (1, 1)]
    assert rows(db, "SELECT blind, COUNT(*) FROM annotation_values GROUP BY blind") == [(0, 6), (1, 6)]


def test_max_cost_stops_scheduling_new_calls(tmp_path, server):
    db = scored_db(tmp_path, 5)
    prices = {"prices": {"openai/judge-a": {"input_per_mtok": 1e6, "output_per_mtok": 0.0}}}
    res = run(db, server, config=prices, concurrency=1, max_cost=1.5)
    calls = rows(db, "SELECT prompt_tokens, cost_usd FROM judge_calls")
    assert all(cost == pytest.approx(ptok * 1.0) for ptok, cost in calls)  # the override priced them
    spent = sum(c for _, c in calls)
    assert server.count == len(calls) < 5 and spent >= 1.5 and spent - calls[-1][1] < 1.5
    assert res.summary.stopped and "--max-cost" in res.summary.stopped
    assert "the calls already sent finished (the cost line counts them too)" in res.summary.stopped
    assert res.summary.not_run == 5 - len(calls) and not res.ok


def test_unknown_price_is_reported_not_zeroed(tmp_path, server):
    from evalkit.judges.render import summary_lines

    db = scored_db(tmp_path, 1)
    res = run(db, server)
    assert res.summary.cost_unknown == 1
    assert rows(db, "SELECT cost_usd FROM judge_calls") == [(None,)]
    (line,) = [line for line in summary_lines(res) if line.startswith("cost:")]
    assert line.startswith("cost: unknown (1 calls: no litellm price") and "$" not in line


def test_a_cost_known_for_some_calls_only_says_for_how_many(tmp_path, server):
    """A total over the priced calls alone, said as such: never a sum that reads as the whole cost."""
    from evalkit.judges.render import summary_lines

    db = scored_db(tmp_path, 3)
    prices = {"prices": {"openai/judge-a": {"input_per_mtok": 1.0, "output_per_mtok": 0.0}}}
    res = run(db, server, models=["openai/judge-a", "openai/judge-b"], config=prices)
    assert res.summary.calls == 6 and res.summary.cost_unknown == 3, res.summary
    (line,) = [line for line in summary_lines(res) if line.startswith("cost:")]
    spent = sum(c for (c,) in rows(db, "SELECT cost_usd FROM judge_calls WHERE cost_usd IS NOT NULL"))
    assert line.startswith(f"cost: ${spent:.6f} for 3 calls, unknown for 3 (no litellm price"), line


def test_dry_run_sends_nothing(tmp_path, server):
    db = scored_db(tmp_path, 2)
    plan = dry_run(cards_of(db), ["openai/judge-a"], db=db, api_base=server.api_base)
    assert server.count == 0 and plan.to_send == 2 and plan.cache_hits == 0 and plan.estimated_prompt_tokens > 100
    assert "<<<BEGIN UNTRUSTED RUN DATA" in plan.first_prompt[1]["content"]
    assert count(db, "judge_calls") == 0
    run(db, server)
    plan = dry_run(cards_of(db), ["openai/judge-a"], db=db, api_base=server.api_base)
    assert plan.to_send == 0 and plan.cache_hits == 2 and plan.first_prompt is None


def test_rubric_edit_invalidates_exactly_its_cache_entries(tmp_path, server):
    db = scored_db(tmp_path, 2)
    mine = tmp_path / "procedure_v1.toml"
    shutil.copy(load_rubric("procedure_v1").path, mine)
    run(db, server, rubric=str(mine))
    run(db, server, rubric="computer_use_v1")
    assert server.count == 4
    mine.write_text(mine.read_text() + "\n# clarified wording\n")
    run(db, server, rubric=str(mine))
    run(db, server, rubric="computer_use_v1")
    assert server.count == 6  # only the edited rubric's two entries were asked again
    # the newer answer replaces the older annotation; the cache keeps both calls
    assert count(db, "annotations") == 4 and count(db, "judge_calls") == 6


def test_identical_bundles_in_one_run_are_called_once(tmp_path, server):
    db = scored_db(tmp_path, 1)
    card = cards_of(db)[0]
    twin = card.model_copy(update={"run_id": "run-twin"})
    res = judge_cards([card, twin], ["openai/judge-a"], db=db, api_base=server.api_base, config=FAST, concurrency=2)
    assert server.count == 1 and res.summary.shared == 1 and res.summary.cache_hits == 0 and res.ok
    assert count(db, "annotations") == 2
    from evalkit.judges.render import summary_lines

    lines = summary_lines(res)
    assert "runs annotated: 2 of 2" in lines
    assert "calls made: 1 for 2 runs (1 run shares an identical bundle with another)" in lines


def test_cost_from_litellm_price_map_for_a_known_model(tmp_path, server):
    import litellm

    db = scored_db(tmp_path, 1)
    run(db, server, models=("openai/gpt-4o-mini",))
    ptok, ctok, cost = rows(db, "SELECT prompt_tokens, completion_tokens, cost_usd FROM judge_calls")[0]
    p_cost, c_cost = litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=ptok, completion_tokens=ctok)
    assert cost == pytest.approx(p_cost + c_cost) and cost > 0


def test_progress_bar_on_stderr_and_latency_summary(tmp_path, server, capsys):
    db = scored_db(tmp_path, 3)
    res = run(db, server, progress=True, concurrency=1)
    err = capsys.readouterr().err
    assert "judging [" in err and "3/3" in err
    lat = res.summary.latency()
    ms = res.summary.latencies_ms
    assert len(ms) == 3 and lat["median_ms"] == sorted(ms)[1]
    assert lat["mean_excl_first_ms"] == pytest.approx((ms[1] + ms[2]) / 2)  # the cold first call left out


def test_redaction_of_secret_environment_values(monkeypatch):
    from evalkit.judges.redaction import redact

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-abcdef123456")
    assert redact("bad key sk-ant-abcdef123456 given") == "bad key [REDACTED] given"
    assert redact("Authorization: Bearer abcdefghijklmnop") == "Authorization: Bearer [REDACTED]"
    assert redact(None) is None
