"""Benchmark `evalkit score`: one core against json.loads, two workers against one, Ray against one,
and peak memory at N and 10·N files.

    python benchmarks/bench_score.py [--n 300] [--no-ray] [--argument-rules]

Generates N and 10·N realistic trajectories (tens of records each, snapshots of a few KB) in a
temporary directory, then measures in one run (best of 3 for each timing):
  decode      read every file and json.loads every line (the floor any scorer pays)    CPU time
  one core    what `evalkit score --format jsonl --no-db` does in one process          CPU time
  1 worker    the same, wall time, output written to /dev/null                         wall time
  2 workers   `--workers 2` (process pool; the parent writes)                           wall time
              and its CPU split (parent, workers): the wall time two idle cores would allow
  ray         `--engine ray` on a local Ray cluster of 2 CPUs started here; its start-up
              is reported on its own line and not counted                               wall time
Timings use the 10·N corpus (3,000 files by default).
  ceiling     first, for --no-db, --db and --parquet: whole `evalkit score` processes (median of 3):
              the parent's and the workers' CPU with --workers 2, the 2-worker wall ratio, the
              same per file (10·N minus N: start-up taken out) and Amdahl's projected speed-up over
              one worker on 8, 16 and 64 cores from those per-file shares; and, before them, the
              machine's own floor under the 2-worker ratio: two independent one-worker runs at
              once against one alone (two busy cores of a shared VM each run slower). Peak RSS is
measured in a fresh `evalkit score --format jsonl` (database written, default workers) over N and
over 10·N files: the parent's and the largest worker's. Targets: one core ≤ 1.3× decode; 2 workers
≤ 0.6× one worker; Ray output identical; RSS flat (ratio close to 1). ``--argument-rules``: the
one-core lines only, on runs of 5 to 40 calls against a scenario with argument rules (target ≤ 4×
decode).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

RSS_PROBE = """
import resource, sys
import evalkit.cli
with open("/dev/null", "w") as devnull:
    sys.stdout = devnull
    try:
        evalkit.cli.cli.main(["score", sys.argv[1], "--format", "jsonl", "--db", sys.argv[2]], standalone_mode=False)
    finally:
        sys.stdout = sys.__stdout__
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


CPU_PROBE = """
import resource, sys, time
t0 = time.perf_counter()
import evalkit.cli
try:
    evalkit.cli.cli.main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, time.perf_counter() - t0, file=sys.stderr)
"""
SINKS = {"--no-db": ["--no-db"], "--db": ["--db", "{tmp}/whole.db"], "--parquet": ["--no-db", "--parquet", "{tmp}/pq"]}
CORES = (8, 16, 64)


def whole_process(directory: Path, tmp: Path, sink: str, workers: int) -> tuple[float, float, float]:
    """One `evalkit score DIR --format jsonl SINK --workers N` in a fresh process, stdout to
    /dev/null: (parent CPU s, workers' CPU s, wall s). The whole process: start-up and imports too."""
    import shutil

    for f in tmp.glob("whole.db*"):
        f.unlink()
    shutil.rmtree(tmp / "pq", ignore_errors=True)
    args = [a.format(tmp=tmp) for a in SINKS[sink]]
    with open(os.devnull, "w") as devnull:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                CPU_PROBE,
                "score",
                str(directory),
                "--format",
                "jsonl",
                *args,
                "--workers",
                str(workers),
            ],
            stdout=devnull,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
            env=installed_env(tmp),
        )
    parent, children, wall = map(float, done.stderr.strip().splitlines()[-1].split())
    return parent, children, wall


def side_by_side(directory: Path, tmp: Path) -> tuple[float, float]:
    """Two independent one-worker `evalkit score DIR --format jsonl --no-db` processes started
    together: (wall s until both ended, CPU s of the two). Against one alone, what this machine
    gives two processes that share nothing, the floor under any 2-worker ratio here."""
    argv = [sys.executable, "-c", CPU_PROBE, "score", str(directory), "--format", "jsonl", "--no-db", "--workers", "1"]
    env = installed_env(tmp)
    with open(os.devnull, "w") as devnull:
        t0 = time.perf_counter()
        procs = [subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
        outs = [p.communicate()[1] for p in procs]
        wall = time.perf_counter() - t0
    if any(p.returncode for p in procs):
        raise SystemExit("a side-by-side run failed")
    cpu = sum(float(out.strip().splitlines()[-1].split()[0]) for out in outs)
    return wall, cpu


def installed_env(tmp: Path) -> dict[str, str]:
    """The environment of a whole-process run: Python's bytecode cached (in ``tmp``, the checkout is
    left alone) as it is for an installed evalkit, even where PYTHONDONTWRITEBYTECODE is set:
    otherwise every run compiles evalkit's modules again, a start-up cost users do not pay."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def median_of(runs: list[tuple[float, ...]]) -> tuple[float, ...]:
    import statistics

    return tuple(statistics.median(col) for col in zip(*runs))


def ceiling(small: Path, large: Path, tmp: Path, repeat: int = 3) -> None:
    """For each sink: the parent's and the workers' CPU (whole process, and per file from the
    difference between the 10·N and N corpora, which takes start-up out), the 2-worker wall ratio,
    and Amdahl's speed-up over one worker on C cores: t1 / (parent + workers / C), per file."""
    n_small, n_large = len(list(small.glob("*.jsonl"))), len(list(large.glob("*.jsonl")))
    for sink in SINKS:  # a first run of each fills the bytecode cache
        whole_process(small, tmp, sink, 2)
    print(
        f"ceiling: whole `evalkit score` processes, median of {repeat}, bytecode cached; load average "
        f"{os.getloadavg()[0]:.1f}; stdout to {os.devnull} ({'a regular file here' if os.path.isfile(os.devnull) else 'a device'})"
    )
    alone, pair = [], []
    for _ in range(repeat):  # alternated, so a drift in the machine's speed moves both
        alone.append(whole_process(large, tmp, "--no-db", 1))
        pair.append(side_by_side(large, tmp))
    alone_m, pair_m = median_of(alone), median_of(pair)
    print(
        f"machine: two independent one-worker --no-db runs at once take {pair_m[0] / alone_m[2]:.2f}x the wall "
        f"and {pair_m[1] / (2 * alone_m[0]):.2f}x the CPU each of one alone (medians of {repeat}): no 2-worker "
        f"run can beat {pair_m[0] / alone_m[2] / 2:.2f} of one worker's wall here"
    )
    for sink in SINKS:
        one = median_of([whole_process(large, tmp, sink, 1) for _ in range(repeat)])
        two = median_of([whole_process(large, tmp, sink, 2) for _ in range(repeat)])
        two_small = median_of([whole_process(small, tmp, sink, 2) for _ in range(repeat)])
        one_small = median_of([whole_process(small, tmp, sink, 1) for _ in range(repeat)])
        files = n_large - n_small
        p_file = (two[0] - two_small[0]) / files
        w_file = (two[1] - two_small[1]) / files
        t1_file = (one[0] - one_small[0]) / files
        share = two[0] / (two[0] + two[1])
        print(
            f"ceiling {sink:9s}: 2 workers, whole process: parent {two[0]:.3f} s + workers {two[1]:.3f} s CPU "
            f"(parent {share:.1%} of the total; target <= {'10' if sink == '--no-db' else '20'}% for --no-db / --db); "
            f"wall {two[2]:.3f} s vs one worker {one[2]:.3f} s = {two[2] / one[2]:.2f} (target <= 0.55)"
        )
        print(
            f"ceiling {sink:9s}: per file: parent {p_file * 1e6:.0f} us, workers {w_file * 1e6:.0f} us, one worker "
            f"{t1_file * 1e6:.0f} us (parent {p_file / (p_file + w_file):.1%}); Amdahl over one worker: "
            + ", ".join(f"{c} cores {t1_file / (p_file + w_file / c):.1f}x" for c in CORES)
        )


def make_runs(directory: Path, n: int) -> None:
    sc = a320_scenario()
    plans = [
        [
            read(),
            say("reset"),
            cmd("apu_gen", 0),
            cmd("apu_gen", 1),
            read(),
            cmd("apu_gen", 0),
            cmd("ext_pwr", 1),
            read(),
        ],
        [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("ext_pwr", 1), read("get_state"), read()],
        [read(), read("get_state"), cmd("ext_pwr", 1), cmd("nav_lights", 1), read(), cmd("bat_1", 0)],
    ]
    for i in range(n):
        calls = [say(f"Run {i}: reading the ECAM first.")] + plans[i % 3] * 3  # tens of records; every bundle distinct
        recs = trajectory(
            sc, calls, run_id=f"bench-{i:06d}", model=f"model-{i % 4}", passed=i % 5 != 0, snapshot_bytes=3000
        )
        write_jsonl(directory / f"run-{i:06d}.jsonl", recs)


# A scenario whose required and forbidden actions carry argument rules (keys, contains, a regular
# expression, a number's tolerance): the corpus of ``--argument-rules``, runs of 5 to 40 calls.
ARGUMENT_SCENARIO = {
    "id": "book-trip",
    "command_tools": ["hold_seat", "charge_card", "send_itinerary", "update_profile"],
    "ground_truth": {
        "procedure": [
            {
                "block": "book",
                "ordered": True,
                "actions": [
                    {"tool": "hold_seat", "args": {"flight": "TP201"}, "args_match": {"keys": ["flight"]}},
                    {
                        "tool": "charge_card",
                        "args": {"amount": 612.4, "currency": "EUR"},
                        "args_match": {"keys": ["amount", "currency"], "compare": {"amount": {"abs_tol": 0.01}}},
                    },
                ],
            },
            {
                "block": "tell",
                "actions": [
                    {
                        "tool": "send_itinerary",
                        "args": {"to": "ana@example.com", "body": "TP201"},
                        "args_match": {"mode": "contains", "compare": {"body": {"regex": "(?i)tp ?201"}}},
                    }
                ],
            },
        ],
        "forbidden_actions": [
            {
                "tool": "charge_card",
                "args": {"amount": 1224.8},
                "args_match": {"keys": ["amount"]},
                "severity": "dangerous",
            }
        ],
    },
    "success": {"final_state": [{"var": "booking.status", "op": "==", "value": "ticketed"}]},
}


def make_argument_runs(directory: Path, n: int) -> None:
    from evalkit.trajectory.builders import call

    tools = ARGUMENT_SCENARIO["command_tools"]
    for i in range(n):
        calls = [say(f"Run {i}: looking for flights.")]
        for k in range(5 + i % 36):  # 5 to 40 calls
            kind = (i + k) % 5
            if kind == 0:
                calls.append(
                    call("search_flights", {"from": "LIS", "to": "JFK", "day": k}, result={"flights": ["TP201"]})
                )
            elif kind == 1:
                calls.append(call("hold_seat", {"flight": "TP201", "seat": f"{k}A"}))
            elif kind == 2:
                calls.append(call("charge_card", {"amount": 612.4 + (k % 3) * 0.001, "currency": "EUR", "ref": i}))
            elif kind == 3:
                calls.append(
                    call("send_itinerary", {"to": "ana@example.com", "body": f"Your flight TP 201, seat {k}A"})
                )
            else:
                calls.append(call("update_profile", {"name": "Ana", "prefs": {"seat": "window", "meal": "veg"}}))
        recs = trajectory(ARGUMENT_SCENARIO, calls, run_id=f"args-{i:06d}", model=f"model-{i % 4}", tool_surface=tools)
        write_jsonl(directory / f"run-{i:06d}.jsonl", recs)


def best_of(fn, repeat: int = 3, clock=time.process_time) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def cpu_split(fn) -> tuple[float, float]:
    """CPU seconds of this process and of its (finished) worker processes while ``fn`` runs."""
    import resource

    def children() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    p0, c0 = time.process_time(), children()
    fn()
    return time.process_time() - p0, children() - c0


def decode_only(files: list[Path]) -> None:
    for f in files:
        for line in f.read_bytes().decode("utf-8").split("\n"):
            if line.strip():
                json.loads(line)


def score_jsonl(directory: Path, engine: str = "local", workers: int = 1, observe: bool = True) -> None:
    """`evalkit score DIR --format jsonl --no-db` through the API, output to /dev/null (``observe``:
    each scenario checked against its runs, as the command does)."""
    from evalkit.engines.pipeline import score_files
    from evalkit.present.score_output import ScoreWriter

    with open(os.devnull, "w", encoding="utf-8") as out:
        writer = ScoreWriter(out, "jsonl")
        scoring = score_files(
            [str(directory)],
            output="jsonl",
            encoding=writer.encoding,
            engine=engine,
            workers=workers,
            aggregate=writer.aggregates,
            on_finding=(lambda line: None) if observe else None,
        )
        for item in scoring:
            if getattr(item, "data", None) is not None:
                writer.write_batch(item.data, item.count)
        writer.finish(scoring.aggregate)


def storage(directory: Path, tmp: Path, workers: int, sink: str) -> dict[str, float]:
    """Score into SQLite or Parquet (2 workers): bytes on disk per run, the parent's CPU per run
    (receiving and writing: the part that does not scale with workers), wall time."""
    import shutil
    import sqlite3

    from evalkit.db.scores import Store
    from evalkit.engines.pipeline import score_files

    db_path, pq_dir = tmp / "store.db", tmp / "parquet"
    for f in tmp.glob("store.db*"):
        f.unlink()
    shutil.rmtree(pq_dir, ignore_errors=True)
    stats = {"runs": 0}

    def run() -> None:
        store = Store(db_path) if sink == "sqlite" else None
        scoring = score_files(
            [directory], store=store, output=None, parquet=pq_dir if sink == "parquet" else None, workers=workers
        )
        for _ in scoring:
            pass
        stats["runs"] = scoring.scored
        if store is not None:
            store.close()

    t0 = time.perf_counter()
    parent, _ = cpu_split(run)
    wall = time.perf_counter() - t0
    runs = stats["runs"]
    if sink == "sqlite":
        size = sum(f.stat().st_size for f in tmp.glob("store.db*"))
        with sqlite3.connect(db_path) as db:
            distinct, chars = db.execute("SELECT count(*), sum(length(bundle)) FROM bundles").fetchone()
            chars = db.execute(
                "SELECT sum(length(b.bundle)) FROM scorecards s JOIN bundles b USING (bundle_hash)"
            ).fetchone()[0]
    else:
        import pyarrow.parquet as pq

        size = sum(f.stat().st_size for f in pq_dir.rglob("*.parquet"))
        bundles = pq.read_table(pq_dir / "bundles").to_pydict()
        distinct = len(set(bundles["bundle_hash"]))
        chars = sum(len(b) for b in bundles["bundle"]) * runs / max(len(bundles["bundle"]), 1)
    return {
        "runs": runs,
        "wall": wall,
        "bytes": size / runs,
        "parent_us": parent / runs * 1e6,
        "distinct_bundles": distinct / runs,
        "bundle_chars": chars / runs,
    }


def peak_rss_kb(directory: Path, db_path: Path) -> tuple[int, int]:
    db_path.unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(directory), str(db_path)], capture_output=True, text=True, check=True
    )
    parent, child = out.stdout.strip().splitlines()[-1].split()
    return int(parent), int(child)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray measurement")
    parser.add_argument("--ceiling-only", action="store_true", help="only the whole-process CPU split and Amdahl lines")
    parser.add_argument("--one-core-only", action="store_true", help="only the decode and one-core lines (best of 5)")
    parser.add_argument(
        "--argument-rules",
        action="store_true",
        help="the one-core lines on runs of 5-40 calls against a scenario with argument rules (target <= 4)",
    )
    args = parser.parse_args()
    if args.argument_rules:
        args.one_core_only = True
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp, "n"), Path(tmp, "n10")
        make = make_argument_runs if args.argument_rules else make_runs
        make(small, args.n)
        make(large, args.n * 10)
        files = sorted(large.glob("*.jsonl"))
        size = sum(f.stat().st_size for f in files)
        records = sum(1 for f in files for line in f.read_text().splitlines() if line.strip())
        print(
            f"corpus: {len(files)} trajectories ({size / 2**20:.0f} MiB), {records / len(files):.0f} records "
            f"and {size / len(files) / 1024:.1f} KiB per file; {os.cpu_count()} cores"
        )
        if not args.one_core_only:
            ceiling(small, large, Path(tmp))
        if args.ceiling_only:
            return
        repeat = 5 if args.one_core_only else 3
        t_decode = best_of(lambda: decode_only(files), repeat)
        t_one = best_of(lambda: score_jsonl(large), repeat)
        print(f"json-decode only      : {t_decode:.3f} s CPU")
        print(
            f"one core, jsonl no db : {t_one:.3f} s CPU   ratio one-core/decode = {t_one / t_decode:.2f}  "
            f"(target <= {4 if args.argument_rules else 1.3})"
        )
        t_plain = best_of(lambda: score_jsonl(large, observe=False), repeat)
        print(
            f"one core, no scenario check: {t_plain:.3f} s CPU   the check's cost: one-core / this = "
            f"{t_one / t_plain:.3f}"
        )
        if args.one_core_only:
            return
        w1 = best_of(lambda: score_jsonl(large, workers=1), clock=time.perf_counter)
        w2 = best_of(lambda: score_jsonl(large, workers=2), clock=time.perf_counter)
        parent, workers = cpu_split(lambda: score_jsonl(large, workers=2))
        bound = max(parent, (parent + workers) / 2)
        print(f"1 worker              : {w1:.3f} s wall")
        print(f"2 workers             : {w2:.3f} s wall   ratio 2-workers/1-worker = {w2 / w1:.2f}  (target <= 0.6)")
        print(
            f"2 workers, CPU        : parent {parent:.3f} s + workers {workers:.3f} s; on 2 idle cores the wall "
            f"time is at least max(parent, total/2) = {bound:.3f} s = {bound / t_one:.2f} x one core's CPU time"
        )
        rss_n = peak_rss_kb(small, Path(tmp, "rss.db"))
        rss_10n = peak_rss_kb(large, Path(tmp, "rss.db"))
        print(
            f"peak RSS, `evalkit score` over N={args.n}    : parent {rss_n[0] / 1024:.1f} MiB, largest worker {rss_n[1] / 1024:.1f} MiB"
        )
        print(
            f"peak RSS, `evalkit score` over 10N={args.n * 10}: parent {rss_10n[0] / 1024:.1f} MiB, largest worker "
            f"{rss_10n[1] / 1024:.1f} MiB   ratio parent = {rss_10n[0] / rss_n[0]:.2f}  (target: flat)"
        )
        for sink in ("sqlite", "parquet"):
            st = storage(large, Path(tmp), workers=2, sink=sink)
            print(
                f"score into {sink:7s}, 2 workers: {st['wall']:.3f} s wall; {st['bytes']:.0f} bytes per run on disk; "
                f"parent CPU {st['parent_us']:.0f} us per run (the part that does not scale with workers)"
            )
        print(
            f"judge bundles: {st['bundle_chars']:.0f} characters per run on average; distinct: {st['distinct_bundles']:.0%} of runs"
        )
        if not args.no_ray:  # last: a Ray session leaves its environment behind in this process
            import ray

            t0 = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
            startup = time.perf_counter() - t0
            score_jsonl(small, engine="ray")  # warm the worker processes (imports)
            wr = best_of(lambda: score_jsonl(large, engine="ray"), clock=time.perf_counter)
            ray.shutdown()
            print(f"ray start-up (local)  : {startup:.3f} s wall (not counted below)")
            print(f"ray, 2 CPUs           : {wr:.3f} s wall   ratio ray/1-worker = {wr / w1:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
