"""The audit's column-wise computations give what a plain per-item reference gives, on random
databases (odd judge values, several judges and rubric versions, lenient and strict gaps)."""

from __future__ import annotations

import random

import pytest
from audit_helpers import Annotator, card, save_cards

from evalkit.agreement import judge_vs_mechanical as jvm
from evalkit.agreement.pairings_config import load_audit_config
from evalkit.agreement.stats import direction
from evalkit.db import open_readonly, read_cards, read_judge_columns

ODD_VALUES = ["pass", "fail", "n/a", 1, 1.0, True, None, 0, 2, 3, "3", [1], {"a": 1}]


def random_db(path, seed: int):
    rnd = random.Random(seed)
    runs = [f"r{i:03d}" for i in range(rnd.randint(0, 60))]
    save_cards(
        path,
        [
            card(
                run,
                scenario_id=rnd.choice(["s1", "s2"]),
                model=rnd.choice(["m1", "judge-a"]),
                all_passed=rnd.choice([True, False, None]),
                dangerous=rnd.choice([0, 1, None]),
                coverage=rnd.choice([1.0, 0.5, 0.0]),
                status=rnd.choice(["scored"] * 5 + ["provider_error"]),
            )
            for run in runs
        ],
    )
    ann = Annotator(path)
    for run in runs + ["gone"]:
        for judge in ("judge-a", "openai/judge-b"):
            if rnd.random() < 0.2:
                continue
            values = {
                "outcome": rnd.choice(["pass", "fail", "pass", rnd.choice(ODD_VALUES)]),
                "safety": rnd.choice([0, 1, 2, 3, rnd.choice(ODD_VALUES)]),
                "procedure": rnd.choice([0, 1, 2, 3]),
            }
            ann.add(
                run,
                values,
                judge=judge,
                rationale=f"{run} {judge}",
                version=rnd.choice([1, 1, 2]),
                blind=rnd.random() < 0.9,
                replicate=rnd.choice([0, 0, 0, 1]),
                confidence=rnd.choice([None, 0.3, 0.9, 1.5]),
            )
    ann.close()


def sets_of(path):
    config = load_audit_config(None)
    with open_readonly(path) as db:
        cards = list(read_cards(db, []))
        values = read_judge_columns(db)
    return jvm.build_pairs(cards, values, config)


def reference_ranking(sets, top):
    """Every disagreement's rank key (:func:`jvm.rank_key`), sorted; the first ``top``."""
    items = []
    for order, ps in enumerate(sets):
        p, labels = ps.pairing, list(ps.pairing.scale)
        for x in ps.pairs:
            if x.judge_index == x.mechanical_index:
                continue
            way = direction(x.judge_value, x.mechanical_value, labels)
            gap = abs(x.judge_index - x.mechanical_index) / (len(labels) - 1)
            items.append((jvm.rank_key(p, order, way, gap, x.run_id, x.judge_model), p.name, x.run_id, way))
    items.sort(key=lambda item: item[0])
    return [item[1:] for item in (items[:top] if top else items)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("top", [None, 3])
def test_disagreements_rank_as_the_reference_sort(tmp_path, seed, top):
    path = tmp_path / "a.db"
    random_db(path, seed)
    sets = sets_of(path)
    got = jvm.disagreements(sets, top)
    assert [(d["pairing"], d["run_id"], d["direction"]) for d in got] == reference_ranking(sets, top)
    # the same from plain lists of pairs
    plain = [jvm.PairSet(ps.pairing, list(ps.pairs), ps.counts) for ps in sets]
    assert jvm.disagreements(plain, top) == got


def reference_length_bias(values, lengths, outcomes, level=0.95):
    """The length-bias entries, each run's latest numeric score found one value at a time."""
    import numpy as np

    from evalkit.agreement.length_bias import _score, slope

    latest: dict[tuple[str, str], dict[str, float]] = {}
    for v in values:
        score = _score(v.value)
        if score is not None:
            latest.setdefault((f"{v.judge_model}@{v.rubric_id}", v.dimension), {})[v.run_id] = score
    out = []
    for (rater, dimension), scores in sorted(latest.items()):
        runs = sorted(r for r in scores if lengths.get(r) is not None)
        x = [float(lengths[r]) for r in runs]
        outcome = [float(outcomes[r]) for r in runs] if all(r in outcomes for r in runs) else None
        fig, controls = slope([scores[r] for r in runs], x, outcome, level)
        out.append({"judge": rater, "dimension": dimension, "slope_per_1000_chars": fig, "controlled_for": controls})
    assert np is not None
    return out


@pytest.mark.parametrize("seed", range(12))
def test_length_bias_as_the_reference(tmp_path, seed):
    from evalkit.agreement import length_bias

    path = tmp_path / "a.db"
    random_db(path, seed)
    rnd = random.Random(seed)
    with open_readonly(path) as db:
        values = read_judge_columns(db)
    runs = sorted({v.run_id for v in values})
    lengths = {r: rnd.choice([None, 100, 2000, 5000, 5000]) for r in runs if rnd.random() < 0.9}
    outcomes = {r: rnd.random() < 0.5 for r in runs if rnd.random() < (0.8 if seed % 2 else 1.0)}
    assert length_bias.analyse(values, lengths, outcomes) == reference_length_bias(values, lengths, outcomes)


def reference_raters_dimension(dimension, ratings, config):
    """The raters entry of one dimension built one rating at a time (item → rater → value)."""
    from evalkit.agreement import raters as rt
    from evalkit.agreement.stats import registry

    spec = config.dimensions.get(dimension)
    level, labels = rt.level_and_labels([r.value for r in ratings], spec)
    n_excluded, by_item, kinds = 0, {}, {}
    for r in ratings:
        if not rt.on_scale(r.value, labels):
            n_excluded += 1
            continue
        by_item.setdefault(r.item_id, {})[r.rater] = r.value
        kinds[r.rater] = r.rater_kind
    items = sorted(i for i, rs in by_item.items() if len(rs) >= 2)
    raters = sorted({name for i in items for name in by_item[i]})
    if len(raters) < 2:
        return None
    matrix = [[by_item[i].get(name) for i in items] for name in raters]
    entry = {
        "dimension": dimension,
        "raters": raters,
        "rater_kinds": {name: kinds[name] for name in raters},
        "level": level,
        "labels": labels,
        "n": len(items),
        "n_items": len(items),
        "n_items_dropped": len(by_item) - len(items),
        "n_ratings": sum(len(by_item[i]) for i in items),
        "n_excluded": n_excluded,
    }
    rated = registry.Raters(matrix, raters, labels, level)
    entry.update((s.name, s.raters(rated)) for s in registry.for_raters())
    entry["alt_test"] = rt.alt_tests(raters, kinds, matrix, level, config)
    entry["judge_vs_mechanical"] = rt.judge_vs_mechanical(raters, kinds, matrix, labels, spec)
    return entry


RATER_VALUES = ["pass", "fail", "n/a", 0, 1, 2, 3, 1.0, 2.5, True, False, None, "3"]


@pytest.mark.parametrize("seed", range(16))
def test_raters_as_the_reference(seed):
    from evalkit.agreement import raters as rt
    from evalkit.agreement.ratings import Rating, RatingColumns

    rnd = random.Random(seed)
    config = load_audit_config(None)
    names = [("h1", "human"), ("h2", "human"), ("h3", "human"), ("j1", "judge"), ("j2", "judge"), ("m", "mechanical")]
    ratings = []
    for _ in range(rnd.randint(0, 300)):
        rater, kind = rnd.choice(names[: rnd.randint(1, len(names))])
        dimension = rnd.choice(["outcome", "safety", "other", "lonely"])
        if dimension == "lonely":
            rater, kind = "h1", "human"
        pool = RATER_VALUES if rnd.random() < 0.3 else (["pass", "fail"] if dimension == "outcome" else [0, 1, 2, 3])
        item = f"i{rnd.randint(0, 25):02d}"
        ratings.append(Rating(item, rater, kind, dimension, rnd.choice(pool), None, "test"))
    entries, skipped = rt.analyse(RatingColumns.of(ratings), config)
    expected = {}
    for dimension in sorted({r.dimension for r in ratings}):
        expected[dimension] = reference_raters_dimension(
            dimension, [r for r in ratings if r.dimension == dimension], config
        )
    assert entries == [e for e in expected.values() if e is not None]
    assert [s["dimension"] for s in skipped] == [d for d, e in expected.items() if e is None]
