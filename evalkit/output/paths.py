"""The one output-path rule: an output never lands on the database or on an input.

Every command (and every API function that writes to a path it is given) calls
:func:`check_outputs` before it opens anything. An output clashes when it is, after following
symbolic links (``os.path.realpath``), the database, the database's ``-wal``, ``-shm`` or
``-journal`` file, another output of the same command, or an input file; hard links are caught
by comparing ``(st_dev, st_ino)`` of the files that exist. The database is itself an output of the
commands that write it, so there it must not be an input either. Standard input and output (``-``) and
URLs are left out: they are not files here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

PathLike = str | os.PathLike[str]

# SQLite keeps a database's uncommitted and shared state in files named after it
DATABASE_SIDE_FILES = ("-wal", "-shm", "-journal")


class OutputClash(ValueError):
    """An output that would overwrite the database or an input; ``str()`` names both (one line)."""


@dataclass(frozen=True, slots=True)
class _File:
    shown: str  # as the user wrote it
    real: str
    inode: tuple[int, int] | None  # (st_dev, st_ino) when it exists

    def same(self, other: _File) -> bool:
        return self.real == other.real or (self.inode is not None and self.inode == other.inode)


def _file(path: PathLike) -> _File:
    name = os.fspath(path)
    try:
        st = os.stat(name)
        inode = (st.st_dev, st.st_ino)
    except (OSError, ValueError):  # missing, a dangling link, a NUL in the name
        inode = None
    return _File(name, os.path.realpath(name), inode)


def _is_file_path(path: PathLike | None) -> bool:
    if path is None:
        return False
    name = os.fspath(path)
    return name not in ("", "-") and "://" not in name


def output_clash(
    outputs: Iterable[tuple[str, PathLike | None]],
    *,
    database: PathLike | None = None,
    inputs: Iterable[PathLike] = (),
    writes_database: bool = False,
) -> str | None:
    """Why these outputs cannot be written, as one line naming both files, or None.

    ``outputs``: ``(label, path)`` pairs, the label as the user knows the output (``--out``);
    a None path (not asked for) or ``-`` is skipped. ``database``: the database the command reads
    or writes (None: none); ``writes_database``: the command writes it, so it must not be an
    input either. ``inputs``: the input files (iterated once, one ``stat`` each).
    """
    wanted = [(label, _file(path)) for label, path in outputs if _is_file_path(path)]
    for i, (label, out) in enumerate(wanted):
        for other_label, other in wanted[:i]:
            if out.same(other):
                return f"{other_label} {other.shown} and {label} {out.shown} are the same file"
    db = _file(database) if _is_file_path(database) else None
    if db is not None:
        family = [("the database", db)]
        for suffix in DATABASE_SIDE_FILES:
            names = dict.fromkeys((db.shown + suffix, db.real + suffix))  # as given first, then through links
            family += [(f"the database's {suffix} file", _file(name)) for name in names]
        for label, out in wanted:
            for what, protected in family:
                if out.same(protected):
                    return f"{label} {out.shown} would overwrite {what} {protected.shown}"
    # inputs exist (they are about to be read), so their inode alone says whether an output is one
    # of them: one stat per input, no realpath
    existing = [(label, out) for label, out in wanted if out.inode is not None]
    if writes_database and db is not None and db.inode is not None:
        existing.append(("--db", db))
    if not existing:
        return None
    taken = {out.inode: (label, out) for label, out in reversed(existing)}
    for path in inputs:
        if not _is_file_path(path):
            continue
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue  # gone: the reader will say so
        if (hit := taken.get((st.st_dev, st.st_ino))) is not None:
            label, out = hit
            return f"{label} {out.shown} would overwrite the input {os.fspath(path)}"
    return None


def check_outputs(
    outputs: Iterable[tuple[str, PathLike | None]],
    *,
    database: PathLike | None = None,
    inputs: Iterable[PathLike] = (),
    writes_database: bool = False,
) -> None:
    """:func:`output_clash`, raised as :class:`OutputClash`."""
    if problem := output_clash(outputs, database=database, inputs=inputs, writes_database=writes_database):
        raise OutputClash(problem)
