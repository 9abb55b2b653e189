"""The jury rater: for a rubric judged by several models, one derived rater ``jury@RUBRIC``.

Per (run, rubric, dimension), the jurors are the judge models with a blind, primary (replicate 0)
answer — the latest one per model, as everywhere in the audit. With at least two jurors the jury
answers:

- nominal dimensions: the majority label;
- ordinal and interval dimensions: the median, and with an even number of jurors the *lower*
  of the two middle labels (the median stays a label the rubric has);
- a tie goes to the label with the lower credit (the rubric's "choose the lower" rule).

Credit order: the dimension's configured ``scale`` (least credit first), else the number itself,
else :func:`raters.label_credit` (pass/fail, C/P/I/N, yes/no, ...). In a nominal vote a label with
no known credit counts as the least (nothing is guessed in the lenient direction); on an ordered
dimension a label with no place on the scale (a judge's ``"n/a"``) is not a vote, as it is left
out of the raters section, and the jury needs two votes left. The level is the configured
one, else inferred as for the raters section (:func:`raters.level_and_labels`).

The jury is returned as ordinary :class:`JudgeValue` rows with ``judge_model = "jury"``, so it takes
part in pairings, the raters section and the Alt-Test exactly like a judge. It never touches the
database and never feeds drift or the annotation counts. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from evalkit.agreement.pairings_config import AuditConfig, DimensionSpec
from evalkit.agreement.raters import label_credit, level_and_labels, scale_credit
from evalkit.db import JudgeValue

JURY_MODEL = "jury"
MIN_JURORS = 2


def credit_key(spec: DimensionSpec | None):
    """A sort key putting labels in credit order, least first (see module docstring)."""
    credit = scale_credit(list(spec.scale)) if spec is not None and spec.scale is not None else label_credit

    def key(v: Any) -> tuple:
        c = credit(v)
        return (0, 0.0, repr(v)) if c is None else (1, c, repr(v))  # no known credit (off the scale): least

    return key


def verdict(values: list[Any], level: str, key) -> Any:
    """The jury's label from the jurors' labels (see module docstring), or None without a jury."""
    if level == "nominal":
        counts = Counter(values)
        top = max(counts.values())
        return min((v for v in counts if counts[v] == top), key=key)
    ordered = sorted((v for v in values if key(v)[0] == 1), key=key)
    if len(ordered) < MIN_JURORS:
        return None
    return ordered[(len(ordered) - 1) // 2]


def jury_values(values: Iterable[JudgeValue], config: AuditConfig) -> list[JudgeValue]:
    """The jury's rows for every (run, rubric, dimension) answered by at least two judge models."""
    latest: dict[tuple[str, str, str], dict[str, JudgeValue]] = defaultdict(dict)
    by_dimension: dict[str, list[Any]] = defaultdict(list)
    for v in values:  # oldest first: a later answer by the same model replaces an earlier one
        if not v.blind or v.replicate != 0 or v.judge_model == JURY_MODEL:
            continue
        latest[(v.rubric_id, v.dimension, v.run_id)][v.judge_model] = v
        by_dimension[v.dimension].append(v.value)
    levels = {d: level_and_labels(vals, config.dimensions.get(d))[0] for d, vals in by_dimension.items()}
    out = []
    for (rubric, dimension, run_id), jurors in sorted(latest.items()):
        if len(jurors) < MIN_JURORS:
            continue
        members = [jurors[m] for m in sorted(jurors)]
        value = verdict([m.value for m in members], levels[dimension], credit_key(config.dimensions.get(dimension)))
        if value is None:
            continue
        out.append(
            JudgeValue(
                annotation_id=f"jury:{rubric}:{run_id}",
                run_id=run_id,
                judge_model=JURY_MODEL,
                rubric_id=rubric,
                dimension=dimension,
                value=value,
                confidence=None,
                blind=True,
                replicate=0,
                rationale="jury of " + ", ".join(sorted(jurors)),
                created_at=max(m.created_at for m in members),
            )
        )
    return out
