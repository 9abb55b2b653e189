"""tau2-bench's run-folder layout (``results.json`` beside ``simulations/``, one file a simulation)
and full-duplex (voice) simulations recorded as ticks: the same runs as the one-file layout, the
user simulator's tool calls apart from the agent's. The real folder tau2-bench's own tests hold is
read from ../shared/traces/tau2 when that folder is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import cli

FIX = Path(__file__).parent / "fixtures" / "tau2" / "airline_results.json"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces" / "tau2" / "tau2_voice_dirformat"


def _folder(tmp_path: Path, doc: dict) -> Path:
    folder = tmp_path / "run"
    (folder / "simulations").mkdir(parents=True)
    sims = doc.pop("simulations")
    (folder / "results.json").write_text(json.dumps(doc))
    for i, sim in enumerate(sims):
        (folder / "simulations" / f"{i:03d}-{sim['task_id']}.json").write_text(json.dumps(sim))
    return folder


def _import(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["import", "tau2", *args])
    return res.exit_code, res.output


def _runs(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(out.glob("*.jsonl"))}


def test_a_run_folder_imports_the_same_runs_as_the_one_file(tmp_path):
    one = tmp_path / "one"
    code, msg = _import(str(FIX), "-o", str(one))
    assert code == 0, msg
    folder = _folder(tmp_path, json.loads(FIX.read_text()))
    for given in (folder, folder / "results.json"):
        out = tmp_path / f"out-{given.name}"
        code, msg = _import(str(given), "-o", str(out))
        assert code == 0, msg
        got, want = _runs(out), _runs(one)
        assert got.keys() == want.keys()
        # the runs are the same; only the recorded source file name may differ
        for name in want:
            assert got[name].replace("results.json", "X") == want[name].replace("airline_results.json", "X")


def test_a_folder_without_results_json_is_one_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    code, msg = _import(str(tmp_path / "empty"), "-o", str(tmp_path / "out"))
    assert code == 1 and "no results.json in this directory" in msg and "Traceback" not in msg


def _voice_doc() -> dict:
    doc = json.loads(FIX.read_text())
    task = doc["tasks"][0]
    sim = next(
        s
        for s in doc["simulations"]
        if s["task_id"] == task["id"] and s["termination_reason"] != "infrastructure_error"
    )
    text_doc = dict(doc, simulations=[json.loads(json.dumps(sim))])
    ticks = []
    for i, m in enumerate(sim.pop("messages")):
        role = m.get("role")
        tick = {"tick_id": i, "timestamp": "t", "agent_chunk": None, "user_chunk": None}
        if role == "assistant":
            tick["agent_chunk"] = {"role": "assistant", "content": m.get("content"), "contains_speech": True}
            tick["agent_tool_calls"] = m.get("tool_calls")
        elif role == "user":
            tick["user_chunk"] = {"role": "user", "content": m.get("content"), "contains_speech": True}
            tick["user_tool_calls"] = m.get("tool_calls")
        elif role == "tool":
            side = "user" if m.get("requestor") == "user" else "agent"
            tick[f"{side}_tool_results"] = m.get("tool_messages") or [m]
        else:
            continue
        ticks.append(tick)
        # silence between turns, as a voice simulation records it
        ticks.append(
            {
                "tick_id": i,
                "agent_chunk": {"role": "assistant", "contains_speech": False},
                "user_chunk": {"role": "user", "turn_taking_action": {"action": "wait"}},
            }
        )
    sim["ticks"] = ticks
    doc["simulations"] = [sim]
    return doc, text_doc


def test_voice_ticks_give_the_same_calls_as_the_messages(tmp_path):
    doc, text_doc = _voice_doc()
    (tmp_path / "text.json").write_text(json.dumps(text_doc))
    folder = _folder(tmp_path, doc)
    for src, out in ((tmp_path / "text.json", tmp_path / "a"), (folder, tmp_path / "b")):
        code, msg = _import(str(src), "-o", str(out))
        assert code == 0, msg

    def calls(out: Path) -> list:
        (f,) = [p for p in out.glob("*.jsonl") if p.name != "ratings.jsonl"]
        recs = [json.loads(line) for line in f.read_text().splitlines()]
        return [(r["name"], r["args"], r.get("is_error")) for r in recs if r["type"] == "tool_call"]

    assert calls(tmp_path / "a") == calls(tmp_path / "b") and calls(tmp_path / "a")


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} (tau2-bench's own test folder) is not on this machine")
def test_tau2_benchs_own_run_folder_names_the_missing_tasks(tmp_path):
    code, msg = _import(str(SHARED), "-o", str(tmp_path / "out"))
    assert code == 1
    assert "simulations[0] (task_id 40, trial 0): no task '40' in the file's tasks (pass --tasks FILE)" in msg
