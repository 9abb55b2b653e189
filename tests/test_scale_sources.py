"""One directory-search rule for every reader of trajectory files: evalkit.trajectory.reader's
expand_paths goes through evalkit.engines.sources.expand (the engines' search), so the ratings.jsonl
an importer writes is skipped by one rule, and URLs stay as given for the in-process reader."""

from __future__ import annotations

from evalkit.engines import sources
from evalkit.trajectory.builders import a320_scenario, trajectory, write_jsonl


def test_expand_paths_uses_the_engines_skip_rule(tmp_path, monkeypatch):
    for name in ("a.jsonl", "ratings.jsonl", "other.jsonl"):
        write_jsonl(tmp_path / name, trajectory(a320_scenario(), [], run_id=name))
    assert list(sources.expand_paths([tmp_path])) == [str(tmp_path / "a.jsonl"), str(tmp_path / "other.jsonl")]
    monkeypatch.setattr(sources, "RATINGS_FILE", "other.jsonl")  # the one copy of the rule
    assert list(sources.expand_paths([tmp_path])) == [str(tmp_path / "a.jsonl"), str(tmp_path / "ratings.jsonl")]


def test_expand_paths_and_the_engines_list_the_same_files(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("d/b.jsonl", "d/e/a.jsonl", "ratings.jsonl", "d/ratings.jsonl", "z.txt"):
        (tmp_path / name).write_text("{}\n")
    named = [str(tmp_path / "ratings.jsonl"), str(tmp_path), "-"]
    assert (
        list(sources.expand_paths(named))
        == list(sources.expand(named))
        == [
            str(tmp_path / "ratings.jsonl"),
            str(tmp_path / "d" / "b.jsonl"),
            str(tmp_path / "d" / "e" / "a.jsonl"),
            "-",
        ]
    )


def test_expand_paths_leaves_a_url_as_given(monkeypatch):
    monkeypatch.setattr(sources, "expand_url", lambda url: (_ for _ in ()).throw(AssertionError(url)))
    assert list(sources.expand_paths(["s3://bucket/runs/"])) == ["s3://bucket/runs/"]


def test_score_lists_a_directory_once_and_still_says_what_it_skipped_first(tmp_path, monkeypatch):
    import os

    from click.testing import CliRunner

    from evalkit.cli import cli
    from evalkit.trajectory import input_files

    for name in ("a.jsonl", "b.jsonl"):
        write_jsonl(tmp_path / name, trajectory(a320_scenario(), [], run_id=name))
    (tmp_path / "c.jsonl").write_text('{"type": "meta"\n')  # a bad file: its error comes after the skip
    os.symlink(tmp_path / "nowhere", tmp_path / "gone.jsonl")
    calls = []
    real = input_files.find_files
    monkeypatch.setattr(input_files, "find_files", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--no-db", "--format", "jsonl", "--workers", "1"])
    assert result.exit_code == 1 and result.stdout.count("\n") == 2
    lines = result.stderr.splitlines()
    assert "gone.jsonl: warning: skipped" in lines[0] and "c.jsonl" in lines[1] and len(calls) == 1


def test_a_file_removed_after_the_listing_is_that_files_error(tmp_path):
    """The listing's own entry type says a file is regular (no lstat per file, in the process that
    lists for every worker): a file removed after it is read, and its error is that file's."""
    import os

    from evalkit.engines.pipeline import score_files
    from evalkit.trajectory import input_files

    write_jsonl(tmp_path / "gone.jsonl", trajectory(a320_scenario(), [], run_id="gone"))
    write_jsonl(tmp_path / "kept.jsonl", trajectory(a320_scenario(), [], run_id="kept"))
    with os.scandir(tmp_path) as listing:
        entries = {e.name: e for e in listing}
    (tmp_path / "gone.jsonl").unlink()
    gone = entries["gone.jsonl"]
    assert input_files._entry_kind(gone, gone.path, ".jsonl") == input_files._READ
    cards, errors = score_files([str(tmp_path / "gone.jsonl"), str(tmp_path / "kept.jsonl")]).collect()
    assert len(errors) == 1 and "gone.jsonl" in str(errors[0])
    assert [c.run_id for c in cards] == ["kept"]
