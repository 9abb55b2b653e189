"""Notes: a default an importer chose for the user, said once per ``evalkit import``.

An importer returns them with its runs (``RunList.notes`` or ``Converted.notes``); the notes of one
``kind`` from every input written merge into one line (their ``items`` joined, their ``lines``
added), so a thousand transcripts without ``command_tools`` give one line, not a thousand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class Note:
    """``text`` has the fields ``{lines}`` (how many records it is about), ``{where}`` (the input,
    or how many inputs) and ``{items}`` (the items, sorted, comma-separated)."""

    kind: str
    text: str
    items: set[str] = field(default_factory=set)
    lines: int = 0
    paths: list[str] = field(default_factory=list)

    def render(self) -> str:
        where = self.paths[0] if len(self.paths) == 1 else f"{len(self.paths)} files"
        return "note: " + self.text.format(lines=self.lines, where=where, items=", ".join(sorted(self.items)))


def merge(notes: Iterable[Note]) -> list[Note]:
    """One note per kind, in the order kinds first appear."""
    out: dict[str, Note] = {}
    known: dict[str, set[str]] = {}  # a kind's paths as a set: one lookup per path, however many inputs
    for note in notes:
        seen = out.get(note.kind)
        if seen is None:
            out[note.kind] = Note(note.kind, note.text, set(note.items), note.lines, list(note.paths))
            known[note.kind] = set(note.paths)
        else:
            seen.items |= note.items
            seen.lines += note.lines
            new = [p for p in note.paths if p not in known[note.kind]]
            seen.paths += new
            known[note.kind].update(new)
    return list(out.values())
