"""evalkit import auto: the format sniffed from each file's content."""

from __future__ import annotations

import json

import pytest
from agent_log_helpers import import_, records, trace, write


@pytest.mark.parametrize(
    "fmt, relative",
    [
        ("atif", "atif/atif_v1.5_terminus-2_hermes-4-70b_et-8863b346.trajectory.json"),
        ("swe-agent", "swe-agent/sweagent_1.0_gpt4o_test-repo_6e44b9.traj"),
        ("swe-agent", "swe-agent/sweagent_0.x_gpt4_test-repo-i1.traj"),
        ("mini-swe-agent", "mini-swe-agent/mswea_v1.13.4_claude-sonnet_hello-world.traj.json"),
        ("openhands", "openhands/oh_events_basic.json"),
    ],
)
def test_real_files_import_as_their_format_would(tmp_path, fmt, relative):
    src = trace(relative)
    import_("auto", src, "-o", tmp_path / "auto", "--model", "gpt4")
    import_(fmt, src, "-o", tmp_path / "named", "--model", "gpt4")
    auto, named = sorted((tmp_path / "auto").iterdir()), sorted((tmp_path / "named").iterdir())
    assert [p.name for p in auto] == [p.name for p in named]
    assert [p.read_bytes() for p in auto] == [p.read_bytes() for p in named]


def test_model_is_passed_only_where_the_format_uses_it(tmp_path):
    """openai-messages JSONL (sniffed from its first line) takes --model; the runs carry it."""
    line = {
        "id": "r1",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "success": True,
    }
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps(line) + "\n" + json.dumps(dict(line, id="r2")) + "\n")
    import_("auto", src, "-o", tmp_path / "out", "--model", "acme/m")
    assert sorted(r[0]["run_id"] for r in records(tmp_path / "out")) == ["r1:acme/m", "r2:acme/m"]


def test_tau2_results_file_is_sniffed(tmp_path):
    src = write(tmp_path / "r.json", {"info": {}, "simulations": []})
    result = import_("auto", src, "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1 and "info.agent_info.llm does not name the model" in result.output  # tau2 read it


def test_option_the_sniffed_format_does_not_use_is_an_error(tmp_path):
    src = write(tmp_path / "r.json", {"info": {"x": 1}, "simulations": []})
    result = import_("auto", src, "-o", tmp_path / "out", "--scenario", "s", ok=False)
    assert result.exit_code == 1 and "sniffed as tau2, which does not use --scenario" in result.output


def test_content_no_format_fits_names_the_formats_tried(tmp_path):
    (tmp_path / "a.json").write_text('{"hello": "world"}')
    (tmp_path / "b.txt").write_text("not json at all\n")
    result = import_("auto", tmp_path / "a.json", tmp_path / "b.txt", "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "no known format fits" in line]
    assert len(lines) == 2 and all(
        "(tried atif, mini-swe-agent, swe-agent, openhands, tau2, taubench, inspect, otel, openai-messages)" in line
        for line in lines
    )
    assert "Traceback" not in result.output


@pytest.mark.parametrize("fmt", ["auto", "otel", "openhands"])
def test_a_pretty_printed_file_cut_short_is_reported_where_it_ends_not_at_line_1(tmp_path, fmt):
    text = json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"spans": []}]}]} if fmt != "openhands" else [{"id": 0}], indent=2
    )
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) - 4])
    result = import_(fmt, cut, "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.output
    last = text[: len(text) - 4].count("\n") + 1
    assert f"cut.json:{last}: not valid JSON: the file ends inside a JSON value (EOF while parsing" in result.output


def test_an_empty_file_is_said_empty(tmp_path):
    (tmp_path / "empty.json").write_text("\n \n")
    result = import_("auto", tmp_path / "empty.json", "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1 and "empty.json: empty file: no known format fits (tried atif," in result.output


TRACES_IN_A_FOLDER = (
    ("atif", "atif/atif_v1.5_terminus-2_hermes-4-70b_et-8863b346.trajectory.json"),
    ("mini-swe-agent", "mini-swe-agent/mswea_v1.13.4_claude-sonnet_hello-world.traj.json"),
    ("openhands", "openhands/oh_events_basic.json"),
)


def test_a_directory_is_searched_for_every_format_and_harbor_results_are_read_with_their_trajectory(tmp_path):
    folder = tmp_path / "traces"
    harbor = "atif/atif_v1.5_terminus-2_hermes-4-70b_et-8863b346.result.json"  # read by its trajectory
    for relative in [r for _, r in TRACES_IN_A_FOLDER] + [harbor]:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(trace(relative).read_bytes())
    (folder / "README.md").write_text("not a trace")  # not a trace's name: never read
    import_("auto", folder, "-o", tmp_path / "auto", "--model", "gpt4")
    for fmt, relative in TRACES_IN_A_FOLDER:
        import_(fmt, folder / relative, "-o", tmp_path / "named", "--model", "gpt4")
    auto, named = sorted((tmp_path / "auto").iterdir()), sorted((tmp_path / "named").iterdir())
    assert len(auto) == 3 and [p.name for p in auto] == [p.name for p in named]
    assert [p.read_bytes() for p in auto] == [p.read_bytes() for p in named]


def test_a_tau2_run_folder_given_whole_or_as_its_results_file_is_sniffed(tmp_path):
    from test_import_tau2_folder import FIX, _folder

    one = tmp_path / "one"
    import_("tau2", FIX, "-o", one)
    folder = _folder(tmp_path, json.loads(FIX.read_text()))
    for given in (folder, folder / "results.json"):
        out = tmp_path / f"auto-{given.name}"
        import_("auto", given, "-o", out)
        assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in one.iterdir())


def test_a_directory_without_any_trace_file_is_one_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    result = import_("auto", tmp_path / "empty", "-o", tmp_path / "out", ok=False)
    assert result.exit_code == 1
    assert "no *.json, *.jsonl, *.traj, *.eval file in this directory" in result.output
