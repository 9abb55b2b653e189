"""The cards read with their signals alone come in run-id order, whatever order the file stores
them in, with the same cards and the same problems (in the same order) as a full read."""

from __future__ import annotations

import sqlite3

from audit_helpers import card, save_cards

from evalkit.db import open_readonly, read_cards


def test_signal_cards_come_in_run_id_order_with_the_full_reads_problems(tmp_path):
    path = tmp_path / "a.db"
    runs = [f"r{i:02d}" for i in (7, 3, 9, 0, 5, 1, 8, 2, 6, 4)]  # stored out of run-id order
    for run in runs:
        save_cards(path, [card(run, all_passed=run < "r05")])
    con = sqlite3.connect(path)
    con.execute("UPDATE scorecards SET card = '[1]' WHERE run_id IN ('r06', 'r02')")
    con.execute("UPDATE scorecards SET card = 'not json' WHERE run_id = 'r08'")
    con.commit()
    con.close()
    with open_readonly(path) as db:
        full_problems: list[str] = []
        full = list(read_cards(db, full_problems))
        problems: list[str] = []
        cut = list(read_cards(db, problems, signals={"vector.all_passed"}))
    assert [c.run_id for c in cut] == sorted(runs) == [c.run_id for c in full]
    assert problems == full_problems and len(problems) == 3
    assert [(c.card.get("vector") or {}).get("all_passed") for c in cut] == [
        (c.card.get("vector") or {}).get("all_passed") for c in full
    ]
