"""Parquet output (`score --parquet`, `export parquet`): read back by DuckDB and pyarrow, the
aggregates equal `--aggregate`'s, the export equals the direct output, bundles hash to their key."""

from __future__ import annotations

import hashlib
import json

import duckdb
import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner
from engine_helpers import make_corpus

from evalkit.cli import cli


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("pq")
    corpus = make_corpus(root / "corpus", n=50)
    runner = CliRunner()
    direct = runner.invoke(
        cli,
        [
            "score",
            str(corpus),
            "--db",
            str(root / "s.db"),
            "--parquet",
            str(root / "direct"),
            "--format",
            "json",
            "--aggregate",
            "--workers",
            "2",
        ],
    )
    assert direct.exit_code == 1, direct.stderr  # the corpus's bad file
    exported = runner.invoke(cli, ["export", "parquet", "--db", str(root / "s.db"), str(root / "exported")])
    assert exported.exit_code == 0, exported.stderr
    return root, json.loads(direct.stdout)


def scorecards(directory):
    return f"read_parquet('{directory}/scorecards/**/*.parquet', hive_partitioning = true)"


GROUP_SQL = """
SELECT scenario_id, model, count(*) AS n,
       count(*) FILTER (status = 'scored') AS n_scored,
       avg(scalar) FILTER (status = 'scored') AS score_mean,
       stddev_samp(scalar) FILTER (status = 'scored') AS score_std,
       median(scalar) FILTER (status = 'scored') AS score_median,
       avg(coverage) FILTER (status = 'scored') AS coverage_mean,
       avg(order_score) FILTER (status = 'scored') AS order_mean,
       avg(end_state) FILTER (status = 'scored') AS end_state_mean,
       avg(CASE WHEN all_passed THEN 1.0 ELSE 0.0 END) FILTER (status = 'scored') AS pass_rate,
       avg(CASE WHEN safety_dangerous > 0 THEN 1.0 ELSE 0.0 END) FILTER (status = 'scored') AS dangerous_rate,
       avg(CASE WHEN status = 'provider_error' THEN 1.0 ELSE 0.0 END) AS provider_error_rate,
       avg(CASE WHEN status = 'invalid_scenario' THEN 1.0 ELSE 0.0 END) AS invalid_rate,
       avg(CASE WHEN status = 'incomplete' THEN 1.0 ELSE 0.0 END) AS incomplete_rate
FROM {source} GROUP BY ALL ORDER BY scenario_id, model
"""


def test_duckdb_aggregates_equal_evalkit_aggregate(written):
    root, result = written
    con = duckdb.connect()
    # the export from the database: one row per run_id (the later card), as in evalkit's aggregates;
    # the direct output keeps both rows of the run_id read twice
    cur = con.execute(GROUP_SQL.format(source=scorecards(root / "exported")))
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    expected = [{k: g[k] for k in names} for g in result["groups"]]
    assert len(rows) == len(expected) == 7  # two scenarios × three models, plus model-a (the half-written run)
    for got, want in zip(rows, expected):
        assert (got.pop("scenario_id"), got.pop("model")) == (want.pop("scenario_id"), want.pop("model"))
        nulls = {k for k, v in want.items() if v is None}
        assert {k for k, v in got.items() if v is None} == nulls
        assert {k: v for k, v in got.items() if k not in nulls} == pytest.approx(
            {k: v for k, v in want.items() if k not in nulls}, rel=1e-12, abs=1e-15
        )


def test_scenario_ids_that_need_escaping_come_back_intact(written):
    root, _ = written
    ids = (
        duckdb.connect()
        .execute(f"SELECT DISTINCT scenario_id FROM {scorecards(root / 'direct')} ORDER BY 1")
        .fetchall()
    )
    assert [i[0] for i in ids] == ["elec-apu-gen-fault", "elec/odd id %2F ü"]
    table = ds.dataset(root / "direct" / "scorecards", format="parquet", partitioning="hive").to_table()
    assert sorted(set(table.column("scenario_id").to_pylist())) == ["elec-apu-gen-fault", "elec/odd id %2F ü"]


def test_export_from_the_database_equals_the_direct_output(written):
    root, _ = written
    con = duckdb.connect()
    query = "SELECT * FROM {} ORDER BY run_id"
    direct = con.execute(query.format(scorecards(root / "direct"))).fetchall()
    exported = con.execute(query.format(scorecards(root / "exported"))).fetchall()
    # 52 good files, one run_id read twice (the later card wins in the database, both rows in the direct output)
    assert len(direct) == 52 and len(exported) == 51
    assert set(exported) <= set(direct)


def test_bundles_table_is_keyed_by_the_bundle_hash(written):
    root, _ = written
    con = duckdb.connect()
    bundles = con.execute(f"SELECT bundle_hash, bundle FROM read_parquet('{root}/direct/bundles/*.parquet')").fetchall()
    assert bundles and all(hashlib.sha256(b.encode()).hexdigest() == h for h, b in bundles)
    missing = con.execute(f"""SELECT count(*) FROM {scorecards(root / "direct")} s
        WHERE s.bundle_hash NOT IN (SELECT bundle_hash FROM read_parquet('{root}/direct/bundles/*.parquet'))""").fetchone()
    assert missing == (0,)


def test_the_card_column_is_the_whole_scorecard(written):
    root, _ = written
    card, coverage = (
        duckdb.connect()
        .execute(f"SELECT card, coverage FROM {scorecards(root / 'direct')} WHERE run_id = 'run-0002'")
        .fetchone()
    )
    assert json.loads(card)["vector"]["coverage"] == coverage


def test_parquet_into_a_non_empty_directory_is_a_usage_error(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    corpus = make_corpus(tmp_path / "c", n=3)
    result = CliRunner().invoke(cli, ["score", str(corpus), "--no-db", "--parquet", str(tmp_path)])
    assert result.exit_code == 2 and "not empty" in result.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"
    result = CliRunner().invoke(cli, ["export", "parquet", "--db", str(tmp_path / "none.db"), str(tmp_path / "new")])
    assert result.exit_code == 2 and "none.db: no such database" in result.stderr  # a missing file is a usage error


POOLS = """
import sys
import pyarrow as pa
import pyarrow.parquet as pq
from evalkit.engines.job import ScoreJob, score_batch
from evalkit.output.parquet import ParquetWriter

(batch,) = score_batch(ScoreJob(parquet_rows=True), sys.argv[2:])
seen = []
real = pq.write_table

def write_table(table, where, **kw):  # what the tables about to be written are held in
    seen.append((table.nbytes, pa.system_memory_pool().bytes_allocated(), pa.default_memory_pool().bytes_allocated()))
    return real(table, where, **kw)

pq.write_table = write_table
writer = ParquetWriter(sys.argv[1])
writer.add_many(batch.pieces.parquet)
writer.close()
print(pa.default_memory_pool().backend_name, seen)
"""


def test_arrow_tables_are_made_in_the_c_librarys_allocator_not_in_huge_pages(tmp_path):
    """Arrow's default pool (mimalloc) takes fresh memory in transparent huge pages that the kernel
    zeroes 2 MiB at a time: a take over 3,000 runs then cost 7 ms or 0.8 s at random. A batch's
    rows, made in a worker, read back, grouped by scenario and taken by position in the parent,
    are in the system pool; the default one holds nothing of them."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    files = sorted(str(p) for p in make_corpus(tmp_path / "runs", n=40).rglob("*.jsonl"))
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", POOLS, str(tmp_path / "out"), *files],
        capture_output=True,
        text=True,
        cwd=root,
        check=True,
    )
    backend, seen = done.stdout.split(" ", 1)
    seen = ast.literal_eval(seen)
    assert backend != "system" and len(seen) == 3  # two scenarios' scorecards and the bundles
    for table_bytes, system, default in seen:
        assert system >= table_bytes > 0 and default == 0, seen
