"""Judge throughput against the local fake OpenAI-compatible server (tests/fake_llm_server.py).

N distinct runs are judged at concurrency C through the real litellm client, the server
answering every request after a fixed latency L. Printed, from one run:

- wall time of the judge run ÷ the ideal ceil(N/C)·L (target ≤ 1.15). Startup is excluded: the
  litellm import and its lazy first-call setup are paid by one warm-up call on a scratch database
  before the clock starts (reported separately);
- the number of requests a second, fully cached run sends (target 0).

    python benchmarks/bench_judge.py [--n 64] [--concurrency 8] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from judge_fixtures import make_cards  # noqa: E402


class FakeServerProcess:
    """The fake server in its own process, as a real model server would be: its request handling
    must not share the judge's interpreter (and GIL), or the benchmark would time the fake."""

    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "fake_llm_server.py"), "--port", "0", "--latency", str(latency)],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        self.api_base = line.rsplit(" ", 1)[-1].strip()

    @property
    def count(self) -> int:
        with urllib.request.urlopen(self.api_base.rsplit("/v1", 1)[0] + "/_stats") as reply:
            return json.load(reply)["count"]

    def __enter__(self) -> FakeServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64, help="runs to judge")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake server takes per request")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")

    with FakeServerProcess(args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        from evalkit.judges.api import judge_cards

        warm = judge_cards(make_cards(1), ["openai/bench"], db=os.path.join(tmp, "warmup.db"), api_base=server.api_base)
        assert warm.ok, warm.summary.as_dict()
        startup = time.perf_counter() - t0 - args.latency

        db = os.path.join(tmp, "bench.db")
        cards = make_cards(args.n)

        def timed_run():
            """Judge the cards into bench.db: the result, its wall time and the requests it sent."""
            before = server.count
            start = time.perf_counter()
            # output mode fixed: with `auto` and no remembered mode, the first call would go alone
            # (a probe, docs/judge.md) and add one L that is negotiation, not throughput
            done = judge_cards(
                cards,
                ["openai/bench"],
                db=db,
                api_base=server.api_base,
                concurrency=args.concurrency,
                output_mode="json_schema",
            )
            return done, time.perf_counter() - start, server.count - before

        result, wall, sent = timed_run()
        assert result.ok and result.summary.ok == args.n, result.summary.as_dict()
        cached, cached_wall, cached_requests = timed_run()

    ideal = math.ceil(args.n / args.concurrency) * args.latency
    lat = result.summary.latency()
    print(f"runs N={args.n}  concurrency C={args.concurrency}  server latency L={args.latency:.3f} s")
    print(f"startup (litellm import + first call overhead, excluded): {startup:.2f} s")
    print(f"requests sent: {sent}")
    print(f"wall time: {wall:.3f} s   ideal ceil(N/C)*L: {ideal:.3f} s")
    print(f"wall / ideal ratio: {wall / ideal:.3f}   (target <= 1.15)")
    print(
        f"per-call latency: median {lat['median_ms']:.0f} ms, mean excluding first call "
        f"{lat['mean_excl_first_ms']:.0f} ms"
    )
    print(
        f"cached rerun: {cached_requests} requests, {cached.summary.cache_hits} cache hits, "
        f"{cached_wall:.3f} s   (target 0 requests)"
    )


if __name__ == "__main__":
    main()
