"""`evalkit annotations list`: the stored annotations, read-only, in every --format, without a
judge server; `evalkit review export`: the reviews' ratings as the CSV `annotations import` reads."""

from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
import view_helpers as vh
from click.testing import CliRunner

from evalkit.cli import cli

RUN = "a320-gemini-2.5-flash-battery-off"
JUDGED = 7  # the examples' judgeable runs (judge_helpers.JUDGEABLE)


judged, db = vh.judged_fixtures("annotations-list")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_json_lists_every_annotation_with_scores_and_rationale(db):
    r = run("annotations", "list", "--db", db, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "evalkit.annotations/1" and len(doc["annotations"]) == JUDGED
    first = doc["annotations"][0]
    assert first["judge_model"] == "openai/smollm2" and first["rubric"] == "procedure_v1"
    assert first["scores"]["outcome"] in ("pass", "fail") and "safety" in first["scores"]
    assert first["confidence"] == 0.75 and "fake judge" in first["rationale"]
    assert [a["run_id"] for a in doc["annotations"]] == sorted(a["run_id"] for a in doc["annotations"])


@pytest.mark.parametrize("fmt", ["table", "jsonl", "csv", "markdown"])
def test_every_format_lists_the_same_annotations(db, fmt):
    r = run("annotations", "list", "--db", db, "--format", fmt)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    if fmt == "jsonl":
        assert [json.loads(line)["run_id"] for line in lines][:1] == [RUN] and len(lines) == JUDGED
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(r.output)))
        assert len(rows) == JUDGED and "fake judge" in rows[0]["rationale"] and "outcome=" in rows[0]["scores"]
    elif fmt == "markdown":
        assert lines[0].startswith("| judge_model") and len(lines) == JUDGED + 2
    else:
        assert lines[0].startswith("judge_model") and len(lines) == JUDGED + 2 and RUN in r.output


def test_filters_by_judge_rubric_and_run(db):
    def runs(*flags):
        return [
            a["run_id"]
            for a in json.loads(run("annotations", "list", "--db", db, "--format", "json", *flags).output)[
                "annotations"
            ]
        ]

    assert len(runs("--judge", "smollm2")) == JUDGED  # the short name resolves to openai/smollm2
    assert runs("--run", RUN) == [RUN]
    assert runs("--rubric", "computer_use_v1") == []
    r = run("annotations", "list", "--db", db, "--judge", "gpt-9")
    assert r.exit_code == 2 and "gpt-9" in r.output and len(r.output.strip().splitlines()) == 1


def test_listing_never_writes_the_database(db):
    with open(db, "rb") as fh:
        before = fh.read()
    for fmt in ("table", "json"):
        assert run("annotations", "list", "--db", db, "--format", fmt).exit_code == 0
    with open(db, "rb") as fh:
        assert fh.read() == before


def test_no_annotation_is_not_an_error(tmp_path):
    import judge_helpers as jh

    db = jh.scored_db(tmp_path, 2)
    r = run("annotations", "list", "--db", db)
    assert r.exit_code == 0 and "no annotation" in r.output
    assert json.loads(run("annotations", "list", "--db", db, "--format", "json").output)["annotations"] == []


def test_hostile_text_is_sanitized_in_tables_and_neutralised_in_csv(tmp_path):
    db = vh.hostile_db(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE annotations SET rationale = '=HYPERLINK(\"http://x\")' || char(27) || '[2J'")
    conn.commit()
    conn.close()
    table = run("annotations", "list", "--db", db).output
    assert "\x1b" not in table and "\\x1b" in table and "\u202e" not in table
    rows = list(csv.DictReader(io.StringIO(run("annotations", "list", "--db", db, "--format", "csv").output)))
    assert rows[0]["rationale"].startswith("'=HYPERLINK")


# -- review export ----------------------------------------------------------------------------


def test_review_export_moves_reviews_between_databases(db, tmp_path):
    from evalkit.db import open_readonly, read_ratings

    with vh.client(db) as app:
        for body in (
            {"reviewer": "ann", "ratings": {"outcome": "fail", "safety": 0}},
            {"reviewer": "bo", "ratings": {"outcome": "pass", "situation_assessment": "n/a"}},
            {"reviewer": "cy", "ratings": {"outcome": "pass"}, "blind": False},
        ):
            r = app.post(f"/api/runs/{RUN}/reviews", json=body, headers={"x-csrf-token": vh.TOKEN})
            assert r.status_code == 201, r.text
    out = tmp_path / "reviews.csv"
    r = CliRunner().invoke(cli, ["review", "export", "--db", db, "--out", str(out)])
    assert r.exit_code == 0 and "4 ratings ->" in r.output
    text = out.read_text()
    assert text.splitlines()[0] == "item_id,rater,rater_kind,dimension,value,confidence"
    assert "cy" not in text  # a rating given after seeing the scores does not count, so it is not exported
    other = vh.copy_db(vh.hostile_db(tmp_path / "other"), tmp_path / "other")
    assert run("annotations", "import", str(out), "--db", other).exit_code == 0
    with open_readonly(other) as d:
        moved = [(r.item_id, r.rater, r.rater_kind, r.dimension, r.value) for r in read_ratings(d)]
    assert moved == [
        (RUN, "ann", "human", "outcome", "fail"),
        (RUN, "ann", "human", "safety", 0),
        (RUN, "bo", "human", "outcome", "pass"),
        (RUN, "bo", "human", "situation_assessment", "n/a"),
    ]


def test_review_export_to_stdout_with_no_review_is_a_header(db):
    r = run("review", "export", "--db", db)
    assert r.exit_code == 0 and r.output == "item_id,rater,rater_kind,dimension,value,confidence\n"
