"""What a worker does with each file of a batch (:func:`evalkit.engines.job.score_batch`): read it,
score it, and turn its card into the parts the job asks for.

A module of its own, importing the reader, the scorer and the card's output at its top: the
process that starts a pool imports evalkit.engines.job and never this (its workers score), and a
worker looks these up once rather than once per file. It imports nothing of evalkit.engines.job,
which imports it (once a batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalkit.aggregate.groups import RunSummary
from evalkit.engines.sources import is_url, read_url
from evalkit.errors import InputError
from evalkit.present.score_output import card_parts
from evalkit.scoring.scorecard import card_head_json
from evalkit.scoring.scorer import score_trajectory
from evalkit.trajectory.input_files import shown_name
from evalkit.trajectory.reader import parse_trajectory, read_trajectory


@dataclass(slots=True)
class Scored:
    """One file scored in a worker, before its batch is folded (finish_batch): ``error`` for bad
    input, otherwise the card's prepared parts."""

    path: str
    warnings: list[str] = field(default_factory=list)
    error: InputError | None = None
    run_id: str | None = None
    summary: RunSummary | None = None
    parts: tuple[Any, ...] | None = None  # the output, in pieces (score_output.card_parts)
    rows: Any = None  # evalkit.db.scores.CardRows
    parquet: Any = None  # evalkit.output.parquet.ParquetRows
    card: Any = None  # ScoreCard, when the job asks for it


def _read(source: Any, warn, scenarios: Any = None) -> Any:
    if isinstance(source, tuple):
        name, data = source
        if isinstance(data, InputError):
            raise data
        return parse_trajectory(name, data, warn, compact=True, scenarios=scenarios)
    if is_url(source):
        return parse_trajectory(source, read_url(source), warn, compact=True, scenarios=scenarios)
    return read_trajectory(source, warn, compact=True, scenarios=scenarios)


def score_one(job: Any, source: Any, noting: Any = None) -> Scored:
    """Read and score one file (an evalkit.engines.job.Source) for ``job`` (a ScoreJob there);
    ``noting`` (an evalkit.engines.scenario_check.Noting) notes what the run did."""
    out = Scored(shown_name(source[0] if isinstance(source, tuple) else source))
    try:
        traj = _read(source, out.warnings.append, job.scenarios)
        card = score_trajectory(traj)
    except InputError as exc:
        out.error = exc
        return out
    if noting is not None:
        local = source if isinstance(source, str) and "://" not in source else None
        noting.add(traj, out.path, local, card)
    out.run_id = card.run_id
    out.summary = RunSummary.of(card)
    if job.card:
        out.card = card
    # the card's JSON without its bundle: the database's card, and the head of the json/jsonl output
    head = None
    if job.db_rows or job.output_format in ("json", "jsonl"):
        head = card_head_json(card)
    if job.output_format is not None:
        out.parts = card_parts(card, job.output_format, head, job.columns)
    if job.db_rows:
        from evalkit.db.scores import card_rows

        out.rows = card_rows(card, head)
    if job.parquet_rows:
        from evalkit.output.parquet import parquet_rows

        out.parquet = parquet_rows(card.to_json_dict(with_bundle=False), card.bundle.json)
    return out
