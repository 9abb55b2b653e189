"""`evalkit import`'s format flags are generated from the importers' own declarations (cli_options)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from loaded_modules import loaded_after

from evalkit import importers
from evalkit.cli import cli
from evalkit.importers.options import ImportOption, merge


def _help() -> str:
    res = CliRunner().invoke(cli, ["import", "--help"])
    assert res.exit_code == 0, res.output
    return res.output


def test_every_declared_option_of_every_builtin_is_a_flag():
    text = _help()
    for name, importer in importers.loaded():
        for option in importer.cli_options:
            assert option.flag in text, (name, option.flag)


def test_a_shared_option_is_one_flag_and_one_help_when_the_texts_agree():
    text = " ".join(_help().split())
    assert text.count("--model ") == 1
    assert (
        "atif, auto, mini-swe-agent, openai-messages, openhands, otel, swe-agent, tau2, taubench: "
        "model name for the runs where the input does not record it"
    ) in text


def test_a_plugin_declaring_an_option_gets_its_flag(monkeypatch):
    plugin = SimpleNamespace(
        name="mine",
        summary="mine",
        cli_options=(ImportOption("flavour", "how it tastes"),),
        convert=lambda path, **o: [],
    )
    real_loaded = importers.loaded
    monkeypatch.setattr(importers, "loaded", lambda: [*real_loaded(), ("mine", plugin)])
    from evalkit.commands import imports

    command = imports.ImportCommand(
        "import", params=list(imports.import_command.params), callback=imports.import_command.callback
    )
    with command.make_context("import", ["--help"], resilient_parsing=True) as ctx:
        flags = {opt for p in command.get_params(ctx) for opt in getattr(p, "opts", [])}
    assert "--flavour" in flags and "--model" in flags


def test_an_option_given_to_a_format_that_did_not_declare_it_is_a_usage_error(tmp_path):
    f = tmp_path / "x.json"
    f.write_text("[]")
    res = CliRunner().invoke(
        cli, ["import", "taubench", str(f), "-o", str(tmp_path / "o"), "--model", "m", "--dialect", "openai"]
    )
    assert res.exit_code == 2 and "--dialect is not used by format taubench" in res.output


def test_two_formats_declaring_one_name_with_different_kinds_is_refused():
    a = SimpleNamespace(cli_options=(ImportOption("limit", "a", "float"),))
    b = SimpleNamespace(cli_options=(ImportOption("limit", "b", "text"),))
    with pytest.raises(ValueError, match="--limit: format b declares it as text, format a as float"):
        merge([("a", a), ("b", b)])


def test_helps_that_differ_are_joined_with_their_formats():
    a = SimpleNamespace(cli_options=(ImportOption("model", "from a"),))
    b = SimpleNamespace(cli_options=(ImportOption("model", "from b"),))
    c = SimpleNamespace(cli_options=(ImportOption("model", "from a"),))
    (merged,) = merge([("a", a), ("b", b), ("c", c)])
    assert merged.help == "a, c: from a; b: from b"


def test_top_level_help_loads_no_importer():
    code = "from click.testing import CliRunner\nfrom evalkit.cli import cli\nCliRunner().invoke(cli, ['--help'])"
    assert loaded_after(code, "evalkit.importers") == []


def test_a_directory_without_the_formats_files_is_one_error_line_not_a_traceback(tmp_path):
    pytest.importorskip("inspect_ai")
    empty = tmp_path / "logs"
    empty.mkdir()
    res = CliRunner().invoke(cli, ["import", "inspect", str(empty), "-o", str(tmp_path / "out")])
    assert res.exit_code == 1, res.output
    assert res.output == f"{empty}: no inspect_ai logs (*.eval, *.json) in this directory\n"
    assert res.exception is None or isinstance(res.exception, SystemExit)
