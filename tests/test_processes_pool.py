"""Worker pools and the processes around them: `kill -9` of the parent leaves no worker alive, and
Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops `evalkit score` and
`evalkit import` with their workers within seconds, exit 130, one line on stderr, finished work kept.

The commands run as real processes in a session of their own, on corpora big enough to take
several seconds with two workers. The Ctrl-C trials are repeated at different moments: the failure
they guard against (a pool that hung, or died with InvalidStateError) came in some trials only.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import PLANS

from evalkit.trajectory.builders import a320_scenario, dumps_jsonl, trajectory

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCORE_FILES = 5000  # about 5 s with two workers on an idle core pair
INTERRUPT_AFTER_S = (0.0, 0.15, 0.4, 0.8, 1.3)  # after both workers started
STOP_WITHIN_S = 5.0


@pytest.fixture(scope="module")
def score_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("score-corpus")
    text = dumps_jsonl(trajectory(a320_scenario(), PLANS[0] * 6, run_id="RUN-ID", model="m"))
    for i in range(SCORE_FILES):
        (root / f"r{i:05d}.jsonl").write_text(text.replace("RUN-ID", f"run-{i:05d}"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def import_corpus(tmp_path_factory):
    """400 openai-messages files of 90 transcripts each (36,000 runs to write)."""
    root = tmp_path_factory.mktemp("import-corpus")
    templates = []
    for line in (FIXTURES / "openai_messages" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        item["id"] = f"{item['id']}-\x00"  # dumped as \u0000, replaced per copy: 3 dumps, not 36,000
        templates.append(json.dumps(item))
    for f in range(400):
        out = [t.replace("\\u0000", f"{f}-{k}") for k in range(30) for t in templates]
        (root / f"t{f:04d}.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    return root


def start(args: list[str], cwd: Path, stdout) -> subprocess.Popen:
    """`evalkit ARGS` of this working tree, in a new session (its own process group), its temporary
    directory (where the pool's spool goes) ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(cwd)}
    return subprocess.Popen(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children of any of its threads, and theirs: a fork server's)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except FileNotFoundError:
            continue
        for tid in tasks:
            try:
                kids = Path(f"/proc/{p}/task/{tid}/children").read_text().split()
            except FileNotFoundError:
                continue
            for kid in map(int, kids):
                if kid not in found:
                    found.add(kid)
                    todo.append(kid)
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def multiprocessing_helpers(pid: int) -> set[int]:
    """The fork server and resource tracker ``pid`` started (its workers are the fork server's
    children, started with the same command line)."""
    kids = {
        int(k)
        for tid in os.listdir(f"/proc/{pid}/task")
        for k in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
    }
    return {k for k in kids if b"multiprocessing.forkserver" in cmdline(k) or b"resource_tracker" in cmdline(k)}


def wait_for_workers(proc: subprocess.Popen, n: int = 2, timeout: float = 20.0) -> set[int]:
    """The pids of the pool's workers once ``n`` of them are running (the fork server counted out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"exited early: {proc.stderr.read().decode()}"
        workers = descendants(proc.pid) - multiprocessing_helpers(proc.pid) if running(proc.pid) else set()
        if len(workers) >= n:
            return workers
        time.sleep(0.02)
    raise AssertionError("the pool's workers never started")


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while (alive := {p for p in pids if running(p)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def kill_all(pids: set[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_script(tmp_path: Path, script: str, **popen) -> subprocess.Popen:
    """``script`` as tmp_path/pool.py, run with this working tree importable, in a new session."""
    (tmp_path / "pool.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "pool.py"], cwd=tmp_path, env=env, start_new_session=True, **popen)


def kill_9_leftover(proc: subprocess.Popen, pids: set[int], timeout: float = 10.0) -> set[int]:
    """`kill -9` of ``proc``: those of ``pids`` still running ``timeout`` s later (then killed). The
    bound is generous: a loaded machine may take seconds to reap them; that they go is the point."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    leftover = wait_gone(pids, timeout)
    kill_all(leftover)
    return leftover


def interrupt(proc: subprocess.Popen) -> tuple[int | None, float, str]:
    """SIGINT to the command's process group; its exit code (None: still running after
    STOP_WITHIN_S, then killed), the seconds it took and its stderr."""
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    return code, time.monotonic() - t0, proc.stderr.read().decode("utf-8", "replace")


def check_clean_interrupt(code, took, err, workers) -> None:
    leftover = wait_gone(workers, 2.0)
    kill_all(leftover)
    assert code == 130, f"exit {code} after {took:.1f}s; stderr: {err[-2000:]}"
    assert "Traceback" not in err and "InvalidStateError" not in err, err[-2000:]
    assert err.strip().splitlines()[-1] == "error: interrupted; finished work is kept"
    assert not leftover, "workers outlived the interrupted command"


def test_kill_9_of_score_leaves_no_worker_alive(score_corpus, tmp_path):
    proc = start(
        ["score", str(score_corpus), "--workers", "2", "--db", "s.db", "--format", "csv"], tmp_path, subprocess.DEVNULL
    )
    assert not kill_9_leftover(proc, wait_for_workers(proc)), "workers outlived their parent"


def test_kill_9_of_import_leaves_no_worker_alive(import_corpus, tmp_path):
    files = sorted(str(p) for p in import_corpus.iterdir())
    proc = start(
        ["import", "openai-messages", *files, "-o", "out", "--model", "m", "--workers", "2"],
        tmp_path,
        subprocess.DEVNULL,
    )
    assert not kill_9_leftover(proc, wait_for_workers(proc)), "workers outlived their parent"


@pytest.mark.parametrize("after", INTERRUPT_AFTER_S)
def test_ctrl_c_during_score_exits_130_and_keeps_what_it_printed(score_corpus, tmp_path, after):
    """Every run printed before the interrupt is in the database, which still opens whole."""
    with open(tmp_path / "out.csv", "wb") as out:
        proc = start(["score", str(score_corpus), "--workers", "2", "--db", "s.db", "--format", "csv"], tmp_path, out)
        workers = wait_for_workers(proc)
        time.sleep(after)
        code, took, err = interrupt(proc)
    check_clean_interrupt(code, took, err, workers)
    assert took < STOP_WITHIN_S
    printed = (tmp_path / "out.csv").read_text(encoding="utf-8").split("\n")[1:-1]  # the last may be cut
    assert not list(tmp_path.glob("evalkit-spool-*")), "the interrupted run left its spool directory"
    if not (tmp_path / "s.db").exists():  # interrupted while its workers started, before it opened the database
        assert printed == []
        return
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "runs" not in tables:  # interrupted after opening it, before its schema's one transaction committed
            assert tables == set() and printed == []
            return
        stored = {r for (r,) in conn.execute("SELECT run_id FROM runs")}
    finally:
        conn.close()
    assert {line.split(",", 1)[0] for line in printed} <= stored
    assert len(stored) < SCORE_FILES, "the command finished before it was interrupted: make the corpus bigger"
    assert not list(tmp_path.glob("evalkit-spool-*")), "the interrupted run left its spool directory"


@pytest.mark.parametrize("after", INTERRUPT_AFTER_S[1::2])
def test_ctrl_c_during_import_exits_130_and_leaves_no_staged_file(import_corpus, tmp_path, after):
    """The runs put in place are whole; no temporary file of a staged run is left."""
    files = sorted(str(p) for p in import_corpus.iterdir())
    proc = start(
        ["import", "openai-messages", *files, "-o", "out", "--model", "m", "--workers", "2"],
        tmp_path,
        subprocess.DEVNULL,
    )
    workers = wait_for_workers(proc)
    time.sleep(after)
    code, took, err = interrupt(proc)
    check_clean_interrupt(code, took, err, workers)
    written = list((tmp_path / "out").iterdir()) if (tmp_path / "out").exists() else []
    assert not [p.name for p in written if not p.name.endswith(".jsonl")]
    assert len(written) < 36000, "the command finished before it was interrupted: make the corpus bigger"
    for path in written[:200]:
        assert path.read_text(encoding="utf-8").endswith("\n")


THREADED_POOL = """
import threading, time
from evalkit.engines.local import map_local

def slow(batch):
    time.sleep(0.2)
    return batch

if __name__ == "__main__":
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # the pool then uses a fork server
    for _ in map_local(slow, range(10_000), 2, 1):
        pass
"""


def test_kill_9_of_a_threaded_parent_leaves_no_fork_server_worker_alive(tmp_path):
    """A process with other threads starts its workers through a fork server: they die with it too."""
    proc = start_script(tmp_path, THREADED_POOL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while True:  # the fork server is spawned (fork, then exec): its command line shows it once it has exec'd
        helpers = multiprocessing_helpers(proc.pid)
        if any(b"multiprocessing.forkserver" in cmdline(p) for p in helpers):
            break
        assert time.monotonic() < deadline, "no fork server started"
        time.sleep(0.02)
    workers = wait_for_workers(proc)
    everything = workers | multiprocessing_helpers(proc.pid)
    assert not kill_9_leftover(proc, everything), "the fork server or its workers outlived their parent"


def _double(batch: list[int]) -> list[int]:
    time.sleep(0.01)
    return [2 * i for i in batch]


def test_a_pool_forked_by_a_thread_that_ends_keeps_its_workers(monkeypatch):
    """The kernel's parent-death signal follows the thread that forked: workers forked by a thread
    that then ends must not get it (they watch their parent process instead)."""
    import multiprocessing
    import threading

    from evalkit.engines import local as local_engine

    monkeypatch.setattr(local_engine, "_context", lambda: multiprocessing.get_context("fork"))
    stream = local_engine.map_local(_double, range(400), 2, 4)
    first: list[int] = []
    starter = threading.Thread(target=lambda: first.append(next(stream)))
    starter.start()
    starter.join()
    assert [*first, *stream] == [2 * i for i in range(400)]


def _gc_state(batch: list[int]) -> list[tuple[int, int]]:
    import gc

    return [(gc.get_threshold()[0], gc.get_freeze_count())] * len(batch)


def test_a_pool_worker_freezes_what_it_loaded_and_collects_less_often():
    """A worker's modules are frozen (no collection walks them) and its youngest generation is
    collected every WORKER_GC_YOUNG allocations; the process that runs the pool keeps its own."""
    import gc

    from evalkit.engines import local as local_engine

    before = gc.get_threshold()
    states = set(local_engine.map_local(_gc_state, range(400), 2, 4))
    assert gc.get_threshold() == before
    assert {threshold for threshold, _ in states} == {local_engine.WORKER_GC_YOUNG}
    assert all(frozen > 0 for _, frozen in states)


WATCHED_CHILD = """
import os, sys, time
from evalkit.engines.local import _init_worker

pid = os.fork()
if pid == 0:
    _init_worker(os.getppid(), True, False)  # no parent-death signal: the watching thread alone
    time.sleep(60)
    os._exit(0)
print(pid, flush=True)
time.sleep(60)
"""


def test_without_the_death_signal_a_worker_exits_once_its_parent_is_gone(tmp_path):
    proc = start_script(tmp_path, WATCHED_CHILD, stdout=subprocess.PIPE)
    worker = int(proc.stdout.readline())
    time.sleep(0.2)  # the worker's initializer has run
    assert running(worker)
    assert not kill_9_leftover(proc, {worker}, 2.0)


def test_ctrl_c_in_process_exits_130_with_one_line(score_corpus, tmp_path, monkeypatch):
    """One worker (no pool): click would print `Aborted!` and exit 1."""
    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.engines import pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(pipeline, "score_files", interrupted)
    result = CliRunner().invoke(cli, ["score", str(score_corpus / "r00001.jsonl"), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 130
    assert result.stderr == "error: interrupted; finished work is kept\n"


LONG_BATCHES = """
import sys, time
from evalkit.engines.local import map_local

def slow(batch):
    time.sleep(60)
    return batch

if __name__ == "__main__":
    try:
        for _ in map_local(slow, range(100), 2, 1):
            pass
    except KeyboardInterrupt:
        sys.exit(130)
"""


def test_ctrl_c_stops_batches_that_would_run_for_a_minute(tmp_path):
    """The running batches get STOP_GRACE_S to finish; then their workers are terminated."""
    from evalkit.engines.local import STOP_GRACE_S

    proc = start_script(tmp_path, LONG_BATCHES, stderr=subprocess.PIPE)
    workers = wait_for_workers(proc)
    time.sleep(0.2)
    code, took, err = interrupt(proc)
    leftover = wait_gone(workers, 1.0)
    kill_all(leftover)
    assert code == 130 and not leftover and err == "", err
    assert STOP_GRACE_S <= took < STOP_GRACE_S + 2
