"""`evalkit score`'s stderr on long work: a progress line on a terminal, warnings grouped by kind
(the first 20 of each printed, the rest counted), one summary line (evalkit.present.progress)."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.present.progress import PER_KIND, PROGRESS_MIN_FILES, StderrDigest, warning_kind

CRASHED = Path(__file__).resolve().parent.parent / "examples" / "a320" / "a320-gemini-2.5-flash-crashed-recorder.jsonl"


def _digest(total=10, **kw):
    lines, raw = [], []
    d = StderrDigest(total, echo=lines.append, raw=raw.append, **kw)
    return d, lines, raw


def test_warning_kinds_are_the_words_after_warning():
    assert (
        warning_kind("a.jsonl:7: warning: dropped a half-written last line (EOF while ...)")
        == "dropped a half-written last line"
    )
    assert warning_kind("b.jsonl: warning: run_id 'r1' was already read from a.jsonl; ...") == "run_id"
    assert warning_kind("error: a.jsonl:3: bad line") is None


def test_a_scenario_warning_kind_is_its_field_without_an_index():
    line = (
        "runs/scenarios.json:329: warning: scenario.ground_truth.gated_actions[0].approval.result: 23 call(s) of "
        '"request_approval" in the 553 runs answer "approved": "true" (23)'
    )
    assert warning_kind(line) == "scenario.ground_truth.gated_actions"
    line = 's.json:9: warning: scenario.ground_truth.procedure[1].actions[1].args_match.compare: key "stroe" ...'
    assert warning_kind(line) == "scenario.ground_truth.procedure"


def test_the_first_twenty_of_a_kind_are_printed_and_the_rest_counted():
    d, lines, _ = _digest(is_tty=False)
    for i in range(PER_KIND + 5):
        d.warn(f"f{i}.jsonl:9: warning: dropped a half-written last line (EOF)")
    d.warn("error: x.jsonl:1: not JSON")  # errors are always printed
    assert len(lines) == PER_KIND + 1 and lines[-1].startswith("error:")
    line = d.summary(runs=25, errors=1, database="e.db")
    assert line is not None and "25 warnings (25 dropped a half-written last line)" in line
    assert "5 of them not printed (-v prints all)" in line and "database e.db" in line


def test_verbose_prints_every_warning():
    d, lines, _ = _digest(is_tty=False, verbose=True)
    for i in range(PER_KIND + 5):
        d.warn(f"f{i}.jsonl:9: warning: dropped a half-written last line (EOF)")
    assert len(lines) == PER_KIND + 5
    assert d.summary(runs=25, errors=0, database=None) is None  # not a terminal, nothing left out


def test_progress_only_on_a_terminal_and_for_many_files():
    assert not _digest(PROGRESS_MIN_FILES + 1, is_tty=False)[0].progress
    assert not _digest(PROGRESS_MIN_FILES, is_tty=True)[0].progress
    assert _digest(PROGRESS_MIN_FILES + 1, is_tty=True)[0].progress
    assert not _digest(PROGRESS_MIN_FILES + 1, is_tty=True, progress=False)[0].progress


def test_progress_line_gives_rate_elapsed_and_eta_and_is_erased_before_a_warning():
    now = [100.0]
    d, lines, raw = _digest(1000, is_tty=True, clock=lambda: now[0])
    now[0] = 110.0
    d.file_done(500)
    assert raw[-1].startswith("\rscored 500/1,000 files · 50 files/s · 0:10 elapsed · ETA 0:10")
    d.warn("a.jsonl: warning: run_id 'x' was already read")
    assert raw[-1] == "\r\x1b[K" and lines == ["a.jsonl: warning: run_id 'x' was already read"]
    assert d.summary(runs=500, errors=0, database="evalkit.db").startswith("score: 500 files; 500 runs scored")


def test_score_cli_collapses_repeated_warnings_and_says_so(tmp_path):
    for i in range(PER_KIND + 3):
        text = CRASHED.read_text().replace("a320-gemini-2.5-flash-crashed-recorder", f"crashed-{i:02d}")
        (tmp_path / f"crashed-{i:02d}.jsonl").write_text(text)
    res = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", "1"])
    assert res.exit_code == 0, res.output
    warned = [line for line in res.stderr.splitlines() if "warning: dropped" in line]
    assert len(warned) == PER_KIND
    assert "3 of them not printed (-v prints all)" in res.stderr.splitlines()[-1]
    res = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "-v"])
    assert len([line for line in res.stderr.splitlines() if "warning: dropped" in line]) == PER_KIND + 3


def test_score_in_a_pipe_prints_no_progress_and_no_summary(tmp_path):
    shutil.copy(CRASHED, tmp_path / "one.jsonl")
    res = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl"])
    assert res.exit_code == 0 and "scored " not in res.stderr and "score: " not in res.stderr
