"""Shared helpers for the scorer tests: build records, score them in memory."""

from evalkit.scoring import score_trajectory
from evalkit.trajectory.builders import dumps_jsonl
from evalkit.trajectory.reader import parse_trajectory


def score_records(records, path="mem.jsonl"):
    return score_trajectory(parse_trajectory(path, dumps_jsonl(records).encode("utf-8")))


def classes(card):
    return [(c.class_, c.subtype, c.severity) for c in card.commands]
