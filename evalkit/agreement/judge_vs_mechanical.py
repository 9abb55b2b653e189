"""Judge ↔ mechanical pairs: build them from the database and compute each pairing's statistics.

Choices the issue leaves open (documented in docs/audit.md):

- Only blind (``blind = 1``), primary (``replicate = 0``), ``ok`` annotations are paired; when a
  run was judged twice by the same model and rubric (a new rubric version), the latest answer wins.
- Runs whose status is ``provider_error`` or ``invalid_scenario`` are not paired (their signals
  describe infrastructure, not the agent).
- The confusion matrix has the judge's label in rows and the mechanical label in columns.
- Confidence: the judge's ``confidence`` is the probability of the label it gave; the rest of the
  mass is spread evenly over the other labels of the pairing's scale. The "top probability" of
  the reliability bands, the ECE and the escalation count is that confidence.
- Bootstrap intervals resample pairs (with one judge model per slice, a pair is a run).
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from evalkit.agreement.pairings_config import AuditConfig, Pairing
from evalkit.agreement.self_judging import same_model
from evalkit.agreement.sources import EXCLUDED_STATUSES, Card, JudgeValue

# NOT_APPLICABLE starts the reason of a statistic that does not apply (renderers show it quietly)
from evalkit.agreement.stats.registry import NOT_APPLICABLE, ORDERED  # noqa: F401 (drift, raters)

if TYPE_CHECKING:
    import numpy as np

SLICE_KINDS = ("scenario", "model", "judge", "rubric")
RATIONALE_CHARS = 240


def _stats():
    from evalkit.agreement import stats  # numpy: only on the audit path

    return stats


def na(reason: str) -> dict[str, Any]:
    return {"value": None, "reason": reason}


class Pair(NamedTuple):  # one per judged run and pairing: 10^6 at scale
    pairing: str
    run_id: str
    judge_model: str
    rubric: str
    scenario_id: str
    model: str
    path: str
    judge_raw: Any
    judge_value: Any
    mechanical_value: Any
    confidence: float | None
    rationale: str
    judge_index: int  # positions on the pairing's scale (least credit first)
    mechanical_index: int

    def slice_key(self, kind: str) -> str:
        return getattr(self, _SLICE_FIELDS[kind])


_SLICE_FIELDS = {"scenario": "scenario_id", "model": "model", "judge": "judge_model", "rubric": "rubric"}


class PairList(Sequence[Pair]):
    """One pairing's pairs held as columns (10^6 pairs at scale): each pair's judge value and card,
    its two labels and their positions on the scale. A :class:`Pair` is made when one is read;
    the audit's statistics read the columns."""

    __slots__ = ("pairing", "answers", "cards", "judge_labels", "mechanical_labels", "judge_at", "mechanical_at")

    def __init__(self, pairing: Pairing) -> None:
        self.pairing = pairing
        self.answers: list[JudgeValue] = []
        self.cards: list[Card] = []
        self.judge_labels: list[Any] = []
        self.mechanical_labels: list[Any] = []
        self.judge_at = array("q")  # positions on the pairing's scale
        self.mechanical_at = array("q")

    def __len__(self) -> int:
        return len(self.answers)

    def _pair(self, i: int) -> Pair:
        v, card = self.answers[i], self.cards[i]
        return tuple.__new__(
            Pair,
            (
                self.pairing.name,
                v.run_id,
                v.judge_model,
                v.rubric_id,
                card.scenario_id,
                card.model,
                card.path,
                v.value,
                self.judge_labels[i],
                self.mechanical_labels[i],
                v.confidence if self.pairing.confidence else None,
                v.rationale,
                self.judge_at[i],
                self.mechanical_at[i],
            ),
        )

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._pair(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("pair index out of range")
        return self._pair(i)

    def __iter__(self) -> Iterator[Pair]:
        return map(self._pair, range(len(self)))

    def disagreeing_at(self) -> Iterator[int]:
        """The rows whose judge and mechanical positions differ, in order (one at a time)."""
        import numpy as np  # only on the audit path

        return map(int, np.flatnonzero(np.array(self.judge_at) != np.array(self.mechanical_at)))

    def confidences(self) -> Iterator[float | None]:
        """Each pair's ``confidence`` (None throughout when the pairing does not use it)."""
        if self.pairing.confidence:
            return map(_confidence, self.answers)
        return repeat(None, len(self))

    def column(self, field: str) -> Iterator[Any]:
        """One of the Pair fields a slice reads (scenario_id, model, judge_model, rubric), per pair."""
        if field in ("scenario_id", "model"):
            return map(operator.attrgetter(field), self.cards)
        return map(operator.attrgetter("rubric_id" if field == "rubric" else field), self.answers)


@dataclass
class PairSet:
    pairing: Pairing
    pairs: Sequence[Pair]  # a PairList from build_pairs
    counts: Counter  # why candidate pairs were left out


def build_pairs(cards: Iterable[Card], judge_values: Iterable[JudgeValue], config: AuditConfig) -> list[PairSet]:
    by_run = {c.run_id: c for c in cards}
    wanted: dict[tuple[str, str], list[Pairing]] = defaultdict(list)
    for p in config.pairings:
        wanted[(p.rubric, p.judge_dimension)].append(p)
    sets = {p.name: PairSet(p, PairList(p), Counter()) for p in config.pairings}
    # (judge, rubric, dimension) -> its pairings and its code: the place of its answer in a run's
    # list of latest answers (a list per run, not a dict: 10^5 of them at scale)
    known: dict[tuple[str, str, str], tuple[list[Pairing], int]] = {}
    names: list[tuple[str, str, str]] = []  # by code: those with a blind, primary answer
    latest: dict[str, list[JudgeValue | None]] = {}
    for v in judge_values:  # oldest first
        name = (v.judge_model, v.rubric_id, v.dimension)
        seen = known.get(name)
        if seen is None:
            seen = known[name] = (wanted.get(name[1:]) or [], -1)
        pairings, code = seen
        if not pairings:
            continue
        if not v.blind:
            for p in pairings:
                sets[p.name].counts["non_blind"] += 1
            continue
        if v.replicate != 0:
            continue
        if code < 0:
            code = len(names)
            names.append(name)
            known[name] = (pairings, code)
        slots = latest.get(v.run_id)
        if slots is None:
            slots = latest[v.run_id] = [None] * len(names)
        elif len(slots) <= code:
            slots.extend([None] * (code + 1 - len(slots)))
        slots[code] = v
    # Per pairing, a judge value's label and a card's label are worked out once, each with its
    # position on the scale (taken only when the pair is kept): few distinct values, and cards with
    # the same signals share one dict. What a pairing reads and fills, by name:
    state = {p.name: _Filling(sets[p.name], p, {}, {}, {}, {}, sets[p.name].pairs) for p in config.pairings}
    positions: dict[tuple[str, type, Any], int] = {}

    def index(p: Pairing, label: Any) -> int:
        key = (p.name, type(label), label)
        at = positions.get(key)
        if at is None:
            at = positions[key] = p.index(label)
        return at

    # the runs in order, each run's answers in (judge, rubric, dimension) order: with few names,
    # one sorted list of their codes serves every run
    try:
        order = sorted(range(len(names)), key=names.__getitem__)
        few = len(order) <= 32
    except TypeError:  # names that do not compare (a missing judge): each run's sorted as they are
        order, few = [], False
    filling = [[state[p.name] for p in known[name][0]] for name in names]  # by code
    for run in sorted(latest):
        slots = latest[run]
        card = by_run.get(run)
        present = len(slots)
        for code in (
            order if few else sorted((c for c in range(present) if slots[c] is not None), key=names.__getitem__)
        ):
            v = slots[code] if code < present else None
            if v is None:
                continue
            value = v.value
            try:
                vkey = (type(value), value)
                hash(vkey)
            except TypeError:  # an unhashable value: its label is not kept
                vkey = None
            for f in filling[code]:
                if card is None:
                    f.ps.counts["no_scorecard"] += 1
                    continue
                if card.status in EXCLUDED_STATUSES:
                    f.ps.counts["excluded_status"] += 1
                    continue
                p = f.pairing
                if vkey is None:
                    j = p.judge_label(value)
                elif vkey in f.judged:
                    j = f.judged[vkey]
                else:
                    j = f.judged[vkey] = p.judge_label(value)
                mkey = id(card.card)
                if mkey in f.marked:
                    m = f.marked[mkey]
                else:
                    m = f.marked[mkey] = p.mechanical_label(card.card)
                if j is None:
                    f.ps.counts["unmapped_judge"] += 1
                if m is None:
                    f.ps.counts["unmapped_mechanical"] += 1
                if j is None or m is None:
                    continue
                ji = f.judged_at.get(vkey) if vkey is not None else None
                if ji is None:
                    ji = index(p, j)
                    if vkey is not None:
                        f.judged_at[vkey] = ji
                mi = f.marked_at.get(mkey)
                if mi is None:
                    mi = f.marked_at[mkey] = index(p, m)
                f.pairs.answers.append(v)
                f.pairs.cards.append(card)
                f.pairs.judge_labels.append(j)
                f.pairs.mechanical_labels.append(m)
                f.pairs.judge_at.append(ji)
                f.pairs.mechanical_at.append(mi)
    return [sets[p.name] for p in config.pairings]


class _Filling(NamedTuple):
    """What build_pairs reads and fills for one pairing."""

    ps: PairSet
    pairing: Pairing
    judged: dict[Any, Any]  # (type, value) -> the judge's label
    judged_at: dict[Any, int]  # (type, value) -> that label's position
    marked: dict[int, Any]  # id(card dict) -> the mechanical label
    marked_at: dict[int, int]  # id(card dict) -> that label's position
    pairs: PairList


def pairing_stats(
    p: Pairing, pairs: list[Pair], config: AuditConfig, bootstrap: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every statistic of one pairing over ``pairs``; undefined ones are null with a reason."""
    return _pairing_result(p, _compare(p, pairs, config, bootstrap=bootstrap), _recorded(pairs))


def _compare(p: Pairing, pairs: list[Pair], config: AuditConfig, *, bootstrap: dict[str, Any] | None = None):
    """The judge's labels (predictions) against the mechanical ones (references) on the pairing's
    scale, through the comparison engine; the judge's confidence feeds calibration when the
    pairing says so (see the module docstring for how a confidence becomes a forecast)."""
    from evalkit.agreement.label_comparison import compare

    predictions, references, probabilities, confidences = _inputs(p, pairs)
    return compare(
        predictions,
        references,
        list(p.scale),
        level=p.level,
        probabilities=probabilities,
        confidences=confidences,
        threshold=config.escalation_threshold,
        ece_bins=config.ece_bins,
        bootstrap=None if bootstrap is None else dict(bootstrap, ci=config.ci),
    )


def _inputs(p: Pairing, pairs: list[Pair]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The comparison engine's inputs for ``pairs``: judge and mechanical positions, and (when the
    pairing uses the judge's confidence) each pair's forecast and confidence (a row of NaN, and
    NaN, where a pair has none)."""
    import numpy as np  # only on the audit path

    n, k = len(pairs), len(p.scale)
    if isinstance(pairs, PairList):
        predictions = np.array(pairs.judge_at, dtype=np.int64)
        references = np.array(pairs.mechanical_at, dtype=np.int64)
    else:
        predictions = np.fromiter(map(_judge_index, pairs), np.int64, n)
        references = np.fromiter(map(_mechanical_index, pairs), np.int64, n)
    probabilities = confidences = None
    if p.confidence:
        # a confidence outside [0, 1] (or NaN) is not a probability: left out, and counted
        confidences = np.fromiter(
            (c if c is not None and 0.0 <= c <= 1.0 else math.nan for c in _confidences(pairs)), float, n
        )
        rest = (1.0 - confidences) / (k - 1)
        top = np.arange(k)[None, :] == predictions[:, None]
        probabilities = np.where(top, confidences[:, None], rest[:, None])
    return predictions, references, probabilities, confidences


_judge_index = operator.attrgetter("judge_index")
_mechanical_index = operator.attrgetter("mechanical_index")
_confidence = operator.attrgetter("confidence")


def _confidences(pairs: Sequence[Pair]) -> Iterator[float | None]:
    return pairs.confidences() if isinstance(pairs, PairList) else map(_confidence, pairs)


def _recorded(pairs: Sequence[Pair]) -> int:
    """How many of ``pairs`` carry a judge confidence (usable or not)."""
    return sum(1 for c in _confidences(pairs) if c is not None)


def _pairing_result(p: Pairing, cmp, recorded: int) -> dict[str, Any]:
    """The audit's JSON layout of one comparison; ``recorded``: how many of its pairs carry a
    judge confidence (usable or not)."""
    out: dict[str, Any] = {"n": cmp.n}
    out.update(cmp.stats)  # every registered statistic, in the registry's order
    out["confusion_matrix"] = {
        "labels": cmp.labels,
        "row_axis": "judge",
        "column_axis": "mechanical",
        "matrix": cmp.confusion,
    }
    out["lenient"] = cmp.more_credit
    out["strict"] = cmp.less_credit
    out.update(_calibration(p, cmp, recorded))
    for name, interval in cmp.intervals.items():
        out[name] = dict(out[name], ci_low=interval["low"], ci_high=interval["high"], bootstrap=interval)
    return out


def _calibration(p: Pairing, cmp, recorded: int) -> dict[str, Any]:
    empty = {
        "n_with_confidence": 0,
        "n_invalid_confidence": 0,
        "brier": None,
        "ece": None,
        "reliability_bands": None,
        "escalation": None,
    }
    if not p.confidence:
        reason = NOT_APPLICABLE + "the pairing does not use the judge's confidence"
        return empty | {
            "brier": na(reason),
            "ece": na(reason),
            "reliability_bands": na(reason),
            "escalation": na(reason),
        }
    cal = cmp.calibration
    invalid = recorded - len(cal.rows)
    if not cal.rows:
        reason = "no judge confidence recorded" if not invalid else "no judge confidence within [0, 1]"
        return empty | {
            "n_invalid_confidence": invalid,
            "brier": na(reason),
            "ece": na(reason),
            "reliability_bands": na(reason),
            "escalation": na(reason),
        }
    return {
        "n_with_confidence": len(cal.rows),
        "n_invalid_confidence": invalid,
        "brier": cal.brier,
        "ece": cal.ece,
        "reliability_bands": cal.bands,
        "escalation": cal.escalation,
    }


def slice_stats(
    p: Pairing, pairs: list[Pair], config: AuditConfig, kinds: Iterable[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per slice kind, the pairing's statistics over each key's pairs (keys sorted; no intervals)."""
    import numpy as np  # only on the audit path

    from evalkit.agreement.label_comparison import compare

    predictions, references, probabilities, confidences = _inputs(p, pairs)  # once for every kind
    n = len(pairs)
    recorded = np.fromiter(map(operator.is_not, _confidences(pairs), repeat(None)), bool, n)
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        if isinstance(pairs, PairList):
            keys = list(pairs.column(_SLICE_FIELDS[kind]))
        else:
            keys = list(map(_SLICE_GETTERS[kind], pairs))
        code_of = {key: c for c, key in enumerate(dict.fromkeys(keys))}  # one pass: a scan per key is quadratic
        codes = np.fromiter(map(code_of.__getitem__, keys), np.intp, n)
        del keys
        order = np.argsort(codes, kind="stable")  # each key's rows in pair order
        bounds = np.cumsum(np.bincount(codes, minlength=len(code_of)))
        out[kind] = []
        for key in sorted(code_of):
            c = code_of[key]
            idx = order[(bounds[c - 1] if c else 0) : bounds[c]]
            sub = compare(
                predictions[idx],
                references[idx],
                list(p.scale),
                level=p.level,
                probabilities=None if probabilities is None else probabilities[idx],
                confidences=None if confidences is None else confidences[idx],
                threshold=config.escalation_threshold,
                ece_bins=config.ece_bins,
            )
            out[kind].append({"key": key} | _pairing_result(p, sub, int(recorded[idx].sum())))
    return out


_SLICE_GETTERS = {kind: operator.attrgetter(name) for kind, name in _SLICE_FIELDS.items()}


def rank_key(p: Pairing, order: int, direction: str, gap_share: float, run_id: str, judge_model: str) -> tuple:
    """Where a disagreement of pairing ``p`` (the ``order``-th pairing) ranks in :func:`disagreements`."""
    rank = p.lenient_rank if (direction == "lenient" and p.lenient_rank is not None) else None
    return (0 if rank is not None else 1, rank or 0, -gap_share, order, run_id, judge_model)


def disagreements(sets: list[PairSet], top: int | None = None) -> list[dict[str, Any]]:
    """The disagreements, ranked: lenient on pairings with a lenient_rank (safety 0, outcome 1)
    first, then by the size of the gap as a share of the scale, then pairing order, run, judge
    (:func:`rank_key`). ``top`` lists only that many of the worst (None or 0: all of them); only
    those become records (:func:`disagreeing` counts them all). The ranking is one lexsort over
    columns: the rank key is unique (one pair per pairing, run and judge)."""
    import numpy as np  # only on the audit path

    st = _stats()
    own: dict[tuple[str, str], bool] = {}  # few judge and agent models: each pair checked once
    excerpts: dict[str, str] = {}  # an annotation's rationale serves each of its dimensions
    names = ("first", "rank", "gap", "order", "row", "direction", "runs", "judges")
    columns: dict[str, list[Any]] = {k: [] for k in names}
    held: list[tuple[Pairing, Sequence[Pair], list[str | None]]] = []  # per pairing: its pairs and directions
    for order, ps in enumerate(sets):
        p, pairs = ps.pairing, ps.pairs
        labels = list(p.scale)
        if isinstance(pairs, PairList):  # the columns' own buffers, not copies
            judge_at = np.frombuffer(pairs.judge_at, np.int64)
            mechanical_at = np.frombuffer(pairs.mechanical_at, np.int64)
        else:
            judge_at, mechanical_at = (np.fromiter(c, np.int64) for c in _positions(pairs))
        rows = np.flatnonzero(judge_at != mechanical_at)
        j, m = judge_at[rows], mechanical_at[rows]
        # the direction of each (judge, mechanical) position pair, from its first pair's labels
        _, first, code = np.unique(np.stack([j, m]), axis=1, return_index=True, return_inverse=True)
        found = [
            st.direction(x.judge_value, x.mechanical_value, labels)
            for x in map(pairs.__getitem__, rows[first].tolist())
        ]
        code = code.reshape(-1)
        lenient = np.array([d == "lenient" for d in found], dtype=bool)[code]
        ranked = lenient if p.lenient_rank is not None else np.zeros(len(rows), dtype=bool)
        columns["first"].append((~ranked).astype(np.int8))
        columns["rank"].append(np.where(ranked, p.lenient_rank or 0, 0))
        columns["gap"].append(-(np.abs(j - m) / (len(labels) - 1)))
        columns["order"].append(np.full(len(rows), order, dtype=np.int32))
        columns["row"].append(rows)
        records = pairs.answers if isinstance(pairs, PairList) else pairs  # each with run_id and judge_model
        at = rows.tolist()
        columns["runs"].extend(records[i].run_id for i in at)
        columns["judges"].extend(records[i].judge_model for i in at)
        del at
        columns["direction"].append(code.astype(np.int32))
        held.append((p, pairs, found))
    if not columns["runs"]:
        return []
    run_codes, judge_codes = (_sorted_codes(columns[k]) for k in ("runs", "judges"))
    del columns["runs"], columns["judges"]
    first, rank, gap, order, row, direction = (
        np.concatenate(columns[k]) for k in ("first", "rank", "gap", "order", "row", "direction")
    )
    ranking = np.lexsort((judge_codes, run_codes, order, gap, rank, first))
    if top:
        ranking = ranking[:top]
    out = []
    for k in ranking.tolist():
        p, pairs, found = held[order[k]]
        x = pairs[int(row[k])]
        steps = abs(x.judge_index - x.mechanical_index)
        models = (x.judge_model, x.model)
        if models not in own:
            own[models] = same_model(*models)
        if x.rationale not in excerpts:
            excerpts[x.rationale] = excerpt(x.rationale)
        out.append(
            {
                "pairing": p.name,
                "run_id": x.run_id,
                "path": x.path,
                "scenario_id": x.scenario_id,
                "model": x.model,
                "judge_model": x.judge_model,
                "self_judged": own[models],
                "rubric": x.rubric,
                "judge_value": x.judge_value,
                "judge_raw": x.judge_raw,
                "mechanical_value": x.mechanical_value,
                "direction": found[direction[k]],
                "gap": steps,
                "gap_share": steps / (len(p.scale) - 1),
                "rationale": excerpts[x.rationale],
            }
        )
    return out


def _sorted_codes(keys: list[str]) -> np.ndarray:
    """Each key's place among the distinct keys in sorted order (an order-preserving integer code)."""
    import numpy as np  # only on the audit path

    place = {key: i for i, key in enumerate(sorted(set(keys)))}
    return np.fromiter(map(place.__getitem__, keys), np.int64, len(keys))


def _first(item: tuple) -> Any:
    return item[0]


def _positions(pairs: Sequence[Pair]) -> tuple[Iterable[int], Iterable[int]]:
    if isinstance(pairs, PairList):
        return pairs.judge_at, pairs.mechanical_at
    return map(_judge_index, pairs), map(_mechanical_index, pairs)


def judge_and_agent_models(pairs: Sequence[Pair]) -> Iterator[tuple[str, str]]:
    """Each pair's (judge_model, model)."""
    if isinstance(pairs, PairList):
        return zip(pairs.column("judge_model"), pairs.column("model"))
    return ((x.judge_model, x.model) for x in pairs)


def count_disagreements(sets: list[PairSet]) -> int:
    """How many pairs disagree (what :func:`disagreeing` yields, counted in C)."""
    return sum(sum(map(operator.ne, *_positions(ps.pairs))) for ps in sets)


def disagreeing(sets: list[PairSet]) -> Iterator[dict[str, str]]:
    """The pairing and run of every disagreement, one at a time (what adjudications count)."""
    for ps in sets:
        if isinstance(ps.pairs, PairList):
            name, answers = ps.pairing.name, ps.pairs.answers
            for i in ps.pairs.disagreeing_at():
                yield {"pairing": name, "run_id": answers[i].run_id}
            continue
        for x in ps.pairs:
            if x.judge_index != x.mechanical_index:
                yield {"pairing": x.pairing, "run_id": x.run_id}


def excerpt(text: str, limit: int = RATIONALE_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def pair_rows(sets: list[PairSet]) -> list[dict[str, Any]]:
    """The --pairs-out rows: every compared pair, in pairing order then item and judge."""
    rows = []
    for ps in sets:
        for x in sorted(ps.pairs, key=lambda x: (x.run_id, x.judge_model, x.rubric)):
            rows.append(
                {
                    "pairing": x.pairing,
                    "item_id": x.run_id,
                    "judge_model": x.judge_model,
                    "judge_value": x.judge_value,
                    "mechanical_value": x.mechanical_value,
                }
            )
    return rows
