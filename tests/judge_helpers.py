"""Shared pieces of the judge tests: a tiny-backoff config, scored databases (the fake server
fixtures `server` / `_server` are in conftest.py).

Everything LLM-related goes through the real litellm client to tests/fake_llm_server.py on
127.0.0.1 (model `openai/<name>`, api_base = the fake server). Backoff is made tiny through the
config override, and litellm's own retries are off in the judge, so every request is counted.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

FAST = {
    "retry": {"attempts": 3, "initial_wait_s": 0.001, "max_wait_s": 0.005, "jitter_s": 0.001, "max_retry_after_s": 5.0},
    "request": {"timeout_s": 5.0, "reask": 1},
}
FAKE_KEY = "sk-test-DO-NOT-STORE-4f9c2a7b1e"


def fast_config(directory: Path) -> str:
    """``directory/fast.toml``: the tiny backoff of FAST as a --judge-config file for the CLI; its path."""
    path = Path(directory) / "fast.toml"
    path.write_text("[retry]\nattempts = 3\ninitial_wait_s = 0.001\nmax_wait_s = 0.005\njitter_s = 0.001\n")
    return str(path)


def write_runs(directory: Path, n: int, start: int = 0) -> Path:
    """n distinct A320 trajectories (different transcripts, so different bundle hashes)."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

    directory.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        calls = [say(f"Run {i}: reading the ECAM first."), read("get_ecam"), cmd("apu_gen", 0), cmd("apu_gen", 1)]
        if i % 2:
            calls.append(cmd("ext_pwr", 1))
        write_jsonl(
            directory / f"run-{i:03d}.jsonl",
            trajectory(a320_scenario(), calls, run_id=f"run-{i:03d}", passed=bool(i % 2)),
        )
    return directory


def store_scored(runs: Path, db: str) -> str:
    """Every trajectory under ``runs`` scored into the database ``db`` (each must score); ``db``."""
    from evalkit.db import Store
    from evalkit.engines.pipeline import score_files

    store = Store(db)
    for card in score_files([runs]):
        assert not isinstance(card, Exception), card
        store.save(card)
    store.close()
    return db


def scored_db(tmp_path: Path, n: int, extra: list[dict] | None = None) -> str:
    """A database holding n scored runs (the lead's scorer and Store), returned as its path."""
    return store_scored(write_runs(tmp_path / "runs", n), str(tmp_path / "evalkit.db"))


def cards_of(db: str) -> list:
    from evalkit.judges.api import stored_cards

    return list(stored_cards(db))


def rows(db: str, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def count(db: str, table: str) -> int:
    return rows(db, f"SELECT COUNT(*) FROM {table}")[0][0]


# -- examples/a320 judged on the fake server (the dialect and grammar tests) --------------------
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "a320"
JUDGEABLE = 7  # 9 example runs: one incomplete (crashed recorder), one provider_error
CALLS = 6  # two of them (the isolation-skipped runs) have identical blind bundles: one call


def scored_examples(tmp_path: Path) -> str:
    from evalkit.db import Store
    from evalkit.engines.pipeline import score_files

    db = str(tmp_path / "a320.db")
    store = Store(db)
    for card in score_files([EXAMPLES], warn=lambda message: None):
        if not isinstance(card, Exception):
            store.save(card)
    store.close()
    return db


def scorecards(db: str) -> list[tuple]:
    return rows(db, "SELECT * FROM scorecards ORDER BY run_id")


# a generous timeout: a timed-out request would be retried, and retries are not what is tested here
PATIENT = dict(FAST, request=dict(FAST["request"], timeout_s=120.0))


def judge_examples(db, srv, **options):
    """Judge the scored examples with openai/smollm2 on the fake server `srv`."""
    from evalkit.judges.api import judge_db

    return judge_db(db, ["openai/smollm2"], api_base=srv.api_base, config=PATIENT, **options)


# -- `evalkit judge` on the command line (the hostile-server and crash tests) ---------------------
HOSTILE_MODEL = "openai/judge-a"


def invoke(*args):
    """``evalkit ARGS`` in this process (click's runner), every argument as a string."""
    from click.testing import CliRunner

    import evalkit.cli

    return CliRunner().invoke(evalkit.cli.cli, [str(a) for a in args], catch_exceptions=False)


def request_config(tmp_path: Path, timeout_s: float = 1.0, attempts: int = 2, extra: str = "") -> Path:
    """``tmp_path/judge.toml``: a request timeout, one re-ask, ``extra`` [request] lines, ``attempts``
    and a tiny backoff; its path."""
    path = tmp_path / "judge.toml"
    path.write_text(
        f"[request]\ntimeout_s = {timeout_s}\nreask = 1\n{extra}\n[retry]\nattempts = {attempts}\n"
        "initial_wait_s = 0.001\nmax_wait_s = 0.005\njitter_s = 0.001\n"
    )
    return path


def judge_cli(db, api_base: str, config, *extra, model: str = HOSTILE_MODEL):
    """``evalkit judge`` of ``db`` by ``model`` on ``api_base``, one call at a time, json_schema
    output mode, the result as JSON, then ``extra`` options."""
    return invoke(
        "judge",
        "--db",
        db,
        "--model",
        model,
        "--api-base",
        api_base,
        "--concurrency",
        1,
        "--output-mode",
        "json_schema",
        "--format",
        "json",
        "--judge-config",
        config,
        *extra,
    )


def judge_command(db, model: str, api_base: str, *options) -> list[str]:
    """The command line of an ``evalkit judge`` process of ``db`` by ``model`` on ``api_base``."""
    return [sys.executable, "-m", "evalkit", "judge", "--db", db, "--model", model, "--api-base", api_base, *options]
