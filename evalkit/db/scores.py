"""Scores: the writer behind ``evalkit score`` (:class:`Store`) and the typed score readers.

Everything is upserted by ``run_id``, so re-scoring never duplicates. A batch of ScoreCards is
one transaction (each card's run, card, commands and bundle land together or not at all).
Judge output lives in its own tables; nothing here reads it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalkit.db.cells import loads
from evalkit.db.connect import Database, DbError, open_write

if TYPE_CHECKING:  # the writer path (save_batches) runs in a parent that never loads the card model
    from evalkit.scoring.scorecard import ScoreCard

DEFAULT_DB = "evalkit.db"

_COLUMNS = {
    "runs": (
        "run_id",
        "path",
        "scenario_id",
        "scenario_title",
        "model",
        "provider",
        "ts_utc",
        "final_reason",
        "status",
        "bundle_hash",
    ),
    "scorecards": (
        "run_id",
        "scenario_id",
        "model",
        "status",
        "scalar",
        "coverage",
        "order_score",
        "end_state",
        "all_passed",
        "safety_dangerous",
        "safety_anti_procedure",
        "extraneous",
        "bundle_hash",
        "card",
    ),
    "commands": (
        "run_id",
        "idx",
        "step",
        "call_index",
        "tool",
        "control",
        "value",
        "args",
        "class",
        "subtype",
        "severity",
    ),
    "bundles": ("bundle_hash", "bundle"),
}
_UPSERT = {
    table: f'INSERT OR REPLACE INTO "{table}" ({", ".join(f"[{c}]" for c in cols)}) '
    f"VALUES ({', '.join('?' for _ in cols)})"
    for table, cols in _COLUMNS.items()
}


CardRows = dict[str, list[tuple]]  # table -> rows of one card


def _value_json(value: Any, compact_json: Any) -> str | None:
    """A command's value column: its JSON, or NULL when it has none (a non-finite number is none)."""
    if value is None or (type(value) is float and not math.isfinite(value)):
        return None
    return compact_json(value)


def card_rows(card: ScoreCard, head: str | None = None) -> CardRows:
    """The rows one card is stored as: plain tuples, cheap to send from a worker process.
    ``head`` is ``card_head_json(card)`` (the stored card) when the caller has it.
    Built from the card's objects and its bundle's text, never from a dump of the whole card: a long
    run's rows are then the only copy the writer holds."""
    # the JSON encoder (pydantic_core) loads where cards are made: a parent that only writes never needs it
    from evalkit.aggregate.groups import card_scores
    from evalkit.trajectory.values import compact_json

    if head is None:
        from evalkit.scoring.scorecard import card_head_json

        head = card_head_json(card)
    bundle = card.bundle
    v = card.vector
    # a long run repeats the same few commands: one string per distinct args / value JSON
    texts: dict[str, str] = {}

    def shared(text: str | None) -> str | None:
        return text if text is None else texts.setdefault(text, text)

    out: dict[str, list[tuple]] = {
        "runs": [
            (
                card.run_id,
                card.path,
                card.scenario_id,
                bundle.title,
                card.model,
                card.provenance.provider,
                card.provenance.ts_utc,
                card.informative.final_reason,
                card.status,
                card.bundle_hash,
            )
        ],
        "scorecards": [
            (
                card.run_id,
                *card_scores(card),
                None if v.all_passed is None else int(v.all_passed),
                v.safety_dangerous,
                v.safety_anti_procedure,
                v.extraneous,
                card.bundle_hash,
                head,
            )
        ],
        "bundles": [(card.bundle_hash, bundle.json)],
        "commands": [
            (
                card.run_id,
                row.index,
                row.step,
                row.call_index,
                row.tool,
                row.control,
                shared(_value_json(row.value, compact_json)),
                shared(compact_json(row.args)),
                row.class_,
                row.subtype,
                row.severity,
            )
            for row in card.commands
        ],
    }
    return out


@dataclass(slots=True)
class BatchRows:
    """The rows of several cards, merged by table (what a worker sends for a batch): ``run_ids`` in
    order, ``tables`` table -> rows, ``chars`` the characters of their cards and bundles."""

    run_ids: list[str]
    tables: dict[str, list[tuple]]
    chars: int


def batch_rows(cards: Iterable[CardRows]) -> BatchRows:
    """Merge cards' rows (:func:`card_rows`), in order. A run_id given twice keeps only the later
    card's commands, as storing the cards one by one would (the database keeps the later card)."""
    cards = list(cards)
    last = {rows["runs"][0][0]: i for i, rows in enumerate(cards)}
    tables: dict[str, list[tuple]] = {t: [] for t in _COLUMNS}
    chars = 0
    for i, rows in enumerate(cards):
        latest = last[rows["runs"][0][0]] == i
        for table, table_rows in rows.items():
            if latest or table != "commands":
                tables[table].extend(table_rows)
        chars += len(rows["bundles"][0][1]) + len(rows["scorecards"][0][-1])
    return BatchRows([rows["runs"][0][0] for rows in cards], tables, chars)


@dataclass(slots=True)
class StagedRows:
    """A batch's rows already inserted into SQLite: ``data`` is a serialised database holding the
    score tables (the scores' column types, no keys), in order; ``run_ids`` and ``chars`` as in
    :class:`BatchRows`. A worker sends it for a batch of several files, so that the parent copies
    the rows with INSERT ... SELECT instead of decoding and binding every value."""

    run_ids: list[str]
    data: Any  # bytes, or a worker's file of them (evalkit.engines.spool.Spooled)
    chars: int

    def database(self) -> Any:
        """The serialised database: bytes, or its spooled file mapped into memory (once), which
        ``deserialize`` copies from without a read into a buffer of its own first."""
        if hasattr(self.data, "mapped"):
            self.data = self.data.mapped()
        return self.data


STAGE = "evalkit_stage"  # the schema name a staging database is attached under


def _stage_ddl(table: str) -> str:
    from evalkit.db.schema import TABLES

    kinds = dict(TABLES[table].columns)
    # the same declared types as the real table: a value is converted as it would be there, once
    return f'CREATE TABLE "{table}" ({", ".join(f"[{c}] {kinds[c]}" for c in _COLUMNS[table])})'


def stage_rows(rows: BatchRows) -> StagedRows:
    """``rows`` as a staging database (:class:`StagedRows`); in memory, nothing touches a disk."""
    import sqlite3

    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("BEGIN")
        for table in _COLUMNS:  # every table before any row: the same root pages in every batch
            conn.execute(_stage_ddl(table))
        for table, cols in _COLUMNS.items():
            if rows.tables[table]:
                conn.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" for _ in cols)})', rows.tables[table])
        conn.execute("COMMIT")
        data = conn.serialize()
    finally:
        conn.close()
    return StagedRows(rows.run_ids, data, rows.chars)


_LAYOUT: list[tuple[str, int, str]] = []


def _stage_layout() -> list[tuple[str, int, str]]:
    """(name, root page, sql) of each table of a staging database, as :func:`stage_rows` makes it."""
    if not _LAYOUT:
        import sqlite3

        conn = sqlite3.connect(":memory:")
        for table in _COLUMNS:
            conn.execute(_stage_ddl(table))
        _LAYOUT.extend(conn.execute("SELECT name, rootpage, sql FROM sqlite_schema ORDER BY rowid").fetchall())
        conn.close()
    return _LAYOUT


def can_stage() -> bool:
    """Whether this Python's sqlite3 can serialise a database (3.11+, SQLite built with it)."""
    import sqlite3

    return hasattr(sqlite3.Connection, "serialize")


def _can_deserialize(conn: Any) -> bool:
    return hasattr(conn, "deserialize")


def _unstage(db_path: str, staged: StagedRows) -> BatchRows:
    """The rows of a staging database read back (through a temporary file), exactly as stored."""
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory(prefix="evalkit-stage-") as tmp:
        path = os.path.join(tmp, "stage.db")
        with open(path, "wb") as fh:
            fh.write(staged.database())
        conn = sqlite3.connect(path)
        try:
            tables = {
                t: conn.execute(f'SELECT {", ".join(f"[{c}]" for c in cols)} FROM "{t}" ORDER BY rowid').fetchall()
                for t, cols in _COLUMNS.items()
            }
        except sqlite3.Error as exc:
            raise DbError(db_path, f"a batch's staging database cannot be read: {exc}") from None
        finally:
            conn.close()
    return BatchRows(staged.run_ids, tables, staged.chars)


_COPY = {
    table: f'INSERT OR REPLACE INTO main."{table}" ({", ".join(f"[{c}]" for c in cols)}) '
    f'SELECT {", ".join(f"[{c}]" for c in cols)} FROM {STAGE}."{table}" ORDER BY rowid'
    for table, cols in _COLUMNS.items()
}


class Store:
    """The scores database, open for writing. ``Store(":memory:")`` works for tests.

    Raises :class:`evalkit.db.DbError` (an ``InputError``: one line naming the file) when the
    file cannot be used: not a database, corrupt, a directory, no such directory, locked for
    longer than the busy timeout, or made by a newer evalkit.
    """

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_DB):
        self.path = str(path)
        self.database = open_write(self.path)
        self._stage = False  # whether the staging schema is attached

    @property
    def conn(self):
        return self.database.conn

    @property
    def db(self):
        """The connection as a ``sqlite_utils.Database`` (:attr:`evalkit.db.Database.utils`: imported
        on first use, as it pulls in numpy; the connection's settings are left as they are)."""
        return self.database.utils

    def save(self, card: ScoreCard) -> None:
        self.save_many([card])

    def save_many(self, cards: Iterable[ScoreCard]) -> None:
        """Write cards; the batch is one transaction, so nothing is ever half-written."""
        self.save_rows([card_rows(card) for card in cards])

    def save_rows(self, prepared: Iterable[CardRows]) -> None:
        """Write cards already turned into rows by :func:`card_rows`; one transaction."""
        self.save_batches([batch_rows(prepared)])

    def save_batches(self, batches: Iterable[BatchRows]) -> None:
        """Write batches of rows (:func:`batch_rows`, made by the workers) in order; one
        transaction. The result is that of storing every card one by one: consecutive batches are
        written together while no run_id repeats among them."""
        batches = [b for b in batches if b.run_ids]
        if not batches:
            return
        if not self._stage and any(isinstance(b, StagedRows) for b in batches) and _can_deserialize(self.conn):
            self._attach_stage()
        with self.database.transaction() as conn:
            group: list[BatchRows] = []
            ids: set[str] = set()
            for b in batches:
                if isinstance(b, StagedRows):  # on its own: the group before it is written first
                    _write_group(conn, group)
                    group, ids = [], set()
                    self._copy_staged(conn, b)
                    continue
                if not ids.isdisjoint(b.run_ids):  # a run_id again: its earlier commands go first
                    _write_group(conn, group)
                    group, ids = [], set()
                group.append(b)
                ids.update(b.run_ids)
            _write_group(conn, group)

    def _attach_stage(self) -> None:
        """Attach the in-memory schema staging databases are loaded into (outside a transaction:
        SQLite attaches nothing inside one)."""
        import sqlite3

        try:
            self.conn.execute(f"ATTACH ':memory:' AS {STAGE}")
        except sqlite3.Error as exc:
            raise DbError(self.path, f"cannot attach a staging database: {exc}") from None
        self._stage = True

    def _copy_staged(self, conn: Any, staged: StagedRows) -> None:
        if not _can_deserialize(conn):  # a sqlite3 without it (a Ray node's may differ): rows again
            _write_group(conn, [_unstage(self.path, staged)])
            return
        conn.deserialize(staged.database(), name=STAGE)
        # SQLite keeps the schema it read from the previous staging database while its version
        # number is the same, so every staging database must be laid out alike: checked here
        found = conn.execute(f"SELECT name, rootpage, sql FROM {STAGE}.sqlite_schema ORDER BY rowid").fetchall()
        if found != _stage_layout():
            raise DbError(self.path, "a batch's staging database is not laid out as evalkit lays it out")
        conn.execute(f'DELETE FROM main.commands WHERE run_id IN (SELECT run_id FROM {STAGE}."runs")')
        for table in ("bundles", "scorecards", "runs", "commands"):
            conn.execute(_COPY[table])

    def iter_scorecards(self) -> Iterator[ScoreCard]:
        """Stored ScoreCards with their judge_bundle, ordered by run_id."""
        return read_scorecards(self.database)

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _write_group(conn: Any, group: list[BatchRows]) -> None:
    if not group:
        return
    conn.executemany("DELETE FROM commands WHERE run_id = ?", [(r,) for b in group for r in b.run_ids])
    # the largest values first: SQLite copies a bound value twice while inserting it and keeps the
    # last bound copy until the statement is used again
    for table in ("bundles", "scorecards", "runs", "commands"):
        rows = [row for b in group for row in b.tables[table]] if len(group) > 1 else group[0].tables[table]
        if rows:
            conn.executemany(_UPSERT[table], rows)


def _card(run_id: str, card: str, bundle: str | None) -> ScoreCard | str:
    """The stored card as a ScoreCard, or why it is not one (one line)."""
    from evalkit.scoring.scorecard import ScoreCard

    try:
        data = loads(card)
        data["judge_bundle"] = loads(bundle) if bundle is not None else {}
        return ScoreCard.model_validate(data)
    except (ValueError, TypeError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_scorecards(db: Database, *, with_bundle: bool = True, skipped: list[str] | None = None) -> Iterator[ScoreCard]:
    """Stored ScoreCards ordered by run_id. ``with_bundle``: joined with their judge bundle (a
    card whose bundle is missing is skipped); else ``judge_bundle`` is ``{}``. A stored card that
    is not a ScoreCard raises DbError, or with ``skipped`` is left out and one line saying so is
    appended there."""
    if with_bundle:
        sql = (
            "SELECT s.run_id, s.card, b.bundle FROM scorecards s JOIN bundles b ON b.bundle_hash = s.bundle_hash "
            "ORDER BY s.run_id"
        )
    else:
        sql = "SELECT run_id, card, NULL AS bundle FROM scorecards ORDER BY run_id"
    for row in db.rows(sql):
        card = _card(row["run_id"], row["card"], row["bundle"])
        if not isinstance(card, str):
            yield card
        elif skipped is None:
            raise DbError(db.path, f"scorecards row {row['run_id']!r}: stored card is not a ScoreCard ({card})")
        else:
            skipped.append(
                f"scorecards.card: row run_id={row['run_id']!r} is not a ScoreCard ({card}); the run is left out"
            )


@dataclass(frozen=True, slots=True)
class Card:
    """A stored ScoreCard as the audit reads it: a few columns plus the decoded JSON (lenient:
    an unreadable ``card`` reads as ``{}``)."""

    run_id: str
    scenario_id: str
    model: str
    path: str
    status: str
    card: dict[str, Any]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# A key the signal reader names in an SQLite JSON path as it is (`$."key"`); other keys are read
# by decoding the whole card.
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\- ]+")
_CARD_FIELDS = ("path", "scenario_id", "model", "status")


def _part(key: str) -> str:
    """The SQLite JSON path of a top-level key of a card (a :data:`_PLAIN_KEY`)."""
    return f"""'$."{key}"'"""


def _json_text(token: str | None) -> str:
    """A card field cut out as JSON (or NULL) read as :func:`_text` reads it decoded: a string
    token without escapes is the text between its quotes."""
    if token is None:
        return ""
    if token[:1] == '"' and "\\" not in token:
        return token[1:-1]
    return _text(loads(token))


def _field_cut(key: str) -> str:
    """SQL cutting a card field out of an object card; a scenario, model or status only where its
    column is empty (the column wins)."""
    empty = "" if key == "path" else f" AND ({key} IS NULL OR {key} = '')"
    return f", CASE WHEN ok{empty} THEN card -> {_part(key)} END"


def read_cards(
    db: Database,
    problems: list[str] | None = None,
    *,
    judged_only: bool = False,
    runs: list[str] | None = None,
    signals: Iterable[str] | None = None,
) -> Iterator[Card]:
    """``problems``, when given, gets one line per stored card that is not a JSON object (its
    signals then read as missing). ``judged_only`` keeps the runs with an annotation (all that
    judge-mechanical pairs need: ``evalkit view`` reads a large database's disagreements so);
    ``runs``, when given, keeps those runs only. ``signals`` (dotted paths such as
    ``vector.all_passed``), when given, makes each ``card`` hold only those paths: SQLite cuts
    their top-level parts out of the stored JSON and only those are decoded (a card is mostly
    commands), and cards with the same parts share one dict (read them, never change them)."""
    conditions = ["run_id IN (SELECT run_id FROM annotations)"] if judged_only else []
    if runs is not None:
        conditions.append("run_id IN (SELECT value FROM json_each(?))")
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    args = () if runs is None else (json.dumps(list(runs)),)
    if signals is not None:
        yield from _read_card_signals(db, problems, where, args, signals)
        return
    for row in db.rows(f"SELECT run_id, scenario_id, model, status, card FROM scorecards{where} ORDER BY run_id", args):
        card = _card_object(row["run_id"], row["card"], problems)
        yield Card(
            run_id=row["run_id"],
            scenario_id=row["scenario_id"] or _text(card.get("scenario_id")),
            model=row["model"] or _text(card.get("model")),
            path=_text(card.get("path")),
            status=row["status"] or _text(card.get("status")),
            card=card,
        )


def _card_object(run_id: Any, raw: Any, problems: list[str] | None) -> dict[str, Any]:
    """A stored card decoded; ``{}`` (and a line in ``problems``) when it is not a JSON object."""
    try:
        card = loads(raw) if raw else {}
    except ValueError:
        card = None
    if not isinstance(card, dict):
        if problems is not None:
            problems.append(
                f"scorecards.card: row run_id={run_id!r} is not a JSON object; its mechanical signals read as missing"
            )
        card = {}
    return card


def _prune(doc: dict[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """The parts of ``doc`` at ``paths`` (longest first, so a shorter path keeps its whole value)."""
    out: dict[str, Any] = {}
    for path in paths:
        cur: Any = doc
        for key in path:
            if not isinstance(cur, dict) or key not in cur:
                break
            cur = cur[key]
        else:
            node = out
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = cur
    return out


def _read_card_signals(
    db: Database, problems: list[str] | None, where: str, args: tuple, signals: Iterable[str]
) -> Iterator[Card]:
    paths = sorted({tuple(s.split(".")) for s in signals}, key=lambda p: (-len(p), p))
    tops = sorted({p[0] for p in paths})
    plain = all(_PLAIN_KEY.fullmatch(k) for k in tops)
    # an object card gives its top-level parts as JSON text; any other card comes whole, for the
    # same decoding (and the same warning) as a full read. With two or more parts and no signal
    # that is a part itself, the parts come in one JSON array (one call; a missing part reads as
    # null, which prunes to nothing as a missing one does)
    together = plain and len(tops) > 1 and all(len(p) > 1 for p in paths)
    cut = "".join(map(_field_cut, _CARD_FIELDS if plain else ()))
    if together:
        cut += f", CASE WHEN ok THEN json_extract(card, {', '.join(_part(k) for k in tops)}) END"
    elif plain:
        cut += "".join(f", CASE WHEN ok THEN card -> {_part(k)} END" for k in tops)
    # the inner SELECT has a LIMIT so that SQLite runs it as a subroutine rather than merging it
    # into the outer one: `ok` is then worked out once per card, not again for each column that
    # tests it (each time reading the card off its overflow pages)
    sql = (
        f"SELECT run_id, scenario_id, model, status, CASE WHEN ok THEN NULL ELSE card END{cut} FROM "
        "(SELECT run_id, scenario_id, model, status, card, "
        "CASE WHEN json_valid(card) THEN json_type(card) = 'object' ELSE 0 END AS ok "
        f"FROM scorecards{where} ORDER BY run_id LIMIT -1)"
    )
    if not plain:
        sql = f"SELECT run_id, scenario_id, model, status, card FROM scorecards{where} ORDER BY run_id"
    # the subquery's rows come in run-id order (an outer ORDER BY would sort every card's parts
    # again, through temporary files at 10^5 runs); should they not, they are read again sorted
    cards, seen = _signal_cards(db, sql, args, plain, together, paths, tops)
    if plain and any(a.run_id >= b.run_id for a, b in zip(cards, cards[1:])):
        cards, seen = _signal_cards(db, sql + " ORDER BY run_id", args, plain, together, paths, tops)
    if problems is not None:
        problems.extend(seen)
    yield from cards


def _signal_cards(
    db: Database, sql: str, args: tuple, plain: bool, together: bool, paths: list[tuple[str, ...]], tops: list[str]
) -> tuple[list[Card], list[str]]:
    """:func:`_read_card_signals`' cards as ``sql`` reads them, and the problems met."""
    problems: list[str] = []
    out = []
    n = len(_CARD_FIELDS)
    shared: dict[tuple, dict[str, Any]] = {}
    names: dict[Any, Any] = {}  # one object per distinct scenario, model and status
    for columns in db.tuples(sql, args):
        if not plain or columns[4] is not None:  # not an object (or read whole): decoded as a full read does
            card = _card_object(columns[0], columns[4], problems)
            fields = [_text(card.get(k)) for k in _CARD_FIELDS]
            card = _prune(card, paths)
        else:  # NULL reads as {} here as in a full read
            fields = [_json_text(t) if i == 0 or not columns[i] else "" for i, t in enumerate(columns[5 : 5 + n])]
            texts = columns[5 + n :]
            card = shared.get(texts)
            if card is None:
                if together:
                    doc = dict(zip(tops, loads(texts[0]))) if texts[0] is not None else {}
                else:
                    doc = {k: loads(t) for k, t in zip(tops, texts) if t is not None}
                card = shared[texts] = _prune(doc, paths)
        scenario, model, status = columns[1] or fields[1], columns[2] or fields[2], columns[3] or fields[3]
        out.append(
            Card(
                run_id=columns[0],
                scenario_id=names.setdefault(scenario, scenario),
                model=names.setdefault(model, model),
                path=fields[0],
                status=names.setdefault(status, status),
                card=card,
            )
        )
    return out, problems


def read_runs(db: Database) -> dict[str, dict[str, Any]]:
    """run_id → the ``runs`` columns the ScoreCard does not hold (title, provider, time, reason, path)."""
    cols = ("path", "scenario_title", "provider", "ts_utc", "final_reason")
    return {row["run_id"]: {c: row[c] for c in cols} for row in db.rows(f"SELECT run_id, {', '.join(cols)} FROM runs")}


def decode_json(value: Any) -> Any:
    """A JSON-encoded cell, decoded; plain text (or bytes) that is not JSON is taken literally."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return loads(value)
        except ValueError:
            return value
    return value


def read_commands(db: Database, run_ids: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """run_id → its classified commands in order, as the ScoreCard's ``commands`` entries; ``run_ids``
    reads only those runs (each present, with ``[]`` when it has none)."""
    out: dict[str, list[dict[str, Any]]] = {}
    if run_ids is None:
        rows = db.rows("SELECT * FROM commands ORDER BY run_id, idx")
    else:
        out = {rid: [] for rid in run_ids}
        rows = db.rows(
            "SELECT * FROM commands WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, idx",
            (json.dumps(run_ids),),
        )
    for row in rows:
        out.setdefault(row["run_id"], []).append(
            {
                "index": row["idx"],
                "step": row["step"],
                "tool": row["tool"],
                "control": row["control"],
                "value": decode_json(row["value"]),
                "args": decode_json(row["args"]),
                "class": row["class"],
                "subtype": row["subtype"],
                "severity": row["severity"],
            }
        )
    return out
