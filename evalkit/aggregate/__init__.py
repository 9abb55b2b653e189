"""Aggregation: per (scenario, model) groups and per-model rollups (``groups``), their error bars
(``uncertainty``) and the per-call cost and latency figures (``per_call``)."""
