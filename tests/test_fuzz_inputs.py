"""Property-based fuzzing of `evalkit score`: mutations of the bundled examples — field
deletions, type swaps, random unicode (control and bidi characters included), extreme numbers,
truncation at any byte — give ScoreCards or InputErrors and nothing else; their JSON output parses
with a strict parser; stored cards read back equal.

Profiles: ``ci`` (default: derandomized, fixed number of examples, well under 20 s) and ``long``
(``EVALKIT_FUZZ_PROFILE=long``: 20x the examples, randomized).
"""

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit.db import Store, open_readonly, read_scorecards
from evalkit.errors import InputError
from evalkit.present.score_output import card_text
from evalkit.scoring import score_trajectory
from evalkit.trajectory.reader import parse_trajectory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted([*EXAMPLES.glob("a320/*.jsonl"), *EXAMPLES.glob("support/*.jsonl")])
SOURCES = [(f.name, f.read_bytes()) for f in FILES]

settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
PROFILE = os.environ.get("EVALKIT_FUZZ_PROFILE", "ci")
settings.load_profile(PROFILE)

HOSTILE_CHARS = "\x00\x07\x1b\r\u0085\u200e\u202e\u2066\u2069\ufeff\ud7ff\U0001f600"
hostile_text = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(HOSTILE_CHARS)), max_size=12)
extreme_numbers = st.sampled_from(
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        1e308,
        -1e-320,
        2**63,
        -(2**63) - 1,
        10**40,
        0,
        -0.0,
        True,
    ]
)
any_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), hostile_text, extreme_numbers),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)),
    max_leaves=6,
)


def _refuse(name):
    raise ValueError(f"non-standard JSON constant {name}")


def strict_loads(text):
    return json.loads(text, parse_constant=_refuse)


def _paths(value, prefix=()):
    """Every (container, key) position in a parsed record."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield prefix + (key,)
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield prefix + (i,)
            yield from _paths(child, prefix + (i,))


def _parent(record, path):
    for key in path[:-1]:
        record = record[key]
    return record


@st.composite
def mutated_file(draw):
    name, data = draw(st.sampled_from(SOURCES))
    kind = draw(st.sampled_from(["delete", "swap", "unicode", "number", "truncate", "raw_bytes"]))
    if kind == "truncate":
        return name, data[: draw(st.integers(0, len(data)))]
    if kind == "raw_bytes":
        at = draw(st.integers(0, len(data)))
        return name, data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    lines = data.split(b"\n")
    candidates = [i for i, line in enumerate(lines) if line.strip()]
    index = draw(st.sampled_from(candidates))
    try:
        record = json.loads(lines[index])
    except ValueError:  # the crashed-recorder example's half-written last line
        return name, data
    paths = list(_paths(record))
    if not paths:
        return name, data
    path = draw(st.sampled_from(paths))
    parent = _parent(record, path)
    if kind == "delete":
        del parent[path[-1]]
    elif kind == "swap":
        parent[path[-1]] = draw(any_value)
    elif kind == "unicode":
        parent[path[-1]] = draw(hostile_text)
    else:
        parent[path[-1]] = draw(extreme_numbers)
    # json.dumps writes NaN / Infinity literally, as a Python recorder would
    lines[index] = json.dumps(record, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    return name, b"\n".join(lines)


@pytest.mark.slow
@pytest.mark.timeout(0 if PROFILE == "long" else 120)
@given(mutated_file())
def test_mutated_examples_give_scorecards_or_input_errors(tmp_path_factory, case):
    name, data = case
    try:
        card = score_trajectory(parse_trajectory(name, data))
    except InputError as exc:
        text = str(exc)
        assert text.startswith(name) and "\n" not in text
        return
    for fmt in ("json", "jsonl"):
        strict_loads(card_text(card, fmt))
    doc = card.to_json_dict()
    assert doc["informative"]["non_finite_numbers"] >= 0
    db_path = tmp_path_factory.mktemp("fuzz") / "s.db"
    with Store(db_path) as store:
        store.save(card)
    with open_readonly(db_path) as db:
        (back,) = list(read_scorecards(db))
    assert back.to_json_dict() == _nulled(doc)


def _nulled(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    return value


@pytest.mark.slow
def test_every_truncation_of_an_example_is_a_card_or_an_input_error():
    """Truncation at every byte of one example (exhaustive, not sampled)."""
    name, data = next((n, d) for n, d in SOURCES if n == "a320-opus-4-8-full-procedure.jsonl")
    outcomes = {"card": 0, "error": 0}
    for cut in range(len(data) + 1):
        try:
            card = score_trajectory(parse_trajectory(name, data[:cut]))
        except InputError:
            outcomes["error"] += 1
            continue
        strict_loads(card_text(card, "jsonl"))
        outcomes["card"] += 1
    assert outcomes["card"] > 0 and outcomes["error"] > 0
