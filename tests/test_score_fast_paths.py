"""The score path's fast paths give what the slow ones gave: the card's JSON (one pydantic-core pass)
equals dumping it to a dict and encoding that; the reader's non-finite prefilter answers as the
regular expression it replaces."""
from __future__ import annotations

import json

import pytest

from evalkit.render import card_json
from evalkit.scoring import score_trajectory
from evalkit.reader import parse_trajectory
from evalkit.testing import a320_scenario, cmd, dumps_jsonl, read, trajectory


def test_card_json_is_the_json_of_the_card_dict_non_finite_as_null():
    records = trajectory(a320_scenario(), [read(result={"volts": 1e999, "text": "café ✈"}), cmd("ext_pwr", 1)], run_id="r1")
    text = dumps_jsonl(records).replace("Infinity", "1e999")  # json.dumps writes Infinity; a recorder may write 1e999
    card = score_trajectory(parse_trajectory("r1.jsonl", text.encode()))
    out = card_json(card)
    assert json.loads(out) == card.to_json_dict()
    assert "café ✈" in out and "Infinity" not in out and "NaN" not in out  # UTF-8 kept, standard JSON
    assert json.loads(out)["judge_bundle"]["transcript"][1]["result"]["volts"] is None
    assert card.informative.non_finite_numbers == 1


@pytest.mark.parametrize("line, expected", [
    (b'{"v": 1e308}', True), (b'{"v": 1E+400}', True), (b'{"v": -2e-999}', True), (b'{"v": NaN}', True),
    (b'{"v": -Infinity}', True), (b'{"v": ' + b"7" * 309 + b'.5}', True),
    (b'{"v": 1.5e30}', False), (b'{"v": 12e34}', False), (b'{"t": "e123"}', False), (b'{"v": ' + b"7" * 308 + b"}", False),
])
def test_non_finite_prefilter_matches_the_pattern_it_replaces(line, expected):
    """A line is walked for non-finite numbers exactly when the old pattern matched it."""
    import re

    from evalkit.reader import _maybe_non_finite

    pattern = re.compile(rb"NaN|Infinity|[0-9][eE][+-]?[0-9]{3}|[0-9]{309}")
    assert _maybe_non_finite(line) is expected is (pattern.search(line) is not None)
