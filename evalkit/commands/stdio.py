"""The process's standard streams as the `evalkit` executable sets them up: a closed one is held
by /dev/null, and a failed write to stdout is one line, never a traceback.

- A standard descriptor (0, 1, 2) that is closed at start is opened on /dev/null the wrong way
  round (stdin for writing, stdout and stderr for reading): the next file evalkit opens cannot
  take its number and receive stray output, and using it fails instead of reading or writing
  nothing.
- ``sys.stdout`` is rebuilt on a :class:`GuardedStdout`, whose write errors are
  :class:`StdoutError`: told apart from an output file's error, so the message can say "stdout". The reader of a pipe
  going away (``evalkit score ... | head -1``) ends the command quietly with
  ``EXIT_BROKEN_PIPE``, as a filter killed by SIGPIPE would; any other failure (a full disk,
  ``>&-``) is ``error: cannot write to stdout: ...`` and exit 1.

Only the executable (:func:`evalkit.cli.main`) installs this; click's test runner and library
callers keep their own streams.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import NoReturn

from evalkit.commands.exitcodes import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE

_closed_at_start: set[int] = set()


class StdoutError(Exception):
    """A write to stdout failed; ``cause`` is the OSError."""

    def __init__(self, cause: OSError):
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class GuardedStdout(io.FileIO):
    """The file descriptor under ``sys.stdout`` whose OSErrors are :class:`StdoutError`: at the
    bottom, so that text written to ``sys.stdout`` and bytes to ``sys.stdout.buffer`` are both
    guarded, and the text layer above stays the C one."""

    def write(self, data) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            raise StdoutError(exc) from None


def _hold_closed_descriptors() -> None:
    for fd, flags in ((0, os.O_WRONLY), (1, os.O_RDONLY), (2, os.O_RDONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        held = os.open(os.devnull, flags)
        if held != fd:  # the lowest free number is this one unless a lower one is closed too
            os.dup2(held, fd)
            os.close(held)
        _closed_at_start.add(fd)


def install() -> None:
    """Hold closed standard descriptors and guard stdout (once, at the start of the executable)."""
    _hold_closed_descriptors()
    old = sys.stdout
    if isinstance(getattr(getattr(old, "buffer", None), "raw", None), GuardedStdout):
        return
    if old is None:  # closed at start: every write fails, and says so
        settings = {"encoding": "utf-8", "errors": "strict", "line_buffering": False, "write_through": False}
    else:
        try:
            settings = {
                "encoding": old.encoding,
                "errors": old.errors,
                "line_buffering": old.line_buffering,
                "write_through": old.write_through,
            }
            old.flush()
        except (AttributeError, ValueError, OSError):
            return  # not a plain text stream (embedded, replaced): left as it is
    # a new stack on descriptor 1 (the old one is left unused, so its buffer holds nothing)
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(GuardedStdout(1, "w", closefd=False)), **settings)


def stdout_failed(exc: StdoutError) -> NoReturn:
    """End the process for a failed stdout write: quietly for a closed pipe, else one line."""
    try:  # what is still buffered goes nowhere, so that the exit's own flush cannot fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    cause = exc.cause
    if cause.errno == errno.EPIPE:
        sys.exit(EXIT_BROKEN_PIPE)
    reason = "it is closed" if cause.errno == errno.EBADF and 1 in _closed_at_start else (cause.strerror or str(cause))
    if sys.stderr is not None:
        try:
            sys.stderr.write(f"error: cannot write to stdout: {reason}\n")
            sys.stderr.flush()
        except OSError:
            pass
    sys.exit(EXIT_BAD_INPUT)
