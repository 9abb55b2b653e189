"""`--engine ray` ships the same finished pieces as the local pool: every format, the aggregates, the
database and the Parquet files are byte for byte those of one local process (a local Ray instance of
2 CPUs on 127.0.0.1, started once for this module)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray")

from click.testing import CliRunner  # noqa: E402
from engine_helpers import ray_fixtures  # noqa: E402
from test_scale_identical import dump  # noqa: E402

from evalkit.cli import cli  # noqa: E402

cluster, corpus = ray_fixtures(n=140)


def cli_score(*args):
    result = CliRunner().invoke(cli, ["score", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [("--format", f) for f in ("table", "json", "jsonl", "csv", "markdown")] + [("--format", "json", "--aggregate")],
)
def test_ray_writes_the_bytes_the_local_engine_writes(cluster, corpus, args, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    local = cli_score(corpus, *args, "--no-db", "--workers", "1")
    remote = cli_score(corpus, *args, "--no-db", "--engine", "ray")
    assert local == remote and local[0] == 1 and "already read from" in local[2]


def test_ray_stores_the_rows_and_parquet_files_the_local_engine_stores(cluster, corpus, tmp_path):
    pytest.importorskip("pyarrow")
    local = cli_score(corpus, "--db", tmp_path / "l.db", "--parquet", tmp_path / "l", "--workers", "1")
    remote = cli_score(corpus, "--db", tmp_path / "r.db", "--parquet", tmp_path / "r", "--engine", "ray")
    assert local == remote and dump(tmp_path / "l.db") == dump(tmp_path / "r.db")
    files = sorted(p.relative_to(tmp_path / "l") for p in (tmp_path / "l").rglob("*.parquet"))
    assert files and files == sorted(p.relative_to(tmp_path / "r") for p in (tmp_path / "r").rglob("*.parquet"))
    assert all((tmp_path / "l" / f).read_bytes() == (tmp_path / "r" / f).read_bytes() for f in files)


def test_ray_tasks_on_the_drivers_node_leave_their_bytes_in_the_spool(cluster, corpus, tmp_path, monkeypatch):
    import tempfile

    from evalkit.engines import spool

    taken = []
    original = spool.Spooled._open
    monkeypatch.setattr(spool.Spooled, "_open", lambda self: taken.append(self.size) or original(self))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    local = cli_score(corpus, "--format", "jsonl", "--db", tmp_path / "l.db", "--workers", "1")
    remote = cli_score(corpus, "--format", "jsonl", "--db", tmp_path / "r.db", "--engine", "ray")
    assert local == remote and dump(tmp_path / "l.db") == dump(tmp_path / "r.db")
    import ray

    from evalkit.engines.local import BATCH_FILES, guided_batches

    n = len(list(corpus.rglob("*.jsonl")))
    cpus = int(ray.cluster_resources()["CPU"])
    tasks = len(list(guided_batches(range(n), BATCH_FILES, cpus, n)))
    assert tasks >= 3 and len(taken) == 2 * tasks  # per task: the output and the staging database
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(spool.PREFIX)]
