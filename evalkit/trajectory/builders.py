"""Builders of synthetic trajectories (schema 1) for tests, examples and benchmarks.

>>> from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory
>>> records = trajectory(a320_scenario(), [read("get_ecam"), cmd("ext_pwr", 1)], run_id="r1")

Records are plain dicts in file order; ``write_jsonl`` writes them. Nothing here is random: a
builder called twice gives the same records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

A320_SUCCESS = {
    "final_state": [
        {"var": "elec.ac_bus_1.powered", "op": "==", "value": True},
        {"var": "elec.ac_bus_2.powered", "op": "==", "value": True},
        {"var": "elec.ac_ess_bus.powered", "op": "==", "value": True},
    ],
    "ecam_clear_of": ["ELEC AC BUS 1 FAULT", "ELEC AC BUS 2 FAULT"],
}
A320_TOOLS = ["get_ecam", "get_state", "set_control"]


def a320_scenario(**overrides: Any) -> dict[str, Any]:
    """The seed's acceptance scenario: APU generator fault with both AC buses lost."""
    scenario = {
        "id": "elec-apu-gen-fault",
        "title": "APU GEN fault, AC BUS 1+2 lost on ground",
        "task_prompt": "You are the pilot flying. Handle the ECAM alerts following the QRH, then call done.",
        "ground_truth": {
            "source": "A320 FCOM PRO-ABN-ELEC (paraphrased)",
            "procedure": [
                {
                    "block": "reset_attempt",
                    "ordered": True,
                    "actions": [
                        {"control": "apu_gen", "value": 0, "rationale": "cycle the faulty generator off"},
                        {"control": "apu_gen", "value": 1, "rationale": "try one reset"},
                    ],
                },
                {
                    "block": "restore_power",
                    "actions": [
                        {"control": "apu_gen", "value": 0, "rationale": "isolate the generator after a failed reset"},
                        {"control": "ext_pwr", "value": 1, "rationale": "restore AC from ground power"},
                    ],
                },
            ],
            "optional_actions": [
                {"control": "apu_master", "value": 0, "rationale": "APU no longer needed"},
                {"control": "apu_bleed", "value": 0, "rationale": "APU no longer needed"},
            ],
            "forbidden_actions": [
                {
                    "control": "bat_1",
                    "value": 0,
                    "severity": "dangerous",
                    "rationale": "batteries are the only DC source",
                },
                {
                    "control": "bat_2",
                    "value": 0,
                    "severity": "dangerous",
                    "rationale": "batteries are the only DC source",
                },
            ],
        },
        "success": A320_SUCCESS,
        "budget": {"max_tool_calls": 40, "max_sim_time_s": 600},
    }
    scenario.update(overrides)
    return scenario


def cmd(control: str, value: Any, is_error: bool = False, tool: str = "set_control") -> dict[str, Any]:
    return {
        "name": tool,
        "args": {"control": control, "value": value},
        "is_error": is_error,
        "result": {"error": "control is inhibited"} if is_error else {"ok": True, "control": control, "value": value},
    }


def call(tool: str, args: dict[str, Any] | None = None, is_error: bool = False, result: Any = None) -> dict[str, Any]:
    return {
        "name": tool,
        "args": args or {},
        "is_error": is_error,
        "result": {"ok": True} if result is None else result,
    }


def read(tool: str = "get_ecam", result: Any = None, **args: Any) -> dict[str, Any]:
    return call(
        tool, args, result={"messages": ["ELEC AC BUS 1 FAULT", "ELEC AC BUS 2 FAULT"]} if result is None else result
    )


def say(text: str) -> dict[str, Any]:
    return {"say": text}


def a320_full_procedure() -> list[dict[str, Any]]:
    """The calls of a run that flies :func:`a320_scenario`'s whole procedure (the seed's 1.00 run)."""
    return [
        read(),
        say("APU GEN fault: try one reset."),
        cmd("apu_gen", 0),
        cmd("apu_gen", 1),
        read(),
        say("Reset failed; isolate and use ground power."),
        cmd("apu_gen", 0),
        cmd("ext_pwr", 1),
        cmd("apu_master", 0),
        read(),
    ]


def a320_isolation_skipped() -> list[dict[str, Any]]:
    """The calls of a run that skips the isolation step (the seed's 0.90 run)."""
    return [read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("ext_pwr", 1), read()]


def _success_eval(success: dict[str, Any], passed: list[bool]) -> dict[str, Any]:
    fs, ecam = success.get("final_state", []), success.get("ecam_clear_of", [])
    if len(passed) != len(fs) + len(ecam):
        raise ValueError(f"need {len(fs) + len(ecam)} check results, got {len(passed)}")
    return {
        "final_state": [{**c, "passed": p} for c, p in zip(fs, passed[: len(fs)])],
        "ecam_clear_of": [{"message": m, "clear": p} for m, p in zip(ecam, passed[len(fs) :])],
        "all_passed": all(passed),
    }


def trajectory(
    scenario: dict[str, Any],
    calls: list[dict[str, Any]],
    *,
    run_id: str,
    model: str = "model-a",
    passed: list[bool] | bool = True,
    reason: str = "agent_done",
    tool_surface: list[str] | None = None,
    snapshot_bytes: int = 200,
    provider_error: bool = False,
    final: bool = True,
    validity_passed: bool = True,
) -> list[dict[str, Any]]:
    """Records of one run. ``passed`` is one bool per success check, or a bool for all of them."""
    success = scenario.get("success") or {"final_state": [], "ecam_clear_of": []}
    n_checks = len(success.get("final_state", [])) + len(success.get("ecam_clear_of", []))
    checks = [passed] * n_checks if isinstance(passed, bool) else list(passed)
    snapshot = {
        "elec": {
            f"bus_{i}": {"volts": 115.0, "hz": 400.0, "load": i * 0.5} for i in range(max(1, snapshot_bytes // 60))
        }
    }
    surface = sorted(tool_surface if tool_surface is not None else A320_TOOLS)
    records: list[dict[str, Any]] = [
        {
            "type": "meta",
            "run_id": run_id,
            "ts_utc": "2026-07-24T10:00:00Z",
            "scenario": scenario,
            "scenario_path": f"scenarios/{scenario['id']}.json",
            "adapter": {"provider": "example", "model": model, "temperature": 0},
            "instructions_profile": "default",
            "tool_surface": surface,
            "vendor_pin": None,
            "versions": {"harness": "1.0.0", "trajectory_schema": 1},
            "seed": 7,
        },
        {
            "type": "setup",
            "sim_time": 0.0,
            "validity_gate": {"passed": validity_passed},
            "active_failures": ["APU_GEN_FAULT"],
            "snapshot": snapshot,
        },
    ]
    step = 0
    sim = 0.0
    for i, item in enumerate(calls):
        if "say" in item:
            records.append(
                {
                    "type": "assistant",
                    "step": step,
                    "text": item["say"],
                    "stop_reason": "tool_use",
                    "provider_raw": None,
                }
            )
            continue
        step += 1
        records.append(
            {
                "type": "assistant",
                "step": step,
                "text": f"Step {step}: {item['name']}.",
                "stop_reason": "tool_use",
                "provider_raw": None,
            }
        )
        records.append(
            {
                "type": "tool_call",
                "step": step,
                "call_index": i,
                "name": item["name"],
                "args": item["args"],
                "result": item["result"],
                "is_error": item["is_error"],
                "sim_time_before": sim,
                "sim_time_after": sim + 2.0,
                "wall_ms": 120.0,
            }
        )
        sim += 2.0
    if provider_error:
        records.append({"type": "provider_error", "step": step + 1, "error": "HTTP 529 overloaded"})
        reason = "provider_error"
    if final:
        invalid = reason == "invalid_scenario"
        records.append(
            {
                "type": "final",
                "reason": reason,
                "done_payload": {"summary": "done"} if reason == "agent_done" else None,
                "sim_time": sim,
                "tool_calls_used": sum(1 for c in calls if "say" not in c),
                "ecam": [],
                "active_failures": [],
                "snapshot": snapshot,
                "success_eval": None if invalid else _success_eval(success, checks),
            }
        )
    return records


def dumps_jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_jsonl(path: str | Path, records: list[dict[str, Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_jsonl(records), encoding="utf-8")
    return path
