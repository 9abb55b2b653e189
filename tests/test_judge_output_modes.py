"""The pure parts of issue 10: reading refusals, locating JSON in prose, fitting a bundle, config."""

from __future__ import annotations

import json

import pytest
from judge_fixtures import make_bundle

from evalkit.judges.config import ConfigError, load_config
from evalkit.judges.context import DoesNotFit, fit
from evalkit.judges.output_modes import (
    MODES,
    first_json_object,
    ignored_format,
    next_mode,
    rejected_parameter,
    request_shape,
)
from evalkit.judges.prompt import render_messages
from evalkit.judges.rubrics import load_rubric, response_format

LLAMACPP = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be "
    "'text' or 'json_object'\", 'input': 'json_schema'}]"
)


@pytest.mark.parametrize(
    "status, text, expected",
    [
        (500, LLAMACPP, "response_format.type"),  # llama-cpp-python
        (400, "response_format.type 'json_schema' is not supported", "response_format.type"),
        (422, "response_format.schema: Extra inputs are not permitted", "response_format.schema"),
        (400, "response_format is not supported by this server", "response_format"),
        (400, "tool_choice is not supported", "tool_choice"),
        (400, "This model does not support tools", "tools"),
        (500, "internal error (fake)", None),  # an ordinary 5xx
        (503, "response_format backend overloaded, retry later", None),  # names it, no validation
        (429, "rate limited: response_format requests", None),
        (401, "Incorrect API key", None),
        (None, "Connection error.", None),
    ],
)
def test_rejected_parameter_reads_the_refusal(status, text, expected):
    assert rejected_parameter(status, text) == expected


def test_next_mode_steps_as_far_as_the_refusal_says():
    assert next_mode("json_schema", "response_format.type", LLAMACPP) == "json_object_schema"
    assert next_mode("json_object_schema", "response_format.schema") == "json_object"
    assert next_mode("json_schema", "response_format", "not supported") == "tool"  # skip all formats
    assert next_mode("tool", "tools") == "prompt"
    assert next_mode("json_object", "tools") == "prompt"
    assert next_mode("prompt", "response_format") is None
    assert next_mode("tool", "tool_choice") == "prompt"


def test_request_shapes_carry_the_schema_where_the_mode_says():
    fmt = response_format(load_rubric("procedure_v1"))
    schema = fmt["json_schema"]["schema"]
    assert request_shape("json_schema", fmt) == {"response_format": fmt}
    sent = request_shape("json_object_schema", fmt)["response_format"]
    assert sent["type"] == "json_object" and set(sent["schema"]["properties"]) == set(schema["properties"])
    bounded = request_shape("json_object_schema", fmt, max_tokens=1024)["response_format"]["schema"]
    assert bounded["properties"]["rationale"]["maxLength"] < 1024  # the grammar closes it in budget
    assert "maxLength" not in bounded["properties"]["outcome"]  # an enum needs no bound
    assert "maxLength" not in schema["properties"]["rationale"]  # the validator's schema is untouched
    assert request_shape("json_object", fmt) == {"response_format": {"type": "json_object"}}
    tool = request_shape("tool", fmt)
    assert tool["tools"][0]["function"]["parameters"] == schema
    assert tool["tool_choice"]["function"]["name"] == tool["tools"][0]["function"]["name"]
    assert request_shape("prompt", fmt) == {}
    assert set(MODES) == {"json_schema", "json_object_schema", "json_object", "tool", "prompt"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('Here you go:\n```json\n{"a": 1}\n```\nbye', {"a": 1}),
        ('Sure {not json} and then {"a": "}{", "b": [1, {"c": 2}]} trailing }', {"a": "}{", "b": [1, {"c": 2}]}),
        ('```\n{"a": "quote \\" and brace {"}\n```', {"a": 'quote " and brace {'}),
        ('```json\n{broken\n```\nbut later {"a": 2}', {"a": 2}),
    ],
)
def test_first_json_object_is_located_not_repaired(text, expected):
    assert json.loads(first_json_object(text)) == expected


@pytest.mark.parametrize("text", ["no json at all", "{a: 1}", '{"a": 1', "```json\n{'a': 1}\n```", "\x00{\udcff"])
def test_no_object_means_none_never_a_guess(text):
    assert first_json_object(text) is None


def test_prose_around_json_in_a_structured_mode_means_the_format_was_ignored():
    assert ignored_format("json_schema", 'Sure!\n```json\n{"a": 1}\n```')
    assert not ignored_format("json_schema", '{"a": 1}')
    assert not ignored_format("json_schema", "just prose")
    assert not ignored_format("prompt", 'Sure!\n```json\n{"a": 1}\n```')


def chars(messages):
    return sum(len(m["content"]) for m in messages) // 4


def long_bundle(events: int) -> dict:
    bundle = make_bundle(1)
    step = bundle["transcript"][1]
    bundle["transcript"] = [dict(step, step=i, call_index=i) for i in range(events)]
    return bundle


def test_fit_keeps_task_truth_criteria_and_the_ends_with_a_counted_marker():
    rubric = load_rubric("procedure_v1")
    bundle = long_bundle(60)
    render = lambda b: render_messages(b, rubric)  # noqa: E731
    whole = chars(render(bundle))
    limit = whole // 2
    fitted = fit(bundle, render, chars, limit)
    assert fitted.tokens <= limit < whole and fitted.elided_events > 0
    kept = fitted.bundle["transcript"]
    marker = [e for e in kept if e.get("kind") == "elided"]
    assert len(marker) == 1 and f"{fitted.elided_events} transcript events left out" in marker[0]["note"]
    assert kept[0] == bundle["transcript"][0] and kept[-1] == bundle["transcript"][-1]
    assert len(kept) - 1 + fitted.elided_events == 60
    for key in ("task_prompt", "procedure", "success_criteria", "success_eval", "final_reason"):
        assert fitted.bundle[key] == bundle[key]
    # the largest fitting prefix/suffix: one more event would not fit
    from evalkit.judges.context import shrink

    bigger, _ = shrink(bundle, len(kept))
    assert chars(render(bigger)) > limit
    assert fit(bundle, render, chars, limit) == fitted  # deterministic
    assert fit(bundle, render, chars, whole).elided_events == 0 and fit(bundle, render, chars, None).bundle is bundle


def test_fit_that_cannot_fit_says_tokens_and_limit():
    rubric = load_rubric("procedure_v1")
    with pytest.raises(DoesNotFit, match=r"needs \d+ tokens .* input limit is 100 tokens"):
        fit(long_bundle(10), lambda b: render_messages(b, rubric), chars, 100)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[request]\nmax_tokns = 3\n", r"request\.max_tokns: unknown key"),
        ("[requests]\ntemperature = 0\n", r"requests: unknown key"),
        ('[prices."openai/x"]\ninput = 1.0\n', r"prices\.openai/x\.input: unknown key"),
        ('[request]\noutput_mode = "xml"\n', r"request\.output_mode: input should be 'auto'"),
        ("[request]\nmax_input_tokens = 0\n", r"request\.max_input_tokens: .*greater than or equal to 1"),
        ("[request]\ntemperature = true\n", r"request\.temperature: input should be a valid number, got True"),
        ("[retry]\nattempts = 0\n", r"retry\.attempts: .*greater than or equal to 1"),
    ],
)
def test_judge_toml_rejects_unknown_keys_and_bad_values_naming_the_key_path(tmp_path, text, message):
    path = tmp_path / "judge.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"^{path}: {message}"):
        load_config(path)


def test_judge_toml_output_mode_and_input_limit_are_read(tmp_path):
    path = tmp_path / "judge.toml"
    path.write_text('[request]\noutput_mode = "tool"\nmax_input_tokens = 4000\n')
    cfg = load_config(path)
    assert cfg.output_mode == "tool" and cfg.max_input_tokens == 4000
    assert load_config().output_mode == "auto" and load_config().max_input_tokens is None


def test_raw_control_characters_inside_strings_are_read_not_rejected():
    """llama.cpp's older JSON grammars let a model write a raw newline inside a string."""
    from evalkit.judges.output_modes import extract_json
    from evalkit.judges.rubrics import annotation_model

    model = annotation_model(load_rubric("procedure_v1"))
    reply = (
        '{"situation_assessment": 2, "procedure": 1, "action_execution": 2, "error_recovery": "n/a", '
        '"safety": 3, "outcome": "fail", "confidence": 0.25, "rationale": "Step 1 read the page.\n'
        'Step 2\tskipped the reset."}'
    )
    parsed = model.model_validate_json(extract_json("json_object_schema", reply))
    assert parsed.rationale == "Step 1 read the page.\nStep 2\tskipped the reset." and parsed.procedure == 1
    assert extract_json("json_schema", '{"a": 1}') == '{"a": 1}'  # valid JSON passes through untouched
    for broken in ('{"a": 1,\n', '{"confidence": 4', "no json"):
        assert extract_json("json_object", broken) == broken  # left for the validator to reject


def test_cli_output_mode_choices_are_the_modes():
    """The CLI's --output-mode choices are read from the mode table (a new mode is one record
    there), in order, for judge and probe; reading them loads no litellm."""
    import evalkit.cli
    from evalkit.judges.output_modes import AUTO

    for name in ("judge", "probe"):
        option = next(p for p in evalkit.cli.cli.get_command(None, name).params if p.name == "output_mode")
        assert tuple(option.type.choices) == (AUTO, *MODES)


def test_a_new_mode_is_one_record_in_the_table():
    from evalkit.judges import output_modes as om

    assert om.MODES == tuple(m.name for m in om.TABLE)
    for record in om.TABLE:
        shape = om.request_shape(
            record.name,
            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {}}}},
        )
        assert isinstance(shape, dict)
        assert om.schema_in_prompt(record.name) is record.schema_in_prompt


def test_listing_the_cli_loads_no_litellm():
    import subprocess
    import sys

    code = "import sys, evalkit.cli\nprint('litellm' in sys.modules)\n"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
