"""`evalkit report`: files written atomically, stdout, exit codes, one-line errors."""

from __future__ import annotations

import pytest
import report_fixtures as rf
from click.testing import CliRunner
from import_helpers import among, modules_loaded_by

from evalkit.cli import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return rf.build_db(tmp_path_factory.mktemp("cli"))


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_report_writes_html_and_markdown(db, tmp_path):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    result = run("report", "--db", str(db), "--html", str(html), "--markdown", str(md), "--title", "Nightly <run>")
    assert result.exit_code == 0, result.output
    assert "<title>Nightly &lt;run&gt;</title>" in html.read_text(encoding="utf-8")
    assert md.read_text(encoding="utf-8").startswith("# Nightly &lt;run&gt;\n")
    assert "wrote" in result.stderr and "judge yes, audit yes" in result.stderr
    assert not list(tmp_path.glob(".*.tmp"))


def test_report_default_output_is_html_file(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("report", "--db", str(db))
    assert result.exit_code == 0
    assert (tmp_path / "evalkit-report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_report_markdown_to_stdout(db):
    result = run("report", "--db", str(db), "--markdown", "-")
    assert result.exit_code == 0
    assert result.stdout.startswith("# evalkit report\n")


def test_source_date_epoch_makes_the_cli_output_byte_identical(db, tmp_path):
    env = {"SOURCE_DATE_EPOCH": "1767225600"}
    a, b = tmp_path / "a" / "report.html", tmp_path / "b" / "report.html"
    for out in (a, b):
        out.parent.mkdir()
        assert run("report", "--db", str(db), "--html", str(out), env=env).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    assert "2026-01-01T00:00:00Z" in a.read_text(encoding="utf-8")
    pages = sorted(p.name for p in (a.parent / "report-scenarios").iterdir())
    assert pages and pages == sorted(p.name for p in (b.parent / "report-scenarios").iterdir())
    for name in pages:
        assert (a.parent / "report-scenarios" / name).read_bytes() == (
            b.parent / "report-scenarios" / name
        ).read_bytes()


def test_missing_database_exits_2_with_one_line(tmp_path):
    missing = tmp_path / "missing.db"
    result = run("report", "--db", str(missing), "--html", str(tmp_path / "x.html"))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and f"{missing}: no such database" in result.stderr
    assert not missing.exists() and not (tmp_path / "x.html").exists()


def test_unreadable_database_exits_1_with_one_line(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 200)
    result = run("report", "--db", str(junk), "--html", str(tmp_path / "x.html"))
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "junk.db" in result.stderr
    assert "Traceback" not in result.output


def test_unwritable_output_exits_1_and_keeps_previous_report(db, tmp_path):
    out = tmp_path / "no-such-dir" / "r.html"
    result = run("report", "--db", str(db), "--html", str(out))
    assert result.exit_code == 1 and "cannot write" in result.stderr and result.stderr.count("\n") == 1


def test_failed_write_leaves_the_old_report(db, tmp_path, monkeypatch):
    import evalkit.report as report_pkg

    target = tmp_path / "r.html"
    target.write_text("old report", encoding="utf-8")

    def boom(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_pkg.os, "replace", boom)
    result = run("report", "--db", str(db), "--html", str(target))
    assert result.exit_code == 1 and "No space left on device" in result.stderr
    assert target.read_text(encoding="utf-8") == "old report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_custom_contamination_file(db, tmp_path):
    c = tmp_path / "c.toml"
    c.write_text(
        '[contamination]\ndeclared = true\nstatement = "Scenarios are private; <b>none</b> public."\n', encoding="utf-8"
    )
    result = run("report", "--db", str(db), "--markdown", "-", "--contamination", str(c))
    assert result.exit_code == 0
    assert "Scenarios are private; &lt;b&gt;none&lt;/b&gt; public." in result.stdout
    assert "Not declared yet" not in result.stdout


def test_missing_contamination_file_exits_2(db, tmp_path):
    result = run("report", "--db", str(db), "--markdown", "-", "--contamination", str(tmp_path / "none.toml"))
    assert result.exit_code == 2 and "none.toml: no such contamination file" in result.stderr


def test_bad_contamination_file_exits_1(db, tmp_path):
    c = tmp_path / "bad.toml"
    c.write_text("[contamination]\ndeclared = 1\n", encoding="utf-8")
    result = run("report", "--db", str(db), "--markdown", "-", "--contamination", str(c))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {c}: contamination.declared: input should be a valid boolean, got 1"


def test_both_outputs_to_stdout_is_a_usage_error(db):
    result = run("report", "--db", str(db), "--html", "-", "--markdown", "-")
    assert result.exit_code == 2


def test_command_module_imports_only_click_and_stdlib():
    loaded = modules_loaded_by("import evalkit.commands.report")
    assert (
        among(loaded, ("pydantic", "sqlite_utils", "numpy", "scipy", "litellm", "evalkit.judges", "evalkit.report"))
        == []
    )


def test_report_never_imports_litellm(db, tmp_path):
    loaded = modules_loaded_by(
        "import sys; from evalkit.cli import cli; "
        "cli(['report', '--db', sys.argv[1], '--html', sys.argv[2]], standalone_mode=False)",
        str(db),
        str(tmp_path / "l.html"),
    )
    assert "evalkit.report.render" in loaded  # the report was made
    assert among(loaded, ("litellm", "evalkit.judges.litellm_judge")) == []


def test_written_report_has_ordinary_file_permissions(db, tmp_path):
    import os

    out = tmp_path / "perm.html"
    assert run("report", "--db", str(db), "--html", str(out)).exit_code == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask


def test_scenario_pages_are_replaced_whole_and_leave_no_temporary_directory(db, tmp_path):
    html = tmp_path / "r.html"
    pages = tmp_path / "r-scenarios"
    pages.mkdir()
    (pages / "stale-scenario.html").write_text("from an earlier report", encoding="utf-8")
    assert run("report", "--db", str(db), "--html", str(html)).exit_code == 0
    names = sorted(p.name for p in pages.iterdir())
    assert names and "stale-scenario.html" not in names and all(n.endswith(".html") for n in names)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-scenarios", "r.html"]  # no staging left
    main = html.read_text(encoding="utf-8")
    for name in names:  # the main page links each scenario page, which links back
        assert f'href="r-scenarios/{name}"' in main
        assert '<a href="../r.html">' in (pages / name).read_text(encoding="utf-8")


def test_a_failed_scenario_page_keeps_the_previous_report(db, tmp_path, monkeypatch):
    import evalkit.report.render as report_html

    html = tmp_path / "r.html"
    assert run("report", "--db", str(db), "--html", str(html)).exit_code == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "r-scenarios").iterdir()}
    page = html.read_bytes()

    def broken(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_html, "render_scenario_page", broken)
    result = run("report", "--db", str(db), "--html", str(html), "--title", "other")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "r-scenarios: cannot write: No space left on device" in result.stderr
    assert html.read_bytes() == page
    assert {p.name: p.read_bytes() for p in (tmp_path / "r-scenarios").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r-scenarios", "r.html"]


def test_scenario_pages_never_replace_a_directory_holding_the_database(db, tmp_path):
    import shutil

    pages = tmp_path / "r-scenarios"
    pages.mkdir()
    inside = pages / "evalkit.db"
    shutil.copyfile(db, inside)
    result = run("report", "--db", str(inside), "--html", str(tmp_path / "r.html"))
    assert result.exit_code == 2
    assert "would overwrite the database" in result.stderr and inside.exists()


def test_page_to_stdout_writes_no_scenario_pages_and_names_runs_without_links(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("report", "--db", str(db), "--html", "-")
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")
    assert "-scenarios/" not in result.stdout and list(tmp_path.iterdir()) == []
