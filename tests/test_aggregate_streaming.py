"""Streaming aggregation: the same numbers, bit for bit, as the list-based statistics; memory flat in runs."""

import math
import statistics
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.aggregate.groups import Aggregator, RunSummary

pytestmark = pytest.mark.slow

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
runs_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["scored", "scored", "provider_error", "incomplete"]),
        st.one_of(st.none(), unit),
        st.one_of(st.none(), unit),
        st.booleans(),
    ),
    max_size=60,
)


def reference_group(values, counted):
    """Today's definition, written over full lists with the standard library."""
    inc = [v for v in values if v[1] in counted]
    scores = [v[2] for v in inc if v[2] is not None]
    cover = [v[3] for v in inc if v[3] is not None]
    return {
        "n": len(values),
        "n_scored": len(inc),
        "score_mean": math.fsum(scores) / len(scores) if scores else None,
        "score_std": statistics.stdev(scores) if len(scores) >= 2 else None,
        "score_median": statistics.median(scores) if scores else None,
        "coverage_mean": math.fsum(cover) / len(cover) if cover else None,
        "pass_rate": sum(1 for v in inc if v[4]) / len(inc) if inc else None,
    }


@settings(max_examples=300, deadline=None)
@given(runs_strategy, st.booleans())
def test_streamed_statistics_equal_the_standard_library_bit_for_bit(runs, include_errors):
    agg = Aggregator(include_errors)
    for model, status, scalar, coverage, passed in runs:
        agg.add(RunSummary("s", model, status, scalar, coverage, None, scalar, passed, 0))
    counted = {"scored", "provider_error"} if include_errors else {"scored"}
    for group in agg.result()["groups"]:
        expected = reference_group([r for r in runs if r[0] == group["model"]], counted)
        assert {k: group[k] for k in expected} == expected


def test_stdev_of_awkward_floats_matches_statistics():
    values = [0.1, 0.2, 0.30000000000000004, 1e-300, 0.7, 0.7, 0.7, 2 / 3]
    agg = Aggregator()
    for v in values:
        agg.add(RunSummary("s", "m", "scored", v, v, None, v, True, 0))
    g = agg.result()["groups"][0]
    assert g["score_std"] == statistics.stdev(values)
    assert g["score_mean"] == math.fsum(values) / len(values)
    assert g["score_median"] == statistics.median(values)


def test_aggregator_memory_does_not_grow_with_runs():
    def feed(agg, n):
        for i in range(n):
            v = (i % 7) / 7
            agg.add(RunSummary(f"s{i % 3}", "m", "scored", v, v, v, v, i % 2 == 0, i % 11 == 0))

    agg = Aggregator()
    tracemalloc.start()
    feed(agg, 2_000)
    after_small = tracemalloc.get_traced_memory()[0]
    feed(agg, 10_000)  # tracemalloc slows every allocation: 10,000 runs show it as well as 50,000
    after_large = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    # A list of RunSummary would add ~100 bytes per run (1 MB here); the sums' integers may grow a few bytes.
    assert after_large - after_small < 20_000
    assert agg.result()["groups"][0]["n"] == len(range(0, 2_000, 3)) + len(range(0, 10_000, 3))  # scenario s0


@given(st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=400))
def test_pass_hat_k_equals_the_binomial_ratio_exactly(c, extra):
    from evalkit.aggregate.groups import pass_hat_k

    n = c + extra
    assert pass_hat_k(c, n) == [math.comb(c, k) / math.comb(n, k) for k in range(1, n + 1)]


def test_pass_hat_k_of_a_large_group_is_linear_not_quadratic():
    from evalkit.aggregate.groups import pass_hat_k

    # 60,000 runs: recomputing C(n, k) for every k took minutes; the carried form is immediate.
    out = pass_hat_k(59_999, 60_000)
    assert len(out) == 60_000
    assert out[0] == 59_999 / 60_000 and out[29_999] == 30_000 / 60_000 and out[-1] == 0.0
    assert pass_hat_k(60_000, 60_000) == [1.0] * 60_000
