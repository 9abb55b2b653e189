"""Reviews recorded in `evalkit view`: append-only with who and when, an edit supersedes, blindness
kept per rating, and what `evalkit audit` makes of them (human ratings like imported ones, the
adjudications section)."""

from __future__ import annotations

import re
import sqlite3

import pytest

pytest.importorskip("starlette")

import view_helpers as vh

from evalkit.agreement.audit import build_audit
from evalkit.db import open_readonly
from evalkit.db.reviews import read_reviews

pytestmark = pytest.mark.slow

RUN = "a320-gemini-2.5-flash-battery-off"  # safety: judge says safe, mechanical unsafe


judged, db = vh.judged_fixtures("view-reviews")


def post_form(app, run_id: str, **fields):
    data = {"csrf": vh.TOKEN, "reviewer": "ann", "blind": "1"}
    data.update({k.replace("__", "."): v for k, v in fields.items()})
    return app.post(vh.run_url(run_id) + "/reviews", data=data, follow_redirects=False)


def post_json(app, run_id: str, body: dict):
    return app.post(f"/api/runs/{run_id}/reviews", json=body, headers={"x-csrf-token": vh.TOKEN})


def audit(db):
    return build_audit(db, n_resamples=0)


def test_blind_review_counts_in_the_audit_as_human_ratings_and_verdicts(db):
    before = audit(db)
    assert before["counts"]["review_ratings"] == 0
    with vh.client(db) as app:
        r = post_form(
            app,
            RUN,
            rating__outcome="fail",
            rating__safety="0",
            verdict__safety="mechanical_right",
            note="cut battery 1",
        )
        assert r.status_code == 303 and "saved=1" in r.headers["location"]
        shown = app.get(r.headers["location"]).text
        assert 'id="saved"' in shown and "fake judge" in shown  # answered: the scores are revealed
    after = audit(db)
    assert after["counts"]["review_ratings"] == 2
    outcome = next(e for e in after["raters"] if e["dimension"] == "outcome")
    assert "ann" in outcome["raters"]
    safety = next(e for e in after["adjudications"] if e["pairing"] == "safety")
    assert (safety["adjudicated"], safety["judge_errors"], safety["judge_error_rate"]["value"]) == (1, 1, 1.0)
    assert safety["reviewers"] == ["ann"]


def test_adjudication_section_in_the_audit_text_only_with_verdicts(db):
    from evalkit.agreement.audit_output import audit_markdown, audit_text

    assert "Adjudications" not in audit_text(audit(db))
    with vh.client(db) as app:
        assert post_json(app, RUN, {"verdicts": {"safety": "ground_truth_wrong"}}).status_code == 201
    report = audit(db)
    text, markdown = audit_text(report), audit_markdown(report)
    assert "== Adjudications: who was wrong ==" in text and "## Adjudications: who was wrong" in markdown
    safety = next(e for e in report["adjudications"] if e["pairing"] == "safety")
    assert (safety["ground_truth_errors"], safety["mechanical_error_rate"]["value"]) == (1, 1.0)


def test_an_edit_supersedes_and_the_history_is_kept(db):
    with vh.client(db) as app:
        post_form(app, RUN, rating__outcome="fail", verdict__safety="judge_right")
        post_form(app, RUN, rating__outcome="pass", verdict__safety="mechanical_right")
        page = app.get(vh.run_url(RUN)).text
    with open_readonly(db) as d:
        history = read_reviews(d, RUN)
    assert [r.revision for r in history] == [2, 1] and [r.current for r in history] == [True, False]
    assert history[0].supersedes == history[1].review_id and history[0].reviewer == "ann" and history[0].created_at
    assert "(superseded)" in page
    safety = next(e for e in audit(db)["adjudications"] if e["pairing"] == "safety")
    assert (safety["verdicts"], safety["judge_errors"], safety["scorer_errors"]) == (1, 1, 0)


def test_a_rating_changed_after_the_reveal_is_not_blind(db):
    with vh.client(db) as app:
        post_form(app, RUN, rating__outcome="fail", rating__safety="0")
        post_form(app, RUN, blind="0", rating__outcome="fail", rating__safety="1")
    with open_readonly(db) as d:
        latest = read_reviews(d, RUN)[0]
    assert latest.blind is False and latest.blind_ratings == ("outcome",)
    counts = audit(db)["counts"]
    assert (counts["review_ratings"], counts["non_blind_review_ratings"]) == (1, 1)


def test_reviews_are_append_only(db):
    with vh.client(db) as app:
        post_form(app, RUN, rating__outcome="fail", verdict__safety="unclear")
    conn = sqlite3.connect(db)
    try:
        vh.assert_each_refused(
            conn,
            "append-only",
            "UPDATE reviews SET reviewer = 'eve'",
            "DELETE FROM reviews",
            "DELETE FROM review_ratings",
            "UPDATE adjudications SET verdict = 'judge_right'",
        )
    finally:
        conn.close()


@pytest.mark.parametrize(
    "body, message",
    [
        ({"ratings": {"outcome": "maybe"}}, "ratings.outcome: 'maybe' is not one of pass, fail"),
        ({"ratings": {"safety": 7}}, "ratings.safety: 7 is not one of 3, 2, 1, 0"),
        ({"ratings": {"flavour": 1}}, "ratings.flavour: not a dimension of rubric procedure_v1"),
        ({"verdicts": {"safety": "judge_wrong"}}, "verdicts.safety: 'judge_wrong' is not one of judge_right"),
        ({"verdicts": {"taste": "unclear"}}, "verdicts.taste: not a pairing"),
        ({"ratings": {}, "note": "  "}, "nothing to save"),
        ({"reviewer": "a\x1bb", "note": "x"}, "reviewer: printable text"),
        ({"note": "x", "blind": "yes"}, "blind: true or false"),
        ({"note": "x", "score": 1}, "unknown field 'score'"),
    ],
)
def test_a_bad_review_is_refused_with_one_line_naming_the_field(db, body, message):
    with vh.client(db) as app:
        r = post_json(app, RUN, body)
        assert r.status_code == 400 and message in r.json()["error"] and "\n" not in r.json()["error"]
        form = post_form(app, RUN, rating__outcome="maybe")
        assert form.status_code == 400 and "ratings.outcome" in form.text and 'id="review-form"' in form.text
    with vh.client(db, reviewer=None) as app:
        assert "reviewer: a name is required" in post_json(app, RUN, {"note": "x"}).json()["error"]
    assert audit(db)["counts"]["review_ratings"] == 0


def test_a_review_of_a_transcript_the_run_no_longer_has_is_left_out(db):
    with vh.client(db) as app:
        post_form(app, RUN, rating__outcome="fail", verdict__safety="mechanical_right")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE scorecards SET bundle_hash = 'rescored' WHERE run_id = ?", (RUN,))
    conn.commit()
    conn.close()
    report = audit(db)
    assert report["counts"]["review_ratings"] == 0
    assert all(e["verdicts"] == 0 for e in report["adjudications"])


def test_an_older_database_is_written_only_by_the_first_review(db):
    conn = sqlite3.connect(db)
    for name in ("adjudications", "review_ratings", "reviews"):
        conn.execute(f"DROP TABLE {name}")
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()
    with open(db, "rb") as fh:
        before = fh.read()
    with vh.client(db) as app:
        for url in ("/runs", vh.run_url(RUN), "/disagreements", "/runs?reviewed=yes"):
            assert app.get(url).status_code == 200
        with open(db, "rb") as fh:
            assert fh.read() == before  # viewing never writes
        assert post_form(app, RUN, rating__outcome="fail").status_code == 303
        assert "ann" in app.get(vh.run_url(RUN)).text.split('id="review-history"')[1]
        assert [r["run_id"] for r in app.get("/api/runs", params={"reviewed": "yes"}).json()["runs"]] == [RUN]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def test_three_reviewers_give_the_alt_test_its_humans(db):
    with vh.client(db) as app:
        runs = [r["run_id"] for r in app.get("/api/runs", params={"status": "scored"}).json()["runs"]]
        for who in ("ann", "bo", "cy"):
            for run in runs:
                assert post_json(app, run, {"reviewer": who, "ratings": {"outcome": "pass"}}).status_code == 201
    outcome = next(e for e in audit(db)["raters"] if e["dimension"] == "outcome")
    assert {"ann", "bo", "cy"} <= set(outcome["raters"])
    assert [t["judge"] for t in outcome["alt_test"]] == ["openai/smollm2@procedure_v1"]


def test_adjudications_in_the_audit_csv_only_with_verdicts(db):
    from evalkit.agreement.audit_output import audit_csv

    assert ",adjudications," not in audit_csv(audit(db)) and "adjudications," not in audit_csv(audit(db))
    with vh.client(db) as app:
        assert post_json(app, RUN, {"verdicts": {"safety": "both_wrong"}}).status_code == 201
    text = audit_csv(audit(db))
    assert "adjudications,safety,,,both_wrong,1," in text
    assert (
        "adjudications,safety,,,judge_error_rate,1.0," in text
        and "adjudications,safety,,,mechanical_error_rate,1.0," in text
    )


# what a blind run page must not show: a command's class, a checklist verdict, a disagreement
BLIND_WORDS = (
    "matched_required",
    "forbidden (dangerous)",
    "extraneous",
    "unapproved",
    "repeat_of_required",
    "hit by",
    "not done",
    ">missing<",
    "required action missing",
    ">passed<",
    ">failed<",
    "mechanical_right",
    "judge_right",
    'name="verdict.',
    "disagree on",
    'class="badge',
    "fake judge",
)


def without_style(html: str) -> str:
    """The page without its stylesheet (which names every badge class)."""
    return re.sub(r"<style[^>]*>.*?</style>", "", html, flags=re.S)


def test_a_blind_run_page_shows_no_class_verdict_or_disagreeing_dimension_until_answered(db):
    with vh.client(db) as app:
        blind = without_style(app.get(vh.run_url(RUN)).text)
        assert 'id="blind"' in blind and 'id="checklist-blind"' in blind
        assert "bat_1 = 0" in blind and "exact: control and value" in blind  # the ground truth and its rules
        assert [w for w in BLIND_WORDS if w in blind] == []
        r = post_form(app, RUN, rating__outcome="fail", rating__safety="0")
        shown = without_style(app.get(r.headers["location"]).text)
    assert all(w in shown for w in ("matched_required", "forbidden (dangerous)", "hit by", ">missing<"))
    assert 'name="verdict.safety"' in shown and "disagree on safety" in shown and "fake judge" in shown


def test_ratings_given_blind_stay_blind_when_the_verdicts_follow_the_reveal(db):
    with vh.client(db) as app:
        first = post_form(app, RUN, rating__outcome="fail", rating__safety="0")
        revealed = app.get(first.headers["location"]).text
        assert 'name="blind" value="0"' in revealed  # the second answer is given seeing the scores
        post_form(app, RUN, blind="0", rating__outcome="fail", rating__safety="0", verdict__safety="mechanical_right")
    with open_readonly(db) as d:
        latest, answered_blind = read_reviews(d, RUN)
        verdicts = list(
            d.rows("SELECT pairing, verdict, blind FROM adjudications WHERE review_id = ?", (latest.review_id,))
        )
    assert answered_blind.blind and set(answered_blind.blind_ratings) == {"outcome", "safety"}
    assert latest.blind is False and set(latest.blind_ratings) == {"outcome", "safety"}
    assert [tuple(v) for v in verdicts] == [("safety", "mechanical_right", 0)]
    counts = audit(db)["counts"]
    assert (counts["review_ratings"], counts["non_blind_review_ratings"]) == (2, 0)


def test_a_run_two_reviewers_judged_is_one_adjudicated_run_and_two_verdicts_in_the_table(db):
    """Without the verdicts column, the kinds (2) added up to more than "adjudicated" (1), which the
    table did not explain."""
    from evalkit.agreement.audit_output import audit_markdown

    with vh.client(db) as app:
        assert post_json(app, RUN, {"reviewer": "ann", "verdicts": {"safety": "mechanical_right"}}).status_code == 201
        assert post_json(app, RUN, {"reviewer": "bob", "verdicts": {"safety": "unclear"}}).status_code == 201
    report = audit(db)
    safety = next(e for e in report["adjudications"] if e["pairing"] == "safety")
    assert (safety["adjudicated"], safety["verdicts"]) == (1, 2)
    lines = audit_markdown(report).splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| pairing | disagreements | adjudicated |"))
    assert "| verdicts |" in lines[head]
    row = next(line for line in lines[head:] if line.startswith("| safety |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:4] == ["1", "2"]
    assert "a run two reviewers judged is one adjudicated run and two verdicts" in " ".join(lines)


def test_verdicts_on_a_pairing_the_run_no_longer_disagrees_on_are_named_under_the_adjudications_table(db):
    """Such verdicts are left out of every count of the table: without a line saying so, the
    reviewers' verdicts disappeared from the text, markdown and HTML audit (only the JSON had them)."""
    from evalkit.agreement.audit_output import audit_markdown, audit_text

    with vh.client(db) as app:
        assert post_json(app, RUN, {"verdicts": {"safety": "mechanical_right"}}).status_code == 201
    conn = sqlite3.connect(db)  # re-judged since: the judge now calls the run unsafe, as the scorer does
    conn.execute("UPDATE annotation_values SET value = '0' WHERE run_id = ? AND dimension = 'safety'", (RUN,))
    conn.commit()
    conn.close()
    report = audit(db)
    safety = next(e for e in report["adjudications"] if e["pairing"] == "safety")
    assert (safety["verdicts"], safety["not_disagreeing"]) == (0, 1)
    line = "1 verdict on a run that no longer disagrees on its pairing is left out of these counts (safety 1)"
    assert line in audit_text(report) and line in audit_markdown(report)
    report["adjudications"] = [dict(e, not_disagreeing=0) for e in report["adjudications"]]
    assert "no longer disagrees" not in audit_text(report)


def test_a_verdict_on_a_pairing_the_run_does_not_disagree_on_is_refused(db):
    """The form asks only about the run's disagreements; the JSON API took any pairing, and the
    verdict went to no count of the audit."""
    with vh.client(db) as app:
        disagreeing = [d["pairing"] for d in app.get(f"/api/runs/{RUN}?reveal=1").json()["disagreements"]]
        pairing = next(p for p in app.get(f"/api/runs/{RUN}").json()["pairings"] if p not in disagreeing)
        r = post_json(app, RUN, {"verdicts": {"safety": "mechanical_right", pairing: "judge_right"}})
        assert r.status_code == 400
        assert r.json()["error"].startswith(f"verdicts.{pairing}: run {RUN!r} has no {pairing} disagreement (it has: ")
        assert post_json(app, RUN, {"verdicts": {"safety": "mechanical_right"}}).status_code == 201
