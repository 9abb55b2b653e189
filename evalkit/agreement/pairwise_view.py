"""The audit's pairwise section (``audit["pairwise"]``, :mod:`evalkit.agreement.pairwise_bias`) as a
section of the document model for ``evalkit audit`` and the report, and as tidy CSV rows."""

from __future__ import annotations

from typing import Any

from evalkit.present import Table
from evalkit.present.document import Notes, Section, ViewTable, stat_text

POSITION = (
    ("position_consistency", "consistent"),
    ("strict_flips", "strict flips"),
    ("first_shown", "first shown wins"),
    ("ties", "ties"),
    ("longer_wins", "longer wins"),
)
REFERENCE = (
    ("accuracy_ab", "accuracy ab"),
    ("accuracy_ba", "accuracy ba"),
    ("kappa_ab", "\u03ba ab"),
    ("kappa_ba", "\u03ba ba"),
    ("kappa_between_orders", "\u03ba ab vs ba"),
)
SELF = (
    ("judge_win_rate", "judge's win rate for its own model"),
    ("other_judges_win_rate", "other judges' win rate"),
    ("difference", "difference"),
)


def _dicts(value: Any) -> list[dict]:
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def pairwise_section(audit: dict) -> Section | None:
    """None when the audit has no pairwise judge (the section is then left out)."""
    section_data = audit.get("pairwise") if isinstance(audit.get("pairwise"), dict) else {}
    judges = _dicts(section_data.get("judges"))
    if not judges:
        return None
    section = Section(
        "Pairwise judges: position and length bias",
        intro="Each pair judged with a shown first (ab) and b shown first (ba); verdicts are in the pair's own "
        "frame. Consistent: the same verdict in both orders. First shown wins: of the decisive verdicts, the share "
        "naming the answer shown first (0.5 = no position preference). Longer wins: the share naming the longer "
        "answer. Intervals are bootstrap intervals over pairs.",
    )
    notes = Notes()
    rows = [
        [str(j.get("judge")), str(j.get("dimension")), stat_text(j.get("n_pairs")), stat_text(j.get("n_both_orders"))]
        + [stat_text(j.get(k), notes) for k, _ in POSITION]
        for j in judges
    ]
    headers = ["judge", "dimension", "pairs", "both orders"] + [h for _, h in POSITION]
    section.blocks.append(
        ViewTable(Table(headers, rows, notes=notes.lines(), numeric=set(range(2, len(headers)))), "pairwise-position")
    )

    notes = Notes()
    rows = [
        [str(j.get("judge")), str(j.get("dimension")), stat_text(j.get("n_with_reference"))]
        + [stat_text(j.get(k), notes) for k, _ in REFERENCE]
        for j in judges
        if j.get("n_with_reference")
    ]
    refs = _dicts(section_data.get("references"))
    conflicts = [
        f"{r.get('dimension')}: {r.get('conflicts')} pairs whose human raters disagree have no reference"
        for r in refs
        if r.get("conflicts")
    ]
    headers = ["judge", "dimension", "pairs with a reference"] + [h for _, h in REFERENCE]
    if rows:
        section.blocks.append(
            ViewTable(
                Table(
                    headers,
                    rows,
                    notes=notes.lines() + conflicts,
                    title="Against the human or gold verdicts",
                    numeric=set(range(2, len(headers))),
                ),
                "pairwise-reference",
            )
        )

    notes = Notes()
    rows = [
        [
            str(j.get("judge")),
            str(j.get("dimension")),
            str(w.get("model")),
            str(w.get("opponent")),
            stat_text(w.get("n_pairs")),
            stat_text(w.get("win_rate"), notes),
        ]
        for j in judges
        for w in _dicts(j.get("win_rates"))
    ]
    if rows:
        section.blocks.append(
            ViewTable(
                Table(
                    ["judge", "dimension", "model", "opponent", "pairs", "win rate (ties half)"],
                    rows,
                    notes=notes.lines(),
                    title="Win rates",
                    numeric={4, 5},
                ),
                "pairwise-win-rates",
            )
        )
    notes = Notes()
    rows = [
        [str(j.get("judge")), str(j.get("dimension")), str(m.get("model")), stat_text(m.get("strength"), notes)]
        for j in judges
        for m in _dicts((j.get("bradley_terry") or {}).get("models"))
    ]
    if rows:
        section.blocks.append(
            ViewTable(
                Table(
                    ["judge", "dimension", "model", "log-strength"],
                    rows,
                    notes=notes.lines() + ["Bradley\u2013Terry log-strengths, mean 0 across the models compared"],
                    title="Bradley\u2013Terry strengths",
                    numeric={3},
                ),
                "pairwise-bradley-terry",
            )
        )
    notes = Notes()
    rows = [
        [
            str(j.get("judge")),
            str(j.get("dimension")),
            stat_text((j.get("self_preference") or {}).get("n_own_model_pairs")),
        ]
        + [stat_text((j.get("self_preference") or {}).get(k), notes) for k, _ in SELF]
        for j in judges
        if (j.get("self_preference") or {}).get("n_own_model_pairs")
    ]
    if rows:
        section.blocks.append(
            ViewTable(
                Table(
                    ["judge", "dimension", "own-model pairs"] + [h for _, h in SELF],
                    rows,
                    notes=notes.lines(),
                    title="Self-preference: the judge's own model's runs",
                    numeric={2, 3, 4, 5},
                ),
                "pairwise-self-preference",
            )
        )
    return section


def csv_rows(audit: dict) -> list[list[Any]]:
    """Rows ``section, name, slice, key, statistic, value, reason`` (the audit csv's columns)."""
    out: list[list[Any]] = []

    def add(name: str, slice_: str, key: str, stat: str, fig: Any) -> None:
        if isinstance(fig, dict):
            value = fig.get("value")
            out.append(["pairwise", name, slice_, key, stat, "" if value is None else value, fig.get("reason") or ""])
            if fig.get("ci_low") is not None:
                out.append(["pairwise", name, slice_, key, stat + "_ci_low", fig["ci_low"], ""])
                out.append(["pairwise", name, slice_, key, stat + "_ci_high", fig["ci_high"], ""])
        elif isinstance(fig, int) and not isinstance(fig, bool):
            out.append(["pairwise", name, slice_, key, stat, fig, ""])

    section = audit.get("pairwise") if isinstance(audit.get("pairwise"), dict) else {}
    for j in _dicts(section.get("judges")):
        name, dim = str(j.get("judge")), str(j.get("dimension"))
        for k in ("n_pairs", "n_both_orders", "n_missing_verdicts", "n_with_reference"):
            add(name, "dimension", dim, k, j.get(k))
        for k, _ in POSITION + REFERENCE:
            add(name, "dimension", dim, k, j.get(k))
        for k, _ in SELF:
            add(name, "self_preference", dim, k, (j.get("self_preference") or {}).get(k))
        for w in _dicts(j.get("win_rates")):
            add(name, "win_rate", f"{dim}.{w.get('model')} vs {w.get('opponent')}", "win_rate", w.get("win_rate"))
        for m in _dicts((j.get("bradley_terry") or {}).get("models")):
            add(name, "bradley_terry", f"{dim}.{m.get('model')}", "strength", m.get("strength"))
    return out
