"""`--engine ray`: a local Ray cluster on 127.0.0.1 (2 CPUs, started once for this module) gives
the same bytes as the local engine: output, warnings, errors, database rows, Parquet rows."""

from __future__ import annotations

import sqlite3

import pytest
import ray  # noqa: F401  (without ray this module fails to collect, as it did)
from click.testing import CliRunner
from engine_helpers import ray_fixtures

from evalkit.cli import cli
from evalkit.engines.pipeline import score_files
from evalkit.errors import InputError

pytestmark = pytest.mark.slow

cluster, corpus = ray_fixtures(n=40)


def outcome(corpus, **options):
    warnings = []
    scoring = score_files([corpus], output="jsonl", aggregate="full", warn=warnings.append, **options)
    items = list(scoring)
    text = "".join(i.data for i in items if not isinstance(i, InputError))
    errors = [str(i) for i in items if isinstance(i, InputError)]
    return text, errors, warnings, scoring.aggregate, scoring.scored


def test_ray_tasks_give_what_the_local_engine_gives(cluster, corpus):
    local = outcome(corpus, workers=1)
    remote = outcome(corpus, engine="ray")
    assert local[4] + len(local[1]) == 43 and local[1] and remote == local


def cli_score(args, monkeypatch=None):
    result = CliRunner().invoke(cli, ["score", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_engine_ray_is_byte_identical_to_local(cluster, corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(corpus.parent)  # relative paths: the tasks resolve them in the driver's directory
    name = corpus.name
    local = cli_score([name, "--format", "jsonl", "--db", str(tmp_path / "l.db"), "--workers", "1"])
    remote = cli_score([name, "--format", "jsonl", "--db", str(tmp_path / "r.db"), "--engine", "ray"])
    assert local == remote and local[0] == 1 and local[1].count("\n") == 42
    dump = lambda p: [
        sqlite3.connect(p).execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()  # noqa: E731
        for t in ("runs", "scorecards", "commands", "bundles")
    ]
    assert dump(tmp_path / "l.db") == dump(tmp_path / "r.db")


def test_file_urls_through_fsspec_on_both_engines(cluster, corpus):
    url = corpus.as_uri()  # file:///...
    local = cli_score([url, "--format", "csv", "--no-db"])
    remote = cli_score([url, "--format", "csv", "--no-db", "--engine", "ray"])
    assert local == remote and local[1].count("\n") == 43  # header + 42 runs
    assert f"{url}/part-1/run-0030a-bad.jsonl:4" in local[2]
    # the same runs as the plain paths, named by their URL
    plain = cli_score([str(corpus), "--format", "csv", "--no-db"])
    assert plain[1] == local[1]  # csv rows carry no path


def test_missing_url_is_a_usage_error(corpus):
    code, _, err = cli_score([corpus.as_uri() + "/nothing-here", "--no-db"])
    assert code == 2 and "no such file or directory" in err
