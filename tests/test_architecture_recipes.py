"""docs/architecture.md's "To add X, edit Y" table stays true, and its worked examples run."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _recipes() -> str:
    section = DOC[DOC.index("## To add X, edit Y") : DOC.index("## Packages and dependency rule")]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))  # the table


def test_every_file_the_table_names_exists():
    for path in re.findall(r"`((?:evalkit|judges)/[\w/<>.]+\.py)`", _recipes()):
        if "<" in path:  # a pattern: its folder must exist
            assert (ROOT / path).parent.is_dir(), path
        else:
            assert (ROOT / path).is_file(), path


def test_every_registry_the_table_names_exists():
    from evalkit import cli, importers
    from evalkit.judges import output_modes

    assert isinstance(importers.BUILTIN, dict) and importers.BUILTIN
    assert isinstance(cli.COMMANDS, dict) and cli.COMMANDS
    assert output_modes.TABLE and output_modes.MODES == tuple(m.name for m in output_modes.TABLE)
    registry = importlib.import_module("evalkit.agreement.stats.registry")
    assert registry.STATISTICS


def test_every_command_module_is_registered():
    from evalkit import cli

    modules = sorted(
        p.stem for p in (ROOT / "evalkit" / "commands").glob("*.py") if "def register(" in p.read_text(encoding="utf-8")
    )
    assert sorted(m.rsplit(".", 1)[1] for m in cli.COMMAND_MODULES) == modules


def test_each_command_is_where_commands_says():
    """Each module registers exactly the commands COMMANDS names for it (a command it adds that
    COMMANDS does not name would be missing from `evalkit NAME` until another command loads it)."""
    import click

    from evalkit import cli

    for module in cli.COMMAND_MODULES:
        group = click.Group()
        importlib.import_module(module).register(group)
        assert sorted(group.commands) == sorted(n for n, m in cli.COMMANDS.items() if m == module), module


def test_worked_example_an_importer_is_one_file_and_one_registry_line(tmp_path, monkeypatch):
    package = tmp_path / "myplugins"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "csvlog.py").write_text("""
from evalkit.importers.options import ImportOption


class CsvLogImporter:
    name = "csvlog"
    summary = "one run per CSV file"
    cli_options = (ImportOption("model", "model name for the runs where the input does not record it"),
                   ImportOption("flavour", "a flag only this format has"))

    def convert(self, path, model=None, flavour=None):
        return [[
            {"type": "meta", "run_id": "csv-1", "scenario": {"id": "s", "ground_truth": {"procedure": []}},
             "adapter": {"provider": "x", "model": model or "m"}, "tool_surface": []},
            {"type": "setup"},
            {"type": "final", "reason": "agent_done", "success_eval": {"final_state": [], "ecam_clear_of": [],
                                                                     "all_passed": flavour == "good"}},
        ]]


IMPORTER = CsvLogImporter()
""")
    monkeypatch.syspath_prepend(str(tmp_path))
    from evalkit import importers
    from evalkit.cli import cli
    from evalkit.commands import imports

    monkeypatch.setitem(importers.BUILTIN, "csvlog", "myplugins.csvlog:IMPORTER")
    monkeypatch.setattr(imports.import_command, "_format_params", None)  # rebuilt with the new format
    source = tmp_path / "in.csv"
    source.write_text("x\n")
    out = tmp_path / "runs"
    runner = CliRunner()
    assert "--flavour" in runner.invoke(cli, ["import", "--help"]).output
    res = runner.invoke(cli, ["import", "csvlog", str(source), "-o", str(out), "--model", "m", "--flavour", "good"])
    assert res.exit_code == 0, res.output
    assert (out / "csv-1.jsonl").is_file()
    sys.modules.pop("myplugins.csvlog", None)
    sys.modules.pop("myplugins", None)


def test_worked_example_an_output_mode_is_one_record(monkeypatch):
    from evalkit.cli import cli
    from evalkit.judges import output_modes as om

    mine = om.OutputMode("mine", lambda fmt, schema: {"extra_body": {"format": "json"}}, None, True)
    table = (*om.TABLE, mine)
    monkeypatch.setattr(om, "TABLE", table)
    monkeypatch.setattr(om, "BY_NAME", {m.name: m for m in table})
    monkeypatch.setattr(om, "MODES", tuple(m.name for m in table))
    assert om.request_shape("mine", {"json_schema": {"schema": {}}}) == {"extra_body": {"format": "json"}}
    assert om.schema_in_prompt("mine")
    assert "mine" in CliRunner().invoke(cli, ["judge", "--help"]).output


def test_worked_example_a_report_section_is_one_part_and_one_list_line(tmp_path, monkeypatch):
    """A section built of document blocks and listed in PARTS shows in both outputs, emitters unchanged."""
    import report_fixtures as rf

    from evalkit.present.document import Grid, Lit, Para, Section
    from evalkit.report import build_report, render_html, render_markdown, sections

    def commands(report, links):
        rows = [[s["scenario_id"], Lit(str(s["runs"]))] for s in report["scenarios"]]
        blocks = [Para(Lit("One row per scenario."), "lede"), Grid(["scenario", "n"], rows)]
        return Section(Lit("Runs per scenario"), blocks, anchor="commands")

    monkeypatch.setattr(sections, "PARTS", [*sections.PARTS, commands])
    rf.score_into(tmp_path / "evalkit.db", [rf.EXAMPLES / "a320" / "a320-opus-4-8-full-procedure.jsonl"])
    report = build_report(tmp_path / "evalkit.db", made_at="2026-01-01T00:00:00Z")
    scenario = report["scenarios"][0]["scenario_id"]
    assert (
        '<section id="commands"><h2>Runs per scenario</h2><p class="lede">One row per scenario.</p>'
        f'<div class="table-wrap"><table><thead><tr><th>scenario</th><th>n</th></tr></thead><tbody><tr><td>{scenario}</td>'
    ) in render_html(report)
    assert f"## Runs per scenario\n\nOne row per scenario.\n\n| scenario | n |\n|---|---|\n| {scenario} | 1 |\n" in (
        render_markdown(report)
    )
