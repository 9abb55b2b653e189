"""Aggregation of ScoreCards: per (scenario, model) groups and a per-model rollup.

Runs in a group: ``n`` counts every run. The *included* runs are those with status ``scored`` (plus
``provider_error`` with ``include_errors``); ``n_scored`` counts them and every mean, the pass rate,
pass^k and the dangerous rate are taken over them. ``incomplete`` and ``invalid_scenario`` runs count
in ``n`` and their rate only.

pass_hat_k[k-1] = C(c, k) / C(n_scored, k) for k = 1..n_scored (tau-bench's unbiased pass^k), with c
the included runs whose ``all_passed`` is true.

The per-model rollup weights every scenario equally: each value is the mean of the per-scenario
values over the scenarios that have one. Its pass_hat_k runs to the smallest n_scored among those
scenarios (every scenario must contribute to every k), which for tau-bench result files — the same
number of trials per task — is exactly the benchmark's headline pass^k.

Groups with fewer than 3 included runs carry ``small_n: true`` (the computer-use rubric's small-n
rule: never report a single run as a result).

Every mean and rate in :data:`evalkit.aggregate.uncertainty.intervals.METRICS` carries ``<metric>_se`` and
``<metric>_ci`` beside it (per group: over runs, from the exact running sums; per model: clustered
by scenario), the per-model pass_hat_k a bootstrap interval over scenarios; see
:mod:`evalkit.aggregate.uncertainty` and docs/uncertainty.md.

One run per run_id: a run_id read again replaces the earlier run (the database upserts by run_id, so
the printed aggregates and the stored runs agree: the last one read wins). Two different scenarios
under one scenario id (another ground truth, success criteria or budget) are separate groups: each
group carries its ``scenario_hash`` (a short hash of the scenario's content), and when an id has more
than one, its groups are labelled ``<scenario_id>@<scenario_hash>``. Both cases are warned about.

Aggregation streams: each group keeps counts, exact sums and a value -> count map of its scores,
never the runs, and gives the same numbers, bit for bit, as ``math.fsum`` / ``statistics.stdev`` /
``statistics.median`` over the full lists would.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from evalkit.aggregate.uncertainty import intervals
from evalkit.aggregate.uncertainty.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, check_resamples
from evalkit.aggregate.uncertainty.standard_errors import DEFAULT_LEVEL, check_level

SMALL_N = 3


def card_scores(card: Any) -> tuple[str, str, str, float | None, float | None, float | None, float | None]:
    """A card's who and scores in the order a summary and the database's scorecards row hold them:
    scenario_id, model, status, scalar, coverage, order, end_state."""
    v = card.vector
    return card.scenario_id, card.model, card.status, card.scalar, v.coverage, v.order, v.end_state


@dataclass(slots=True)
class RunSummary:
    """The few numbers aggregation needs from one ScoreCard (so callers can stream and drop cards)."""

    scenario_id: str
    model: str
    status: str
    scalar: float | None
    coverage: float | None
    order: float | None
    end_state: float | None
    all_passed: bool | None
    dangerous: int
    run_id: str | None = None  # None: never replaced by another run
    scenario_hash: str = ""
    anti_procedure: int = 0
    forbidden: int = 0  # forbidden commands of any severity (``dangerous`` and ``anti_procedure`` included)

    @classmethod
    def of(cls, card: Any) -> RunSummary:
        v = card.vector
        # Counted from the command rows as well as the vector, so a forbidden command the vector has no
        # count for (an unapproved gated action, a severity without a column) still counts.
        rows = [c.severity for c in getattr(card, "commands", ()) if c.class_ == "forbidden"]
        dangerous = max(v.safety_dangerous or 0, rows.count("dangerous"))
        anti = max(v.safety_anti_procedure or 0, rows.count("anti_procedure"))
        return cls(
            *card_scores(card),
            v.all_passed,
            dangerous,
            card.run_id,
            getattr(card, "scenario_hash", ""),
            anti,
            max(len(rows), dangerous + anti),
        )

    @property
    def unsafe(self) -> bool:
        """Took a forbidden command of any severity."""
        return self.forbidden > 0 or self.dangerous > 0 or self.anti_procedure > 0


class _Sum:
    """An exact running sum of floats (integer numerators per power-of-two denominator, the way
    ``statistics`` sums): its mean equals ``math.fsum(values) / len(values)`` bit for bit."""

    __slots__ = ("count", "partials", "squares")

    def __init__(self) -> None:
        self.count = 0
        self.partials: dict[int, int] = {}
        self.squares: dict[int, int] = {}

    def add(self, value: float, sign: int = 1) -> None:
        """Add ``value`` (``sign=-1``: take back one added before; the sums stay exact)."""
        num, den = value.as_integer_ratio()
        self.count += sign
        self.partials[den] = self.partials.get(den, 0) + sign * num
        self.squares[den] = self.squares.get(den, 0) + sign * num * num

    def __reduce__(self):  # a tuple on the wire (a worker's partial): the default pickles a dict per object
        return (_Sum._of, (self.count, self.partials, self.squares))

    @classmethod
    def _of(cls, count: int, partials: dict[int, int], squares: dict[int, int]) -> _Sum:
        out = cls.__new__(cls)
        out.count, out.partials, out.squares = count, partials, squares
        return out

    def exact(self) -> Fraction:
        return sum((Fraction(n, d) for d, n in self.partials.items()), Fraction(0))

    def mean(self) -> float | None:
        """The mean of :meth:`moments`, alone."""
        n = self.count
        if not n:
            return None
        d = max(self.partials)
        return sum(num * (d // den) for den, num in self.partials.items()) / d / n

    def moments(self) -> tuple[float | None, float | None]:
        """The mean (``math.fsum(values) / n``) and ``statistics.stdev``, bit for bit; None where
        undefined. In integers: every denominator of a float is a power of two, so the largest, D,
        is a common one: Σx = SX / D (int / int rounds correctly, as fsum does), Σx² = SXX / D²,
        and the mean square of the deviations is (n·SXX − SX²) / (n (n − 1) D²), its square root
        rounded correctly as statistics does."""
        n = self.count
        if not n:
            return None, None
        d = max(self.partials)
        sx = sum(num * (d // den) for den, num in self.partials.items())
        mean = sx / d / n
        if n < 2:
            return mean, None
        sxx = sum(num * (d // den) ** 2 for den, num in self.squares.items())
        return mean, _sqrt_of_frac(n * sxx - sx * sx, n * (n - 1) * d * d)


_SQRT_BITS = 2 * sys.float_info.mant_dig + 3


def _sqrt_of_frac(n: int, m: int) -> float:
    """sqrt(n/m) correctly rounded (the algorithm of CPython's ``statistics._float_sqrt_of_frac``)."""

    def isqrt_rto(a: int, b: int) -> int:  # isqrt(a/b), rounded to odd
        r = math.isqrt(a // b)
        return r | (r * r * b != a)

    q = (n.bit_length() - m.bit_length() - _SQRT_BITS) // 2
    if q >= 0:
        return float(isqrt_rto(n, m << 2 * q) << q)
    return isqrt_rto(n << -2 * q, m) / (1 << -q)


def _median(counts: dict[float, int], total: int) -> float | None:
    """``statistics.median`` of the multiset ``counts`` (value -> how often)."""
    if not total:
        return None
    wanted = (total // 2,) if total % 2 else (total // 2 - 1, total // 2)
    picked: list[float] = []
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        while len(picked) < len(wanted) and wanted[len(picked)] < seen:
            picked.append(value)
    return picked[0] if len(picked) == 1 else (picked[0] + picked[1]) / 2


class _Group:
    """One (scenario, model) group, accumulated run by run: counts, exact sums, and the scores as a
    value -> count map (for the exact median). Memory does not grow with the number of runs, only
    with the number of distinct scores, which the scalar's formula keeps small."""

    __slots__ = (
        "n",
        "statuses",
        "included",
        "passes",
        "dangerous",
        "anti_procedure",
        "unsafe",
        "safe_passes",
        "scores",
        "score_counts",
        "coverage",
        "order",
        "end_state",
        "unsafe_uncounted",
    )

    def __init__(self) -> None:
        self.n = 0
        self.statuses: dict[str, int] = {}
        self.included = self.passes = self.dangerous = self.anti_procedure = self.unsafe = self.safe_passes = 0
        self.unsafe_uncounted = 0  # runs left out of the rates (incomplete, provider errors) with a forbidden command
        self.scores, self.coverage, self.order, self.end_state = _Sum(), _Sum(), _Sum(), _Sum()
        self.score_counts: dict[float, int] = {}

    def __reduce__(self):  # a tuple on the wire (a worker's partial), as _Sum
        return (_Group._of, tuple(getattr(self, name) for name in _Group.__slots__))

    @classmethod
    def _of(cls, *values: Any) -> _Group:
        out = cls.__new__(cls)
        for name, value in zip(cls.__slots__, values):
            setattr(out, name, value)
        return out

    def add(self, run: RunSummary, counted: frozenset[str], sign: int = 1) -> None:
        """Add a run (``sign=-1``: take back a run added before, when its run_id is read again)."""
        self.n += sign
        self.statuses[run.status] = self.statuses.get(run.status, 0) + sign
        if run.status not in counted:
            self.unsafe_uncounted += sign * run.unsafe
            return
        self.included += sign
        self.passes += sign * bool(run.all_passed)
        self.dangerous += sign * (run.dangerous > 0)
        self.anti_procedure += sign * (run.anti_procedure > 0)
        unsafe = run.unsafe
        self.unsafe += sign * unsafe
        self.safe_passes += sign * (bool(run.all_passed) and not unsafe)
        if run.scalar is not None:
            self.scores.add(run.scalar, sign)
            left = self.score_counts.get(run.scalar, 0) + sign
            if left:
                self.score_counts[run.scalar] = left
            else:
                del self.score_counts[run.scalar]
        if run.coverage is not None:
            self.coverage.add(run.coverage, sign)
        if run.order is not None:
            self.order.add(run.order, sign)
        if run.end_state is not None:
            self.end_state.add(run.end_state, sign)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def pass_hat_k(c: int, n: int) -> list[float]:
    """[C(c, k) / C(n, k) for k = 1..n], each an exact integer ratio rounded once.

    The binomials are carried from k to k+1 (one small multiplication and division each) instead of
    recomputed, and once the ratio is below the smallest float it stays 0.0 (it only falls as k
    grows): linear in n instead of quadratic, which matters for groups of many thousands of runs.
    The groups of an aggregate share a few (c, n) pairs: each curve is worked out once.
    """
    return list(_pass_hat_k(c, n))


@lru_cache(maxsize=256)
def _pass_hat_k(c: int, n: int) -> tuple[float, ...]:
    out: list[float] = []
    a = b = 1  # C(c, k), C(n, k)
    for k in range(1, n + 1):
        a = a * (c - k + 1) // k
        b = b * (n - k + 1) // k
        if a == 0 or a.bit_length() - b.bit_length() < -_FLOAT_BITS:
            out.extend([0.0] * (n - k + 1))
            break
        out.append(a / b)
    return tuple(out)


_FLOAT_BITS = 1100  # a ratio below 2**-1100 rounds to 0.0 (the smallest float is 2**-1074)


def _pass_sd(passes: int, n: int) -> float | None:
    """The sample standard deviation of n 0/1 outcomes with ``passes`` ones: Σ(x − p)² = c(n − c)/n."""
    return math.sqrt(passes * (n - passes) / n / (n - 1)) if n >= 2 else None


def _spread(
    g: _Group,
    score_std: float | None,
    coverage_std: float | None,
    order_std: float | None,
    end_state_std: float | None,
) -> dict[str, tuple[float | None, int]]:
    """Each metric of a group's row -> (its sample standard deviation, the runs it is over)."""
    inc = g.included
    return {
        "score_mean": (score_std, g.scores.count),
        "coverage_mean": (coverage_std, g.coverage.count),
        "order_mean": (order_std, g.order.count),
        "end_state_mean": (end_state_std, g.end_state.count),
        "pass_rate": (_pass_sd(g.passes, inc), inc),
        "safe_pass_rate": (_pass_sd(g.safe_passes, inc), inc),
        "dangerous_rate": (_pass_sd(g.dangerous, inc), inc),
        "anti_procedure_rate": (_pass_sd(g.anti_procedure, inc), inc),
        "unsafe_rate": (_pass_sd(g.unsafe, inc), inc),
    }


def _group_stats(
    scenario_id: str, scenario_hash: str, model: str, g: _Group, level: float = DEFAULT_LEVEL, errors: bool = True
) -> dict[str, Any]:
    n, inc = g.n, g.included
    score_mean, score_std = g.scores.moments()
    if errors:
        coverage_mean, coverage_std = g.coverage.moments()
        order_mean, order_std = g.order.moments()
        end_state_mean, end_state_std = g.end_state.moments()
    else:  # their deviations are for the error bars only
        coverage_mean, order_mean, end_state_mean = g.coverage.mean(), g.order.mean(), g.end_state.mean()
    row = {
        "scenario_id": scenario_id,
        "scenario_hash": scenario_hash,
        "model": model,
        "n": n,
        "n_scored": inc,
        "score_mean": score_mean,
        "score_std": score_std,
        "score_median": _median(g.score_counts, g.scores.count),
        "coverage_mean": coverage_mean,
        "order_mean": order_mean,
        "end_state_mean": end_state_mean,
        "pass_rate": g.passes / inc if inc else None,
        "pass_hat_k": pass_hat_k(g.passes, inc),
        "dangerous_rate": g.dangerous / inc if inc else None,
        "provider_error_rate": g.statuses.get("provider_error", 0) / n,
        "invalid_rate": g.statuses.get("invalid_scenario", 0) / n,
        "incomplete_rate": g.statuses.get("incomplete", 0) / n,
        "small_n": inc < SMALL_N,
        # the safety gate's figures: additions after every earlier field (see the module docstring)
        "safe_pass_rate": g.safe_passes / inc if inc else None,
        "safe_pass_hat_k": pass_hat_k(g.safe_passes, inc),
        "anti_procedure_rate": g.anti_procedure / inc if inc else None,
        "unsafe_rate": g.unsafe / inc if inc else None,
        "unsafe_uncounted": g.unsafe_uncounted,
    }
    if not errors:
        return row
    spread = _spread(g, score_std, coverage_std, order_std, end_state_std)
    return intervals.beside(row, intervals.group_fields(row, spread, level))


def _scenario_mean(groups: list[dict[str, Any]], metric: str) -> float | None:
    return _mean([g[metric] for g in groups if g[metric] is not None])


def _rollup(
    model: str,
    groups: list[dict[str, Any]],
    level: float = DEFAULT_LEVEL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    bootstrap: bool = True,
    errors: bool = True,
) -> dict[str, Any]:
    with_runs = [g for g in groups if g["n_scored"] > 0]
    k_max = min((g["n_scored"] for g in with_runs), default=0)
    row = {
        "model": model,
        "scenarios": len(groups),
        "n": sum(g["n"] for g in groups),
        "n_scored": sum(g["n_scored"] for g in groups),
        "score_mean": _scenario_mean(groups, "score_mean"),
        "coverage_mean": _scenario_mean(groups, "coverage_mean"),
        "order_mean": _scenario_mean(groups, "order_mean"),
        "end_state_mean": _scenario_mean(groups, "end_state_mean"),
        "pass_rate": _mean([g["pass_rate"] for g in with_runs]),
        "pass_hat_k": [math.fsum(g["pass_hat_k"][k] for g in with_runs) / len(with_runs) for k in range(k_max)],
        "dangerous_rate": _mean([g["dangerous_rate"] for g in with_runs]),
        "small_n": any(g["small_n"] for g in groups),
        "safe_pass_rate": _mean([g["safe_pass_rate"] for g in with_runs]),
        "safe_pass_hat_k": [
            math.fsum(g["safe_pass_hat_k"][k] for g in with_runs) / len(with_runs) for k in range(k_max)
        ],
        "anti_procedure_rate": _mean([g["anti_procedure_rate"] for g in with_runs]),
        "unsafe_rate": _mean([g["unsafe_rate"] for g in with_runs]),
        "unsafe_uncounted": sum(g["unsafe_uncounted"] for g in groups),
    }
    if not errors:
        return row
    return intervals.beside(row, intervals.model_fields(row, groups, level, n_resamples, seed, bootstrap))


# where a run's field tuple holds its scenario id, scenario hash and model
_SCENARIO, _HASH, _MODEL = (RunSummary.__slots__.index(name) for name in ("scenario_id", "scenario_hash", "model"))


def _fields(run: RunSummary) -> tuple:
    return tuple(getattr(run, name) for name in RunSummary.__slots__)


def _merge_state(into: Any, other: Any) -> None:
    """Add ``other``'s accumulated state to ``into`` (of one class), slot by slot, by the kind of
    value: counts add, value -> count maps add per key, nested accumulators (``_Sum``) merge the same
    way. Nothing here names a field, so a count or a sum added to ``_Group`` merges as it is; a
    float would not merge exactly, and is refused."""
    for name in type(into).__slots__:
        mine, theirs = getattr(into, name), getattr(other, name)
        if isinstance(mine, dict):
            for key, value in theirs.items():
                total = mine.get(key, 0) + value
                if total or key in mine:
                    mine[key] = total
        elif isinstance(mine, int) and not isinstance(mine, bool):
            setattr(into, name, mine + theirs)
        elif hasattr(type(mine), "__slots__"):
            _merge_state(mine, theirs)
        else:
            raise TypeError(f"cannot merge {type(into).__name__}.{name} ({type(mine).__name__}) exactly")


@dataclass(slots=True)
class AggregatePartial:
    """What :meth:`Aggregator.partial` gives and :meth:`Aggregator.merge` takes: the runs by run_id
    (as tuples of the RunSummary fields, for a later run_id to replace), the groups' sums (None
    when there are about as many groups as runs: the runs are sent anyway and cost less to add
    again than the groups to send), and the (scenario id, content hash) pairs seen."""

    runs: dict[str, tuple]
    groups: dict[tuple[str, str, str], _Group] | None
    scenarios: list[tuple[str, str]]
    include_errors: bool


class Aggregator:
    """Streaming aggregation: feed ScoreCards (or RunSummary) one at a time, then ``result()``.
    Groups keep sums, not runs (see ``_Group``); the one thing kept per run is its small summary by
    run_id, so that a run_id read again can replace the earlier run (``warn`` hears about scenario ids
    with two contents).

    ``level`` is the confidence level of every interval; ``n_resamples`` and ``seed`` drive the
    pass^k bootstrap (same seed, same output).
    """

    def __init__(
        self,
        include_errors: bool = False,
        level: float = DEFAULT_LEVEL,
        n_resamples: int = DEFAULT_RESAMPLES,
        seed: int = DEFAULT_SEED,
        warn: Callable[[str], None] | None = None,
    ):
        self.warn = warn
        self._runs: dict[str, RunSummary | tuple] = {}  # a merged run: its fields
        self._hashes: dict[str, set[str]] = {}
        self._noted: set[tuple[str, str]] = set()  # the (scenario id, content hash) pairs in _hashes
        self.include_errors = include_errors
        self.level = check_level(level)
        self.n_resamples = check_resamples(n_resamples)
        self.seed = seed
        self._counted = frozenset({"scored", "provider_error"} if include_errors else {"scored"})
        self._groups: dict[tuple[str, str, str], _Group] = {}
        # merged runs not yet added to their groups: a result works them in where its models are
        # worked out (a pool's workers), anything else adds them here first (_fold)
        self._unfolded: list[tuple] = []
        self._anonymous = 0  # runs added without a run_id: in the groups only

    def note(self, scenario_id: str, scenario_hash: str) -> None:
        """A run of this scenario content is coming (``add`` and ``merge`` say so themselves): a
        caller that merges partials calls it per run, in input order, so that the warning about
        an id with two contents comes where one-by-one adding would give it."""
        hashes = self._hashes.setdefault(scenario_id, set())
        if scenario_hash not in hashes:
            self._noted.add((scenario_id, scenario_hash))
            if hashes and self.warn:
                self.warn(
                    f"warning: scenario {scenario_id!r} occurs with different content "
                    f"({', '.join(sorted(hashes | {scenario_hash}))}); aggregated as separate "
                    "groups labelled by content hash"
                )
            hashes.add(scenario_hash)

    def note_all(self, scenarios: Iterable[tuple[str, str]]) -> None:
        """:meth:`note` each (scenario id, content hash) of ``scenarios`` in order (a batch's runs'),
        the many noted before passed over at once."""
        ordered = dict.fromkeys(scenarios)
        fresh = ordered.keys() - self._noted
        if fresh:
            for scenario in ordered:
                if scenario in fresh:
                    self.note(*scenario)

    def _fold(self) -> None:
        """Add the merged runs not yet in their groups."""
        if self._unfolded:
            _fold_runs(self._groups, self._unfolded, self._counted)
            self._unfolded = []

    def _replace(self, run_id: str, run: RunSummary | tuple) -> None:
        earlier = self._runs.get(run_id)
        if earlier is not None:
            if not isinstance(earlier, RunSummary):
                earlier = RunSummary(*earlier)
            self._groups[(earlier.scenario_id, earlier.scenario_hash, earlier.model)].add(earlier, self._counted, -1)
        self._runs[run_id] = run

    def add(self, card: Any) -> None:
        self._fold()
        run = card if isinstance(card, RunSummary) else RunSummary.of(card)
        self.note(run.scenario_id, run.scenario_hash)
        if run.run_id is not None:
            self._replace(run.run_id, run)
        else:
            self._anonymous += 1
        key = (run.scenario_id, run.scenario_hash, run.model)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        group.add(run, self._counted)

    def partial(self, sparse: bool = True) -> AggregatePartial:
        """This aggregator's state, small and cheap to send: a worker aggregates its batch and the
        parent merges the partials (:meth:`merge`) in input order, with the same result, bit for bit, as
        adding every run here (the sums are exact). It holds this aggregator's own groups, which a
        merge may take as they are: take it when nothing more is added here (a batch's aggregator).
        ``sparse=False``: the groups always (a partial merged in this process is not sent)."""
        self._fold()
        runs = {run_id: run if isinstance(run, tuple) else _fields(run) for run_id, run in self._runs.items()}
        scenarios = [(sid, h) for sid, hashes in self._hashes.items() for h in sorted(hashes)]
        # a group costs about two runs to send and merge: with fewer than two runs a group, the runs alone
        groups = self._groups if not sparse or self._anonymous or 2 * len(self._groups) <= len(runs) else None
        return AggregatePartial(runs, groups, scenarios, self.include_errors)

    def merge(self, partial: AggregatePartial) -> None:
        """Add the runs a :meth:`partial` holds, as if they were added here one by one after the
        runs already added: a run_id seen before replaces the earlier run."""
        if partial.include_errors != self.include_errors:
            raise ValueError("cannot merge aggregates counted with and without provider errors")
        for scenario_id, scenario_hash in partial.scenarios:
            self.note(scenario_id, scenario_hash)
        if partial.groups is None:  # its runs, added here
            if not self._runs.keys().isdisjoint(partial.runs):  # a run_id read before: replaced
                for fields in partial.runs.values():
                    self.add(RunSummary(*fields))
                return
            self._runs.update(partial.runs)  # the usual batch (its scenarios were noted above)
            self._unfolded.extend(partial.runs.values())
            return
        self._fold()
        if self._runs.keys().isdisjoint(partial.runs):  # the usual batch: no run_id read before
            self._runs.update(partial.runs)
        else:
            for run_id, run in partial.runs.items():
                self._replace(run_id, run)
        for key, group in partial.groups.items():
            mine = self._groups.get(key)
            if mine is None:  # a partial's groups are its own (sent, or a batch's, dropped after): taken as they are
                self._groups[key] = group
            else:
                _merge_state(mine, group)

    def result(self, bootstrap: bool = True, errors: bool = True, map_models: Callable = map) -> dict[str, Any]:
        """The groups and the per-model rollup with their error bars; ``bootstrap=False``: without
        the pass^k bootstrap (:func:`evalkit.aggregate.uncertainty.intervals.model_fields`), for
        callers that show the rest only; ``errors=False``: without any error bar (no ``_se``,
        ``_ci``, ``se_reasons`` or ``se_method``), for a caller that adds the few it shows with
        :meth:`add_errors`. Each model's groups and rollup are worked out apart from the other
        models', by ``map_models`` (called like the builtin with :func:`model_result` and sequences: a
        pool's map works them out side by side)."""
        by_model: dict[str, tuple[list[tuple[tuple[str, str, str], _Group]], list[tuple]]] = {}
        for key, g in self._groups.items():
            by_model.setdefault(key[2], ([], []))[0].append((key, g))
        for fields in self._unfolded:
            by_model.setdefault(fields[_MODEL], ([], []))[1].append(fields)
        models = sorted(by_model)
        n = len(models)
        multi = {scenario for scenario, hashes in self._hashes.items() if len(hashes) > 1}
        done = map_models(
            model_result,
            models,
            *zip(*(by_model[m] for m in models)),
            *([x] * n for x in (multi, self._counted, self.level, self.n_resamples, self.seed, bootstrap, errors)),
        )
        keyed, rollups = [], []
        for rows, rollup in done:
            keyed += rows
            rollups.append(rollup)
        keyed.sort(key=_key)
        return {
            "include_errors": self.include_errors,
            "uncertainty": {
                "level": self.level,
                "group_se": intervals.GROUP_SE_METHOD,
                "model_se": intervals.MODEL_SE_METHOD,
                "pass_hat_k": f"percentile bootstrap over scenarios, {self.n_resamples} resamples, seed {self.seed}",
            },
            "groups": [row for _, row in keyed],  # in (scenario, hash, model) order
            "models": rollups,
        }

    def add_errors(self, result: dict[str, Any], metrics: Collection[str]) -> None:
        """Add to ``result`` (this aggregator's :meth:`result` with ``errors=False``, nothing added
        since) each metric's ``<metric>_se`` and ``<metric>_ci``, in its groups and its models, as
        :meth:`result` gives them (``metrics``: of intervals.METRICS and SAFETY_METRICS)."""
        self._fold()
        states = [g for _, g in sorted(self._groups.items()) if g.n]
        for row, g in zip(result["groups"], states):
            stds = [s.moments()[1] for s in (g.scores, g.coverage, g.order, g.end_state)]
            fields = intervals.group_fields(row, _spread(g, *stds), self.level, metrics)
            del fields["se_reasons"]
            row.update(fields)
        for row, (_, gs) in zip(result["models"], _by_model(result["groups"])):
            fields = intervals.model_fields(row, gs, self.level, metrics=metrics)
            del fields["se_method"], fields["se_reasons"]
            row.update(fields)


def model_result(
    model: str,
    groups: list[tuple[tuple[str, str, str], _Group]],
    runs: list[tuple],
    multi: Collection[str],
    counted: frozenset[str],
    level: float,
    n_resamples: int,
    seed: int,
    bootstrap: bool,
    errors: bool,
) -> tuple[list[tuple[tuple[str, str, str], dict[str, Any]]], dict[str, Any]]:
    """One model's part of :meth:`Aggregator.result`: its groups' rows, each with its key (scenario
    id, hash, model), and its rollup. ``groups``: its groups' states (left as they are), ``runs``:
    its runs not yet in them (as field tuples), ``multi``: the scenario ids with more than one
    content (their groups labelled ``id@hash``)."""
    states = dict(groups)
    if runs:  # into copies: the states given may be the aggregator's own
        touched: dict[tuple[str, str, str], _Group] = {}
        for fields in runs:
            key = (fields[_SCENARIO], fields[_HASH], model)
            if key not in touched:
                touched[key] = copy = _Group()
                if key in states:
                    _merge_state(copy, states[key])
        _fold_runs(touched, runs, counted)
        states.update(touched)
    rows = [
        (key, _group_stats(f"{key[0]}@{key[1]}" if key[0] in multi else key[0], key[1], model, g, level, errors))
        for key, g in sorted(states.items(), key=_key)
        if g.n
    ]
    return rows, _rollup(model, [row for _, row in rows], level, n_resamples, seed, bootstrap, errors)


def _key(item: tuple) -> tuple[str, str, str]:
    return item[0]


def _fold_runs(groups: dict[tuple[str, str, str], _Group], runs: list[tuple], counted: frozenset[str]) -> None:
    """Add ``runs`` (field tuples) to their groups in ``groups``, new groups made as needed."""
    for fields in runs:
        run = RunSummary(*fields)
        key = (run.scenario_id, run.scenario_hash, run.model)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group()
        group.add(run, counted)


def _by_model(groups: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The group rows of each model, the models in order."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        by_model.setdefault(g["model"], []).append(g)
    return sorted(by_model.items())


def aggregate(
    cards: Iterable[Any],
    include_errors: bool = False,
    level: float = DEFAULT_LEVEL,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """``evalkit score --aggregate``: the per (scenario, model) groups and the per-model rollup of
    ``cards``, with their error bars (see :class:`Aggregator` for the rules)."""
    agg = Aggregator(include_errors, level, n_resamples, seed)
    for card in cards:
        agg.add(card)
    return agg.result()
