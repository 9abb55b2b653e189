"""Benchmark the score parent's serial work: its share of the CPU with `--workers 2`.

    python benchmarks/bench_parent_share.py [--files 3000] [--repeat 3] [--before TREE]

Generates FILES runs (A320 scenario, four models each running every scenario, every fifth run
failing) spread over 2 scenarios and over 200, interleaved in file order (run i is of scenario
i mod S), and runs whole
`evalkit score DIR --no-db --workers 2` processes (stdout to /dev/null, bytecode cached) for
`--format jsonl` (nothing aggregated is shown), the default table, and `--format json --aggregate`
(every error bar, the pass^k bootstrap too). Each process reports its own CPU time and its
workers' (``resource.getrusage`` of RUSAGE_SELF and RUSAGE_CHILDREN); printed are the parent's share
of the total (target <= 10 %) and the 2-worker wall time over one worker's (target <= 0.6 on an idle
2-core machine: the load average is printed before and after), medians of REPEAT; beside it, for
jsonl, the floor of any split on this machine: two independent one-worker processes, each scoring
half of the files, started together (no pool, no parent, nothing sent between them), over one worker. ``--before
TREE``: an older source tree's processes too, each run beside this tree's (the same load for both),
its figures on the same line, and whether both trees print the same bytes with 1 and 2 workers.
Then one core, in this process: 200 scenarios in interleaved file order against the same files
grouped by scenario (target: 1.0, every scenario validated once however they are ordered). The
machine may be shared: only ratios measured in this one run are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the source tree this benchmark belongs to
sys.path.insert(0, str(ROOT))

from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl  # noqa: E402

CPU_PROBE = """
import resource, sys, time
t0 = time.perf_counter()
import evalkit.cli
try:
    evalkit.cli.cli.main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, time.perf_counter() - t0, file=sys.stderr)
"""
FORMATS = {"jsonl": ["--format", "jsonl"], "table": [], "json --aggregate": ["--format", "json", "--aggregate"]}
PLANS = [
    [read(), say("reset"), cmd("apu_gen", 0), cmd("apu_gen", 1), read(), cmd("apu_gen", 0), cmd("ext_pwr", 1)],
    [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("ext_pwr", 1), read("get_state"), read()],
    [read(), read("get_state"), cmd("ext_pwr", 1), cmd("nav_lights", 1), read(), cmd("bat_1", 0)],
]


def make_runs(directory: Path, files: int, scenarios: int, grouped: bool = False) -> None:
    """``files`` runs over ``scenarios`` scenarios: run i is of scenario i mod S; file names put
    them in that order (interleaved), or grouped by scenario."""
    directory.mkdir(parents=True)
    kinds = [a320_scenario(id=f"task-{j:03d}", title=f"APU GEN fault, variant {j}") for j in range(scenarios)]
    for i in range(files):
        j = i % scenarios
        calls = [say(f"Run {i}.")] + PLANS[i % 3] * 2
        model = f"model-{(i // scenarios) % 4}"  # every scenario run by every model
        recs = trajectory(kinds[j], calls, run_id=f"run-{i:06d}", model=model, passed=i % 5 != 0)
        name = f"s{j:03d}-{i:06d}.jsonl" if grouped else f"{i:06d}.jsonl"
        write_jsonl(directory / name, recs)


def whole_process(
    directory: Path, fmt: list[str], workers: int, env: dict[str, str], out: Path | None = None
) -> tuple[float, float, float]:
    """(parent CPU s, workers' CPU s, wall s) of one `evalkit score` process (its output into
    ``out``, else /dev/null)."""
    argv = [sys.executable, "-c", CPU_PROBE, "score", str(directory), "--no-db", *fmt, "--workers", str(workers)]
    with open(out or os.devnull, "w") as sink:
        # run beside the corpus: `python -c` puts its working directory first on the path, and a
        # source tree there would be imported whatever the PYTHONPATH
        done = subprocess.run(
            argv, stdout=sink, stderr=subprocess.PIPE, text=True, check=True, env=env, cwd=directory.parent
        )
    parent, children, wall = map(float, done.stderr.strip().splitlines()[-1].split())
    return parent, children, wall


def figures(runs: list[tuple[float, float, float]], alone: list[tuple[float, float, float]]) -> tuple[float, float]:
    """The parent's median share of the CPU with 2 workers, and the median wall times' ratio."""
    share = statistics.median(p / (p + c) for p, c, _ in runs)
    return share, statistics.median(w for _, _, w in runs) / statistics.median(w for _, _, w in alone)


def halves(directory: Path, into: Path) -> list[Path]:
    """The corpus's files split in two (first and second half in file order), hard-linked."""
    names = sorted(p.name for p in directory.iterdir())
    parts = [into / "half-1", into / "half-2"]
    for part, chunk in zip(parts, (names[: len(names) // 2], names[len(names) // 2 :])):
        part.mkdir(parents=True)
        for name in chunk:
            os.link(directory / name, part / name)
    return parts


def split_by_hand(parts: list[Path], fmt: list[str], env: dict[str, str]) -> float:
    """Wall time of two independent one-worker processes, each scoring one half, started together:
    the best any split of the work between two processes can do on this machine (no pool, no
    parent, nothing sent between them); the larger of their wall times."""
    argv = [sys.executable, "-c", CPU_PROBE, "score"]
    procs = [
        subprocess.Popen(
            [*argv, str(part), "--no-db", *fmt, "--workers", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=part.parent,
        )
        for part in parts
    ]
    walls = [float(p.communicate()[1].strip().splitlines()[-1].split()[2]) for p in procs]
    return max(walls)


def same_output(directory: Path, fmt: list[str], envs: list[dict[str, str]], tmp: Path) -> bool:
    """Whether every tree prints the same bytes, with 1 worker and with 2."""
    outs = []
    for i, env in enumerate(envs):
        for workers in (1, 2):
            path = tmp / f"out-{i}-{workers}"
            whole_process(directory, fmt, workers, env, path)
            outs.append(path.read_bytes())
    return all(out == outs[0] for out in outs)


def one_core(directory: Path) -> float:
    """CPU seconds of `evalkit score DIR --format jsonl --no-db --workers 1` in this process."""
    import evalkit.cli

    with open(os.devnull, "w") as devnull:
        saved, sys.stdout = sys.stdout, devnull
        t0 = time.process_time()
        try:
            evalkit.cli.cli.main(
                ["score", str(directory), "--format", "jsonl", "--no-db", "--workers", "1", "--no-progress"],
                standalone_mode=False,
            )
        finally:
            sys.stdout = saved
        return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", metavar="TREE", help="an older source tree: measure its processes too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp, "pycache"))
        envs = [{**env, "PYTHONPATH": str(ROOT)}]  # this tree's evalkit, wherever the benchmark is started
        if args.before:
            envs.append({**env, "PYTHONPATH": str(Path(args.before).resolve())})
        corpora = {s: Path(tmp, f"s{s}") for s in (2, 200)}
        for s, directory in corpora.items():
            make_runs(directory, args.files, s)
        print(f"{args.files} files per corpus; load average {os.getloadavg()[0]:.1f}; medians of {args.repeat}")
        for name, e in zip(("now", "before"), envs):
            where = subprocess.run(
                [sys.executable, "-c", "import evalkit; print(evalkit.__file__)"],
                capture_output=True,
                text=True,
                check=True,
                env=e,
                cwd=tmp,
            )
            print(f"{name}: {Path(where.stdout.strip()).parent.parent}")
        shares, walls, floors = [], [], []
        for s, directory in corpora.items():
            parts = halves(directory, Path(tmp, f"halves-{s}"))
            for e in envs:
                whole_process(directory, FORMATS["jsonl"], 2, e)  # fills the bytecode cache
            for name, fmt in FORMATS.items():
                runs: list[list] = [[] for _ in envs]
                alone: list[list] = [[] for _ in envs]
                by_hand: list[float] = []
                for _ in range(args.repeat):  # the trees in turn: each run beside the other's, under the same load
                    for i, e in enumerate(envs):
                        runs[i].append(whole_process(directory, fmt, 2, e))
                        alone[i].append(whole_process(directory, fmt, 1, e))
                    if name == "jsonl":
                        by_hand.append(split_by_hand(parts, fmt, envs[0]))
                share, wall = figures(runs[0], alone[0])
                shares.append(share)
                walls.append(wall)
                line = (
                    f"{s:3d} scenarios, {name:16s}: parent {share:5.1%} of the CPU with --workers 2 (target <= 10%); "
                    f"wall 2 workers / 1 worker = {wall:.2f}"
                )
                if by_hand:
                    floor = statistics.median(by_hand) / statistics.median(w for _, _, w in alone[0])
                    floors.append(floor)
                    line += f" (two independent processes on halves / 1 worker = {floor:.2f})"
                if args.before:
                    old_share, old_wall = figures(runs[1], alone[1])
                    same = same_output(directory, fmt, envs, Path(tmp))
                    line += f"; before: {old_share:5.1%}, {old_wall:.2f}; output {'identical' if same else 'DIFFERS'}"
                print(line)
        print(
            f"goals: the parent's largest share {max(shares):.1%} (target <= 10%); wall 2 workers / 1 worker "
            f"{min(walls):.2f}-{max(walls):.2f} (target <= 0.6 on an idle 2-core machine; load average now "
            f"{os.getloadavg()[0]:.1f}); this machine's floor for any split in two processes (independent "
            f"processes on halves, jsonl): {min(floors):.2f}-{max(floors):.2f}"
        )
        grouped = Path(tmp, "grouped")
        make_runs(grouped, args.files, 200, grouped=True)
        one_core(grouped)  # imports
        inter = min(one_core(corpora[200]) for _ in range(args.repeat))
        group = min(one_core(grouped) for _ in range(args.repeat))
        print(f"one core, 200 scenarios: interleaved / grouped by scenario = {inter / group:.2f} (target 1.0)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
