"""The score path's error bars: the pass^k bootstrap in floats (its percentiles exactly those of
resampling every k, its standard error within 1e-12 of the exact one), computed only where
`evalkit score` shows it; and every scenario validated once per process however many there are."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest
from click.testing import CliRunner

from evalkit.aggregate.groups import _Sum, pass_hat_k
from evalkit.aggregate.uncertainty import bootstrap
from evalkit.aggregate.uncertainty.bootstrap import bootstrap_curve, bootstrap_curves, percentile
from evalkit.cli import cli
from evalkit.trajectory.builders import a320_scenario, cmd, read, trajectory, write_jsonl


def resampled_every_k(curves, level, n_resamples=1000, seed=0):
    """The bootstrap written out: every resample's mean at every k, sorted; ``statistics.stdev``."""
    c, rng = len(curves), random.Random(seed)
    columns = [[] for _ in curves[0]]
    for _ in range(n_resamples):
        picks = rng.choices(range(c), k=c)
        for k, column in enumerate(columns):
            column.append(sum(curves[p][k] for p in picks) / c)
    tail = (1.0 - level) / 2.0
    se = [statistics.stdev(column) for column in columns]
    ci = [[percentile(sorted(col), tail), percentile(sorted(col), 1.0 - tail)] for col in columns]
    return se, ci


@pytest.mark.parametrize("scenarios, runs", [(2, 60), (3, 9), (7, 5), (40, 4)])
def test_the_float_bootstrap_equals_resampling_every_k(scenarios, runs):
    rng = random.Random(scenarios)
    curves = [pass_hat_k(rng.randint(0, runs), runs) for _ in range(scenarios)]
    for level in (0.95, 0.5):
        se, ci, reason = bootstrap_curve(curves, level)
        want_se, want_ci = resampled_every_k(curves, level)
        assert reason is None and ci == want_ci  # the percentiles: identical
        assert all(math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) for a, b in zip(se, want_se))


def test_the_bootstrap_is_the_same_on_every_call_and_for_both_curves_of_one_draw():
    curves = [pass_hat_k(c, 8) for c in (8, 5, 0, 3)]
    safe = [pass_hat_k(c, 8) for c in (6, 5, 0, 1)]
    bootstrap._DRAWS.clear()
    first = bootstrap_curves([curves, safe], 0.95)
    assert first == bootstrap_curves([curves, safe], 0.95)
    assert first == [bootstrap_curve(curves, 0.95), bootstrap_curve(safe, 0.95)]
    one = [[1.0] * 8, [1.0] * 8]  # every resample the same: exactly 0, as the exact computation gives
    assert bootstrap_curve(one, 0.95)[0] == [0.0] * 8


def test_a_groups_mean_and_standard_deviation_are_fsum_and_statistics_stdev_bit_for_bit():
    rng = random.Random(5)
    for _ in range(500):
        values = [rng.choice([0.0, 0.5, 1.0, 1 / 3, rng.random()]) for _ in range(rng.randint(1, 30))]
        total = _Sum()
        for v in values:
            total.add(v)
        stdev = statistics.stdev(values) if len(values) > 1 else None
        assert total.moments() == (math.fsum(values) / len(values), stdev)
    assert _Sum().moments() == (None, None)


def corpus(directory, scenarios: int, runs_each: int) -> None:
    """``runs_each`` runs of each of ``scenarios`` scenarios, interleaved in file order, two models."""
    plans = [[read(), cmd("apu_gen", 0), cmd("apu_gen", 1), cmd("apu_gen", 0), cmd("ext_pwr", 1)], [read()]]
    for i in range(scenarios * runs_each):
        sc = a320_scenario(id=f"task-{i % scenarios:03d}")
        records = trajectory(sc, plans[i % 2], run_id=f"r{i:05d}", model=f"m{i % 2}", passed=i % 3 != 0)
        write_jsonl(directory / f"{i:05d}.jsonl", records)


def score(directory, *args):
    return CliRunner().invoke(cli, ["score", str(directory), "--no-db", "--workers", "1", "--no-progress", *args])


@pytest.fixture
def counted_bootstrap(monkeypatch):
    calls = []
    real = bootstrap.bootstrap_curves

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("evalkit.aggregate.uncertainty.intervals.bootstrap_curves", counting)
    return calls


def test_score_jsonl_and_the_tables_run_no_bootstrap_json_aggregate_does(tmp_path, counted_bootstrap):
    corpus(tmp_path, 3, 6)
    for args in (["--format", "jsonl"], ["--format", "csv"], [], ["--format", "markdown"], ["--min-pass-rate", "0"]):
        result = score(tmp_path, *args)
        assert result.exit_code == 0, result.output
    assert counted_bootstrap == []
    result = score(tmp_path, "--format", "json", "--aggregate")
    models = json.loads(result.stdout)["models"]
    assert result.exit_code == 0 and len(counted_bootstrap) == len(models) == 2  # a model's two curves: one call
    assert all(len(m["pass_hat_k_ci"]) == len(m["pass_hat_k"]) and m["pass_hat_k_se"] for m in models)


def test_score_jsonl_aggregate_prints_the_same_intervals_as_the_api(tmp_path):
    from evalkit.aggregate.groups import aggregate
    from evalkit.scoring import score_trajectory
    from evalkit.trajectory.reader import read_trajectory

    corpus(tmp_path, 3, 6)
    result = score(tmp_path, "--format", "jsonl", "--aggregate")
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    expected = aggregate([score_trajectory(read_trajectory(p)) for p in sorted(tmp_path.glob("*.jsonl"))])
    assert [m for m in printed if m.pop("kind") == "model"] == expected["models"]


def test_every_scenario_is_validated_once_however_many_are_interleaved(tmp_path, monkeypatch):
    from evalkit.trajectory import reader
    from evalkit.trajectory.scenario import Scenario

    corpus(tmp_path, 150, 3)  # 150 scenarios, run i of scenario i mod 150: each comes back after 149 others
    validated = []
    real = Scenario.model_validate.__func__

    def counting(cls, *args, **kwargs):
        validated.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(reader, "_SCENARIOS", {})
    monkeypatch.setattr(reader, "_SCENARIO_JSON", {})
    monkeypatch.setattr(reader, "_scenario_bytes", 0)
    monkeypatch.setattr(Scenario, "model_validate", classmethod(counting))
    result = score(tmp_path, "--format", "jsonl")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 450
    assert len(validated) == 150
