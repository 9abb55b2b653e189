"""Every table evalkit keeps in its SQLite file, declared once, and the migrations between versions.

The schema version lives in ``PRAGMA user_version``: version 0 is a brand-new file, version 1 the
layout below. Migrating is additive and idempotent: a missing table is created, a missing column is
added (nullable), missing indexes are created, then the data steps of each newer version in
:data:`STEPS` run and ``user_version`` is set, all in one transaction.

To change the schema: edit :data:`TABLES`, bump :data:`SCHEMA_VERSION`, and add a step to
:data:`STEPS` only when existing rows must change. A file whose version is higher than this evalkit
knows is refused (it might be misread), with a one-line error.

The column types are SQLite's plain ones (TEXT, REAL, INTEGER): sqlite-utils and Datasette open
the file as it is.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SqlTable:
    name: str
    columns: tuple[tuple[str, str], ...]  # (column, declared type with constraints)
    pk: tuple[str, ...]
    indexes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    def ddl(self, temp: bool = False) -> str:
        cols = [f'"{c}" {t}' + (" PRIMARY KEY" if self.pk == (c,) else "") for c, t in self.columns]
        if len(self.pk) > 1:
            cols.append("PRIMARY KEY (" + ", ".join(f'"{c}"' for c in self.pk) + ")")
        return f'CREATE {"TEMP " if temp else ""}TABLE "{self.name}" (\n   ' + ",\n   ".join(cols) + "\n)"


def _cols(spec: str) -> tuple[tuple[str, str], ...]:
    """``"a TEXT, b REAL NOT NULL"`` → (("a", "TEXT"), ("b", "REAL NOT NULL"))."""
    out = []
    for part in spec.split(","):
        name, _, kind = part.strip().partition(" ")
        out.append((name, kind.strip()))
    return tuple(out)


TABLES: dict[str, SqlTable] = {
    t.name: t
    for t in (
        # -- scores (evalkit score): upserted by run_id -------------------------------------------
        SqlTable(
            "runs",
            _cols(
                "run_id TEXT, path TEXT, scenario_id TEXT, scenario_title TEXT, model TEXT, provider TEXT, "
                "ts_utc TEXT, final_reason TEXT, status TEXT, bundle_hash TEXT"
            ),
            ("run_id",),
        ),
        SqlTable(
            "scorecards",
            _cols(
                "run_id TEXT, scenario_id TEXT, model TEXT, status TEXT, scalar REAL, coverage REAL, "
                "order_score REAL, end_state REAL, all_passed INTEGER, safety_dangerous INTEGER, "
                "safety_anti_procedure INTEGER, extraneous INTEGER, bundle_hash TEXT, card TEXT"
            ),
            ("run_id",),
        ),
        # -- what changed (triggers on scorecards and annotations): a reader that keeps an index,
        # such as evalkit view, updates just the runs whose seq is above the last one it saw --------
        SqlTable("run_changes", _cols("seq INTEGER, run_id TEXT NOT NULL UNIQUE"), ("seq",)),
        SqlTable(
            "commands",
            _cols(
                "run_id TEXT, idx INTEGER, step INTEGER, call_index INTEGER, tool TEXT, control TEXT, "
                "value TEXT, args TEXT, class TEXT, subtype TEXT, severity TEXT"
            ),
            ("run_id", "idx"),
        ),
        SqlTable("bundles", _cols("bundle_hash TEXT, bundle TEXT"), ("bundle_hash",)),
        # -- the judge (evalkit judge): the call cache, annotations and their values ----------------
        SqlTable(
            "judge_calls",
            _cols(
                "cache_key TEXT, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT, "
                "rubric_version INTEGER, rubric_hash TEXT, params TEXT, request TEXT, raw_response TEXT, "
                "status TEXT NOT NULL, error TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                "cost_usd REAL, latency_ms REAL, attempts INTEGER, started_at TEXT, finished_at TEXT, "
                "output_mode TEXT, elided_events INTEGER, cached_tokens INTEGER, prompt_layout TEXT, batch_id TEXT"
            ),
            ("cache_key",),
            (("idx_judge_calls_model", ("judge_model", "rubric_id")),),
        ),
        SqlTable(
            "annotations",
            _cols(
                "annotation_id TEXT, run_id TEXT, bundle_hash TEXT, judge_model TEXT, rubric_id TEXT, "
                "rubric_version INTEGER, rubric_hash TEXT, blind INTEGER, replicate INTEGER, status TEXT NOT NULL, "
                "annotation TEXT, rationale TEXT, cost_usd REAL, latency_ms REAL, prompt_tokens INTEGER, "
                "completion_tokens INTEGER, cache_key TEXT, created_at TEXT, output_mode TEXT, elided_events INTEGER, "
                "cached_tokens INTEGER, prompt_layout TEXT, batch_id TEXT"
            ),
            ("annotation_id",),
            (("idx_annotations_run", ("run_id", "judge_model", "rubric_id")),),
        ),
        SqlTable(
            "annotation_values",
            _cols(
                "annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT, dimension TEXT, value TEXT, "
                "confidence REAL, blind INTEGER, replicate INTEGER"
            ),
            ("annotation_id", "dimension"),
        ),
        # the output mode that last worked per (judge model, api base; '' = the provider's own API)
        SqlTable(
            "judge_output_modes",
            _cols("judge_model TEXT NOT NULL, api_base TEXT NOT NULL, output_mode TEXT NOT NULL, updated_at TEXT"),
            ("judge_model", "api_base"),
        ),
        # provider batches (evalkit judge --batch), stored as soon as they exist so that a killed process
        # polls them again instead of paying twice (evalkit/db/batches.py); one row per submission,
        # `batch_id` NULL until the provider named it
        SqlTable(
            "judge_batches",
            _cols(
                "submission_id TEXT, batch_id TEXT, judge_model TEXT NOT NULL, api_base TEXT, rubric_id TEXT, "
                "rubric_version INTEGER, rubric_hash TEXT, input_file_id TEXT, output_file_id TEXT, "
                "error_file_id TEXT, "
                "status TEXT NOT NULL, requests INTEGER, created_at TEXT, updated_at TEXT, error TEXT"
            ),
            ("submission_id",),
            (("idx_judge_batches_model", ("judge_model", "rubric_id")),),
        ),
        SqlTable(
            "judge_batch_items",
            _cols(
                "submission_id TEXT NOT NULL, custom_id TEXT NOT NULL, run_id TEXT, bundle_hash TEXT, "
                "annotation_id TEXT, "
                "replicate_tag TEXT, blind INTEGER, output_mode TEXT, request TEXT, elided_events INTEGER"
            ),
            ("submission_id", "custom_id"),
            (("idx_judge_batch_items_custom", ("custom_id",)),),
        ),
        # -- judge robustness probes (evalkit probe): answers to counterfactual bundles, kept apart from
        # `annotations` so that no pairing, rater or Alt-Test can ever read them (evalkit/db/probes.py)
        SqlTable(
            "probe_annotations",
            _cols(
                "annotation_id TEXT, probe TEXT NOT NULL, run_id TEXT NOT NULL, bundle_hash TEXT, judge_model TEXT, "
                "rubric_id TEXT, rubric_version INTEGER, rubric_hash TEXT, blind INTEGER, status TEXT NOT NULL, "
                "annotation TEXT, rationale TEXT, cost_usd REAL, latency_ms REAL, prompt_tokens INTEGER, "
                "completion_tokens INTEGER, cache_key TEXT, created_at TEXT, output_mode TEXT, elided_events INTEGER, "
                "cached_tokens INTEGER, prompt_layout TEXT, batch_id TEXT"
            ),
            ("annotation_id",),
            (("idx_probe_annotations_probe", ("probe", "judge_model", "rubric_id")),),
        ),
        # -- imported ratings (evalkit annotations import) ------------------------------------------
        SqlTable(
            "ratings",
            _cols(
                "item_id TEXT NOT NULL, rater TEXT NOT NULL, rater_kind TEXT NOT NULL, dimension TEXT NOT NULL, "
                "value TEXT NOT NULL, confidence REAL, source TEXT"
            ),
            ("item_id", "rater", "dimension"),
        ),
        # -- pairwise verdicts (evalkit judge --pairwise, annotations import of pair rows): one verdict
        # per pair, rater, dimension and order shown ('ab', 'ba'; '' for a human or gold verdict);
        # `verdict` a | b | tie in the pair's own frame, NULL when the judge gave none (evalkit/db/pairwise.py)
        SqlTable(
            "pairwise_verdicts",
            _cols(
                "pair_id TEXT NOT NULL, a TEXT NOT NULL, b TEXT NOT NULL, shown TEXT NOT NULL, rater TEXT NOT NULL, "
                "rater_kind TEXT NOT NULL, dimension TEXT NOT NULL, verdict TEXT, a_length INTEGER, "
                "b_length INTEGER, rationale TEXT, cache_key TEXT, source TEXT"
            ),
            ("pair_id", "rater", "dimension", "shown"),
        ),
        # -- human reviews (evalkit view): append-only, an edit supersedes (evalkit/db/reviews.py) ---
        SqlTable(
            "reviews",
            _cols(
                "review_id TEXT, run_id TEXT NOT NULL, reviewer TEXT NOT NULL, rubric_id TEXT, blind INTEGER, "
                "note TEXT, "
                "created_at TEXT NOT NULL, revision INTEGER NOT NULL, supersedes TEXT, bundle_hash TEXT, "
                # how the run was chosen: random | stratified (a label sample's, sample_id) |
                # disagreement | by_hand (also NULL); evalkit estimate uses only what its method allows
                "design TEXT, sample_id TEXT"
            ),
            ("review_id",),
            (("idx_reviews_run", ("run_id", "reviewer")),),
        ),
        SqlTable(
            "review_ratings",
            _cols(
                "review_id TEXT NOT NULL, run_id TEXT NOT NULL, reviewer TEXT NOT NULL, dimension TEXT NOT NULL, "
                "value TEXT NOT NULL, blind INTEGER"
            ),
            ("review_id", "dimension"),
        ),
        # a reviewer's hold on a run for a while, so two reviewers of a queue do not take the same one
        SqlTable(
            "review_claims",
            _cols("run_id TEXT, reviewer TEXT NOT NULL, claimed_at TEXT, expires_at TEXT NOT NULL"),
            ("run_id",),
        ),
        # label samples (the view's label-next queue): a seeded random order of the runs in scope,
        # served in that order; `stratified` fills quotas m0/m1 of a dimension's human classes
        SqlTable(
            "label_samples",
            _cols(
                "sample_id TEXT, design TEXT NOT NULL, seed INTEGER NOT NULL, size INTEGER, stratified_on TEXT, "
                "m0 INTEGER, m1 INTEGER, model TEXT, scenario TEXT, runs INTEGER, created_at TEXT, created_by TEXT, "
                "second_share REAL"
            ),
            ("sample_id",),
        ),
        SqlTable(
            "label_sample_runs",
            _cols("sample_id TEXT NOT NULL, position INTEGER NOT NULL, run_id TEXT NOT NULL"),
            ("sample_id", "position"),
            (("idx_label_sample_runs_run", ("run_id", "sample_id")),),
        ),
        SqlTable(
            "adjudications",
            _cols(
                "review_id TEXT NOT NULL, run_id TEXT NOT NULL, reviewer TEXT NOT NULL, pairing TEXT NOT NULL, "
                "verdict TEXT NOT NULL, blind INTEGER, created_at TEXT"
            ),
            ("review_id", "pairing"),
        ),
    )
}

# Data steps per target version (run after the tables and columns of that version exist). Version 1:
# the review tables are append-only (triggers refuse changing or deleting a review), and triggers
# keep run_changes, the order in which runs last changed (a re-judge rewrites rows in place, so
# counts and rowids do not show a change; `evalkit view` pages by it).
STEPS: dict[int, tuple[str, ...]] = {
    1: (
        *(
            f"CREATE TRIGGER IF NOT EXISTS {table}_append_only_{op.lower()} BEFORE {op} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} are append-only: a new review supersedes an old one'); END"
            for table in ("reviews", "review_ratings", "adjudications")
            for op in ("UPDATE", "DELETE")
        ),
        *(
            f"CREATE TRIGGER IF NOT EXISTS run_changes_{table}_{op.lower()} AFTER {op} ON {table} BEGIN "
            # a run seen before moves above every other seq; a new one gets the next (never a reused) seq
            f"UPDATE run_changes SET seq = (SELECT max(seq) + 1 FROM run_changes) WHERE run_id = {row}.run_id; "
            f"INSERT INTO run_changes (seq, run_id) SELECT coalesce((SELECT max(seq) FROM run_changes), 0) + 1, "
            f"{row}.run_id WHERE {row}.run_id IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM run_changes WHERE run_id = {row}.run_id); END"
            for table in ("scorecards", "annotations")
            for op, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
        ),
    ),
}


class SchemaProblem(Exception):
    """The file's schema is not one this evalkit can use; ``str()`` says why (no path)."""


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _present(conn: sqlite3.Connection, schema: str = "main") -> dict[str, dict[str, tuple]]:
    """{table: {column: table_info row}} for the evalkit tables present in ``schema``."""
    names = {r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")}
    return {
        name: {r[1]: tuple(r) for r in conn.execute(f'PRAGMA {schema}.table_info("{name}")')}
        for name in TABLES
        if name in names
    }


def check(conn: sqlite3.Connection) -> dict[str, dict[str, tuple]]:
    """Refuse what this evalkit cannot use; return the evalkit tables present.

    Refused: a version newer than :data:`SCHEMA_VERSION`; a table of ours with a required
    (NOT NULL, no default) column we do not know, because every insert would fail; a table of
    ours that is a view or lacks a primary-key column (a different program's table).
    """
    version = user_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaProblem(
            f"made by a newer evalkit (schema version {version}; this evalkit knows "
            f"up to {SCHEMA_VERSION}): upgrade evalkit to use it"
        )
    present = _present(conn)
    for name, cols in present.items():
        table = TABLES[name]
        for col, info in cols.items():
            notnull, default = info[3], info[4]
            if col not in table.column_names and notnull and default is None:
                raise SchemaProblem(
                    f"table {name} has a required column {col!r} that evalkit does not "
                    "write (not a database this evalkit made)"
                )
        missing_pk = [c for c in table.pk if c not in cols]
        if missing_pk:
            raise SchemaProblem(f"table {name} has no column {missing_pk[0]!r} (not a database this evalkit made)")
    return present


def needs_migration(conn: sqlite3.Connection, present: dict[str, dict[str, tuple]]) -> bool:
    if user_version(conn) != SCHEMA_VERSION:
        return True
    return any(name not in present or set(t.column_names) - set(present[name]) for name, t in TABLES.items())


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the file to :data:`SCHEMA_VERSION`. The caller holds a write transaction."""
    present = check(conn)
    start = user_version(conn)
    for name, table in TABLES.items():
        if name not in present:
            conn.execute(table.ddl())
        else:
            for col, kind in table.columns:
                if col not in present[name]:
                    conn.execute(f'ALTER TABLE "{name}" ADD COLUMN "{col}" {kind.replace("NOT NULL", "").strip()}')
        for index, cols in table.indexes:
            conn.execute(
                f'CREATE INDEX IF NOT EXISTS "{index}" ON "{name}" (' + ", ".join(f'"{c}"' for c in cols) + ")"
            )
    for version in range(start + 1, SCHEMA_VERSION + 1):
        for sql in STEPS.get(version, ()):
            conn.execute(sql)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
