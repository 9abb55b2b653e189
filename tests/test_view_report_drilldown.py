"""The static report's run drill-downs (for CI artefacts, where no server runs): transcript with
classes, ground-truth checklist with the missing actions, judge annotations; collapsed; for a large
database only the failed, unsafe and disagreed-on runs unless --all-runs; the disagreement list
links to them; hostile text stays inert."""

from __future__ import annotations

import re
from collections import Counter

import pytest
import view_helpers as vh
from click.testing import CliRunner

from evalkit.db import open_readonly
from evalkit.report import build_report, drilldowns, render_html
from evalkit.report import data as report_data
from evalkit.report.data import iter_scenarios

RUN = "a320-gemini-2.5-flash-battery-off"


@pytest.fixture(scope="module")
def judged(_server, tmp_path_factory):
    return vh.judged_examples(tmp_path_factory.mktemp("report-drill"), _server)


@pytest.fixture(scope="module")
def page(judged):
    return render_html(build_report(judged, made_at="2026-01-01T00:00:00Z"))


def drills(html: str) -> list[str]:
    return re.findall(r'<details class="drill">(.*?)</details>', html, flags=re.S)


def test_every_run_the_main_page_names_has_a_collapsed_drilldown(page):
    """The main page names the worst runs and the disagreed-on ones (8 of the 9); the clean run's
    details are on its scenario page only."""
    found = drills(page)
    assert len(found) == 8 and '<details class="drill" open' not in page
    assert not any("a320-opus-4-8-full-procedure" in d.split("</summary>")[0] for d in found)
    battery = next(d for d in found if RUN in d.split("</summary>")[0])
    assert "forbidden (dangerous)" in battery and "matched_required" in battery
    assert '<span class="missing">missing</span>' in battery and "hit by command 0" in battery
    assert "fake judge" in battery and 'href="#run-' in battery  # the rationale's steps link into the transcript
    incomplete = next(d for d in found if "crashed-recorder" in d.split("</summary>")[0])
    assert "incomplete: the trajectory has no final record" in incomplete


def test_the_disagreement_list_links_to_the_drilldown_and_ids_are_unique(page):
    ids = Counter(re.findall(r'\sid="([^"]+)"', page))
    assert [i for i, n in ids.items() if n > 1] == []
    anchor = drilldowns._anchor(RUN)
    assert f'<span class="target" id="{anchor}"></span>' in page
    table = page.split('class="disagreements"')[1].split("</table>")[0]
    assert f'href="#{anchor}"' in table and "<blockquote>" in table  # the rationale quoted, in a wide column
    assert "table.disagreements blockquote{min-width:20em}" in page


def test_a_large_database_drills_into_failed_unsafe_and_disagreeing_runs_only(judged, monkeypatch):
    monkeypatch.setattr(report_data, "ALL_RUNS_UP_TO", 2)
    report = build_report(judged, made_at="2026-01-01T00:00:00Z")
    chosen = {d["run_id"] for d in report["drilldowns"]["runs"]}
    with open_readonly(judged) as db:
        every = [run for _, batch in iter_scenarios(db) for run, _ in batch]
    assert len(every) == 9
    for run in every:
        worth = (
            run["status"] != "scored"
            or run["all_passed"] is not True
            or run["unsafe"]
            or any(d["run_id"] == run["run_id"] for d in report["agreement"]["audit"]["disagreements"])
        )
        assert (run["run_id"] in chosen) == worth, run["run_id"]
    assert sum(report["drilldowns"]["summarised"].values()) == 9 - len(chosen)
    everything = build_report(judged, made_at="2026-01-01T00:00:00Z", all_runs=True)
    assert len(everything["drilldowns"]["runs"]) == 9 and everything["drilldowns"]["summarised"] == {}


def test_report_all_runs_flag_details_every_run_on_the_scenario_pages(judged, tmp_path, monkeypatch):
    from evalkit.cli import cli

    monkeypatch.setattr(report_data, "ALL_RUNS_UP_TO", 0)
    out = tmp_path / "r.html"
    clean = "a320-opus-4-8-full-procedure"  # passed, safe, nothing to disagree on
    for flags, on_pages in (([], False), (["--all-runs"], True)):
        r = CliRunner().invoke(cli, ["report", "--db", judged, "--html", str(out), *flags])
        assert r.exit_code == 0, r.output
        assert len(drills(out.read_text())) == 8
        pages = "".join(p.read_text() for p in (tmp_path / "r-scenarios").glob("*.html"))
        assert any(clean in d.split("</summary>")[0] for d in drills(pages)) is on_pages


def test_hostile_run_id_and_rationale_stay_inert_in_the_drilldown(tmp_path):
    db = vh.hostile_db(tmp_path)
    html = render_html(build_report(db, made_at="2026-01-01T00:00:00Z"))
    drill = drills(html)[0]
    assert "<script" not in html and "<img" not in html and "\x1b" not in drill and "\u202e" not in drill
    assert "&lt;img src=x onerror=alert(1)&gt;\\x1b[2J\\u202eevil/\\x07run" in drill
    assert "&lt;/script&gt;&lt;script&gt;" in drill and "&lt;b onmouseover=alert(1)&gt;" in drill


def test_an_unapproved_call_still_takes_its_required_action_in_the_checklist():
    """The scorer counts an unapproved refund for coverage (0.667: only the approval is missing); the
    checklist says the same, and names the unapproved call as what took the refund."""
    import json
    from pathlib import Path

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.view.drilldown import checklist

    run = Path(__file__).resolve().parent.parent / "examples" / "support" / "support-gpt-x-skipped-approval.jsonl"
    res = CliRunner().invoke(cli, ["score", str(run), "--no-db", "--format", "json"])
    card = json.loads(res.stdout)[0]
    assert card["vector"]["coverage"] == 2 / 3
    marks = checklist(card, card["judge_bundle"])
    assert marks["missing"] == 1
    rows = [r for b in marks["blocks"] for r in b["actions"]]
    assert [r["action"].split("(")[0] for r in rows if r["missing"]] == ["request_approval"]
    refund = next(r for r in rows if r["action"].startswith("issue_refund"))
    assert refund["matched_by"] is not None and refund["matched_by"]["call_index"] == 2
