"""Provider batches of the judge (``evalkit judge --batch``): ``judge_batches`` and ``judge_batch_items``.

A submission is written *before* anything is uploaded (status ``submitting``, with every request's
custom id, run and annotation), its input file id as soon as the upload returns, and its batch id
as soon as the provider names it, each in its own short transaction. So a process killed at any
point leaves a row that says how far it got: a later ``--batch`` (or ``--batch-status``) polls the
batch again, or finds it by its input file at the provider, instead of paying for it twice. A
submission is ``collected`` once its results are in ``judge_calls``/``annotations``.
"""

from __future__ import annotations

import json
from typing import Any

from evalkit.db.connect import Database
from evalkit.db.schema import TABLES

BATCH_COLUMNS = TABLES["judge_batches"].column_names
ITEM_COLUMNS = TABLES["judge_batch_items"].column_names
FINISHED = ("completed", "expired", "failed", "cancelled")  # the provider will not change these
OPEN = ("submitting", "validating", "in_progress", "finalizing", "cancelling", *FINISHED)  # not yet collected


def add_submission(db: Database, row: dict, items: list[dict]) -> None:
    """The submission and its requests, in one transaction (before any upload)."""
    with db.transaction():
        db.utils.table("judge_batches").insert({c: row.get(c) for c in BATCH_COLUMNS}, ignore=True)
        db.utils.table("judge_batch_items").insert_all(
            ({c: dict(item, submission_id=row["submission_id"]).get(c) for c in ITEM_COLUMNS} for item in items),
            replace=True,
        )


def update_submission(db: Database, submission_id: str, **fields: Any) -> None:
    unknown = set(fields) - set(BATCH_COLUMNS)
    if unknown:
        raise ValueError(f"judge_batches has no column {sorted(unknown)[0]!r}")
    with db.transaction() as conn:
        conn.execute(
            f"UPDATE judge_batches SET {', '.join(f'{k} = ?' for k in fields)} WHERE submission_id = ?",
            [*fields.values(), submission_id],
        )


def submissions(
    db: Database, model: str | None = None, rubric: dict | None = None, open_only: bool = False
) -> list[dict]:
    """Submissions (oldest first), optionally of one judge model and rubric identity, optionally
    only those not collected yet; each with its ``items`` (custom id -> item row)."""
    where, args = [], []
    if model is not None:
        where.append("judge_model = ?")
        args.append(model)
    if rubric is not None:
        where += ["rubric_id = ?", "rubric_version = ?", "rubric_hash = ?"]
        args += [rubric["id"], rubric["version"], rubric["text_hash"]]
    if open_only:
        where.append(f"status IN ({', '.join('?' for _ in OPEN)})")
        args += list(OPEN)
    out = [
        {c: row[c] for c in BATCH_COLUMNS}
        for row in db.rows_where(
            "judge_batches", " AND ".join(where) or None, args, order_by="created_at, submission_id"
        )
    ]
    for sub in out:
        sub["items"] = {
            row["custom_id"]: {c: row[c] for c in ITEM_COLUMNS}
            for row in db.rows_where(
                "judge_batch_items", "submission_id = ?", [sub["submission_id"]], order_by="custom_id"
            )
        }
    return out


def item_request(item: dict) -> dict:
    """The stored request record of a batch item (what live calls store in ``judge_calls.request``)."""
    try:
        value = json.loads(item.get("request") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
