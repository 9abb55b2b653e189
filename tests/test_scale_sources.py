"""One directory-search rule for every reader of trajectory files: evalkit.trajectory.reader's
expand_paths goes through evalkit.engines.sources.expand (the engines' search), so the ratings.jsonl
an importer writes is skipped by one rule, and URLs stay as given for the in-process reader."""
from __future__ import annotations

from evalkit.engines import sources
from evalkit.trajectory import reader
from evalkit.trajectory.builders import a320_scenario, trajectory, write_jsonl


def test_expand_paths_uses_the_engines_skip_rule(tmp_path, monkeypatch):
    for name in ("a.jsonl", "ratings.jsonl", "other.jsonl"):
        write_jsonl(tmp_path / name, trajectory(a320_scenario(), [], run_id=name))
    assert list(reader.expand_paths([tmp_path])) == [str(tmp_path / "a.jsonl"), str(tmp_path / "other.jsonl")]
    monkeypatch.setattr(sources, "RATINGS_FILE", "other.jsonl")  # the one copy of the rule
    assert list(reader.expand_paths([tmp_path])) == [str(tmp_path / "a.jsonl"), str(tmp_path / "ratings.jsonl")]


def test_expand_paths_and_the_engines_list_the_same_files(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("d/b.jsonl", "d/e/a.jsonl", "ratings.jsonl", "d/ratings.jsonl", "z.txt"):
        (tmp_path / name).write_text("{}\n")
    named = [str(tmp_path / "ratings.jsonl"), str(tmp_path), "-"]
    assert list(reader.expand_paths(named)) == list(sources.expand(named)) == [
        str(tmp_path / "ratings.jsonl"), str(tmp_path / "d" / "b.jsonl"), str(tmp_path / "d" / "e" / "a.jsonl"), "-"]


def test_expand_paths_leaves_a_url_as_given(monkeypatch):
    monkeypatch.setattr(sources, "expand_url", lambda url: (_ for _ in ()).throw(AssertionError(url)))
    assert list(reader.expand_paths(["s3://bucket/runs/"])) == ["s3://bucket/runs/"]
