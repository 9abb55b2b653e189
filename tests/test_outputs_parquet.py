"""Parquet partition names that fit any file system: a long scenario id (a valid 60-character
non-ASCII one made "File name too long") gets a readable prefix and a hash, the full id stays a
column, and a failed write leaves no partial dataset."""

from __future__ import annotations

import duckdb
import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.output.parquet import PARTITION_NAME_BYTES, partition_name
from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl

LONG = "Ωμέγα-" + "ü" * 54  # 60 characters; its percent-encoded partition name was 367 bytes
SHORT = "elec-apu-gen-fault"
# the same first 60 characters: they differ only far past any cut
TWIN_A, TWIN_B = "ä" * 60 + "-a", "ä" * 60 + "-b"


def _runs(root, ids):
    root.mkdir(parents=True, exist_ok=True)
    for i, scenario_id in enumerate(ids):
        write_jsonl(
            root / f"run-{i}.jsonl",
            trajectory(a320_scenario(id=scenario_id), [read(), cmd("ext_pwr", 1)], run_id=f"run-{i}", model="m"),
        )
    return root


def _score(runs, out, *extra):
    return CliRunner().invoke(cli, ["score", str(runs), "--parquet", str(out), "--format", "csv", *extra])


def _partitions(out):
    return sorted(p.name for p in (out / "scorecards").iterdir())


def test_short_ids_keep_todays_partition_names():
    assert partition_name(SHORT) == "scenario_id=elec-apu-gen-fault"
    assert partition_name("elec/odd id %2F ü") == "scenario_id=elec%2Fodd%20id%20%252F%20%C3%BC"


def test_a_long_non_ascii_id_gets_a_short_partition_name_and_the_other_scenario_is_written_too(tmp_path):
    runs = _runs(tmp_path / "runs", [LONG, SHORT])
    res = _score(runs, tmp_path / "pq", "--no-db")
    assert res.exit_code == 0, res.stderr
    names = _partitions(tmp_path / "pq")
    assert len(names) == 2 and "scenario_id=elec-apu-gen-fault" in names
    long_name = next(n for n in names if n != "scenario_id=elec-apu-gen-fault")
    assert len(long_name.encode()) <= PARTITION_NAME_BYTES
    assert long_name.startswith("scenario_id=%CE%A9%CE%BC")  # readable: it decodes to the id's start
    assert long_name == partition_name(LONG)


def test_ids_differing_only_after_the_cut_get_separate_partitions():
    a, b = partition_name(TWIN_A), partition_name(TWIN_B)
    assert a != b and a.split("~")[0] == b.split("~")[0]
    assert max(len(a), len(b)) <= PARTITION_NAME_BYTES


def test_ids_differing_only_in_case_get_separate_partitions_on_any_file_system(tmp_path):
    # on a case-insensitive file system (macOS, Windows) two such folders are one
    runs = _runs(tmp_path / "runs", ["Elec", "elec"])
    assert _score(runs, tmp_path / "pq", "--no-db").exit_code == 0
    names = _partitions(tmp_path / "pq")
    assert len({n.casefold() for n in names}) == 2
    assert "scenario_id=Elec" in names  # the first keeps its name


def test_long_ids_round_trip_through_pyarrow_and_duckdb(tmp_path):
    runs = _runs(tmp_path / "runs", [LONG, SHORT, TWIN_A, TWIN_B])
    assert _score(runs, tmp_path / "pq", "--no-db").exit_code == 0
    want = sorted([LONG, SHORT, TWIN_A, TWIN_B])
    source = f"read_parquet('{tmp_path}/pq/scorecards/**/*.parquet', hive_partitioning = true)"
    rows = duckdb.connect().execute(f"SELECT run_id, scenario_id_full, scenario_id FROM {source} ORDER BY 1").fetchall()
    assert sorted(r[1] for r in rows) == want
    assert [r[2] for r in rows if r[1] == SHORT] == [SHORT]  # the hive column is the id itself when it fits
    table = ds.dataset(tmp_path / "pq" / "scorecards", format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("scenario_id_full").to_pylist()) == want
    assert len(set(table.column("scenario_id").to_pylist())) == 4  # still one value per scenario


def test_export_writes_the_same_partitions_as_score(tmp_path):
    runs = _runs(tmp_path / "runs", [LONG, SHORT])
    assert _score(runs, tmp_path / "direct", "--db", str(tmp_path / "s.db")).exit_code == 0
    res = CliRunner().invoke(cli, ["export", "parquet", "--db", str(tmp_path / "s.db"), str(tmp_path / "exported")])
    assert res.exit_code == 0, res.stderr
    assert _partitions(tmp_path / "exported") == _partitions(tmp_path / "direct")


def _fail_on_second_scorecard_file(monkeypatch):
    import pyarrow.parquet as pq

    real = pq.write_table
    calls = []

    def flaky(table, where, *args, **kwargs):
        calls.append(where)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(table, where, *args, **kwargs)

    monkeypatch.setattr(pq, "write_table", flaky)


def test_a_failed_score_parquet_write_leaves_no_partial_dataset(tmp_path, monkeypatch):
    runs = _runs(tmp_path / "runs", [LONG, SHORT])
    _fail_on_second_scorecard_file(monkeypatch)
    res = _score(runs, tmp_path / "pq", "--no-db")
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines()[-1] == f"error: {tmp_path / 'pq'}: cannot write: No space left on device"
    assert not (tmp_path / "pq").exists()  # made by the command, removed with what was in it


def test_a_failed_export_into_an_empty_directory_leaves_it_empty(tmp_path, monkeypatch):
    runs = _runs(tmp_path / "runs", [LONG, SHORT])
    assert (
        CliRunner().invoke(cli, ["score", str(runs), "--db", str(tmp_path / "s.db"), "--format", "csv"]).exit_code == 0
    )
    (tmp_path / "empty").mkdir()
    _fail_on_second_scorecard_file(monkeypatch)
    res = CliRunner().invoke(cli, ["export", "parquet", "--db", str(tmp_path / "s.db"), str(tmp_path / "empty")])
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "cannot write" in res.stderr
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize("where", ["db", "wal"])
def test_export_api_refuses_the_database_as_its_directory(tmp_path, where):
    from evalkit.output.parquet import export_database
    from evalkit.output.paths import OutputClash

    db = tmp_path / "s.db"
    db.write_bytes(b"")
    with pytest.raises(OutputClash, match="would overwrite the database"):
        export_database(db, db if where == "db" else f"{db}-wal")
