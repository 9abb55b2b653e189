"""What `evalkit score` says on stderr while it works: a progress line on a terminal, warnings
grouped by kind, and one summary line at the end.

Rules (the summary is for people; scripts read exit codes and stdout):

- The progress line (``scored 1,200/3,000 files · 410 files/s · 0:03 elapsed · ETA 0:04``) is
  drawn over itself with ``\\r`` at most five times a second, only when stderr is a terminal and
  there are more than ``PROGRESS_MIN_FILES`` files (``--progress`` forces it, ``--no-progress``
  turns it off). It is erased before any other line is written, so it never mixes with them.
- Warnings are grouped by kind (the words after ``warning:`` up to the first quote, colon,
  digit, parenthesis or bracket: "run_id", "dropped a half-written last line",
  "scenario.ground_truth.gated_actions", ...). The first ``PER_KIND`` of each kind are
  printed as they come; the rest are counted, and the summary line says how many of each kind were
  left out (``-v`` prints every one). Errors (a file that could not be scored) are always printed.
- The summary line (files, runs, warnings by kind, where the database is) is printed on a terminal,
  or whenever warnings were left out, so a long run in a pipe still says what it did not print.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Callable

PROGRESS_MIN_FILES = 300
PER_KIND = 20
_EVERY_S = 0.2
_KIND = re.compile(r"warning: (?:skipped: )?([^'\"\d:([]+)")


def warning_kind(line: str) -> str | None:
    """The kind of a warning line (None: not a warning, e.g. an error line)."""
    m = _KIND.search(line)
    return " ".join(m.group(1).split()[:6]) if m else None


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class StderrDigest:
    """Progress and warnings of one `evalkit score` run, written through ``echo`` (one sanitized
    line to stderr) and ``raw`` (text without a newline, for the progress line)."""

    def __init__(
        self,
        total: int,
        *,
        echo: Callable[[str], None],
        raw: Callable[[str], None] | None = None,
        progress: bool | None = None,
        verbose: bool = False,
        is_tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.echo, self.raw, self.verbose, self.clock = total, echo, raw, verbose, clock
        self.tty = sys.stderr.isatty() if is_tty is None else is_tty
        self.progress = (self.tty and total > PROGRESS_MIN_FILES) if progress is None else progress
        self.start = clock()
        self.done = 0
        self._drawn = 0.0
        self._shown = False
        self.kinds: Counter[str] = Counter()
        self.left_out: Counter[str] = Counter()

    def warn(self, line: str) -> None:
        kind = warning_kind(line)
        if kind is not None:
            self.kinds[kind] += 1
            if not self.verbose and self.kinds[kind] > PER_KIND:
                self.left_out[kind] += 1
                return
        self._erase()
        self.echo(line)

    def file_done(self, n: int = 1) -> None:
        self.done += n
        if not self.progress or self.raw is None:
            return
        now = self.clock()
        if now - self._drawn < _EVERY_S and self.done < self.total:
            return
        self._drawn = now
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        self.raw(
            f"\rscored {self.done:,}/{self.total:,} files · {rate:,.0f} files/s · {_clock(elapsed)} elapsed"
            f" · ETA {_clock(eta)}\x1b[K"
        )
        self._shown = True

    def _erase(self) -> None:
        if self._shown and self.raw is not None:
            self.raw("\r\x1b[K")
            self._shown = False

    def summary(self, *, runs: int, errors: int, database: str | None) -> str | None:
        """The closing line, or None when nothing calls for it (not a terminal, nothing left out)."""
        self._erase()
        if not (self.tty or self.left_out):
            return None
        parts = [f"{self.done:,} files", f"{runs:,} runs scored"]
        if errors:
            parts.append(f"{errors:,} could not be scored")
        warned = sum(self.kinds.values())
        if warned:
            by_kind = ", ".join(
                f"{n:,} {kind}" for kind, n in sorted(self.kinds.items(), key=lambda kv: (-kv[1], kv[0]))
            )
            parts.append(f"{warned:,} warnings ({by_kind})")
        if self.left_out:
            parts.append(f"{sum(self.left_out.values()):,} of them not printed (-v prints all)")
        parts.append(f"database {database}" if database else "no database")
        return "score: " + "; ".join(parts)
