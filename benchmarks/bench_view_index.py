"""Benchmark `evalkit view`'s index at 10^5 runs: a page view after a small judge commit against
the cold build, measured in one run.

Run: .venv/bin/python benchmarks/bench_view_index.py [--runs N] [--changed K] [--repeat R] [--db FILE]

The database is bench_view.py's (10^5 runs, a fifth judged). The view opens it (the cold build: the
run index and the audit's disagreements, one pass). Then, R times, another connection commits what
a judge writes for K runs (the judge's own write path, `JudgeTables.record`: each annotation
rewritten in place with other verdicts), and the next page view (`/runs`, which brings the index up
to date first) is timed; so is a page view with nothing changed. Printed: each median and the ratio
of the cold build to a page view after a commit.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def judge_commit(path: Path, annotation_ids: list[str], rnd: random.Random) -> None:
    """These annotations rewritten with new verdicts, as `evalkit judge` stores an answer that
    replaces an earlier one (one commit each)."""
    from evalkit.db.judge import JudgeTables

    tables = JudgeTables(path)
    try:
        for aid in annotation_ids:
            ann = tables.get_annotation(aid)
            values = {
                "outcome": rnd.choice(["pass", "fail"]),
                "safety": rnd.choice([0, 3]),
                "procedure": rnd.randint(0, 3),
                "action_execution": rnd.randint(0, 3),
                "situation_assessment": rnd.randint(0, 3),
                "error_recovery": rnd.choice(["n/a", 2, 3]),
            }
            ann.update(annotation=json.dumps(values), cache_key=f"bench-{time.time_ns()}-{aid}")
            tables.record({}, ann, values, 0.8, "0", write_call=False)
    finally:
        tables.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--judged", type=float, default=0.2)
    parser.add_argument("--changed", type=int, default=10, help="runs the judge rewrites in each commit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", help="use (or build once and keep) this database file")
    args = parser.parse_args()

    from bench_view import build
    from starlette.testclient import TestClient

    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    rnd = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.db) if args.db else Path(tmp) / "view-bench.db"
        if not path.exists():
            t0 = time.perf_counter()
            build(path, args.runs, args.judged)
            print(f"database: {args.runs:,} runs built in {time.perf_counter() - t0:.1f} s (not part of the view)")
        data = ViewData(path)
        app = create_app(data, csrf_token="bench")
        t0 = time.perf_counter()
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get("/runs").status_code == 200
            assert client.get("/disagreements").status_code == 200  # the list computed in the background, in place
            cold = time.perf_counter() - t0
            import sqlite3

            conn = sqlite3.connect(path)
            judged = [r[0] for r in conn.execute("SELECT annotation_id FROM annotations ORDER BY annotation_id")]
            conn.close()
            quiet, after = [], []
            for _ in range(args.repeat):
                t = time.perf_counter()
                assert client.get("/runs").status_code == 200
                quiet.append(time.perf_counter() - t)
                before = list(data.disagreement_rows)
                judge_commit(path, rnd.sample(judged, args.changed), rnd)
                t = time.perf_counter()
                assert client.get("/runs").status_code == 200
                after.append(time.perf_counter() - t)
                assert data.disagreement_rows != before  # the commit was seen
            print(f"cold build (open + first page): {cold:.3f} s; {len(data.disagreement_rows):,} disagreements")
            print(f"page view, nothing changed:      {statistics.median(quiet):.4f} s (median of {args.repeat})")
            print(
                f"page view after a judge commit of {args.changed} runs: {statistics.median(after):.4f} s "
                f"(median of {args.repeat}, max {max(after):.4f})"
            )
            print(f"ratio cold build / page view after a commit: {cold / statistics.median(after):.0f}x")
            kept = list(data.disagreement_rows)
        fresh = ViewData(path).open()  # the incremental list is the one a cold build makes
        fresh.refresh()
        assert fresh.disagreement_rows == kept, "the incremental index differs from a cold build"
        fresh.close()
        print("the updated disagreement list equals a cold build's")


if __name__ == "__main__":
    main()
