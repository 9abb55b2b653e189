"""Opening input files safely: only regular files, never more than a size limit.

A FIFO would block a reader forever and ``/dev/zero`` would fill memory, so anything that is not a
regular file (after following symlinks) is an error naming it. A file larger than the limit is an
error before any byte is read. The limit is ``DEFAULT_MAX_BYTES`` (1 GiB), overridden by the
environment variable ``EVALKIT_MAX_FILE_BYTES`` (a number of bytes) or the ``max_bytes`` argument.
Standard input (``-``) and URLs are read up to the same limit.
"""
from __future__ import annotations

import os
import stat
import sys
from typing import BinaryIO

from evalkit.errors import InputError

DEFAULT_MAX_BYTES = 1 << 30
ENV_MAX_BYTES = "EVALKIT_MAX_FILE_BYTES"
STDIN = "-"


def max_file_bytes() -> int:
    raw = os.environ.get(ENV_MAX_BYTES)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise InputError(ENV_MAX_BYTES, None, f"must be a number of bytes, got {raw!r}") from None
    if value <= 0:
        raise InputError(ENV_MAX_BYTES, None, f"must be positive, got {value}")
    return value


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _too_big(name: str, size: int, limit: int) -> InputError:
    return InputError(name, None, f"file is larger than the {limit}-byte limit ({size} bytes; set {ENV_MAX_BYTES} to raise it)")


def _stream_too_big(name: str, limit: int) -> InputError:
    """A stream read up to one byte past the limit: its full size is not known."""
    return InputError(name, None, f"larger than the {limit}-byte limit (set {ENV_MAX_BYTES} to raise it)")


def read_stream(name: str, fh: BinaryIO, max_bytes: int | None = None) -> bytes:
    """All of an open stream (standard input, a URL), within the size limit."""
    limit = max_file_bytes() if max_bytes is None else max_bytes
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise _stream_too_big(name, limit)
    return data


def open_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> tuple[BinaryIO, int]:
    """Open a regular file for binary reading; returns (file, size). Raises InputError otherwise.

    The check is made on the opened descriptor (``O_NONBLOCK`` so opening a FIFO cannot block), so a
    file swapped between check and read is still caught."""
    name = str(path)
    limit = max_file_bytes() if max_bytes is None else max_bytes
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(name, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(name, None, f"cannot read: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise _too_big(name, st.st_size, limit)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file (``-``: standard input), within the size limit."""
    name = str(path)
    limit = max_file_bytes() if max_bytes is None else max_bytes
    if name == STDIN:
        return read_stream("<stdin>", sys.stdin.buffer, limit)
    fh, _ = open_regular(name, limit)
    with fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(name, None, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:  # it grew while we read
        raise _too_big(name, len(data), limit)
    return data


def read_text(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """A regular file as UTF-8 text (a leading BOM dropped); bad UTF-8 names the line."""
    name = str(path)
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(name, line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})") from None
