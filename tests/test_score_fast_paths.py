"""The score path's fast paths give what the slow ones gave: the card's JSON (one pydantic-core pass)
equals dumping it to a dict and encoding that; the reader's non-finite prefilter answers as the
regular expression it replaces."""

from __future__ import annotations

import json

import pytest

from evalkit.present.score_output import card_json
from evalkit.scoring import score_trajectory
from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, read, trajectory
from evalkit.trajectory.reader import parse_trajectory


def test_card_json_is_the_json_of_the_card_dict_non_finite_as_null():
    records = trajectory(
        a320_scenario(), [read(result={"volts": 1e999, "text": "café ✈"}), cmd("ext_pwr", 1)], run_id="r1"
    )
    text = dumps_jsonl(records).replace("Infinity", "1e999")  # json.dumps writes Infinity; a recorder may write 1e999
    card = score_trajectory(parse_trajectory("r1.jsonl", text.encode()))
    out = card_json(card)
    assert json.loads(out) == card.to_json_dict()
    assert "café ✈" in out and "Infinity" not in out and "NaN" not in out  # UTF-8 kept, standard JSON
    assert json.loads(out)["judge_bundle"]["transcript"][1]["result"]["volts"] is None
    assert card.informative.non_finite_numbers == 1


@pytest.mark.parametrize(
    "line, expected",
    [
        (b'{"v": 1e308}', True),
        (b'{"v": 1E+400}', True),
        (b'{"v": -2e-999}', True),
        (b'{"v": 3e-400, "h": "3e"}', True),
        (b'{"v": ' + b"7" * 309 + b".5}", True),
        (b'{"v": 1.5e30}', False),
        (b'{"v": 12e34}', False),
        (b'{"t": "e123"}', False),
        (b'{"h": "3eb2"}', False),
        (b'{"v": ' + b"7" * 308 + b"}", False),
        (b'{"v": NaN}', False),
    ],
)
def test_overflow_prefilter_matches_the_pattern_it_replaces(line, expected):
    """A line is walked for numbers that overflow exactly when the old pattern matched it."""
    import re

    from evalkit.trajectory.reader import _maybe_overflow

    pattern = re.compile(rb"[0-9][eE][+-]?[0-9]{3}|[0-9]{309}")
    assert _maybe_overflow(line) is expected is (pattern.search(line) is not None)


@pytest.mark.parametrize(
    "line, literals",
    [
        (b'{"v": NaN}', True),
        (b'{"v": [1, -Infinity]}', True),
        (b'{"v": Infinity}', True),
        (b'{"v": 1e400}', False),
        (b'{"v": "NaN Infinity"}', False),
        (b'{"v": 1.5}', False),
    ],
)
def test_literals_are_noted_by_the_parse(line, literals):
    from evalkit.trajectory import safe_json
    from evalkit.trajectory.values import compact_json

    obj, noted = safe_json.loads_noting_literals(line)
    assert noted is literals
    assert compact_json(obj) == compact_json(safe_json.loads(line))  # NaN equals nothing: compared as JSON


@pytest.mark.parametrize(
    "line",
    [
        b'{"a": 1, "a": 2}',
        b'{"a": NaN, "a": 2}',
        b"[" * 300 + b"]" * 300,
        b'{"a": ' + b"9" * 5000 + b"}",
        b'{"a": NaN',
        b'{"a": 1} x',
    ],
)
def test_the_strict_first_parse_gives_the_rules_errors(line):
    """Whatever the first, strict parse refuses is answered by the rules' own parse: the same error."""
    from evalkit.trajectory import safe_json

    with pytest.raises(safe_json.JSONProblem) as first:
        safe_json.loads_noting_literals(line)
    with pytest.raises(safe_json.JSONProblem) as rules:
        safe_json.loads(line)
    assert (first.value.reason, first.value.line, first.value.truncated) == (
        rules.value.reason,
        rules.value.line,
        rules.value.truncated,
    )


def test_constructed_command_rows_set_every_field_of_the_model():
    """``classify._command_row`` names each CommandRow field by hand: a field added to the model
    must be added there too (a row missing it would fail to serialise)."""
    from evalkit.scoring.classify import _command_row
    from evalkit.scoring.scorecard import CommandRow
    from evalkit.trajectory.records import Call

    for name in ("hold_seat", "set_control"):
        row = _command_row(4, Call(name, {"control": "apu_gen", "value": 1}, False, 2, 3), "optional", "s", "d", "b")
        assert list(vars(row)) == list(CommandRow.model_fields)
        control = ("apu_gen", 1) if name == "set_control" else (None, None)
        assert tuple(vars(row).values()) == (
            4,
            2,
            3,
            name,
            {"control": "apu_gen", "value": 1},
            *control,
            "optional",
            "s",
            "d",
            "b",
        )
