"""Directory expansion says what it skips: every entry of a searched directory that could be a
trajectory but is not read (a FIFO, a socket, a device, a dangling or looping link, a link to a
directory, a directory that cannot be listed) is one warning line naming it and why. Named
explicitly, such entries stay errors. Regular trees expand exactly as before."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli
from evalkit.engines.sources import RATINGS_FILE, expand_paths
from evalkit.trajectory import input_files
from evalkit.trajectory.builders import a320_scenario, trajectory, write_jsonl


def run(path: Path, run_id: str = "r1") -> Path:
    return write_jsonl(path, trajectory(a320_scenario(), [], run_id=run_id))


def expand(root: Path | str) -> tuple[list[str], list[str]]:
    warnings: list[str] = []
    return list(expand_paths([str(root)], warnings.append)), warnings


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    run(root / "a.jsonl", "a")
    return root


def test_fifo_in_a_directory_is_skipped_with_a_warning(tree):
    os.mkfifo(tree / "pipe.jsonl")
    files, warnings = expand(tree)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [f"{tree / 'pipe.jsonl'}: warning: skipped: a FIFO, not a regular file"]


def test_socket_in_a_directory_is_skipped_with_a_warning(tree):
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tree / "s.jsonl"))
        files, warnings = expand(tree)
    finally:
        sock.close()
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [f"{tree / 's.jsonl'}: warning: skipped: a socket, not a regular file"]


def test_device_link_in_a_directory_is_skipped_with_a_warning(tree):
    (tree / "null.jsonl").symlink_to("/dev/null")
    _, warnings = expand(tree)
    assert warnings == [f"{tree / 'null.jsonl'}: warning: skipped: a character device, not a regular file"]


def test_dangling_symlink_in_a_directory_is_skipped_with_a_warning(tree):
    (tree / "gone.jsonl").symlink_to(tree / "missing.jsonl")
    files, warnings = expand(tree)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [
        f"{tree / 'gone.jsonl'}: warning: skipped: a symbolic link to nothing (No such file or directory)"
    ]


def test_symlink_loop_in_a_directory_is_skipped_with_a_warning(tree):
    (tree / "loop.jsonl").symlink_to(tree / "loop.jsonl")
    _, warnings = expand(tree)
    assert warnings == [
        f"{tree / 'loop.jsonl'}: warning: skipped: a symbolic link to nothing (Too many levels of symbolic links)"
    ]


def test_symlinked_directory_is_not_followed_and_says_so(tree, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run(elsewhere / "b.jsonl", "b")
    (tree / "more").symlink_to(elsewhere, target_is_directory=True)
    files, warnings = expand(tree)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [
        f"{tree / 'more'}: warning: skipped: a symbolic link to a directory (not followed; name it to score it)"
    ]


def test_unlistable_folder_is_skipped_with_a_warning(tree, monkeypatch):
    """As a folder without read permission (simulated: the tests may run as root, who reads anything)."""
    (tree / "locked").mkdir()
    run(tree / "locked" / "x.jsonl", "x")
    real = os.scandir

    def scandir(path):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(input_files.os, "scandir", scandir)
    files, warnings = expand(tree)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [f"{tree / 'locked'}: warning: skipped: cannot list this directory (Permission denied)"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder without read permission")
def test_unreadable_folder_is_skipped_with_a_warning(tree):
    locked = tree / "locked"
    locked.mkdir()
    run(locked / "x.jsonl", "x")
    locked.chmod(0)
    try:
        files, warnings = expand(tree)
    finally:
        locked.chmod(0o755)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [f"{locked}: warning: skipped: cannot list this directory (Permission denied)"]


def test_warnings_come_in_path_order_whatever_the_listing_order(tree):
    for name in ("z", "b", "m"):
        (tree / name).mkdir()
        os.mkfifo(tree / name / "p.jsonl")
    _, warnings = expand(tree)
    assert [w.split(": ")[0] for w in warnings] == [str(tree / n / "p.jsonl") for n in ("b", "m", "z")]


def _rglob_expansion(root: Path) -> list[str]:
    """The expansion before it warned (pathlib's rglob: symlinked directories not followed)."""
    return [
        str(c) for c in sorted(root.rglob("*.jsonl"), key=lambda p: p.parts) if c.is_file() and c.name != RATINGS_FILE
    ]


def test_regular_trees_expand_as_before(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    for rel in (
        "a.jsonl",
        "b/c.jsonl",
        "b/d/e.jsonl",
        ".hidden/f.jsonl",
        "b.x/g.jsonl",
        "dir.jsonl/h.jsonl",
        "z.jsonl",
        "B/i.jsonl",
        "b-c/j.jsonl",
        "k.JSONL",
        "notes.txt",
        RATINGS_FILE,
        "b/" + RATINGS_FILE,
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        run(root / rel, rel)
    (root / "link.jsonl").symlink_to(root / "a.jsonl")
    for where in (root, root / "b", str(root) + "/", str(root) + "//b"):
        files, warnings = expand(where)
        assert files == _rglob_expansion(Path(where)) and warnings == []
    monkeypatch.chdir(root)
    assert expand(Path("."))[0] == _rglob_expansion(Path(".")) and "a.jsonl" in expand(Path("."))[0]


def test_named_explicitly_a_fifo_is_still_an_error(tmp_path):
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    assert list(expand_paths([str(tmp_path / "pipe.jsonl"), str(tmp_path / "gone.jsonl")])) == [
        str(tmp_path / "pipe.jsonl"),
        str(tmp_path / "gone.jsonl"),
    ]  # passed on to the reader, which refuses them
    result = CliRunner().invoke(cli, ["score", str(tmp_path / "pipe.jsonl"), "--no-db"])
    assert result.exit_code == 1 and "pipe.jsonl: cannot read: a FIFO, not a regular file" in result.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_score_prints_each_skip_once_and_scores_the_rest(tmp_path, workers):
    root = tmp_path / "runs"
    for i in range(40):
        run(root / f"p{i // 20}" / f"r{i:02d}.jsonl", f"r{i:02d}")
    os.mkfifo(root / "p1" / "pipe.jsonl")
    (root / "p0" / "gone.jsonl").symlink_to(root / "missing.jsonl")
    result = CliRunner().invoke(cli, ["score", str(root), "--no-db", "--format", "csv", "--workers", workers])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"{root / 'p0' / 'gone.jsonl'}: warning: skipped: a symbolic link to nothing (No such file or directory)",
        f"{root / 'p1' / 'pipe.jsonl'}: warning: skipped: a FIFO, not a regular file",
    ]
    assert len(result.stdout.splitlines()) == 41


def test_a_directory_of_skipped_entries_says_why_nothing_was_found(tmp_path):
    os.mkfifo(tmp_path / "pipe.jsonl")
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'pipe.jsonl'}: warning: skipped: a FIFO, not a regular file",
        f"error: no trajectory files (*.jsonl) found in: {tmp_path} (see 'cli score -h')",  # CliRunner's program name
    ]


def test_a_compressed_run_in_a_directory_is_skipped_with_a_warning_not_silently(tree):
    import gzip

    (tree / "b.jsonl.gz").write_bytes(gzip.compress((tree / "a.jsonl").read_bytes()))
    (tree / "c.json.gz").write_bytes(b"")  # another name: left alone, as any other file
    files, warnings = expand(tree)
    assert files == [str(tree / "a.jsonl")]
    assert warnings == [
        f"{tree / 'b.jsonl.gz'}: warning: skipped: compressed (evalkit reads plain files: decompress it to score it)"
    ]


@pytest.mark.parametrize(
    ("head", "said"),
    [
        (b"\x1f\x8b\x08\x00", "the file is gzip-compressed (decompress it first: gunzip)"),
        (b"\xff\xfe{\x00", "the file is UTF-16 text (write it as UTF-8)"),
        (b"PK\x03\x04\x14", "the file is a zip archive (extract it first)"),
    ],
)
def test_a_compressed_or_utf16_file_named_explicitly_is_an_error_saying_what_it_is(tmp_path, head, said):
    path = tmp_path / "r.jsonl"
    path.write_bytes(head + b"\x00\x9c" * 8 + b"\n")
    result = CliRunner().invoke(cli, ["score", str(path), "--no-db"])
    assert result.exit_code == 1
    assert f"error: {path}:1: invalid UTF-8: {said}" in result.stderr.splitlines()


def test_a_directory_of_runs_named_json_says_what_it_holds(tmp_path):
    run(tmp_path / "a.json")
    (tmp_path / "scenarios.json").write_text("[]")  # the scenario file is not counted
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db"])
    assert result.exit_code == 2
    assert (
        f"no trajectory files (*.jsonl) found in: {tmp_path}; it holds 1 *.json file(s): a run is JSONL named "
        "*.jsonl, and another harness's files are converted with 'evalkit import auto DIR -o runs/'"
    ) in result.stderr
