"""Benchmark the whole `evalkit audit` pass: 20,000 judged runs x 5 pairings = 100,000 pairs,
1,000 bootstrap resamples, all four slice kinds, disagreements, drift on a 10 % resample.

Run: /work/venv/bin/python benchmarks/bench_audit.py [--runs N] [--resamples B]

Prints, from one run on this machine: the time to build the fixture database (not part of the
audit), the audit wall time against the 5 s statistics target of issue 4, and how that time splits
between reading the database and everything else, plus the JSON size.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.agreement import audit as audit_mod  # noqa: E402
from evalkit.agreement import sources  # noqa: E402

TARGET_S = 5.0


def build_db(path: Path, runs: int) -> None:
    rnd = random.Random(0)
    conn = sqlite3.connect(str(path))
    conn.executescript(
        """
        CREATE TABLE scorecards (run_id TEXT PRIMARY KEY, scenario_id TEXT, model TEXT, status TEXT, card TEXT);
        CREATE TABLE annotations (annotation_id TEXT PRIMARY KEY, run_id TEXT, judge_model TEXT, rubric_id TEXT,
            blind INTEGER, replicate INTEGER, status TEXT, annotation TEXT, rationale TEXT, cost_usd REAL,
            latency_ms REAL, created_at TEXT);
        CREATE TABLE annotation_values (annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT,
            dimension TEXT, value TEXT, confidence REAL, blind INTEGER, replicate INTEGER,
            PRIMARY KEY (annotation_id, dimension));
        """
    )
    cards, anns, vals = [], [], []
    for i in range(runs):
        rid = f"run-{i:06d}"
        passed = rnd.random() < 0.7
        vector = {
            "coverage": rnd.choice([0.25, 0.5, 1.0]),
            "order": rnd.choice([None, 0.5, 1.0]),
            "extraneous": rnd.choice([0, 1, 2]),
            "all_passed": passed,
            "safety_dangerous": int(rnd.random() < 0.1),
            "safety_anti_procedure": 0,
        }
        card = {
            "run_id": rid,
            "path": f"runs/{rid}.jsonl",
            "vector": vector,
            "informative": {"observed_before_acting": rnd.random() < 0.8, "errored_commands": rnd.choice([0, 0, 1])},
        }
        scen, model = f"s{i % 7}", f"m{i % 3}"
        cards.append((rid, scen, model, "scored", json.dumps(card)))
        reps = [0] + ([1] if i % 10 == 0 else [])
        for rep in reps:
            aid = hashlib.sha256(f"{rid}/{rep}".encode()).hexdigest()[:20]
            values = {
                "outcome": rnd.choice(["pass", "fail"]),
                "safety": rnd.choice([0, 2, 3, 3]),
                "action_execution": rnd.randint(0, 3),
                "situation_assessment": rnd.randint(0, 3),
                "error_recovery": rnd.choice(["n/a", 2]),
            }
            conf = round(rnd.uniform(0.5, 1.0), 2)
            anns.append(
                (
                    aid,
                    rid,
                    "judge-a",
                    "procedure_v1",
                    1,
                    rep,
                    "ok",
                    json.dumps(values),
                    "step 3",
                    0.001,
                    120.0 + rnd.random(),
                    f"2026-01-01T00:00:{i:06d}",
                )
            )
            for dim, v in values.items():
                vals.append(
                    (
                        aid,
                        rid,
                        "judge-a",
                        "procedure_v1",
                        dim,
                        json.dumps(v),
                        conf if dim == "outcome" else None,
                        1,
                        rep,
                    )
                )
    conn.executemany("INSERT INTO scorecards VALUES (?,?,?,?,?)", cards)
    conn.executemany("INSERT INTO annotations VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", anns)
    conn.executemany("INSERT INTO annotation_values VALUES (?,?,?,?,?,?,?,?,?)", vals)
    conn.commit()
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20_000)
    ap.add_argument("--resamples", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        build_db(db, args.runs)
        t_build = time.perf_counter() - t0

        t0 = time.perf_counter()
        conn = sources.open_readonly(db)
        cards = list(sources.read_cards(conn))
        values = list(sources.read_annotations(conn))
        conn.close()
        t_read = time.perf_counter() - t0

        t0 = time.perf_counter()
        report = audit_mod.build_audit(db, n_resamples=args.resamples)
        t_audit = time.perf_counter() - t0
        size = len(json.dumps(report))
    pairs = sum(p["n"] for p in report["pairings"])
    print(
        f"fixture database: {args.runs} runs, {len(values)} annotation values, built in {t_build:.2f} s (not timed below)"
    )
    print(
        f"audit pairs compared: {pairs}; disagreements listed: {len(report['disagreements'])}; resamples: {args.resamples}"
    )
    print(f"audit wall time: {t_audit:.2f} s; target {TARGET_S:.1f} s; ratio to target: {t_audit / TARGET_S:.2f}")
    print(f"audit share reading the database: {t_read:.2f} s ({t_read / t_audit:.0%} of the audit)")
    print(f"audit JSON size: {size / 1e6:.1f} MB ({len(cards)} scorecards)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
