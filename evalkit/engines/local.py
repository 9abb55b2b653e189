"""The local engine: batches of files handled in a pool of worker processes, results in input order.

:func:`map_local` is the pool (``evalkit score`` and ``evalkit import`` both run on it); at most
``workers × IN_FLIGHT_PER_WORKER`` batches are submitted and not yet consumed, so memory is bounded
however many files there are and however slow the consumer (the database or file writer) is.
Processes are forked when the parent has no other thread (fast: nothing to import again), started by
a fork server otherwise (forking a threaded process can deadlock).

Workers never outlive the parent: on Linux the kernel kills them when the process that made them
dies (``PR_SET_PDEATHSIG``), elsewhere a thread in each worker exits once its parent is gone. They
ignore Ctrl-C, which the parent alone handles: when the consumer stops early (Ctrl-C, an error), the
queued batches are dropped, the running ones get ``STOP_GRACE_S`` to finish, then are terminated.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from itertools import chain, islice
from typing import TYPE_CHECKING, TypeVar

from evalkit.engines.job import ScoredBatch, ScoreJob, Source, preload, score_batch

if TYPE_CHECKING:
    from evalkit.engines.spool import Spool

# Files per task, at most: the parent pays ≈ 0.3 ms per batch whatever its size (the pool's
# thread, pipe wake-ups, an aggregate partial to merge, caches cold again after the workers ran),
# 16 → 7 µs per file from 64 to 256 files (benchmarks/bench_score.py); the batches shrink toward
# the end (guided_batches) so the workers still finish together.
BATCH_FILES = 256
SMALLEST_BATCH = 16
POOL_FILES = 64  # no more files than this: scored in this process, a pool would cost more than it saves
# in this process, files are scored this many at a time: a batch's fixed cost (its pieces, its aggregate
# partial merged) is shared by them, while output and progress still come every few milliseconds
LOCAL_FILES = 16
IN_FLIGHT_PER_WORKER = 4
STOP_GRACE_S = 2.0
WORKER_GC_YOUNG = 7000  # a pool worker's first garbage-collection threshold (_init_worker)
WORKER_KEEP_FREED = 64 << 20  # bytes of freed heap a pool worker keeps for its next batch (_keep_freed_memory)
WATCH_PARENT_S = 0.25  # how often a worker without a parent-death signal looks for its parent

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


def guided_batches(items: Iterable[T], size: int, workers: int, total: int | None) -> Iterator[list[T]]:
    """Batches of at most ``size`` items; when the ``total`` is known, each takes at most
    1 / (2 × workers) of what is left (not under ``SMALLEST_BATCH``), so the batches shrink toward
    the end and no worker is left alone with a large last one (guided self-scheduling). The
    batches never change the output: every engine writes the same bytes whatever their sizes."""
    if total is None:
        yield from batches(items, size)
        return
    it = iter(items)
    left = total
    while True:
        want = min(size, max(SMALLEST_BATCH, -(-left // (2 * workers))))
        chunk = list(islice(it, want))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _context():
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _libc():
    """This process's C library through ctypes, on Linux; None elsewhere or where it cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _kill_me_with_parent() -> bool:
    """Ask Linux to SIGKILL this process when its parent thread dies; False where it cannot."""
    pr_set_pdeathsig = 1
    prctl = getattr(_libc(), "prctl", None)
    return prctl is not None and prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0


def _keep_freed_memory() -> bool:
    """Ask glibc's allocator to keep up to ``WORKER_KEEP_FREED`` bytes of freed heap in this process
    rather than hand them back to the kernel as soon as 128 KiB are free at the top: a worker frees
    most of what a batch used and needs as much for the next one, which the kernel would otherwise
    give back a page fault at a time. False where the allocator is not glibc's."""
    m_trim_threshold = -1
    mallopt = getattr(_libc(), "mallopt", None)
    return mallopt is not None and mallopt(m_trim_threshold, WORKER_KEEP_FREED) == 1


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_PARENT_S)
    os._exit(1)


def _watch_owner(owner: int) -> None:
    """Exit once ``owner`` (the process that runs the pool) has. A fork server's worker needs it: the
    fork server outlives its clients while any worker holds the pipe CPython gives each of them, so
    its death, and the parent-death signal with it, never come while the workers wait for work."""
    try:
        handle = os.pidfd_open(owner)
    except (AttributeError, OSError):  # no pidfd (not Linux >= 5.3): look for it
        while _alive(owner):
            time.sleep(WATCH_PARENT_S)
    else:
        import select

        select.select([handle], [], [])  # readable once the process has exited
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, someone else's
        return True
    return True


def _init_worker(owner: int, owner_is_parent: bool, death_signal_holds: bool, preload: Callable | None = None) -> None:
    """Pool initializer: Ctrl-C is the parent's to handle, and this process dies with the parent.

    ``owner`` is the pid of the process that runs the pool, ``owner_is_parent`` whether it started
    this process (else a fork server did), ``death_signal_holds`` whether the thread that started this
    worker lives as long as its process (the kernel's signal follows the thread, not the process):
    a fork server's, or the main thread that forked it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # discards a Ctrl-C that arrived since the fork too
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    parent = os.getppid()
    if not (death_signal_holds and _kill_me_with_parent()):
        threading.Thread(target=_watch_parent, args=(parent,), name="evalkit-watch-parent", daemon=True).start()
    if not owner_is_parent:
        threading.Thread(target=_watch_owner, args=(owner,), name="evalkit-watch-owner", daemon=True).start()
    # the parent may have died before the signal was armed (this process is then someone else's)
    if (owner_is_parent and os.getppid() != owner) or not _alive(owner):
        os._exit(1)
    _keep_freed_memory()
    if preload is not None:
        preload()
    # The modules loaded so far live as long as the worker: frozen, no collection walks them (nor
    # writes into their pages, shared with the parent). A file's objects are freed by reference
    # counting; collecting every WORKER_GC_YOUNG allocations rather than 700 walks the older
    # generations, where the notes kept from batch to batch for every scenario live, a tenth as often.
    import gc

    gc.freeze()
    gc.set_threshold(WORKER_GC_YOUNG, *gc.get_threshold()[1:])


@contextmanager
def _sigint_blocked(block: bool):
    """Ctrl-C held back in this thread while it starts workers: they inherit the mask, so none dies
    of a KeyboardInterrupt before :func:`_init_worker` ignores it; the signal is delivered after."""
    if not block or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _stop(pool: ProcessPoolExecutor) -> None:
    """Drop the queued batches, let the running ones finish for ``STOP_GRACE_S``, terminate the rest.

    Only the pool's own thread cancels futures (``cancel_futures``): cancelling one here races that
    thread marking the pool broken, which then dies of InvalidStateError and leaves the pool hung."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # CPython's; shutdown() drops it
    manager = getattr(pool, "_executor_manager_thread", None)  # likewise
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join()
    # The pool's own thread closes its wake-up pipe as it notices the ended workers; left running,
    # it races the interpreter's exit hook writing to that pipe (an "Exception ignored" traceback).
    if manager is not None:
        manager.join(STOP_GRACE_S)


RESULT_PIPE_BYTES = 1 << 20  # Linux's default ceiling for an unprivileged process (fs/pipe-max-size)


def _widen_result_pipe(pool: ProcessPoolExecutor) -> None:
    """Let a batch's result (hundreds of KB of finished output) go through the pool's result pipe in
    one write and one read: through the default 64 KiB the parent reads it in many small pieces,
    each waking the worker blocked on the full pipe (CPython's ProcessPoolExecutor; elsewhere nothing)."""
    set_size = getattr(__import__("fcntl"), "F_SETPIPE_SZ", None) if sys.platform.startswith("linux") else None
    reader = getattr(getattr(pool, "_result_queue", None), "_reader", None)
    if set_size is None or reader is None:
        return
    import fcntl

    try:
        fcntl.fcntl(reader.fileno(), set_size, RESULT_PIPE_BYTES)
    except OSError:  # a lower ceiling, or the pipe is not one: the default size works, more slowly
        pass


def _new_pool(workers: int, preload: Callable | None = None) -> ProcessPoolExecutor:
    ctx = _context()
    method = ctx.get_start_method()
    holds = method == "forkserver" or (method == "fork" and threading.current_thread() is threading.main_thread())
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(os.getpid(), method != "forkserver", holds, preload),
    )
    _widen_result_pipe(pool)
    return pool


_started: dict[int, ProcessPoolExecutor] = {}  # workers -> a pool started ahead (started_pool)


@contextmanager
def started_pool(workers: int, preload: Callable[[], None] | None = None) -> Iterator[None]:
    """Start a pool of ``workers`` processes now, each running ``preload()`` as it starts (importing
    what its work needs), for the next :func:`map_local` of as many workers inside the block to
    take: the workers load while this process still prepares (opens outputs, imports its writers)
    instead of after its first batch is handed out, which is most of what a pool costs at start.
    A pool left untaken when the block ends is stopped. Only where workers are forked (this
    process has no other thread): a fork server starts them one task at a time anyway."""
    if workers <= 1 or workers in _started or _context().get_start_method() != "fork":
        yield
        return
    try:  # entered before the pool exists: a Ctrl-C held back while it starts lands in here, and stops it
        with _sigint_blocked(True):
            pool = _new_pool(workers, preload)
            pool.submit(os.getpid)  # forks every worker at once (the fork method starts them all on the first task)
            _started[workers] = pool
        yield
    finally:
        left = _started.pop(workers, None)
        if left is not None:
            _stop(left)


def workers_ahead(
    found: list[str], workers: int | None = None, engine: str = "local", parquet: bool = False, database: bool = True
):
    """A context in which ``evalkit.engines.pipeline.score_files`` over ``found`` with ``workers``
    finds its pool's processes already started and loading the scorer (:func:`started_pool`): a
    caller enters it as soon as the files are listed, before it loads the pipeline and opens its
    outputs (``database``: a database among them), which it then does while they load. Nothing
    is started for one worker, another engine, or no more files than one process scores alone."""
    workers = workers or default_workers()
    if engine != "local" or workers <= 1 or len(found) <= POOL_FILES:
        return nullcontext()
    if parquet:  # loaded once, here, for the workers to inherit: each would import it again (≈ 0.25 s)
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    if database:  # likewise: this process writes with it, the workers make its rows
        import evalkit.db.scores  # noqa: F401
    return started_pool(workers, preload)


def map_local(
    work: Callable[[list[T]], list[R]],
    items: Iterable[T],
    workers: int,
    batch_size: int,
    pool_work: Callable[[], Callable[[list[T]], list[R]]] | None = None,
    total: int | None = None,
    pool_items: int | None = None,
    local_batch: int = 1,
) -> Iterator[R]:
    """``work`` applied to ``items`` in batches of at most ``batch_size`` (shrinking toward the end
    when the ``total`` number of items is known: :func:`guided_batches`), results in input order,
    in a pool of ``workers`` processes. ``work`` maps a batch to its results (a list) and must be
    picklable (a module-level function, or a ``functools.partial`` of one); ``pool_work()``, when
    given, is what the pool's workers run instead (asked once, when the pool starts). One worker,
    or no more than ``pool_items`` items (default ``batch_size``), runs in this process (a pool
    would cost more than it saves), ``local_batch`` items at a time: one by default; more where
    each call of ``work`` has a fixed cost worth sharing (a batched score job's pieces and
    aggregate partial)."""
    it = iter(items)
    small = batch_size if pool_items is None else pool_items
    head = list(islice(it, small + 1)) if workers > 1 else []
    if workers <= 1 or len(head) <= small:
        rest = chain(head, it)
        while chunk := list(islice(rest, local_batch)):
            yield from work(chunk)
        return
    items = chain(head, it)
    if pool_work is not None:
        work = pool_work()
    limit = workers * IN_FLIGHT_PER_WORKER
    started = _started.pop(workers, None)
    pool = started or _new_pool(workers)
    pending: deque[Future] = deque()
    try:
        for n, chunk in enumerate(guided_batches(items, batch_size, workers, total)):
            with _sigint_blocked(n < workers):  # the pool starts a worker in each of the first submits
                pending.append(pool.submit(work, chunk))
            if len(pending) >= limit:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    except BaseException:  # Ctrl-C, an error, or the consumer stopped early (GeneratorExit)
        pending.clear()
        _stop(pool)
        raise
    if started is not None:  # back to its started_pool block, which stops it: map_in_pool may use it
        _started[workers] = pool
    else:
        pool.shutdown()


def map_in_pool(workers: int, fn: Callable[..., R], *sequences) -> list[R]:
    """``[fn(*args) for args in zip(*sequences)]``, the calls side by side in the workers of the
    pool a :func:`started_pool` block of ``workers`` still holds (their modules are loaded there,
    not here), else in this process. ``fn`` must be picklable."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _started.get(workers)
    if pool is not None:
        try:
            return list(pool.map(fn, *sequences))
        except BrokenProcessPool:  # a worker died since: its modules load here instead
            pass
    return list(map(fn, *sequences))


def score_local(
    job: ScoreJob,
    sources: Iterable[Source],
    workers: int,
    batch_files: int | None = None,
    spool: Spool | None = None,
    total: int | None = None,
) -> Iterator[ScoredBatch]:
    """Score every source, in order (see :func:`map_local`; ``total``: how many sources there are,
    when known, for batches that shrink toward the end). With ``spool``, the workers
    leave their pieces' bytes in its directory (:mod:`evalkit.engines.spool`); the caller closes it
    once it has taken them."""
    pooled = lambda: partial(score_batch, job)  # noqa: E731
    if spool is not None:
        pooled = lambda: partial(score_batch, replace(job, spool=spool.path))  # noqa: E731
    size = batch_files or BATCH_FILES
    here = partial(score_batch, replace(job, in_process=True))
    return map_local(here, sources, workers, size, pooled, total, min(size, POOL_FILES), LOCAL_FILES)
