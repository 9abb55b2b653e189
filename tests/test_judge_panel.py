"""The judge entry points' shared options (evalkit.judges.api.Panel): declared once, so an
unknown keyword is refused by all of them alike, and the dry run takes a run's options."""

from __future__ import annotations

import pytest
from judge_helpers import FAST, cards_of, scored_db

from evalkit.judges.api import Panel, dry_run, judge_cards
from evalkit.judges.probe_runner import probe_cases


def test_an_unknown_option_is_a_type_error_for_every_entry_point(tmp_path):
    db = scored_db(tmp_path, 1)
    cards = cards_of(db)
    for call in (
        lambda: judge_cards(cards, ["openai/m"], db=db, config=FAST, api_bsae="http://x"),
        lambda: probe_cases(cards, [], ["openai/m"], db=db, config=FAST, api_bsae="http://x"),
    ):
        with pytest.raises(TypeError, match="api_bsae"):
            call()


def test_dry_run_takes_the_options_of_a_run_and_uses_no_key(tmp_path):
    db = scored_db(tmp_path, 2)
    plan = dry_run(
        cards_of(db), ["openai/m"], db=db, config=FAST, concurrency=3, max_cost=1.0, progress=True, api_key="sk-x" * 4
    )
    assert plan.items == 2 and plan.to_send == 2 and plan.models == ["openai/m"]


def test_a_panel_without_models_is_refused_in_one_line(tmp_path):
    db = scored_db(tmp_path, 1)
    with pytest.raises(ValueError, match="at least one --model"):
        Panel(db=db, config=FAST).open([])
