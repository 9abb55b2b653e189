"""Checking scenario files and runs without scoring them (``evalkit check``): every problem found.

A path is a scenario file (``.json``, ``.toml``, or a ``.jsonl`` whose first record is not a
trajectory's ``meta``), a run (a ``.jsonl`` trajectory) or a directory (its ``*.jsonl``, as
``evalkit score`` reads it). A scenario's problems are all listed (each unknown key, each bad rule);
a run's embedded scenario is checked the same way, then the run is read once, as ``evalkit score``
reads it (the first problem of the rest of the file, as the reader reports it). The scenario files
a run uses (``--scenarios``, or the one beside it) are checked and counted once.

Then each scenario is checked against all of its runs (:mod:`evalkit.engines.observed`): every
reference the runs contradict is a warning (an error where it can never match) at the scenario's
file and line. Keys of the runs' records that evalkit does not know are warnings too, each distinct
one once with how many runs and records have it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.engines.observed import Finding, Observed, findings, near, where
from evalkit.engines.sources import expand_paths
from evalkit.errors import InputError
from evalkit.trajectory import safe_json
from evalkit.trajectory.input_files import open_regular, path_list, shown_name
from evalkit.trajectory.reader import _Builder
from evalkit.trajectory.records import RECORD_TYPES, FinalStateCheck, SuccessEval
from evalkit.trajectory.scenario import USER_PREFIX
from evalkit.trajectory.scenario_files import (
    Entry,
    ScenarioSet,
    locate,
    read_entries,
    scenario_problems,
    scenarios_beside,
)


@dataclass
class CheckReport:
    problems: list[InputError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the reader's notes (a dropped half-written line)
    findings: list[str] = field(default_factory=list)  # ``path:line: warning: where: reason``, one each
    scenario_files: int = 0
    scenarios: int = 0
    runs: int = 0


@dataclass
class _Group:
    """One scenario (by content) and its runs."""

    entry: Entry
    prefix: str  # "scenario" (a scenario file) or "meta.scenario" (embedded in a run)
    seen: Observed


@dataclass
class _KeyNote:
    first: str
    runs: set[str] = field(default_factory=set)
    records: int = 0


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


class _Checker:
    def __init__(self, report: CheckReport, scenario_files: list[str]):
        self.report = report
        self.given = bool(scenario_files)
        self.entries: dict[str, dict[str, Entry]] = {}  # scenario file -> id -> entry
        self.file_of: dict[str, str] = {}  # id -> the given file holding it
        self.checked: set[str] = set()  # scenario files read (absolute paths)
        self.groups: dict[str, _Group] = {}  # content hash -> scenario and runs
        self.keys: dict[tuple[str, str], _KeyNote] = {}
        self.seen_problems: set[str] = set()
        self.by_content: dict[str, Entry] = {}  # a file scenario's content hash -> where it is
        self.invalid: dict[str, str] = {}  # an invalid scenario's id -> where it is
        self.run_ids: dict[str, str] = {}  # run id -> the file that first had it
        self.models: dict[str, list] = {}  # model -> [runs, the first run's meta line]
        found: dict = {}
        for path in scenario_files:
            self.scenario_file(str(path), found)
        self.scenario_set = ScenarioSet(found, self.invalid) if scenario_files else None

    def problem(self, exc: InputError) -> None:
        text = str(exc)
        if text not in self.seen_problems:  # a scenario file's problem, met again by each run using it
            self.seen_problems.add(text)
            self.report.problems.append(exc)

    def scenario_file(self, path: str, found: dict | None = None) -> None:
        key = os.path.abspath(path)
        if key in self.checked:
            return
        self.checked.add(key)
        self.report.scenario_files += 1
        try:
            entries = read_entries(path)
        except InputError as exc:
            self.problem(exc)
            return
        mine = self.entries.setdefault(path, {})
        for entry in entries:
            self.report.scenarios += 1
            scenario, problems = scenario_problems(entry)
            for p in problems:
                self.problem(p)
            if scenario is None:
                sid = entry.raw.get("id") if isinstance(entry.raw, dict) else None
                if isinstance(sid, str):
                    self.invalid.setdefault(sid, f"{entry.path}:{entry.line}" if entry.line is not None else entry.path)
                continue
            at = f"{entry.path}:{entry.line}" if entry.line is not None else entry.path
            # a repeated id is the scorer's error for a file beside the runs as for a given one
            first = found.get(scenario.id, (None, None))[1] if found is not None else None
            if first is None and scenario.id in mine:
                before = mine[scenario.id]
                first = f"{before.path}:{before.line}" if before.line is not None else before.path
            mine.setdefault(scenario.id, entry)
            self.by_content.setdefault(scenario.content_hash, entry)
            if first is not None:
                self.problem(
                    InputError(
                        entry.path,
                        entry.line,
                        f'scenario.id: "{scenario.id}" is already the id of the scenario at {first}',
                    )
                )
            elif found is not None:
                found[scenario.id] = (entry.raw, at)
                self.file_of[scenario.id] = path

    def run(self, path: str) -> None:
        report = self.report
        report.runs += 1
        shown = shown_name(path)
        beside_file = None
        if not self.given:
            try:
                beside = scenarios_beside(path)
            except InputError as exc:
                beside = None
                beside_file = exc.path
                self.scenario_file(exc.path)
            if beside is not None:
                beside_file = beside[1]
                self.scenario_file(beside_file)
        builder = _Builder(path, report.warnings.append, scenarios=self.scenario_set, finding=report.findings.append)
        meta_raw: Any = None
        meta_line = (0, b"")
        try:
            fh, _ = open_regular(path, None)
            with fh:
                for lineno, line in enumerate(fh, 1):
                    before = len(builder.events), builder.meta, builder.setup, builder.final, builder.unknown
                    if builder.meta is None and line.strip():
                        meta_line = (lineno, line)
                        try:
                            meta_raw = safe_json.loads(line)
                        except safe_json.JSONProblem:
                            meta_raw = None
                        if not self._embedded_ok(shown, lineno, line, meta_raw):
                            return
                    builder.line(lineno, line)
                    self._note_keys(builder, before, shown, lineno, line)
            traj = builder.finish()
        except InputError as exc:
            if beside_file is not None and exc.path == shown_name(beside_file):
                return  # the scenario file's own problems are listed once, with their lines
            self.problem(exc)
            return
        except OSError as exc:
            self.problem(InputError(shown, None, f"cannot read: {exc.strerror or exc}"))
            return
        run_id = traj.meta.run_id
        first = self.run_ids.setdefault(run_id, shown)
        if first != shown:  # scoring keeps one card per run id
            report.findings.append(
                f"{shown}:{meta_line[0]}: warning: meta.run_id: {run_id!r} is also the run id of {first}: "
                "score keeps one card per run id, so this run replaces that one in the aggregates and the database"
            )
        model = self.models.setdefault(traj.meta.model, [0, f"{shown}:{meta_line[0]}"])
        model[0] += 1
        scenario = traj.meta.scenario
        group = self.groups.get(scenario.content_hash)
        if group is None:
            group = self._group(shown, meta_line, meta_raw, scenario, beside_file)
            self.groups[scenario.content_hash] = group
        group.seen.add_run(traj)

    def _embedded_ok(self, shown: str, lineno: int, line: bytes, meta: Any) -> bool:
        """Every problem of a run's embedded scenario (the reader would stop at the first)."""
        if not (isinstance(meta, dict) and isinstance(meta.get("scenario"), dict)):
            return True
        text = line.decode("utf-8", "replace")
        _, problems = scenario_problems(Entry(shown, lineno, text, meta["scenario"]))
        for p in problems:
            self.problem(InputError(p.path, lineno, f"meta.{p.message}"))
        return not problems

    def _group(self, shown: str, meta_line: tuple[int, bytes], meta_raw: Any, scenario: Any, beside: str | None):
        if scenario.content_hash in self.by_content:  # as in a scenario file: reported there
            return _Group(self.by_content[scenario.content_hash], "scenario", Observed(scenario))
        if isinstance(meta_raw, dict) and isinstance(meta_raw.get("scenario"), dict):
            lineno, line = meta_line
            entry = Entry(shown, lineno, line.decode("utf-8", "replace"), meta_raw["scenario"])
            return _Group(entry, "meta.scenario", Observed(scenario))
        source = self.file_of.get(scenario.id) if self.given else beside
        entry = self.entries.get(source or "", {}).get(scenario.id) if source else None
        if entry is None:
            entry = Entry(shown, meta_line[0], "", None)
            return _Group(entry, "meta.scenario", Observed(scenario))
        return _Group(entry, "scenario", Observed(scenario))

    def _note_keys(self, builder: _Builder, before: tuple, shown: str, lineno: int, line: bytes) -> None:
        """Unknown keys of the record just read (and of its success checks), noted by kind."""
        n_events, meta, setup, final, unknown = before
        record = None
        if len(builder.events) > n_events:
            record = builder.events[-1]
        elif builder.meta is not meta:
            record = builder.meta
        elif builder.setup is not setup:
            record = builder.setup
        elif builder.final is not final:
            record = builder.final
        elif builder.unknown > unknown:
            try:
                rtype = safe_json.loads(line).get("type")
            except (safe_json.JSONProblem, AttributeError):
                return
            guess = near(str(rtype), RECORD_TYPES, 0.75)
            if guess is not None:
                self._note(f'record type "{rtype}"', guess, shown, lineno, kind="unknown")
            return
        if record is None:
            return
        rtype = record.type
        self._extras(rtype, record, tuple(type(record).model_fields), shown, lineno)
        if rtype == "meta":
            adapter = record.adapter
            for key in adapter:
                if key not in ("model", "provider") and (guess := near(key, ("model", "provider"), 0.75)):
                    self._note(f'meta.adapter: key "{key}"', guess, shown, lineno)
        if rtype == "final" and record.success_eval is not None:
            success = record.success_eval
            self._extras("final.success_eval", success, tuple(SuccessEval.model_fields), shown, lineno)
            for check in success.final_state:
                self._extras(
                    "final.success_eval.final_state[]", check, tuple(FinalStateCheck.model_fields), shown, lineno
                )

    def _extras(self, where_: str, record: Any, known: tuple[str, ...], shown: str, lineno: int) -> None:
        for key in record.__pydantic_extra__ or ():
            # a harness's own fields (``inspect``, ``otel``, ``x_*``) are kept; a near miss of a known
            # key is a typo that drops what it names (``is_eror``: the call counts as executed)
            if not key.startswith(USER_PREFIX) and key != "model" and (guess := near(key, known, 0.75)):
                self._note(f'{where_}: unknown key "{key}"', guess, shown, lineno)

    def _note(self, what: str, guess: str | None, shown: str, lineno: int, kind: str = "key") -> None:
        if kind == "unknown":
            what = f"unknown {what}"
        note = self.keys.get((what, guess or ""))
        if note is None:
            note = self.keys[(what, guess or "")] = _KeyNote(f"{shown}:{lineno}")
        note.runs.add(shown)
        note.records += 1

    def finish(self) -> None:
        report = self.report
        for (what, guess), note in self.keys.items():
            mean = f' (did you mean "{guess}"?)' if guess else ""
            count = ""
            if note.records > 1:
                count = f" (in {len(note.runs)} run(s), {note.records} record(s))"
            report.findings.append(f"{note.first}: warning: {what}{mean}{count}")
        for group in self.groups.values():
            for finding in findings(group.seen):
                self._finding(group, finding)
        report.findings += model_spellings(self.models)
        report.findings += self._contents()
        report.scenarios += sum(1 for g in self.groups.values() if g.prefix == "meta.scenario")

    def _contents(self) -> list[str]:
        """A warning for each scenario id the runs hold with more than one content, where the
        second content first occurs: score aggregates each content as a group of its own."""
        by_id: dict[str, list[_Group]] = {}
        for group in self.groups.values():  # in the order the runs were read
            by_id.setdefault(group.seen.scenario.id, []).append(group)
        out = []
        for scenario_id, groups in by_id.items():
            if len(groups) < 2:
                continue
            entry = groups[1].entry
            at = entry.path if entry.line is None else f"{entry.path}:{entry.line}"
            hashes = ", ".join(sorted(g.seen.scenario.content_hash for g in groups))
            out.append(
                f"{at}: warning: scenario {scenario_id!r} occurs with {len(groups)} different contents in the runs "
                f"({hashes}): score aggregates each as a group of its own, labelled by content hash"
            )
        return out

    def _finding(self, group: _Group, finding: Finding) -> None:
        entry = group.entry
        line = locate(entry, finding.loc, finding.needle) if entry.text else entry.line
        message = f"{where(finding.loc, group.prefix)}: {finding.message}"
        if finding.error:
            self.problem(InputError(entry.path, line, message))
        else:
            at = entry.path if line is None else f"{entry.path}:{line}"
            self.report.findings.append(f"{at}: warning: {message}")


def model_spellings(models: dict[str, list]) -> list[str]:
    """A warning for each model name that is another one written differently (case, spaces, NFKC),
    at its first run's meta line: the aggregates count them as two models. ``models``: name ->
    [runs, where its first run's meta line is]."""
    from evalkit.scoring.args import fold

    by_form: dict[str, list[str]] = {}
    for name in models:
        form = fold(name)  # as args_match's casefold compares
        by_form.setdefault(form, []).append(name)
    out = []
    for names in by_form.values():
        if len(names) < 2:
            continue
        names.sort(key=lambda n: (-models[n][0], n))  # the most runs first: most likely the meant one
        for name in names[1:]:
            out.append(
                f"{models[name][1]}: warning: meta: model {name!r} ({models[name][0]} run(s)) is "
                f"{names[0]!r} ({models[names[0]][0]} run(s)) written another way: the aggregates count them "
                "as two models"
            )
    return out


def check_paths(paths: Iterable[str | Path], scenarios: Iterable[str | Path] = ()) -> CheckReport:
    """Check every path (and the scenario files runs may name); see the module docstring."""
    paths, scenarios = path_list(paths, "paths"), path_list(scenarios, "scenarios")
    report = CheckReport()
    checker = _Checker(report, [str(p) for p in scenarios])
    for name in paths:
        for path in expand_paths([name]):
            if Path(path).suffix.lower() in (".json", ".toml") or (path.endswith(".jsonl") and not _is_run(path)):
                checker.scenario_file(path)
            else:
                checker.run(path)
    checker.finish()
    return report
