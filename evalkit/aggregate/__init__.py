"""Aggregation: per (scenario, model) groups and per-model rollups (``groups``), their error bars
(``uncertainty``) and the per-call cost and latency figures (``per_call``).

``from evalkit.aggregate import Aggregator`` (the names of the former ``evalkit/aggregate.py``) keeps
working: they are looked up lazily in :mod:`evalkit.aggregate.groups`, so importing
``evalkit.aggregate.per_call`` (as the judge layer does) never loads the aggregator.
"""

from __future__ import annotations

from evalkit._moved import names_from

__getattr__ = names_from(__name__, "evalkit.aggregate.groups")
