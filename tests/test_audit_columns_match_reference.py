"""The audit's column-wise computations give what a plain per-item reference gives, on random
databases (odd judge values, several judges and rubric versions, lenient and strict gaps)."""

from __future__ import annotations

import random
import sqlite3

import pytest
from audit_helpers import Annotator, add_ratings, card, save_cards

from evalkit.agreement import judge_vs_mechanical as jvm
from evalkit.agreement.pairings_config import load_audit_config
from evalkit.agreement.ratings import RatingColumns
from evalkit.agreement.stats import direction
from evalkit.db import JudgeColumns, Rating, open_readonly, read_cards, read_judge_columns, read_ratings
from evalkit.db.cells import odd_cells

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
                confidence=rnd.choice([None, 0.3, 0.9, 1.0]),
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
    """The length-bias entries, each run's latest blind primary numeric score found one value at a time."""
    import numpy as np

    from evalkit.agreement.length_bias import _score, slope

    latest: dict[tuple[str, str], dict[str, float]] = {}
    for v in values:
        score = _score(v.value)
        if score is not None and v.blind and v.replicate == 0:
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
    n_excluded, by_item, kinds, off = 0, {}, {}, {}
    for r in ratings:
        if not rt.on_scale(r.value, labels):
            n_excluded += 1
            if r.value != "n/a":
                key = (r.rater, type(r.value), r.value)
                off[key] = off.get(key, 0) + 1
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
        "excluded_labels": sorted(
            ({"rater": rater, "label": value, "n": n} for (rater, _, value), n in off.items()),
            key=lambda e: (e["rater"], -e["n"], rt._sort_key(e["label"])),
        ),
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


def hostile_db(path, seed: int):
    """:func:`random_db` made odder: answers at the same time, a value stored as ``NaN`` text and one
    as a bare number, outcomes without a confidence column (the JSON's is read), annotations without
    a rationale column, values without blind or replicate columns (their annotation's are read), and
    imported human ratings, one under a judge rater's name."""
    random_db(path, seed)
    rnd = random.Random(seed)
    ann = Annotator(path)  # replicates of runs that have a primary answer too
    ann.clock = 100
    for i in rnd.sample(range(60), 12):
        for replicate in (1, 2)[: rnd.randint(1, 2)]:
            values = {
                "outcome": rnd.choice(["pass", "fail"]),
                "safety": rnd.randint(0, 3),
                "procedure": rnd.randint(0, 3),
            }
            ann.add(f"r{i:03d}", values, judge=rnd.choice(["judge-a", "openai/judge-b"]), replicate=replicate)
    ann.close()
    add_ratings(
        path,
        [(f"r{i:03d}", h, "human", "safety", rnd.choice([0, 1, 2, 3, "n/a"])) for i in range(40) for h in ("h1", "h2")]
        + [("r000", "judge-a@procedure_v1", "human", "safety", 2), ("r001", "m", "mechanical", "outcome", "pass")],
    )
    con = sqlite3.connect(path)
    ids = [r[0] for r in con.execute("SELECT annotation_id FROM annotations ORDER BY annotation_id")]
    edits = [
        ("UPDATE annotations SET created_at = '2026-01-01T00:00:05.000Z' WHERE annotation_id = ?", 10),
        ("UPDATE annotation_values SET value = 'NaN' WHERE annotation_id = ? AND dimension = 'safety'", 4),
        ("UPDATE annotation_values SET value = 2 WHERE annotation_id = ? AND dimension = 'procedure'", 4),
        ("UPDATE annotation_values SET confidence = NULL WHERE annotation_id = ?", 6),
        ("UPDATE annotations SET rationale = NULL WHERE annotation_id = ?", 4),
        ("UPDATE annotation_values SET blind = NULL, replicate = NULL WHERE annotation_id = ?", 4),
    ]
    for sql, n in edits:
        for a in rnd.sample(ids, min(len(ids), n)):
            con.execute(sql, (a,))
    con.commit()
    con.close()


def reference_values(path):
    """The judge values read one annotation, then one value, at a time (docs: answer order is
    created_at, id, then dimension; a value's own columns win, its annotation's back them up)."""
    from evalkit.db.judge import JudgeValue, _number, label_value, loads, stale

    out = []
    with open_readonly(path) as db:
        heads = db.conn.execute(
            "SELECT a.annotation_id, a.rationale, a.annotation, a.created_at, a.blind, a.replicate FROM annotations a "
            f"WHERE (a.status IS NULL OR a.status = 'ok') AND NOT {stale('a.')}"
        ).fetchall()
        for ann, rationale, doc, created, blind, replicate in sorted(heads, key=lambda h: (h[3] or "", h[0])):
            try:
                doc = loads(doc) if isinstance(doc, str) else doc
            except ValueError:
                pass
            if rationale is None:
                rationale = (
                    doc.get("rationale") if isinstance(doc, dict) and isinstance(doc.get("rationale"), str) else ""
                )
            rows = db.conn.execute(
                "SELECT run_id, judge_model, rubric_id, dimension, value, confidence, blind, replicate "
                "FROM annotation_values WHERE annotation_id = ? ORDER BY dimension",
                (ann,),
            ).fetchall()
            for run, judge, rubric, dim, raw, conf, own_blind, own_replicate in rows:
                if conf is None and dim == "outcome" and isinstance(doc, dict):
                    c = _number(doc.get("confidence"))
                    conf = None if c is None else float(c)
                out.append(
                    JudgeValue(
                        ann,
                        run,
                        judge,
                        rubric,
                        dim,
                        label_value(raw),
                        conf,
                        bool(blind if own_blind is None else own_blind),
                        int((replicate if own_replicate is None else own_replicate) or 0),
                        rationale or "",
                        created or "",
                    )
                )
    return out


def typed(values):
    return [tuple((type(x), x) for x in v) for v in values]


@pytest.mark.parametrize("seed", range(10))
def test_judge_columns_read_as_the_reference(tmp_path, seed):
    path = tmp_path / "a.db"
    hostile_db(path, seed)
    with open_readonly(path) as db:
        columns = read_judge_columns(db)
        assert columns.values_clean and not [w for w in odd_cells(db) if w.startswith("annotation_values.")]
    assert typed(columns) == typed(reference_values(path))
    # the same columns made from the values themselves read the same
    assert typed(JudgeColumns.of(columns)) == typed(columns)


def reference_ratings(stored, values):
    """One rating per (item, rater, dimension), the last given winning, sorted."""
    out = {}
    for s in stored:
        out[(s.item_id, s.rater, s.dimension)] = s
    for v in values:
        if v.blind and v.replicate == 0:
            rater = f"{v.judge_model}@{v.rubric_id}"
            out[(v.run_id, rater, v.dimension)] = Rating(
                v.run_id, rater, "judge", v.dimension, v.value, v.confidence, "annotations"
            )
    return [out[k] for k in sorted(out)]


@pytest.mark.parametrize("seed", range(10))
def test_ratings_raters_and_drift_as_the_reference(tmp_path, seed):
    from evalkit.agreement import drift, human_first, raters
    from evalkit.agreement.ratings import collect_ratings

    path = tmp_path / "a.db"
    hostile_db(path, seed)
    config = load_audit_config(None)
    with open_readonly(path) as db:
        columns = read_judge_columns(db)
        stored = read_ratings(db)
    values = list(columns)
    ratings = collect_ratings(stored, columns)
    expected = reference_ratings(stored, values)
    assert typed(ratings) == typed(expected)
    entries, skipped = raters.analyse(ratings, config)
    by_dim = {}
    for r in expected:
        by_dim.setdefault(r.dimension, []).append(r)
    reference = {d: reference_raters_dimension(d, by_dim[d], config) for d in sorted(by_dim)}
    assert entries == [e for e in reference.values() if e is not None]
    assert [s["dimension"] for s in skipped] == [d for d, e in reference.items() if e is None]
    # human agreement reads the ratings of the dimensions with two humans, one at a time
    assert human_first.analyse(ratings, config, None) == human_first.analyse(RatingColumns.of(expected), config, None)
    # drift compares each replicate with the latest primary of its run
    assert drift_counts(drift.analyse(columns, config)) == reference_drift(values, config)


def reference_drift(values, config):
    """Drift's counts found over every value: per judge and rubric, each replicate beside its run's
    latest primary, the dimensions both answered and those moved by ``moved_by`` or more."""
    from evalkit.agreement.drift import moved_dimensions

    primary, replicas = {}, {}
    for v in values:
        if v.blind:
            key = (v.judge_model, v.rubric_id)
            if v.replicate == 0:
                primary.setdefault(key, {}).setdefault(v.run_id, {})[v.dimension] = v.value
            else:
                held = replicas.setdefault(key, {}).setdefault((v.run_id, v.annotation_id, v.replicate), {})
                held[v.dimension] = v.value
    out = []
    for key in sorted(replicas):
        n, shared, moved, flagged = 0, {}, {}, []
        for run_id, annotation_id, rep in sorted(replicas[key]):
            first = primary.get(key, {}).get(run_id)
            if not first:
                continue
            n += 1
            again = replicas[key][(run_id, annotation_id, rep)]
            for dim in set(first) & set(again):
                shared[dim] = shared.get(dim, 0) + 1
            dims = moved_dimensions(first, again, config.moved_by)
            for dim in dims:
                moved[dim] = moved.get(dim, 0) + 1
            if len(dims) > config.max_moved:
                flagged.append(run_id)
        out.append((key, n, sorted(shared.items()), sorted(moved.items()), flagged))
    return out


def drift_counts(entries):
    return [
        (
            (e["judge_model"], e["rubric"]),
            e["n_replicates"],
            [(d["dimension"], d["n"]) for d in e["dimensions"]],
            [(d["dimension"], d["n_moved"]) for d in e["dimensions"] if d["n_moved"]],
            [f["run_id"] for f in e["flagged"]],
        )
        for e in entries
    ]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("judge", [None, "judge-a"])
def test_stale_counts_as_the_reference(tmp_path, seed, judge):
    """The judge-value read tells the stale annotations apart: its counts are those of
    read_stale_annotations, its values those of the read without them."""
    from evalkit.db import read_stale_annotations

    path = tmp_path / "a.db"
    hostile_db(path, seed)
    con = sqlite3.connect(path)
    runs = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM annotations ORDER BY run_id")]
    for run in random.Random(seed).sample(runs, min(len(runs), 9)):
        con.execute("UPDATE scorecards SET bundle_hash = 'rescored' WHERE run_id = ?", (run,))
    con.commit()
    con.close()
    with open_readonly(path) as db:
        columns = read_judge_columns(db, judge=judge)
        stale = read_stale_annotations(db, judge=judge)
    assert stale and list(columns.stale.items()) == list(stale.items())
    if judge is None:
        assert typed(columns) == typed(reference_values(path))


ODD_VALUE_CELLS = [
    "confidence = 'high'",
    "confidence = 1e999",
    "confidence = -1e999",
    "confidence = X'3030'",
    "confidence = 7",
    "blind = -1",
    "blind = 'yes'",
    "blind = 0.5",
    "blind = 9007199254740993",
    "replicate = 2.5",
    "replicate = 9007199254740992",
    "replicate = 9007199254740993",
    "replicate = -3",
    "replicate = X'01'",
]
ODD_VALUE_ROWS = ["value = X'00'", "value = CAST(2.5 AS REAL)", "run_id = X'01'", "judge_model = 3", "rubric_id = NULL"]


ODD_VALUE_CASES = [(False, [e]) for e in ODD_VALUE_CELLS] + [(True, [e]) for e in ODD_VALUE_ROWS]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(
    "rows, edits", [*ODD_VALUE_CASES, (False, ODD_VALUE_CELLS), (True, ODD_VALUE_CELLS + ODD_VALUE_ROWS)]
)
def test_judge_columns_clean_odd_cells_as_the_view(tmp_path, seed, rows, edits):
    """The judge-value read cleans the table's own cells as the clean view does: numbers out of
    range, text and blobs in REAL and INTEGER columns read as missing; a blob value, a number in a
    value column declared otherwise, or a key that is not text, as the view reads it. Each odd cell
    alone (a column's cells are cleaned together) and all of them at once."""
    path = tmp_path / "a.db"
    hostile_db(path, seed)
    con = sqlite3.connect(path)
    if rows:  # a value column without TEXT affinity holds numbers as numbers
        con.executescript(
            "CREATE TABLE av2 AS SELECT * FROM annotation_values; DROP TABLE annotation_values; "
            "CREATE TABLE annotation_values (annotation_id TEXT, run_id TEXT, judge_model TEXT, rubric_id TEXT, "
            "dimension TEXT, value, confidence REAL, blind INTEGER, replicate INTEGER, "
            "PRIMARY KEY (annotation_id, dimension)); INSERT INTO annotation_values SELECT * FROM av2; DROP TABLE av2;"
        )
    with open_readonly(path) as db:  # each edit on rows of its own among the values the read keeps
        keys = sorted({(v.annotation_id, v.dimension) for v in read_judge_columns(db)})
    random.Random(seed).shuffle(keys)
    for k, edit in enumerate(edits):
        for key in keys[3 * k : 3 * k + 3]:
            con.execute(f"UPDATE annotation_values SET {edit} WHERE annotation_id = ? AND dimension = ?", key)
    con.commit()
    con.close()
    with open_readonly(path) as db:
        columns = read_judge_columns(db)
        odd = [w for w in odd_cells(db) if w.startswith("annotation_values.")]
    assert typed(columns) == typed(reference_values(path))
    # a read that says its table is clean saw no odd cell there; one odd cell is enough to say otherwise
    assert not (columns.values_clean and odd)
    assert columns.values_clean or odd or edits in (["confidence = 7"], ["replicate = 9007199254740992"]) or rows


STAT_SCALES = [
    ("nominal", ["fail", "pass", "n/a"]),
    ("nominal", [0, 1, 2, 3, None, "fail", "pass"]),
    ("ordinal", [0, 1, 2, 3]),
    ("interval", [0.5, 1, 2.5, 4]),
]


@pytest.mark.parametrize("seed", range(24))
def test_registry_statistics_as_the_matrix_functions(seed):
    """The registry reads a dimension's counts and positions, and a pairing's confusion matrix:
    each statistic is what the public function gives on the values themselves (a None label is
    no rating there), to the bit."""
    import numpy as np

    from evalkit.agreement import stats as st
    from evalkit.agreement.stats import registry

    rnd = random.Random(seed)
    level, labels = STAT_SCALES[seed % len(STAT_SCALES)]
    names = [f"r{k}" for k in range(rnd.randint(2, 4))]
    pool = labels[: rnd.randint(1, len(labels))] + [None]
    matrix = [[rnd.choice(pool) for _ in range(rnd.randint(0, 30))] for _ in names]
    n = min(map(len, matrix))
    matrix = [row[:n] for row in matrix]
    place = {lab: k for k, lab in enumerate(labels)}
    positions = np.array([[-1 if v is None else place[v] for v in row] for row in matrix], dtype=np.int64)
    positions = positions.reshape(len(names), n)
    codes = list(range(len(labels)))
    two = [(a, b) for a, b in zip(*matrix) if a is not None and b is not None] if len(names) == 2 else None
    pairwise = [st.pairwise_cohen_matrix(matrix, names, labels, weighted=w) for w in (False, True)]
    expected = {
        "percent_agreement": st.pooled_pairwise_agreement(matrix),
        "cohen_kappa": st.cohen_kappa([a for a, _ in two], [b for _, b in two], labels) if two is not None else None,
        "weighted_kappa": st.cohen_kappa([a for a, _ in two], [b for _, b in two], labels, weighted=True)
        if two is not None and level != "nominal"
        else None,
        "pairwise_cohen_kappa": pairwise[0],
        "pairwise_weighted_kappa": pairwise[1] if level != "nominal" else None,
        "fleiss_kappa": st.fleiss_kappa(matrix, labels),
        "krippendorff_alpha": st.krippendorff_alpha(matrix, level, labels),
        "gwet_ac1": st.gwet_ac1_multi(matrix, labels),
    }
    for rated in (
        registry.Raters(matrix, names, labels, level),
        registry.Raters(None, names, labels, level, positions=positions),
    ):
        got = {s.name: s.raters(rated) for s in registry.for_raters()}
        got = {k: v if registry.applies(v) else None for k, v in got.items()}
        assert got == expected
    # a pairing's statistics: two raters who rated every item, as positions on the scale
    x, y = (np.array([rnd.randrange(len(labels)) for _ in range(n)], dtype=np.int64) for _ in range(2))
    scale = np.asarray(labels, dtype=float) if level == "interval" else None
    got = registry.pair_stats(registry.Pairs(x, y, labels, level))
    assert got["percent_agreement"] == st.percent_agreement(x, y)
    assert got["cohen_kappa"] == st.cohen_kappa(x, y, codes)
    if level != "nominal":
        assert got["weighted_kappa"] == st.cohen_kappa(x, y, codes, weighted=True)
    assert got["gwet_ac1"] == st.gwet_ac1(x, y, codes)
    if scale is not None:
        assert got["krippendorff_alpha"] == st.krippendorff_alpha([scale[x].tolist(), scale[y].tolist()], level, labels)
    else:
        assert got["krippendorff_alpha"] == st.krippendorff_alpha(np.vstack([x, y]), level, codes)
