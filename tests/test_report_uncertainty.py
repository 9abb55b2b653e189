"""The report's error bars: whiskers on the headline charts, the per-model table's intervals and its
mark for models that differ significantly from the best one, and the paired comparison section."""

from __future__ import annotations

import re

import pytest
from audit_helpers import card, save_cards

from evalkit.present.svg import bar_chart
from evalkit.report import build_report, render_html, render_markdown


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    db = tmp_path_factory.mktemp("rep") / "u.db"
    # "strong" passes 3 of 3 runs everywhere; "weak" 0 or 1 of 3; "twin" runs exactly like "strong"
    cards = []
    for s in range(5):
        for r in range(3):
            cards.append(card(f"strong-{s}-{r}", scenario_id=f"s{s}", model="strong", all_passed=True))
            cards.append(card(f"twin-{s}-{r}", scenario_id=f"s{s}", model="twin", all_passed=True))
            cards.append(card(f"weak-{s}-{r}", scenario_id=f"s{s}", model="weak", all_passed=(r == 0 and s % 2 == 0)))
    save_cards(db, cards)
    return build_report(db, made_at="2026-01-01T00:00:00Z")


def test_bar_chart_draws_a_whisker_per_interval():
    svg = bar_chart([("a", 0.5), ("b", 0.8), ("c", None)], title="t", intervals=[[0.25, 0.75], None, None])
    whiskers = re.findall(r'<path class="ci" d="M([\d.]+) [\d.]+H([\d.]+)', svg)
    assert len(whiskers) == 1  # none for an undefined interval, none for a missing value
    low, high = map(float, whiskers[0])
    label_w = 1 * 7.2 + 12  # one-character labels
    assert low == pytest.approx(label_w + 320 * 0.25, abs=0.1) and high == pytest.approx(label_w + 320 * 0.75, abs=0.1)
    assert bar_chart([("a", 0.5)], title="t") == bar_chart([("a", 0.5)], title="t", intervals=None)


def test_models_carry_intervals_and_their_comparison_with_the_best(report):
    models = {m["model"]: m for m in report["models"]}
    # 15 of 15 runs passed: not the zero-width [1, 1] a t interval over identical scenario means
    # gives, but the Wilson interval of the runs (statsmodels' proportion_confint, the reference)
    from statsmodels.stats.proportion import proportion_confint

    assert models["strong"]["pass_rate_ci"] == pytest.approx(list(proportion_confint(15, 15, method="wilson")))
    assert models["strong"]["pass_rate_ci"][0] < 0.8
    low, high = models["weak"]["pass_rate_ci"]
    assert low < models["weak"]["pass_rate"] < high
    assert report["comparison"]["best"] == "strong"  # ties on score: alphabetical
    assert models["strong"]["versus_best"] is None
    assert models["weak"]["versus_best"]["pass_rate"]["verdict"] == "worse"
    assert models["twin"]["versus_best"]["pass_rate"]["verdict"] == "no detectable difference"


def test_html_shows_whiskers_and_marks_significant_differences(report):
    page = render_html(report)
    assert page.count('class="ci"') >= 3 + 15  # the three models and the fifteen groups
    assert "pass rate 95% CI" in page and "vs best (paired)" in page
    row = re.search(r"<tr><td>weak</td>.*?</tr>", page).group(0)
    assert "significantly different: pass rate -0.80" in row
    assert "no detectable difference" in re.search(r"<tr><td>twin</td>.*?</tr>", page).group(0)
    assert render_html(report) == page


def test_markdown_shows_intervals_and_the_comparison(report):
    text = render_markdown(report)
    assert "pass rate 95% CI" in text and "significantly different: pass rate -0.80" in text
    assert "Paired comparison" in text and "no detectable difference" in text


def test_one_model_has_no_comparison(tmp_path):
    db = tmp_path / "one.db"
    save_cards(db, [card(f"r{i}", scenario_id=f"s{i}") for i in range(3)])
    report = build_report(db, made_at="2026-01-01T00:00:00Z")
    assert report["comparison"] == {"available": False, "reason": "fewer than two agent models: nothing to compare"}
    assert "fewer than two agent models" in render_html(report)
