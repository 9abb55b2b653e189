"""The audit's lean reads give what full reads give: cards cut to the pairings' signals, records only
for the disagreements a format lists (`evalkit audit --top`), and no listed pair unless asked for."""

from __future__ import annotations

import json
import sqlite3

import pytest
from audit_helpers import Annotator, card, save_cards
from click.testing import CliRunner

from evalkit.agreement.audit_output import top_disagreements
from evalkit.agreement.pairings_config import load_audit_config, lookup
from evalkit.cli import cli
from evalkit.db import open_readonly, read_cards


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "s.db"
    save_cards(
        path,
        [
            card("r1", all_passed=False, coverage=0.25),
            card("r2", all_passed=True, dangerous=1),
            card("r3", all_passed=True),
            card("r4", all_passed=False, coverage=0.75, order=0.5),
            card("r5", all_passed=True, extraneous=2),
        ],
    )
    ann = Annotator(path)
    for run, judge, safety in (("r1", "judge-a", 3), ("r2", "judge-a", 3), ("r3", "judge-b", 0)):
        ann.add(run, {"outcome": "pass", "safety": safety, "action_execution": 3}, judge=judge, confidence=0.8)
    for run in ("r4", "r5"):
        ann.add(run, {"outcome": "pass", "safety": 3, "action_execution": 2}, judge="judge-b", confidence=0.7)
    ann.close()
    return path


def _cli(*args: str):
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def test_top_n_json_is_the_full_audit_cut_to_the_n_worst(db):
    full = json.loads(_cli("audit", "--db", str(db), "--format", "json", "--resamples", "20"))
    assert full["counts"]["disagreements"] == len(full["disagreements"]) > 3
    for n in (1, 3):
        top = _cli("audit", "--db", str(db), "--format", "json", "--resamples", "20", "--top", str(n))
        cut = top_disagreements(full, n)
        assert top == json.dumps(cut, indent=2, ensure_ascii=False) + "\n"
        assert json.loads(top)["disagreements_left_out"] == full["counts"]["disagreements"] - n


def test_table_lists_the_worst_of_the_full_ranking(db):
    full = json.loads(_cli("audit", "--db", str(db), "--format", "json", "--resamples", "0"))
    table = _cli("audit", "--db", str(db), "--resamples", "0", "--top", "2")
    worst, rest = full["disagreements"][:2], full["disagreements"][2:]
    assert all(d["run_id"] in table for d in worst)
    assert f"{len(rest)} more" in table


def _set_card(path, run_id: str, text: str | None) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE scorecards SET card = ? WHERE run_id = ?", (text, run_id))
    conn.commit()
    conn.close()


def test_cards_read_for_their_signals_hold_what_a_full_read_holds_at_those_paths(db):
    # odd cards: not JSON, a JSON array, a vector that is not an object, duplicate keys inside it, empty
    _set_card(db, "r1", "not json {")
    _set_card(db, "r2", "[1, 2]")
    _set_card(db, "r3", json.dumps({"path": "p3", "vector": [1, 2], "informative": {"observed_before_acting": True}}))
    _set_card(db, "r4", '{"path": 7, "vector": {"all_passed": true, "coverage": 1, "coverage": 0.5}}')
    _set_card(db, "r5", None)
    signals = {s for p in load_audit_config(None).pairings for c in p.mechanical_cases for s, _ in c.when}
    signals.add("vector.all_passed")
    with open_readonly(db) as ro:
        full_warnings: list[str] = []
        full = list(read_cards(ro, full_warnings))
        lean_warnings: list[str] = []
        lean = list(read_cards(ro, lean_warnings, signals=signals))
    assert lean_warnings == full_warnings and len(full_warnings) == 2  # r1 and r2, named once each
    assert [c.run_id for c in lean] == [c.run_id for c in full]
    for a, b in zip(full, lean):
        assert (a.scenario_id, a.model, a.path, a.status) == (b.scenario_id, b.model, b.path, b.status)
        for signal in signals:
            assert lookup(a.card, signal) == lookup(b.card, signal), (a.run_id, signal)
        assert set(b.card) <= {s.split(".")[0] for s in signals}  # nothing else is kept
    r4 = next(c for c in lean if c.run_id == "r4")
    assert r4.card["vector"] == {"all_passed": True, "coverage": 0.5}  # the last of a duplicated key, as json.loads


def test_pairs_out_still_lists_every_compared_pair(db, tmp_path):
    out = tmp_path / "pairs.csv"
    _cli("audit", "--db", str(db), "--resamples", "0", "--pairs-out", str(out))
    rows = out.read_text().splitlines()
    full = json.loads(_cli("audit", "--db", str(db), "--format", "json", "--resamples", "0"))
    assert len(rows) - 1 == sum(p["n"] for p in full["pairings"])


@pytest.mark.parametrize(
    "signals",
    [
        {"vector.all_passed", "informative.errored_commands", "vector.coverage"},  # two parts, read together
        {"vector.all_passed", "vector.coverage"},  # one part
        {"vector.all_passed", "scalar", "informative.errored_commands"},  # a part that is a signal itself
    ],
)
def test_cards_cut_to_any_signals_hold_the_full_read_at_those_paths(db, signals):
    # a path with escapes, a null part, a part that is missing, columns that are empty (the card's
    # fields are read then) and a card whose fields are not text
    _set_card(db, "r1", json.dumps({"path": 'runs/\u00e9 "q"\\x', "vector": None, "scalar": None}))
    _set_card(db, "r2", json.dumps({"path": "p2", "scenario_id": "s-card", "model": "m-card", "status": "scored"}))
    _set_card(db, "r3", json.dumps({"path": ["p"], "scenario_id": 3, "vector": {"all_passed": None}, "scalar": 0.5}))
    con = sqlite3.connect(db)
    con.execute("UPDATE scorecards SET scenario_id = '', model = NULL, status = '' WHERE run_id IN ('r2', 'r3')")
    con.commit()
    con.close()
    with open_readonly(db) as ro:
        full = list(read_cards(ro, []))
        lean = list(read_cards(ro, [], signals=signals))
    assert [(c.run_id, c.scenario_id, c.model, c.path, c.status) for c in lean] == [
        (c.run_id, c.scenario_id, c.model, c.path, c.status) for c in full
    ]
    assert full[0].path == 'runs/\u00e9 "q"\\x' and full[1].scenario_id == "s-card"
    for a, b in zip(full, lean):
        for signal in signals:
            assert lookup(a.card, signal) == lookup(b.card, signal), (a.run_id, signal)
