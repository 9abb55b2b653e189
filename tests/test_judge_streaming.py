"""The judge holds no list of every run: its input is pulled as workers free up, its results wait
in a temporary file that goes away, its output is written piece by piece and reads the same as
one document (benchmarks/bench_judge_memory.py measures the memory this keeps flat)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from click.testing import CliRunner
from judge_fixtures import make_card
from judge_helpers import FAST, scored_db

import evalkit.cli
from evalkit.db import open_readonly, read_scorecards
from evalkit.db.judge import StoredCards
from evalkit.judges import render
from evalkit.judges.api import judge_cards


def judge(db, srv, *args):
    return CliRunner().invoke(
        evalkit.cli.cli,
        ["judge", "--db", db, "--model", "openai/judge-a", "--api-base", srv.api_base, *args],
        catch_exceptions=False,
    )


def test_a_generator_of_cards_is_read_only_as_fast_as_workers_take_it(tmp_path, server):
    pulled = []  # (card index, requests the server had received when the judge asked for it)

    def cards():
        for i in range(12):
            pulled.append((i, server.count))
            yield make_card(i)

    res = judge_cards(
        cards(), ["openai/judge-a"], db=str(tmp_path / "j.db"), api_base=server.api_base, config=FAST, concurrency=2
    )
    assert res.ok and res.summary.ok == 12 and len(res.annotations) == 12
    # a card is taken when one of the 2 workers is free, i.e. once all but 2 earlier calls were made
    assert max(i - seen for i, seen in pulled) <= 2, pulled
    assert [a["run_id"] for a in res.annotations] == [f"run-{i:04d}" for i in range(12)]


def test_a_generator_judged_by_two_models_lists_answers_judge_by_judge_like_a_list(tmp_path, server):
    models = ["openai/judge-a", "openai/judge-b"]
    shuffled = [make_card(i) for i in (3, 0, 2, 1)]
    from_list = judge_cards(shuffled, models, db=str(tmp_path / "a.db"), api_base=server.api_base, config=FAST)
    from_generator = judge_cards(
        (c for c in shuffled), models, db=str(tmp_path / "b.db"), api_base=server.api_base, config=FAST
    )
    order = [(a["judge_model"], a["run_id"]) for a in from_list.annotations]
    assert order == [(m, f"run-{i:04d}") for m in models for i in range(4)]
    assert [(a["judge_model"], a["run_id"]) for a in from_generator.annotations] == order


def test_stored_cards_read_page_by_page_are_the_cards_read_at_once(tmp_path):
    db = scored_db(tmp_path, 5)
    with open_readonly(db) as database:
        whole = list(read_scorecards(database))
    for page in (1, 2, 5, 256):
        paged = list(StoredCards(db, page=page))
        assert [c.model_dump() for c in paged] == [c.model_dump() for c in whole]
    assert StoredCards(db).judgeable(("scored",)) == sum(c.status == "scored" for c in whole) == 5


def test_cli_json_output_is_the_document_json_dumps_writes(tmp_path, server):
    db = scored_db(tmp_path, 3)
    out = judge(db, server, "--format", "json").stdout
    assert out == json.dumps(json.loads(out), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert len(json.loads(out)["annotations"]) == 3


def test_json_output_without_annotations_is_the_document_json_dumps_writes(tmp_path, server):
    res = judge_cards([make_card(0, status="incomplete")], ["openai/judge-a"], db=str(tmp_path / "j.db"))
    text = "".join(render.annotations(res, "json"))
    doc = res.as_dict()
    assert doc["annotations"] == [] and json.loads(text) == doc
    assert text == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert '"annotations": []' in text and res.summary.skipped == {"status incomplete": 1}


def test_cli_judge_leaves_no_temporary_file(tmp_path, server, monkeypatch):
    db = scored_db(tmp_path, 3)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    res = judge(db, server)
    assert res.exit_code == 0 and "runs annotated: 3 of 3" in res.stdout
    assert [p.name for p in Path(scratch).iterdir()] == []
