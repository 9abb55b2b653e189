"""`evalkit audit --top N`: the table and markdown list the worst disagreements (20 by default) and
say how many they left out; json lists all of them unless --top is given; counts stay complete."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from audit_helpers import Annotator, card, save_cards
from click.testing import CliRunner

from evalkit.cli import cli

RUNS = 30  # each run disagrees on outcome and safety (two judges): 120 disagreements


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("top") / "top.db"
    save_cards(path, [card(f"r{i:02d}", all_passed=False, dangerous=1, coverage=1.0) for i in range(RUNS)])
    ann = Annotator(path)
    for i in range(RUNS):
        for judge in ("judge-a", "judge-b"):
            # lenient on safety (safe where a forbidden command ran) and on outcome (pass where it failed)
            ann.add(f"r{i:02d}", {"outcome": "pass", "safety": 3}, judge=judge, rationale=f"run {i} by {judge}")
    ann.close()
    return path


def audit(db, *args: str) -> str:
    res = CliRunner().invoke(cli, ["audit", "--db", str(db), "--resamples", "0", *args])
    assert res.exit_code == 0, res.output
    return res.output


def listed_ranks(text: str) -> list[int]:
    """The rank column of the text table's disagreement rows."""
    part = text.split("== Disagreements, ranked ==")[1].split("\n== ")[0]
    return [int(m.group(1)) for m in re.finditer(r"^(\d+)\s+r\d\d\s", part, re.M)]


def json_doc(db, *args: str) -> dict:
    return json.loads(audit(db, "--format", "json", *args))


def test_table_lists_the_20_worst_by_default_and_says_how_many_more(db):
    full = json_doc(db, "--top", "0")
    total = full["counts"]["disagreements"]
    assert total == len(full["disagreements"]) == 4 * RUNS
    text = audit(db)
    assert listed_ranks(text) == list(range(1, 21))
    assert f"{total} disagreements, the 20 worst listed" in text
    assert f"note: \u2026 and {total - 20} more; --top 0 for all" in text
    # the rows listed are the first of the full ranking (safety before outcome)
    rows = [line for line in text.splitlines() if re.match(r"^\d+\s+r\d\d\s", line)]
    for line, d in zip(rows, full["disagreements"][:20]):
        assert line.split()[1:3] == [d["run_id"], d["pairing"]]


def test_top_n_and_top_0_in_the_table(db):
    text = audit(db, "--top", "5")
    assert listed_ranks(text) == [1, 2, 3, 4, 5]
    assert f"\u2026 and {4 * RUNS - 5} more; --top 0 for all" in text
    everything = audit(db, "--top", "0")
    assert listed_ranks(everything) == list(range(1, 4 * RUNS + 1))
    assert "more; --top 0 for all" not in everything
    assert "the 20 worst listed" not in everything and f"{4 * RUNS} disagreements:" in everything


def test_top_larger_than_the_list_leaves_nothing_out(db):
    text = audit(db, "--top", "500")
    assert listed_ranks(text) == list(range(1, 4 * RUNS + 1))
    assert "--top 0 for all" not in text


def test_markdown_lists_the_worst_and_says_how_many_more(db):
    text = audit(db, "--format", "markdown")
    part = text.split("## Disagreements, ranked")[1].split("\n## ")[0]
    assert len(re.findall(r"^\| \d+ \|", part, re.M)) == 20
    assert f"- \u2026 and {4 * RUNS - 20} more; --top 0 for all" in part
    assert len(re.findall(r"^\| \d+ \|", audit(db, "--format", "markdown", "--top", "0"), re.M)) >= 4 * RUNS


def test_json_lists_the_20_worst_by_default_every_one_with_top_0_and_says_how_many_were_left_out(db):
    """At 10^5 runs every disagreement is hundreds of thousands of records (2.1 GB to print): json
    lists the 20 worst as the table does, and says how many more there are."""
    full = json_doc(db, "--top", "0")
    assert full["disagreements_left_out"] == 0 and len(full["disagreements"]) == 4 * RUNS
    default = json_doc(db)
    assert default["disagreements"] == full["disagreements"][:20]
    assert default["disagreements_left_out"] == 4 * RUNS - 20
    cut = json_doc(db, "--top", "7")
    assert cut["disagreements"] == full["disagreements"][:7]
    assert cut["disagreements_left_out"] == 4 * RUNS - 7
    for doc in (default, cut):
        assert doc["counts"] == full["counts"]  # counts always complete
        assert doc["pairings"] == full["pairings"] and doc["adjudications"] == full["adjudications"]


def test_counts_and_statistics_stay_complete_under_top(db):
    text = audit(db, "--top", "1")
    lines = [line.split() for line in text.splitlines() if re.match(r"^(outcome|safety)\s+nominal\s", line)]
    # every pair disagrees: n and the lenient column are the whole count (2 judges x 30 runs), not the 1 listed
    assert [(cells[0], cells[2], cells[-2], cells[-1]) for cells in lines[:2]] == [  # the pairings table
        ("outcome", str(2 * RUNS), str(2 * RUNS), "0"),
        ("safety", str(2 * RUNS), str(2 * RUNS), "0"),
    ]
    assert f"{4 * RUNS} disagreements, the 1 worst listed" in text


def test_csv_counts_the_disagreements_whatever_top_says(db):
    for args in ((), ("--top", "3")):
        rows = list(csv.reader(io.StringIO(audit(db, "--format", "csv", *args))))
        assert ["disagreements", "", "", "", "n", str(4 * RUNS), ""] in rows


def test_top_must_not_be_negative(db):
    res = CliRunner().invoke(cli, ["audit", "--db", str(db), "--top", "-1"])
    assert res.exit_code == 2 and "--top" in res.output


def test_no_disagreement_prints_no_left_out_note(tmp_path):
    path = tmp_path / "agree.db"
    save_cards(path, [card("ok1", all_passed=True)])
    ann = Annotator(path)
    ann.add("ok1", {"outcome": "pass", "safety": 3})
    ann.close()
    text = audit(path, "--top", "1")
    assert "no disagreement between the judge and the mechanical scores" in text and "more; --top" not in text
