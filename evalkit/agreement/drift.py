"""Test–retest drift of a judge: replicates (``evalkit judge --resample``) against the first answer.

For each judge model and rubric, every blind replicate annotation (``replicate ≥ 1``) is compared
with the blind primary answer (``replicate = 0``, latest if re-run) of the same run:

- per dimension, the agreement between primary and replicate values (percent agreement, Cohen's
  kappa over the dimension's labels, weighted for integer dimensions) and how many moved by
  ``moved_by`` or more;
- the computer-use rubric's drift flag per replicate: more than ``max_moved`` dimensions moved by ``moved_by`` or more
  (defaults 2 and 1). Only numeric values can move by an amount; a change between labels such as
  "n/a" and 2 counts as a disagreement but not as a move.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evalkit.agreement.judge_vs_mechanical import NOT_APPLICABLE, ORDERED
from evalkit.agreement.pairings_config import AuditConfig
from evalkit.agreement.raters import level_and_labels, on_scale
from evalkit.agreement.sources import JudgeColumns


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def moved_dimensions(primary: dict[str, Any], replicate: dict[str, Any], moved_by: float) -> list[str]:
    """Dimensions whose numeric value changed by at least ``moved_by`` (sorted)."""
    return sorted(
        d
        for d, v in replicate.items()
        if d in primary and _num(v) and _num(primary[d]) and abs(v - primary[d]) >= moved_by
    )


def _off_scale(stat: dict[str, Any], off: int, n: int, labels: list[Any]) -> dict[str, Any]:
    """An undefined kappa whose pairs were left out for a label off the scale says so: percent
    agreement counts them ("n/a" against "n/a" agrees), kappa cannot."""
    if stat["value"] is not None or not off:
        return stat
    scale = ", ".join(str(label) for label in labels)
    return {**stat, "reason": f"{off} of {n} pairs have a label off the scale ({scale}), left out: {stat['reason']}"}


def analyse(values: JudgeColumns, config: AuditConfig) -> list[dict[str, Any]]:
    """One entry per judge model and rubric that has replicates."""
    import numpy as np

    from evalkit.agreement import stats

    primary: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    replicas: dict[tuple[str, str], dict[tuple[str, str, int], dict[str, Any]]] = defaultdict(lambda: defaultdict(dict))
    again = np.flatnonzero(values.blind & (values.replicate != 0))
    if not len(again):
        return []
    for v in values.at(again):
        replicas[(v.judge_model, v.rubric_id)][(v.run_id, v.annotation_id, v.replicate)][v.dimension] = v.value
    # only the primaries a replicate is compared with: those of its judge, rubric and run
    named = (values.judge.astype(np.int64) * len(values.rubrics) + values.rubric) * len(values.runs) + values.run
    first = np.flatnonzero(values.blind & (values.replicate == 0) & np.isin(named, named[again]))
    for v in values.at(first):  # oldest first: later primaries overwrite earlier ones
        primary[(v.judge_model, v.rubric_id)][v.run_id][v.dimension] = v.value
    judges = []
    for key in sorted(replicas):
        judge_model, rubric = key
        per_dim: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        moves: dict[str, int] = defaultdict(int)
        flagged, n = [], 0
        for run_id, annotation_id, rep in sorted(replicas[key]):
            first = primary[key].get(run_id)
            if not first:
                continue
            n += 1
            again = replicas[key][(run_id, annotation_id, rep)]
            for dim in sorted(set(first) & set(again)):
                per_dim[dim][0].append(first[dim])
                per_dim[dim][1].append(again[dim])
            moved = moved_dimensions(first, again, config.moved_by)
            for dim in moved:
                moves[dim] += 1
            if len(moved) > config.max_moved:
                flagged.append({"run_id": run_id, "annotation_id": annotation_id, "replicate": rep, "moved": moved})
        dims = []
        for dim in sorted(per_dim):
            x, y = per_dim[dim]
            level, labels = level_and_labels(x + y, config.dimensions.get(dim))
            on = [(a, b) for a, b in zip(x, y) if on_scale(a, labels) and on_scale(b, labels)]
            xs, ys = [a for a, _ in on], [b for _, b in on]
            dims.append(
                {
                    "dimension": dim,
                    "n": len(x),
                    "level": level,
                    "percent_agreement": stats.percent_agreement(x, y),
                    "cohen_kappa": _off_scale(stats.cohen_kappa(xs, ys, labels), len(x) - len(on), len(x), labels),
                    "weighted_kappa": _off_scale(
                        stats.cohen_kappa(xs, ys, labels, weighted=True), len(x) - len(on), len(x), labels
                    )
                    if level in ORDERED
                    else {"value": None, "reason": NOT_APPLICABLE + "nominal dimension"},
                    "n_moved": moves.get(dim, 0),
                }
            )
        judges.append(
            {
                "judge_model": judge_model,
                "rubric": rubric,
                "moved_by": config.moved_by,
                "max_moved": config.max_moved,
                "n_replicates": n,
                "n_flagged": len(flagged),
                "flagged_share": (len(flagged) / n) if n else None,
                "dimensions": dims,
                "flagged": flagged,
            }
        )
    return judges
