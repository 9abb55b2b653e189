"""Where the one-core time of `evalkit score --format jsonl --no-db` goes, stage by stage.

    python benchmarks/profile_score.py [--n 3000] [--cprofile] [--argument-rules]

On the corpus of bench_score.py (N files), each line below adds one stage to the one before and
prints its CPU time (best of 3) and its ratio to decoding every line with ``json.loads`` (the floor
of bench_score's one-core ratio):
  decode         read each file, json.loads every line
  parse          safe_json: the same lines parsed under evalkit's rules (duplicate keys, depth, size)
  + validate     each record validated by its pydantic model (as the reader does it)
  read           the whole reader, compact: bookkeeping, overflow prefilter, judge bundle text
  + score        the ScoreCard
  + output       the card's JSON pieces and its aggregation summary
  whole          what bench_score times: engine, aggregation and the writer included
``--cprofile`` also prints the 25 largest items of a cProfile of the whole run. ``--argument-rules``:
on bench_score's corpus of that name (runs of 5 to 40 calls against a scenario with argument rules).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_score import make_argument_runs, make_runs, score_jsonl  # noqa: E402


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--argument-rules", action="store_true", help="bench_score's --argument-rules corpus")
    args = parser.parse_args()

    from evalkit.aggregate.groups import RunSummary
    from evalkit.present.score_output import card_head_json, card_parts
    from evalkit.scoring import score_trajectory
    from evalkit.trajectory import safe_json
    from evalkit.trajectory.reader import _VALIDATE, _share_scenario, read_trajectory

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp)
        (make_argument_runs if args.argument_rules else make_runs)(corpus, args.n)
        files = sorted(corpus.glob("*.jsonl"))

        def lines():
            for f in files:
                with open(f, "rb") as fh:
                    yield from (line for line in fh if line.strip())

        def decode():
            for f in files:
                for line in f.read_bytes().decode("utf-8").split("\n"):
                    if line.strip():
                        json.loads(line)

        def parse():
            for line in lines():
                safe_json.loads_noting_literals(line)

        def validate():
            for line in lines():
                obj, _ = safe_json.loads_noting_literals(line)
                if obj["type"] == "meta":
                    _share_scenario(obj)
                _VALIDATE[obj["type"]](obj)

        def read():
            for f in files:
                read_trajectory(f, compact=True)

        def score():
            for f in files:
                score_trajectory(read_trajectory(f, compact=True))

        def output():
            for f in files:
                card = score_trajectory(read_trajectory(f, compact=True))
                card_parts(card, "jsonl", card_head_json(card))
                RunSummary.of(card)

        score_jsonl(corpus)  # warm: imports, caches
        stages = [
            ("decode", decode),
            ("parse", parse),
            ("+ validate", validate),
            ("read", read),
            ("+ score", score),
            ("+ output", output),
            ("whole", lambda: score_jsonl(corpus)),
        ]
        floor = None
        previous = 0.0
        print(f"{len(files)} files; load average {os.getloadavg()[0]:.2f}")
        for name, fn in stages:
            t = best_of(fn)
            floor = floor or t
            added = "" if name == "decode" else f"  (+{t - previous:.3f} s)"
            print(f"{name:12s} {t:7.3f} s CPU  {t / floor:5.2f} x decode{added}")
            previous = t if name != "decode" else 0.0
        if args.cprofile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(score_jsonl, corpus)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
