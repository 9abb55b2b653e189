"""evalkit's Python API. The CLI is a thin shell over these functions.

>>> from evalkit.api import iter_scorecards, aggregate
>>> cards = [c for c in iter_scorecards(["examples/"]) if not isinstance(c, InputError)]
>>> aggregate(cards)["models"]  # doctest: +SKIP

Nothing here imports litellm, numpy or scipy.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from evalkit.aggregate import Aggregator, RunSummary, aggregate, pass_hat_k
from evalkit.errors import InputError
from evalkit.reader import Warn, expand_paths, parse_trajectory, read_trajectory
from evalkit.scorecard import ScoreCard
from evalkit.scoring import derive_scalar, score_trajectory
from evalkit.storage import DEFAULT_DB, Store

__all__ = [
    "Aggregator", "DEFAULT_DB", "InputError", "RunSummary", "ScoreCard", "Store", "aggregate",
    "derive_scalar", "expand_paths", "iter_scorecards", "parse_trajectory", "pass_hat_k",
    "read_trajectory", "score_file", "score_trajectory",
]


def score_file(path: str | Path, warn: Warn | None = None) -> ScoreCard:
    """Read and score one trajectory file. Raises InputError on bad input."""
    return score_trajectory(read_trajectory(path, warn))


def iter_scorecards(paths: Iterable[str | Path], warn: Warn | None = None) -> Iterator[ScoreCard | InputError]:
    """Score files one at a time (directories: ``*.jsonl``, recursive, sorted); bad files yield their error."""
    for path in expand_paths(paths):
        try:
            yield score_file(path, warn)
        except InputError as exc:
            yield exc
