"""What an importer returns: runs (a :class:`RunList` or a plain list of record lists), or
:class:`Converted` with ratings and per-run errors too; :class:`ImportFormatError` for an input it
cannot convert. Plugins import them from :mod:`evalkit.importers`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalkit.errors import InputError
from evalkit.importers.notes import Note

Records = list[dict[str, Any]]


class ImportFormatError(InputError):
    """An input file an importer cannot convert. ``str()`` is ``path:line: message``.

    ``line`` is the line where the offending record starts when the importer knows it; the message
    itself names the record (index, ids), so the error is useful even without a line.
    """


@dataclass
class Converted:
    """What an importer returns when it has more than runs to give.

    ``ratings``: rating rows (dicts with ``item_id`` = a run_id of ``runs``, ``rater``, ``rater_kind``,
    ``dimension``, ``value``, optional ``confidence``); ``errors``: runs that could not be converted
    (each names the file and the record), while the other runs of the file are still written.
    """

    runs: list[Records]
    ratings: list[dict[str, Any]] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # said once per import (evalkit.importers.notes)


class RunList(list):
    """Runs, as an importer returns them, with ``notes`` (evalkit.importers.notes: a default the
    importer chose, said once per import). A plain list to every other caller."""

    def __init__(self, runs: Sequence[Records] = (), notes: Sequence[Note] = ()):
        super().__init__(runs)
        self.notes = list(notes)
