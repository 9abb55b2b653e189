"""The report's judge section shows each dimension's judge rate beside the estimate the human labels
correct it to (`evalkit estimate`'s figures), so no page shows a judge's raw rate as if it were the truth."""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_estimate_cli import _db, _entry

from evalkit.cli import cli


def test_the_report_shows_the_corrected_estimate_beside_the_judges_rate(tmp_path):
    db, _ = _db(tmp_path)
    est = json.loads(CliRunner().invoke(cli, ["estimate", "--db", str(db), "--format", "json"]).output)
    alpha = _entry(est, "coder-alpha")
    md = tmp_path / "r.md"
    res = CliRunner().invoke(
        cli, ["report", "--db", str(db), "--markdown", str(md), "--html", str(tmp_path / "r.html")]
    )
    assert res.exit_code == 0, res.output
    text = md.read_text()
    assert "What each dimension says, corrected with the human labels" in text
    row = next(line for line in text.splitlines() if "| outcome | coder-alpha |" in line)
    assert f"{alpha['judge_rate']:.3f}" in row and f"{alpha['estimate']:.3f}" in row
    assert f"{alpha['ci'][0]:.3f}–{alpha['ci'][1]:.3f}" in row and alpha["method"] in row
    assert "corrected with the human labels" in (tmp_path / "r.html").read_text()


def test_an_estimate_that_cannot_be_made_says_why_in_the_report(tmp_path):
    db, _ = _db(tmp_path, labelled=1)
    md = tmp_path / "r.md"
    assert CliRunner().invoke(cli, ["report", "--db", str(db), "--markdown", str(md)]).exit_code == 0
    row = next(line for line in md.read_text().splitlines() if "| outcome | coder-alpha |" in line)
    assert "n/a (" in row
