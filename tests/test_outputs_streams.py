"""Broken standard streams are one line, never a traceback: stdout on /dev/full or closed, stdin
closed for `score -`; a pipe whose reader went away (`| head -1`) ends quietly with 141. These run
the real executable (`python -m evalkit`): click's test runner has streams of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "a320"
ONE_RUN = EXAMPLES / "a320-opus-4-8-full-procedure.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}  # the working tree, not an installed evalkit

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")]


def evalkit(*args, redirect: str = "", cwd=None) -> subprocess.CompletedProcess:
    """``python -m evalkit ARGS`` through a shell, with ``redirect`` (``>/dev/full``, ``>&-``...)."""
    command = " ".join([sys.executable, "-m", "evalkit", *(f"'{a}'" for a in args), redirect])
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, env=ENV, cwd=cwd)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("streams")
    shutil.copytree(EXAMPLES, root / "runs")
    res = evalkit("score", root / "runs", "--db", root / "d.db", redirect=">/dev/null")
    assert res.returncode == 0, res.stderr
    return root / "d.db"


def _one_line(res, text: str, code: int = 1):
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == text


@pytest.mark.parametrize(
    "args",
    [
        ["score", ONE_RUN, "--no-db"],
        ["audit", "--db", "{db}", "--resamples", "0"],
        ["report", "--db", "{db}", "--html", "-"],
        ["cache", "stats", "--db", "{db}"],
        ["schema", "trajectory"],
    ],
    ids=["score", "audit", "report-html-stdout", "cache-stats", "schema"],
)
def test_stdout_on_dev_full_is_one_line(db, args):
    args = [str(a).format(db=db) for a in args]
    _one_line(evalkit(*args, redirect=">/dev/full"), "error: cannot write to stdout: No space left on device")


def test_stdout_closed_is_one_line():
    _one_line(evalkit("score", ONE_RUN, "--no-db", redirect=">&-"), "error: cannot write to stdout: it is closed")


def test_stdout_closed_does_not_matter_with_out(tmp_path):
    res = evalkit("score", ONE_RUN, "--no-db", "--format", "csv", "--out", tmp_path / "s.csv", redirect=">&-")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "s.csv").read_text(encoding="utf-8").startswith("run_id,")


def test_stdin_closed_for_score_dash_is_one_line():
    res = evalkit("score", "-", "--no-db", redirect="<&-")
    _one_line(res, "error: -: standard input is closed (nothing to read trajectories from) (see 'evalkit score -h')", 2)


def test_broken_pipe_ends_quietly(tmp_path):
    from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl

    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(40):  # more output than a pipe holds
        write_jsonl(
            runs / f"r{i:02d}.jsonl", trajectory(a320_scenario(), [read(), cmd("ext_pwr", 1)], run_id=f"r{i:02d}")
        )
    command = f"{sys.executable} -m evalkit score '{runs}' --no-db --format jsonl | head -c 10; exit ${{PIPESTATUS[0]}}"
    res = subprocess.run(["/bin/bash", "-c", command], capture_output=True, text=True, env=ENV)
    assert res.returncode == 141
    assert res.stdout == '{"run_id":' and res.stderr == ""
