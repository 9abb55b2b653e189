"""Finished pieces handed over in files: a worker of the local pool writes a batch's output bytes,
staging database and Arrow IPC into a file of its own in a private directory and sends only the
file's name and size; the parent copies the bytes to its output with ``os.sendfile`` (the kernel
copies, nothing is decoded or held in this process), or reads them once.

Through the pool's result pipe the same bytes cost the parent a read into a growing buffer, a copy
out of it and another while unpickling (≈ 20 µs per file of jsonl output here), all in the one
serial process every worker waits on.

The directory (``evalkit-spool-PID-*`` in the system's temporary directory, mode 0700, never
beside the user's files) is made when the pool starts and removed, with whatever is left in it,
when scoring ends, fails or is interrupted (:meth:`Spool.close`); the parent deletes each file as
soon as it has opened it. A ``kill -9`` of the parent leaves the directory with at most the files
of the batches in flight; a later run removes it (:func:`sweep`). Only on POSIX: elsewhere an open
file cannot be deleted, and the pieces go through the pipe.
"""

from __future__ import annotations

import itertools
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

_names = itertools.count()


def can_spool() -> bool:
    return os.name == "posix" and hasattr(os, "sendfile")


@dataclass(slots=True)
class Spooled:
    """Bytes a worker left in ``path`` (``size`` of them) for the parent to take once."""

    path: str
    size: int

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDONLY)
        os.unlink(self.path)  # taken: the file lives on only while it is open
        return fd

    def read(self) -> bytes:
        fd = self._open()
        try:
            with open(fd, "rb", buffering=0, closefd=False) as fh:
                data = fh.read()
        finally:
            os.close(fd)
        if len(data) != self.size:
            raise OSError(f"{self.path}: a spooled piece holds {len(data)} bytes, not {self.size}")
        return data

    def mapped(self) -> mmap.mmap | bytes:
        """The bytes mapped into memory, read only (what Arrow reads without copying); the mapping
        outlives the file."""
        fd = self._open()
        try:
            return mmap.mmap(fd, self.size, prot=mmap.PROT_READ) if self.size else b""
        finally:
            os.close(fd)

    def copy_to(self, out: BinaryIO) -> None:
        """Write the bytes to the binary stream ``out`` (flushed first): with ``os.sendfile`` into its
        file descriptor, or, where that is refused (no descriptor, O_APPEND, a terminal, an error),
        through ``out.write`` from where sendfile stopped, so a real write error is raised as
        ``out`` raises it."""
        fd = self._open()
        try:
            sent = 0
            try:
                out.flush()
                target = out.fileno()
                while sent < self.size:
                    n = os.sendfile(target, fd, sent, self.size - sent)
                    if n == 0:
                        break
                    sent += n
            except (OSError, ValueError):  # io.UnsupportedOperation is both
                pass
            if sent < self.size:
                with open(fd, "rb", buffering=0, closefd=False) as fh:
                    fh.seek(sent)
                    rest = fh.read()
                if len(rest) != self.size - sent:
                    raise OSError(f"{self.path}: a spooled piece holds {sent + len(rest)} bytes, not {self.size}")
                out.write(rest)
        finally:
            os.close(fd)


def spool_text(directory: str, texts: Iterable[str], encoding: str) -> Spooled | None:
    """The concatenation of ``texts`` encoded in ``encoding``, written into a new file of
    ``directory`` piece by piece (a worker's side): the same bytes as encoding the joined text,
    without holding the joined text or its bytes (a batch's output is megabytes, which the
    allocator would map and unmap again for each batch). None, and no file, when a text cannot be
    encoded: the caller sends the text as it is."""
    import codecs

    path = os.path.join(directory, f"{os.getpid()}-{next(_names)}")
    encode = codecs.getincrementalencoder(encoding)().encode  # one stream: a BOM or a shift state once
    size = 0
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as fh:
        try:
            for text in texts:
                size += fh.write(encode(text))
            size += fh.write(encode("", True))
        except UnicodeEncodeError:
            fh.close()
            os.unlink(path)
            return None
    return Spooled(path, size)


def spool_bytes(directory: str, data: bytes) -> Spooled:
    """``data`` in a new file of ``directory`` (a worker's side)."""
    path = os.path.join(directory, f"{os.getpid()}-{next(_names)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return Spooled(path, len(data))


PREFIX = "evalkit-spool-"
STALE_S = 3600.0  # a directory untouched this long whose process is gone was left by a kill -9


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's, or cannot tell: kept
        return True
    return True


def sweep(directory: str, now: float | None = None) -> None:
    """Remove the spool directories in ``directory`` that runs killed with ``kill -9`` left: ours
    (same user), named for a process that no longer exists, untouched for ``STALE_S`` (a live run
    touches its directory with every batch, and the age keeps a run whose pid another pid namespace
    reuses safe)."""
    import time

    now = time.time() if now is None else now
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(PREFIX)]
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(PREFIX) :].split("-", 1)[0]
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (
            pid.isdigit()
            and entry.is_dir(follow_symlinks=False)
            and st.st_uid == os.getuid()
            and now - st.st_mtime > STALE_S
            and not _alive(int(pid))
        ):
            shutil.rmtree(entry.path, ignore_errors=True)


class Spool:
    """The private directory of one scoring run's spooled pieces, made on first use (the stale
    ones of killed runs swept then)."""

    def __init__(self) -> None:
        self._path: str | None = None

    @property
    def path(self) -> str:
        if self._path is None:
            sweep(tempfile.gettempdir())
            self._path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
        return self._path

    def close(self) -> None:
        """Remove the directory and whatever is left in it (the workers must have stopped)."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None
