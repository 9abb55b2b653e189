"""`evalkit view` keeps its index by the database's change counter (``run_changes``, kept by
triggers): a re-judge that rewrites the annotations in place (same rows, same rowids, new verdicts)
shows in the open viewer, and so does a re-score; the viewer is a real server spoken to over HTTP."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("uvicorn")

import judge_helpers as jh
import view_helpers as vh
from test_view_served import request, served

pytestmark = pytest.mark.slow

UNSAFE_AND_FAILED = dict(vh.JUDGE_ANSWER, safety=0, outcome="fail", rationale="Everything failed (fake judge).")


def fingerprint(db: str) -> list[tuple]:
    """Each judged table's row count and highest rowid."""
    conn = sqlite3.connect(db)
    try:
        return [
            conn.execute(f"SELECT count(*), max(rowid) FROM {t}").fetchone()
            for t in ("scorecards", "annotations", "annotation_values")
        ]
    finally:
        conn.close()


def last_judged(db: str) -> str:
    """The run whose annotation values were written last (the highest rowids)."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_id FROM annotation_values ORDER BY rowid DESC LIMIT 1").fetchone()[0]
    finally:
        conn.close()


def queue(port: int) -> list[tuple[str, str, object]]:
    status, _, text = request(port, "GET", "/api/disagreements?per_page=1000&reveal=1")
    assert status == 200, text
    return [(d["run_id"], d["pairing"], d["judge_value"]) for d in json.loads(text)["disagreements"]]


def audit_list(db: str) -> list[tuple[str, str, object]]:
    from evalkit.agreement.audit import build_audit

    return [(d["run_id"], d["pairing"], d["judge_value"]) for d in build_audit(db, n_resamples=0)["disagreements"]]


judged, db = vh.judged_fixtures("view-index")


def test_a_rejudge_in_place_shows_in_the_open_viewer(db, _server, monkeypatch):
    with served(db) as (port, _line, _pid):
        before = queue(port)
        assert before == audit_list(db) and before
        seen = fingerprint(db)
        run = last_judged(db)
        # the same judge at another temperature, answering the opposite, on the run judged last:
        # the latest answer replaces the earlier one, its rows rewritten under the same rowids
        from evalkit.judges.api import judge_cards, stored_cards

        monkeypatch.setenv("OPENAI_API_KEY", jh.FAKE_KEY)
        _server.reset()
        _server.content = json.dumps(UNSAFE_AND_FAILED)
        warmer = dict(jh.PATIENT, request=dict(jh.PATIENT["request"], temperature=0.5))
        cards = [c for c in stored_cards(db) if c.run_id == run]
        judge_cards(cards, ["openai/smollm2"], db=db, api_base=_server.api_base, config=warmer)
        _server.reset()
        assert fingerprint(db) == seen  # nothing a row count or the highest rowid would notice
        after = queue(port)
        assert after == audit_list(db) and after != before
        assert {v for r, p, v in after if r == run} != {v for r, p, v in before if r == run}
        page = json.loads(request(port, "GET", f"/api/runs/{run}?reveal=1")[2])
        assert [(run, d["pairing"], d["judge_value"]) for d in page["disagreements"]] == [
            x for x in after if x[0] == run
        ]
        runs = json.loads(request(port, "GET", "/api/runs?disagrees=yes&per_page=500&reveal=1")[2])["runs"]
        assert {r["run_id"] for r in runs} == {r for r, _, _ in after}


def test_a_rescore_in_place_shows_in_the_open_viewer(db):
    with served(db) as (port, _line, _pid):
        status, _, text = request(port, "GET", "/api/runs?sort=run&per_page=500&reveal=1")
        first = json.loads(text)["runs"][0]
        conn = sqlite3.connect(db)  # what a re-score with another scorer writes: the same row, a new scalar
        conn.execute("UPDATE scorecards SET scalar = 0.125 WHERE run_id = ?", (first["run_id"],))
        conn.commit()
        conn.close()
        again = json.loads(request(port, "GET", "/api/runs?sort=run&per_page=500&reveal=1")[2])["runs"][0]
        assert again["run_id"] == first["run_id"] and again["scalar"] == 0.125 != first["scalar"]


def test_the_change_counter_moves_every_changed_run_above_the_rest(tmp_path):
    from evalkit.db import open_write

    database = open_write(str(tmp_path / "c.db"))
    conn = database.conn
    for run in ("a", "b", "c"):
        conn.execute("INSERT INTO scorecards (run_id) VALUES (?)", (run,))
    conn.execute("INSERT OR REPLACE INTO scorecards (run_id, scalar) VALUES ('a', 1)")
    conn.execute("INSERT OR IGNORE INTO scorecards (run_id) VALUES ('d')")
    conn.execute("INSERT INTO annotations (annotation_id, run_id, status) VALUES ('x', 'c', 'ok')")
    conn.execute("UPDATE annotations SET status = 'ok' WHERE annotation_id = 'x'")  # c again: above a
    order = [r[0] for r in conn.execute("SELECT run_id FROM run_changes ORDER BY seq")]
    seqs = [r[0] for r in conn.execute("SELECT seq FROM run_changes ORDER BY seq")]
    database.close()
    assert order == ["b", "a", "d", "c"] and len(set(seqs)) == 4
