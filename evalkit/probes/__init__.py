"""Judge robustness probes (`evalkit probe`, docs/probes.md): counterfactual runs whose mechanical
score is provably unchanged, judged like any run, stored apart from the annotations.

- :mod:`evalkit.agreement.probe_names` — the probes' names (``PROBES``, ``FOOLING_PROBES``), beside
  the audit's probe statistics, which read them too; it imports nothing;
- :mod:`evalkit.probes.transforms` — the six transforms, pure (``transform``, ``dress_bundle``);
- :mod:`evalkit.probes.cases` — a scored run + a probe → the counterfactual bundle, with the
  mechanical score checked unchanged (``build_case``), and the seeded sample (``sample_runs``);
- :mod:`evalkit.probes.config` — ``configs/probes.toml``, validated (``load_probes_config``);

The names below resolve on first use, so that the names (read by ``evalkit probe --help``) load
without the transforms and the trajectory model under them.
"""

import importlib

from evalkit.agreement.probe_names import FOOLING_PROBES, PROBES

# where each lazily resolved name lives
_HOMES = {
    "NotApplicable": "transforms",
    "dress_bundle": "transforms",
    "transform": "transforms",
    "ProbeCase": "cases",
    "ScoreMoved": "cases",
    "build_case": "cases",
    "mechanical": "cases",
    "sample_runs": "cases",
    "ProbesConfig": "config",
    "load_probes_config": "config",
}

__all__ = [
    "FOOLING_PROBES",
    "PROBES",
    "NotApplicable",
    "ProbeCase",
    "ProbesConfig",
    "ScoreMoved",
    "build_case",
    "dress_bundle",
    "load_probes_config",
    "mechanical",
    "sample_runs",
    "transform",
]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    found = getattr(importlib.import_module(f"evalkit.probes.{_HOMES[name]}"), name)
    globals()[name] = found
    return found
