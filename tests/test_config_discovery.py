"""One discovery rule and one merge rule for every configuration (evalkit.config.files)."""

from __future__ import annotations

import pytest

from evalkit.config.files import find_user_config, load_layered, merge_config

NAMES = ["judge", "pairings", "probes", "contamination"]


@pytest.mark.parametrize("name", NAMES)
def test_discovery_order_is_flag_then_environment_then_dot_evalkit(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(f"EVALKIT_{name.upper()}_CONFIG", raising=False)
    assert find_user_config(name) is None
    (tmp_path / ".evalkit").mkdir()
    (tmp_path / ".evalkit" / f"{name}.toml").write_text("")
    assert str(find_user_config(name)) == f".evalkit/{name}.toml"
    monkeypatch.setenv(f"EVALKIT_{name.upper()}_CONFIG", "from-env.toml")
    assert str(find_user_config(name)) == "from-env.toml"
    assert str(find_user_config(name, "flag.toml")) == "flag.toml"


def test_tables_merge_key_by_key_and_named_tables_by_name():
    base = {"a": {"x": 1, "y": 2}, "pairing": [{"name": "p", "v": 1}, {"name": "q", "v": 1}], "list": [1, 2]}
    user = {"a": {"y": 3}, "pairing": [{"name": "q", "v": 2}, {"name": "r", "v": 3}], "list": [9]}
    assert merge_config(base, user) == {
        "a": {"x": 1, "y": 3},
        "pairing": [{"name": "p", "v": 1}, {"name": "q", "v": 2}, {"name": "r", "v": 3}],
        "list": [9],
    }
    assert base["a"] == {"x": 1, "y": 2}  # neither input is changed


def test_replace_defaults_drops_the_shipped_file(tmp_path):
    shipped, user = tmp_path / "s.toml", tmp_path / "u.toml"
    shipped.write_text("[a]\nx = 1\n")
    user.write_text("replace_defaults = true\n[b]\ny = 2\n")
    assert load_layered("thing", user, shipped=shipped) == ({"b": {"y": 2}}, str(user))


def test_a_declaration_is_taken_whole(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".evalkit").mkdir()
    (tmp_path / ".evalkit" / "contamination.toml").write_text(
        '[contamination]\ndeclared = true\ndeclared_by = "me"\nreviewed = "2026-12-01"\nstatement = "ours"\n'
        "evidence = []\npublic_sources = []\n"
    )
    from evalkit.report.contamination import load_contamination

    got = load_contamination()
    assert got["declared"] is True and got["statement"] == "ours" and got["source"] == "contamination.toml"


def test_the_judge_config_is_found_in_dot_evalkit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALKIT_JUDGE_CONFIG", raising=False)
    (tmp_path / ".evalkit").mkdir()
    (tmp_path / ".evalkit" / "judge.toml").write_text("[request]\nmax_tokens = 77\n")
    from evalkit.judges.config import load_config

    assert load_config().max_tokens == 77


def test_the_probes_config_is_found_in_dot_evalkit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".evalkit").mkdir()
    (tmp_path / ".evalkit" / "probes.toml").write_text('[verbosity]\nparagraphs = ["zzz"]\n')
    from evalkit.probes.config import load_probes_config

    assert load_probes_config().verbosity.paragraphs == ["zzz"]
    assert load_probes_config().injection is not None  # the other tables still come from the shipped file
