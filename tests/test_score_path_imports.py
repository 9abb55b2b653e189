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
