"""95 % confidence intervals, and negbench's one bootstrap default.

* :func:`wilson` — the Wilson score interval of a proportion of independent 0/1 outcomes (items,
  or whole groups such as CONDAQA's all-four-correct questions); it stays inside [0, 1] and is
  right for small n, where the normal approximation (mean ± 1.96 SE) is not.
* :func:`clustered_wilson` — the same for 0/1 items that come in clusters (the benchmark's units:
  contrast groups, blocks, minimal pairs; or one document's answers under several few-shot
  seeds): Wilson with the effective n of a cluster-robust variance (n / design effect, between
  the number of clusters and n), so correlated items are not counted as independent — and, unlike
  a bootstrap, it does not collapse to [0, 0] when every item is wrong.
* :func:`cluster_interval` — a percentile bootstrap of a ratio Σ numerator / Σ denominator over
  clusters drawn with replacement, for a metric that is not a proportion (JSTS-Neg / JNLI-Neg's
  AccChg, a difference of two accuracies over minimal pairs).
* :func:`interval` picks between them.

Every bootstrap in negbench (these intervals, ``negbench compare``, ``negbench report``, the
base-vs-adapter comparison of ``negbench train``) uses :data:`BOOTSTRAP_RESAMPLES` resamples and
:data:`BOOTSTRAP_SEED` unless told otherwise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Hashable, Sequence

#: The bootstrap every interval and comparison uses unless told otherwise: 10,000 resamples,
#: seed 0.  With these a p-value agrees to about ±0.005 with any other seed.
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
#: The normal quantile of a two-sided 95 % interval.
Z95 = 1.959963984540054


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of ``k`` successes in ``n`` independent trials (None when n = 0)."""
    if n <= 0:
        return None
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z / d * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    lo, hi = centre - half, centre + half
    return (0.0 if lo < 1e-12 else lo), (1.0 if hi > 1 - 1e-12 else hi)


def resample_ratios(
    sums: Sequence[float],
    counts: Sequence[float],
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
):
    """``n_resamples`` bootstrap values of Σ sums / Σ counts, the clusters drawn with
    replacement (a numpy array).

    A resample's value depends only on how many drawn clusters have each (sum, count) value, so
    when few such values exist (0/1 scores: at most three per cluster size) the counts are drawn
    at once from the multinomial of their frequencies — the same bootstrap distribution as
    drawing cluster indices, in milliseconds for 381k items instead of a minute."""
    import numpy as np

    sums_a = np.asarray(sums, dtype=float)
    cnts = np.asarray(counts, dtype=float)
    C = len(sums_a)
    rng = np.random.default_rng(seed)
    stats = np.empty(n_resamples)
    kinds, freq = np.unique(np.stack([sums_a, cnts], 1), axis=0, return_counts=True)
    if len(kinds) <= 256:
        k_sums, k_cnts, pvals = kinds[:, 0], kinds[:, 1], freq / C
        chunk = max(1, min(n_resamples, 2_000_000 // len(kinds)))
        for s in range(0, n_resamples, chunk):
            e = min(n_resamples, s + chunk)
            w = rng.multinomial(C, pvals, size=e - s).astype(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                stats[s:e] = (w @ k_sums) / (w @ k_cnts)
    else:
        chunk = max(1, min(n_resamples, 2_000_000 // max(C, 1)))
        for s in range(0, n_resamples, chunk):
            e = min(n_resamples, s + chunk)
            idx = rng.integers(0, C, size=(e - s, C))
            with np.errstate(invalid="ignore", divide="ignore"):
                stats[s:e] = sums_a[idx].sum(1) / cnts[idx].sum(1)
    return stats


def cluster_interval(
    sums: Sequence[float],
    counts: Sequence[float],
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Σ sums / Σ counts over clusters (one (sum, count) per
    cluster); None with fewer than two clusters or when every cluster has the same ratio, where
    resampling says nothing (it would give a zero-width interval)."""
    import numpy as np

    pairs = [(s, c) for s, c in zip(sums, counts) if c > 0]
    if len(pairs) < 2 or len({s / c for s, c in pairs}) == 1:
        return None  # one cluster, or all alike: resampling cannot show the spread
    stats = resample_ratios([s for s, _ in pairs], [c for _, c in pairs], n_resamples, seed)
    stats = stats[~np.isnan(stats)]
    lo, hi = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


# -- intervals whose coverage is measured (docs/statistics.md, tests/evaluation/test_coverage.py) --
#
# Every function below has a vectorised core (arrays of shape (R, G): R data sets of G clusters)
# that the coverage simulation calls directly, so the numbers in docs/statistics.md are those of
# the code that prints the intervals.

#: Fewest clusters (benchmark units: contrast groups, minimal-pair groups, blocks, a document's
#: few-shot seeds) from which an interval of a proportion or of a difference (AccChg) is shown.
#: Below it no method reached 93 % coverage over accuracies near 0, 0.5 and 1 and intra-cluster
#: correlations 0.05–0.5 (0.3–0.9 for seeds) in the simulation (docs/statistics.md: at 30–50
#: clusters accuracies near 0 or 1 fell to 90–92 %, at 100 to 92.5–94 %), so the interval is withheld with a warning
#: saying how many units it needs.  A rule that looked at the observed accuracy instead would
#: select the data sets it shows and lose coverage (the simulation showed that too).
MIN_CLUSTERS = 150
#: Fewest independent items (each its own unit) from which Wilson's interval is shown: with
#: fewer, accuracies near 0 or 1 fell below 93 % (discreteness: 92 % at 20 items, p = 0.05).
MIN_ITEMS = 30
#: Fewest clusters for the correlation interval (JSTS-Neg): 92 % at 30, in the band from 50.
MIN_CLUSTERS_CORRELATION = 50


def min_clusters(counts: Sequence[float]) -> int:
    """Fewest clusters a proportion in clusters of these sizes needs for a shown interval."""
    return MIN_CLUSTERS


#: Fewest clusters for the paired test of two runs (``negbench compare``) over units of several
#: items; below it the comparison says "too small" instead of a p-value (type-I error at most
#: 5.7 % from 50 units in the simulation; up to 6.1 % at 20–30 units of minimal pairs, 7.3 % at
#: 10 contrast groups).
MIN_CLUSTERS_TEST = 50
#: Fewest units with a non-zero paired difference (a discordant unit) for AccChg's interval and
#: the paired test: with fewer, the cluster-robust variance rests on a handful of values.
MIN_DISCORDANT = 5
#: Fewest discordant items (one item per unit) for the interval of a paired difference beside
#: McNemar's exact p-value: with fewer, a t interval would disagree with the exact test.
MIN_DISCORDANT_ITEMS = 20


@dataclass(frozen=True)
class Interval:
    """A 95 % interval, or why none is shown.

    ``ci`` is None when the interval is withheld; ``reason`` then says why and ``units_needed``
    how many benchmark units (clusters) would allow one.  ``method`` names the method used
    (``wilson``, ``clustered-wilson-t``, ``cluster-t``, ``fisher-z-jackknife``)."""

    ci: tuple[float, float] | None
    method: str
    units: int  # clusters behind the estimate (G)
    n: float  # items (or pairs) behind it
    reason: str = ""
    units_needed: int | None = None

    @property
    def withheld(self) -> bool:
        return self.ci is None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = list(self.ci) if self.ci else None
        return d


def t_quantile(df: Any, level: float = 0.95) -> Any:
    """Two-sided quantile of Student's t with ``df`` degrees of freedom (array or scalar; df =
    ∞ gives the normal quantile)."""
    from scipy.stats import t

    import numpy as np

    df = np.asarray(df, dtype=float)
    q = t.ppf(0.5 + level / 2, np.where(np.isfinite(df), np.maximum(df, 1), 1e12))
    return q


def wilson_arrays(p: Any, n: Any, z: Any) -> tuple[Any, Any]:
    """Vectorised :func:`wilson` of a proportion ``p`` at (effective) size ``n``, quantile ``z``."""
    import numpy as np

    p, n, z = (np.asarray(x, dtype=float) for x in (p, n, z))
    z2 = z * z
    d = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / d
    half = z / d * np.sqrt(np.clip(p * (1 - p), 0, None) / n + z2 / (4 * n * n))
    lo, hi = centre - half, centre + half
    return np.where(lo < 1e-12, 0.0, lo), np.where(hi > 1 - 1e-12, 1.0, hi)


def clustered_wilson_arrays(sums: Any, counts: Any) -> tuple[Any, Any, Any]:
    """Core of :func:`clustered_wilson` for arrays of shape (R, G) (clusters with count 0 are
    ignored): the low and high ends and the number of clusters G of each row.

    The proportion p = Σ s / Σ c; its cluster-robust (CR1, ratio-estimator) variance
    v = G/(G−1) Σ (s − p c)² / n² gives the design effect deff = v n / (p(1 − p)) (Kish), kept
    ≥ 1, and the effective n = n / deff; the interval is Wilson's at that n with Student's
    quantile on G − 1 degrees of freedom, since v is estimated from G clusters.  With every
    item right or every item wrong v is 0 and says nothing about the clustering: the interval
    is then Wilson's over the G clusters (the worst case, every cluster answered as one)."""
    import numpy as np

    S = np.atleast_2d(np.asarray(sums, dtype=float))
    C = np.atleast_2d(np.asarray(counts, dtype=float))
    present = C > 0
    G = present.sum(1).astype(float)
    n = C.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = S.sum(1) / n
        resid = np.where(present, S - p[:, None] * C, 0.0)
        v = G / np.maximum(G - 1, 1) * (resid**2).sum(1) / (n * n)
        pq = p * (1 - p)
        deff = np.where(pq > 0, np.maximum(1.0, v * n / np.where(pq > 0, pq, 1)), 1.0)
        n_eff = n / deff
    singletons = G == n  # every cluster one item: plain Wilson, normal quantile
    edge = (pq <= 0) & ~singletons  # all right / all wrong: the clusters as the trials
    n_eff = np.where(edge, G, np.where(singletons, n, n_eff))
    # Student's quantile on G − 1 df where the design effect is large (n_eff near G), tending
    # to the normal one where it is 1 (Wilson's variance is then not estimated at all)
    df = np.maximum(G - 1, n_eff - 1)
    z = np.where(singletons | edge, Z95, t_quantile(df))
    lo, hi = wilson_arrays(p, np.maximum(n_eff, 1.0), z)
    return lo, hi, G


def clustered_wilson(
    sums: Sequence[float], counts: Sequence[float], z: float = Z95
) -> tuple[float, float] | None:
    """Wilson interval of a proportion of 0/1 items in clusters (``sums[c]`` successes of
    ``counts[c]`` items), at the effective n of the design effect with a t quantile on G − 1
    degrees of freedom (:func:`clustered_wilson_arrays`).  None when no item is counted.  It
    does not withhold: :func:`proportion_interval` decides whether the interval is shown.
    ``z`` is kept for callers that passed it; the quantile is Student's for clustered data."""
    pairs = [(s, c) for s, c in zip(sums, counts) if c > 0]
    if not pairs:
        return None
    lo, hi, _ = clustered_wilson_arrays([[s for s, _ in pairs]], [[c for _, c in pairs]])
    return float(lo[0]), float(hi[0])


def cluster_t_arrays(sums: Any, counts: Any, level: float = 0.95) -> tuple[Any, Any, Any, Any]:
    """Core of :func:`cluster_t_interval` for arrays (R, G): estimate θ = Σ s / Σ c, its
    cluster-robust standard error (CR1) and the interval θ ± t(G − 1) · se; returns
    (θ, low, high, se)."""
    import numpy as np

    S = np.atleast_2d(np.asarray(sums, dtype=float))
    C = np.atleast_2d(np.asarray(counts, dtype=float))
    present = C > 0
    G = present.sum(1).astype(float)
    n = C.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = S.sum(1) / n
        resid = np.where(present, S - theta[:, None] * C, 0.0)
        se = np.sqrt(G / np.maximum(G - 1, 1) * (resid**2).sum(1)) / n
    q = t_quantile(G - 1, level)
    return theta, theta - q * se, theta + q * se, se


def _needed(what: str, G: int, need: int, unit: str) -> str:
    return (
        f"no 95 % interval: {what} rests on {G} {unit}, and below {need} no method reached "
        f"93 % coverage in negbench's simulation (docs/statistics.md)"
    )


def proportion_interval(
    sums: Sequence[float], counts: Sequence[float], unit: str = "clusters"
) -> Interval:
    """The 95 % interval of a proportion of 0/1 items, or why none is shown.

    Items that are their own units: Wilson, from :data:`MIN_ITEMS` items on.  Items in clusters (contrast groups, blocks, minimal-pair groups, one
    document's seeds): :func:`clustered_wilson` from :data:`MIN_CLUSTERS` clusters on; with
    fewer the interval is withheld."""
    pairs = [(float(s), float(c)) for s, c in zip(sums, counts) if c > 0]
    n = sum(c for _, c in pairs)
    G = len(pairs)
    if G == 0:
        return Interval(None, "none", 0, 0.0, "no item to count")
    if all(c == 1 for _, c in pairs):
        return share_interval(sum(s for s, _ in pairs), G, unit)
    need = min_clusters([c for _, c in pairs])
    if G < need:
        return Interval(
            None, "clustered-wilson-t", G, n, _needed("the proportion", G, need, unit), need
        )
    ci = clustered_wilson([s for s, _ in pairs], [c for _, c in pairs])
    return Interval(ci, "clustered-wilson-t", G, n)


def share_interval(k: float, n: int, unit: str = "items") -> Interval:
    """The 95 % interval of ``k`` of ``n`` independent items (each its own unit): Wilson from
    :data:`MIN_ITEMS` items on, else withheld with the reason — :func:`proportion_interval`'s
    rule, for a rate known only by its counts (an error table's error rate, a share of the
    wrong answers, a clause type's confusion rate)."""
    if n <= 0:
        return Interval(None, "none", 0, 0.0, "no item to count")
    if n < MIN_ITEMS:
        return Interval(
            None, "wilson", n, float(n), _needed("the proportion", n, MIN_ITEMS, unit), MIN_ITEMS
        )
    return Interval(wilson(k, n), "wilson", n, float(n))


def rate_text(
    value: float, digits: int, iv: Interval | None, n: int | None, scale: float = 1.0
) -> str:
    """How a rate is printed with its interval and n, in every error and paper table:
    ``12.50 [4.14–31.23] (40)`` — the value, its 95 % interval (``scale`` × the interval of the
    proportion) and the n behind it; ``12.50 (24, no CI)`` when the interval is withheld (too few
    items or units: :func:`share_interval`, :func:`proportion_interval`); ``–`` for no value."""
    if value != value:
        return "–" + (f" ({n})" if n is not None else "")
    s = f"{value:.{digits}f}"
    if n is None:
        return s
    if iv is None or iv.ci is None:
        return f"{s} ({n}, no CI)"
    lo, hi = (scale * x for x in iv.ci)
    return f"{s} [{lo:.{digits}f}–{hi:.{digits}f}] ({n})"


def difference_interval(
    sums: Sequence[float], counts: Sequence[float], unit: str = "clusters"
) -> Interval:
    """The 95 % interval of a mean of paired differences per cluster (AccChg over minimal-pair
    groups, B − A of ``negbench compare``), Σ sums / Σ counts: the cluster-robust t on G − 1
    degrees of freedom (Cameron & Miller 2015), shown from :data:`MIN_CLUSTERS` clusters on (and
    not when every cluster's difference is 0: no spread to estimate)."""
    pairs = [(float(s), float(c)) for s, c in zip(sums, counts) if c > 0]
    n = sum(c for _, c in pairs)
    G = len(pairs)
    if G < MIN_CLUSTERS:
        return Interval(
            None,
            "cluster-t",
            G,
            n,
            _needed("the difference", G, MIN_CLUSTERS, unit),
            MIN_CLUSTERS,
        )
    if all(s == 0 for s, _ in pairs):
        return Interval(
            None,
            "cluster-t",
            G,
            n,
            f"no 95 % interval: every one of the {G} {unit} has a difference of 0, so the "
            "spread over units cannot be estimated",
        )
    theta, lo, hi, _ = cluster_t_arrays([[s for s, _ in pairs]], [[c for _, c in pairs]])
    return Interval((float(lo[0]), float(hi[0])), "cluster-t", G, n)


def contrast_arrays(
    a_sums: Any, a_counts: Any, b_sums: Any, b_counts: Any, level: float = 0.95
) -> tuple[Any, Any, Any]:
    """Core of :func:`contrast_interval` for arrays (R, G): θ = Σa/Σm − Σb/Σk, the two sides
    measured in the same clusters; its cluster-robust variance by linearisation (per cluster
    u = (a − p_a m)/M − (b − p_b k)/K, CR1) and the t interval on G − 1 df.  Returns
    (θ, low, high)."""
    import numpy as np

    A, M, B, K = (
        np.atleast_2d(np.asarray(x, dtype=float)) for x in (a_sums, a_counts, b_sums, b_counts)
    )
    present = (M + K) > 0
    G = present.sum(1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        Mt, Kt = M.sum(1), K.sum(1)
        pa, pb = A.sum(1) / Mt, B.sum(1) / Kt
        u = (A - pa[:, None] * M) / Mt[:, None] - (B - pb[:, None] * K) / Kt[:, None]
        se = np.sqrt(G / np.maximum(G - 1, 1) * np.where(present, u * u, 0.0).sum(1))
    q = t_quantile(G - 1, level)
    theta = pa - pb
    return theta, theta - q * se, theta + q * se


def contrast_interval(
    a_sums: Sequence[float],
    a_counts: Sequence[float],
    b_sums: Sequence[float],
    b_counts: Sequence[float],
    unit: str = "clusters",
) -> Interval:
    """95 % interval of a phenomenon's contrast: the accuracy of one condition minus that of its
    reference, both measured in the same clusters (``a_*[g]``, ``b_*[g]``: successes and items of
    each side in cluster g — This is not a Dataset's negated vs affirmative sentences of a block,
    a CONDAQA edit vs the original of a group).  Cluster-robust t on G − 1 df (linearised
    difference of two ratio estimators); withheld under :data:`MIN_CLUSTERS` clusters or when
    a side has no item."""
    G = sum(1 for m, k in zip(a_counts, b_counts) if m + k > 0)
    n = float(sum(a_counts) + sum(b_counts))
    if sum(a_counts) <= 0 or sum(b_counts) <= 0:
        return Interval(None, "cluster-t", G, n, "no 95 % interval: one side has no item")
    if G < MIN_CLUSTERS:
        return Interval(
            None, "cluster-t", G, n, _needed("the contrast", G, MIN_CLUSTERS, unit), MIN_CLUSTERS
        )
    theta, lo, hi = contrast_arrays([a_sums], [a_counts], [b_sums], [b_counts])
    if not hi[0] > lo[0]:
        return Interval(None, "cluster-t", G, n, f"no 95 % interval: no spread over the {G} {unit}")
    return Interval((float(lo[0]), float(hi[0])), "cluster-t", G, n)


def interval_of(
    sums: Sequence[float],
    counts: Sequence[float],
    proportion: bool = True,
    unit: str = "clusters",
) -> Interval:
    """:func:`proportion_interval` for a proportion of 0/1 items, else :func:`difference_interval`."""
    if proportion:
        return proportion_interval(sums, counts, unit)
    return difference_interval(sums, counts, unit)


def interval(
    sums: Sequence[float], counts: Sequence[float], proportion: bool = True
) -> tuple[float, float] | None:
    """The 95 % interval of Σ sums / Σ counts, or None where it is withheld
    (:func:`interval_of` says why)."""
    return interval_of(sums, counts, proportion).ci


# -- correlations (JSTS-Neg) ----------------------------------------------------------------------
def _r_from_sums(n: Any, sx: Any, sy: Any, sxx: Any, syy: Any, sxy: Any) -> Any:
    """Pearson's r from sums (arrays)."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        cxy = sxy - sx * sy / n
        cxx = sxx - sx * sx / n
        cyy = syy - sy * sy / n
        return cxy / np.sqrt(cxx * cyy)


def correlation_arrays(x: Any, y: Any, clusters: Any, level: float = 0.95) -> tuple[Any, Any, Any]:
    """Core of :func:`correlation_interval`: x, y of shape (R, N), ``clusters`` (N,) cluster
    numbers 0..G−1 shared by all rows.  Returns (r, low, high): Fisher's z of r ± t(G − 1) times
    the delete-one-cluster jackknife standard error of z (from per-cluster sums, so G deletions
    cost one pass)."""
    import numpy as np

    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    cl = np.asarray(clusters, dtype=int)
    G = int(cl.max()) + 1
    onehot = np.zeros((len(cl), G))
    onehot[np.arange(len(cl)), cl] = 1.0
    per = [v @ onehot for v in (np.ones_like(x), x, y, x * x, y * y, x * y)]  # (R, G) each
    tot = [v.sum(1, keepdims=True) for v in per]
    r = _r_from_sums(*[t[:, 0] for t in tot])
    rj = _r_from_sums(*[t - v for t, v in zip(tot, per)])
    lim = 1 - 1e-9
    zs = np.arctanh(np.clip(rj, -lim, lim))
    z = np.arctanh(np.clip(r, -lim, lim))
    zbar = zs.mean(1)
    se = np.sqrt((G - 1) / G * ((zs - zbar[:, None]) ** 2).sum(1))
    q = t_quantile(G - 1, level)
    return r, np.tanh(z - q * se), np.tanh(z + q * se)


def correlation_interval(
    x: Sequence[float], y: Sequence[float], clusters: Sequence[Hashable] | None = None
) -> Interval:
    """95 % interval of Pearson's r between ``x`` and ``y`` (JSTS-Neg's gold and predicted
    similarity): Fisher's z with a delete-one-cluster jackknife standard error and Student's
    quantile on G − 1 degrees of freedom, clusters being the benchmark's units (minimal-pair
    groups; default: each item).  Withheld under :data:`MIN_CLUSTERS_CORRELATION` clusters."""
    import numpy as np

    keys = list(range(len(x))) if clusters is None else list(clusters)
    index: dict[Hashable, int] = {}
    cl = np.array([index.setdefault(k, len(index)) for k in keys])
    G = len(index)
    if G < MIN_CLUSTERS_CORRELATION:
        need = MIN_CLUSTERS_CORRELATION
        return Interval(
            None,
            "fisher-z-jackknife",
            G,
            float(len(keys)),
            _needed("the correlation", G, need, "clusters"),
            need,
        )
    r, lo, hi = correlation_arrays([list(x)], [list(y)], cl)
    if not np.isfinite(r[0]) or not (np.isfinite(lo[0]) and np.isfinite(hi[0])):
        return Interval(
            None, "fisher-z-jackknife", G, float(len(keys)), "no interval: a constant variable"
        )
    return Interval((float(lo[0]), float(hi[0])), "fisher-z-jackknife", G, float(len(keys)))


# -- spread over seeds ------------------------------------------------------------------------------
def seed_sd(values: Sequence[float]) -> float | None:
    """Standard deviation (n − 1) of a metric over few-shot seeds; None for one seed (one value
    has no spread — 0.0 would claim that seeds do not matter)."""
    if len(values) < 2:
        return None
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


# -- tests of two runs on the same items ------------------------------------------------------------
def mcnemar_exact(b: int, c: int) -> dict[str, Any]:
    """McNemar's exact test on b and c discordant pairs (scipy's binomial tail): the two-sided
    p-value ``min(1, 2 P(X ≤ min(b, c)))``, X ~ Bin(b + c, ½), and Lancaster's mid-p
    (half the probability of the observed count taken out), which is less conservative."""
    from scipy.stats import binom

    n = b + c
    if n == 0:
        return {"exact_p": 1.0, "mid_p": 1.0}
    k = min(b, c)
    exact = min(1.0, 2 * float(binom.cdf(k, n, 0.5)))
    mid = min(1.0, 2 * (float(binom.cdf(k, n, 0.5)) - 0.5 * float(binom.pmf(k, n, 0.5))))
    return {"exact_p": exact, "mid_p": mid}


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The paired comparison of two runs' per-item scores, by the benchmark's units.

    Units of one item (documents): 0/1 scores get McNemar's exact test (p) with its mid-p,
    other scores the t test of the differences; units of several items (blocks, contrast groups,
    minimal-pair groups, one document's seeds): the cluster-robust t on G − 1 degrees of
    freedom.  The interval of mean(b − a) is the cluster-robust t interval.  Too few units or
    discordant pairs: ``p`` and the interval are None and ``too_small`` says why."""
    import numpy as np
    from scipy.stats import t as tdist

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    keys = list(range(len(d))) if clusters is None else list(clusters)
    index: dict[Hashable, int] = {}
    cl = np.array([index.setdefault(k, len(index)) for k in keys], dtype=int)
    G = len(index)
    out: dict[str, Any] = {
        "delta": float(d.mean()) if len(d) else float("nan"),
        "ci_low": None,
        "ci_high": None,
        "p": None,
        "mid_p": None,
        "method": "",
        "n_units": G,
        "n_items": int(len(d)),
        "alpha": alpha,
        "too_small": None,
    }
    if G == 0:
        out["too_small"] = "no paired item"
        return out
    sums = np.bincount(cl, weights=d, minlength=G)
    cnts = np.bincount(cl, minlength=G).astype(float)
    single = bool(np.all(cnts == 1))
    binary = bool(np.all(np.isin(np.concatenate([np.asarray(a), np.asarray(b)]), (0.0, 1.0))))
    discordant = int(np.sum(sums != 0))
    if single and binary:
        gains, losses = int(np.sum(d > 0)), int(np.sum(d < 0))
        mc = mcnemar_exact(losses, gains)
        out.update(method="mcnemar-exact", p=mc["exact_p"], mid_p=mc["mid_p"])
        if gains + losses < MIN_DISCORDANT_ITEMS:
            out["too_small"] = (
                f"{gains + losses} discordant item(s): too few for an interval (needs "
                f"{MIN_DISCORDANT_ITEMS}); the exact p-value is given"
            )
            return out
    elif G < MIN_CLUSTERS_TEST or discordant < MIN_DISCORDANT:
        out["method"] = "cluster-t"
        out["too_small"] = (
            f"too small: {G} units ({discordant} with a difference); the unit-level test "
            f"needs at least {MIN_CLUSTERS_TEST} units and {MIN_DISCORDANT} with a difference"
        )
        return out
    theta, lo, hi, se = cluster_t_arrays(sums[None, :], cnts[None, :], 1 - alpha)
    out["ci_low"], out["ci_high"] = float(lo[0]), float(hi[0])
    if not out["method"]:
        s = float(se[0])
        tstat = float(theta[0]) / s if s > 0 else (0.0 if theta[0] == 0 else math.inf)
        out["p"] = float(2 * tdist.sf(abs(tstat), G - 1))
        out["method"] = "cluster-t"
    return out


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (Holm 1979) of a family of p-values (None: not tested)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):  # type: ignore[arg-type,return-value]
        running = max(running, min(1.0, (m - rank) * float(pvalues[i])))  # type: ignore[arg-type]
        out[i] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg (1995) adjusted p-values (false discovery rate; None: not tested), by
    scipy's ``false_discovery_control``."""
    from scipy.stats import false_discovery_control

    idx = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if idx:
        adj = false_discovery_control([float(pvalues[i]) for i in idx], method="bh")  # type: ignore[arg-type]
        for i, q in zip(idx, adj):
            out[i] = float(q)
    return out


# -- a phenomenon's contrast, as the profile shows it ------------------------------------------------
@dataclass(frozen=True)
class Difference:
    """Σa/Σna − Σb/Σnb over clusters, with its 95 % interval (None: withheld) and why not."""

    delta: float
    ci: tuple[float, float] | None
    clusters: int  # clusters with at least one side
    paired: int  # clusters with both sides
    why: str = ""
    needed: int | None = None  # clusters an interval needs, when withheld for too few


def paired_difference(
    a_sums: Sequence[float],
    a_counts: Sequence[float],
    b_sums: Sequence[float],
    b_counts: Sequence[float],
) -> Difference | None:
    """The difference of two ratios measured on the same clusters (cluster c holds ``a_sums[c]``
    of ``a_counts[c]`` for one side and ``b_sums[c]`` of ``b_counts[c]`` for the other; a count
    of 0: the cluster lacks that side), with :func:`contrast_interval` — the cluster-robust t
    whose coverage the simulation measured, withheld under :data:`MIN_CLUSTERS` clusters.  None
    when a side has no item."""
    na, nb = float(sum(a_counts)), float(sum(b_counts))
    if na <= 0 or nb <= 0:
        return None
    d = sum(a_sums) / na - sum(b_sums) / nb
    sides = [(ca > 0, cb > 0) for ca, cb in zip(a_counts, b_counts) if ca > 0 or cb > 0]
    iv = contrast_interval(a_sums, a_counts, b_sums, b_counts)
    return Difference(
        d, iv.ci, len(sides), sum(1 for a, b in sides if a and b), iv.reason, iv.units_needed
    )
