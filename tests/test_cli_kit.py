"""The CLI kit: shared options declared once, one fail() and one set of exit codes,
click.Path checks, one-line usage errors, the --resample/--seed rule in one place, click declared."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from import_helpers import modules_loaded_by

import evalkit.cli
from evalkit.commands import exitcodes

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = sorted((ROOT / "evalkit" / "commands").glob("*.py"))


def invoke(*args: str):
    return CliRunner().invoke(evalkit.cli.cli, list(args), catch_exceptions=False)


def one_error_line(res, code: int) -> str:
    assert res.exit_code == code, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


def test_exit_codes_are_the_documented_ones():
    assert (exitcodes.EXIT_OK, exitcodes.EXIT_BAD_INPUT, exitcodes.EXIT_USAGE, exitcodes.EXIT_GATE) == (0, 1, 2, 3)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code in (
        "`0` success",
        "`1` some inputs were bad",
        "`2` usage error",
        "`3` a quality gate",
        "`130` interrupted",
    ):
        assert code in readme


def _assigned_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        names.add(t.id)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names


def test_exit_codes_fail_and_the_db_default_are_declared_once():
    for path in COMMANDS:
        if path.name in ("kit.py", "exitcodes.py"):
            continue
        names = _assigned_names(path)
        assert not {n for n in names if n.startswith("EXIT_")}, f"{path.name} declares its own exit codes"
        assert "_fail" not in names and "fail" not in names, f"{path.name} declares its own fail()"
        text = path.read_text(encoding="utf-8")
        assert '"evalkit.db"' not in text, f"{path.name} repeats the default database (use kit.db_option)"


def test_commands_import_only_click_and_the_standard_library():
    # modules present before the import (site hooks such as setuptools' _distutils_hack) are not its doing
    loaded = modules_loaded_by("import evalkit.cli")
    assert {m.split(".")[0] for m in loaded} - set(sys.stdlib_module_names) == {"click", "evalkit"}


def test_click_is_a_declared_dependency():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].strip() == "click" for d in deps)


@pytest.mark.parametrize(
    "args",
    [
        ["audit"],
        ["report"],
        ["cache", "stats"],
        ["cache", "clear"],
        ["export", "parquet", "out"],
    ],
)
def test_a_missing_database_is_one_usage_line_naming_it(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    line = one_error_line(invoke(*args, "--db", "nope.db"), exitcodes.EXIT_USAGE)
    assert "nope.db: no such database" in line


def test_a_directory_as_database_is_one_line_naming_it(tmp_path):
    line = one_error_line(invoke("audit", "--db", str(tmp_path)), exitcodes.EXIT_BAD_INPUT)  # the opener's error
    assert str(tmp_path) in line and "directory" in line


def test_missing_config_and_rating_files_are_named(tmp_path):
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    assert "none.toml: no such pairings file" in one_error_line(
        invoke("audit", "--db", str(db), "--pairings", str(tmp_path / "none.toml")), 2
    )
    assert "ratings.csv: no such file" in one_error_line(
        invoke("annotations", "import", str(tmp_path / "ratings.csv"), "--db", str(db)), 2
    )
    assert "none.toml: no such contamination file" in one_error_line(
        invoke("report", "--db", str(db), "--contamination", str(tmp_path / "none.toml")), 2
    )


def test_click_usage_errors_are_one_line_too():
    line = one_error_line(invoke("score"), exitcodes.EXIT_USAGE)
    assert "Missing argument" in line and "score -h" in line
    line = one_error_line(invoke("score", "examples", "--format", "yaml"), exitcodes.EXIT_USAGE)
    assert "'yaml' is not one of" in line
    line = one_error_line(invoke("no-such-command"), exitcodes.EXIT_USAGE)
    assert "No such command" in line


def test_help_and_version_still_exit_0():
    assert invoke("--version").exit_code == 0
    res = invoke("score", "--help")
    assert res.exit_code == 0 and "--db" in res.stdout and "evalkit.db" in res.stdout


def test_bare_evalkit_prints_the_help_over_lines_not_one_error_line():
    res = invoke()
    assert res.exit_code == exitcodes.EXIT_USAGE
    assert "\\n" not in res.stderr and "error:" not in res.stderr
    lines = res.stderr.splitlines()
    assert lines[0].startswith("Usage: ") and any(line.strip().startswith("score") for line in lines)
    group = invoke("cache")
    assert (
        group.exit_code == exitcodes.EXIT_USAGE
        and group.stderr.startswith("Usage: ")
        and " cache " in group.stderr.splitlines()[0]
    )


def test_resample_needs_seed_and_seed_needs_resample(tmp_path):
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    assert "--resample needs --seed" in one_error_line(
        invoke("judge", "--db", str(db), "--model", "openai/x", "--resample", "0.5"), 2
    )
    assert "--seed is only used with --resample" in one_error_line(
        invoke("judge", "--db", str(db), "--model", "openai/x", "--seed", "3"), 2
    )


def test_the_resample_rule_is_the_api_rule():
    from evalkit.judges.api import check_resample

    check_resample(0.5, 1)
    check_resample(None, None)
    with pytest.raises(ValueError, match="needs --seed"):
        check_resample(0.5, None)
    with pytest.raises(ValueError, match="only used with --resample"):
        check_resample(None, 4)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        check_resample(1.5, 4)


def test_fail_sanitizes_what_it_quotes(tmp_path):
    bad = tmp_path / "evil\x1b[2J.jsonl"
    bad.write_text('{"type": "meta"\n')
    res = invoke("score", str(bad), "--no-db")
    assert res.exit_code == 1 and "\x1b" not in res.stderr and "evil\\x1b[2J.jsonl" in res.stderr


def test_config_is_not_an_option_name(tmp_path):
    """`--pairings` and `--judge-config` are the names; `--config` is a usage error (exit 2)."""
    for command in (["audit"], ["view"], ["judge", "--model", "openai/x"]):
        res = invoke(*command, "--config", str(tmp_path / "x.toml"))
        assert res.exit_code == 2 and "No such option '--config'" in res.stderr, (command, res.stderr)
