"""Engines that score many files: in this process, in a local process pool, or on a Ray cluster.

>>> from evalkit.engines import ScoreJob, score_files
>>> for scored in score_files(["runs/"], ScoreJob(output_format="jsonl"), workers=2):
...     print(scored.text or scored.error, end="")  # doctest: +SKIP  (scored.parts: the same text in pieces)

Every engine yields one ``Scored`` per file, in the order the files were named (directories
sorted), with the same content: output is byte-identical whatever the engine and worker count. A
batched job (``ScoreJob(batched=True)``, what ``evalkit score`` runs) yields one ``ScoredBatch``
per batch of files instead: the same files in the same order, as columns, with the batch's
finished bytes.
``ray`` is imported only by the ray engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from evalkit.engines.job import Scored, ScoredBatch, ScoreJob, Source
from evalkit.engines.local import default_workers, score_local
from evalkit.engines.sources import STDIN, expand
from evalkit.engines.spool import Spool

ENGINES = ("local", "ray")

__all__ = ["ENGINES", "ScoreJob", "Scored", "default_workers", "score_files", "sources_of"]


def sources_of(paths: Iterable[str | Path], warn: Callable[[str], None] | None = None) -> Iterator[Source]:
    """The files to score; standard input is read here, in the parent, and passed on as bytes, up to
    the size limit of :mod:`evalkit.trajectory.input_files` (over it, the error is passed on instead: it is
    reported as that input's error, and the other files are still scored). Every path is expanded
    first, so what the directory searches skip is told to ``warn`` before any file's own warnings,
    whatever the engine and however far ahead it reads."""
    yield from _read_stdin(list(expand(paths, warn)))


def _read_stdin(names: list[str]) -> Iterator[Source]:
    from evalkit.errors import InputError
    from evalkit.trajectory.input_files import read_bytes

    for name in names:
        if name == STDIN:
            try:
                data: bytes | InputError = read_bytes(STDIN)
            except InputError as exc:
                data = exc
            yield ("<stdin>", data)
        else:
            yield name


def score_files(
    paths: Iterable[str | Path],
    job: ScoreJob,
    *,
    engine: str = "local",
    workers: int = 1,
    ray_address: str | None = None,
    warn: Callable[[str], None] | None = None,
    spool: Spool | None = None,
) -> Iterator[Scored] | Iterator[ScoredBatch]:
    """Score the files under ``paths`` with an engine; results in input order (one ``ScoredBatch``
    per batch for a batched job). ``warn`` receives
    one line per entry a directory search skipped (each file's own warnings are in its ``Scored``).
    ``spool``: where a local pool's workers, or Ray tasks on this node, may leave a batched job's
    bytes (see :func:`evalkit.engines.local.score_local`)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    return _score(paths, job, engine, workers, ray_address, warn, spool)


def _score(paths, job, engine, workers, ray_address, warn, spool) -> Iterator[Scored] | Iterator[ScoredBatch]:
    names = list(expand(paths, warn))  # on the first result asked for, as sources_of: the count sizes the batches
    if engine == "local":
        yield from score_local(job, _read_stdin(names), workers, spool=spool, total=len(names))
        return
    from evalkit.engines.ray_engine import score_ray

    yield from score_ray(job, _read_stdin(names), address=ray_address, spool=spool, total=len(names))
