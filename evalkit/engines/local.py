"""The local engine: score batches of files in a pool of worker processes, results in input order.

At most ``workers × IN_FLIGHT_PER_WORKER`` batches are submitted and not yet consumed, so memory is
bounded however many files there are and however slow the consumer (the database writer) is.
Processes are forked when the parent has no other thread (fast: nothing to import again), started by
a fork server otherwise (forking a threaded process can deadlock).
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from itertools import chain, islice

from evalkit.engines.job import ScoreJob, Scored, Source, score_batch

BATCH_FILES = 32  # per task: fewer, larger messages cost the parent less
IN_FLIGHT_PER_WORKER = 4


def default_workers() -> int:
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def batches(sources: Iterable[Source], size: int) -> Iterator[list[Source]]:
    it = iter(sources)
    while chunk := list(islice(it, size)):
        yield chunk


def _context():
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def score_local(job: ScoreJob, sources: Iterable[Source], workers: int, batch_files: int | None = None) -> Iterator[Scored]:
    """Score every source, in order. One worker, or no more files than one batch, scores in this
    process (a pool would cost more than it saves)."""
    batch_files = batch_files or BATCH_FILES
    it = iter(sources)
    head = list(islice(it, batch_files + 1)) if workers > 1 else []
    if workers <= 1 or len(head) <= batch_files:
        for source in chain(head, it):
            yield from score_batch(job, [source])
        return
    sources = chain(head, it)
    work = partial(score_batch, job)
    limit = workers * IN_FLIGHT_PER_WORKER
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        pending: deque[Future] = deque()
        try:
            for chunk in batches(sources, batch_files):
                pending.append(pool.submit(work, chunk))
                if len(pending) >= limit:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        finally:
            for future in pending:  # the consumer stopped early (an error, Ctrl-C): drop queued work
                future.cancel()
