"""Each scenario checked against its runs while they are scored (``evalkit score``): the warnings
``evalkit check`` gives (:mod:`evalkit.trajectory.observed`), once per scenario.

A worker notes what the runs of each scenario in its batch did (:class:`Seen`, the state of an
``Observed`` without the scenario model: plain counts, sets and dicts, so the parent merges it
without loading the scorer); the parent merges the batches' notes in input order
(:func:`merge`) and, after scoring, :func:`scenario_warnings` turns them into lines, in the order
the scenarios first occur, at the scenario's file and line: the scenario file that holds it (the
files given, else the one beside its first run) when its content is that file's, else the ``meta``
line of its first run. Run where the scenario model is loaded: a pool's worker, or this process
when it scores. The same lines whatever the engine and the number of workers.

Runs are read for scoring: the calls of read tools (neither a command nor an approval tool) keep
no arguments, so their keys and value types are not compared (``evalkit check`` compares them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Observed's fields (evalkit.trajectory.observed), in the order ``Seen.state`` holds them
FIELDS = ("runs", "calls", "surface", "args", "results", "success_runs", "variables", "hit", "samples")


@dataclass(slots=True)
class Seen:
    """What the runs of one scenario did, as its ``Observed`` holds it, and where it came from."""

    scenario: bytes  # the scenario's JSON, as the reader validated it (evalkit.trajectory.reader.scenario_json)
    run: str  # the first run of it: its name as shown
    source: str | None  # ... and its real path (None: standard input or a URL)
    state: list[Any]  # Observed's FIELDS
    sample_cap: int  # calls kept per required tool (Observed's)


class Noting:
    """A batch's notes: one ``Observed`` per scenario (by content hash), fed run by run."""

    __slots__ = ("observed",)

    def __init__(self) -> None:
        self.observed: dict[str, tuple[Any, str, str | None]] = {}

    def add(self, traj: Any, shown: str, source: str | None) -> None:
        scenario = traj.meta.scenario
        key = scenario.content_hash
        noted = self.observed.get(key)
        if noted is None:
            from evalkit.trajectory.observed import Observed

            noted = self.observed[key] = (Observed(scenario), shown, source)
        noted[0].add_run(traj.meta.tool_surface, traj.tool_calls(), traj.final)

    def seen(self) -> dict[str, Seen]:
        from evalkit.trajectory.observed import _SAMPLE_CALLS
        from evalkit.trajectory.reader import scenario_json

        out = {}
        for key, (observed, shown, source) in self.observed.items():
            raw = scenario_json(observed.scenario)
            if raw is None:  # not shared by the reader (never on the score path): nothing to place it by
                continue
            state = [getattr(observed, name) for name in FIELDS]
            out[key] = Seen(raw, shown, source, state, _SAMPLE_CALLS)
        return out


def merge(into: dict[str, Seen], batch: dict[str, Seen]) -> None:
    """Add a later batch's notes to ``into`` (the scenarios in the order they first occur; the
    first run of each kept; the sampled calls the first ones in input order)."""
    for key, theirs in batch.items():
        mine = into.get(key)
        if mine is None:
            into[key] = theirs
            continue
        a, b = mine.state, theirs.state
        runs, calls, surface, args, results, success_runs, variables, hit, samples = a
        a[0] = runs + b[0]
        calls.update(b[1])
        surface |= b[2]
        _merge_paths(args, b[3])
        _merge_paths(results, b[4])
        a[5] = success_runs + b[5]
        for var, ops in b[6].items():
            variables.setdefault(var, set()).update(ops)
        if not all(hit):
            a[7] = [x or y for x, y in zip(hit, b[7])]
        for tool, calls_args in b[8].items():
            kept = samples.setdefault(tool, [])
            if len(kept) < mine.sample_cap:
                kept.extend(calls_args[: mine.sample_cap - len(kept)])


def _merge_paths(into: dict[str, dict[str, set[str]]], other: dict[str, dict[str, set[str]]]) -> None:
    for tool, paths in other.items():
        mine = into.get(tool)
        if mine is None:
            into[tool] = paths
            continue
        for path, types in paths.items():
            have = mine.get(path)
            if have is None:
                mine[path] = types
            else:
                have |= types


def scenario_warnings(seen: dict[str, Seen], scenarios: Any = None) -> list[str]:
    """Every reference of each scenario its runs contradict, one line each (``path:line: warning:
    where: reason``; ``error: path:line: ...`` where the reference can never match), scenario by
    scenario in ``seen``'s order. ``scenarios``: the ScenarioSet of the files given (--scenarios)."""
    from evalkit.trajectory.observed import Observed, findings, where
    from evalkit.trajectory.reader import shared_scenario

    out: list[str] = []
    for note in seen.values():
        scenario = shared_scenario(note.scenario)
        observed = Observed(scenario)
        for name, value in zip(FIELDS, note.state):
            setattr(observed, name, value)
        found = findings(observed)
        if not found:
            continue
        entry, prefix = _entry(scenario, note, scenarios)
        for finding in found:
            line = _line(entry, finding)
            at = entry.path if line is None else f"{entry.path}:{line}"
            message = f"{where(finding.loc, prefix)}: {finding.message}"
            out.append(f"error: {at}: {message}" if finding.error else f"{at}: warning: {message}")
    return out


def _line(entry: Any, finding: Any) -> int | None:
    from evalkit.trajectory.checking import locate

    return locate(entry, finding.loc, finding.needle) if entry.text else entry.line


def _entry(scenario: Any, note: Seen, scenarios: Any) -> tuple[Any, str]:
    """Where the scenario is written: its entry in the scenario file that holds it with the same
    content (prefix ``scenario``), else its first run's meta line (``meta.scenario``)."""
    from pydantic_core import to_json

    from evalkit.errors import InputError
    from evalkit.trajectory.reader import shared_scenario
    from evalkit.trajectory.scenario_files import Entry, read_entries, scenarios_beside

    if scenarios is None and note.source is not None:
        try:
            beside = scenarios_beside(note.source)
        except InputError:  # a bad file beside the run: its runs were not scored
            beside = None
        scenarios = beside[0] if beside is not None else None
    if scenarios is not None and scenario.id in scenarios:
        raw, at = scenarios.by_id[scenario.id]
        if shared_scenario(to_json(raw)).content_hash == scenario.content_hash:
            path = at.rsplit(":", 1)[0] if at.rsplit(":", 1)[-1].isdigit() else at
            try:
                for entry in read_entries(path):
                    if entry.raw == raw:
                        return entry, "scenario"
            except InputError:  # changed since it was read: said at its run's meta line
                pass
    return Entry(note.run, _meta_line(note.source), "", None), "meta.scenario"


def _meta_line(source: str | None) -> int | None:
    """The line of a run's meta record: its first line that is not blank."""
    if source is None:
        return None
    try:
        with open(source, "rb") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    return n
    except OSError:
        return None
    return None
