"""Write a file so that a reader never sees half of it and a failure leaves the old one intact.

Every file output goes to a temporary file beside its target (same directory, so the rename
cannot cross file systems; a dot name ending ``.tmp``, so a directory search for ``*.jsonl`` never
picks it up), is flushed to the disk and renamed over the target on success; on any failure or
interrupt the temporary file is removed and an existing target is left as it was. A target that is
a symbolic link is written through it (the link stays a link), as ``open(path, "w")`` would.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Self

from evalkit.errors import EvalkitError


class OutputError(EvalkitError, OSError):
    """An output file that cannot be written. ``str()`` is ``path: cannot write: reason``; it is an
    OSError (with ``errno``, ``strerror`` and ``filename``) for callers that catch those."""

    def __str__(self) -> str:
        return f"{self.filename}: cannot write: {self.strerror}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """``exc`` (met while writing ``path``) as an OutputError naming ``path``; a directory that
    does not exist is named (``no such directory: out``), not left for the user to guess."""
    if isinstance(exc, OutputError):
        return exc
    reason = exc.strerror or str(exc)
    parent = os.path.dirname(os.fspath(path))
    if exc.errno == errno.ENOENT and parent and not os.path.isdir(parent):
        reason = f"no such directory: {parent}"
    return OutputError(exc.errno, reason, os.fspath(path))


class _OutputDescriptor(io.FileIO):
    """The temporary file under an AtomicFile: its write errors name the output, whether text or
    bytes (``AtomicFile.buffer``) were written."""

    path = ""

    def write(self, data) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            raise output_error(self.path, exc) from None


class AllOrNothing:
    """An output kept whole or not at all. A subclass's keeping step runs through :meth:`_settle`
    (once; a failure discards, an OSError is raised as an :class:`OutputError`); :meth:`discard`
    runs its ``_remove`` once. Used as a context manager it keeps the output (``_keep``) when the
    block ends normally and discards it otherwise."""

    done = False

    def _keep(self) -> None:
        raise NotImplementedError

    def _remove(self) -> None:
        raise NotImplementedError

    def _settle(self, path: str | os.PathLike[str], step: Callable[[], None]) -> None:
        if self.done:
            return
        try:
            step()
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise output_error(path, exc) from None
            raise
        self.done = True

    def discard(self) -> None:
        """Remove what was written, leaving things as they were found (safe to call more than once)."""
        if self.done:
            return
        self.done = True
        self._remove()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is None:
            self._keep()
        else:
            self.discard()


class AtomicFile(AllOrNothing):
    """A text file written under a temporary name and renamed over ``path`` by :meth:`commit`.

    Used as a context manager it commits when the block ends normally and discards otherwise.
    Write errors, of text or of bytes written to :attr:`buffer`, are raised as :class:`OutputError`.
    ``newline`` as :func:`open` (``""``: no translation, for writers that write their own line ends).
    """

    def __init__(self, path: str | os.PathLike[str], *, newline: str | None = "\n"):
        self.path = os.fspath(path)
        # through a link to its target: the link is kept, as open(path, "w") keeps it
        target = Path(os.path.realpath(self.path))
        try:
            st = os.stat(target)
            self._mode = st.st_mode & 0o7777  # a replaced file keeps its permissions
        except OSError:
            st = None
            self._mode = 0o666 & ~_umask()  # a new one gets the ordinary ones, not mkstemp's 0600
        self._target = target
        # a device, FIFO or socket (/dev/null, /dev/stdout, a pipe) is written in place: renaming a
        # regular file over it would replace the device itself
        self._tmp = None if st is not None and not stat.S_ISREG(st.st_mode) else ""
        try:
            if self._tmp is None:
                fd = os.open(target, os.O_WRONLY)
            else:
                fd, self._tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise output_error(self.path, exc) from None
        raw = _OutputDescriptor(fd, "w")
        raw.path = self.path
        self._fh = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="strict", newline=newline)
        self.buffer = self._fh.buffer  # for writers that write UTF-8 bytes themselves
        self.encoding, self.errors = "utf-8", "strict"
        self.done = False

    def write(self, text: str) -> int:
        return self._fh.write(text)

    def flush(self) -> None:
        try:
            self._fh.flush()
        except OSError as exc:
            raise output_error(self.path, exc) from None

    def commit(self) -> None:
        """Flush to the disk and rename over the target (once; later calls do nothing)."""
        self._settle(self.path, self._commit)

    def _keep(self) -> None:
        self.commit()

    def _commit(self) -> None:
        self._fh.flush()
        if self._tmp is None:  # written in place (a device or a pipe): nothing to rename
            self._fh.close()
            return
        os.fsync(self._fh.fileno())  # the new content is on disk before the name points at it
        self._fh.close()
        os.chmod(self._tmp, self._mode)
        os.replace(self._tmp, self._target)

    def _remove(self) -> None:
        """The temporary file goes; the target is untouched."""
        try:
            self._fh.close()
        except OSError:
            pass  # a buffered write that fails again: the file is going anyway
        if self._tmp is not None:
            Path(self._tmp).unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write UTF-8 ``text`` (``\\n`` line ends) through a temporary file in the same directory and
    a rename (:class:`AtomicFile`); a failure raises :class:`OutputError` and leaves ``path`` as it was."""
    with AtomicFile(path) as fh:
        fh.write(text)
