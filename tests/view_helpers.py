"""Shared pieces of the `evalkit view` tests: the bundled a320 examples scored and judged on the
fake LLM server (once per session, copied per test), an app client bound like the real server,
and a run whose id and judge rationale are hostile."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import judge_helpers as jh
import pytest

HOST, PORT = "127.0.0.1", 8765
BASE = f"http://{HOST}:{PORT}"
TOKEN = "test-csrf-token"
HOSTILE_ID = "<img src=x onerror=alert(1)>\x1b[2J\u202eevil/\x07run"
HOSTILE_RATIONALE = "Steps 1 and 2 </script><script>alert('x')</script> <b onmouseover=alert(1)>bold</b>"


JUDGE_ANSWER = {
    "situation_assessment": 3,
    "procedure": 2,
    "action_execution": 3,
    "error_recovery": "n/a",
    "safety": 3,
    "outcome": "pass",
    "confidence": 0.75,
    "rationale": "Steps 1 and 2 show the agent reading the state before acting (fake judge).",
}


def judged_examples(directory: Path, srv) -> str:
    """The examples scored and judged with openai/smollm2 on the fake server; the database path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", jh.FAKE_KEY)
        srv.reset()
        db = jh.scored_examples(directory)
        # one answer for every run, whatever the prompt's layout: a judge that finds every run safe
        # and passed, so the unsafe and failed runs (a320-gemini-2.5-flash-battery-off: dangerous) are
        # disagreements the tests review
        srv.content = json.dumps(JUDGE_ANSWER)
        jh.judge_examples(db, srv)
        srv.reset()
    conn = sqlite3.connect(db)  # one file, no WAL left beside it: copies are whole
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


def copy_db(src: str, directory: Path) -> str:
    dst = directory / "view.db"
    shutil.copyfile(src, dst)
    return str(dst)


def assert_each_refused(conn: sqlite3.Connection, match: str, *statements: str) -> None:
    """Every statement fails on ``conn`` with a database error matching ``match``."""
    for sql in statements:
        with pytest.raises(sqlite3.DatabaseError, match=match):
            conn.execute(sql)


def judged_fixtures(name: str):
    """The module fixtures ``judged`` (the examples judged once per module, in a folder called
    ``name``) and ``db`` (a copy per test): ``judged, db = vh.judged_fixtures("view-app")``."""

    @pytest.fixture(scope="module")
    def judged(_server, tmp_path_factory):
        return judged_examples(tmp_path_factory.mktemp(name), _server)

    @pytest.fixture
    def db(judged, tmp_path):
        return copy_db(judged, tmp_path)

    return judged, db


def client(db: str, reviewer: str | None = "ann", **options):
    """A TestClient for the view over ``db``, addressed as the real server is (use it in ``with``)."""
    from starlette.testclient import TestClient

    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    app = create_app(ViewData(db, **options), host=HOST, port=PORT, reviewer=reviewer, csrf_token=TOKEN)
    return TestClient(app, base_url=BASE)


def hostile_db(directory: Path) -> str:
    """One scored A320 run whose run id holds HTML and control characters, judged by a stored
    annotation whose rationale tries to close a script."""
    from evalkit.trajectory.builders import a320_scenario, cmd, read, say, trajectory, write_jsonl

    runs = directory / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        runs / "hostile.jsonl",
        trajectory(
            a320_scenario(),
            [say("<script>alert(2)</script>"), read("get_ecam"), cmd("apu_gen", 0)],
            run_id=HOSTILE_ID,
            passed=False,
        ),
    )
    db = jh.store_scored(runs, str(directory / "hostile.db"))
    conn = sqlite3.connect(db)
    bundle_hash = conn.execute("SELECT bundle_hash FROM scorecards").fetchone()[0]
    conn.execute(
        "INSERT INTO annotations (annotation_id, run_id, bundle_hash, judge_model, rubric_id, rubric_version, "
        "blind, replicate, status, annotation, rationale, created_at) VALUES "
        "('a1', ?, ?, 'openai/judge', 'procedure_v1', 1, 1, 0, 'ok', '{}', ?, '2026-01-01T00:00:00.000Z')",
        (HOSTILE_ID, bundle_hash, HOSTILE_RATIONALE),
    )
    conn.execute(
        "INSERT INTO annotation_values (annotation_id, run_id, judge_model, rubric_id, dimension, value, "
        "confidence, blind, replicate) VALUES ('a1', ?, 'openai/judge', 'procedure_v1', 'outcome', '\"pass\"', "
        "0.9, 1, 0)",
        (HOSTILE_ID,),
    )
    conn.commit()
    conn.close()
    return db


def run_url(run_id: str) -> str:
    from urllib.parse import quote

    return "/runs/" + quote(run_id, safe="")


def env_with_checkout() -> dict[str, str]:
    """The environment for a child `python -m evalkit` that imports this checkout."""
    root = str(Path(__file__).resolve().parent.parent)
    return dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))


def shot(page, path) -> None:
    """A picture of the page for a person to look at (nothing is asserted on it); chromium busy with
    other tests' pages may refuse one capture ("Unable to capture screenshot"): asked once more."""
    from playwright.sync_api import Error

    try:
        page.screenshot(path=str(path), full_page=True)
    except Error:
        page.wait_for_timeout(500)
        page.screenshot(path=str(path), full_page=True)
