"""95 % intervals against independent computations: scipy's Wilson interval, the design-effect
formula written out by hand, and a plain index-resampling bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from negbench.scoring.intervals import (
    BOOTSTRAP_RESAMPLES,
    contrast_interval,
    BOOTSTRAP_SEED,
    MIN_CLUSTERS,
    benjamini_hochberg,
    cluster_interval,
    clustered_wilson,
    correlation_interval,
    difference_interval,
    holm,
    interval,
    mcnemar_exact,
    paired_test,
    proportion_interval,
    seed_sd,
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


def test_clustered_wilson_is_wilson_at_the_design_effect_n_with_a_t_quantile():
    # 4 blocks of 5 items: 5/5, 4/5, 1/5, 0/5 right -> p = 0.5, strongly clustered
    sums, counts = [5, 4, 1, 0], [5, 5, 5, 5]
    n, C, p = 20, 4, 0.5
    v = C / (C - 1) * sum((s - p * c) ** 2 for s, c in zip(sums, counts)) / n**2
    n_eff = n / max(1.0, v * n / (p * (1 - p)))
    assert n_eff < n  # wider than 20 independent items
    stats = pytest.importorskip("scipy.stats")
    t = stats.t.ppf(0.975, max(C - 1, n_eff - 1))
    lo, hi = clustered_wilson(sums, counts)
    centre = (p + t * t / (2 * n_eff)) / (1 + t * t / n_eff)
    half = t / (1 + t * t / n_eff) * math.sqrt(p * (1 - p) / n_eff + t * t / (4 * n_eff**2))
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    assert hi - lo > wilson(10, 20)[1] - wilson(10, 20)[0]
    # one item per cluster: plain Wilson
    assert clustered_wilson([1, 0, 1], [1, 1, 1]) == pytest.approx(wilson(2, 3))


def test_all_wrong_or_all_right_keeps_the_clustering():
    # the case: two blocks of 93, every item wrong — as wide as Wilson over 2 trials
    assert clustered_wilson([0, 0], [93, 93]) == pytest.approx(wilson(0, 2))
    assert clustered_wilson([93, 93], [93, 93]) == pytest.approx(wilson(2, 2))
    lo, hi = clustered_wilson([0, 0, 0, 0], [4, 4, 3, 3])
    assert lo == 0.0 and hi == pytest.approx(wilson(0, 4)[1])
    # and too few clusters: withheld, saying how many are needed
    iv = proportion_interval([0, 0], [93, 93], "blocks")
    assert iv.ci is None and iv.units == 2 and iv.units_needed == MIN_CLUSTERS
    assert "2 blocks" in iv.reason and str(MIN_CLUSTERS) in iv.reason
    assert interval([0, 0], [93, 93]) is None
    assert interval([1, 0], [1, 1]) is None  # 2 independent items: too few for Wilson
    assert interval([1] * 20 + [0] * 20, [1] * 40) == wilson(20, 40)  # 40 items: Wilson


def test_accchg_interval_is_the_cluster_robust_t_and_is_withheld_on_two_groups():
    # the JNLI-Neg --limit 12 case: 2 groups, 15 pairs, AccChg 0.133
    iv = difference_interval([1.0, 1.0], [7.0, 8.0], "groups of minimal pairs")
    assert iv.ci is None and iv.units_needed == MIN_CLUSTERS
    rng = np.random.default_rng(5)
    G = MIN_CLUSTERS + 20
    sizes = rng.integers(1, 6, size=G).astype(float)
    diffs = np.array([rng.integers(-1, 2, size=int(s)).sum() for s in sizes], dtype=float)
    iv = difference_interval(diffs, sizes)
    theta = diffs.sum() / sizes.sum()
    se = math.sqrt(G / (G - 1) * ((diffs - theta * sizes) ** 2).sum()) / sizes.sum()
    t = pytest.importorskip("scipy.stats").t.ppf(0.975, G - 1)
    assert iv.ci == pytest.approx((theta - t * se, theta + t * se))
    assert interval(list(diffs), list(sizes), proportion=False) == iv.ci
    assert difference_interval([0.0] * G, [2.0] * G).ci is None  # no spread to estimate


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
    assert cluster_interval([1.0], [2.0]) is None  # one cluster: nothing to resample
    assert (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED) == (10_000, 0)


def test_seed_sd_is_none_for_one_seed():
    from negbench.scoring.metrics import over_seeds

    assert seed_sd([0.5]) is None and over_seeds([0.5])["sd"] is None
    assert seed_sd([0.4, 0.6]) == pytest.approx(math.sqrt(0.02))


def test_mcnemar_exact_is_scipy_fast_and_offers_mid_p():
    import time

    assert mcnemar_exact(0, 5)["exact_p"] == pytest.approx(0.0625)
    assert mcnemar_exact(0, 5)["mid_p"] == pytest.approx(0.03125)
    t0 = time.perf_counter()
    r = mcnemar_exact(10_000, 10_000)
    assert time.perf_counter() - t0 < 0.5 and r["exact_p"] == pytest.approx(1.0)


def test_paired_test_says_too_small_and_uses_units():
    one = paired_test([0.0], [1.0])
    assert one["too_small"] and one["ci_low"] is None and one["p"] == 1.0
    five = paired_test([0.0] * 5 + [1.0] * 20, [1.0] * 5 + [1.0] * 20)
    assert five["p"] == pytest.approx(0.0625) and five["too_small"]
    few = paired_test([0.0] * 40, [1.0] * 40, clusters=[i // 10 for i in range(40)])
    assert few["p"] is None and "too small" in few["too_small"] and few["n_units"] == 4


def test_holm_and_benjamini_hochberg():
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06], abs=1e-12)
    assert benjamini_hochberg([0.01, 0.04, None, 0.03]) == pytest.approx(
        [0.03, 0.04, None, 0.04], abs=1e-12
    )


def test_correlation_interval_is_withheld_on_few_groups_and_brackets_r():
    rng = np.random.default_rng(0)
    x = rng.normal(size=240)
    y = x + rng.normal(size=240)
    iv = correlation_interval(x, y, [i // 4 for i in range(240)])
    r = float(np.corrcoef(x, y)[0, 1])
    assert iv.ci is not None and iv.ci[0] < r < iv.ci[1]
    assert correlation_interval(x[:20], y[:20], [i // 4 for i in range(20)]).ci is None


def test_compare_uses_the_one_bootstrap_default():
    import inspect

    from negbench.report import compare

    sig = inspect.signature(compare.paired_bootstrap)
    assert sig.parameters["n_resamples"].default == BOOTSTRAP_RESAMPLES
    assert sig.parameters["seed"].default == BOOTSTRAP_SEED


def test_model_card_fallback_does_not_treat_accchg_as_a_proportion():
    from negbench.profile.model_card import interval as card_interval

    metrics = {"n": 40, "M.acc_chg": 0.1}
    assert card_interval(metrics, "M.acc", 0.5) == wilson(20, 40)
    assert card_interval(metrics, "M.acc_chg", 0.1, proportion=False) is None  # no Wilson
    metrics["M.acc_chg_stderr"] = 0.05
    lo, hi = card_interval(metrics, "M.acc_chg", 0.1, proportion=False)
    assert (lo, hi) == pytest.approx((0.1 - 1.96 * 0.05, 0.1 + 1.96 * 0.05), abs=1e-3)


def test_model_card_keeps_a_withheld_interval_withheld():
    """A run that withheld its headline interval (8 contrast groups) has none in the model card
    either — not a Wilson interval over the items that ignores the groups."""
    from negbench.profile.model_card import card_rows, model_card_markdown

    def results(ci95):
        return {
            "model": {"spec": "m"},
            "units": {
                "condaqa.generate.0shot": {
                    "task": "condaqa",
                    "mode": "generate",
                    "shots": 0,
                    "group": "condaqa.generate.0shot",
                    "metrics": {"n": 31, "accuracy": 0.0},
                }
            },
            "groups": {
                "condaqa.generate.0shot": {
                    "headline": {"metric": "accuracy", "mean": 0.0, "ci95": ci95, "n": 31}
                }
            },
        }

    (row,) = card_rows(results(None))
    assert row.low is None and row.high is None
    assert "| 0.0 | % | – | 31 |" in model_card_markdown(results(None))
    (row,) = card_rows(results([0.0, 0.2]))
    assert (row.low, row.high) == (0.0, 0.2)


def test_contrast_interval_is_withheld_on_few_blocks_and_brackets_the_difference():
    # the quick-profile case: 6 blocks, negated 100 % vs affirmative 0 %
    iv = contrast_interval([47.0] * 6, [47.0] * 6, [0.0] * 6, [46.0] * 6, "blocks")
    assert iv.ci is None and iv.units_needed == MIN_CLUSTERS and "6 blocks" in iv.reason
    rng = np.random.default_rng(2)
    G = MIN_CLUSTERS
    a = rng.binomial(47, rng.beta(2, 2, G)).astype(float)
    b = rng.binomial(46, rng.beta(2, 3, G)).astype(float)
    iv = contrast_interval(a, [47.0] * G, b, [46.0] * G)
    theta = a.sum() / (47 * G) - b.sum() / (46 * G)
    assert iv.ci is not None and iv.ci[0] < theta < iv.ci[1]
    # linearised CR1 by hand
    u = (a - a.sum() / (47 * G) * 47) / (47 * G) - (b - b.sum() / (46 * G) * 46) / (46 * G)
    se = math.sqrt(G / (G - 1) * float((u * u).sum()))
    t = pytest.importorskip("scipy.stats").t.ppf(0.975, G - 1)
    assert iv.ci == pytest.approx((theta - t * se, theta + t * se))
