"""Coverage of every 95 % interval negbench shows, and type-I error of its paired test, by
simulation with the benchmarks' real structures (negbench.scoring.coverage;
docs/statistics.md).  The default run uses the quick grid (1,000 replications per setting, a few
seconds); the full grid is marked slow."""

from __future__ import annotations

import pytest

from negbench.scoring import coverage
from negbench.scoring.intervals import MIN_CLUSTERS, clustered_wilson_arrays


def _failures(rows):
    return [r for r in rows if not r.ok()]


def test_quick_grid_every_shown_interval_covers_and_small_settings_are_withheld():
    rows = coverage.run(reps=1000, quick=True)
    assert _failures(rows) == []
    kinds = {r.kind for r in rows}
    assert kinds == {"proportion", "accchg", "contrast", "correlation", "compare"}
    # the structures of the releases are all there, shown and withheld
    assert {r.structure for r in rows} >= {"items", "condaqa", "minimal-pairs", "blocks", "seeds"}
    assert any(r.method == "withheld" for r in rows)
    assert all(r.reps >= 1000 for r in rows)


def test_the_old_interval_failed_where_the_new_one_is_withheld_or_covers():
    """The design-effect Wilson with a normal quantile and no clustering at p = 0 (the interval
    before this study) covered 31–70 % on few blocks; the same data now get no interval."""
    import numpy as np

    rng = np.random.default_rng(0)
    G, reps, p = 5, 1000, 0.1
    pg = rng.beta(p * 1.0, (1 - p) * 1.0, size=(reps, G))  # ICC 0.5
    S = rng.binomial(93, pg).astype(float)
    C = np.full((reps, G), 93.0)
    lo, hi, _ = clustered_wilson_arrays(S, C)
    cov = float(np.mean((lo <= p) & (p <= hi)))
    assert cov < 0.93  # no method reaches coverage here …
    row = coverage.proportion_setting("blocks", G, p, 0.5, reps)
    assert row.method == "withheld" and row.shown == 0.0 and G < MIN_CLUSTERS  # … so none shown


@pytest.mark.slow
def test_full_grid():
    rows = coverage.run(reps=2000, quick=False)
    assert _failures(rows) == []
    assert len(rows) > 400


def test_the_simulated_test_is_the_one_compare_runs():
    """The type-I rows measure paired_test's statistic: the same p on one simulated data set."""
    import numpy as np
    from scipy.stats import t as tdist

    from negbench.scoring.intervals import cluster_t_arrays, paired_test

    rng = np.random.default_rng(4)
    sizes = coverage._sizes("condaqa", 60).astype(int)
    cl = np.repeat(np.arange(60), sizes)
    pa = rng.beta(1, 1, 60)[cl]
    pb = rng.beta(1, 1, 60)[cl]
    a = (rng.random(len(cl)) < pa).astype(float)
    b = (rng.random(len(cl)) < pb).astype(float)
    got = paired_test(list(a), list(b), [f"g{c}" for c in cl])
    S = np.bincount(cl, weights=b - a)[None, :]
    theta, lo, hi, se = cluster_t_arrays(S, sizes[None, :].astype(float))
    assert got["method"] == "cluster-t" and got["n_units"] == 60
    assert got["p"] == pytest.approx(float(2 * tdist.sf(abs(theta[0] / se[0]), 59)))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo[0], hi[0]))
