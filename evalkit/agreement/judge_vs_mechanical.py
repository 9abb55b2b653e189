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
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from evalkit.agreement.pairings_config import AuditConfig, Pairing
from evalkit.agreement.self_judging import same_model
from evalkit.agreement.sources import EXCLUDED_STATUSES, Card, JudgeColumns

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
    """One pairing's pairs held as columns (10^6 pairs at scale): each pair's row in the judge
    values (:class:`~evalkit.db.judge.JudgeColumns`), its card, its two labels (codes into the
    pairing's labels) and their positions on the scale. A :class:`Pair` is made when one is read;
    the audit's statistics read the columns."""

    __slots__ = ("pairing", "values", "rows", "cards", "card_at", "labels", "judge_label", "mechanical_label")
    __slots__ += ("judge_at", "mechanical_at", "card_codes")

    def __init__(
        self, pairing: Pairing, values: JudgeColumns, cards: list[Card], card_codes: dict[str, Any] | None = None
    ) -> None:
        import numpy as np  # only on the audit path

        self.pairing = pairing
        self.values = values
        self.cards = cards  # every card; card_at: each pair's
        # field -> (each card's code, the distinct keys): worked out once for the pairings sharing the cards
        self.card_codes = {} if card_codes is None else card_codes
        self.labels: list[Any] = []  # the labels the pairs hold, each once
        empty = np.zeros(0, dtype=np.int64)
        self.rows = self.card_at = self.judge_label = self.mechanical_label = empty
        self.judge_at = self.mechanical_at = empty  # positions on the pairing's scale

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self.take(range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("pair index out of range")
        return self.take((i,))[0]

    def __iter__(self) -> Iterator[Pair]:
        for start in range(0, len(self), 10_000):  # a chunk's pairs made column by column at a time
            yield from self.take(range(start, min(start + 10_000, len(self))))

    def take(self, at: Iterable[int]) -> list[Pair]:
        """The pairs at ``at`` (positions), made column by column."""
        import numpy as np  # only on the audit path

        at = np.fromiter(at, np.int64)
        v, r = self.values, self.rows[at]
        cards = [self.cards[c] for c in self.card_at[at].tolist()]
        if self.pairing.confidence:
            confidences = [None if c != c else c for c in v.confidence[r].tolist()]
        else:
            confidences = [None] * len(at)
        name, labels, new = self.pairing.name, self.labels, tuple.__new__
        return [
            new(
                Pair,
                (
                    name,
                    run,
                    judge,
                    rubric,
                    card.scenario_id,
                    card.model,
                    card.path,
                    raw,
                    labels[j],
                    labels[m],
                    c,
                    why,
                    ji,
                    mi,
                ),
            )
            for run, judge, rubric, card, raw, j, m, c, why, ji, mi in zip(
                map(v.runs.__getitem__, v.run[r].tolist()),
                map(v.judges.__getitem__, v.judge[r].tolist()),
                map(v.rubrics.__getitem__, v.rubric[r].tolist()),
                cards,
                map(v.labels.__getitem__, v.value[r].tolist()),
                self.judge_label[at].tolist(),
                self.mechanical_label[at].tolist(),
                confidences,
                map(v.rationales.__getitem__, v.annotation[r].tolist()),
                self.judge_at[at].tolist(),
                self.mechanical_at[at].tolist(),
            )
        ]

    def disagreeing_at(self) -> Iterator[int]:
        """The rows whose judge and mechanical positions differ, in order (one at a time)."""
        import numpy as np  # only on the audit path

        return iter(np.flatnonzero(self.judge_at != self.mechanical_at).tolist())

    def confidence_column(self) -> np.ndarray:
        """Each pair's ``confidence``, NaN where there is none (throughout when the pairing does not use it)."""
        import numpy as np  # only on the audit path

        if self.pairing.confidence:
            return self.values.confidence[self.rows]
        return np.full(len(self), math.nan)

    def confidences(self) -> Iterator[float | None]:
        """Each pair's ``confidence`` (None throughout when the pairing does not use it)."""
        return (None if c != c else c for c in self.confidence_column().tolist())

    def run_ids(self, at: list[int]) -> list[str]:
        """The run ids of the pairs at ``at``."""
        v = self.values
        return [v.runs[r] for r in v.run[self.rows[at]].tolist()]

    def judge_models(self, at: list[int]) -> list[str]:
        """The judge models of the pairs at ``at``."""
        v = self.values
        return [v.judges[j] for j in v.judge[self.rows[at]].tolist()]

    def coded(self, field: str) -> tuple[np.ndarray, list[str]]:
        """One of the Pair fields a slice reads (scenario_id, model, judge_model, rubric) as each
        pair's code into a list of the distinct keys."""
        import numpy as np  # only on the audit path

        v = self.values
        if field == "judge_model":
            return v.judge[self.rows], v.judges
        if field == "rubric":
            return v.rubric[self.rows], v.rubrics
        if field not in self.card_codes:
            index: dict[str, int] = {}
            of_card = np.array([index.setdefault(getattr(c, field), len(index)) for c in self.cards], dtype=np.int64)
            self.card_codes[field] = (of_card, list(index))
        of_card, keys = self.card_codes[field]
        return of_card[self.card_at], keys

    def column(self, field: str) -> Iterator[Any]:
        """One of the Pair fields a slice reads (scenario_id, model, judge_model, rubric), per pair."""
        codes, keys = self.coded(field)
        return map(keys.__getitem__, codes.tolist())


@dataclass
class PairSet:
    pairing: Pairing
    pairs: Sequence[Pair]  # a PairList from build_pairs
    counts: Counter  # why candidate pairs were left out


def build_pairs(cards: Iterable[Card], values: JudgeColumns, config: AuditConfig) -> list[PairSet]:
    """Each pairing's pairs: per run (in run order) the latest blind, primary answer of each judge,
    rubric and dimension (in that order) the pairing reads, with the run's card."""
    import numpy as np  # only on the audit path

    cards = list(cards)
    by_run = {c.run_id: i for i, c in enumerate(cards)}  # a run stored twice: its last card
    shared: dict[str, Any] = {}
    sets = {p.name: PairSet(p, PairList(p, values, cards, shared), Counter()) for p in config.pairings}
    n_rubrics, n_dims = len(values.rubrics), len(values.dimensions)
    # (rubric, dimension) -> the pairings that read it
    wanted: dict[int, list[Pairing]] = defaultdict(list)
    rubric_code = {name: k for k, name in enumerate(values.rubrics)}
    dim_code = {name: k for k, name in enumerate(values.dimensions)}
    for p in config.pairings:
        if p.rubric in rubric_code and p.judge_dimension in dim_code:
            wanted[rubric_code[p.rubric] * n_dims + dim_code[p.judge_dimension]].append(p)
    if not wanted:
        return [sets[p.name] for p in config.pairings]
    read = values.rubric.astype(np.int64) * n_dims + values.dimension
    for code, pairings in wanted.items():
        mine = read == code
        non_blind = int(np.count_nonzero(mine & ~values.blind))
        for p in pairings:
            if non_blind:
                sets[p.name].counts["non_blind"] += non_blind
    rows = np.flatnonzero(np.isin(read, list(wanted)) & values.blind & (values.replicate == 0))
    # the latest answer of each (run, judge, rubric, dimension): the last in answer order
    name = (values.judge[rows].astype(np.int64) * n_rubrics + values.rubric[rows]) * n_dims + values.dimension[rows]
    n_names = max(len(values.judges) * n_rubrics * n_dims, 1)
    key = values.run[rows].astype(np.int64) * n_names + name
    _, last = np.unique(key[::-1], return_index=True)
    rows = rows[np.sort(len(key) - 1 - last)]
    del key, name, last
    # runs in order, each run's answers in (judge, rubric, dimension) order
    run_place = _places(values.runs)
    judge_place, rubric_place, dim_place = (_places(x) for x in (values.judges, values.rubrics, values.dimensions))
    rows = rows[
        np.lexsort(
            (
                dim_place[values.dimension[rows]],
                rubric_place[values.rubric[rows]],
                judge_place[values.judge[rows]],
                run_place[values.run[rows]],
            )
        )
    ]
    card_of_run = np.array([by_run.get(r, -1) for r in values.runs], dtype=np.int64)
    card_at = card_of_run[values.run[rows]]
    excluded = np.array([c.status in EXCLUDED_STATUSES for c in cards] + [False], dtype=bool)[card_at]
    # cards with the same signals share one dict: each card's dict as a code into the distinct ones
    # (the last code, after the cards': none), whose mechanical labels a pairing works out once each
    docs: list[Any] = []
    code_of: dict[int, int] = {}
    doc_at = np.empty(len(cards) + 1, dtype=np.int64)
    for k, c in enumerate(cards):
        doc = code_of.get(id(c.card))
        if doc is None:
            doc = code_of[id(c.card)] = len(docs)
            docs.append(c.card)
        doc_at[k] = doc
    doc_at[-1] = len(docs)
    reads = read[rows]
    for code, pairings in wanted.items():
        mine = reads == code
        for p in pairings:
            _fill(sets[p.name], p, rows[mine], card_at[mine], excluded[mine], values, docs, doc_at)
    return [sets[p.name] for p in config.pairings]


def _fill(
    ps: PairSet,
    p: Pairing,
    rows: np.ndarray,
    card_at: np.ndarray,
    excluded: np.ndarray,
    values: JudgeColumns,
    docs: list[Any],
    doc_at: np.ndarray,
) -> None:
    """Put in ``ps`` the pairs of candidate ``rows`` (with their cards' places, -1 for none) and count
    the ones left out; ``docs`` are the distinct card dicts, ``doc_at`` each card's."""
    import numpy as np  # only on the audit path

    pairs: PairList = ps.pairs  # type: ignore[assignment]
    labels: dict[tuple[type, Any], int] = {}  # the labels the pairs hold, each once: its code
    none = -1
    # the judge's label of each distinct value, and the mechanical label of each distinct card dict
    judged = np.array(
        [
            none if (j := p.judge_label(v)) is None else labels.setdefault((type(j), j), len(labels))
            for v in values.labels
        ],
        dtype=np.int64,
    )
    marked = np.array(
        [
            none if (label := p.mechanical_label(doc)) is None else labels.setdefault((type(label), label), len(labels))
            for doc in docs
        ]
        + [none],
        dtype=np.int64,
    )
    no_card = card_at < 0
    ps.counts["no_scorecard"] += int(np.count_nonzero(no_card))
    ps.counts["excluded_status"] += int(np.count_nonzero(~no_card & excluded))
    candidate = ~no_card & ~excluded
    rows, card_at = rows[candidate], card_at[candidate]
    j = judged[values.value[rows]] if len(judged) else np.zeros(len(rows), dtype=np.int64)
    m = marked[doc_at[card_at]]
    if n := int(np.count_nonzero(j == none)):
        ps.counts["unmapped_judge"] += n
    if n := int(np.count_nonzero(m == none)):
        ps.counts["unmapped_mechanical"] += n
    kept = (j != none) & (m != none)
    pairs.labels = [label for _, label in labels]
    # positions on the scale, of the labels a kept pair holds only
    at = np.full(len(labels), -1, dtype=np.int64)
    for code in np.unique(np.concatenate([j[kept], m[kept]])).tolist():
        at[code] = p.index(pairs.labels[code])
    pairs.rows, pairs.card_at = rows[kept], card_at[kept]
    pairs.judge_label, pairs.mechanical_label = j[kept], m[kept]
    pairs.judge_at, pairs.mechanical_at = at[pairs.judge_label], at[pairs.mechanical_label]


def _places(keys: list[Any]) -> np.ndarray:
    """Each key's place among ``keys`` sorted (an order-preserving code)."""
    import numpy as np  # only on the audit path

    place = np.zeros(len(keys), dtype=np.int64)
    place[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return place


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
        clusters=None if bootstrap is None else _runs_of(pairs),
    )


def _runs_of(pairs: list[Pair]) -> Sequence[Any]:
    """Each pair's run (its card), the unit the intervals resample: the pairs of several judges of
    one run are drawn together."""
    if isinstance(pairs, PairList):
        return pairs.card_at
    return [x.run_id for x in pairs]


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
        if isinstance(pairs, PairList):
            confidences = pairs.confidence_column()
            confidences = np.where((confidences >= 0.0) & (confidences <= 1.0), confidences, math.nan)
        else:
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
    if isinstance(pairs, PairList):
        import numpy as np  # only on the audit path

        return int(np.count_nonzero(~np.isnan(pairs.confidence_column())))
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
    if isinstance(pairs, PairList):
        recorded = ~np.isnan(pairs.confidence_column())
    else:
        recorded = np.fromiter(map(operator.is_not, _confidences(pairs), repeat(None)), bool, n)
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        if isinstance(pairs, PairList):
            codes, names = pairs.coded(_SLICE_FIELDS[kind])
            code_of = {names[c]: c for c in np.unique(codes).tolist()}
        else:
            keys = list(map(_SLICE_GETTERS[kind], pairs))
            code_of = {key: c for c, key in enumerate(dict.fromkeys(keys))}  # one pass: a scan per key is quadratic
            codes = np.fromiter(map(code_of.__getitem__, keys), np.intp, n)
            del keys
        order = np.argsort(codes, kind="stable")  # each key's rows in pair order
        bounds = np.cumsum(np.bincount(codes, minlength=max(code_of.values(), default=-1) + 1))
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
    (:func:`rank_key`). ``top`` lists only that many of the worst (None: all of them); only
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
        if isinstance(pairs, PairList):
            judge_at, mechanical_at = pairs.judge_at, pairs.mechanical_at
        else:
            judge_at, mechanical_at = (np.fromiter(c, np.int64) for c in _positions(pairs))
        rows = np.flatnonzero(judge_at != mechanical_at)
        j, m = judge_at[rows], mechanical_at[rows]
        # the direction of each (judge, mechanical) position pair, from its first pair's labels
        _, first, code = np.unique(j * len(labels) + m, return_index=True, return_inverse=True)
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
        at = rows.tolist()
        if isinstance(pairs, PairList):
            columns["runs"].extend(pairs.run_ids(at))
            columns["judges"].extend(pairs.judge_models(at))
        else:
            columns["runs"].extend(pairs[i].run_id for i in at)
            columns["judges"].extend(pairs[i].judge_model for i in at)
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
    if top is not None:
        ranking = ranking[:top]
    # the listed pairs, made per pairing column by column
    listed: list[Any] = [None] * len(ranking)
    for o in np.unique(order[ranking]).tolist():
        mine = np.flatnonzero(order[ranking] == o)
        pairs = held[o][1]
        at = row[ranking[mine]].tolist()
        made = pairs.take(at) if isinstance(pairs, PairList) else [pairs[i] for i in at]
        for k, x in zip(mine.tolist(), made):
            listed[k] = x
    out = []
    for k, x in zip(ranking.tolist(), listed):
        p, pairs, found = held[order[k]]
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
        import numpy as np  # only on the audit path

        (judges, judge_names), (models, model_names) = pairs.coded("judge_model"), pairs.coded("model")
        both = np.unique(judges.astype(np.int64) * max(len(model_names), 1) + models).tolist()
        return ((judge_names[k // max(len(model_names), 1)], model_names[k % max(len(model_names), 1)]) for k in both)
    return ((x.judge_model, x.model) for x in pairs)


def count_disagreements(sets: list[PairSet]) -> int:
    """How many pairs disagree (what :func:`disagreeing` yields, counted in C)."""
    import numpy as np  # only on the audit path

    return sum(
        int(np.count_nonzero(ps.pairs.judge_at != ps.pairs.mechanical_at))
        if isinstance(ps.pairs, PairList)
        else sum(map(operator.ne, *_positions(ps.pairs)))
        for ps in sets
    )


def disagreeing_runs(sets: list[PairSet]) -> dict[str, set[str]]:
    """Pairing name → the runs of its disagreements (what adjudications count); a pairing without
    one is not a key. A column pairing's runs are its distinct run codes, named once each."""
    import numpy as np  # only on the audit path

    out: dict[str, set[str]] = {}
    for ps in sets:
        if isinstance(ps.pairs, PairList):
            pairs, v = ps.pairs, ps.pairs.values
            codes = np.unique(v.run[pairs.rows[pairs.judge_at != pairs.mechanical_at]])
            if len(codes):
                out.setdefault(ps.pairing.name, set()).update(v.runs[r] for r in codes.tolist())
            continue
        for x in ps.pairs:
            if x.judge_index != x.mechanical_index:
                out.setdefault(x.pairing, set()).add(x.run_id)
    return out


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
