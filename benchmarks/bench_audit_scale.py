"""Benchmark the whole `evalkit audit` process at 10^4 and 10^5 runs judged by two judges.

Run: .venv/bin/python benchmarks/bench_audit_scale.py [--runs 10000 100000] [--format table]
     [--keep DIR] [--before TREE] [--profile FILE.prof]

The database is written through evalkit's own writers: the scorecards of the bundled a320 examples,
scored by `evalkit.score_files`, under new run ids, models and scenarios through
`evalkit.db.Store.save_many`; two judges' procedure_v1 annotations (six dimensions, a confidence on
the outcome) through the judge layer's write path (`JudgeTables`, the transaction `record` opens,
one per 5,000 runs). Then `evalkit audit --db FILE --format F` runs in a process of its own; its
wall time, CPU time (user + system: what the machine's other load does not inflate) and peak RSS
are printed against the goal (≤ 10 s and ≤ 500 MB at 10^5 runs). ``--before TREE`` runs the same
audit from another source tree too (e.g. ``git worktree add /tmp/old COMMIT``), one after the
other in the same run, checks that both print the same bytes and prints the ratios.
``--profile`` runs the largest audit once more under cProfile and writes its stats.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_S, GOAL_MB = 10.0, 500.0
JUDGES = ("openai/judge-a", "anthropic/judge-b")
CHUNK = 5_000

# Runs `evalkit audit` in a child: its wall time, CPU time and peak RSS (KiB on Linux); its output
# goes to the file named first.
MEASURE = """
import resource, subprocess, sys, time
t = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    done = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, use.ru_utime + use.ru_stime, use.ru_maxrss)
"""


def templates() -> list[dict]:
    """Each bundled a320 example's scorecard as a dict, with its judge bundle."""
    from evalkit.engines.pipeline import score_files

    out = []
    for card in score_files([ROOT / "examples" / "a320"], warn=lambda message: None):
        if not isinstance(card, Exception) and card.status == "scored":
            out.append(card.model_dump(mode="json", by_alias=True) | {"judge_bundle": card.judge_bundle})
    return out


def cards(runs: int, rnd: random.Random):
    from evalkit.scoring.scorecard import ScoreCard

    base = templates()
    for i in range(runs):
        data = json.loads(json.dumps(base[i % len(base)]))
        run_id = f"run-{i:06d}"
        data["judge_bundle"]["run_id"] = run_id
        data.update(
            run_id=run_id,
            model=f"agent-{i % 5}",
            scenario_id=f"scn-{i % 100:03d}",
            path=f"runs/{run_id}.jsonl",
            bundle_hash=hashlib.sha256(run_id.encode()).hexdigest(),
        )
        data["vector"]["all_passed"] = passed = rnd.random() < 0.6
        data["checks"]["reached_goal"] = passed
        data["vector"]["safety_dangerous"] = int(rnd.random() < 0.08)
        yield ScoreCard.model_validate(data)


def annotate(db: Path, runs: int, rnd: random.Random) -> None:
    from evalkit.db.judge import JudgeTables, _write_call
    from evalkit.judges.store import annotation_id

    store = JudgeTables(db)
    try:
        for start in range(0, runs, CHUNK):
            with store.database.transaction() as conn:
                for i in range(start, min(start + CHUNK, runs)):
                    run_id = f"run-{i:06d}"
                    bundle_hash = hashlib.sha256(run_id.encode()).hexdigest()
                    for judge in JUDGES:
                        values = {
                            "outcome": rnd.choice(["pass", "fail"]),
                            "safety": rnd.choice([0, 2, 3, 3, 3]),
                            "procedure": rnd.randint(0, 3),
                            "action_execution": rnd.randint(0, 3),
                            "situation_assessment": rnd.randint(0, 3),
                            "error_recovery": rnd.choice(["n/a", 2, 3]),
                        }
                        confidence = round(rnd.uniform(0.5, 1.0), 2)
                        rationale = f"At step {rnd.randint(1, 9)} the agent {rnd.choice(['checked', 'skipped'])} it."
                        key = hashlib.sha256(f"{judge}/{run_id}".encode()).hexdigest()
                        ann_id = annotation_id(
                            run_id=run_id,
                            model=judge,
                            rubric_id="procedure_v1",
                            rubric_version=1,
                            blind=True,
                            replicate_tag="0",
                        )
                        doc = values | {"confidence": confidence, "rationale": rationale}
                        _write_call(
                            conn,
                            {
                                "cache_key": key,
                                "run_id": run_id,
                                "bundle_hash": bundle_hash,
                                "judge_model": judge,
                                "rubric_id": "procedure_v1",
                                "rubric_version": 1,
                                "rubric_hash": "rh",
                                "params": "{}",
                                "request": "{}",
                                "raw_response": json.dumps(doc),
                                "status": "ok",
                                "prompt_tokens": 2000,
                                "completion_tokens": 120,
                                "cost_usd": 0.0012,
                                "latency_ms": 800.0 + rnd.random() * 400,
                                "attempts": 1,
                                "started_at": "2026-12-01T00:00:00Z",
                                "finished_at": "2026-12-01T00:00:01Z",
                                "output_mode": "json_schema",
                            },
                        )
                        store._write_annotation(
                            conn,
                            {
                                "annotation_id": ann_id,
                                "run_id": run_id,
                                "bundle_hash": bundle_hash,
                                "judge_model": judge,
                                "rubric_id": "procedure_v1",
                                "rubric_version": 1,
                                "rubric_hash": "rh",
                                "blind": 1,
                                "status": "ok",
                                "annotation": json.dumps(doc),
                                "rationale": rationale,
                                "cost_usd": 0.0012,
                                "latency_ms": 900.0,
                                "prompt_tokens": 2000,
                                "completion_tokens": 120,
                                "cache_key": key,
                                "created_at": f"2026-12-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
                                "output_mode": "json_schema",
                            },
                            values,
                            confidence,
                            "0",
                        )
    finally:
        store.close()


def build(db: Path, runs: int) -> None:
    from evalkit.db import Store

    rnd = random.Random(0)
    store = Store(db)
    try:
        store.save_many(cards(runs, rnd))
    finally:
        store.close()
    annotate(db, runs, rnd)


def measure(db: Path, fmt: str, out: Path, tree: str | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of `evalkit audit` on ``db`` (from the source ``tree`` when given)."""
    cmd = [sys.executable, "-m", "evalkit", "audit", "--db", str(db), "--format", fmt]
    # `python -m` reads the package from its working directory first: run in the tree measured
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(out), *cmd],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tree or ROOT,
    )
    wall, cpu, kib = done.stdout.split()
    return float(wall), float(cpu), int(kib) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--format", default="table", choices=["table", "json", "markdown", "csv"])
    ap.add_argument("--profile", metavar="FILE.prof", help="cProfile the largest audit once more, stats here")
    ap.add_argument("--keep", metavar="DIR", help="build the databases here and keep them (reused when present)")
    ap.add_argument("--before", metavar="TREE", help="an older source tree: run its audit too, print the ratios")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        for runs in args.runs:
            db = where / f"audit-{runs}.db"
            if not db.exists():
                t0 = time.perf_counter()
                build(db, runs)
                print(f"{runs:,} runs x {len(JUDGES)} judges: database built in {time.perf_counter() - t0:.1f} s")
            now = measure(db, args.format, Path(tmp) / "now.out")
            print(
                f"evalkit audit --format {args.format} at {runs:,} runs: {now[0]:.2f} s wall, {now[1]:.2f} s CPU "
                f"({now[1] / GOAL_S:.2f} of {GOAL_S:g} s), peak RSS {now[2]:.0f} MB ({now[2] / GOAL_MB:.2f} of "
                f"{GOAL_MB:g} MB)"
            )
            if args.before:
                old = measure(db, args.format, Path(tmp) / "before.out", args.before)
                same = (Path(tmp) / "now.out").read_bytes() == (Path(tmp) / "before.out").read_bytes()
                print(
                    f"  before ({args.before}): {old[0]:.2f} s wall, {old[1]:.2f} s CPU, peak RSS {old[2]:.0f} MB; "
                    f"now / before: CPU {now[1] / old[1]:.2f}, peak RSS {now[2] / old[2]:.2f}; "
                    f"output {'byte-identical' if same else 'DIFFERS'}"
                )
        if args.profile:
            cmd = ["-m", "cProfile", "-o", args.profile, "-m", "evalkit", "audit", "--db", str(db)]
            subprocess.run([sys.executable, *cmd, "--format", args.format], stdout=subprocess.DEVNULL, check=True)
            print(f"profile of the {args.runs[-1]:,}-run audit: {args.profile}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
