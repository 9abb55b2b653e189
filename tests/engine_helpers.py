"""A corpus for engine tests: enough files to fill several batches per worker, two scenarios (one
whose id needs escaping in a path), several models, a bad file, a half-written last line and a
run_id read twice. And a local Ray instance for the ray engine's tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalkit.trajectory.builders import a320_scenario, cmd, dumps_jsonl, read, say, trajectory, write_jsonl

PLANS = [
    [read(), say("reset"), cmd("apu_gen", 0), cmd("apu_gen", 1), read(), cmd("apu_gen", 0), cmd("ext_pwr", 1)],
    [read(), cmd("apu_gen", 0), cmd("ext_pwr", 1), cmd("bat_1", 0)],
    [read(), cmd("ext_pwr", 1), cmd("nav_lights", 1)],
]


def make_corpus(root: Path, n: int = 60) -> Path:
    scenarios = [a320_scenario(), a320_scenario(id="elec/odd id %2F ü")]
    for part in range(3):
        (root / f"part-{part}").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        recs = trajectory(
            scenarios[i % 2],
            PLANS[i % 3],
            run_id=f"run-{i:04d}",
            model=f"model-{i % 3}",
            passed=i % 4 != 0,
            provider_error=i % 17 == 5,
            final=i % 19 != 7,
        )
        write_jsonl(root / f"part-{i // 25}" / f"run-{i:04d}.jsonl", recs)
    good = trajectory(scenarios[0], PLANS[0], run_id="half-written")
    (root / "part-0" / "run-0003a-half.jsonl").write_text(
        dumps_jsonl(good) + '{"type": "final", "rea', encoding="utf-8"
    )
    bad = dumps_jsonl(trajectory(scenarios[0], PLANS[1], run_id="bad")).splitlines()
    bad[3] = "{not json"
    (root / "part-1" / "run-0030a-bad.jsonl").write_text("\n".join(bad) + "\n", encoding="utf-8")
    write_jsonl(
        root / "part-2" / "run-0055a-dup.jsonl", trajectory(scenarios[1], PLANS[2], run_id="run-0001", model="model-1")
    )
    return root


@contextlib.contextmanager
def local_ray() -> Iterator[None]:
    """A local Ray instance of 2 CPUs on 127.0.0.1, no dashboard and no log forwarding, shut down after."""
    import ray

    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False, _node_ip_address="127.0.0.1"
    )
    yield
    ray.shutdown()


def ray_fixtures(n: int):
    """The module fixtures ``cluster`` (:func:`local_ray`) and ``corpus`` (:func:`make_corpus` of
    ``n`` runs) of a ray test module: ``cluster, corpus = ray_fixtures(n)``."""

    @pytest.fixture(scope="module")
    def cluster():
        with local_ray():
            yield

    @pytest.fixture(scope="module")
    def corpus(tmp_path_factory):
        return make_corpus(tmp_path_factory.mktemp("corpus"), n=n)

    return cluster, corpus
