"""The agreement statistics are declared once (evalkit.agreement.stats.registry): a statistic
registered at runtime reaches the audit JSON, the text and markdown tables and the csv, with no
other change; the shipped declarations keep the audit's layout."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from audit_helpers import Annotator, add_ratings, card, save_cards

from evalkit.agreement.audit import build_audit
from evalkit.agreement.audit_output import audit_csv, audit_markdown, audit_text
from evalkit.agreement.stats import registry
from evalkit.agreement.view import pairing_columns, rater_columns

# the statistics of a judge/mechanical pairing, in the csv's order
PAIRING_CSV_STATS = [
    "n",
    "percent_agreement",
    "cohen_kappa",
    "weighted_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
    "spearman",
    "lenient",
    "strict",
    "brier",
    "ece",
    "n_with_confidence",
]


def max_agreement(x, y, labels):
    """The highest agreement two raters' label counts allow (sum of the smaller count per label)."""
    k = len(labels)
    if len(x) == 0:
        return {"value": None, "reason": "no items"}
    counts = np.minimum(
        np.bincount(np.asarray(x, dtype=np.int64), minlength=k), np.bincount(np.asarray(y, dtype=np.int64), minlength=k)
    )
    return {"value": float(counts.sum() / len(x)), "reason": None}


def _raters_max(r):
    pair = r.two()
    if pair is None:
        return registry.not_applicable("more than two raters")
    idx = {lab: i for i, lab in enumerate(r.labels)}
    return max_agreement([idx[v] for v in pair[0]], [idx[v] for v in pair[1]], r.labels)


TOY = registry.Statistic(
    "max_agreement",
    "max agreement",
    pairs=lambda p: max_agreement(p.x, p.y, p.labels),
    raters=_raters_max,
    bootstrapped=True,
    csv_order=55,
)


@pytest.fixture()
def db(tmp_path):
    """Eight runs judged by one judge (outcome and safety), and one human on the outcome."""
    path = tmp_path / "e.db"
    save_cards(path, [card(f"r{i}", all_passed=i % 3 != 0, dangerous=int(i == 5)) for i in range(8)])
    ann = Annotator(path)
    for i in range(8):
        ann.add(f"r{i}", {"outcome": "pass" if i % 2 else "fail", "safety": 3 if i != 2 else 0}, confidence=0.7)
    ann.close()
    add_ratings(path, [(f"r{i}", "alice", "human", "outcome", "pass" if i % 4 else "fail") for i in range(8)])
    return path


@pytest.fixture()
def toy(monkeypatch):
    monkeypatch.setattr(registry, "STATISTICS", registry.STATISTICS + (TOY,))


def _outcome(audit):
    return next(p for p in audit["pairings"] if p["pairing"] == "outcome")


def test_a_registered_statistic_reaches_the_audit_json(db, toy):
    audit = build_audit(db, n_resamples=30)
    outcome = _outcome(audit)
    stat = outcome["max_agreement"]
    assert 0.0 <= stat["value"] <= 1.0 and stat["ci_low"] is not None and stat["bootstrap"]["n_resamples"] == 30
    assert list(outcome).index("max_agreement") == list(outcome).index("spearman") + 1  # after the registered ones
    assert all("max_agreement" in s for s in outcome["slices"]["judge"])
    assert "max_agreement" in outcome["self_judging"] or outcome["self_judging"]["without"] is None
    (raters,) = [e for e in audit["raters"] if e["dimension"] == "outcome"]
    assert raters["max_agreement"]["value"] is not None


def test_a_registered_statistic_is_a_column_of_the_text_and_markdown_tables(db, toy):
    audit = build_audit(db, n_resamples=0)
    assert ("max_agreement", "max agreement") in pairing_columns() and (
        "max_agreement",
        "max agreement",
    ) in rater_columns()
    text = audit_text(audit)
    pairing_header = next(line for line in text.splitlines() if line.startswith("pairing "))
    assert pairing_header.split("  ")[-3:] == ["max agreement", "lenient", "strict"]
    rater_header = next(line for line in text.splitlines() if line.startswith("dimension  level"))
    assert rater_header.rstrip().endswith("max agreement")
    markdown = audit_markdown(audit)
    assert "| max agreement | lenient | strict |" in markdown  # after every registered statistic


def test_a_registered_statistic_is_a_row_of_the_csv_in_its_declared_order(db, toy):
    audit = build_audit(db, n_resamples=30)
    rows = list(csv.reader(io.StringIO(audit_csv(audit))))
    outcome = [r[4] for r in rows if r[:4] == ["pairings", "outcome", "", ""]]
    assert outcome.index("max_agreement") == outcome.index("gwet_ac1_ci_high") + 1  # csv_order 55: after AC1 (50)
    assert outcome.index("max_agreement_ci_low") == outcome.index("max_agreement") + 1
    assert outcome.index("spearman") > outcome.index("max_agreement")
    raters = [r[4] for r in rows if r[:4] == ["raters", "outcome", "", ""]]
    assert raters.index("max_agreement") == raters.index("gwet_ac1") + 1


def test_without_the_registration_nothing_shows_it(db):
    audit = build_audit(db, n_resamples=0)
    assert "max_agreement" not in _outcome(audit) and "max agreement" not in audit_text(audit)
    assert "max_agreement" not in audit_csv(audit)


def test_a_statistic_that_does_not_apply_is_never_bootstrapped():
    from evalkit.agreement.label_comparison import compare

    nominal = compare([0, 1, 1, 0, 1], [0, 1, 0, 0, 1], ["a", "b"], bootstrap={"n_resamples": 10, "seed": 0, "ci": 0.9})
    assert "weighted_kappa" not in nominal.intervals and nominal.weighted_kappa is None
    assert nominal.stats["weighted_kappa"]["reason"].startswith(registry.NOT_APPLICABLE)
