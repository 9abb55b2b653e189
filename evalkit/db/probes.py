"""The probe table: the judge's answers to counterfactual bundles (``evalkit probe``).

A probe answer is stored in ``probe_annotations``, tagged with the probe's name and the
original run's id, and never in ``annotations``/``annotation_values``: every reader of judge
annotations (:func:`evalkit.db.read_annotations`, the pairings, raters, Alt-Test, drift, the
report) reads those tables only, so a probe answer cannot reach an agreement figure. Only the
audit's ``probes`` section reads this table (:func:`read_probe_annotations`).

The call itself goes through the judge's one cache (``judge_calls``): :class:`ProbeTables` is
the judge's writer with its annotation write redirected here, so a rerun is served from the
cache like any judge call and sends no request. The rules are the judge's: one short
transaction per call, a failure never overwrites a stored success, upserts on deterministic ids.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evalkit.db.cells import loads
from evalkit.db.connect import Database
from evalkit.db.judge import JudgeTables, _keeps_stored, _stored, _upsert, judge_filter
from evalkit.db.schema import TABLES

PROBE_COLUMNS = TABLES["probe_annotations"].column_names


class ProbeTables(JudgeTables):
    """The judge's writer (cache, output modes) whose annotations go to ``probe_annotations``.

    Before a work item is run, :meth:`expect` tells which probe its annotation id belongs to."""

    annotation_table = "probe_annotations"
    annotation_columns = PROBE_COLUMNS
    annotation_order = "probe, run_id, judge_model, rubric_id, annotation_id"

    def __init__(self, path: str | os.PathLike[str], *, readonly: bool = False):
        super().__init__(path, readonly=readonly)
        self._probe_of: dict[str, str] = {}

    def expect(self, annotation_id: str, probe: str) -> None:
        self._probe_of[annotation_id] = probe

    def judged_runs(self, model: str, rubric_id: str, rubric_version: int, blind: bool) -> list[str]:
        return []  # drift replicates are not drawn from probe answers

    def _write_annotation(self, conn, ann: dict, values: dict | None, confidence: float | None, tag: str) -> dict:
        """The probe answer (``record`` has written the cache row in the same transaction); returns
        the answer row, with ``replicate`` 0 as the judge's runner expects."""
        row = {**ann, "probe": self._probe_of[ann["annotation_id"]]}
        existing = conn.execute(
            "SELECT status, cache_key FROM probe_annotations WHERE annotation_id = ?", (row["annotation_id"],)
        ).fetchone()
        if _keeps_stored(existing, row):
            row = _stored(conn, "probe_annotations", PROBE_COLUMNS, row["annotation_id"])
        else:
            conn.execute(
                _upsert("probe_annotations", PROBE_COLUMNS, "annotation_id"), [row.get(c) for c in PROBE_COLUMNS]
            )
        return {**{c: row.get(c) for c in PROBE_COLUMNS}, "replicate": 0}


@dataclass(frozen=True)
class ProbeAnswer:
    """One ok probe annotation: the judge's values for the transformed run."""

    probe: str
    run_id: str  # the original run
    judge_model: str
    rubric_id: str
    rubric_version: int
    values: dict[str, Any]
    created_at: str


def read_probe_annotations(db: Database, judge: str | None = None, rubric: str | None = None) -> list[ProbeAnswer]:
    """The ok probe answers, ordered by probe, run, judge, rubric, created_at. ``judge`` is
    resolved like every judge name (:func:`~evalkit.db.names.resolve_judge`)."""
    where, args = judge_filter(db, judge, rubric, ["status = 'ok'"])
    out = []
    for row in db.rows_where(
        "probe_annotations",
        " AND ".join(where),
        args,
        select="probe, run_id, judge_model, rubric_id, rubric_version, annotation, created_at",
        order_by="probe, run_id, judge_model, rubric_id, created_at, annotation_id",
    ):
        try:
            values = loads(row["annotation"]) if row["annotation"] else {}
        except ValueError:
            values = {}
        if isinstance(values, dict):
            out.append(
                ProbeAnswer(
                    str(row["probe"]),
                    str(row["run_id"]),
                    row["judge_model"],
                    row["rubric_id"],
                    int(row["rubric_version"] or 0),
                    values,
                    str(row["created_at"] or ""),
                )
            )
    return out
