"""The score path never imports litellm (nor judges, openai, tenacity, scipy, numpy or sqlite-utils,
which imports numpy), nor ray, pyarrow or fsspec unless asked for (--engine ray, --parquet, a URL):
checked in a fresh interpreter, writing a database as `evalkit score` does.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

PROBE = """
import json, sys
from click.testing import CliRunner
from evalkit.aggregate.groups import aggregate
from evalkit.engines.pipeline import score_files
import evalkit.cli
cards = [c for c in score_files([sys.argv[1]]) if not isinstance(c, Exception)]
aggregate(cards)
result = CliRunner().invoke(evalkit.cli.cli, ["score", sys.argv[1], "--no-db", "--format", "jsonl"])
assert result.exit_code == 0, result.output
result = CliRunner().invoke(evalkit.cli.cli, ["score", sys.argv[1], "--db", sys.argv[2], "--format", "jsonl", "--workers", "2"])
assert result.exit_code == 0, result.output
heavy = sorted(m for m in sys.modules
               if m.split(".")[0] in {"litellm", "scipy", "openai", "tenacity", "numpy", "sqlite_utils",
                                      "ray", "pyarrow", "fsspec", "duckdb"} or m.startswith("evalkit.judges"))
print(json.dumps({"heavy": heavy, "cards": len(cards)}))
"""


def test_scoring_never_imports_litellm(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(EXAMPLES), str(tmp_path / "e.db")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cards"] == 16
    assert out["heavy"] == []


PARQUET_PROBE = """
import json, sys
from click.testing import CliRunner
import evalkit.cli
result = CliRunner().invoke(evalkit.cli.cli, ["score", sys.argv[1], "--no-db", "--parquet", sys.argv[2]])
assert result.exit_code == 0, result.output
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"pyarrow", "ray", "numpy", "litellm"})))
"""


def test_parquet_output_imports_pyarrow_and_nothing_else_heavy(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", PARQUET_PROBE, str(EXAMPLES), str(tmp_path / "pq")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    # pyarrow needs numpy; ray and litellm stay out
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["numpy", "pyarrow"]


NO_DB_PROBE = """
import json, sys
import evalkit.cli
try:
    evalkit.cli.cli.main(["score", sys.argv[1], "--no-db", "--format", "jsonl", "--workers", "2"], standalone_mode=False)
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(m for m in sys.modules if m == "sqlite3" or m.startswith("evalkit.db"))))
"""


def test_scoring_without_a_database_loads_no_database_code(tmp_path):
    lines = (EXAMPLES / "support" / "support-gpt-x-good.jsonl").read_text(encoding="utf-8").splitlines()
    for i in range(80):  # more files than one process scores alone: a pool of workers scores them
        meta = json.loads(lines[0])
        meta["run_id"] = f"{meta['run_id']}-{i}"
        (tmp_path / f"run{i:03d}.jsonl").write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", NO_DB_PROBE, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


COMMANDS_PROBE = """
import json, sys
import evalkit.cli
try:
    evalkit.cli.cli.main(["score", sys.argv[1], "--no-db", "--format", "jsonl"], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("evalkit.commands."))))
"""


def test_score_loads_no_other_commands_module(tmp_path):
    proc = subprocess.run([sys.executable, "-c", COMMANDS_PROBE, str(EXAMPLES)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded == ["evalkit.commands.exitcodes", "evalkit.commands.kit", "evalkit.commands.score"]
