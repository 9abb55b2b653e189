"""Adjudications: what the human verdicts on the judge-versus-mechanical disagreements say.

A verdict (recorded in ``evalkit view``, :mod:`evalkit.db.reviews`) names who was wrong about one
disagreement of one pairing on one run:

- ``mechanical_right``: a **judge error**;
- ``judge_right``: a **scorer error** (the mechanical side scored the run wrongly) and
  ``ground_truth_wrong``: a **ground-truth error** (the scenario's procedure or success criteria are
  wrong); both are mechanical errors: fix the scenario or the scorer, not the judge;
- ``both_wrong``: both sides; ``unclear``: no decision.

Per pairing, over the verdicts on its *current* disagreements (each reviewer's latest verdict on a
run the audit still lists for that pairing): how many runs are adjudicated, the count of each kind,
and the judge's and the mechanical side's error rates among the decided verdicts (``unclear`` left
out; ``both_wrong`` counts against both). A rate with no decided verdict is undefined, with the
reason. Verdicts on a run that no longer disagrees (re-judged or re-scored since) are counted apart
as ``not_disagreeing``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

KINDS = (
    ("judge_errors", "mechanical_right"),
    ("scorer_errors", "judge_right"),
    ("ground_truth_errors", "ground_truth_wrong"),
    ("both_wrong", "both_wrong"),
    ("unclear", "unclear"),
)


def _rate(k: int, n: int) -> dict[str, Any]:
    if n == 0:
        return {"value": None, "reason": "no decided verdict (none, or only unclear)"}
    return {"value": k / n, "reason": None}


def adjudication_entries(
    adjudications: Iterable[Any], disagreeing: Mapping[str, set[str]], pairings: Iterable[str]
) -> list[dict[str, Any]]:
    """One entry per pairing that has disagreements or verdicts, in pairing order (then any other
    pairing a verdict names, by name); ``disagreeing`` is pairing name → the runs of its
    disagreements."""
    verdicts = list(adjudications)
    order = list(dict.fromkeys(pairings))
    order += sorted({a.pairing for a in verdicts} - set(order))
    out = []
    for name in order:
        runs = disagreeing.get(name, set())
        mine = [a for a in verdicts if a.pairing == name]
        if not runs and not mine:
            continue
        current = [a for a in mine if a.run_id in runs]
        counts = Counter(a.verdict for a in current)
        entry: dict[str, Any] = {
            "pairing": name,
            "disagreements": len(runs),
            "adjudicated": len({a.run_id for a in current}),
            "verdicts": len(current),
            "not_disagreeing": len(mine) - len(current),
            "reviewers": sorted({a.reviewer for a in current}),
        }
        for key, verdict in KINDS:
            entry[key] = counts[verdict]
        decided = len(current) - counts["unclear"]
        entry["judge_error_rate"] = _rate(entry["judge_errors"] + entry["both_wrong"], decided)
        entry["mechanical_error_rate"] = _rate(
            entry["scorer_errors"] + entry["ground_truth_errors"] + entry["both_wrong"], decided
        )
        out.append(entry)
    return out


def adjudications_section(audit: dict[str, Any]):
    """The audit view's section (:mod:`evalkit.agreement.view`), or None when no verdict was
    recorded (an audit without reviews reads as it always did)."""
    from evalkit.present import Table
    from evalkit.present.document import Notes, Section, ViewTable, stat_text

    entries = [e for e in audit.get("adjudications") or [] if isinstance(e, dict)]
    if not any(e.get("verdicts") or e.get("not_disagreeing") for e in entries):
        return None
    notes = Notes()
    rows = [
        [
            str(e.get("pairing")),
            str(e.get("disagreements")),
            str(e.get("adjudicated")),
            str(e.get("verdicts")),
            *(str(e.get(k)) for k, _ in KINDS),
            stat_text(e.get("judge_error_rate"), notes),
            stat_text(e.get("mechanical_error_rate"), notes),
        ]
        for e in entries
    ]
    apart = [(str(e.get("pairing")), e["not_disagreeing"]) for e in entries if e.get("not_disagreeing")]
    lines = notes.lines()
    if apart:  # counted nowhere in the table, so the table says where they went
        n = sum(k for _, k in apart)
        which = ", ".join(f"{name} {k}" for name, k in apart)
        lines.append(
            f"1 verdict on a run that no longer disagrees on its pairing is left out of these counts ({which})"
            if n == 1
            else f"{n} verdicts on runs that no longer disagree on their pairing are left out of these counts ({which})"
        )
    table = Table(
        [
            "pairing",
            "disagreements",
            "adjudicated",
            "verdicts",
            "judge errors",
            "scorer errors",
            "ground-truth errors",
            "both wrong",
            "unclear",
            "judge error rate",
            "mechanical error rate",
        ],
        rows,
        notes=lines,
        numeric=set(range(1, 11)),
    )
    return Section(
        "Adjudications: who was wrong",
        [ViewTable(table, "adjudications")],
        intro="Human verdicts on the disagreements (evalkit view): a judge error is mechanical_right, a "
        "scorer error judge_right, a ground-truth error ground_truth_wrong. Rates are over the decided "
        "verdicts (unclear left out; both_wrong counts against both); a run two reviewers judged is one "
        "adjudicated run and two verdicts. Many mechanical errors: fix the "
        "scenario or the scorer; many judge errors: do not trust the judge.",
    )
