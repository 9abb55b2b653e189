"""The one output-path rule: an output that is the database (or its -wal/-shm/-journal), another
output or an input file is a usage error naming both, before anything is opened; every file output
goes through a temporary file and a rename, so a failure keeps the old file."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.output.paths import OutputClash, check_outputs, output_clash

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "a320"
ONE_RUN = EXAMPLES / "a320-opus-4-8-full-procedure.jsonl"


def run(*args, cwd=None):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("scored")
    res = run("score", EXAMPLES, "--db", root / "d.db", "--format", "csv")
    assert res.exit_code == 0, res.stderr
    return root / "d.db"


@pytest.fixture
def db(scored, tmp_path):
    shutil.copy(scored, tmp_path / "d.db")
    return tmp_path / "d.db"


def _state(db: Path) -> tuple[str, int, int]:
    con = sqlite3.connect(db)
    try:
        return (
            con.execute("PRAGMA integrity_check").fetchone()[0],
            con.execute("SELECT count(*) FROM scorecards").fetchone()[0],
            con.execute("SELECT count(*) FROM runs").fetchone()[0],
        )
    finally:
        con.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _usage_error(res, *names):
    assert res.exit_code == 2, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ")
    for name in names:
        assert str(name) in res.stderr
    return res.stderr


def _refused_unchanged(target: Path, *args) -> str:
    """`evalkit ARGS` is a usage error naming ``target``, whose bytes it leaves as they were: the error."""
    digest = _digest(target)
    err = _usage_error(run(*args), target)
    assert _digest(target) == digest
    return err


def test_score_out_onto_the_database_is_refused_and_the_database_stays_whole(db, tmp_path):
    before = _state(db)
    err = _usage_error(run("score", EXAMPLES, "--db", db, "--out", db), db)
    assert "would overwrite the database" in err
    assert _state(db) == before == ("ok", 9, 9)


def test_report_html_onto_the_database_is_refused(db):
    _refused_unchanged(db, "report", "--db", db, "--html", db)
    assert _state(db)[0] == "ok"


def test_report_markdown_onto_the_wal_is_refused(db):
    err = _usage_error(run("report", "--db", db, "--markdown", f"{db}-wal"), f"{db}-wal")
    assert "-wal file" in err
    assert not Path(f"{db}-wal").exists()


def test_audit_out_onto_the_database_is_refused(db):
    _refused_unchanged(db, "audit", "--db", db, "--out", db)


def test_audit_pairs_out_onto_the_database_is_refused(db):
    _refused_unchanged(db, "audit", "--db", db, "--pairs-out", db)


def test_score_out_onto_its_input_leaves_the_input_unchanged(tmp_path):
    src = tmp_path / "in.jsonl"
    shutil.copy(ONE_RUN, src)
    assert "would overwrite the input" in _refused_unchanged(src, "score", src, "--no-db", "--out", src)


def test_score_out_onto_a_file_found_in_an_input_directory_is_refused(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLES, runs)
    target = runs / ONE_RUN.name
    _refused_unchanged(target, "score", runs, "--no-db", "--out", target)


def test_score_database_onto_its_input_is_refused(tmp_path):
    src = tmp_path / "in.jsonl"
    shutil.copy(ONE_RUN, src)
    _refused_unchanged(src, "score", src, "--db", src)


def test_a_symlink_to_the_database_as_out_is_refused(db, tmp_path):
    link = tmp_path / "link.db"
    link.symlink_to(db)
    before = _state(db)
    err = _usage_error(run("score", EXAMPLES, "--db", db, "--out", link), link, db)
    assert _state(db) == before and link.is_symlink()
    assert "would overwrite the database" in err


def test_a_hard_link_to_the_database_as_out_is_refused(db, tmp_path):
    hard = tmp_path / "hard.db"
    os.link(db, hard)
    before = _state(db)
    _usage_error(run("score", EXAMPLES, "--db", db, "--out", hard), hard, db)
    _usage_error(run("report", "--db", db, "--html", hard), hard, db)
    assert _state(db) == before


def test_a_symlink_to_an_input_as_out_is_refused(tmp_path):
    src = tmp_path / "in.jsonl"
    shutil.copy(ONE_RUN, src)
    (tmp_path / "out.jsonl").symlink_to(src)
    _refused_unchanged(src, "score", src, "--no-db", "--out", tmp_path / "out.jsonl")


def test_two_outputs_naming_one_file_are_refused(db, tmp_path):
    out = tmp_path / "r.txt"
    err = _usage_error(run("report", "--db", db, "--html", out, "--markdown", out), out)
    assert "are the same file" in err and not out.exists()
    _usage_error(run("audit", "--db", db, "--out", out, "--pairs-out", out), out)


def test_parquet_directory_onto_the_wal_is_refused(db):
    _usage_error(run("score", EXAMPLES, "--db", db, "--parquet", f"{db}-wal"), f"{db}-wal")
    assert not Path(f"{db}-wal").exists()


def test_export_otel_onto_the_database_is_refused(db):
    _refused_unchanged(db, "export", "otel", db, "--db", db)


def test_verdicts_json_out_onto_a_result_file_is_refused(tmp_path):
    src = Path(__file__).resolve().parent.parent / "examples" / "verdicts"
    files = sorted(src.glob("*.json"))
    assert files, "examples/verdicts has result files"
    copy = tmp_path / files[0].name
    shutil.copy(files[0], copy)
    _refused_unchanged(copy, "verdicts", copy, "--json-out", copy)


def test_import_database_onto_its_input_is_refused(tmp_path):
    src = tmp_path / "log.json"
    src.write_text("{}", encoding="utf-8")
    _usage_error(run("import", "inspect", src, "-o", tmp_path / "out", "--db", src), src)
    assert src.read_text(encoding="utf-8") == "{}"


def test_the_rule_covers_shm_and_journal_and_api_callers(tmp_path):
    db = tmp_path / "d.db"
    db.write_bytes(b"")
    for suffix in ("-shm", "-journal"):
        assert "would overwrite the database's" in output_clash([("out", f"{db}{suffix}")], database=db)
    assert output_clash([("out", "-"), ("other", None)], database=db, inputs=["-"]) is None
    with pytest.raises(OutputClash):
        check_outputs([("out", db)], database=db)


def test_write_report_refuses_the_database(db):
    from evalkit.report import write_report

    digest = _digest(db)
    with pytest.raises(OutputClash):
        write_report(db, html=db)
    assert _digest(db) == digest


# --- every output through a temporary file and a rename ------------------------------------------


@pytest.mark.parametrize("option", ["--html", "--markdown"])
def test_a_report_into_a_missing_directory_names_the_page_and_the_directory(tmp_path, option):
    """Not the scenario pages' directory the user never named: the page asked for, and which
    directory is missing."""
    db = tmp_path / "e.db"
    assert run("score", EXAMPLES, "--db", db).exit_code == 0
    out = tmp_path / "rep" / ("report.html" if option == "--html" else "report.md")
    res = run("report", "--db", db, option, out)
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {out}: cannot write: no such directory: {out.parent}"
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith("e.db")]


def test_score_out_into_a_missing_directory_is_one_line_and_makes_no_database(tmp_path):
    out = tmp_path / "no-such-dir" / "scores.csv"
    res = run("score", EXAMPLES, "--db", tmp_path / "new.db", "--out", out)
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {out}: cannot write: no such directory: {out.parent}"
    assert not (tmp_path / "new.db").exists()  # said before anything was made


def test_score_out_onto_a_full_disk_is_one_line_and_keeps_the_old_file(tmp_path, monkeypatch):
    import evalkit.output.atomic as atomic

    out = tmp_path / "scores.jsonl"
    out.write_text("previous scores\n", encoding="utf-8")

    def full(self, data):  # the disk fills during the run: a write that would pass 1,000 bytes fails
        if self.tell() + len(data) > 1000:
            raise atomic.output_error(self.path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        return io.FileIO.write(self, data)

    monkeypatch.setattr(atomic._OutputDescriptor, "write", full)
    res = run("score", EXAMPLES, "--no-db", "--format", "jsonl", "--out", out)
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines()[-1] == f"error: {out}: cannot write: No space left on device"
    assert out.read_text(encoding="utf-8") == "previous scores\n"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]  # no temporary file left


def test_score_out_appears_only_when_complete(tmp_path, monkeypatch):
    import evalkit.output.atomic as atomic

    out = tmp_path / "scores.csv"
    seen = []
    real = atomic.AtomicFile.write

    def spy(self, text):
        seen.append(out.exists())
        return real(self, text)

    monkeypatch.setattr(atomic.AtomicFile, "write", spy)
    res = run("score", EXAMPLES, "--no-db", "--format", "csv", "--out", out)
    assert res.exit_code == 0 and seen and not any(seen)
    assert out.read_text(encoding="utf-8") == run("score", EXAMPLES, "--no-db", "--format", "csv").stdout


def test_score_out_through_a_symlink_writes_its_target(tmp_path):
    target = tmp_path / "target.csv"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    assert run("score", ONE_RUN, "--no-db", "--format", "csv", "--out", link).exit_code == 0
    assert link.is_symlink() and target.read_text(encoding="utf-8").startswith("run_id,")


def test_an_interrupted_score_keeps_the_old_out(tmp_path, monkeypatch):
    from evalkit.present import score_output

    out = tmp_path / "scores.csv"
    out.write_text("previous\n", encoding="utf-8")

    def interrupted(self, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(score_output.ScoreWriter, "finish", interrupted)
    res = run("score", EXAMPLES, "--no-db", "--format", "csv", "--out", out)
    assert res.exit_code == 130
    assert out.read_text(encoding="utf-8") == "previous\n" and [p.name for p in tmp_path.iterdir()] == ["scores.csv"]


def test_review_export_out_onto_the_database_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    from evalkit.cli import cli

    db = tmp_path / "d.db"
    from evalkit.db import Store

    Store(db).close()
    before = db.read_bytes()
    res = CliRunner().invoke(cli, ["review", "export", "--db", str(db), "--out", str(db)])
    assert res.exit_code == 2 and "d.db" in res.output
    assert db.read_bytes() == before


def test_an_output_onto_a_device_writes_into_it_and_keeps_the_device(tmp_path):
    """--out /dev/null must not replace the device with a regular file (a rename over it would)."""
    import stat as st

    from evalkit.output.atomic import AtomicFile, write_text_atomic

    before = os.stat("/dev/null")
    assert st.S_ISCHR(before.st_mode)
    with AtomicFile("/dev/null") as fh:
        fh.write("x" * 10_000)
    write_text_atomic("/dev/null", "y")
    after = os.stat("/dev/null")
    assert st.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert not [p for p in os.listdir("/dev") if p.startswith(".null.")]


def test_an_output_onto_a_fifo_is_written_into_the_fifo(tmp_path):
    import threading

    from evalkit.output.atomic import write_text_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, encoding="utf-8").read()))
    reader.start()
    write_text_atomic(fifo, "through the pipe\n")
    reader.join(5)
    assert got == ["through the pipe\n"] and os.path.exists(fifo)
    import stat as st

    assert st.S_ISFIFO(os.stat(fifo).st_mode)


def test_score_out_dev_null_keeps_dev_null(tmp_path):
    import stat as st

    from click.testing import CliRunner

    from evalkit.cli import cli

    examples = Path(__file__).resolve().parent.parent / "examples" / "a320"
    res = CliRunner().invoke(cli, ["score", str(examples), "--no-db", "--format", "jsonl", "--out", "/dev/null"])
    assert res.exit_code in (0, 1), res.output
    assert st.S_ISCHR(os.stat("/dev/null").st_mode)
