"""Benchmark `evalkit score`: time ÷ the time to only json-decode the same files, and peak RSS at N and 10·N.

    python benchmarks/bench_score.py [--n 500]

Generates N realistic trajectories (tens of records each, snapshots of a few KB) in a temporary
directory, then measures in one run, best of 3 for each timing (CPU time of this process, which other load on the
machine disturbs less than wall time):
  decode   read every file and json.loads every line (the floor any scorer pays)
  score    evalkit.api.iter_scorecards + aggregation (what `evalkit score --no-db` does)
  score+db the same plus upserting into a fresh SQLite database (the default `evalkit score`)
Peak RSS is measured in a fresh subprocess running `evalkit score --format jsonl` over N and over
10·N files. Targets: score/decode ≤ 1.3; RSS flat (ratio close to 1).
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

from evalkit.testing import a320_scenario, cmd, read, say, trajectory, write_jsonl

RSS_PROBE = """
import resource, subprocess, sys
from click.testing import CliRunner
import evalkit.cli
with open("/dev/null", "w") as devnull:
    sys.stdout = devnull
    try:
        evalkit.cli.cli.main(["score", sys.argv[1], "--format", "jsonl", "--db", sys.argv[2]], standalone_mode=False)
    finally:
        sys.stdout = sys.__stdout__
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_runs(directory: Path, n: int) -> None:
    sc = a320_scenario()
    plans = [
        [read(), say("reset"), cmd("apu_gen", 0), cmd("apu_gen", 1), read(), cmd("apu_gen", 0), cmd("ext_pwr", 1), read()],
        [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("ext_pwr", 1), read("get_state"), read()],
        [read(), read("get_state"), cmd("ext_pwr", 1), cmd("nav_lights", 1), read(), cmd("bat_1", 0)],
    ]
    for i in range(n):
        calls = plans[i % 3] * 3  # tens of records per run
        recs = trajectory(sc, calls, run_id=f"bench-{i:06d}", model=f"model-{i % 4}", passed=i % 5 != 0, snapshot_bytes=3000)
        write_jsonl(directory / f"run-{i:06d}.jsonl", recs)


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def decode_only(files: list[Path]) -> None:
    for f in files:
        for line in f.read_bytes().decode("utf-8").split("\n"):
            if line.strip():
                json.loads(line)


def score_only(directory: Path) -> None:
    from evalkit.api import Aggregator, iter_scorecards

    agg = Aggregator()
    for card in iter_scorecards([directory]):
        agg.add(card)
    agg.result()


def score_db(directory: Path, db_path: Path) -> None:
    from evalkit.api import Aggregator, Store, iter_scorecards

    db_path.unlink(missing_ok=True)
    store = Store(db_path)
    agg = Aggregator()
    batch = []
    for card in iter_scorecards([directory]):
        agg.add(card)
        batch.append(card)
        if len(batch) >= 200:
            store.save_many(batch)
            batch = []
    store.save_many(batch)
    store.close()
    agg.result()


def peak_rss_kb(directory: Path, db_path: Path) -> int:
    db_path.unlink(missing_ok=True)
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, str(directory), str(db_path)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp, "n"), Path(tmp, "n10")
        make_runs(small, args.n)
        make_runs(large, args.n * 10)
        files = sorted(small.glob("*.jsonl"))
        size = sum(f.stat().st_size for f in files)
        records = sum(1 for f in files for line in f.read_text().splitlines() if line.strip())
        print(f"corpus: {args.n} trajectories, {records / args.n:.0f} records and {size / args.n / 1024:.1f} KiB per file")
        t_decode = best_of(lambda: decode_only(files))
        t_score = best_of(lambda: score_only(small))
        t_db = best_of(lambda: score_db(small, Path(tmp, "bench.db")))
        print(f"json-decode only : {t_decode:.3f} s")
        print(f"score (no db)    : {t_score:.3f} s   ratio score/decode = {t_score / t_decode:.2f}  (target <= 1.3)")
        print(f"score + sqlite   : {t_db:.3f} s   ratio (score+db)/decode = {t_db / t_decode:.2f}")
        rss_n = peak_rss_kb(small, Path(tmp, "rss.db"))
        rss_10n = peak_rss_kb(large, Path(tmp, "rss.db"))
        print(f"peak RSS, `evalkit score` over N={args.n}   : {rss_n / 1024:.1f} MiB")
        print(f"peak RSS, `evalkit score` over 10N={args.n * 10}: {rss_10n / 1024:.1f} MiB   ratio = {rss_10n / rss_n:.2f}  (target: flat)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
