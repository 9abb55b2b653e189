"""The local engine: batches of files handled in a pool of worker processes, results in input order.

:func:`map_local` is the pool (``evalkit score`` and ``evalkit import`` both run on it); at most
``workers × IN_FLIGHT_PER_WORKER`` batches are submitted and not yet consumed, so memory is bounded
however many files there are and however slow the consumer (the database or file writer) is.
Processes are forked when the parent has no other thread (fast: nothing to import again), started by
a fork server otherwise (forking a threaded process can deadlock).
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from itertools import chain, islice
from typing import TypeVar

from evalkit.engines.job import ScoreJob, Scored, Source, score_batch

BATCH_FILES = 32  # per task: fewer, larger messages cost the parent less
IN_FLIGHT_PER_WORKER = 4

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _context():
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def map_local(work: Callable[[list[T]], list[R]], items: Iterable[T], workers: int, batch_size: int) -> Iterator[R]:
    """``work`` applied to ``items`` in batches of ``batch_size``, results in input order, in a pool of
    ``workers`` processes. ``work`` maps a batch to one result per item and must be picklable (a
    module-level function, or a ``functools.partial`` of one). One worker, or no more items than one
    batch, runs in this process, one item at a time (a pool would cost more than it saves)."""
    it = iter(items)
    head = list(islice(it, batch_size + 1)) if workers > 1 else []
    if workers <= 1 or len(head) <= batch_size:
        for item in chain(head, it):
            yield from work([item])
        return
    items = chain(head, it)
    limit = workers * IN_FLIGHT_PER_WORKER
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        pending: deque[Future] = deque()
        try:
            for chunk in batches(items, batch_size):
                pending.append(pool.submit(work, chunk))
                if len(pending) >= limit:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        finally:
            for future in pending:  # the consumer stopped early (an error, Ctrl-C): drop queued work
                future.cancel()


def score_local(job: ScoreJob, sources: Iterable[Source], workers: int, batch_files: int | None = None) -> Iterator[Scored]:
    """Score every source, in order (see :func:`map_local`)."""
    return map_local(partial(score_batch, job), sources, workers, batch_files or BATCH_FILES)
