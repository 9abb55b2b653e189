"""Benchmark peak memory of `evalkit score` on one large trajectory (47 MB, 200k tool calls).

    python benchmarks/bench_memory.py [--calls 200000]

Writes one trajectory of N tool calls (half cockpit commands, half reads, each with a small
result; ~47 MB at 200,000 calls) to a temporary directory, then runs `evalkit score FILE --format
jsonl` in a fresh subprocess, once with `--no-db` and once writing a new database, and prints each
run's peak RSS (``ru_maxrss``: the largest of the evalkit process and its workers) and the file size. Target: ≤ 250 MB with the database.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalkit.trajectory.builders import a320_scenario

TARGET_MB = 250


def write_big_run(path: Path, calls: int) -> None:
    scenario = a320_scenario()
    with open(path, "w", encoding="utf-8") as fh:
        meta = {
            "type": "meta",
            "run_id": "big-run",
            "ts_utc": "2026-07-24T10:00:00Z",
            "scenario": scenario,
            "adapter": {"provider": "example", "model": "model-a"},
            "tool_surface": ["get_ecam", "get_state", "set_control"],
        }
        fh.write(json.dumps(meta) + "\n")
        fh.write(json.dumps({"type": "setup", "sim_time": 0.0, "validity_gate": {"passed": True}}) + "\n")
        controls = ("apu_gen", "ext_pwr", "apu_master", "apu_bleed", "nav_lights")
        for i in range(calls):
            if i % 2:
                control = controls[i % len(controls)]
                rec = {
                    "type": "tool_call",
                    "step": i,
                    "call_index": 0,
                    "name": "set_control",
                    "args": {"control": control, "value": i % 3},
                    "is_error": False,
                    "result": {"ok": True, "control": control, "value": i % 3},
                    "sim_time_before": float(i),
                    "sim_time_after": float(i + 1),
                    "wall_ms": 12.5,
                }
            else:
                rec = {
                    "type": "tool_call",
                    "step": i,
                    "call_index": 0,
                    "name": "get_ecam",
                    "args": {},
                    "is_error": False,
                    "result": {"messages": ["ELEC AC BUS 1 FAULT", "ELEC AC BUS 2 FAULT"]},
                    "sim_time_before": float(i),
                    "sim_time_after": float(i),
                    "wall_ms": 3.25,
                }
            fh.write(json.dumps(rec) + "\n")
        success = {
            "final_state": [{"var": "elec.ac_bus_1.powered", "op": "==", "value": True, "passed": True}],
            "ecam_clear_of": [{"message": "ELEC AC BUS 1 FAULT", "clear": True}],
            "all_passed": True,
        }
        fh.write(
            json.dumps(
                {
                    "type": "final",
                    "reason": "agent_done",
                    "sim_time": float(calls),
                    "tool_calls_used": calls,
                    "success_eval": success,
                }
            )
            + "\n"
        )


PROBE = """
import resource, sys
import evalkit.cli
with open("/dev/null", "w") as devnull:
    sys.stdout = devnull
    try:
        evalkit.cli.cli.main(sys.argv[1:], standalone_mode=False)
    finally:
        sys.stdout = sys.__stdout__
# the scoring may run in worker processes (--workers): the peak of any one process counts
print(max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
"""


def peak_rss_mb(args: list[str]) -> tuple[float, float]:
    """Run `evalkit ARGS` in a fresh child; return (its own peak RSS in MB, wall seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"evalkit {' '.join(args)} failed:\n{proc.stderr}")
    return int(proc.stdout.split()[-1]) / 1024, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        write_big_run(path, opts.calls)
        size = path.stat().st_size / 1e6
        print(f"file: {opts.calls} tool calls, {size:.1f} MB")
        no_db, t_no_db = peak_rss_mb(["score", str(path), "--format", "jsonl", "--no-db"])
        print(f"peak RSS, --no-db:          {no_db:7.1f} MB  ({t_no_db:.1f} s)")
        with_db, t_db = peak_rss_mb(["score", str(path), "--format", "jsonl", "--db", str(Path(tmp) / "s.db")])
        print(f"peak RSS, with database:    {with_db:7.1f} MB  ({t_db:.1f} s)")
        print(
            f"target ≤ {TARGET_MB} MB: {'met' if max(no_db, with_db) <= TARGET_MB else 'NOT met'}; "
            f"peak / file size = {max(no_db, with_db) / size:.1f}"
        )


if __name__ == "__main__":
    main()
