"""Order counted without listing pairs: the same number as the definition (every constraint pair
checked one by one) on random procedures and runs, and a long procedure scored through
`evalkit score` without the pairs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.scoring.order import counted_order, order_score
from evalkit.trajectory.builders import call, trajectory, write_jsonl
from evalkit.trajectory.scenario import PAIRS_UP_TO, Scenario

ROOT = Path(__file__).resolve().parents[1]


def definition(blocks: tuple[int, ...], ordered: tuple[bool, ...], taken: list[int | None]) -> float | None:
    """docs/scoring.md's order, pair by pair."""
    applicable = satisfied = 0
    for i in range(len(blocks)):
        for j in range(i + 1, len(blocks)):
            if not (blocks[i] < blocks[j] or ordered[blocks[i]]):
                continue
            if taken[i] is None or taken[j] is None:
                continue
            applicable += 1
            satisfied += taken[i] < taken[j]
    return satisfied / applicable if applicable else None


@st.composite
def procedures(draw, max_actions: int = 40):
    sizes = draw(st.lists(st.integers(0, 8), min_size=1, max_size=8))
    ordered = tuple(draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes))))
    blocks = tuple(b for b, size in enumerate(sizes) for _ in range(size))[:max_actions]
    n = len(blocks)
    # matching is injective: distinct positions, some actions unmatched
    positions = draw(st.permutations(range(n)))
    missing = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    taken = [None if gone else p for p, gone in zip(positions, missing)]
    return blocks, ordered, taken


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(procedures())
def test_counted_order_equals_the_definition(case):
    blocks, ordered, taken = case
    assert counted_order(blocks, ordered, taken) == definition(blocks, ordered, taken)


@settings(max_examples=200, deadline=None)
@given(procedures(max_actions=60), st.lists(st.integers(0, 5), min_size=60, max_size=60))
def test_counted_order_equals_the_definition_with_equal_positions(case, values):
    # positions never repeat in a real match; a repeated one is no satisfied constraint either way
    blocks, ordered, taken = case
    taken = [None if t is None else values[t] for t in taken]
    assert counted_order(blocks, ordered, taken) == definition(blocks, ordered, taken)


@settings(max_examples=100, deadline=None)
@given(procedures())
def test_the_listed_pairs_and_the_count_agree(case):
    blocks, ordered, taken = case
    pairs = tuple(
        (i, j)
        for i in range(len(blocks))
        for j in range(i + 1, len(blocks))
        if blocks[i] < blocks[j] or ordered[blocks[i]]
    )
    assert order_score(pairs, blocks, ordered, taken) == order_score(None, blocks, ordered, taken)


def long_scenario(n: int) -> dict:
    half = n // 2
    steps = [{"tool": "step", "args": {"i": i}} for i in range(n)]
    return {
        "id": "long",
        "command_tools": ["step"],
        "ground_truth": {
            "procedure": [
                {"block": "first", "ordered": True, "actions": steps[:half]},
                {"block": "second", "actions": steps[half:]},
            ]
        },
        "success": {"final_state": []},
    }


def test_a_long_procedure_is_scored_without_its_pairs_and_gives_the_definition(tmp_path):
    n = 400
    sc = long_scenario(n)
    index = Scenario.model_validate(sc).index
    assert n > PAIRS_UP_TO and index.constraints is None
    # done in order, except: three adjacent swaps in the ordered block, the unordered block reversed
    order = list(range(n // 2)) + list(reversed(range(n // 2, n)))
    for k in (10, 50, 100):
        order[k], order[k + 1] = order[k + 1], order[k]
    write_jsonl(
        tmp_path / "long.jsonl",
        trajectory(sc, [call("step", {"i": i}) for i in order], run_id="long", tool_surface=["step"]),
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "evalkit", "score", str(tmp_path / "long.jsonl"), "--no-db", "--format", "jsonl"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    taken = [order.index(i) for i in range(n)]
    expected = definition(index.required_blocks, index.ordered_blocks, taken)
    half = n // 2
    applicable = n * (n - 1) // 2 - half * (half - 1) // 2  # the unordered block's own pairs are none
    assert expected == (applicable - 3) / applicable
    assert card["vector"]["order"] == expected and card["vector"]["coverage"] == 1.0
