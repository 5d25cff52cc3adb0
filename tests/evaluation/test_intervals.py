"""95 % intervals against independent computations: scipy's Wilson interval, the design-effect
formula written out by hand, and a plain index-resampling bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from negbench.scoring.intervals import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    cluster_interval,
    clustered_wilson,
    interval,
    wilson,
)


@pytest.mark.parametrize(
    "k,n",
    [(0, 1), (1, 1), (0, 12), (6, 12), (10, 12), (12, 12), (3, 40), (531, 1284), (100000, 381300)],
)
def test_wilson_equals_scipy(k, n):
    stats = pytest.importorskip("scipy.stats")
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-9) and hi == pytest.approx(ci.high, abs=1e-9)
    assert wilson(0, 0) is None


def _wilson_by_hand(p: float, n: float) -> tuple[float, float]:
    z = 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_clustered_wilson_is_wilson_at_the_design_effect_n():
    # 4 blocks of 5 items: 5/5, 4/5, 1/5, 0/5 right -> p = 0.5, strongly clustered
    sums, counts = [5, 4, 1, 0], [5, 5, 5, 5]
    n, C, p = 20, 4, 0.5
    v = C / (C - 1) * sum((s - p * c) ** 2 for s, c in zip(sums, counts)) / n**2
    n_eff = min(n, max(C, p * (1 - p) / v))
    assert n_eff < n  # wider than 20 independent items
    lo, hi = clustered_wilson(sums, counts)
    assert (lo, hi) == pytest.approx(_wilson_by_hand(p, n_eff))
    assert hi - lo > wilson(10, 20)[1] - wilson(10, 20)[0]
    # one item per cluster: plain Wilson; every item wrong: not [0, 0]
    assert clustered_wilson([1, 0, 1], [1, 1, 1]) == wilson(2, 3)
    lo, hi = clustered_wilson([0, 0, 0, 0], [4, 4, 3, 3])
    assert lo == 0.0 and hi == pytest.approx(wilson(0, 14)[1]) and hi > 0.2
    # clusters identical in their share: no variance between them, n stays
    assert clustered_wilson([1] * 6, [2] * 6) == pytest.approx(wilson(6, 12))
    assert interval([1, 0], [1, 1]) == wilson(1, 2)


def test_cluster_bootstrap_matches_a_plain_resampling_loop():
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 6, size=80)
    diffs = np.array([rng.integers(-1, 2, size=s).sum() for s in sizes], dtype=float)
    lo, hi = cluster_interval(diffs, sizes)
    # independent: draw cluster indices, 4,000 times, percentile interval
    r = np.random.default_rng(123)
    idx = r.integers(0, len(sizes), size=(4000, len(sizes)))
    stats = diffs[idx].sum(1) / sizes[idx].sum(1)
    ref_lo, ref_hi = np.percentile(stats, [2.5, 97.5])
    assert lo == pytest.approx(ref_lo, abs=0.03) and hi == pytest.approx(ref_hi, abs=0.03)
    assert lo < diffs.sum() / sizes.sum() < hi
    assert cluster_interval([1.0], [2.0]) is None  # one cluster: nothing to resample
    assert cluster_interval([0.0, 0.0, 0.0], [2.0, 3.0, 1.0]) is None  # all alike: no spread
    assert interval(list(diffs), list(sizes), proportion=False) == (lo, hi)
    assert (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED) == (10_000, 0)


def test_compare_uses_the_one_bootstrap_default():
    import inspect

    from negbench.report import compare

    sig = inspect.signature(compare.paired_bootstrap)
    assert sig.parameters["n_resamples"].default == BOOTSTRAP_RESAMPLES
    assert sig.parameters["seed"].default == BOOTSTRAP_SEED
