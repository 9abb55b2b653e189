"""Scores: the writer behind ``evalkit score`` (:class:`Store`) and the typed score readers.

Everything is upserted by ``run_id``, so re-scoring never duplicates. A batch of ScoreCards is
one transaction (each card's run, card, commands and bundle land together or not at all).
Judge output lives in its own tables; nothing here reads it.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from evalkit.db.connect import Database, DbError, open_write
from evalkit.scoring.scorecard import ScoreCard, card_head_json
from evalkit.trajectory.values import compact_json

DEFAULT_DB = "evalkit.db"

_COLUMNS = {
    "runs": ("run_id", "path", "scenario_id", "scenario_title", "model", "provider", "ts_utc",
             "final_reason", "status", "bundle_hash"),
    "scorecards": ("run_id", "scenario_id", "model", "status", "scalar", "coverage", "order_score",
                   "end_state", "all_passed", "safety_dangerous", "safety_anti_procedure", "extraneous",
                   "bundle_hash", "card"),
    "commands": ("run_id", "idx", "step", "call_index", "tool", "control", "value", "args", "class",
                 "subtype", "severity"),
    "bundles": ("bundle_hash", "bundle"),
}
_UPSERT = {
    table: f'INSERT OR REPLACE INTO "{table}" ({", ".join(f"[{c}]" for c in cols)}) '
           f'VALUES ({", ".join("?" for _ in cols)})'
    for table, cols in _COLUMNS.items()
}


CardRows = dict[str, list[tuple]]  # table -> rows of one card


def _value_json(value: Any) -> str | None:
    """A command's value column: its JSON, or NULL when it has none (a non-finite number is none)."""
    if value is None or (type(value) is float and not math.isfinite(value)):
        return None
    return compact_json(value)


def card_rows(card: ScoreCard, head: str | None = None) -> CardRows:
    """The rows one card is stored as: plain tuples, cheap to send from a worker process.
    ``head`` is ``card_head_json(card)`` (the stored card) when the caller has it.
    Built from the card's objects and its bundle's text, never from a dump of the whole card: a long
    run's rows are then the only copy the writer holds."""
    if head is None:
        head = card_head_json(card)
    bundle = card.bundle
    v = card.vector
    # a long run repeats the same few commands: one string per distinct args / value JSON
    texts: dict[str, str] = {}

    def shared(text: str | None) -> str | None:
        return text if text is None else texts.setdefault(text, text)

    out: dict[str, list[tuple]] = {
        "runs": [(card.run_id, card.path, card.scenario_id, bundle.title, card.model,
                  card.provenance.provider, card.provenance.ts_utc, card.informative.final_reason,
                  card.status, card.bundle_hash)],
        "scorecards": [(card.run_id, card.scenario_id, card.model, card.status, card.scalar, v.coverage,
                        v.order, v.end_state, None if v.all_passed is None else int(v.all_passed),
                        v.safety_dangerous, v.safety_anti_procedure, v.extraneous, card.bundle_hash,
                        head)],
        "bundles": [(card.bundle_hash, bundle.json)],
        "commands": [
            (card.run_id, row.index, row.step, row.call_index, row.tool, row.control, shared(_value_json(row.value)),
             shared(compact_json(row.args)), row.class_, row.subtype, row.severity)
            for row in card.commands
        ],
    }
    return out


class Store:
    """The scores database, open for writing. ``Store(":memory:")`` works for tests.

    Raises :class:`evalkit.db.DbError` (an ``InputError``: one line naming the file) when the
    file cannot be used: not a database, corrupt, a directory, no such directory, locked for
    longer than the busy timeout, or made by a newer evalkit.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB):
        self.path = str(path)
        self.database = open_write(self.path)

    @property
    def conn(self):
        return self.database.conn

    @property
    def db(self):
        """The connection as a ``sqlite_utils.Database`` (imported on first use: it pulls in numpy)."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def save(self, card: ScoreCard) -> None:
        self.save_many([card])

    def save_many(self, cards: Iterable[ScoreCard]) -> None:
        """Write cards; the batch is one transaction, so nothing is ever half-written."""
        self.save_rows([card_rows(card) for card in cards])

    def save_rows(self, prepared: Iterable[CardRows]) -> None:
        """Write cards already turned into rows by :func:`card_rows`; one transaction."""
        batch: dict[str, list[tuple]] = {t: [] for t in _COLUMNS}
        run_ids = []
        for rows_of_card in prepared:
            run_ids.append((rows_of_card["runs"][0][0],))
            for table, rows in rows_of_card.items():
                batch[table].extend(rows)
        if not run_ids:
            return
        with self.database.transaction() as conn:
            conn.executemany("DELETE FROM commands WHERE run_id = ?", run_ids)
            # the largest values first: SQLite copies a bound value twice while inserting it and keeps
            # the last bound copy until the statement is used again
            for table in ("bundles", "scorecards", "runs", "commands"):
                if batch[table]:
                    conn.executemany(_UPSERT[table], batch[table])

    def iter_scorecards(self) -> Iterator[ScoreCard]:
        """Stored ScoreCards with their judge_bundle, ordered by run_id."""
        return read_scorecards(self.database)

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _card(db: Database, run_id: str, card: str, bundle: str | None) -> ScoreCard:
    try:
        data = json.loads(card)
        data["judge_bundle"] = json.loads(bundle) if bundle is not None else {}
        return ScoreCard.model_validate(data)
    except (ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DbError(db.path, f"scorecards row {run_id!r}: stored card is not a ScoreCard ({first})") from None


def read_scorecards(db: Database, *, with_bundle: bool = True) -> Iterator[ScoreCard]:
    """Stored ScoreCards ordered by run_id. ``with_bundle``: joined with their judge bundle (a
    card whose bundle is missing is skipped); else ``judge_bundle`` is ``{}``."""
    if with_bundle:
        sql = ("SELECT s.run_id, s.card, b.bundle FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash "
               "ORDER BY s.run_id")
    else:
        sql = "SELECT run_id, card, NULL AS bundle FROM scorecards ORDER BY run_id"
    for row in db.rows(sql):
        yield _card(db, row["run_id"], row["card"], row["bundle"])


@dataclass(frozen=True)
class Card:
    """A stored ScoreCard as the audit reads it: a few columns plus the decoded JSON (lenient:
    an unreadable ``card`` reads as ``{}``)."""

    run_id: str
    scenario_id: str
    model: str
    path: str
    status: str
    card: dict[str, Any]


def read_cards(db: Database) -> Iterator[Card]:
    for row in db.rows("SELECT run_id, scenario_id, model, status, card FROM scorecards ORDER BY run_id"):
        try:
            card = json.loads(row["card"]) if row["card"] else {}
        except json.JSONDecodeError:
            card = {}
        if not isinstance(card, dict):
            card = {}
        yield Card(
            run_id=row["run_id"],
            scenario_id=row["scenario_id"] or card.get("scenario_id") or "",
            model=row["model"] or card.get("model") or "",
            path=card.get("path") or "",
            status=row["status"] or card.get("status") or "",
            card=card,
        )


def read_runs(db: Database) -> dict[str, dict[str, Any]]:
    """run_id → the ``runs`` columns the ScoreCard does not hold (title, provider, time, reason, path)."""
    cols = ("path", "scenario_title", "provider", "ts_utc", "final_reason")
    return {row["run_id"]: {c: row[c] for c in cols}
            for row in db.rows(f"SELECT run_id, {', '.join(cols)} FROM runs")}


def decode_json(value: Any) -> Any:
    """A JSON-encoded cell, decoded; plain text (or bytes) that is not JSON is taken literally."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def read_commands(db: Database) -> dict[str, list[dict[str, Any]]]:
    """run_id → its classified commands in order, as the ScoreCard's ``commands`` entries."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in db.rows("SELECT * FROM commands ORDER BY run_id, idx"):
        out.setdefault(row["run_id"], []).append({
            "index": row["idx"], "step": row["step"], "tool": row["tool"], "control": row["control"],
            "value": decode_json(row["value"]), "args": decode_json(row["args"]), "class": row["class"],
            "subtype": row["subtype"], "severity": row["severity"],
        })
    return out
