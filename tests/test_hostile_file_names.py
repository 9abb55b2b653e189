"""A file whose name is not valid UTF-8 (Linux allows any bytes but / and NUL; Python hands them
over as lone surrogates) is scored like any other: every output, the database and the Parquet
files show its bad bytes as ``\\xNN``, the same whatever the number of workers, and its warnings
and errors name it the same way. Before, the card could not be encoded and the run ended in a
traceback."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evalkit.trajectory.builders import a320_scenario, trajectory, write_jsonl
from evalkit.trajectory.input_files import shown_name

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="file names of any bytes: Linux")]

ROOT = Path(__file__).resolve().parents[1]


def evalkit(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "evalkit", *map(str, args)], env=env, capture_output=True, timeout=120)


N = 80  # more than one process scores alone, so --workers 2 is a pool


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for i in range(N):
        write_jsonl(root / f"run-{i:04d}.jsonl", trajectory(a320_scenario(), [], run_id=f"run-{i:04d}"))
    raw = os.fsencode(root)
    os.rename(raw + b"/run-0001.jsonl", raw + b"/bad\xff.jsonl")
    os.rename(raw + b"/run-0002.jsonl", raw + b"/\xe9t\xe9.jsonl")  # Latin-1 "été"
    with open(raw + b"/broken\xfe.jsonl", "wb") as fh:
        fh.write(b'{"broken\n')
    return root


def test_shown_name_writes_the_bad_bytes_as_escapes():
    assert shown_name("plain/ü.jsonl") == "plain/ü.jsonl"
    assert shown_name(os.fsdecode(b"a/bad\xff.jsonl")) == "a/bad\\xff.jsonl"
    assert shown_name("lone \ud800 surrogate") == "lone \\ud800 surrogate"


def test_a_file_name_that_is_not_utf8_is_scored_in_every_format(corpus, tmp_path):
    outs = {}
    for fmt in ("jsonl", "json", "csv", "table"):
        for workers in (1, 2):
            done = evalkit("score", corpus, "--format", fmt, "--no-db", "--workers", workers)
            assert done.returncode == 1, done.stderr  # the broken file only
            assert b"Traceback" not in done.stderr
            outs[fmt, workers] = done.stdout
        assert outs[fmt, 1] == outs[fmt, 2]
    paths = [json.loads(line)["path"] for line in outs["jsonl", 1].splitlines()]
    assert f"{corpus}/bad\\xff.jsonl" in paths and f"{corpus}/\\xe9t\\xe9.jsonl" in paths
    assert len(paths) == N


def test_its_error_names_it_with_the_same_escapes(corpus):
    done = evalkit("score", corpus, "--format", "jsonl", "--no-db")
    assert f"{corpus}/broken\\xfe.jsonl:1: not valid JSON".encode() in done.stderr


def test_the_database_and_parquet_store_the_shown_name(corpus, tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    done = evalkit("score", corpus, "--db", tmp_path / "e.db", "--parquet", tmp_path / "pq", "--workers", "2")
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    with sqlite3.connect(tmp_path / "e.db") as conn:
        stored = {path for (path,) in conn.execute("SELECT path FROM runs")}
    assert f"{corpus}/bad\\xff.jsonl" in stored and len(stored) == N
    table = pq.read_table(tmp_path / "pq" / "scorecards")
    assert f"{corpus}/bad\\xff.jsonl" in set(table.column("path").to_pylist())


def test_an_import_from_a_file_name_that_is_not_utf8_writes_valid_utf8(tmp_path):
    """The run records its source file's name: written with the same escapes, valid UTF-8 and
    valid JSON, and the run is then scored."""
    from evalkit.importers import import_files

    fixture = ROOT / "tests" / "fixtures" / "openai_messages" / "transcripts.jsonl"
    src = os.fsencode(tmp_path) + b"/tr\xff.jsonl"
    with open(src, "wb") as fh:
        fh.write(fixture.read_bytes())
    result = import_files("openai-messages", [os.fsdecode(src)], tmp_path / "out", model="m")
    assert not result.errors and result.runs == 3
    for path in (tmp_path / "out").glob("*.jsonl"):
        text = path.read_bytes().decode("utf-8")  # strict
        assert "tr\\\\xff.jsonl" in text
        assert all(json.loads(line) for line in text.splitlines())
    done = evalkit("score", tmp_path / "out", "--format", "jsonl", "--no-db")
    assert done.returncode == 0 and done.stdout.count(b"\n") == 3


def test_json_text_with_a_lone_surrogate_is_encoded_as_escaped_text():
    from evalkit.importers.writer import encode_json_text

    text = json.dumps({"source": os.fsdecode(b"a\xff"), "odd": "\ud800"}, ensure_ascii=False)
    assert json.loads(encode_json_text(text).decode("utf-8")) == {"source": "a\\xff", "odd": "\\ud800"}
    assert encode_json_text('{"k":"ü"}') == '{"k":"ü"}'.encode()


def test_a_run_with_such_a_name_finds_the_scenario_file_beside_it(tmp_path):
    """The run names its scenario (meta.scenario_id) and scenarios.json sits beside it: the reader
    looks it up by the file's real name, and shows the escaped one."""
    scenario = a320_scenario()
    (tmp_path / "scenarios.json").write_text(json.dumps([scenario]), encoding="utf-8")
    records = trajectory(scenario, [], run_id="named")
    records[0] = {k: v for k, v in records[0].items() if k != "scenario"} | {"scenario_id": scenario["id"]}
    raw = os.fsencode(tmp_path) + b"/r\xe9sum\xe9.jsonl"
    write_jsonl(os.fsdecode(raw), records)
    done = evalkit("score", tmp_path, "--format", "jsonl", "--no-db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == f"{tmp_path}/r\\xe9sum\\xe9.jsonl"
