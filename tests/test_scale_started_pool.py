"""A pool started ahead (evalkit.engines.local.started_pool, local_engine.workers_ahead): its workers load
the scorer while the parent still prepares, map_local takes it instead of forking another, and a
pool nobody took is stopped when the block ends, whatever ends it."""

from __future__ import annotations

import os
import threading

import pytest

from evalkit.engines import local as local_engine
from evalkit.engines.local import map_local, started_pool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        "fork" not in __import__("multiprocessing").get_all_start_methods(), reason="workers are forked only on POSIX"
    ),
]


def _mark(directory: str) -> None:
    with open(os.path.join(directory, f"preloaded-{os.getpid()}"), "w"):
        pass


def double(batch: list[int]) -> list[tuple[int, int]]:
    return [(x * 2, os.getpid()) for x in batch]


@pytest.fixture
def no_threads(monkeypatch):
    """Workers forked, as in a command's process (which has no other thread when it starts them),
    even where an earlier test's pool thread is still winding down here."""
    import multiprocessing

    monkeypatch.setattr(local_engine, "_context", lambda: multiprocessing.get_context("fork"))


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has exited and been reaped (the pool's own thread may be the one
    that reaps it, a moment after ``_stop`` returned)."""
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


def preloader(tmp_path):
    from functools import partial

    return partial(_mark, str(tmp_path))


def test_map_local_takes_the_started_pool_and_its_workers_preloaded(tmp_path, no_threads):
    with started_pool(2, preloader(tmp_path)):
        pool = local_engine._started[2]
        results = list(map_local(double, range(200), 2, 16))
        assert local_engine._started[2] is pool  # given back to the block once done, for map_in_pool
        procs = list(pool._processes.values())
    assert [r for r, _ in results] == [x * 2 for x in range(200)]
    ran = {pid for _, pid in results}
    preloaded = {int(p.name.split("-")[1]) for p in tmp_path.glob("preloaded-*")}
    assert ran <= preloaded and len(preloaded) == 2  # the work ran in the started workers, every one preloaded
    assert 2 not in local_engine._started and all(gone(p.pid) for p in procs)  # stopped when the block ended


def test_map_in_pool_runs_in_the_started_workers_else_here(tmp_path, no_threads):
    with started_pool(2, preloader(tmp_path)):
        list(map_local(double, range(200), 2, 16))
        out = local_engine.map_in_pool(2, double, [[1], [2]])
        assert [x for [(x, _)] in out] == [2, 4] and os.getpid() not in {pid for [(_, pid)] in out}
    assert local_engine.map_in_pool(2, double, [[1]]) == [[(2, os.getpid())]]


def test_a_started_pool_nobody_takes_is_stopped_when_the_block_ends(tmp_path, no_threads):
    with started_pool(2, preloader(tmp_path)):
        pool = local_engine._started[2]
        procs = list(pool._processes.values())
    assert 2 not in local_engine._started
    assert len(procs) == 2 and all(gone(p.pid) for p in procs)


def test_a_started_pool_is_stopped_when_the_block_fails(tmp_path, no_threads):
    with pytest.raises(KeyboardInterrupt):
        with started_pool(2, preloader(tmp_path)):
            procs = list(local_engine._started[2]._processes.values())
            raise KeyboardInterrupt
    assert len(procs) == 2 and all(gone(p.pid) for p in procs) and 2 not in local_engine._started


def test_one_worker_starts_no_pool(tmp_path):
    with started_pool(1, preloader(tmp_path)):
        assert 1 not in local_engine._started
    assert not list(tmp_path.glob("preloaded-*"))


def test_no_pool_is_started_ahead_where_workers_would_come_from_a_fork_server(tmp_path):
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with started_pool(2, preloader(tmp_path)):
            assert 2 not in local_engine._started
    finally:
        stop.set()
        thread.join()


@pytest.mark.parametrize(
    "files, workers, engine",
    [(local_engine.POOL_FILES, 2, "local"), (1000, 1, "local"), (1000, 2, "ray")],
    ids=["no more files than one process scores alone", "one worker", "another engine"],
)
def test_workers_started_starts_nothing_for(files, workers, engine, no_threads):
    with local_engine.workers_ahead([f"f{i}.jsonl" for i in range(files)], workers, engine):
        assert not local_engine._started


def test_workers_started_for_a_pools_worth_of_files(no_threads):
    with local_engine.workers_ahead([f"f{i}.jsonl" for i in range(local_engine.POOL_FILES + 1)], 2):
        assert 2 in local_engine._started
    assert not local_engine._started


INHERITS = """
import sys
from evalkit.engines.local import map_local, workers_ahead

def loaded(batch):
    return [("pyarrow" in sys.modules, "pyarrow.parquet" in sys.modules) for _ in batch]

with workers_ahead([f"f{i}" for i in range(100)], 2, parquet=sys.argv[1] == "yes"):
    got = set(map_local(loaded, range(100), 2, 10))
print(sorted(got), "pyarrow" in sys.modules)
"""


@pytest.mark.parametrize("parquet", [True, False])
def test_a_parquet_run_loads_pyarrow_once_for_its_workers_to_inherit(parquet):
    """With --parquet the parent imports pyarrow before forking (it writes Parquet anyway), so each
    worker does not import it again (≈ 0.25 s each); without, nobody loads it."""
    pytest.importorskip("pyarrow")
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", INHERITS, "yes" if parquet else "no"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ([f"[({parquet},", f"{parquet})]", str(parquet)])


def test_the_aggregates_models_are_worked_out_in_the_started_workers_with_the_same_result(no_threads, monkeypatch):
    from functools import partial

    from evalkit.aggregate import groups
    from evalkit.aggregate.groups import Aggregator, RunSummary

    agg = Aggregator()
    for i in range(120):  # three models over five scenarios, one scenario id with two contents
        passed, scalar = i % 3 != 0, (i % 7) / 7
        run = RunSummary(f"s{i % 5}", f"m{i % 3}", "scored", scalar, scalar, None, scalar, passed, i % 11 == 0)
        run.run_id, run.scenario_hash = f"r{i}", "h2" if i % 10 == 4 else "h1"
        agg.add(run)
    here = agg.result()
    with started_pool(2):  # the workers forked before the patch below: theirs is the real rollup
        monkeypatch.setattr(groups, "_rollup", lambda *args: {})
        in_pool = agg.result(map_models=partial(local_engine.map_in_pool, 2))
    assert in_pool == here  # worked out in the workers
    assert [g["scenario_id"] for g in here["groups"]][:4] == ["s0", "s0", "s0", "s1"]
    assert agg.result()["models"] == [{}, {}, {}]  # here: the patched one
