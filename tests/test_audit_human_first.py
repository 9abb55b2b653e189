"""Human agreement first: human↔human figures per dimension (against `krippendorff` and a
hand-computed AC1, with varying raters per item), then each judge beside the humans, through
`evalkit annotations import` and `evalkit audit`."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner

from evalkit.cli import cli

# item: {rater: value}; h1-h3 humans (not every human rates every item), j a judge
RATINGS = {
    "i1": {"h1": "pass", "h2": "pass", "h3": "pass", "j": "pass"},
    "i2": {"h1": "pass", "h2": "fail", "j": "pass"},
    "i3": {"h1": "fail", "h2": "fail", "h3": "fail", "j": "fail"},
    "i4": {"h2": "pass", "h3": "fail", "j": "fail"},
    "i5": {"h1": "fail", "h3": "fail", "j": "pass"},
    "i6": {"h1": "pass", "j": "pass"},  # one human: not a human↔human item
}


def audit_of(tmp_path, *args: str) -> tuple[dict, str]:
    f = tmp_path / "r.csv"
    lines = ["item_id,rater,rater_kind,dimension,value"] + [
        f"{item},{rater},{'judge' if rater == 'j' else 'human'},outcome,{value}"
        for item, rs in RATINGS.items()
        for rater, value in rs.items()
    ]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "e.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["annotations", "import", str(f), "--db", str(db)]).exit_code == 0
    res = runner.invoke(cli, ["audit", "--db", str(db), "--format", "json", *args], catch_exceptions=False)
    table = runner.invoke(cli, ["audit", "--db", str(db), *args], catch_exceptions=False).output
    return json.loads(res.output), table


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    return audit_of(tmp_path_factory.mktemp("hf"))


def test_human_human_figures_match_krippendorff_and_a_hand_computed_ac1(audited):
    audit, _ = audited
    (entry,) = audit["human_agreement"]
    assert (entry["dimension"], entry["humans"], entry["n_items"]) == ("outcome", ["h1", "h2", "h3"], 5)
    code = {"pass": 1.0, "fail": 0.0}
    items = ["i1", "i2", "i3", "i4", "i5"]
    data = [[code[RATINGS[i][h]] if h in RATINGS[i] else np.nan for i in items] for h in ("h1", "h2", "h3")]
    alpha = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert entry["krippendorff_alpha"]["value"] == pytest.approx(alpha)
    # AC1 by hand: per-item agreement 1, 0, 1, 0, 1 -> 0.6; pi(pass) = (1 + .5 + 0 + .5 + 0) / 5 = 0.4
    pe = 0.4 * 0.6 + 0.6 * 0.4
    assert entry["gwet_ac1"]["value"] == pytest.approx((0.6 - pe) / (1 - pe))
    assert entry["percent_agreement"]["value"] == pytest.approx(7 / 9)  # agreeing human pairs / pairs
    for key in ("percent_agreement", "krippendorff_alpha", "gwet_ac1"):
        assert entry[key]["ci_low"] is not None and entry[key]["ci_low"] <= entry[key]["value"] <= entry[key]["ci_high"]


def test_judge_beside_the_humans_on_the_same_items_with_a_sentence(audited):
    audit, _ = audited
    (judge,) = audit["human_agreement"][0]["judges"]
    assert (judge["judge"], judge["n_items"]) == ("j", 5)  # i6 has one human: left out
    assert judge["judge_human_agreement"]["value"] == pytest.approx(8 / 12)
    assert judge["human_human_agreement"]["value"] == pytest.approx(7 / 9)
    assert judge["difference"]["value"] == pytest.approx(8 / 12 - 7 / 9)
    d = judge["difference"]
    assert d["ci_low"] <= d["value"] <= d["ci_high"] and d["ci_low"] < 0 < d["ci_high"]
    # five items: an interval this wide says nothing of "about as well"
    assert judge["verdict"].startswith(
        "j may agree with the humans less than they agree with each other, or about as well: these items cannot tell"
    )
    assert f"interval {d['ci_low']:+.2f} to {d['ci_high']:+.2f}" in judge["verdict"]
    assert "Alt-Test" in judge["verdict"]


@pytest.mark.parametrize(
    ("low", "high", "says"),
    [
        (-0.05, 0.08, "agrees with the humans about as well as they agree with each other"),
        (-0.32, 0.0, "may agree with the humans less than they agree with each other, or about as well"),
        (-0.05, 0.3, "may agree with the humans less than they agree with each other, or about as well"),
        (-0.4, -0.01, "agrees with the humans clearly less"),
        (0.02, 0.2, "agrees with the humans more"),
    ],
)
def test_about_as_well_needs_an_interval_within_the_margin_not_one_that_merely_covers_zero(low, high, says):
    from evalkit.agreement.human_first import _sentence

    diff = {"value": (low + high) / 2, "ci_low": low, "ci_high": high}
    text = _sentence("j", diff, {"value": 0.6}, {"value": 0.7})
    assert text.startswith(f"j {says}")


def test_the_raters_section_shows_the_humans_first(audited):
    _, table = audited
    raters = table.split("== Raters: agreement per dimension")[1]
    assert (
        raters.index("Humans with each other")
        < raters.index("Judges beside the humans")
        < raters.index("dimension  level")
    )
    assert "j may agree with the humans less than they agree with each other, or about as well" in raters


def test_a_dimension_with_one_human_has_no_human_agreement(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("item_id,rater,rater_kind,dimension,value\ni1,h1,human,d,1\ni1,j,judge,d,1\n", encoding="utf-8")
    db = tmp_path / "e.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["annotations", "import", str(f), "--db", str(db)]).exit_code == 0
    out = json.loads(runner.invoke(cli, ["audit", "--db", str(db), "--format", "json"]).output)
    assert out["human_agreement"] == []
