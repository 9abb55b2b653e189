"""Issue 10 against a real llama.cpp server: the schema a json_object_schema request carries.

llama.cpp compiles that schema into a decoding grammar, which enforces enums and string lengths
but not number bounds; SmolLM2-135M answered `"confidence": 4` and rambled past the reply budget.
The request therefore carries a narrower, grammar-friendly form of the rubric's schema
(`output_modes.grammar_schema`), while replies are still validated by the rubric's own model.
These tests check that the narrowing is strictly narrower (every instance it admits validates),
that it fits the reply budget, that it is part of the cache key, and, end to end through litellm,
that a model held only by the grammar (the fake server's `grammar_only` behaviour) is annotated.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from fake_llm_server import grammar_only_reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from judge_helpers import CALLS, JUDGEABLE, PATIENT, count, rows, scorecards, scored_examples
from judge_helpers import judge_examples as judge
from pydantic import ValidationError

from evalkit.judges.output_modes import NUMBER_STEPS, grammar_schema, request_shape, sent_schema, text_budget
from evalkit.judges.rubrics import annotation_model, available_rubrics, load_rubric, response_format

pytestmark = pytest.mark.slow

RUBRICS = available_rubrics()


def own_schema(name: str) -> dict:
    return response_format(load_rubric(name))["json_schema"]["schema"]


def instances(schema: dict) -> st.SearchStrategy[dict]:
    """Every shape of instance a grammar compiled from `schema` admits (flat objects of enums
    and bounded strings: what grammar_schema produces), drawn from the schema itself."""
    fields = {}
    for name, prop in schema["properties"].items():
        if "enum" in prop:
            fields[name] = st.sampled_from(prop["enum"])
        else:
            assert prop["type"] == "string", f"{name}: the grammar schema left {prop} unbounded"
            fields[name] = st.text(min_size=prop.get("minLength", 0), max_size=prop["maxLength"])
    return st.fixed_dictionaries(fields)


@pytest.mark.parametrize("rubric", RUBRICS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), max_tokens=st.integers(1, 4096), text_chars=st.integers(1, 2000))
def test_every_instance_of_the_grammar_schema_validates_under_the_rubric(rubric, data, max_tokens, text_chars):
    fmt = response_format(load_rubric(rubric))
    narrow = sent_schema("json_object_schema", fmt, max_tokens, text_chars)
    reply = data.draw(instances(narrow))
    jsonschema.validate(reply, narrow)  # the strategy draws what the narrow schema admits
    jsonschema.validate(reply, own_schema(rubric))  # ... which the rubric's own schema admits
    annotation_model(load_rubric(rubric)).model_validate_json(json.dumps(reply))  # and the validator


@pytest.mark.parametrize("rubric", RUBRICS)
def test_grammar_schema_leaves_no_number_unbounded_and_no_text_unbounded(rubric):
    narrow = grammar_schema(own_schema(rubric), 300)
    for name, prop in narrow["properties"].items():
        assert "enum" in prop or (prop["type"] == "string" and 1 <= prop["maxLength"] <= 300), name
    assert set(narrow["required"]) == set(own_schema(rubric)["required"])
    assert narrow["additionalProperties"] is False


def test_confidence_becomes_eleven_values_in_its_range_and_free_text_comes_last():
    narrow = grammar_schema(own_schema("procedure_v1"), 500)
    confidence = narrow["properties"]["confidence"]["enum"]
    assert len(confidence) == NUMBER_STEPS + 1 and confidence[0] == 0.0 and confidence[-1] == 1.0
    assert [json.dumps(v) for v in confidence][:4] == ["0.0", "0.1", "0.2", "0.3"]  # no 0.30000000000000004
    assert list(narrow["properties"])[-1] == "rationale"
    assert narrow["properties"]["rationale"] == dict(
        own_schema("procedure_v1")["properties"]["rationale"], maxLength=500
    )


def test_bounded_integers_become_every_integer_and_existing_bounds_only_tighten():
    schema = {
        "type": "object",
        "properties": {
            "note": {"type": "string", "minLength": 5, "maxLength": 40},
            "level": {"type": "integer", "minimum": -1, "maximum": 2},
            "free": {"type": "number"},  # no bounds: nothing to enumerate
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
        },
    }  # not free text: left alone
    narrow = grammar_schema(schema, 10)
    assert narrow["properties"]["level"]["enum"] == [-1, 0, 1, 2]
    assert narrow["properties"]["note"]["maxLength"] == 10
    assert grammar_schema(schema, 100)["properties"]["note"]["maxLength"] == 40  # never widened
    assert grammar_schema(schema, 2)["properties"]["note"]["maxLength"] == 5  # never below minLength
    assert "enum" not in narrow["properties"]["free"] and "maxLength" not in narrow["properties"]["code"]
    assert list(narrow["properties"]) == ["level", "free", "code", "note"]
    assert "enum" not in schema["properties"]["level"]  # the input is not modified


@pytest.mark.parametrize("rubric", RUBRICS)
@pytest.mark.parametrize("max_tokens", [300, 512, 1024, 4096])
def test_the_widest_reply_fits_the_reply_budget_at_one_token_per_character(rubric, max_tokens):
    schema = own_schema(rubric)
    chars = text_budget(schema, max_tokens, 10_000)
    narrow = grammar_schema(schema, chars)
    widest = {
        name: (max(prop["enum"], key=lambda v: len(json.dumps(v))) if "enum" in prop else "x" * prop["maxLength"])
        for name, prop in narrow["properties"].items()
    }
    assert len(json.dumps(widest, indent=1)) <= max_tokens  # indented: more whitespace than a grammar allows
    skeleton = json.dumps({name: (v if "enum" in narrow["properties"][name] else "") for name, v in widest.items()})
    assert max_tokens - chars <= 2 * len(skeleton)  # the reserve for the fixed fields is not wasteful


def test_a_budget_too_small_for_the_fixed_fields_still_gives_a_valid_bound():
    assert text_budget(own_schema("procedure_v1"), 10, 800) == 1
    assert text_budget(own_schema("procedure_v1"), None, 800) == 800


def test_only_json_object_schema_sends_the_narrowing():
    fmt = response_format(load_rubric("procedure_v1"))
    own = own_schema("procedure_v1")
    assert request_shape("json_schema", fmt, 256, 100) == {"response_format": fmt}
    assert request_shape("tool", fmt, 256, 100)["tools"][0]["function"]["parameters"] == own
    sent = request_shape("json_object_schema", fmt, 1024, 300)["response_format"]
    assert sent["type"] == "json_object" and sent["schema"] == grammar_schema(own, 300)
    assert sent_schema("json_object", fmt) is None and sent_schema("prompt", fmt) is None


def test_the_grammar_only_model_fails_the_rubrics_own_schema_and_passes_the_narrowing():
    """The fake model reproduces what the real one did; the narrowing is what changes it."""
    model = annotation_model(load_rubric("procedure_v1"))
    wide, finish = grammar_only_reply(own_schema("procedure_v1"), "seed", 1024)
    assert finish == "length"
    with pytest.raises(ValidationError):
        model.model_validate_json(wide)
    assert (
        json.loads(
            grammar_only_reply(
                dict(
                    own_schema("procedure_v1"),
                    properties={k: v for k, v in own_schema("procedure_v1")["properties"].items() if k != "rationale"},
                ),
                "s",
                1024,
            )[0]
        )["confidence"]
        == 4
    )
    narrow = sent_schema("json_object_schema", response_format(load_rubric("procedure_v1")), 1024, 800)
    reply, finish = grammar_only_reply(narrow, "seed", 1024)
    assert finish == "stop"
    assert model.model_validate_json(reply).confidence in narrow["properties"]["confidence"]["enum"]


def test_a_model_held_only_by_the_grammar_is_annotated_and_a_rerun_sends_nothing(tmp_path, server):
    server.dialect = "llamacpp"
    server.default = "grammar_only"
    db = scored_examples(tmp_path)
    before = scorecards(db)
    res = judge(db, server)
    assert res.summary.ok == CALLS and count(db, "annotations WHERE status = 'ok'") == JUDGEABLE
    assert server.count == CALLS + 1  # one refusal of json_schema, then one request per call
    sent = [r["body"]["response_format"] for r in server.requests[1:]]
    assert all(f["type"] == "json_object" and "enum" in f["schema"]["properties"]["confidence"] for f in sent)
    assert all(
        f["schema"]["properties"]["rationale"]["maxLength"] <= r["body"]["max_tokens"]
        for f, r in zip(sent, server.requests[1:])
    )
    first = server.count
    again = judge(db, server)
    assert server.count == first and again.summary.requests == 0 and again.summary.cache_hits == JUDGEABLE
    assert scorecards(db) == before


def test_the_sent_schema_is_part_of_the_cache_key(tmp_path, server):
    """A different bound on the rationale is a different request: asked again, not served."""
    server.dialect = "llamacpp"
    db = scored_examples(tmp_path)
    judge(db, server, output_mode="json_object_schema")
    first = server.count
    assert judge(db, server, output_mode="json_object_schema").summary.requests == 0
    res = judge_db_with(db, server, rationale_max_chars=200)
    assert res.summary.cache_hits == 0 and server.count == first + CALLS
    assert {r[0] for r in rows(db, "SELECT output_mode FROM judge_calls")} == {"json_object_schema"}
    assert rows(db, "SELECT COUNT(*) FROM judge_calls") == [(2 * CALLS,)]


def judge_db_with(db, srv, **request):
    from evalkit.judges.api import judge_db

    config = dict(PATIENT, request=dict(PATIENT["request"], **request))
    return judge_db(db, ["openai/smollm2"], api_base=srv.api_base, config=config, output_mode="json_object_schema")
