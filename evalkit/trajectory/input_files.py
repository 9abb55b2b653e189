"""Opening input files safely: only regular files, never more than a size limit.

A FIFO would block a reader forever and ``/dev/zero`` would fill memory, so anything that is not a
regular file (after following symlinks) is an error naming it. A file larger than the limit is an
error before any byte is read. The limit is ``DEFAULT_MAX_BYTES`` (1 GiB), overridden by the
environment variable ``EVALKIT_MAX_FILE_BYTES`` (a number of bytes) or the ``max_bytes`` argument.
Standard input (``-``) and URLs are read up to the same limit.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import sys
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from evalkit.errors import InputError

DEFAULT_MAX_BYTES = 1 << 30
ENV_MAX_BYTES = "EVALKIT_MAX_FILE_BYTES"
STDIN = "-"


def shown_name(name: str) -> str:
    """``name`` as outputs show and store it. A file name that is not valid UTF-8 reaches Python
    with its bad bytes as lone surrogates (``surrogateescape``), which no UTF-8 output can encode:
    those bytes are written ``\\xNN`` instead (``bad\\xff.jsonl``), the same every run. The
    file is still opened by its real name."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file system byte gives: shown as its code point
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


def path_list(value: Any, argument: str) -> list[str | os.PathLike[str]]:
    """``value``, a collection of paths (str or os.PathLike), as a list (a list as it is). One path
    given alone is a ValueError naming ``argument``: a string would be read as its characters, and
    ``"/"`` is a search of the whole disk. So is an item that is not a path (a record, a
    Trajectory): evalkit reads files."""
    if isinstance(value, (str, bytes, os.PathLike)):
        raise ValueError(f"{argument}: give a list of paths, not one path ({argument}=[{value!r}])")
    items = value if isinstance(value, list) else list(value)
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise ValueError(f"{argument}: {type(item).__name__} is not a path (a str or pathlib.Path)")
    return items


def name_list(value: Any, argument: str) -> list[str]:
    """``value``, a collection of names (judge models, probes), as a list. One name given alone is
    a ValueError naming ``argument``: a string would be read as its characters, each a judge model
    called for every run."""
    if isinstance(value, str):
        raise ValueError(f"{argument}: give a list of names, not one name ({argument}=[{value!r}])")
    return list(value)


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
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _too_big(name: str, size: int, limit: int) -> InputError:
    return InputError(
        name, None, f"file is larger than the {limit}-byte limit ({size} bytes; set {ENV_MAX_BYTES} to raise it)"
    )


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


def not_utf8(data: bytes, at: int) -> str:
    """Why ``data`` does not decode at ``at``, naming what the file most likely is when its first
    bytes say it (gzip, zstd, zip, UTF-16)."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return f"invalid UTF-8: the file is {what}"
    return f"invalid UTF-8 (byte 0x{data[at]:02x})"


_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed (decompress it first: gunzip)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first: zstd -d)"),
    (b"PK\x03\x04", "a zip archive (extract it first)"),
    (b"\xff\xfe", "UTF-16 text (write it as UTF-8)"),
    (b"\xfe\xff", "UTF-16 text (write it as UTF-8)"),
)


def read_text(path: str | os.PathLike[str], max_bytes: int | None = None) -> str:
    """A regular file as UTF-8 text (a leading BOM dropped); bad UTF-8 names the line."""
    name = str(path)
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(name, line, not_utf8(data, exc.start)) from None


def find_files(
    root: str | os.PathLike[str], suffix: str, warn: Callable[[str], None] | None = None, exclude: Collection[str] = ()
) -> list[str]:
    """The regular files named ``*suffix`` under the directory ``root``, recursively, sorted as paths
    compare (part by part); names in ``exclude`` are left out.

    Symbolic links to files are followed; links to directories are not (a loop cannot make the
    search endless). Every other entry left out is reported through ``warn``, one line each, in
    path order: a directory that cannot be listed, a link to a directory, and an entry named
    ``*suffix`` that is not a regular file (a FIFO, socket or device, a link to nothing)."""
    found: list[tuple[tuple[str, ...], str, str | None]] = []  # (sort key, path, why it is skipped)
    todo = [Path(root)]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            found.append((folder.parts, str(folder), f"cannot list this directory ({exc.strerror or exc})"))
            continue
        # paths as strings, the sort key from the folder's parts: a Path per file cost the one
        # process that lists (the parent of a scoring pool) several µs per file
        base, parts = str(folder), folder.parts
        for entry in entries:
            name = entry.name
            path = name if base == "." else entry.path  # what str(folder / name) gives
            what = _entry_kind(entry, path, suffix)
            if what == _SEARCH:
                todo.append(folder / name)
            elif what == _READ and name not in exclude:
                found.append((parts + (name,), path, None))
            elif what not in (_READ, _IGNORE):
                found.append((parts + (name,), path, what))
    found.sort(key=lambda item: item[0])
    files = []
    for _, path, why in found:
        if why is None:
            files.append(path)
        elif warn is not None:
            warn(f"{path}: warning: skipped: {why}")
    return files


_SEARCH, _READ, _IGNORE = "search", "read", "ignore"


def _entry_kind(entry: os.DirEntry, path: str, suffix: str) -> str:
    """What :func:`find_files` does with a directory entry: search it, read it, ignore it (another
    name), or else skip it for the reason returned."""
    candidate = entry.name.endswith(suffix)
    try:
        if entry.is_dir(follow_symlinks=False):
            return _SEARCH
        if entry.is_symlink():
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                return f"a symbolic link to nothing ({exc.strerror or exc})" if candidate else _IGNORE
            if stat.S_ISDIR(mode):
                return "a symbolic link to a directory (not followed; name it to score it)"
        elif candidate:
            if entry.is_file(follow_symlinks=False):  # the listing's own type, where it gives one: no lstat
                return _READ
            mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:  # it vanished while the directory was listed
        return f"cannot examine it ({exc.strerror or exc})" if candidate else _IGNORE
    if not candidate:
        if entry.name.endswith(tuple(suffix + z for z in _COMPRESSED)):
            return "compressed (evalkit reads plain files: decompress it to score it)"
        return _IGNORE
    return _READ if stat.S_ISREG(mode) else f"{_kind(mode)}, not a regular file"


_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip")


# Appended after the text: a quoted field the file leaves open swallows it, else it is a row alone.
# A noncharacter, so no file's own row is ever exactly this.
_END = "\ufdd0"


def csv_rows(name: str, text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """The rows of a CSV text with the line each ends on; InputError for malformed CSV and for a
    quoted field still open at the end of the text (Python's csv reads it as ending there)."""
    ends_a_line = not text or text.endswith(("\n", "\r"))
    reader = csv.reader(io.StringIO(text + ("" if ends_a_line else "\n") + _END, newline=""), delimiter=delimiter)
    last = 0  # the line the previous row ended on
    try:
        for cells in reader:
            if cells == [_END]:
                return
            if cells and cells[-1].endswith(_END) and next(reader, None) is None:
                raise InputError(name, last + 1, "a quoted field is never closed (the file ends inside it: cut short?)")
            last = reader.line_num
            yield last, cells
    except csv.Error as exc:
        raise InputError(name, reader.line_num, f"malformed CSV: {exc}") from None
