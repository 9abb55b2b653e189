"""The reader's fast loop takes a tool_call or assistant record's values without its model only
when the model would give exactly those values (``_call_values``, ``_assistant_values``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.trajectory.reader import _VALIDATE, _assistant_values, _call_values

odd = st.sampled_from(
    [None, 0, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 1.5, 0.0, 1e308, math.inf, True, False, "x", "", [],
     {}, {"a": 1}, [1, "b"]]
)  # fmt: skip
CALL_FIELDS = ["step", "call_index", "name", "args", "result", "is_error", "sim_time_before", "sim_time_after"]
CALL_FIELDS.append("wall_ms")
ASSISTANT_FIELDS = ["step", "text", "stop_reason", "provider_raw"]


def records(kind: str, fields: list[str]):
    keys = st.sampled_from([*fields, "extra"])
    return st.dictionaries(keys, odd, max_size=len(fields) + 1).map(lambda d: {"type": kind, **d})


def _outcome(validate, obj):
    try:
        rec = validate(dict(obj))
    except Exception:  # noqa: BLE001 - any refusal
        return None
    return rec


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(records("tool_call", CALL_FIELDS))
def test_a_plain_tool_call_validates_to_its_own_values(obj):
    values = _call_values(obj)
    if values is None:
        return
    rec = _outcome(_VALIDATE["tool_call"], obj)
    assert rec is not None and not rec.__pydantic_extra__
    expected = {"step": None, "call_index": None, "args": {}, "result": None, "is_error": False}
    for field, value in zip(("name", "args", "is_error", "step", "result", "call_index"), values):
        assert getattr(rec, field) == value and type(getattr(rec, field)) is type(value)
        assert value == obj.get(field, {"name": None, **expected}[field])


@pytest.mark.slow
@settings(max_examples=800, deadline=None)
@given(records("assistant", ASSISTANT_FIELDS))
def test_a_plain_assistant_record_validates_to_its_own_values(obj):
    values = _assistant_values(obj)
    if values is None:
        return
    rec = _outcome(_VALIDATE["assistant"], obj)
    assert rec is not None and not rec.__pydantic_extra__
    for field, value in zip(("step", "text", "stop_reason"), values):
        assert getattr(rec, field) == value == obj.get(field) and type(getattr(rec, field)) is type(value)


def test_records_the_model_would_change_or_refuse_are_not_plain():
    call = {"type": "tool_call", "name": "t", "args": {"a": 1}, "step": 1}
    assert _call_values(call) is not None
    for change in ({"extra": 1}, {"step": True}, {"step": 2**63}, {"args": None}, {"args": []}, {"name": 1},
                   {"is_error": 0}, {"sim_time_before": 1}, {"wall_ms": "1"}):  # fmt: skip
        assert _call_values({**call, **change}) is None, change
    assert _call_values({"type": "tool_call"}) is None
    said = {"type": "assistant", "step": 0, "text": "hi", "stop_reason": None, "provider_raw": {"x": 1}}
    assert _assistant_values(said) is not None
    for change in ({"extra": 1}, {"step": 1.0}, {"text": 1}, {"stop_reason": ["x"]}):
        assert _assistant_values({**said, **change}) is None, change
