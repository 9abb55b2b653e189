"""Benchmark `evalkit import --workers`: two workers against one on a corpus of many inputs.

    python benchmarks/bench_import.py [--logs 50] [--messages 2000]

The corpus is the realistic many-file case: inspect_ai logs, one per task run — the
tiny task of examples/inspect run once per log format by inspect_ai itself, then ``--logs`` copies of
each under new eval ids, written by inspect_ai's own write_eval_log (14 samples × epochs a log) —
and ``--messages`` per-task openai-messages files (the test fixture's three transcripts each, ids
made unique). Measured in one process through evalkit.importers.import_files, best of 3 (each
run writes into a new directory):
  1 worker    wall time per format
  2 workers   wall time, the ratio to 1 worker (target <= 0.6), and the CPU split
              (parent, workers) against 1 worker's CPU time: the ratio two idle cores would allow
inspect_ai is imported once before the timings (`evalkit import inspect` pays that ~4 s once,
whatever --workers; forked workers share it). The files written by 1 and 2 workers are compared
byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "inspect"))
TRANSCRIPTS = (
    (ROOT / "tests" / "fixtures" / "openai_messages" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
)


def make_messages(directory: Path, n: int) -> list[str]:
    directory.mkdir(parents=True)
    paths = []
    for task in range(n):
        lines = []
        for text in TRANSCRIPTS:
            item = json.loads(text)
            item["id"] = f"{item['id']}-t{task:05d}"
            if "scenario_id" in item:
                item["scenario_id"] = f"{item['scenario_id']}-t{task:05d}"
            lines.append(json.dumps(item))
        path = directory / f"task-{task:05d}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    return paths


def make_logs(directory: Path, n: int) -> list[str]:
    import tiny_task

    directory.mkdir(parents=True)
    originals = tiny_task.write_logs(directory / "originals")
    paths = []
    for fmt in ("eval", "json"):
        paths += [str(p) for p in tiny_task.write_copies(originals[fmt], directory, n)]
    return sorted(paths)


def children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed_import(fmt: str, paths: list[str], out: Path, workers: int, options: dict) -> tuple[float, float, float]:
    """(wall, parent CPU, workers' CPU) of one import into ``out``, a new directory: deleting the
    files of a previous run just before would slow the file system's next writes, so the output of
    every run is kept until the end."""
    from evalkit.importers import import_files

    w0, p0, c0 = time.perf_counter(), time.process_time(), children_cpu()
    result = import_files(fmt, paths, out, workers=workers, **options)
    wall, parent, kids = time.perf_counter() - w0, time.process_time() - p0, children_cpu() - c0
    assert not result.errors, [str(e) for e in result.errors[:3]]
    return wall, parent, kids


def tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=int, default=50, help="copies of each of the two inspect_ai logs")
    parser.add_argument("--messages", type=int, default=2000, help="openai-messages files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # openai-messages first: its parent has not imported inspect_ai yet, as in `evalkit import openai-messages`
        corpora = {
            "openai-messages": (lambda: make_messages(Path(tmp, "messages"), args.messages), {"model": "bench/model"}),
            "inspect": (lambda: make_logs(Path(tmp, "logs"), args.logs), {}),
        }
        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
        for fmt, (make, options) in corpora.items():
            paths = make()
            size = sum(Path(p).stat().st_size for p in paths)
            one, two = Path(tmp, f"{fmt}-1-0"), Path(tmp, f"{fmt}-2-0")
            w1, cpu1, _ = min(timed_import(fmt, paths, Path(tmp, f"{fmt}-1-{i}"), 1, options) for i in range(3))
            w2 = min(timed_import(fmt, paths, Path(tmp, f"{fmt}-2-{i}"), 2, options)[0] for i in range(3))
            _, parent, workers = timed_import(fmt, paths, Path(tmp, f"{fmt}-2-3"), 2, options)
            same = tree(one) == tree(two)
            runs = sum(1 for _ in one.glob("*.jsonl"))
            bound = max(parent, (parent + workers) / 2)
            print(
                f"import {fmt:15s}: {len(paths)} files ({size / 2**20:.1f} MiB), {runs} runs; 1 worker {w1:.3f} s, "
                f"2 workers {w2:.3f} s wall   ratio 2-workers/1-worker = {w2 / w1:.2f}  (target <= 0.6); "
                f"output identical: {same}"
            )
            print(
                f"import {fmt:15s}: 1 worker {cpu1:.3f} s CPU; 2 workers, CPU: parent {parent:.3f} s "
                f"({parent / runs * 1e6:.0f} us per run: receiving, checking, renaming into place) + workers {workers:.3f} s; "
                f"on 2 idle cores the wall time is at least max(parent, total/2) = {bound:.3f} s = "
                f"{bound / cpu1:.2f} x 1 worker's CPU time"
            )


if __name__ == "__main__":
    main()
