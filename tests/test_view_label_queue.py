"""The label-next queue and the review queue over HTTP, against `evalkit view` started here: a
label sample recorded in the database and served in its seeded order, blind reviews through it that
record how their run was chosen, claims that keep two reviewers apart, and `evalkit estimate`
using only the labels whose design its method allows."""

from __future__ import annotations

import json
import sqlite3

import pytest

pytest.importorskip("uvicorn")

import view_helpers as vh
from click.testing import CliRunner
from test_view_served import request, served

from evalkit.cli import cli

judged, db = vh.judged_fixtures("view-label-queue")


def _session(port: int) -> dict[str, str]:
    token = json.loads(request(port, "GET", "/api/session")[2])["csrf_token"]
    return {"Content-Type": "application/json", "X-CSRF-Token": token}


def _post(port: int, path: str, body: dict, headers: dict) -> tuple[int, dict]:
    status, _, text = request(port, "POST", path, json.dumps(body).encode(), headers)
    return status, json.loads(text)


def _estimate(db: str) -> dict:
    res = CliRunner().invoke(cli, ["estimate", "--db", db, "--format", "json", "--by", "none"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


@pytest.mark.slow
def test_label_next_serves_a_seeded_sample_blind_and_estimate_uses_its_labels(db):
    conn = sqlite3.connect(db)
    runs = sorted(r[0] for r in conn.execute("SELECT run_id FROM scorecards"))
    truth = {r: p for r, p in conn.execute("SELECT run_id, all_passed FROM scorecards")}
    conn.close()
    with served(db) as (port, _, _pid):
        headers = _session(port)
        status, sample = _post(port, "/api/label/samples", {"design": "random", "size": 4, "seed": 7}, headers)
        assert status == 201 and sample["design"] == "random" and sample["seed"] == 7
        assert sample["runs"] == len(runs) and (sample["done"], sample["target"]) == (0, 4)
        sid = sample["sample_id"]
        served_runs = []
        for who in ("ann", "bob", "ann", "bob"):
            status, nxt = _post(port, f"/api/label/{sid}/next", {"reviewer": who}, headers)
            assert status == 200 and nxt["design"] == "random" and nxt["run_id"] not in served_runs
            run = nxt["run_id"]
            served_runs.append(run)
            body = {
                "reviewer": who,
                "ratings": {"outcome": "pass" if truth[run] else "fail"},
                "design": "random",
                "sample": sid,
            }
            status, stored = _post(
                port, "/api/runs/" + vh.run_url(run).removeprefix("/runs/") + "/reviews", body, headers
            )
            assert status == 201 and stored["design"] == "random" and stored["sample"] == sid and stored["blind"]
        status, nxt = _post(port, f"/api/label/{sid}/next", {"reviewer": "ann"}, headers)
        assert (status, nxt["run_id"]) == (200, None)  # four labelled: the sample is complete
        (listed,) = json.loads(request(port, "GET", "/api/label")[2])["samples"]
        assert listed["complete"] and listed["by_reviewer"] == {"ann": 2, "bob": 2}
    # the order is the seed's, recorded: the same seed over the same runs gives the same order
    conn = sqlite3.connect(db)
    order = [
        r[0] for r in conn.execute("SELECT run_id FROM label_sample_runs WHERE sample_id = ? ORDER BY position", (sid,))
    ]
    conn.close()
    import random

    expected = sorted(runs)
    random.Random(7).shuffle(expected)
    assert order == expected and served_runs == expected[:4]
    e = next(x for x in _estimate(db)["estimates"] if x["dimension"] == "outcome")
    conn = sqlite3.connect(db)
    judged_runs = {r[0] for r in conn.execute("SELECT run_id FROM annotation_values WHERE dimension = 'outcome'")}
    conn.close()
    assert e["labels"]["n_labeled"] == len(judged_runs & set(served_runs)) > 0 and e["labels"]["left_out"] == 0
    assert e["methods"]["labels"]["reason"] is None and e["methods"]["labels"]["left_out"] == 0


def test_estimate_leaves_out_disagreement_and_by_hand_labels_and_says_how_many(db):
    conn = sqlite3.connect(db)
    judged_runs = {r[0] for r in conn.execute("SELECT run_id FROM annotation_values WHERE dimension = 'outcome'")}
    conn.close()
    with vh.client(db) as app:
        queue = app.get("/api/disagreements?per_page=1000").json()["disagreements"]
        disagreeing = sorted({d["run_id"] for d in queue} & judged_runs)
        others = sorted(
            r["run_id"]
            for r in app.get("/api/runs?per_page=500").json()["runs"]
            if r["run_id"] not in disagreeing and r["run_id"] in judged_runs
        )
        listed = app.get("/api/runs?per_page=500&reveal=1").json()["runs"]
        outside = next(r["run_id"] for r in listed if not r["disagreements"])
        h = {"x-csrf-token": vh.TOKEN}
        for run in disagreeing[:2]:
            body = {"reviewer": "cy", "ratings": {"outcome": "fail"}, "design": "disagreement"}
            assert app.post(f"/api/runs/{run}/reviews", json=body, headers=h).status_code == 201
        for run in others[:1]:
            r = app.post(f"/api/runs/{run}/reviews", json={"reviewer": "cy", "ratings": {"outcome": "pass"}}, headers=h)
            assert r.status_code == 201 and r.json()["design"] == "by_hand"
        # a design the run does not have is refused, naming the field
        r = app.post(
            f"/api/runs/{outside}/reviews",
            json={"reviewer": "cy", "ratings": {"outcome": "pass"}, "design": "disagreement"},
            headers=h,
        )
        assert r.status_code == 400 and r.json()["error"].startswith("design:")
        r = app.post(
            f"/api/runs/{outside}/reviews",
            json={"reviewer": "cy", "ratings": {"outcome": "pass"}, "design": "random", "sample": "nope"},
            headers=h,
        )
        assert r.status_code == 400 and r.json()["error"].startswith("sample:")
    e = next(x for x in _estimate(db)["estimates"] if x["dimension"] == "outcome")
    assert e["estimate"] is None and e["labels"]["left_out"] == 3
    for name in ("ppi", "labels", "rogan-gladen"):
        assert e["methods"][name]["left_out"] == 3
        assert e["methods"][name]["reason"].startswith("labels not sampled by a design the method allows: 3 labelled")


def test_an_edit_by_hand_keeps_how_the_run_was_chosen(db):
    with vh.client(db) as app:
        h = {"x-csrf-token": vh.TOKEN}
        sample = app.post(
            "/api/label/samples", json={"design": "stratified", "m0": 1, "m1": 1, "seed": 3}, headers=h
        ).json()
        run = app.post(f"/api/label/{sample['sample_id']}/next", json={"reviewer": "ann"}, headers=h).json()["run_id"]
        body = {
            "reviewer": "ann",
            "ratings": {"outcome": "fail"},
            "design": "stratified",
            "sample": sample["sample_id"],
        }
        assert app.post(f"/api/runs/{run}/reviews", json=body, headers=h).status_code == 201
        again = app.post(f"/api/runs/{run}/reviews", json={"reviewer": "ann", "note": "second look"}, headers=h).json()
        assert (again["design"], again["sample"], again["revision"]) == ("stratified", sample["sample_id"], 2)
        listed = app.get("/api/label").json()["samples"][0]
        assert (listed["failures"], listed["passes"], listed["complete"]) == (0, 0, False)  # the edit has no rating


def test_two_reviewers_never_get_the_same_run_from_the_disagreement_queue(db):
    with vh.client(db) as app:
        h = {"x-csrf-token": vh.TOKEN}
        a = app.post("/api/queue/next", json={"reviewer": "ann"}, headers=h).json()["run_id"]
        b = app.post("/api/queue/next", json={"reviewer": "bob"}, headers=h).json()["run_id"]
        assert a and b and a != b
        assert app.post("/api/queue/next", json={"reviewer": "ann"}, headers=h).json()["run_id"] == a  # still hers
        page = app.get(vh.run_url(a) + "?reviewer=bob").text
        assert "Held by ann until" in page
        # saving releases the claim; a verdict takes the run's rows off the queue
        ranked = app.get("/api/disagreements?reveal=1").json()["disagreements"]
        pairing = next(d["pairing"] for d in ranked if d["run_id"] == a)
        body = {"reviewer": "ann", "verdicts": {pairing: "mechanical_right"}, "blind": False, "design": "disagreement"}
        assert app.post(f"/api/runs/{a}/reviews", json=body, headers=h).status_code == 201
        q = app.get("/api/disagreements?reviewer=ann&mine=yes").json()
        assert {d["run_id"] for d in q["disagreements"]} == {a} and q["progress"]["by_reviewer"] == {"ann": q["total"]}
        assert app.get(f"/api/disagreements?pairing={pairing}&reveal=1").json()["progress"]["done"] >= 1


def test_an_expired_claim_is_free_again(db):
    from datetime import UTC, datetime, timedelta

    from evalkit.db.reviews import ReviewTables

    tables = ReviewTables(db)
    try:
        long_ago = datetime.now(UTC) - timedelta(minutes=20)
        assert tables.claim_first(["r1", "r2"], "ann", 15, now=long_ago) == "r1"
        assert tables.claim_first(["r1", "r2"], "bob", 15) == "r1"  # ann's hold ran out 5 minutes ago
        assert tables.claim_first(["r1", "r2"], "cy", 15) == "r2"
    finally:
        tables.close()


def test_queue_filters_are_checked_and_narrow_the_queue(db):
    with vh.client(db) as app:
        every = app.get("/api/disagreements").json()
        models = sorted({d["model"] for d in every["disagreements"]})
        one = app.get(f"/api/disagreements?model={models[0]}").json()
        assert 0 < one["total"] <= every["total"] and {d["model"] for d in one["disagreements"]} == {models[0]}
        dim = app.get("/api/disagreements?dimension=outcome&reveal=1").json()
        assert all(d["pairing"].startswith("outcome") for d in dim["disagreements"])
        assert app.get("/api/disagreements?pairing=nope").status_code == 400
        assert app.get("/api/disagreements?mine=no&reviewer=zed").json()["total"] == every["total"]
        assert app.get("/api/disagreements?mine=yes&reviewer=zed").json()["total"] == 0
        assert app.get("/disagreements?mine=maybe").status_code == 400


def test_two_runs_of_a_scenario_side_by_side_align_on_the_required_actions(db):
    with vh.client(db) as app:
        runs = app.get("/api/runs?per_page=500").json()["runs"]
        by_scenario: dict[str, list[str]] = {}
        for r in runs:
            by_scenario.setdefault(r["scenario_id"], []).append(r["run_id"])
        a, b = next(v for v in by_scenario.values() if len(v) >= 2)[:2]
        page = app.get(f"/compare?a={a}&b={b}&reveal=1")
        assert page.status_code == 200 and page.text.count('<tr class="action">') >= 1
        left = app.get(f"/api/runs/{a}").json()
        required = sum(len(block["actions"]) for block in left["checklist"]["blocks"])
        assert page.text.count('<tr class="action">') == required
        assert app.get(f"/compare?a={a}&b=no-such-run").status_code == 404
        assert app.get(f"/compare?a={a}").status_code == 400


def test_the_revealed_runs_page_has_score_columns_and_charts(db):
    with vh.client(db) as app:
        shown = app.get("/runs?reveal=1").text
        assert 'id="chart-scalar"' in shown and 'id="chart-models"' in shown and ">coverage<" in shown
        blind = app.get("/runs").text
        assert "chart-scalar" not in blind and ">coverage<" not in blind


@pytest.mark.slow
def test_the_label_script_docs_view_md_shows_labels_blind_and_estimate_counts_its_labels(db):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "view.md").read_text()
    (script,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "/api/label/samples" in b]
    conn = sqlite3.connect(db)
    truth = {r: p for r, p in conn.execute("SELECT run_id, all_passed FROM scorecards")}
    judged_runs = {r[0] for r in conn.execute("SELECT run_id FROM annotation_values WHERE dimension = 'outcome'")}
    conn.close()
    seen: list[dict] = []

    def label(run: dict) -> str:  # the reviewer: answers from the truth, sees no score
        seen.append(run)
        return "pass" if truth[run["run_id"]] else "fail"

    with served(db) as (port, _, _pid):
        exec(script.replace("127.0.0.1:8765", f"127.0.0.1:{port}"), {"label": label})
    assert len(seen) == 5 and all(run["revealed"] is False and "vector" not in run for run in seen)
    conn = sqlite3.connect(db)
    stored = conn.execute("SELECT design, sample_id IS NOT NULL, blind FROM reviews").fetchall()
    conn.close()
    assert stored == [("random", 1, 1)] * 5
    e = next(x for x in _estimate(db)["estimates"] if x["dimension"] == "outcome")
    labelled = {run["run_id"] for run in seen}
    assert e["labels"]["n_labeled"] == len(judged_runs & labelled) > 0 and e["labels"]["left_out"] == 0


@pytest.mark.slow
def test_a_share_of_the_sample_is_served_again_to_a_second_reviewer_blind_and_the_audit_gets_human_agreement(db):
    """`second: 0.5`: ann labels the sample; the runs drawn for a second rating (and only those) are
    served to bob, never back to ann, their pages blind to ann's rating; the sample is complete once
    bob has rated them, and the audit's human agreement counts them."""
    from evalkit.db.reviews import second_rating

    with served(db) as (port, _, _pid):
        headers = _session(port)
        body = {"design": "random", "size": 8, "seed": 3, "second": "0.5"}
        status, sample = _post(port, "/api/label/samples", body, headers)
        assert status == 201 and sample["second_share"] == 0.5
        sid = sample["sample_id"]

        def label(who: str) -> str | None:
            status, nxt = _post(port, f"/api/label/{sid}/next", {"reviewer": who}, headers)
            assert status == 200
            run = nxt["run_id"]
            if run is not None:
                review = {"reviewer": who, "ratings": {"outcome": "pass"}, "design": "random", "sample": sid}
                path = "/api/runs/" + vh.run_url(run).removeprefix("/runs/") + "/reviews"
                assert _post(port, path, review, headers)[0] == 201
            return run

        first = [label("ann") for _ in range(8)]
        assert None not in first and len(set(first)) == 8
        due = [run for run in first if second_rating(3, run, 0.5)]
        assert 0 < len(due) < 8  # a share, drawn from the seed
        assert label("ann") is None  # ann is never served her own run again
        (listed,) = json.loads(request(port, "GET", "/api/label")[2])["samples"]
        assert not listed["complete"] and (listed["second_due"], listed["second_done"]) == (len(due), 0)
        # bob's page for a run ann rated is blind to her rating
        page = request(port, "GET", vh.run_url(due[0]) + "?reviewer=bob")[2]
        assert "hidden until you answer" in page and "outcome pass" not in page
        second = []
        while (run := label("bob")) is not None:
            second.append(run)
        assert second == due  # exactly the drawn runs, in the sample's order
        (listed,) = json.loads(request(port, "GET", "/api/label")[2])["samples"]
        assert listed["complete"] and listed["second_done"] == len(due)
        page = request(port, "GET", "/label")[2]
        assert f"second ratings: {len(due)} of {len(due)} so far (each labelled run drawn with chance 50%)" in page
    res = CliRunner().invoke(cli, ["audit", "--db", db, "--format", "json", "--resamples", "0"])
    assert res.exit_code == 0, res.output
    humans = json.loads(res.stdout)["human_agreement"]
    outcome = next(h for h in humans if h["dimension"] == "outcome")
    assert outcome["n_items"] == len(due)


def test_a_stratified_sample_of_a_dimension_no_review_rates_pass_or_fail_is_refused_naming_the_field(db):
    """A review can rate only the rubric's dimensions, and only a pass/fail one has the failures and
    passes the quotas count: a sample of another dimension could never be complete (a 0-3 rating of
    1 would even count as a pass)."""
    with vh.client(db) as app:
        h = {"x-csrf-token": vh.TOKEN}
        for bad in ("outcomes", "safety"):
            body = {"design": "stratified", "dimension": bad, "m0": 1, "m1": 1, "seed": 3}
            answer = app.post("/api/label/samples", json=body, headers=h)
            assert answer.status_code == 400 and answer.json()["error"].startswith("dimension:"), (bad, answer.text)
        assert app.get("/api/label").json()["samples"] == []
        body = {"design": "stratified", "dimension": "outcome", "m0": 1, "m1": 1, "seed": 3}
        assert app.post("/api/label/samples", json=body, headers=h).status_code == 201


def test_a_second_share_that_is_not_a_number_from_0_to_1_is_refused_naming_the_field(db):
    with served(db) as (port, _, _pid):
        headers = _session(port)
        for bad in ("1.5", "-0.1", "half", "nan"):
            status, answer = _post(port, "/api/label/samples", {"design": "random", "size": 2, "second": bad}, headers)
            assert status == 400 and answer["error"].startswith("second:"), (bad, answer)


@pytest.mark.slow
def test_a_view_started_on_a_file_without_the_share_column_sees_it_once_a_sample_adds_it(db):
    """The reader of an older file shows the column as NULL; the first write migrates the file, and
    the view reads it again instead of its stale stand-in."""
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE label_samples DROP COLUMN second_share")
    conn.commit()
    conn.close()
    with served(db) as (port, _, _pid):
        headers = _session(port)
        status, sample = _post(port, "/api/label/samples", {"design": "random", "size": 6, "second": "0.5"}, headers)
        assert status == 201 and sample["second_share"] == 0.5
        (listed,) = json.loads(request(port, "GET", "/api/label")[2])["samples"]
        assert listed["second_share"] == 0.5


def test_the_runs_page_charts_count_the_scored_runs_as_the_aggregates_do(tmp_path):
    """A provider error's run (scalar 0, outcome fail) and an incomplete one are left out of the
    charts, as the aggregates leave them out: the histogram's and the outcome bars' runs are the
    scored runs."""
    import re
    from pathlib import Path

    from click.testing import CliRunner

    from evalkit.cli import cli

    db = tmp_path / "ex.db"
    examples = Path(__file__).resolve().parent.parent / "examples"
    CliRunner().invoke(cli, ["score", str(examples), "--db", str(db)])
    conn = sqlite3.connect(db)
    counts = dict(conn.execute("SELECT status, count(*) FROM scorecards GROUP BY status"))
    conn.close()
    assert counts.get("provider_error") and counts.get("incomplete") and counts.get("scored")
    with vh.client(str(db)) as app:
        page = app.get("/runs?reveal=1").text
    assert f"scalar, {counts['scored']} scored runs" in page
    models = page[page.index('id="chart-models"') : page.index("</figure>", page.index('id="chart-models"'))]
    bars = [int(n) for n in re.findall(r"<title>(\d+) (?:pass|fail|unknown)</title>", models)]
    assert sum(bars) == counts["scored"]


def test_label_next_never_serves_a_reviewer_a_run_they_reviewed_before_and_leaves_it_to_another(db):
    """ann gave a verdict on a run from the disagreement queue (she saw its scores): the label queue
    never serves her that run (her label could not be blind, and a review of ratings only would
    supersede her verdicts), and serves it to bob instead."""
    with vh.client(db) as app:
        h = {"x-csrf-token": vh.TOKEN}
        seen = app.post("/api/queue/next", json={"reviewer": "ann"}, headers=h).json()["run_id"]
        ranked = app.get("/api/disagreements?reveal=1&reviewer=lead").json()["disagreements"]
        pairing = next(d["pairing"] for d in ranked if d["run_id"] == seen)
        body = {"reviewer": "ann", "verdicts": {pairing: "judge_right"}, "blind": False, "design": "disagreement"}
        assert (
            app.post(f"/api/runs/{vh.run_url(seen).removeprefix('/runs/')}/reviews", json=body, headers=h).status_code
            == 201
        )
        runs = app.get("/api/runs?per_page=500").json()["total"]
        sample = app.post("/api/label/samples", json={"design": "random", "size": runs, "seed": 1}, headers=h).json()
        sid = sample["sample_id"]
        served = []
        while (
            run := app.post(f"/api/label/{sid}/next", json={"reviewer": "ann"}, headers=h).json()["run_id"]
        ) is not None:
            served.append(run)
            review = {"reviewer": "ann", "ratings": {"outcome": "pass"}, "design": "random", "sample": sid}
            path = "/api/runs/" + vh.run_url(run).removeprefix("/runs/") + "/reviews"
            assert app.post(path, json=review, headers=h).status_code == 201
        assert seen not in served and len(served) == runs - 1
        assert app.post(f"/api/label/{sid}/next", json={"reviewer": "bob"}, headers=h).json()["run_id"] == seen
        verdicts = [
            r["verdicts"]
            for r in app.get(vh.run_url(seen).replace("/runs/", "/api/runs/", 1) + "?reveal=1&reviewer=ann").json()[
                "reviews"
            ]
            if r["reviewer"] == "ann" and r["current"]
        ]
        assert verdicts == [{pairing: "judge_right"}]


def test_the_ranked_queues_progress_says_it_counts_rows_one_per_judge_not_verdicts(db):
    # with two judges a run's pairing has a row per judge that disagrees, and one verdict covers them
    # all: "ann 32" beside 16 verdicts read as a verdict count
    import re

    with vh.client(db) as app:
        h = {"x-csrf-token": vh.TOKEN}
        ranked = app.get("/api/disagreements?reveal=1").json()
        first = ranked["disagreements"][0]
        body = {
            "reviewer": "ann",
            "verdicts": {first["pairing"]: "judge_right"},
            "blind": False,
            "design": "disagreement",
        }
        assert app.post(f"/api/runs/{first['run_id']}/reviews", json=body, headers=h).status_code == 201
        progress = app.get("/api/disagreements?reveal=1").json()["progress"]
        page = app.get("/disagreements?reveal=1").text
        text = re.sub(
            r"<[^>]+>", "", page[page.index('id="progress"') : page.index("</div>", page.index('id="progress"'))]
        )
        text = " ".join(text.split())
        assert f"{progress['done']} of {progress['total']} rows with a verdict: one row per judge" in text
        assert f"(rows: ann {progress['by_reviewer']['ann']})" in text
