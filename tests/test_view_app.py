"""`evalkit view` over HTTP (Starlette's TestClient, addressed like the real server on
127.0.0.1:8765): the Runs table, a run page, the disagreement queue, their JSON twins, and the
local-server safety rules (Host, CSRF, cross-site POST, CSP, escaping, read-only database)."""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

import view_helpers as vh

RUN = "a320-gemini-2.5-flash-battery-off"  # a dangerous command, judged safe: a safety disagreement
MISSING = "a320-gemini-2.5-flash-only-ext-pwr"  # three required actions missing


judged, db = vh.judged_fixtures("view-judged")


@pytest.fixture
def app(db):
    with vh.client(db) as c:
        yield c


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return vh.hostile_db(tmp_path_factory.mktemp("view-hostile"))


def table_dump(
    db: str,
    tables=("runs", "scorecards", "commands", "bundles", "annotations", "annotation_values", "judge_calls", "ratings"),
) -> str:
    conn = sqlite3.connect(db)
    try:
        text = repr([conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables])
    finally:
        conn.close()
    return hashlib.sha256(text.encode()).hexdigest()


# -- pages ------------------------------------------------------------------------------------


def test_runs_page_lists_every_run_with_filters_and_sort_links(app):
    page = app.get("/runs?reveal=1")
    assert page.status_code == 200
    assert "9 runs" in page.text and RUN in page.text
    for name in ("model", "scenario", "status", "outcome", "unsafe", "disagrees", "reviewed", "q"):
        assert f'name="{name}"' in page.text
    assert "sort=scalar" in page.text and "sort=disagreements" in page.text


def test_blind_runs_list_neither_shows_filters_nor_sorts_by_verdicts(app):
    page = app.get("/runs")
    assert page.status_code == 200 and "9 runs" in page.text and RUN in page.text
    for name in ("outcome", "unsafe", "disagrees"):
        assert f'name="{name}"' not in page.text
    assert "sort=scalar" not in page.text and "sort=disagreements" not in page.text
    assert ">unsafe<" not in page.text and 'id="reveal"' in page.text
    for query in ("outcome=fail", "unsafe=yes", "disagrees=yes", "sort=scalar", "sort=disagreements"):
        r = app.get("/runs?" + query)
        assert r.status_code == 400 and "hidden while reviewing blind" in r.text, query
        assert app.get("/runs?reveal=1&" + query).status_code == 200


def test_runs_filters_by_unsafe_status_model_and_disagreement(app):
    def ids(**params):
        return [r["run_id"] for r in app.get("/api/runs", params=dict(params, reveal="1")).json()["runs"]]

    assert ids(unsafe="yes") == [RUN]
    assert ids(status="incomplete") == ["a320-gemini-2.5-flash-crashed-recorder"]
    assert set(ids(model="opus-4-8")) == {r for r in ids() if "opus" in r}
    assert "a320-gemini-2.5-flash-crashed-recorder" not in ids(disagrees="yes")  # never judged
    assert len(ids(disagrees="yes")) + len(ids(disagrees="no")) == 9
    assert ids(outcome="unknown") == ["a320-gemini-2.5-flash-crashed-recorder"]


def test_runs_search_reads_run_ids_and_transcripts(app):
    found = app.get("/api/runs", params={"q": "try one reset"}).json()
    assert found["total"] is None  # a search is not counted
    assert {r["run_id"] for r in found["runs"]} >= {"a320-opus-4-8-full-with-extra"}
    assert [r["run_id"] for r in app.get("/api/runs", params={"q": "ONLY-EXT"}).json()["runs"]] == [MISSING]
    assert app.get("/api/runs", params={"q": "no such text anywhere"}).json()["runs"] == []


def test_runs_sort_and_pages(app):
    first = app.get("/api/runs", params={"sort": "scalar", "order": "desc", "per_page": 4, "reveal": "1"}).json()
    scalars = [r["scalar"] for r in first["runs"]]
    assert scalars == sorted(scalars, reverse=True) and first["has_more"] and first["total"] == 9
    rest = app.get(
        "/api/runs", params={"sort": "scalar", "order": "desc", "per_page": 4, "page": 3, "reveal": 1}
    ).json()
    assert [r["scalar"] for r in rest["runs"]] == [None]  # unscored last
    assert app.get("/api/runs", params={"sort": "nope"}).status_code == 400
    assert "sort must be one of" in app.get("/runs", params={"sort": "nope"}).text


def test_run_page_shows_transcript_classes_and_missing_actions(app):
    page = app.get(vh.run_url(MISSING) + "?reveal=1").text
    assert "Transcript" in page and "set_control" in page
    assert "matched_required" in page
    assert "3 required actions missing" in page and page.count(">missing<") == 3
    danger = app.get(vh.run_url(RUN) + "?reveal=1").text
    assert "forbidden (dangerous)" in danger and "hit by" in danger


def test_run_page_is_blind_until_revealed(app):
    blind = app.get(vh.run_url(RUN)).text
    assert 'id="blind"' in blind and "fake judge" not in blind and 'id="scores"' not in blind
    shown = app.get(vh.run_url(RUN) + "?reveal=1").text
    assert "fake judge" in shown and 'id="scores"' in shown and 'name="blind" value="0"' in shown
    assert '<a href="#step-1">1</a>' in shown  # the rationale's cited steps link to the transcript


def test_run_page_explains_an_incomplete_run(app):
    page = app.get(vh.run_url("a320-gemini-2.5-flash-crashed-recorder")).text
    assert "incomplete: the trajectory has no final record" in page
    assert "no final record" in page


def test_unknown_run_is_404_on_page_and_api(app):
    assert app.get("/runs/nope").status_code == 404
    assert app.get("/api/runs/nope").json() == {"error": "no run 'nope'"}


def test_disagreements_queue_is_the_audit_list(app, db):
    from evalkit.agreement.audit import build_audit

    audit = build_audit(db, n_resamples=0)["disagreements"]
    api = app.get("/api/disagreements?reveal=1").json()
    assert api["total"] == len(audit) > 0
    assert [(d["pairing"], d["run_id"]) for d in api["disagreements"]] == [(d["pairing"], d["run_id"]) for d in audit]
    page = app.get("/disagreements").text
    assert vh.run_url(audit[0]["run_id"]) in page
    assert "fake judge" not in page  # blind by default
    revealed = app.get("/disagreements?reveal=1").text
    assert "fake judge" in revealed and f'href="{vh.run_url(audit[0]["run_id"])}?reveal=1"' in revealed


def test_api_run_has_what_the_page_shows(app):
    run = app.get(f"/api/runs/{MISSING}?reveal=1").json()
    assert run["checklist"]["missing"] == 3
    assert [e["label"] for e in run["transcript"] if e["kind"] == "tool_call"] == ["matched_required"]
    assert run["annotations"][0]["rationale"] and run["rubric"]["id"] == "procedure_v1"
    assert {d["pairing"] for d in run["disagreements"]}


# -- safety of a local server -----------------------------------------------------------------


def test_foreign_host_header_is_refused(app):
    for host in ("evil.example:8765", "attacker.test", "127.0.0.1:9999", ""):
        r = app.get("/runs", headers={"host": host})
        assert r.status_code == 421, host
        assert RUN not in r.text
    assert app.get("/runs", headers={"host": "localhost:8765"}).status_code == 200


def test_post_without_the_csrf_token_is_refused(app, db):
    before = vh_reviews(db)
    form = {"reviewer": "mallory", "rating.outcome": "pass"}
    assert app.post(vh.run_url(RUN) + "/reviews", data=form).status_code == 403
    assert app.post(vh.run_url(RUN) + "/reviews", data=dict(form, csrf="wrong")).status_code == 403
    body = {"reviewer": "mallory", "ratings": {"outcome": "pass"}}
    assert app.post(f"/api/runs/{RUN}/reviews", json=body).status_code == 403
    assert app.post(f"/api/runs/{RUN}/reviews", json=body, headers={"x-csrf-token": "wrong"}).status_code == 403
    # a cross-site form cannot send JSON, and a cross-site Origin is refused even with the token
    assert (
        app.post(
            f"/api/runs/{RUN}/reviews", content="{}", headers={"x-csrf-token": vh.TOKEN, "content-type": "text/plain"}
        ).status_code
        == 415
    )
    for origin in ("http://evil.example", "null"):
        assert (
            app.post(
                vh.run_url(RUN) + "/reviews", data=dict(form, csrf=vh.TOKEN), headers={"origin": origin}
            ).status_code
            == 403
        )
    assert vh_reviews(db) == before == 0


def vh_reviews(db: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return (
            conn.execute("SELECT count(*) FROM reviews").fetchone()[0]
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'reviews'").fetchone()
            else 0
        )
    finally:
        conn.close()


def test_every_response_has_a_strict_csp_with_a_nonce(app):
    r = app.get(vh.run_url(RUN))
    csp = r.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert f'<style nonce="{nonce}">' in r.text and "<script" not in r.text
    assert r.headers["x-content-type-options"] == "nosniff"
    assert app.get(vh.run_url(RUN)).headers["content-security-policy"] != csp  # a nonce per response


def test_run_id_with_html_and_control_characters_is_escaped(hostile):
    with vh.client(hostile) as app:
        for page in (
            app.get("/runs").text,
            app.get(vh.run_url(vh.HOSTILE_ID) + "?reveal=1").text,
            app.get("/disagreements?reveal=1").text,
        ):
            assert "<img" not in page and "onerror=alert(1)>" not in page
            assert "\x1b" not in page and "\u202e" not in page and "\x07" not in page
        page = app.get(vh.run_url(vh.HOSTILE_ID)).text
        assert "&lt;img src=x onerror=alert(1)&gt;\\x1b[2J\\u202eevil/\\x07run" in page
        assert "<script" not in page and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
        assert (
            app.get("/api/runs/" + vh.run_url(vh.HOSTILE_ID).removeprefix("/runs/")).json()["run_id"] == vh.HOSTILE_ID
        )


def test_rationale_containing_script_close_is_inert(hostile):
    with vh.client(hostile) as app:
        page = app.get(vh.run_url(vh.HOSTILE_ID) + "?reveal=1").text
        assert "</script>" not in page and "<script" not in page and "<b onmouseover" not in page
        assert "&lt;/script&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
        assert '<a href="#step-1">1</a>' in page  # citation links are the only markup added
        api = app.get("/api/runs/" + vh.run_url(vh.HOSTILE_ID).removeprefix("/runs/"))
        assert api.headers["content-type"] == "application/json"
        assert api.json()["annotations"][0]["rationale"] == vh.HOSTILE_RATIONALE


def test_the_database_is_only_written_in_the_review_tables(app, db):
    before = table_dump(db)
    for url in ("/runs", vh.run_url(RUN), "/disagreements", "/api/runs", f"/api/runs/{RUN}", "/api/disagreements"):
        assert app.get(url).status_code == 200
    r = app.post(
        f"/api/runs/{RUN}/reviews",
        json={"reviewer": "ann", "ratings": {"outcome": "fail"}},
        headers={"x-csrf-token": vh.TOKEN},
    )
    assert r.status_code == 201, r.text
    assert table_dump(db) == before and vh_reviews(db) == 1


def test_review_writer_cannot_write_any_other_table(db):
    from evalkit.db.reviews import ReviewTables

    writer = ReviewTables(db)
    try:
        vh.assert_each_refused(
            writer.database.conn,
            "not authorized",
            "DELETE FROM scorecards",
            "UPDATE annotations SET rationale = 'x'",
            "INSERT INTO ratings VALUES ('a', 'b', 'human', 'd', '1', NULL, NULL)",
            "DROP TABLE runs",
        )
    finally:
        writer.close()
