"""Importer registry (built-ins + entry-point plugins), the deterministic writer, and `evalkit import`."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner
from import_helpers import among, modules_loaded_by

import evalkit.importers as importers
from evalkit.cli import cli
from evalkit.importers.writer import commit, dumps_record, dumps_run, file_name, stage
from evalkit.scoring import score_trajectory
from evalkit.trajectory.reader import read_trajectory

FIX = Path(__file__).parent / "fixtures"
AIRLINE = FIX / "taubench" / "airline_results.json"
BAD = FIX / "taubench" / "bad_arguments.json"
MESSAGES = FIX / "openai_messages" / "transcripts.jsonl"

PLUGIN = '''
def convert(path, **options):
    """Demo format: one run per non-empty line (a tool name)."""
    runs = []
    for i, line in enumerate(open(path).read().split()):
        scenario = {"id": "demo", "ground_truth": {"procedure": [
            {"block": "b", "actions": [{"tool": "go", "args": {}}]}]}}
        runs.append([
            {"type": "meta", "run_id": f"demo-{i}", "scenario": scenario,
             "adapter": {"model": options.get("model", "m")}, "tool_surface": ["go", "stop"]},
            {"type": "setup", "sim_time": 0},
            {"type": "tool_call", "step": 1, "call_index": 0, "name": line, "args": {}, "result": "ok", "is_error": False},
            {"type": "final", "reason": "agent_done",
             "success_eval": {"final_state": [], "ecam_clear_of": [], "all_passed": line == "go"}},
        ])
    return runs
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "demo_importer_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [
        metadata.EntryPoint(name="demo", value="demo_importer_plugin:convert", group=importers.ENTRY_POINT_GROUP),
        metadata.EntryPoint(name="taubench", value="demo_importer_plugin:convert", group=importers.ENTRY_POINT_GROUP),
    ]

    def entry_points(group=None):
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(importers.metadata, "entry_points", entry_points)
    return tmp_path


def test_builtin_importers_are_registered():
    names = importers.available()
    assert names["openai-messages"] == "builtin" and names["taubench"] == "builtin"
    assert list(names) == sorted(names)
    assert importers.supported_options(importers.get_importer("taubench")) == ("model", "domain")
    assert importers.supported_options(importers.get_importer("openai-messages")) == ("model", "dialect", "scenarios")
    with pytest.raises(KeyError, match="unknown import format 'nope'; known: .*taubench"):
        importers.get_importer("nope")


def test_entry_point_plugin_is_loaded_and_used(plugin, tmp_path):
    assert importers.available()["demo"] == "demo_importer_plugin:convert"
    imp = importers.get_importer("demo")
    assert imp.name == "demo" and imp.summary.startswith("Demo format")
    src = tmp_path / "in.txt"
    src.write_text("go\nstop\n")
    out = tmp_path / "out"
    result = importers.import_files("demo", [src], out, model="plug-model")
    assert not result.errors and result.runs == 2
    cards = sorted((score_trajectory(read_trajectory(p)) for p in out.glob("*.jsonl")), key=lambda c: c.run_id)
    assert [(c.run_id, c.model, c.vector.coverage, c.vector.all_passed) for c in cards] == [
        ("demo-0", "plug-model", 1.0, True),
        ("demo-1", "plug-model", 0.0, False),
    ]


def test_plugin_cannot_shadow_a_builtin(plugin):
    assert importers.available()["taubench"] == "builtin"
    from evalkit.importers.formats.taubench import IMPORTER

    assert importers.get_importer("taubench") is IMPORTER


def test_writer_puts_type_first_and_sorts_every_other_key():
    line = dumps_record({"z": 1, "type": "meta", "a": {"y": [1, {"d": 1, "c": 2}], "x": "é"}})
    assert line == '{"type":"meta","a":{"x":"é","y":[1,{"c":2,"d":1}]},"z":1}'
    assert dumps_record({"type": "setup"}) == '{"type":"setup"}'
    with pytest.raises(ValueError):
        dumps_record({"type": "final", "v": float("nan")})


def test_file_names_are_portable_and_distinct():
    assert file_name("plain-run_1.0") == "plain-run_1.0.jsonl"
    a, b = file_name("t:openai/gpt-4o:trial0"), file_name("t_openai_gpt-4o_trial0")
    assert a != b and "/" not in a and ":" not in a
    assert file_name("../../etc/passwd").startswith("etc_passwd-")


def test_write_is_all_or_nothing(tmp_path):
    runs = [[{"type": "meta", "run_id": "r1"}], [{"type": "meta", "run_id": "r2"}]]
    texts = [(file_name(run[0]["run_id"]), dumps_run(run)) for run in runs]
    out = tmp_path / "out"
    out.mkdir()
    (out / ("r2.jsonl" + ".evalkit-import-tmp")).mkdir()  # the second file cannot be written
    with pytest.raises(OSError):
        stage(texts, out)
    assert [p.name for p in out.iterdir()] == ["r2.jsonl.evalkit-import-tmp"]
    (out / "r2.jsonl.evalkit-import-tmp").rmdir()
    assert commit(stage(texts, out)) == [str(out / "r1.jsonl"), str(out / "r2.jsonl")]
    assert (out / "r1.jsonl").read_bytes() == b'{"type":"meta","run_id":"r1"}\n'


def test_same_run_id_from_two_inputs_is_an_error_for_the_later_one(tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_bytes(AIRLINE.read_bytes())
    result = importers.import_files("taubench", [AIRLINE, copy], tmp_path / "out", model="m")
    (error,) = result.errors
    assert str(error).startswith(f"{copy}: run_id 'tau-airline-")
    assert f"already imported from {AIRLINE}" in str(error)
    assert list(result.written) == [str(AIRLINE)]


def test_cli_import_then_score(tmp_path):
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(cli, ["import", "taubench", str(AIRLINE), "-o", str(out), "--model", "openai/gpt-4o"])
    assert res.exit_code == 0, res.output
    assert res.stdout == f"{AIRLINE}: 9 runs -> {out}\n"
    score = runner.invoke(cli, ["score", str(out), "--no-db", "--aggregate", "--format", "json"])
    assert score.exit_code == 0, score.output
    (model,) = json.loads(score.stdout)["models"]
    assert model["pass_hat_k"] == pytest.approx([2 / 3, 4 / 9, 1 / 3])


def test_cli_bad_input_is_one_line_and_exit_1(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["import", "taubench", str(BAD), str(AIRLINE), "-o", str(out), "--model", "m"])
    assert res.exit_code == 1
    assert res.stdout == f"{AIRLINE}: 9 runs -> {out}\n"
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"{BAD}:123: record 1 (task_id 0, trial 3): ") and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["import", "nope", str(AIRLINE), "-o", "x"], "unknown import format 'nope'"),
        (
            ["import", "openai-messages", str(MESSAGES), "-o", "x", "--domain", "airline"],
            "--domain is not used by format openai-messages",
        ),
        (["import", "taubench", str(AIRLINE)], "missing -o/--out"),
        (["import", "taubench", str(AIRLINE), "-o", "x"], "format taubench needs --model"),
        (["import", "taubench", "-o", "x"], "missing FILE"),
        (["import", "taubench", "does-not-exist.json", "-o", "x"], "does not exist"),
    ],
)
def test_cli_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and message in res.stderr
    assert not (tmp_path / "x").exists()


def test_cli_lists_formats():
    res = CliRunner().invoke(cli, ["import", "--list"])
    assert res.exit_code == 0
    assert "openai-messages\tbuiltin" in res.stdout.splitlines() and "taubench\tbuiltin" in res.stdout.splitlines()


def test_command_module_imports_only_click_and_stdlib():
    loaded = modules_loaded_by("import evalkit.commands.imports")
    assert among(loaded, ("evalkit.importers", "pydantic", "litellm", "numpy", "scipy", "sqlite_utils")) == []


def test_imported_trajectory_validates_as_an_evalkit_trajectory(tmp_path):
    out = tmp_path / "out"
    importers.import_files("taubench", [AIRLINE], out, model="m")
    for path in sorted(out.glob("*.jsonl")):
        traj = read_trajectory(path)
        assert traj.unknown_records == 0 and traj.setup is not None and traj.final is not None
        kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
        assert kinds[:2] == ["meta", "setup"] and kinds[-1] == "final"
        assert set(kinds[2:-1]) <= {"assistant", "nudge", "tool_call"}
        assert traj.meta.tool_surface == sorted(traj.meta.tool_surface)
        assert traj.final.tool_calls_used == sum(1 for k in kinds if k == "tool_call")
