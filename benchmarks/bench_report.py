"""Benchmark the whole `evalkit report --html` process at 10^5 runs against its goals.

Run: .venv/bin/python benchmarks/bench_report.py [--runs 100000] [--judged 0.5] [--keep DIR]
     [--profile FILE.prof] [--browser]

The database is written through evalkit's own writers (tests/report_scale.py: the bundled a320
examples' scorecards under new run ids, 100 scenarios and five models, stored by
`evalkit.db.Store.save_many`; a share of the runs judged by one judge through `JudgeTables`). Then
`evalkit report --db FILE --html report.html` runs in a process of its own; printed: its wall time,
the peak RSS of that whole process, the main page's size and the scenario pages' total, each
with its ratio to the goal (≤ 15 s, ≤ 500 MB, a main page ≤ 5 MB), and, with ``--browser``, the
time Chromium (Playwright) takes to load and lay out the main page (goal ≤ 2 s). ``--profile`` runs
the report once more under cProfile and writes its stats.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

GOAL_S, GOAL_MB, GOAL_PAGE_MB, GOAL_RENDER_S = 15.0, 500.0, 5.0, 2.0

# Runs the command in a child and prints its wall time and peak RSS (KiB on Linux).
MEASURE = """
import resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
if done.returncode:
    sys.exit(done.stderr.decode(errors="replace"))
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(cmd: list[str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True)
    wall, kib = out.stdout.split()
    return float(wall), int(kib) / 1024


def render_time(html: Path) -> float:
    """Seconds from navigation to the first frame after load, in Debian's chromium."""
    from playwright.sync_api import sync_playwright
    from report_browser import CHROMIUM_FLAGS, find_chromium

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=find_chromium(), headless=True, args=[f for f in CHROMIUM_FLAGS if f != "--headless"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        t = time.perf_counter()
        page.goto(html.resolve().as_uri(), wait_until="load")
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        seconds = time.perf_counter() - t
        browser.close()
    return seconds


def main() -> int:
    import report_scale

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--judged", type=float, default=0.5, help="share of the scored runs judged")
    ap.add_argument("--keep", metavar="DIR", help="build the database here and keep it (reused when present)")
    ap.add_argument("--profile", metavar="FILE.prof", help="cProfile the report once more, stats here")
    ap.add_argument("--browser", action="store_true", help="also time chromium loading the main page")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        db = where / f"report-{args.runs}.db"
        if not db.exists():
            t0 = time.perf_counter()
            report_scale.build(db, args.runs, scenarios=100, judged=args.judged)
            print(f"database: {args.runs:,} runs built in {time.perf_counter() - t0:.1f} s (not part of the report)")
        html = Path(tmp) / "report.html"
        cmd = [sys.executable, "-m", "evalkit", "report", "--db", str(db), "--html", str(html)]
        wall, mb = measure(cmd)
        page_mb = html.stat().st_size / 1e6
        pages = list((Path(tmp) / "report-scenarios").iterdir())
        print(
            f"evalkit report at {args.runs:,} runs: {wall:.2f} s ({wall / GOAL_S:.2f} of {GOAL_S:g} s), "
            f"peak RSS {mb:.0f} MB ({mb / GOAL_MB:.2f} of {GOAL_MB:g} MB), main page {page_mb:.2f} MB "
            f"({page_mb / GOAL_PAGE_MB:.2f} of {GOAL_PAGE_MB:g} MB); {len(pages)} scenario pages, "
            f"{sum(p.stat().st_size for p in pages) / 1e6:.1f} MB"
        )
        if args.browser:
            seconds = render_time(html)
            print(f"chromium: main page loaded and laid out in {seconds:.2f} s ({seconds / GOAL_RENDER_S:.2f} of 2 s)")
        if args.profile:
            prof = ["-m", "cProfile", "-o", args.profile, "-m", "evalkit", "report", "--db", str(db)]
            subprocess.run([sys.executable, *prof, "--html", str(html)], stderr=subprocess.DEVNULL, check=True)
            print(f"profile of the {args.runs:,}-run report: {args.profile}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
