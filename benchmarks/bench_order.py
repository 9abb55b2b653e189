"""Benchmark the order score of a long procedure: counted in O(n log n) against listing every pair.

    python benchmarks/bench_order.py [--actions 5000]

A scenario of N required actions (one ordered block, then the same N split into unordered blocks of
50) and a run that did them all in a shuffled order (seeded). Prints the peak RSS and wall time of
a whole `evalkit score FILE --no-db` on that run (a subprocess); then, measured in this run, the
time of the order score as evalkit counts it (``scoring/order.py``) and as listing every
constraint pair counts it (the definition: the pairs built from the scenario, then checked one by
one), their ratio and that both give the same number; and the peak traced memory (tracemalloc) of
each for the ordered block.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from evalkit.scoring.order import counted_order


def pairs_order(blocks: tuple[int, ...], ordered: tuple[bool, ...], taken: list[int | None]) -> float | None:
    """The definition, pair by pair (what evalkit listed before counting)."""
    constraints = tuple(
        (i, j) for i, bi in enumerate(blocks) for j in range(i + 1, len(blocks)) if bi < blocks[j] or ordered[bi]
    )
    applicable = satisfied = 0
    for i, j in constraints:
        ti, tj = taken[i], taken[j]
        if ti is None or tj is None:
            continue
        applicable += 1
        satisfied += ti < tj
    return satisfied / applicable if applicable else None


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def peak(fn, *args) -> int:
    tracemalloc.start()
    fn(*args)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def layout(n: int, block: int | None) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    if block is None:
        return (0,) * n, (True,)
    return tuple(i // block for i in range(n)), (False,) * ((n + block - 1) // block)


def write_run(path: Path, n: int, order: list[int]) -> None:
    scenario = {
        "id": "long",
        "command_tools": ["step"],
        "ground_truth": {
            "procedure": [
                {"block": "all", "ordered": True, "actions": [{"tool": "step", "args": {"i": i}} for i in range(n)]}
            ]
        },
        "success": {"final_state": []},
    }
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "meta", "run_id": "long", "model": "m", "scenario": scenario}) + "\n")
        for k, i in enumerate(order):
            call = {
                "type": "tool_call",
                "step": k,
                "call_index": k,
                "name": "step",
                "args": {"i": i},
                "is_error": False,
            }
            fh.write(json.dumps(call) + "\n")
        fh.write(json.dumps({"type": "final", "reason": "agent_done"}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--actions", type=int, default=5000)
    n = parser.parse_args().actions
    rng = random.Random(7)
    order = list(range(n))
    rng.shuffle(order)
    # the subprocess first: a child forked later would start with this process's pages in its RSS
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.jsonl"
        write_run(path, n, order)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "evalkit", "score", str(path), "--no-db", "--format", "jsonl"],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        card = json.loads(done.stdout.splitlines()[0])
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(
            f"evalkit score, {n} actions in one ordered block, shuffled run: exit {done.returncode}, "
            f"{wall:.2f} s, peak RSS {rss:.0f} MiB, order {card['vector']['order']}"
        )
    taken: list[int | None] = [None] * n
    for position, action in enumerate(order):
        taken[action] = position
    for name, block in (("one ordered block", None), ("unordered blocks of 50", 50)):
        blocks, ordered = layout(n, block)
        new_s, new_v = timed(counted_order, blocks, ordered, taken)
        old_s, old_v = timed(pairs_order, blocks, ordered, taken)
        print(
            f"{n} actions, {name}: counted {new_s * 1000:.1f} ms, pairs {old_s * 1000:.0f} ms "
            f"(x{new_s / old_s:.4f}); same value: {new_v == old_v} ({new_v})"
        )
    blocks, ordered = layout(n, None)
    new_b, old_b = peak(counted_order, blocks, ordered, taken), peak(pairs_order, blocks, ordered, taken)
    print(
        f"{n} actions, one ordered block, peak traced memory: counted {new_b / 2**20:.2f} MiB, "
        f"pairs {old_b / 2**20:.0f} MiB (x{new_b / old_b:.5f})"
    )


if __name__ == "__main__":
    main()
