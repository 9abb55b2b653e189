"""The report's value charts list a dimension's labels in one order whatever order they were read
in: numbers by value, then words; "NaN" and "Infinity" (stored by a judge) are words, since a NaN
sort key has no order and the labels come from a set (the page changed with the hash seed)."""

from __future__ import annotations

import itertools
from collections import Counter

from evalkit.report.data import _scales

LABELS = ["NaN", "2", "n/a", "Infinity", "1.0", "1", "-Infinity", "0", "nan"]


def test_labels_with_nan_and_infinity_have_one_order_whatever_order_they_come_in():
    orders = set()
    for perm in itertools.islice(itertools.permutations(LABELS), 0, None, 97):  # 3,741 of 362,880
        values = {("judge-a", "r", "d"): Counter(perm[:4]), ("judge-b", "r", "d"): Counter(perm[4:])}
        orders.add(tuple(_scales(values)[("r", "d")]))
    assert orders == {("0", "1", "1.0", "2", "-Infinity", "Infinity", "NaN", "n/a", "nan")}
