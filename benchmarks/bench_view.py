"""Benchmark `evalkit view` on a generated database of 10^5 runs: the time per page.

Run: .venv/bin/python benchmarks/bench_view.py [--runs N] [--judged SHARE] [--repeat R]

The database is made like a real one (evalkit's schema through `open_write`; each run's card and
judge bundle are the bundled a320 examples' with a new run id, model, scenario, score and a
transcript line of its own; a share of the runs judged, so the disagreement queue is long). Then
the view is opened (the one pass that builds its run index and the audit's disagreements) and
each page is requested through the app (HTML and JSON), R times; the median is printed against the
target of well under a second per page.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_S = 1.0


def templates() -> list[tuple[dict, dict]]:
    """(card, bundle) of each bundled a320 example, as stored by `evalkit score`."""
    from evalkit.db.scores import card_rows
    from evalkit.engines.pipeline import score_files

    out = []
    for card in score_files([ROOT / "examples" / "a320"], warn=lambda message: None):
        if isinstance(card, Exception):
            continue
        rows = card_rows(card)
        out.append((json.loads(rows["scorecards"][0][-1]), json.loads(rows["bundles"][0][1])))
    return out


def build(path: Path, runs: int, judged: float) -> None:
    from evalkit.db import open_write

    rnd = random.Random(0)
    base = templates()
    db = open_write(path)
    rows: dict[str, list[tuple]] = {
        "runs": [],
        "scorecards": [],
        "bundles": [],
        "commands": [],
        "annotations": [],
        "annotation_values": [],
    }
    for i in range(runs):
        card, bundle = (json.loads(json.dumps(x)) for x in base[i % len(base)])
        run_id, model, scenario = f"run-{i:06d}", f"model-{i % 5}", f"scn-{i % 100:03d}"
        bundle["scenario_id"] = scenario
        bundle["transcript"].insert(
            0, {"kind": "assistant", "step": 0, "text": f"token{i:06d} starting", "stop_reason": None}
        )
        text = json.dumps(bundle, separators=(",", ":"))
        bundle_hash = hashlib.sha256(text.encode()).hexdigest()
        passed = rnd.random() < 0.6
        card.update(
            run_id=run_id,
            model=model,
            scenario_id=scenario,
            bundle_hash=bundle_hash,
            scalar=round(rnd.random(), 3) if card["status"] == "scored" else card.get("scalar"),
        )
        if card.get("vector") and card["vector"].get("all_passed") is not None:
            card["vector"]["all_passed"] = passed
        v = card.get("vector") or {}
        rows["runs"].append(
            (
                run_id,
                card.get("path"),
                scenario,
                bundle.get("title"),
                model,
                "bench",
                "2026-01-01T00:00:00Z",
                "agent_done",
                card["status"],
                bundle_hash,
            )
        )
        rows["scorecards"].append(
            (
                run_id,
                scenario,
                model,
                card["status"],
                card.get("scalar"),
                v.get("coverage"),
                v.get("order"),
                v.get("end_state"),
                None if v.get("all_passed") is None else int(v["all_passed"]),
                v.get("safety_dangerous"),
                v.get("safety_anti_procedure"),
                v.get("extraneous"),
                bundle_hash,
                json.dumps(card, separators=(",", ":")),
            )
        )
        rows["bundles"].append((bundle_hash, text))
        for c in card.get("commands") or []:
            rows["commands"].append(
                (
                    run_id,
                    c["index"],
                    c.get("step"),
                    c.get("call_index"),
                    c["tool"],
                    c.get("control"),
                    json.dumps(c.get("value")),
                    json.dumps(c.get("args")),
                    c["class"],
                    c.get("subtype"),
                    c.get("severity"),
                )
            )
        if card["status"] == "scored" and rnd.random() < judged:
            aid = hashlib.sha256(run_id.encode()).hexdigest()[:24]
            values = {
                "outcome": rnd.choice(["pass", "fail"]),
                "safety": rnd.choice([0, 3, 3, 3]),
                "procedure": rnd.randint(0, 3),
                "action_execution": rnd.randint(0, 3),
                "situation_assessment": rnd.randint(0, 3),
                "error_recovery": rnd.choice(["n/a", 2, 3]),
            }
            rows["annotations"].append(
                (
                    aid,
                    run_id,
                    bundle_hash,
                    "openai/bench-judge",
                    "procedure_v1",
                    1,
                    1,
                    0,
                    "ok",
                    json.dumps(values),
                    "Steps 1 and 2 show the agent reading the state.",
                    "2026-01-01T00:00:00.000Z",
                )
            )
            for dim, value in values.items():
                rows["annotation_values"].append(
                    (
                        aid,
                        run_id,
                        "openai/bench-judge",
                        "procedure_v1",
                        dim,
                        json.dumps(value),
                        0.8 if dim == "outcome" else None,
                        1,
                        0,
                    )
                )
    sql = {
        "runs": "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "scorecards": "INSERT INTO scorecards VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "bundles": "INSERT OR IGNORE INTO bundles VALUES (?, ?)",
        "commands": "INSERT INTO commands VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "annotations": "INSERT INTO annotations (annotation_id, run_id, bundle_hash, judge_model, rubric_id, rubric_version, "
        "blind, replicate, status, annotation, rationale, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "annotation_values": "INSERT INTO annotation_values VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    }
    with db.transaction() as conn:
        for table, batch in rows.items():
            conn.executemany(sql[table], batch)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def pages(runs: int) -> list[tuple[str, str]]:
    mid = f"{runs // 2 + 321:06d}"
    deep = max(1, runs // 50 // 2)
    return [
        ("list, page 1", "/runs"),
        (f"list, page {deep}", f"/runs?page={deep}"),
        ("filter model", "/runs?model=model-3"),
        ("filter scenario + status", "/runs?scenario=scn-042&status=scored"),
        ("filter unsafe + judge disagrees", "/runs?unsafe=yes&disagrees=yes&reveal=1"),
        ("filter not reviewed, outcome fail", "/runs?reviewed=no&outcome=fail&reveal=1"),
        ("sort by score, descending", "/runs?sort=scalar&order=desc&reveal=1"),
        (f"sort by disagreements, page {deep // 5 or 1}", f"/runs?sort=disagreements&page={deep // 5 or 1}&reveal=1"),
        ("search a common word", "/runs?q=set_control"),
        ("search one run's text", f"/runs?q=token{mid}"),
        ("search with no match", "/runs?q=no-such-text-anywhere"),
        ("disagreement queue", "/disagreements"),
        ("disagreement queue, page 20", "/disagreements?page=20"),
        ("one run", f"/runs/run-{mid}?reveal=1"),
        ("JSON: filtered runs", "/api/runs?model=model-1&sort=scalar&order=desc&reveal=1"),
        ("JSON: one run", f"/api/runs/run-{mid}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--judged", type=float, default=0.2, help="share of scored runs with a judge annotation")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db", help="use (or build once and keep) this database file")
    args = parser.parse_args()

    from starlette.testclient import TestClient

    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.db) if args.db else Path(tmp) / "view-bench.db"
        t0 = time.perf_counter()
        if not path.exists():
            build(path, args.runs, args.judged)
        print(
            f"database: {args.runs:,} runs, {path.stat().st_size / 1e6:.0f} MB, built in {time.perf_counter() - t0:.1f} s "
            "(not part of the view)"
        )
        data = ViewData(path)
        app = create_app(data, csrf_token="bench")
        t0 = time.perf_counter()
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            assert client.get("/runs").status_code == 200
            start = time.perf_counter() - t0
            t1 = time.perf_counter()
            assert client.get("/disagreements").status_code == 200
            print(
                f"start (open + the first Runs page, which builds the run index): {start:.2f} s "
                f"(target 3 s -> {'ok' if start <= 3 else 'SLOW'}); the first disagreement page, waiting for "
                f"the list computed in the background: {time.perf_counter() - t1:.2f} s; "
                f"{len(data.disagreement_rows):,} disagreements"
            )
            print(f"{'page':40s} {'median s':>9s} {'max s':>7s}  bytes")
            worst = 0.0
            for name, url in pages(args.runs):
                times = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    r = client.get(url)
                    times.append(time.perf_counter() - t)
                    assert r.status_code == 200, (url, r.status_code, r.text[:200])
                worst = max(worst, statistics.median(times))
                print(f"{name:40s} {statistics.median(times):9.3f} {max(times):7.3f}  {len(r.content):,}")
            r = client.post(
                f"/api/runs/run-{args.runs // 2 + 321:06d}/reviews",
                json={"reviewer": "bench", "ratings": {"outcome": "fail"}},
                headers={"x-csrf-token": "bench"},
            )
            t = time.perf_counter()
            client.get("/runs?reviewed=yes")
            print(f"{'after a review: filter reviewed':40s} {time.perf_counter() - t:9.3f}")
        print(
            f"slowest page (median): {worst:.3f} s; target: well under {TARGET_S:.0f} s "
            f"-> {'ok' if worst < TARGET_S else 'SLOW'}"
        )


if __name__ == "__main__":
    main()
