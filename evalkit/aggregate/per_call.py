"""Per-call cost and latency: the median, and the mean excluding the first call.

The first call of a batch is cold (imports, connection, caches; "cold first call" in
docs/glossary.md), so a mean that keeps it says little; the mean printed beside the median leaves
it out. One definition for the judge's summary, the audit's judge costs, the report and the
verdicts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def median_and_mean_after_first(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """``values`` in call order, None where unknown. Returns (median of the known values, mean of
    the known values after the first call); each None when it has no value to stand on."""
    known = [v for v in values if v is not None]
    after_first = [v for v in values[1:] if v is not None]
    return (statistics.median(known) if known else None, statistics.fmean(after_first) if after_first else None)
