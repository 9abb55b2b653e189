"""Judge robustness probes (`evalkit probe`, docs/probes.md): counterfactual runs whose mechanical
score is provably unchanged, judged like any run, stored apart from the annotations.

- :mod:`evalkit.probes.transforms` — the six transforms, pure (``transform``, ``dress_bundle``);
- :mod:`evalkit.probes.cases` — a scored run + a probe → the counterfactual bundle, with the
  mechanical score checked unchanged (``build_case``), and the seeded sample (``sample_runs``);
- :mod:`evalkit.probes.config` — ``configs/probes.toml``, validated (``load_probes_config``);
"""

from evalkit.probes.cases import ProbeCase, ScoreMoved, build_case, mechanical, sample_runs
from evalkit.probes.config import ProbesConfig, load_probes_config
from evalkit.probes.transforms import FOOLING_PROBES, PROBES, NotApplicable, dress_bundle, transform

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
