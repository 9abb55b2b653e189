"""What a judge run is billed for its input: the earlier prompt (indented bundle, run marker first)
against the cache-friendly compact layout (judges/prompt_layout.py), live and in a provider batch.

On the bundled examples (examples/a320 with procedure_v1, examples/support with tool_use_v1) and
on a generated set of 1,000 runs over 20 scenarios, every run is judged through the real litellm
client against the fake server (tests/fake_llm_server.py, in this process) in its `per_run` mode,
once per layout. The requests the server received are then counted with a real tokenizer and
priced as a provider bills them:

- tokens: tiktoken's `o200k_base` (GPT-4o's encoding), loaded offline from the copy litellm ships
  (TIKTOKEN_CACHE_DIR pointed at it; nothing is downloaded). If it cannot be loaded, characters / 4,
  said so in the output. A request is its messages' tokens plus 4 per message (the chat format's
  framing);
- cached input: OpenAI's rule, applied to the token streams in the order the server got them: the
  longest prefix an earlier request sent, in whole blocks of 128 tokens, counts when it is at least
  1,024 tokens;
- price table (USD per million tokens): input 1.00, cached input 0.10, output 4.00; a batch bills
  half of each (both OpenAI and Anthropic do).

Printed per data set: input tokens per run before and after, the cached fraction, and the billed
input cost per 1,000 runs: today live, now live, now batch, with the two ratios against today live
(targets: <= 0.35 live, <= 0.2 batch). Then two checks: the annotations of the two layouts are
identical in content (the `per_run` answers depend on the run, not on how the prompt shows it),
and a rerun of the compact layout is served from the cache (0 requests).

    python benchmarks/bench_judge_cost.py [--runs 1000] [--scenarios 20] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

PRICE_IN, PRICE_CACHED, PRICE_OUT, BATCH = 1.00, 0.10, 4.00, 0.5
BLOCK, MIN_CACHED = 128, 1024
TARGET_LIVE, TARGET_BATCH = 0.35, 0.20


def tokenizer():
    """(encode, description): tiktoken's o200k_base from litellm's bundled files, else chars / 4."""
    spec = importlib.util.find_spec("litellm")
    if spec and spec.origin:
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
    try:
        import tiktoken

        enc = tiktoken.get_encoding("o200k_base")
        return enc.encode, "tiktoken o200k_base (offline, the copy litellm ships)"
    except Exception as exc:  # no tokenizer files: an approximation, and the output says so
        return (lambda text: [0] * (len(text) // 4)), f"characters / 4 (tiktoken unavailable: {type(exc).__name__})"


def request_tokens(encode, body: dict, shared_only: bool = False) -> list[int]:
    """The token stream of one chat request: per message a 4-token frame (role) and its text.
    `shared_only`: only the part every run of the scenario shares (the system message and the
    scenario block), to show what the fixed part of the prompt costs by itself."""
    from evalkit.judges.prompt_layout import message_text, shared_end

    stream: list[int] = []
    for message in body.get("messages") or []:
        role = {"system": 1, "user": 2, "assistant": 3}.get(message.get("role"), 4)
        text = message_text(message)
        if shared_only and message.get("role") != "system":
            text = text[: shared_end(text, [])]
            if not text:
                break
        stream += [-1, -role, -1, -1] + list(encode(text))
    return stream


class PrefixCache:
    """OpenAI's automatic prompt cache over token streams: prefixes of whole 128-token blocks."""

    def __init__(self):
        self.seen: set[str] = set()

    def cached(self, stream: list[int]) -> int:
        running, hit, digests = hashlib.sha256(), 0, []
        for i in range(len(stream) // BLOCK):
            running.update(json.dumps(stream[i * BLOCK : (i + 1) * BLOCK]).encode())
            digests.append(running.hexdigest())
            if digests[-1] in self.seen:
                hit = (i + 1) * BLOCK
        self.seen.update(digests)
        return hit if hit >= MIN_CACHED else 0


def generated_runs(directory: Path, runs: int, scenarios: int) -> Path:
    """`runs` A320 trajectories over `scenarios` scenario variants (own id, title, task and
    rationales), each run's calls drawn from a few patterns with its own words."""
    import random

    from evalkit.trajectory.builders import (
        a320_full_procedure,
        a320_isolation_skipped,
        a320_scenario,
        cmd,
        read,
        say,
        trajectory,
        write_jsonl,
    )

    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(24)
    variants = []
    for k in range(scenarios):
        sc = a320_scenario(
            id=f"elec-variant-{k:02d}",
            title=f"APU GEN fault, variant {k}: AC BUS 1+2 lost",
            task_prompt=f"You are the pilot flying (variant {k}). Handle the ECAM alerts following "
            "the QRH, then call done.",
        )
        for block in sc["ground_truth"]["procedure"]:
            for action in block["actions"]:
                action["rationale"] += f" (variant {k})"
        variants.append(sc)
    patterns = [
        a320_full_procedure,
        a320_isolation_skipped,
        lambda: [read(), cmd("bat_1", 0), cmd("apu_gen", 0), cmd("ext_pwr", 1), read()],
        lambda: [read(), say("Only ground power."), cmd("ext_pwr", 1), read()],
    ]
    for n in range(runs):
        k = n * scenarios // runs  # a scenario's runs are neighbours (ids sort that way)
        calls = [say(f"Run {n}: {rng.choice(['reading', 'checking', 'looking at'])} the ECAM first.")]
        calls += rng.choice(patterns)()
        write_jsonl(
            directory / f"run-{k:02d}-{n:04d}.jsonl",
            trajectory(variants[k], calls, run_id=f"run-{k:02d}-{n:04d}", passed=bool(n % 3)),
        )
    return directory


def scored_cards(paths: list[Path]) -> list:
    from evalkit.engines.pipeline import score_files

    return [c for c in score_files([str(p) for p in paths]) if not isinstance(c, Exception) and c.status == "scored"]


def judge_once(server, cards, rubric, db: str, concurrency: int):
    from evalkit.judges.api import judge_cards

    before = len(server.requests)
    result = judge_cards(
        cards,
        ["openai/bench-cost"],
        db=db,
        api_base=server.api_base,
        rubric=rubric,
        concurrency=concurrency,
        output_mode="json_schema",
        config={"retry": {"initial_wait_s": 0.001, "max_wait_s": 0.01, "jitter_s": 0.001}},
    )
    assert result.ok, result.summary.as_dict()
    return result, [r["body"] for r in server.requests[before:]]


def billed(encode, bodies: list[dict], shared_only: bool = False) -> tuple[int, int, float]:
    """(input tokens, cached tokens, live USD) of the requests in the order the server got them."""
    cache = PrefixCache()
    total = cached = 0
    for body in bodies:
        stream = request_tokens(encode, body, shared_only)
        total += len(stream)
        cached += cache.cached(stream)
    return total, cached, ((total - cached) * PRICE_IN + cached * PRICE_CACHED) / 1e6


def bill(encode, bodies: list[dict], runs: int) -> dict:
    total, cached, live = billed(encode, bodies)
    _, _, fixed = billed(encode, bodies, shared_only=True)
    return {
        "runs": runs,
        "requests": len(bodies),
        "input_per_run": total / runs,
        "cached_fraction": cached / total,
        "live_per_1000": live * 1000 / runs,
        "batch_per_1000": live * BATCH * 1000 / runs,
        "fixed_live_per_1000": fixed * 1000 / runs,  # the shared part alone: cold once, then cached
    }


def values(result) -> list:
    return sorted((a["run_id"], json.dumps(a["values"], sort_keys=True)) for a in result.annotations)


def measure(name: str, server, cards, rubric_name: str, encode, tmp: str, concurrency: int) -> dict:
    from evalkit.judges.prompt_layout import INDENTED
    from evalkit.judges.rubrics import load_rubric

    compact = load_rubric(rubric_name)
    indented = dataclasses.replace(compact, prompt_layout=INDENTED)
    server.prompt_cache.enabled = True  # the fake reports cached_tokens too (its own chars/4 measure)
    today, today_bodies = judge_once(server, cards, indented, os.path.join(tmp, f"{name}-today.db"), concurrency)
    now, now_bodies = judge_once(server, cards, compact, os.path.join(tmp, f"{name}-now.db"), concurrency)
    before = len(server.requests)
    rerun, _ = judge_once(server, cards, compact, os.path.join(tmp, f"{name}-now.db"), concurrency)
    runs = len(cards)
    scenarios = {c.scenario_id for c in cards}
    out = {
        "runs_per_scenario": runs / max(1, len(scenarios)),
        "name": name,
        "rubric": rubric_name,
        "today": bill(encode, today_bodies, runs),
        "now": bill(encode, now_bodies, runs),
        "identical": values(today) == values(now) == values(rerun),
        "rerun_requests": len(server.requests) - before,
        "fake_cached_fraction": now.summary.cached_tokens / max(1, now.summary.prompt_tokens),
    }
    out["ratio_live"] = out["now"]["live_per_1000"] / out["today"]["live_per_1000"]
    out["ratio_batch"] = out["now"]["batch_per_1000"] / out["today"]["live_per_1000"]
    return out


def floor(m: dict) -> list[str]:
    """What the shared part alone costs, and, when the live target is missed, how much room that
    leaves for the run's own data (which no cache can serve: it differs per run)."""
    t, n = m["today"], m["now"]
    fixed = n["fixed_live_per_1000"] / t["live_per_1000"]
    rest = m["ratio_live"] - fixed
    lines = [
        f"of which the shared part (system + scenario block: full price once per scenario, then cached; "
        f"{m['runs_per_scenario']:.1f} runs per scenario) is {fixed:.3f}x and the run's own data {rest:.3f}x"
    ]
    if m["ratio_live"] > TARGET_LIVE:
        room = max(0.0, TARGET_LIVE - fixed) / rest if rest > 0 else 0.0
        lines.append(
            f"structural: today's prompt here already gets its system message cached ({t['cached_fraction']:.0%} "
            f"of its input), and the live target leaves the run's own data {room:.0%} of its present size; "
            "the run data is shown whole (nothing dropped), so this set cannot reach the target by layout alone"
            if t["cached_fraction"] > 0
            else f"structural: the live target leaves the run's own data {room:.0%} of its present size; the run "
            "data is shown whole (nothing dropped), so this set cannot reach the target by layout alone"
        )
    return lines


def report(m: dict) -> list[str]:
    t, n = m["today"], m["now"]
    ok = lambda good: "ok" if good else "MISSED"  # noqa: E731
    return [
        f"## {m['name']} ({t['runs']} judged runs, rubric {m['rubric']}, {n['requests']} requests)",
        f"input tokens per run: today {t['input_per_run']:.0f}, now {n['input_per_run']:.0f} "
        f"({n['input_per_run'] / t['input_per_run']:.2f}x)",
        f"cached fraction of input tokens: today {t['cached_fraction']:.1%}, now {n['cached_fraction']:.1%} "
        f"(the fake server's own count: {m['fake_cached_fraction']:.1%})",
        f"billed input cost per 1,000 runs: today live ${t['live_per_1000']:.4f}; now live ${n['live_per_1000']:.4f} "
        f"({m['ratio_live']:.3f}x, target <= {TARGET_LIVE}: {ok(m['ratio_live'] <= TARGET_LIVE)}); "
        f"now batch ${n['batch_per_1000']:.4f} ({m['ratio_batch']:.3f}x, target <= {TARGET_BATCH}: "
        f"{ok(m['ratio_batch'] <= TARGET_BATCH)})",
        *floor(m),
        f"annotations identical in content (per_run mode, both layouts, cached rerun): {m['identical']}",
        f"requests sent by the cached rerun: {m['rerun_requests']} (target 0)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
    from fake_llm_server import FakeLLMServer

    encode, how = tokenizer()
    print(f"tokens: {how}")
    print(
        f"prices (USD per Mtok): input {PRICE_IN:.2f}, cached input {PRICE_CACHED:.2f}, output {PRICE_OUT:.2f}; "
        f"batch {BATCH:g}x of each"
    )
    results = []
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.mode = "per_run"
        sets = [
            ("examples/a320", [ROOT / "examples" / "a320"], "procedure_v1"),
            ("examples/support", [ROOT / "examples" / "support"], "tool_use_v1"),
            (
                f"generated: {args.runs} runs over {args.scenarios} scenarios",
                [generated_runs(Path(tmp) / "generated", args.runs, args.scenarios)],
                "procedure_v1",
            ),
        ]
        for i, (name, paths, rubric) in enumerate(sets):
            server.prompt_cache.clear()  # each data set starts with a cold provider cache
            m = measure(f"set{i}", server, scored_cards(paths), rubric, encode, tmp, args.concurrency)
            m["name"] = name
            results.append(m)
            print("\n".join(report(m)), flush=True)
    missed = [
        m["name"]
        for m in results
        if not (
            m["ratio_live"] <= TARGET_LIVE
            and m["ratio_batch"] <= TARGET_BATCH
            and m["identical"]
            and m["rerun_requests"] == 0
        )
    ]
    print("all targets met" if not missed else f"targets missed on: {', '.join(missed)}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
