"""Each scenario checked against its runs while they are scored (``evalkit score``): the warnings
``evalkit check`` gives (:mod:`evalkit.engines.observed`), once per scenario.

A worker notes what the runs of each scenario in its batch did (:class:`Seen`, the state of an
``Observed`` without the scenario model: plain counts, sets and dicts, so the parent merges it
without loading the scorer). Within one scoring run (``token``) a worker sends only what it has
not sent before: the counts, the names, keys and types it had not seen, the scenario's JSON until
the first batch that holds it (a pool's worker takes its batches in input order, so the first
batch of a scenario in input order carries it), and the sampled calls of the tools with a required
action no call it saw matched (the warnings read them only for such an action, which then no
worker saw matched). It keeps each scenario's ``Observed`` from batch to batch (its counts
restarted), so what it learnt of a scenario (the paths walked, the actions matched) is not learnt
again in each batch that holds it: with many scenarios interleaved, that is every batch. Batches
scored in the parent itself (one worker, few files) feed one ``Observed`` per scenario, taken once
when the scoring ends (:func:`noted_here`). The parent merges
the batches' notes in input order (:func:`merge`) and, after scoring, :func:`scenario_warnings`
turns them into lines, in the order the scenarios first occur, at the scenario's file and line:
the scenario file that holds it (the files given, else the one beside its first run) when its
content is that file's, else the ``meta`` line of its first run. They are made where the scenario
model is loaded: a pool's worker, or this process when it scores. The same lines whatever the
engine and the number of workers.

Runs are read for scoring: the calls of read tools (neither a command nor an approval tool) keep
no arguments, so their keys and value types are not compared (``evalkit check`` compares them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

# Observed's fields (evalkit.engines.observed), in the order ``Seen.state`` holds them
FIELDS = (
    "runs",
    "calls",
    "surface",
    "args",
    "results",
    "success_runs",
    "variables",
    "hit",
    "samples",
    "unevaluated",
    # per gate, each batch's own (merged by or, sum and sum)
    "approved",
    "asked",
    "answers",
    # per optional action: matched (merged by or), near misses by key (summed); var -> values
    # (union, capped)
    "optional_hit",
    "optional_near",
    "values",
    # per forbidden action and per gate, as per optional action
    "forbidden_hit",
    "forbidden_near",
    "gated_hit",
    "gated_near",
    # success variable -> [runs that leave it out, the first of them] (summed; the first in input order)
    "left_out",
    # per gate: its approval's answers in another spelling -> calls (summed)
    "spelled",
    # [runs, calls, tools, the first run] recorded without call arguments (summed, united; the first
    # in input order)
    "unrecorded",
)

# which actions some call matched, which gates some call approved: lists Observed keeps from batch
# to batch (Observed.restart), sent as they are (merged by or)
_KEPT_MARKS = tuple(FIELDS.index(name) for name in ("approved", "optional_hit", "forbidden_hit", "gated_hit"))


@dataclass(slots=True)
class Seen:
    """What the runs of one scenario did, as its ``Observed`` holds it, and where it came from."""

    scenario: bytes | None  # its JSON as the reader validated it (reader.scenario_json); None: sent before
    run: str | None  # the first run of it: its name as shown (None: sent before)
    source: str | None  # ... and its real path (None: standard input, a URL, or sent before)
    # Observed's FIELDS (``calls`` a plain dict: cheaper to send than a Counter), or of a later batch
    # from the same worker only those that add something, by index (:func:`_unsent`)
    state: list[Any] | dict[int, Any]
    sample_cap: int  # calls kept per required tool (Observed's)
    values_cap: int  # values kept per success variable (Observed's)

    def __reduce__(self):  # a plain tuple on the wire (the default for a slotted dataclass costs more)
        return (Seen, (self.scenario, self.run, self.source, self.state, self.sample_cap, self.values_cap))


# what this process sent in the scoring run named by _SENT_TOKEN: scenario hash -> Observed's FIELDS
_SENT: dict[str, list[Any]] = {}
# ... and the Observed of each scenario it noted in that run, restarted for each batch: what it
# knows for good (the paths walked, the required actions hit) is not learnt again batch by batch
_KEPT: dict[str, Any] = {}
# the notes of the batches scored in the process that merges them, in the scoring run named by
# _SENT_TOKEN: scenario hash -> (its Observed of every such run, its first run's name and path)
_HERE: dict[str, tuple[Any, str, str | None]] = {}
_SENT_TOKEN: list[str | None] = [None]


class Noting:
    """A batch's notes: one ``Observed`` per scenario (by content hash), fed run by run.
    ``token`` names the scoring run: with it, this process keeps each scenario's ``Observed``
    from batch to batch, and sends only what it has not sent before (:meth:`seen`). ``here``: the
    batch is scored in the process that merges the notes, which takes them all at once when the
    scoring ends (:func:`noted_here`), so nothing is restarted or sent batch by batch."""

    __slots__ = ("observed", "token", "here")

    def __init__(self, token: str | None = None, here: bool = False) -> None:
        self.observed: dict[str, tuple[Any, str, str | None]] = {}
        self.token = token
        self.here = here and token is not None
        if token is not None and token != _SENT_TOKEN[0]:
            _SENT.clear()
            _KEPT.clear()
            _HERE.clear()
            _SENT_TOKEN[0] = token

    def add(self, traj: Any, shown: str, source: str | None, card: Any = None) -> None:
        scenario = traj.meta.scenario
        key = scenario.content_hash
        if self.here:
            noted = _HERE.get(key)
            if noted is None:
                from evalkit.engines.observed import Observed

                noted = _HERE[key] = (Observed(scenario), shown, source)
            noted[0].add_run(traj, card)
            return
        noted = self.observed.get(key)
        if noted is None:
            observed = _KEPT.get(key) if self.token is not None else None
            if observed is None:
                from evalkit.engines.observed import Observed

                observed = Observed(scenario)
                if self.token is not None:
                    _KEPT[key] = observed
            else:
                observed.restart()
            noted = self.observed[key] = (observed, shown, source)
        noted[0].add_run(traj, card)

    def seen(self) -> dict[str, Seen]:
        """The batch's notes; with a token, less what this process sent before for it."""
        from evalkit.engines.observed import _SAMPLE_CALLS, VALUES_KEPT
        from evalkit.trajectory.reader import scenario_json

        token = self.token
        out = {}
        for key, (observed, shown, source) in self.observed.items():
            raw = scenario_json(observed.scenario)
            if raw is None:  # not shared by the reader (never on the score path): nothing to place it by
                continue
            sent = _SENT.get(key) if token is not None else None
            state = _state(observed, None if sent is None else sent[7])
            if token is not None:
                if sent is None:
                    _SENT[key] = _copy(state)
                    # sent apart from the kept Observed's sets and dicts, which it goes on adding to
                    first = _copy(state)
                    first[8] = state[8]
                    state = first
                else:
                    raw = shown = source = None
                    state = _unsent(state, sent, _SAMPLE_CALLS)
            out[key] = Seen(raw, shown, source, state, _SAMPLE_CALLS, VALUES_KEPT)
        return out


def noted_here(token: str | None) -> dict[str, Seen]:
    """The notes of the batches of the scoring run ``token`` scored in this process (``Noting``'s
    ``here``), each scenario's once, in the order they first occur; then forgotten."""
    if token is None or token != _SENT_TOKEN[0] or not _HERE:
        return {}  # (the parent of a pool: it never loads the scorer)
    from evalkit.engines.observed import _SAMPLE_CALLS, VALUES_KEPT
    from evalkit.trajectory.reader import scenario_json

    out = {}
    for key, (observed, shown, source) in _HERE.items():
        raw = scenario_json(observed.scenario)
        if raw is not None:
            out[key] = Seen(raw, shown, source, _state(observed), _SAMPLE_CALLS, VALUES_KEPT)
    _HERE.clear()
    return out


def _state(observed: Any, sent_hit: list[bool] | None = None) -> list[Any]:
    """``observed``'s FIELDS, less the sampled calls of the tools whose required actions some call
    matched (findings reads a tool's samples only while one is unmatched): of this ``Observed``,
    or, given ``sent_hit``, of what this process sent before."""
    state = [getattr(observed, name) for name in FIELDS]
    state[1] = dict(state[1])
    for kept in _KEPT_MARKS:  # the kept Observed goes on marking them
        state[kept] = list(state[kept])
    matched = observed.matched_tools(state[7] if sent_hit is None else [a or b for a, b in zip(state[7], sent_hit)])
    if matched:
        state[8] = {tool: calls for tool, calls in state[8].items() if tool not in matched}
    return state


def _copy(state: list[Any]) -> list[Any]:
    """A copy of a state that later batches' merges into it do not change."""
    runs, calls, surface, args, results, success_runs, variables, hit, samples, unevaluated, *gates = state
    return [
        runs,
        dict(calls),
        set(surface),
        {t: {p: set(v) for p, v in paths.items()} for t, paths in args.items()},
        {t: {p: set(v) for p, v in paths.items()} for t, paths in results.items()},
        success_runs,
        {k: set(v) for k, v in variables.items()},
        list(hit),
        {t: len(v) for t, v in samples.items()},  # sent: how many
        unevaluated,
        *gates[:5],
        {var: dict(values) for var, values in gates[5].items()},  # the success variables' values
        *gates[6:],
    ]


def _unsent(state: list[Any], sent: list[Any], cap: int) -> dict[int, Any]:
    """``state`` less what ``sent`` holds (the counts are the batch's own), as ``{field's index:
    value}`` of the fields that add something (most of a later batch's are empty: sending them
    whole would cost more than the notes themselves); ``sent`` updated."""
    runs, calls, surface, args, results, success_runs, variables, hit, samples, unevaluated = state[:10]
    out: dict[int, Any] = {0: runs}
    if calls:
        out[1] = calls
    new_surface = surface - sent[2]
    if new_surface:
        sent[2] |= new_surface
        out[2] = new_surface
    for i in (3, 4):
        paths = _unsent_paths(state[i], sent[i])
        if paths:
            out[i] = paths
    if success_runs:
        out[5] = success_runs
    new_variables = {}
    for var, ops in variables.items():
        had = sent[6].setdefault(var, set())
        if not ops <= had:
            new_variables[var] = ops - had
            had |= ops
    if new_variables:
        out[6] = new_variables
    new_samples = {}
    for tool, kept in samples.items():
        count = sent[8].get(tool, 0)
        if count < cap:
            new_samples[tool] = kept[: cap - count]
            sent[8][tool] = count + len(new_samples[tool])
    if new_samples:
        out[8] = new_samples
    if unevaluated:
        out[9] = unevaluated
    # which actions some call matched, which gates some call approved: those not sent before
    for i in (7, *_KEPT_MARKS):
        now, before = state[i], sent[i]
        if any(a and not b for a, b in zip(now, before)):
            out[i] = [a and not b for a, b in zip(now, before)]
            sent[i] = [a or b for a, b in zip(now, before)]
    # the success variables' values (the kept Observed's, never more than its cap a variable):
    # those not sent before. The parent keeps the first ones in input order, and a value this
    # process no longer keeps follows as many others earlier in input order
    new_values = {}
    for var, kept in state[15].items():
        had = sent[15].get(var)
        if had is None:
            new_values[var] = sent[15][var] = dict(kept)
        elif len(kept) > len(had):  # values are only added
            new_values[var] = new = {k: text for k, text in kept.items() if k not in had}
            had.update(new)
    if new_values:
        out[15] = new_values
    for i in (11, 12, 14, 17, 19, 21):  # per action: the batch's own counts
        if any(state[i]):
            out[i] = state[i]
    if state[20]:
        out[20] = state[20]
    if state[22][0]:
        out[22] = state[22]
    return out


def _unsent_paths(paths_by_tool: dict[str, dict[str, set[str]]], sent: dict[str, dict[str, set[str]]]) -> dict:
    out: dict[str, dict[str, set[str]]] = {}
    for tool, paths in paths_by_tool.items():
        had = sent.setdefault(tool, {})
        for path, types in paths.items():
            have = had.get(path)
            if have is None:
                had[path] = set(types)
                out.setdefault(tool, {})[path] = set(types)
            elif not types <= have:
                out.setdefault(tool, {})[path] = types - have
                have |= types
    return out


def merge(into: dict[str, Seen], batch: dict[str, Seen]) -> None:
    """Add a later batch's notes to ``into`` (the scenarios in the order they first occur; the
    first run of each kept; the sampled calls the first ones in input order). A later batch's
    state is a whole list of FIELDS or, from a worker that sent the scenario before, only the
    fields that add something (``{index: value}``, :func:`_unsent`); the first one of a scenario
    in input order is whole (a pool's worker takes its batches in input order)."""
    for key, theirs in batch.items():
        mine = into.get(key)
        if mine is None:
            into[key] = theirs
            continue
        if mine.scenario is None:  # sent first in a batch later in input order (not from a local pool)
            mine.scenario, mine.run, mine.source = theirs.scenario, theirs.run, theirs.source
        a, b = mine.state, theirs.state
        if type(b) is list:
            b = dict(enumerate(b))
        runs, calls, surface, args, results, success_runs, variables, hit, samples, unevaluated, approved, asked, *_ = a
        a[0] = runs + b[0]
        if (theirs_calls := b.get(1)) is not None:
            for tool, n in theirs_calls.items():
                calls[tool] = calls.get(tool, 0) + n
        if (theirs_surface := b.get(2)) is not None:
            surface |= theirs_surface
        if (paths := b.get(3)) is not None:
            _merge_paths(args, paths)
        if (paths := b.get(4)) is not None:
            _merge_paths(results, paths)
        a[5] = success_runs + b.get(5, 0)
        a[9] = unevaluated + b.get(9, 0)
        if (theirs_variables := b.get(6)) is not None:
            for var, ops in theirs_variables.items():
                variables.setdefault(var, set()).update(ops)
        # most of a later batch's per-action lists add nothing (no new hit, no count): skipped whole
        if (theirs_hit := b.get(7)) is not None and not all(hit) and any(theirs_hit):
            a[7] = [x or y for x, y in zip(hit, theirs_hit)]
        if (theirs_approved := b.get(10)) is not None and any(theirs_approved):
            a[10] = [x or y for x, y in zip(approved, theirs_approved)]
        if (theirs_asked := b.get(11)) is not None and any(theirs_asked):
            a[11] = [x + y for x, y in zip(asked, theirs_asked)]
        if (theirs_answers := b.get(12)) is not None:
            for mine_said, theirs_said in zip(a[12], theirs_answers):
                for key, values in theirs_said.items():
                    mine_said.setdefault(key, Counter()).update(values)
        if theirs_left_out := b.get(20):
            left_out = {var: list(entry) for var, entry in a[20].items()}
            for var, (n, first) in theirs_left_out.items():
                kept = left_out.get(var)
                left_out[var] = [n, first] if kept is None else [kept[0] + n, kept[1]]
            a[20] = left_out
        if (theirs_unrecorded := b.get(22)) is not None and theirs_unrecorded[0]:
            runs_n, calls_n, tools, first = a[22]
            a[22] = [
                runs_n + theirs_unrecorded[0],
                calls_n + theirs_unrecorded[1],
                tools | theirs_unrecorded[2],
                first if first is not None else theirs_unrecorded[3],
            ]
        if (theirs_spelled := b.get(21)) is not None and any(theirs_spelled):
            a[21] = [
                {k: x.get(k, 0) + y.get(k, 0) for k in {**x, **y}} if y else x for x, y in zip(a[21], theirs_spelled)
            ]
        for hit, near in ((13, 14), (16, 17), (18, 19)):
            if (theirs_hit := b.get(hit)) is not None and any(theirs_hit):
                a[hit] = [x or y for x, y in zip(a[hit], theirs_hit)]
            if (theirs_near := b.get(near)) is not None and any(theirs_near):
                a[near] = [
                    {k: x.get(k, 0) + y.get(k, 0) for k in {**x, **y}} if y else x for x, y in zip(a[near], theirs_near)
                ]
        # the kept values are never changed in place (a batch's state may hold them): a dict that
        # gains a value is a new one, in a new dict of them
        values = a[15]
        for var, theirs_values in b.get(15, {}).items():
            kept = values.get(var)
            if kept is not None and (len(kept) >= mine.values_cap or theirs_values.keys() <= kept.keys()):
                continue  # nothing to add
            kept = {} if kept is None else dict(kept)
            for key, shown in theirs_values.items():
                if len(kept) < mine.values_cap:
                    kept.setdefault(key, shown)
            if values is a[15]:
                values = dict(values)
            values[var] = kept
        a[15] = values
        for tool, calls_args in b.get(8, {}).items():
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
    from collections import Counter

    from evalkit.engines.observed import Observed, findings, where
    from evalkit.trajectory.reader import shared_scenario

    out: list[str] = []
    for note in seen.values():
        if note.scenario is None:
            continue
        scenario = shared_scenario(note.scenario)
        observed = Observed(scenario)
        for name, value in zip(FIELDS, note.state):
            setattr(observed, name, Counter(value) if name == "calls" else value)
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
    from evalkit.trajectory.scenario_files import locate

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
    return Entry(note.run or "", _meta_line(note.source), "", None), "meta.scenario"


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
