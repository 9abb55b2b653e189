"""Counting in place of sorting: unique_codes and last_places give numpy's own answers (np.unique
with return_inverse; the last occurrence of each key by np.unique over the reversed keys), on small
codes (the counted path) and large or negative ones (np.unique itself)."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.agreement.stats.stat import last_places, unique_codes


def _cases(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    yield rng.integers(0, 12, n)  # few small codes: counted
    yield rng.integers(0, 4 * n + 1024 + 1, n)  # up to the bound: counted
    yield rng.integers(0, 10**12, n)  # large: sorted
    yield rng.integers(-5, 5, n)  # negative: sorted
    yield np.full(n, 7, dtype=np.int64)


@pytest.mark.parametrize("seed", range(20))
def test_unique_codes_is_np_unique_with_its_inverse(seed):
    for codes in _cases(seed):
        codes = codes.astype(np.int64)
        want_named, want_at = np.unique(codes, return_inverse=True)
        named, at = unique_codes(codes)
        assert named.dtype == want_named.dtype and np.array_equal(named, want_named)
        assert np.array_equal(at, want_at) and at.shape == want_at.shape


@pytest.mark.parametrize("seed", range(20))
def test_last_places_is_the_last_occurrence_of_each_key_in_key_order(seed):
    for key in _cases(seed):
        key = key.astype(np.int64)
        want = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
        got = last_places(key)
        assert np.array_equal(got, want)
        assert all(key[i] not in key[i + 1 :] for i in got[:50].tolist())  # each the last of its key
