"""Error bars added on demand (``Aggregator.result(errors=False)`` then ``add_errors``) are the ones
the whole result holds, bit for bit, and a table cut to a width that adds only those of the columns
it keeps prints what the table made from the whole result prints."""

import io
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.aggregate.groups import Aggregator, RunSummary
from evalkit.aggregate.uncertainty.intervals import METRICS, SAFETY_METRICS
from evalkit.present.score_output import ScoreWriter

EVERY = METRICS + SAFETY_METRICS
# scores far outside [0, 1] (NaN-free, up to sizes whose fourth powers, which the per-model spread
# takes, are still floats), subnormal ones, ties, and the ends of the unit interval
value = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-300, 5e-324, 1e60, 0.1, 2 / 3]),
    st.floats(min_value=-1e60, max_value=1e60, allow_nan=False),
)
runs_strategy = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["scored", "scored", "scored", "provider_error", "incomplete"]),
        value,
        value,
        value,
        st.one_of(st.none(), st.booleans()),
        st.integers(0, 2),
        st.integers(0, 1),
    ),
    min_size=1,
    max_size=40,
)


def aggregator(runs, include_errors=False) -> Aggregator:
    agg = Aggregator(include_errors)
    for scenario, model, status, scalar, coverage, order, passed, dangerous, anti in runs:
        agg.add(RunSummary(scenario, model, status, scalar, coverage, order, scalar, passed, dangerous, None, "", anti))
    return agg


def without_reasons(rows):
    return [{k: v for k, v in row.items() if k not in ("se_reasons", "se_method")} for row in rows]


def same(a, b) -> bool:
    """Equal bit for bit: json writes each float as its repr (-0.0 apart from 0.0)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(runs_strategy, st.booleans(), st.lists(st.sampled_from(EVERY), unique=True), st.randoms())
def test_error_bars_added_on_demand_equal_the_whole_results(runs, include_errors, first, rnd):
    agg = aggregator(runs, include_errors)
    whole = agg.result(bootstrap=False)
    shown = agg.result(bootstrap=False, errors=False)
    for row in shown["groups"] + shown["models"]:
        assert not any(key.endswith(("_se", "_ci")) for key in row)
    rest = [m for m in EVERY if m not in first]
    rnd.shuffle(rest)
    agg.add_errors(shown, first)  # some metrics, then the others one by one, in any order
    for metric in rest:
        agg.add_errors(shown, [metric])
    for kind in ("groups", "models"):
        wanted = [
            {k: v for k, v in row.items() if not k.startswith(("pass_hat_k_", "safe_pass_hat_k_"))}
            for row in without_reasons(whole[kind])
        ]
        assert same(without_reasons(shown[kind]), wanted)


def table_text(agg: Aggregator, width: int | None, whole: bool) -> str:
    out = io.StringIO()
    writer = ScoreWriter(out, "table", aggregate_only=True, width=width)
    if whole or writer.aggregates != "shown":
        writer.finish(agg.result(bootstrap=False))
    else:
        result = agg.result(bootstrap=False, errors=False)
        writer.finish(result, lambda metrics: agg.add_errors(result, tuple(metrics)))
    return out.getvalue()


@pytest.mark.parametrize("seed", range(6))
def test_a_table_cut_to_a_width_adding_its_error_bars_prints_what_the_whole_result_prints(seed):
    rnd = random.Random(seed)
    values = [None, 0.0, 1.0, 0.25, 1 / 3, 1e-300, 0.999999]
    runs = [
        (
            f"task-{rnd.randrange(1 + seed * 3)}",
            f"model-{rnd.randrange(2)}",
            rnd.choice(["scored", "scored", "incomplete"]),
            rnd.choice(values),
            rnd.choice(values),
            rnd.choice(values),
            rnd.choice([True, False, None]),
            rnd.randrange(2),
            rnd.randrange(2),
        )
        for _ in range(rnd.randrange(1, 60))
    ]
    agg = aggregator(runs)
    assert ScoreWriter(io.StringIO(), "table", width=120).aggregates == "shown"
    for width in (20, 60, 80, 100, 120, 140, 160, 200, 260, 400, None):
        assert table_text(agg, width, whole=False) == table_text(agg, width, whole=True), width
