"""evalkit's Python API. The CLI is a thin shell over these functions.

>>> from evalkit.api import iter_scorecards, aggregate
>>> cards = [c for c in iter_scorecards(["examples/"]) if not isinstance(c, InputError)]
>>> aggregate(cards)["models"]  # doctest: +SKIP

Nothing here imports litellm, numpy or scipy.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from evalkit.aggregate import Aggregator, RunSummary, aggregate, pass_hat_k
from evalkit.errors import InputError
from evalkit.reader import Warn, expand_paths, parse_trajectory, read_trajectory
from evalkit.scorecard import ScoreCard
from evalkit.scoring import derive_scalar, score_trajectory
from evalkit.db.scores import DEFAULT_DB, Store

__all__ = [
    "Aggregator", "DEFAULT_DB", "InputError", "RunSummary", "ScoreCard", "Store", "aggregate",
    "derive_scalar", "expand_paths", "iter_scorecards", "parse_trajectory", "pass_hat_k",
    "read_trajectory", "score_file", "score_into", "score_trajectory",
]

BATCH = 200  # ScoreCards per database transaction


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


def score_into(paths: Iterable[str | Path], store: Store | None, on_error: Callable[[InputError], None],
               warn: Warn | None = None, batch: int = BATCH) -> Iterator[ScoreCard]:
    """Score files and store the cards in ``store`` (None: score only), yielding each good card.

    Cards are written ``batch`` at a time, one transaction each; what was yielded is stored
    once the generator is exhausted or closed. A bad file goes to ``on_error`` and the others
    are still scored. A run_id read twice is reported through ``warn``: the database keeps the
    later card (upsert by run_id). A database failure raises ``evalkit.db.DbError``.
    """
    pending: list[ScoreCard] = []
    seen: dict[str, str] = {}  # run_id -> path
    try:
        for item in iter_scorecards(paths, warn):
            if isinstance(item, InputError):
                on_error(item)
                continue
            if item.run_id in seen and warn is not None:
                keeps = "" if store is None else "; the database keeps this one"
                warn(f"{item.path}: warning: run_id {item.run_id!r} was already read from {seen[item.run_id]}{keeps}")
            seen[item.run_id] = item.path
            if store is not None:
                pending.append(item)
                if len(pending) >= batch:
                    store.save_many(pending)
                    pending = []
            yield item
    finally:
        if store is not None and pending:
            store.save_many(pending)
