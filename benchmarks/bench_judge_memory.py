"""Peak resident memory of `evalkit judge` against the number of runs it judges, measured in one run.

    python benchmarks/bench_judge_memory.py [--runs 1000,10000,100000] [--concurrency 8] [--tracemalloc 30]

For each size N a database of N scored runs is written by evalkit's own writers (the bundled a320
examples scored by `evalkit.score_files`, each under a new run id with its own transcript
line, stored by `evalkit.db.Store.save_many`; about 78 % are `scored`, the rest are skipped as the
judge skips them). Then the real `evalkit judge --db FILE --model openai/bench` runs as a
subprocess against the local OpenAI-compatible fake server (tests/fake_llm_server.py, its own
process, no latency) through the real litellm (``LITELLM_LOCAL_MODEL_COST_MAP=True``), its table
on stdout written to a file. Printed per size: wall time, calls, peak RSS of the judge process
(its own ``ru_maxrss``, read by `/usr/bin/time`) and its ratio to the smallest
size's; then the bound (target: ≤ 400 MB at 10^5 runs, flat in N).

``--tracemalloc S`` runs the judge of the largest size under tracemalloc instead and prints, every
S seconds, the ten allocation sites (with their callers) that grew most since the first snapshot,
taken S seconds in, after start-up (what grows).
``--keep DIR`` keeps the databases there (and reuses them on the next run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_judge import FakeServerProcess  # noqa: E402

TARGET_MB = 400
CHUNK = 2_000


def templates() -> list[str]:
    """Each bundled a320 example's ScoreCard as JSON, its judge bundle included."""
    from evalkit.engines.pipeline import score_files

    out = []
    for card in score_files([ROOT / "examples" / "a320"], warn=lambda message: None):
        if not isinstance(card, Exception):
            out.append(json.dumps(card.model_dump(mode="json", by_alias=True) | {"judge_bundle": card.judge_bundle}))
    return out


def build(db: Path, runs: int) -> None:
    """``runs`` scored runs in ``db``: the examples in turn, each with its own run id and bundle."""
    from evalkit.db import Store
    from evalkit.scoring.scorecard import ScoreCard

    base = templates()
    store = Store(db)
    try:
        batch = []
        for i in range(runs):
            data = json.loads(base[i % len(base)])
            rid = f"run-{i:07d}"
            bundle = data["judge_bundle"]
            bundle["run_id"] = rid
            bundle.setdefault("transcript", []).insert(
                0, {"kind": "assistant", "step": 0, "text": f"token{i:07d} starting", "stop_reason": None}
            )
            data.update(
                run_id=rid,
                model=f"agent-{i % 5}",
                path=f"runs/{rid}.jsonl",
                bundle_hash=hashlib.sha256(json.dumps(bundle, sort_keys=True).encode()).hexdigest(),
            )
            batch.append(ScoreCard.model_validate(data))
            if len(batch) == CHUNK:
                store.save_many(batch)
                batch = []
        store.save_many(batch)
    finally:
        store.close()


def database(folder: Path, runs: int) -> Path:
    """A fresh copy of the N-run database (built once per folder, in a child process: a parent
    grown by building it would lend the judge its peak RSS, see `judge`), with no judge answers yet."""
    source = folder / f"scored-{runs}.db"
    if not source.exists():
        partial = folder / f"scored-{runs}.partial.db"
        partial.unlink(missing_ok=True)
        subprocess.run([sys.executable, __file__, "--build", str(partial), "--runs", str(runs)], check=True)
        partial.rename(source)
    copy = folder / f"judged-{runs}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    copy.write_bytes(source.read_bytes())
    return copy


TRACE = """
import sys, threading, time, tracemalloc
tracemalloc.start(6)
every, out = float(sys.argv[1]), sys.argv[2]
def watch():
    time.sleep(every)  # start-up (imports, litellm) done: growth is counted from here
    first = tracemalloc.take_snapshot()
    while True:
        time.sleep(every)
        snap = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        with open(out, "a") as fh:
            fh.write(f"-- {time.strftime('%H:%M:%S')} traced {current / 2**20:.1f} MiB (peak {peak / 2**20:.1f})\\n")
            for stat in snap.compare_to(first, "traceback")[:10]:
                fh.write(f"   {stat}\\n")
                for line in stat.traceback.format()[-6:]:
                    fh.write(f"      {line}\\n")
threading.Thread(target=watch, daemon=True).start()
sys.argv = ["evalkit"] + sys.argv[3:]
from evalkit.cli import main
main()
"""


def judge(db: Path, api_base: str, concurrency: int, out: Path, trace: tuple[float, Path] | None = None) -> dict:
    """Run `evalkit judge` on ``db`` in a child process: its wall time, exit code and peak RSS."""
    args = ["judge", "--db", str(db), "--model", "openai/bench", "--api-base", api_base]
    args += ["--concurrency", str(concurrency), "--no-progress"]
    if trace is None:
        command = [sys.executable, "-m", "evalkit", *args]
    else:
        command = [sys.executable, "-c", TRACE, str(trace[0]), str(trace[1]), *args]
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY="sk-bench-not-a-real-key")
    # The peak is the judge's own, as /usr/bin/time reports it: a child's ru_maxrss starts at its
    # parent's RSS (the parent's memory is its own until exec), so RUSAGE_CHILDREN would report the
    # benchmark's own size whenever it is the larger.
    peak_file = Path(str(out) + ".rss")
    start = time.perf_counter()
    with open(out, "w") as stdout, open(str(out) + ".err", "w") as stderr:
        timed = ["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *command]
        code = subprocess.run(timed, stdout=stdout, stderr=stderr, env=env, cwd=ROOT).returncode
    wall = time.perf_counter() - start
    peak_kb = int(peak_file.read_text().split()[-1])
    return {"code": code, "wall_s": wall, "peak_mb": peak_kb / 1024}


def calls_made(out: Path) -> str:
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.startswith("calls made:"):
            return line.split(":", 1)[1].strip()
    return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="1000,10000,100000", help="sizes, comma-separated, smallest first")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tracemalloc", type=float, metavar="S", help="profile the largest size instead")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the databases in this folder")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the child that writes one database
    args = parser.parse_args()
    if args.build:
        build(args.build, int(args.runs))
        return
    if not Path("/usr/bin/time").exists():
        raise SystemExit("needs /usr/bin/time (Debian: apt-get install time) to read the judge's peak RSS")
    sizes = sorted(int(n) for n in args.runs.split(","))

    with tempfile.TemporaryDirectory() as tmp, FakeServerProcess(0.0) as server:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if args.tracemalloc:
            n = sizes[-1]
            report = folder / f"tracemalloc-{n}.txt"
            report.unlink(missing_ok=True)
            db = database(folder, n)
            result = judge(db, server.api_base, args.concurrency, folder / "out.txt", (args.tracemalloc, report))
            print(report.read_text() if report.exists() else "(no snapshot taken)")
            print(f"{n:,} runs under tracemalloc: exit {result['code']}, {result['wall_s']:.0f} s")
            return
        rows = []
        for n in sizes:
            t0 = time.perf_counter()
            db = database(folder, n)
            built = time.perf_counter() - t0
            out = folder / f"out-{n}.txt"
            result = judge(db, server.api_base, args.concurrency, out)
            rows.append((n, result, calls_made(out)))
            print(
                f"{n:>7,} runs: database {built:5.1f} s; judge exit {result['code']}, {result['wall_s']:6.1f} s, "
                f"calls {calls_made(out)}; peak RSS {result['peak_mb']:6.1f} MB",
                flush=True,
            )
        small = rows[0][1]["peak_mb"]
        for n, result, _ in rows[1:]:
            print(f"peak RSS at {n:,} runs / at {sizes[0]:,}: {result['peak_mb'] / small:.2f}x")
        largest, result, _ = rows[-1]
        verdict = "met" if result["peak_mb"] <= TARGET_MB else "NOT met"
        print(f"bound: {result['peak_mb']:.0f} MB at {largest:,} runs (target <= {TARGET_MB} MB): {verdict}")


if __name__ == "__main__":
    main()
