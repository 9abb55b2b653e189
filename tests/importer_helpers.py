"""Shared pieces of the importer tests: an import that must convert every input, and the scored
cards of what it wrote."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evalkit.engines.pipeline import score_files
from evalkit.errors import InputError
from evalkit.importers import ImportResult, import_files


def import_ok(fmt: str, paths: Iterable[Path], out: Path, **options) -> ImportResult:
    """``import_files`` of ``paths`` into ``out``, asserting that no input was bad."""
    result = import_files(fmt, list(paths), out, **options)
    assert not result.errors, [str(e) for e in result.errors]
    return result


def cards_by_run(out: Path) -> dict[str, object]:
    """The scorecards of the runs in ``out`` by run id, asserting that every file scores."""
    cards = {}
    for card in score_files([out]):
        assert not isinstance(card, InputError), str(card)
        cards[card.run_id] = card
    return cards
