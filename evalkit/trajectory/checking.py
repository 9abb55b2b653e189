"""Checking scenario files and runs without scoring them (``evalkit check``): every problem found.

A path is a scenario file (``.json``, ``.toml``, or a ``.jsonl`` whose first record is not a
trajectory's ``meta``), a run (a ``.jsonl`` trajectory) or a directory (its ``*.jsonl``, as
``evalkit score`` reads it). A scenario's problems are all listed (each unknown key, each bad rule);
a run's embedded scenario is checked the same way, then the run is read as ``evalkit score`` reads
it (the first problem of the rest of the file, as the reader reports it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.reader import expand_paths, read_trajectory
from evalkit.trajectory.scenario_files import Entry, ScenarioSet, read_entries, scenario_problems


@dataclass
class CheckReport:
    problems: list[InputError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    scenarios: int = 0
    runs: int = 0


def _is_run(path: str) -> bool:
    """A ``.jsonl`` file whose first non-blank line is a ``meta`` record."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = safe_json.loads(line)
                except safe_json.JSONProblem:
                    return True  # the reader says what is wrong with it
                return isinstance(first, dict) and first.get("type") == "meta"
    return True


def _check_scenario_file(path: str, report: CheckReport, found: dict | None = None) -> None:
    try:
        entries = read_entries(path)
    except InputError as exc:
        report.problems.append(exc)
        return
    for entry in entries:
        report.scenarios += 1
        scenario, problems = scenario_problems(entry)
        report.problems.extend(problems)
        if scenario is not None and found is not None:
            where = f"{entry.path}:{entry.line}" if entry.line is not None else entry.path
            if scenario.id in found:
                report.problems.append(
                    InputError(
                        entry.path,
                        entry.line,
                        f'scenario.id: "{scenario.id}" is already the id of the scenario at {found[scenario.id][1]}',
                    )
                )
            else:
                found[scenario.id] = (entry.raw, where)


def _check_run(path: str, scenarios: ScenarioSet | None, report: CheckReport) -> None:
    report.runs += 1
    lineno, line = 0, b""  # an empty file: no first record (the reader says so below)
    try:
        with open(path, "rb") as fh:
            for lineno, line in enumerate(fh, 1):  # noqa: B007 — lineno and line are read after the loop
                if line.strip():
                    break
        meta = safe_json.loads(line) if line.strip() else None
    except (OSError, safe_json.JSONProblem):
        meta = None  # the reader says what is wrong
    if isinstance(meta, dict) and isinstance(meta.get("scenario"), dict):
        _, problems = scenario_problems(Entry(path, lineno, line.decode("utf-8", "replace"), meta["scenario"]))
        if problems:
            report.problems.extend(InputError(p.path, lineno, f"meta.{p.message}") for p in problems)
            return
    try:
        read_trajectory(path, report.warnings.append, scenarios=scenarios)
    except InputError as exc:
        report.problems.append(exc)


def check_paths(paths: Iterable[str], scenario_files: Iterable[str] = ()) -> CheckReport:
    """Check every path (and the scenario files runs may name); see the module docstring."""
    report = CheckReport()
    found: dict = {}
    scenario_files = list(scenario_files)
    for path in scenario_files:
        _check_scenario_file(str(path), report, found)
    scenarios = ScenarioSet(found) if scenario_files else None
    for name in paths:
        for path in expand_paths([name]):
            if Path(path).suffix.lower() in (".json", ".toml") or (path.endswith(".jsonl") and not _is_run(path)):
                _check_scenario_file(path, report)
            else:
                _check_run(path, scenarios, report)
    return report
