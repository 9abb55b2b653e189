"""An input directory `evalkit import` cannot list (unreadable, gone meanwhile, or without the
format's files) is that input's one error line naming it, from evalkit.importers itself: never an
exception out of import_files, and the other inputs are still converted. The tests may run as
root, who lists any folder: an unreadable one is simulated by an os.scandir that refuses it (as
tests/test_input_skips.py does), and the real chmod 000 runs where it denies."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.importers import ImportFormatError, import_files
from evalkit.trajectory.builders import a320_scenario, read, trajectory


class LineImporter:
    """A format of ``*.txt`` files, one run per word; a directory is listed with os.scandir."""

    name = "lines"
    summary = "one run per word"
    cli_options = ()

    def expand(self, directory: str) -> list[str]:
        found = sorted(e.path for e in os.scandir(directory) if e.name.endswith(".txt"))
        if not found:
            raise ImportFormatError(directory, None, "no *.txt files in this directory")
        return found

    def convert(self, path: str, **options) -> list[list[dict]]:
        words = Path(path).read_text(encoding="utf-8").split()
        return [trajectory(a320_scenario(), [read()], run_id=word) for word in words]


@pytest.fixture
def inputs(tmp_path):
    """``good/`` with one file of two runs, ``locked/`` with one, a loose file with one run."""
    for name, words in (("good/a.txt", "r1 r2"), ("locked/b.txt", "r3"), ("loose.txt", "r4")):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(words, encoding="utf-8")
    return tmp_path


def _named(path, name: str) -> bool:
    return isinstance(path, (str, os.PathLike)) and Path(path).name == name  # not a descriptor


def _refuse(monkeypatch, name: str, error: OSError) -> None:
    """os.scandir of the folder ``name`` raises ``error``, as for a folder without read permission."""
    real = os.scandir

    def scandir(path="."):
        if _named(path, name):
            raise error
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def _import(inputs: Path, *names: str):
    return import_files(LineImporter(), [inputs / n for n in names], inputs / "out")


def test_an_unreadable_directory_is_that_inputs_error_and_the_others_convert(inputs, monkeypatch):
    _refuse(monkeypatch, "locked", PermissionError(13, "Permission denied", str(inputs / "locked")))
    result = _import(inputs, "good", "locked", "loose.txt")
    assert [str(e) for e in result.errors] == [f"{inputs / 'locked'}: cannot list this directory (Permission denied)"]
    assert sorted(result.written) == [str(inputs / "good" / "a.txt"), str(inputs / "loose.txt")]
    assert result.runs == 3 and sorted(p.name for p in (inputs / "out").iterdir()) == [
        "r1.jsonl",
        "r2.jsonl",
        "r4.jsonl",
    ]


def test_a_directory_gone_before_it_is_listed_is_that_inputs_error(inputs, monkeypatch):
    real = os.scandir

    def scandir(path="."):
        if _named(path, "locked"):
            shutil.rmtree(path)  # removed between the check that it is a directory and its listing
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = _import(inputs, "locked", "good")
    assert [str(e) for e in result.errors] == [
        f"{inputs / 'locked'}: cannot list this directory (No such file or directory)"
    ]
    assert result.runs == 2


def test_a_directory_without_the_formats_files_is_that_inputs_error(inputs):
    (inputs / "empty").mkdir()
    result = _import(inputs, "empty", "good")
    assert [str(e) for e in result.errors] == [f"{inputs / 'empty'}: no *.txt files in this directory"]
    assert result.runs == 2


def test_only_unlistable_inputs_write_nothing(inputs, monkeypatch):
    _refuse(monkeypatch, "locked", PermissionError(13, "Permission denied", str(inputs / "locked")))
    result = _import(inputs, "locked")
    assert len(result.errors) == 1 and result.runs == 0 and not (inputs / "out").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a folder without read permission")
def test_a_folder_made_unreadable_with_chmod_000(inputs):
    locked = inputs / "locked"
    locked.chmod(0)
    try:
        result = _import(inputs, "locked", "good")
    finally:
        locked.chmod(0o755)
    assert [str(e) for e in result.errors] == [f"{locked}: cannot list this directory (Permission denied)"]
    assert result.runs == 2


@pytest.mark.slow
def test_cli_inspect_directory_that_cannot_be_listed_is_one_line_and_the_others_convert(
    tmp_path, inspect_logs, monkeypatch
):
    pytest.importorskip("inspect_ai")
    locked = tmp_path / "locked"
    locked.mkdir()
    _refuse(monkeypatch, "locked", PermissionError(13, "Permission denied", str(locked)))
    args = ["import", "inspect", str(locked), str(inspect_logs["json"]), "-o", str(tmp_path / "out"), "--workers", "1"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert f"{locked}: cannot list this directory (Permission denied)\n" in res.stderr
    assert f"{inspect_logs['json']}: " in res.stdout and "-> " in res.stdout  # the other log converted
