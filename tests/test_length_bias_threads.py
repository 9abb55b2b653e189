"""The audit's length-bias slope is the same bytes on any machine: its sums do not follow the number
of threads a BLAS library splits them across (OpenBLAS gave other last digits of the standard error
with 1 and 2 threads on 200,000 runs), and it is the least-squares slope worked out exactly."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """
import random, sys
sys.path.insert(0, {root!r})
import numpy as np
from evalkit.agreement.length_bias import slope
rnd = random.Random(5)
n = 200_000
length = [rnd.randint(200, 40_000) for _ in range(n)]
outcome = [float(rnd.random() < 0.5) for _ in range(n)]
y = [min(3, max(0, round(1.5 + o + l / 30_000 + rnd.gauss(0, 0.8)))) for l, o in zip(length, outcome)]
print(repr(slope(np.array(y, float), np.array(length, float), np.array(outcome), 0.95)[0]))
"""


def test_the_slope_is_the_same_bytes_whatever_the_number_of_blas_threads():
    outputs = set()
    for threads in ("1", "2", "4"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM.format(root=str(ROOT))], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs


def _exact(y, x, o):
    """The slope of x in the least-squares fit y ~ 1 + x + o, and its variance factor, in rationals."""
    n = len(y)
    F = [Fraction(v) for v in y], [Fraction(v) for v in x], [Fraction(v) for v in o]
    means = [sum(col) / n for col in F]
    yc, xc, oc = ([v - m for v in col] for col, m in zip(F, means))
    sxx, soo = sum(a * a for a in xc), sum(a * a for a in oc)
    sxo, sxy, soy = (
        sum(a * b for a, b in zip(xc, oc)),
        sum(a * b for a, b in zip(xc, yc)),
        sum(a * b for a, b in zip(oc, yc)),
    )
    det = sxx * soo - sxo * sxo
    b1, b2 = (soo * sxy - sxo * soy) / det, (sxx * soy - sxo * sxy) / det
    rss = sum((c - b1 * a - b2 * q) ** 2 for c, a, q in zip(yc, xc, oc))
    return b1, rss / (n - 3) * soo / det


@pytest.mark.parametrize("seed", range(5))
def test_the_slope_and_its_standard_error_are_the_exact_least_squares_ones(seed):
    from evalkit.agreement.length_bias import PER, slope

    rnd = random.Random(seed)
    n = rnd.randint(6, 300)
    length = [rnd.choice([120, 800, 2_500, 9_000, 9_000, 31_000]) + rnd.randint(0, 50) for _ in range(n)]
    outcome = [float(rnd.random() < 0.4) for _ in range(n)]
    y = [float(rnd.randint(0, 3)) for _ in range(n)]
    fig, controls = slope(y, length, outcome, 0.95)
    assert controls == ["outcome"]
    b1, var = _exact(y, [Fraction(v) / PER for v in length], outcome)
    assert fig["value"] == pytest.approx(float(b1), rel=1e-12, abs=1e-15)
    assert fig["se"] ** 2 == pytest.approx(float(var), rel=1e-12)
