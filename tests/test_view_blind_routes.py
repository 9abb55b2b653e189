"""Blind means blind, for a script as for a page: `evalkit view` started here and spoken to over
HTTP on 127.0.0.1. Every route of the app, walked blind, gives no verdict away (no class, no
checklist result, no score, no judge value or rationale, no pairing, no disagreement count or
ranking); the JSON hides what the page hides until ``reveal=1``; that reveal is recorded for the
reviewer, so their review saved afterwards through the API is not blind; the blind disagreement
queue is one row a run in an order no verdict decides."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from urllib.parse import quote, urlencode

import pytest

pytest.importorskip("uvicorn")

import view_helpers as vh
from test_view_served import request, served

judged, db = vh.judged_fixtures("view-blind-routes")

RUN = "a320-gemini-2.5-flash-battery-off"  # dangerous, judged safe and passed: safety and outcome disagree

# keys of a JSON answer that carry a verdict: the mechanical scores, a command's class, a checklist
# result, the judge's values, a disagreement's pairing, side, gap or rank, another reviewer's answers
VERDICT_KEYS = {
    "scalar",
    "vector",
    "informative",
    "outcome",
    "unsafe",
    "coverage",
    "extraneous",
    "annotations",
    "probes",
    "label",
    "command",
    "approves",
    "matched_by",
    "missing",
    "repeated_by",
    "hit_by",
    "done_by",
    "calls",
    "passed",
    "all_passed",
    "why",
    "counts",
    "other_commands",
    "pairing",
    "judge_model",
    "judge_value",
    "judge_raw",
    "mechanical_value",
    "direction",
    "gap",
    "gap_share",
    "rank",
    "ratings",
    "blind_ratings",
    "verdicts",
    "note",
}
# text of a page that carries a verdict (the ground truth's own rationales and the rubric's anchors
# may say "failed" or "missing": these are the view's words for a result, not the scenario's)
VERDICT_TEXT = (
    "fake judge",  # the judge's rationale
    "lenient",
    "matched_required",
    "forbidden (",
    "extraneous",
    "repeat_of_required",
    "unapproved",
    "hit by",
    "not done",
    "action missing",
    "actions missing",
    "action done",
    ">missing<",
    "judge_right",
    "mechanical_right",
    "both_wrong",
    "ground_truth_wrong",
    "disagree on",
    "safety_dangerous",
    "Mechanical scores",
    'class="badge',
    "<td>pass</td>",
    "<td>fail</td>",
    'class="bad">unsafe',
    "<th>direction</th>",
    "<th>mechanical</th>",
    "<th>pairing</th>",
)


def keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


def scalars(db: str) -> list[str]:
    """Each run's scalar as JSON and as a page prints it, where it is not 0 or 1 (which any text has)."""
    conn = sqlite3.connect(db)
    values = [r[0] for r in conn.execute("SELECT scalar FROM scorecards WHERE scalar > 0 AND scalar < 1")]
    conn.close()
    return sorted({json.dumps(v) for v in values} | {f"{v:.3f}".rstrip("0") for v in values})


def audit_rows(db: str) -> list[dict]:
    from evalkit.agreement.audit import build_audit

    return build_audit(db, n_resamples=0)["disagreements"]


def get(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, str]:
    return request(port, "GET", path, headers=headers)


def post(port: int, path: str, body, headers: dict) -> tuple[int, dict, str]:
    if isinstance(body, dict) and headers.get("Content-Type") == "application/json":
        data = json.dumps(body).encode()
    else:
        data = urlencode(body).encode()
    return request(port, "POST", path, data, headers)


def follow(port: int, answer: tuple[int, dict, str]) -> tuple[int, dict, str]:
    status, headers, text = answer
    return get(port, headers["location"]) if status == 303 else answer


def assert_blind(where: str, status: int, headers: dict, text: str, secrets: list[str]) -> None:
    assert status < 500, (where, status, text[:300])
    if headers.get("content-type", "").startswith("application/json"):
        doc = json.loads(text)
        top = set(doc) if isinstance(doc, dict) else set()
        leaked = keys(doc) - ({"disagreements"} & top)  # the blind queue's list keeps its name
        assert not leaked & (VERDICT_KEYS | {"disagreements"}), (where, sorted(leaked & VERDICT_KEYS))
        assert "checks" not in top, where  # the mechanical checks (the end state lists its checks' names)
    shown = re.sub(r"<style[^>]*>.*?</style>", "", text, flags=re.S)  # the style sheet names every class
    # a time stamp's seconds ("01:10:50.912Z") are no score, though they may read as one ("0.9")
    shown = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "", shown)
    found = [w for w in (*VERDICT_TEXT, *secrets) if w in shown]
    assert found == [], (where, found)


@pytest.mark.slow
def test_every_route_walked_blind_gives_no_verdict_away(db):
    from evalkit.view.app import create_app
    from evalkit.view.queries import ViewData

    secrets = scalars(db)
    assert secrets  # the walk looks for real numbers
    conn = sqlite3.connect(db)
    runs = sorted(r[0] for r in conn.execute("SELECT run_id FROM scorecards"))
    scenario_runs = [r[0] for r in conn.execute("SELECT run_id FROM scorecards ORDER BY scenario_id, run_id")]
    conn.close()
    walked: set[tuple[str, str]] = set()
    with served(db, "--reviewer", "ann") as (port, _line, _pid):
        token = json.loads(get(port, "/api/session")[2])["csrf_token"]
        js = {"Content-Type": "application/json", "X-CSRF-Token": token}
        form = {"Content-Type": "application/x-www-form-urlencoded"}

        def walk(route: str, method: str, where: str, answer) -> None:
            walked.add((route, method))
            assert_blind(where, *answer, secrets)

        for path in ("/", "/favicon.ico", "/runs", "/disagreements", "/label", "/api/runs", "/api/label"):
            walk(path, "GET", path, follow(port, get(port, path)))
        walk("/api/session", "GET", "/api/session", get(port, "/api/session"))
        walk("/api/disagreements", "GET", "/api/disagreements", get(port, "/api/disagreements?per_page=1000"))
        for path in ("/runs?sort=status&order=desc", "/runs?per_page=3&page=2", "/api/runs?q=battery"):
            walk(path.split("?")[0], "GET", path, get(port, path))
        for run in runs:
            q = quote(run, safe="")
            walk("/runs/{run_id:path}", "GET", run, get(port, f"/runs/{q}"))
            walk("/api/runs/{run_id:path}", "GET", run, get(port, f"/api/runs/{q}"))
            # a refused review re-shows the page: still blind
            bad = {"csrf": token, "reviewer": "ann", "rating.outcome": "maybe", "blind": "1"}
            walk("/runs/{run_id:path}/reviews", "POST", run, post(port, f"/runs/{q}/reviews", bad, form))
            bad_json = {"reviewer": "ann", "ratings": {"outcome": "maybe"}}
            walk("/api/runs/{run_id:path}/reviews", "POST", run, post(port, f"/api/runs/{q}/reviews", bad_json, js))
        a, b = scenario_runs[:2]
        walk("/compare", "GET", "/compare", get(port, "/compare?" + urlencode({"a": a, "b": b})))
        # the queues serve blind pages
        nxt = post(port, "/queue/next", {"csrf": token, "queue": "disagreement", "reviewer": "ann"}, form)
        assert nxt[0] == 303 and "/runs/" in nxt[1]["location"]
        walk("/queue/next", "POST", "queue next", follow(port, nxt))
        walk("/api/queue/next", "POST", "api queue next", post(port, "/api/queue/next", {"reviewer": "bob"}, js))
        made = post(port, "/label/samples", {"csrf": token, "design": "random", "size": "3", "seed": "5"}, form)
        walk("/label/samples", "POST", "new sample", follow(port, made))
        status, _, text = post(port, "/api/label/samples", {"design": "stratified", "m0": 1, "m1": 1, "seed": 2}, js)
        assert status == 201
        walk("/api/label/samples", "POST", "api new sample", (status, {"content-type": "application/json"}, text))
        sample = json.loads(text)["sample_id"]
        label = post(port, f"/api/label/{sample}/next", {"reviewer": "cy"}, js)
        walk("/api/label/{sample}/next", "POST", "api label next", label)
        run = json.loads(label[2])["run_id"]
        walk("/runs/{run_id:path}", "GET", "label page", get(port, vh.run_url(run) + f"?queue=label&sample={sample}"))

        # the blind queue counts runs, not disagreements
        queue = json.loads(get(port, "/api/disagreements?per_page=1000")[2])
        assert queue["total"] == len({d["run_id"] for d in audit_rows(db)}) < len(audit_rows(db))

    app = create_app(ViewData(db)).app
    routes = {(r.path, m) for r in app.routes for m in r.methods - {"HEAD"}}
    assert routes - walked == set()  # a new route is walked here before it ships


@pytest.mark.slow
def test_api_run_is_blind_until_reveal_and_the_reveal_makes_the_next_review_not_blind(db):
    from evalkit.agreement.audit import build_audit

    with served(db, "--reviewer", "ann") as (port, _line, _pid):
        token = json.loads(get(port, "/api/session")[2])["csrf_token"]
        js = {"Content-Type": "application/json", "X-CSRF-Token": token}
        blind = json.loads(get(port, f"/api/runs/{RUN}")[2])
        assert blind["revealed"] is False and keys(blind) & VERDICT_KEYS == set() and "checks" not in blind
        assert "fake judge" not in json.dumps(blind) and "scalar" in blind["hidden"]
        assert [a["action"] for b in blind["checklist"]["blocks"] for a in b["actions"]]  # the ground truth stays
        assert any(e.get("tool") for e in blind["transcript"])  # and the transcript, without classes
        # bob has not asked: his review through the API is blind
        status, _, text = post(
            port, f"/api/runs/{RUN}/reviews", {"reviewer": "bob", "ratings": {"outcome": "fail"}}, js
        )
        assert status == 201 and json.loads(text)["blind"] is True
        # ann asks for the scores (reveal=1): she gets them, and the reveal is recorded for her
        shown = json.loads(get(port, f"/api/runs/{RUN}?reveal=1")[2])
        assert shown["revealed"] is True and shown["vector"]["safety_dangerous"] == 1
        assert "fake judge" in shown["annotations"][0]["rationale"] and shown["disagreements"]
        again = json.loads(get(port, f"/api/runs/{RUN}")[2])  # once shown, shown to her
        assert again["revealed"] is True
        status, _, text = post(
            port, f"/api/runs/{RUN}/reviews", {"reviewer": "ann", "ratings": {"outcome": "fail"}}, js
        )
        assert status == 201 and json.loads(text)["blind"] is False  # sent without "blind": recorded as seen
        # the list: blind unless asked, and a hidden filter or sort is refused
        listed = json.loads(get(port, "/api/runs")[2])
        assert listed["revealed"] is False and not keys(listed["runs"]) & VERDICT_KEYS
        for query in ("outcome=fail", "unsafe=yes", "disagrees=yes", "sort=scalar", "sort=disagreements"):
            status, _, text = get(port, "/api/runs?" + query)
            assert status == 400 and "hidden while reviewing blind" in json.loads(text)["error"], query
        shown = json.loads(get(port, "/api/runs?reveal=1&unsafe=yes&reviewer=dee")[2])
        assert [r["run_id"] for r in shown["runs"]] == [RUN] and shown["runs"][0]["unsafe"] is True
        # dee saw RUN's row in the revealed list: her review is not blind either
        status, _, text = post(
            port, f"/api/runs/{RUN}/reviews", {"reviewer": "dee", "ratings": {"outcome": "fail"}}, js
        )
        assert status == 201 and json.loads(text)["blind"] is False
    counts = build_audit(db, n_resamples=0)["counts"]
    assert (counts["review_ratings"], counts["non_blind_review_ratings"]) == (1, 2)  # bob's only


@pytest.mark.slow
def test_a_reveal_by_a_request_that_names_nobody_counts_for_every_reviewer(db):
    with served(db) as (port, _line, _pid):  # no --reviewer: a script that names nobody
        token = json.loads(get(port, "/api/session")[2])["csrf_token"]
        js = {"Content-Type": "application/json", "X-CSRF-Token": token}
        assert json.loads(get(port, f"/api/runs/{RUN}?reveal=1")[2])["revealed"] is True
        status, _, text = post(
            port, f"/api/runs/{RUN}/reviews", {"reviewer": "eve", "ratings": {"outcome": "fail"}}, js
        )
        assert status == 201 and json.loads(text)["blind"] is False
        # another run, never shown: blind
        other = next(d["run_id"] for d in audit_rows(db) if d["run_id"] != RUN)
        body = {"reviewer": "eve", "ratings": {"outcome": "fail"}}
        status, _, text = post(port, "/api/runs/" + quote(other, safe="") + "/reviews", body, js)
        assert status == 201 and json.loads(text)["blind"] is True


@pytest.mark.slow
def test_the_blind_queue_is_one_row_a_run_in_an_order_no_verdict_decides(db):
    rows = audit_rows(db)
    ranked_runs = list(dict.fromkeys(d["run_id"] for d in rows))
    with served(db, "--reviewer", "ann") as (port, _line, _pid):
        token = json.loads(get(port, "/api/session")[2])["csrf_token"]
        js = {"Content-Type": "application/json", "X-CSRF-Token": token}
        queue = json.loads(get(port, "/api/disagreements?per_page=1000")[2])
        listed = [d["run_id"] for d in queue["disagreements"]]
        assert queue["revealed"] is False and sorted(listed) == sorted(ranked_runs)
        assert listed == sorted(ranked_runs, key=lambda r: hashlib.sha256(r.encode()).hexdigest())
        assert listed != ranked_runs  # the audit's ranking (lenient on safety first) is not the order
        assert {frozenset(d) for d in queue["disagreements"]} == {
            frozenset({"position", "run_id", "scenario_id", "model", "status", "reviewed_by", "claimed_by"})
        }
        assert (queue["total"], queue["progress"]["total"]) == (len(ranked_runs), len(ranked_runs))
        for name in ("pairing=safety", "dimension=outcome"):
            status, _, text = get(port, "/api/disagreements?" + name)
            assert status == 400 and "hidden while reviewing blind" in json.loads(text)["error"], name
        # review next serves the blind order; reveal: true, the audit's ranking
        first = json.loads(post(port, "/api/queue/next", {"reviewer": "ann"}, js)[2])["run_id"]
        assert first == listed[0]
        ranked = json.loads(post(port, "/api/queue/next", {"reviewer": "bob", "reveal": True}, js)[2])["run_id"]
        assert ranked == next(r for r in ranked_runs if r != first)
        # revealed: today's ranked list, each row with its values
        shown = json.loads(get(port, "/api/disagreements?per_page=1000&reveal=1&reviewer=zed")[2])
        assert [(d["run_id"], d["pairing"]) for d in shown["disagreements"]] == [
            (d["run_id"], d["pairing"]) for d in rows
        ]
        page = get(port, "/disagreements")[2]
        assert re.findall(r'class="run">([^<]+)<', page) == listed
