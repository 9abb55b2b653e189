"""Issue 10: the judge against servers that speak different structured-output dialects.

Every dialect of tests/fake_llm_server.py is judged through the real litellm client with
`--output-mode auto` on the shipped examples/a320 runs: every judgeable run is annotated, no run
costs more than two requests on the first run (one step-down, then the remembered mode), a rerun
sends nothing, the mode that worked is remembered per (model, api_base), and the scorecards are
byte-identical before and after judging.
"""

from __future__ import annotations

import pytest
from judge_helpers import CALLS, JUDGEABLE, count, rows, scorecards, scored_examples
from judge_helpers import judge_examples as judge

from evalkit.judges.store import JudgeStore

pytestmark = pytest.mark.slow

EXPECTED_MODE = {
    "openai": "json_schema",
    "llamacpp": "json_object_schema",
    "json-object-only": "json_object_schema",  # its schema key is ignored; the prompt states the schema
    "tools-only": "tool",
    "plain": "prompt",
    "tiny-context": "json_schema",
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED_MODE))
def test_every_dialect_annotates_every_judgeable_run(tmp_path, server, dialect):
    server.dialect = dialect
    db = scored_examples(tmp_path)
    before = scorecards(db)
    options = {"max_input_tokens": 2400} if dialect == "tiny-context" else {}
    server.context_limit = 2400

    first = judge(db, server, **options)
    assert first.ok, (first.summary.fatal, [a["error"] for a in first.annotations if a["error"]])
    assert (
        first.summary.ok == CALLS
        and first.summary.shared == 1
        and first.summary.skipped == {"status incomplete": 1, "status provider_error": 1}
    )
    assert rows(db, "SELECT COUNT(*) FROM annotations WHERE status = 'ok'") == [(JUDGEABLE,)]
    per_run = [r[0] for r in rows(db, "SELECT attempts FROM judge_calls")]
    assert len(per_run) == CALLS and max(per_run) <= 2 and sum(per_run) == server.count
    modes = {r[0] for r in rows(db, "SELECT output_mode FROM annotations")}
    assert modes == {EXPECTED_MODE[dialect]}
    assert {r[0] for r in rows(db, "SELECT output_mode FROM judge_calls")} == modes
    store = JudgeStore(db)
    try:
        assert store.remembered_mode("openai/smollm2", server.api_base) == EXPECTED_MODE[dialect]
    finally:
        store.close()

    sent = server.count
    again = judge(db, server, **options)
    assert server.count == sent  # the rerun starts at the remembered mode: every key is a hit
    assert again.ok and again.summary.cache_hits == JUDGEABLE and again.summary.calls == 0
    assert scorecards(db) == before  # the score path's tables are untouched, byte for byte


def test_llamacpp_steps_down_once_and_is_not_retried(tmp_path, server):
    """The issue's observation: a 500 whose body is a request-validation error is not transient."""
    server.dialect = "llamacpp"
    db = scored_examples(tmp_path)
    res = judge(db, server, concurrency=4)
    statuses = [(r["body"].get("response_format") or {}).get("type") for r in server.requests]
    assert statuses.count(None) == 0 and statuses[0] == "json_schema"
    assert statuses.count("json_schema") == 1  # one refusal, then every call in the mode that worked
    assert server.count == CALLS + 1 and res.summary.retries == 0
    assert all(r["body"]["response_format"].get("schema") for r in server.requests[1:])
    assert any(
        "refused response_format.type in json_schema mode" in n and "trying json_object_schema" in n
        for n in res.summary.notes
    )


def test_json_object_strict_steps_down_to_json_object(tmp_path, server):
    """A server that refuses the schema key inside json_object: two step-downs, prompt carries S."""
    server.dialect = "json-object-strict"
    db = scored_examples(tmp_path)
    res = judge(db, server)
    assert res.ok and res.summary.ok == CALLS
    assert server.count == CALLS + 2
    last = server.requests[-1]["body"]
    assert last["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in last["messages"][-1]["content"]
    assert {r[0] for r in rows(db, "SELECT output_mode FROM annotations")} == {"json_object"}


def test_fixed_mode_refused_is_one_fatal_line_naming_parameter_and_next_mode(tmp_path, server):
    server.dialect = "llamacpp"
    db = scored_examples(tmp_path)
    res = judge(db, server, output_mode="json_schema", concurrency=1)
    assert server.count == 1 and not res.ok and res.summary.retries == 0
    assert "refused response_format.type in json_schema mode" in res.summary.fatal
    assert "try --output-mode json_object_schema" in res.summary.fatal
    assert "\n" not in res.summary.fatal


def test_plain_reply_is_located_not_repaired(tmp_path, server):
    """Prompt mode takes the fenced JSON out of the prose; a reply with no valid object is an error."""
    server.dialect = "plain"
    db = scored_examples(tmp_path)
    res = judge(db, server, output_mode="prompt")
    assert res.ok and server.count == CALLS
    assert all(r["body"].get("response_format") is None for r in server.requests)
    raw = rows(db, "SELECT raw_response FROM judge_calls LIMIT 1")[0][0]
    assert raw.startswith("Sure.") and "```json" in raw  # the raw reply is kept as it came
    server.content = "Sure! {situation_assessment: 3} is my grade."
    res = judge(db, server, output_mode="prompt", refresh=True)
    assert res.summary.failures == CALLS and res.summary.ok == 0
    assert count(db, "annotations") == JUDGEABLE  # the earlier successes were not overwritten


def test_mode_is_part_of_the_cache_key(tmp_path, server):
    db = scored_examples(tmp_path)
    judge(db, server)  # openai dialect: json_schema
    sent = server.count
    res = judge(db, server, output_mode="tool")
    assert server.count == sent + CALLS and res.summary.cache_hits == 0
    assert rows(db, "SELECT COUNT(*) FROM judge_calls") == [(2 * CALLS,)]
    assert {r[0] for r in rows(db, "SELECT output_mode FROM judge_calls")} == {"json_schema", "tool"}


def test_tiny_context_without_a_limit_is_a_judge_error_naming_the_option(tmp_path, server):
    """The server refuses the long prompts: a per-run judge_error, not retried, not fatal."""
    server.dialect = "tiny-context"
    server.context_limit = 2000
    db = scored_examples(tmp_path)
    res = judge(db, server)
    errors = [a["error"] for a in res.annotations if a["status"] == "judge_error"]
    assert errors and res.summary.retries == 0 and res.summary.fatal is None
    assert all("maximum context length" in e and "--max-input-tokens" in e for e in errors)
    assert server.count == res.summary.requests  # one request per refused run, none repeated


def test_a_bundle_that_cannot_fit_is_never_sent(tmp_path, server):
    db = scored_examples(tmp_path)
    res = judge(db, server, max_input_tokens=500)
    assert server.count == 0 and res.summary.requests == 0 and res.summary.failures == JUDGEABLE
    for ann in res.annotations:
        if ann["status"] == "judge_error":
            assert "even with the transcript's middle left out" in ann["error"]
            assert "input limit is 500 tokens" in ann["error"]


def test_shrunk_bundles_record_elided_events_and_keep_both_ends(tmp_path, server):
    server.dialect = "tiny-context"
    server.context_limit = 1900  # the compact prompt layout fits the short runs in 1,900 tokens
    db = scored_examples(tmp_path)
    res = judge(db, server, max_input_tokens=1900)
    assert res.ok and res.summary.elided > 0
    elided = dict(rows(db, "SELECT run_id, elided_events FROM annotations"))
    assert elided["a320-opus-4-8-full-with-extra"] > 0 and elided["a320-gemini-2.5-flash-only-ext-pwr"] == 0
    sent = [r["body"]["messages"][1]["content"] for r in server.requests]
    marked = [s for s in sent if '"kind":"elided"' in s]  # compact_v1: one event per line
    assert marked and all("transcript events left out here" in s for s in marked)
    assert "context: " in "\n".join(__import__("evalkit.judges.render", fromlist=["x"]).summary_lines(res))


def test_litellm_capability_data_picks_the_first_mode_for_a_known_model():
    from evalkit.judges.litellm_judge import LiteLLMJudge

    known = LiteLLMJudge("openai/gpt-4o-mini")
    assert known.output_mode == "json_schema" and known._settled and known.max_input_tokens == 128000
    local = LiteLLMJudge("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1")
    assert local.output_mode == "json_schema" and not local._settled and local.max_input_tokens is None
    local.start_from("tool")
    assert local.output_mode == "tool" and local._settled
    fixed = LiteLLMJudge("openai/gpt-4o-mini", output_mode="prompt")
    fixed.start_from("tool")  # a remembered mode never overrides an explicit one
    assert fixed.output_mode == "prompt"


def test_a_mode_the_server_accepted_is_remembered_even_when_the_model_answers_badly(tmp_path, server):
    """Real small models fail validation; the next run must not negotiate the shape again."""
    server.dialect = "llamacpp"
    server.content = '{"confidence": 4, "rationale": "5.5.6.9.87.1.1'
    db = scored_examples(tmp_path)
    first = judge(db, server, concurrency=1)
    assert first.summary.ok == 0 and first.summary.failures == JUDGEABLE
    kinds = [(r["body"].get("response_format") or {}).get("type") for r in server.requests]
    assert kinds.count("json_schema") == 1
    before = server.count
    judge(db, server, concurrency=1)  # failures are asked again, in the remembered mode at once
    kinds = [(r["body"].get("response_format") or {}).get("type") for r in server.requests[before:]]
    assert kinds and set(kinds) == {"json_object"}
