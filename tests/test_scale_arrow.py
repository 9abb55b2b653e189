"""A worker's batch of Parquet rows travels as one Arrow table (IPC bytes): the parent converts no
value, only slices the tables where a part ends (every FLUSH_ROWS rows, wherever a batch ends),
groups them by scenario and writes. The files are byte for byte those of the rows converted in the
parent, as before, however the rows came."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402
from cli_process_helpers import evalkit_then_print  # noqa: E402
from engine_helpers import make_corpus  # noqa: E402

from evalkit.engines.job import ScoreJob, score_batch  # noqa: E402
from evalkit.engines.worker import score_one  # noqa: E402
from evalkit.output import parquet  # noqa: E402
from evalkit.output.parquet import ArrowRows, ParquetWriter, arrow_rows  # noqa: E402


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    corpus = make_corpus(tmp_path_factory.mktemp("corpus"), n=40)
    files = sorted(str(p) for p in corpus.rglob("*.jsonl"))
    out = [s.parquet for s in (score_one(ScoreJob(parquet_rows=True), f) for f in files) if s.error is None]
    return out + out[:3]  # bundles repeated in a later batch: stored once per part


def files_of(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


def write(root, chunks):
    with ParquetWriter(root) as writer:
        for chunk in chunks:
            writer.add_many(chunk)
    return files_of(root)


def old_way(root, rows, flush):
    """The writer before Arrow batches: every part converted from Python rows, per scenario."""
    schema = parquet._schema()
    (root / "bundles").mkdir(parents=True)
    for part, start in enumerate(range(0, len(rows) or 1, flush)):  # no rows: an empty bundles part
        chunk, name = rows[start : start + flush], f"part-{part:06d}.parquet"
        by_scenario, bundles = {}, {}
        for r in chunk:
            by_scenario.setdefault(r.scenario_id, []).append(r.scorecard)
            bundles.setdefault(r.bundle_hash, r.bundle)
        for scenario_id, got in sorted(by_scenario.items()):
            folder = root / "scorecards" / parquet.partition_name(scenario_id)
            folder.mkdir(parents=True, exist_ok=True)
            values = [*zip(*got), [scenario_id] * len(got)]
            pq.write_table(
                pa.Table.from_arrays([pa.array(v, type=f.type) for v, f in zip(values, schema)], schema=schema),
                folder / name,
            )
        pq.write_table(
            pa.table(
                {"bundle_hash": list(bundles), "bundle": list(bundles.values())},
                schema=pa.schema([("bundle_hash", pa.string()), ("bundle", pa.string())]),
            ),
            root / "bundles" / name,
        )
    return files_of(root)


@pytest.mark.parametrize("flush", [parquet.FLUSH_ROWS, 7, 16])
def test_arrow_batches_write_the_files_python_rows_write(rows, tmp_path, monkeypatch, flush):
    monkeypatch.setattr(parquet, "FLUSH_ROWS", flush)
    reference = old_way(tmp_path / "old", rows, flush)
    assert len(reference) > 2
    assert write(tmp_path / "rows", [rows]) == reference
    batches = [arrow_rows(rows[i : i + 5]) for i in range(0, len(rows), 5)]  # parts end mid-batch
    assert write(tmp_path / "arrow", batches) == reference
    mixed = [rows[:3], arrow_rows(rows[3:12]), rows[12:13], arrow_rows(rows[13:])]
    assert write(tmp_path / "mixed", mixed) == reference


def test_an_empty_dataset_is_written_as_before(tmp_path):
    assert write(tmp_path / "new", []) == old_way(tmp_path / "old", [], parquet.FLUSH_ROWS)


def test_a_batch_of_several_files_ships_arrow_ipc_bytes(tmp_path):
    corpus = make_corpus(tmp_path, n=8)
    files = sorted(str(p) for p in (corpus / "part-0").glob("run-000?.jsonl"))
    job = ScoreJob(parquet_rows=True)
    (batch,) = score_batch(job, files)
    shipped = batch.pieces.parquet
    assert isinstance(shipped, ArrowRows) and isinstance(shipped.ipc, bytes) and shipped.count == 8
    table = shipped.table()
    assert table.num_rows == 8 and table.column_names[-2:] == ["scenario_id_full", "bundle"]
    assert isinstance(score_batch(job, files[:1])[0].pieces.parquet, list)  # one file: rows, as before


def test_the_parent_writing_parquet_for_workers_loads_no_pandas(tmp_path):
    """pa.array on Python values imports pandas (pyarrow's check for a DataFrame): ≈ 0.2 s the
    parent does not spend when the workers built the tables."""
    corpus = make_corpus(tmp_path / "corpus", n=140)
    report = "sorted(m for m in ('pandas', 'pydantic') if m in sys.modules), 'pyarrow' in sys.modules"
    args = ["score", corpus, "--format", "jsonl", "--no-db", "--workers", "2", "--parquet", tmp_path / "pq"]
    done = evalkit_then_print(report, *args)
    assert done.stderr.strip().splitlines()[-1] == "[] True"
    assert len(list((tmp_path / "pq" / "scorecards").glob("*/*.parquet"))) == 2
