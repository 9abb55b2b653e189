"""The Ray engine: batches of files scored as Ray tasks, results streamed back in input order.

``address`` (``--ray-address``) names the cluster to join; without it Ray reads ``RAY_ADDRESS``,
and without that it starts a local cluster for this run (and stops it at the end). If this process
already called ``ray.init``, that connection is used and left open. Every worker scores with the
same ``score_batch`` as the local engine, so the output is byte-identical.

Inputs must be readable where the tasks run: URLs (``s3://``, ``gs://``; fsspec and its driver
installed on the workers), or paths every node sees (a shared file system). Relative paths are
resolved in the driver's working directory when the worker has it. Standard input is read by the
driver and sent with the task. At most ``IN_FLIGHT_PER_CPU`` batches per cluster CPU are pending,
so the driver's memory stays bounded. Tasks on the driver's own node leave their pieces' bytes in
the run's spool directory (:mod:`evalkit.engines.spool`), as the local pool's workers do; tasks on
other nodes send them.
"""

from __future__ import annotations

import importlib.util
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import replace

from evalkit.engines.job import ScoredBatch, ScoreJob, Source, score_batch
from evalkit.engines.local import BATCH_FILES, guided_batches
from evalkit.engines.spool import Spool

IN_FLIGHT_PER_CPU = 4


def ray_problem() -> str | None:
    """Why the Ray engine cannot run here, or None."""
    if importlib.util.find_spec("ray") is None:
        return "--engine ray needs Ray: pip install 'evalkit[ray]'"
    return None


def _batch_in(cwd: str, job: ScoreJob, sources: list[Source], node: str | None = None) -> list[ScoredBatch]:
    if os.path.isdir(cwd) and os.getcwd() != cwd:
        os.chdir(cwd)  # a worker process serves one task at a time; relative paths mean the driver's
    if job.spool is not None and _node() != node:  # the driver's spool is on its own machine only
        job = replace(job, spool=None)
    return score_batch(job, sources)


def _node() -> str | None:
    import ray

    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:  # an older Ray, or none: the pieces go as bytes
        return None


def score_ray(
    job: ScoreJob,
    sources: Iterable[Source],
    address: str | None = None,
    batch_files: int = BATCH_FILES,
    spool: Spool | None = None,
    total: int | None = None,
) -> Iterator[ScoredBatch]:
    """Score every source as Ray tasks, in order (``total``: how many, when known, for batches that
    shrink toward the end, as the local pool's). With ``spool``, the tasks that run on
    the driver's node leave their pieces' bytes in its directory (as the local pool's workers do);
    the others send them."""
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        started = True
    try:
        task = ray.remote(_batch_in)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        limit = cpus * IN_FLIGHT_PER_CPU
        cwd = os.getcwd()
        node = _node()
        if spool is not None and node is not None:
            job = replace(job, spool=spool.path)
        job_ref = ray.put(job)
        pending: deque = deque()
        for chunk in guided_batches(sources, batch_files, cpus, total):
            pending.append(task.remote(cwd, job_ref, chunk, node))
            if len(pending) >= limit:
                yield from ray.get(pending.popleft())
        while pending:
            yield from ray.get(pending.popleft())
    finally:
        if started:
            ray.shutdown()
