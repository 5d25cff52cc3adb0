"""Coverage of negbench's 95 % intervals and type-I error of its paired test, by simulation.

Data are drawn with the structures of the real releases (CONDAQA contrast groups, JSTS-/JNLI-Neg
minimal-pair groups, This is not a Dataset blocks of 93, one document under several few-shot
seeds, independent items), a range of intra-cluster correlations (ICC) and accuracies near 0,
0.5 and 1; each setting is replicated ``reps`` times and the intervals are computed by the same
vectorised code that prints them (:mod:`negbench.scoring.intervals`).  A setting with fewer
clusters than :data:`~negbench.scoring.intervals.MIN_CLUSTERS` is reported as withheld: there
negbench shows no interval.  ``benchmarks/coverage.py`` prints the full table;
``tests/evaluation/test_coverage.py`` asserts it; ``docs/statistics.md`` explains it.

Models: a cluster's accuracy is Beta with mean p and ICC ρ (beta-binomial items); a minimal-pair
group has one original (control) and k negated variants (treatments), each side with its own
Beta group accuracy; JSTS-Neg's similarities are normal with a group effect on both the gold and
the prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from negbench.scoring.intervals import (
    MIN_CLUSTERS,
    MIN_CLUSTERS_CORRELATION,
    MIN_CLUSTERS_TEST,
    MIN_ITEMS,
    min_clusters,
    MIN_DISCORDANT,
    clustered_wilson_arrays,
    contrast_arrays,
    cluster_t_arrays,
    correlation_arrays,
    t_quantile,
    wilson_arrays,
    Z95,
)

#: The acceptance band for a shown interval's coverage of a nominal 95 %.
COVERAGE_BAND = (0.93, 0.975)
#: The largest type-I error accepted for the paired test at α = 0.05.
TYPE_I_MAX = 0.06

#: Cluster sizes as in the releases.
STRUCTURES: dict[str, dict[str, Any]] = {
    "items": {"sizes": (1,), "what": "independent items (one item per unit)"},
    "condaqa": {"sizes": (2, 3, 4, 4, 4, 5), "what": "CONDAQA contrast groups (original + edits)"},
    "minimal-pairs": {"sizes": (2, 2, 3, 3, 4, 5), "what": "JSTS-/JNLI-Neg groups (items)"},
    "blocks": {"sizes": (93,), "what": "This is not a Dataset blocks of 93"},
    "seeds": {"sizes": (5,), "what": "one document under 5 few-shot seeds"},
}


@dataclass(frozen=True)
class Row:
    """One setting of the study and what it measured."""

    kind: str  # proportion, accchg, correlation, compare
    structure: str
    G: int  # clusters
    icc: float
    truth: str  # e.g. "p=0.50"
    method: str
    shown: float  # share of replications with an interval shown
    coverage: float | None  # among shown (for compare: the type-I error)
    reps: int

    def ok(self) -> bool:
        """Shown intervals within the band, or (compare) type-I error at most 6 %; a withheld
        setting must be withheld in every replication."""
        if self.method == "withheld":
            return self.shown == 0.0
        if self.kind == "compare":
            return self.coverage is not None and self.coverage <= TYPE_I_MAX
        if self.coverage is None:
            return True
        return COVERAGE_BAND[0] <= self.coverage <= COVERAGE_BAND[1]


def _sizes(structure: str, G: int) -> np.ndarray:
    base = np.array(STRUCTURES[structure]["sizes"], dtype=float)
    return np.resize(base, G)


def _beta(rng: np.random.Generator, p: float, icc: float, shape: tuple) -> np.ndarray:
    if icc <= 0:
        return np.full(shape, p)
    k = (1 - icc) / icc
    return rng.beta(p * k, (1 - p) * k, size=shape)


def proportion_setting(
    structure: str, G: int, p: float, icc: float, reps: int, seed: int = 0
) -> Row:
    """Coverage of the proportion interval (Wilson / clustered Wilson-t) of p."""
    rng = np.random.default_rng(seed)
    if structure == "items":
        n = G
        k = rng.binomial(n, p, size=reps)
        if n < MIN_ITEMS:
            return Row("proportion", structure, G, 0.0, f"p={p:.2f}", "withheld", 0.0, None, reps)
        lo, hi = wilson_arrays(k / n, n, Z95)
        cov = float(np.mean((lo <= p) & (p <= hi)))
        return Row("proportion", structure, G, 0.0, f"p={p:.2f}", "wilson", 1.0, cov, reps)
    sizes = _sizes(structure, G)
    pg = _beta(rng, p, icc, (reps, G))
    S = rng.binomial(sizes.astype(int)[None, :], pg)
    C = np.broadcast_to(sizes, (reps, G))
    if G < min_clusters(list(sizes)):
        return Row("proportion", structure, G, icc, f"p={p:.2f}", "withheld", 0.0, None, reps)
    lo, hi, _ = clustered_wilson_arrays(S, C)
    cov = float(np.mean((lo <= p) & (p <= hi)))
    return Row("proportion", structure, G, icc, f"p={p:.2f}", "clustered-wilson-t", 1.0, cov, reps)


def _pairs(
    rng: np.random.Generator, G: int, pc: float, pt: float, icc: float, reps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Minimal-pair groups: per group one original and k variants (k = 1…4, pairs = k); the
    group sum of (treatment − control) correctness and its pair count."""
    k = np.resize(np.array([1, 1, 2, 2, 3, 4], dtype=int), G)
    qc = _beta(rng, pc, icc, (reps, G))
    qt = _beta(rng, pt, icc, (reps, G))
    ctrl = rng.binomial(1, qc)  # the original, shared by the group's pairs
    treat = rng.binomial(k[None, :], qt)  # correct variants
    return treat - k[None, :] * ctrl, np.broadcast_to(k.astype(float), (reps, G))


def accchg_setting(G: int, pc: float, pt: float, icc: float, reps: int, seed: int = 0) -> Row:
    """Coverage of AccChg's interval (cluster-robust t on G − 1 df) of pt − pc."""
    rng = np.random.default_rng(seed)
    S, C = _pairs(rng, G, pc, pt, icc, reps)
    truth = pt - pc
    label = f"acc={pc:.2f}→{pt:.2f}"
    if G < MIN_CLUSTERS:
        return Row("accchg", "minimal-pairs", G, icc, label, "withheld", 0.0, None, reps)
    _, lo, hi, _ = cluster_t_arrays(S, C)
    shown = (S != 0).any(1)  # all differences 0: no spread, withheld
    cov = float(np.mean(((lo <= truth) & (truth <= hi))[shown])) if shown.any() else None
    return Row(
        "accchg", "minimal-pairs", G, icc, label, "cluster-t", float(shown.mean()), cov, reps
    )


def contrast_setting(G: int, pa: float, pb: float, icc: float, reps: int, seed: int = 0) -> Row:
    """Coverage of a phenomenon contrast's interval (:func:`negbench.scoring.intervals.
    contrast_interval`): blocks of 93 sentences, 47 of one condition (e.g. negated) and 46 of
    the other, each side with its own Beta block accuracy (ICC ``icc``), truth pa − pb."""
    label = f"acc={pa:.2f}−{pb:.2f}"
    if G < MIN_CLUSTERS:
        return Row("contrast", "blocks", G, icc, label, "withheld", 0.0, None, reps)
    rng = np.random.default_rng(seed)
    A = rng.binomial(47, _beta(rng, pa, icc, (reps, G))).astype(float)
    B = rng.binomial(46, _beta(rng, pb, icc, (reps, G))).astype(float)
    M = np.full((reps, G), 47.0)
    K = np.full((reps, G), 46.0)
    _, lo, hi = contrast_arrays(A, M, B, K)
    truth = pa - pb
    shown = hi > lo
    cov = float(np.mean(((lo <= truth) & (truth <= hi))[shown])) if shown.any() else None
    return Row("contrast", "blocks", G, icc, label, "cluster-t", float(shown.mean()), cov, reps)


def correlation_setting(G: int, rho_x: float, reps: int, seed: int = 0) -> Row:
    """Coverage of JSTS-Neg's correlation interval: gold x = a_g + e, prediction
    y = x + b_g + f with group effects (share ``rho_x`` of each variance) in groups of 2–5."""
    rng = np.random.default_rng(seed)
    sizes = _sizes("minimal-pairs", G).astype(int)
    cl = np.repeat(np.arange(G), sizes)
    N = len(cl)
    a = rng.normal(0, np.sqrt(rho_x), (reps, G))[:, cl]
    x = a + rng.normal(0, np.sqrt(1 - rho_x), (reps, N))
    b = rng.normal(0, np.sqrt(rho_x), (reps, G))[:, cl]
    y = x + b + rng.normal(0, np.sqrt(1 - rho_x), (reps, N))
    truth = 1 / np.sqrt(2.0)  # cov(x, y) = 1, var x = 1, var y = 2
    if G < MIN_CLUSTERS_CORRELATION:
        return Row("correlation", "minimal-pairs", G, rho_x, "r=0.71", "withheld", 0.0, None, reps)
    _, lo, hi = correlation_arrays(x, y, cl)
    cov = float(np.mean((lo <= truth) & (truth <= hi)))
    return Row(
        "correlation", "minimal-pairs", G, rho_x, "r=0.71", "fisher-z-jackknife", 1.0, cov, reps
    )


def compare_setting(
    structure: str, G: int, p: float, icc: float, reps: int, seed: int = 0, alpha: float = 0.05
) -> Row:
    """Type-I error of the paired unit-level test (:func:`negbench.scoring.intervals.
    paired_test`'s cluster-robust t) under a null with unit effects: models A and B have the
    same mean accuracy p but each unit its own accuracy in each model (ICC ``icc``)."""
    if G < MIN_CLUSTERS_TEST:  # "too small": no p-value
        return Row("compare", structure, G, icc, f"p={p:.2f}", "withheld", 0.0, None, reps)
    rng = np.random.default_rng(seed)
    sizes = _sizes(structure, G)
    m = sizes.astype(int)[None, :]
    a = rng.binomial(m, _beta(rng, p, icc, (reps, G)))
    b = rng.binomial(m, _beta(rng, p, icc, (reps, G)))
    S = (b - a).astype(float)
    C = np.broadcast_to(sizes, (reps, G))
    theta, _, _, se = cluster_t_arrays(S, C)
    from scipy.stats import t as tdist

    with np.errstate(invalid="ignore", divide="ignore"):
        tstat = np.where(se > 0, theta / se, 0.0)
    pval = 2 * tdist.sf(np.abs(tstat), G - 1)
    tested = ((S != 0).sum(1) >= MIN_DISCORDANT) & (G >= MIN_CLUSTERS_TEST)
    err = float(np.mean((pval < alpha)[tested])) if tested.any() else None
    return Row(
        "compare", structure, G, icc, f"p={p:.2f}", "cluster-t", float(tested.mean()), err, reps
    )


def item_level_type_i(
    structure: str, G: int, p: float, icc: float, reps: int, seed: int = 0, alpha: float = 0.05
) -> float:
    """The same null, tested as before this study: items as independent pairs (a paired t on
    items, what McNemar's test and a per-document bootstrap amount to) — for the record."""
    rng = np.random.default_rng(seed)
    sizes = _sizes(structure, G)
    m = sizes.astype(int)
    reps_items = []
    pa = _beta(rng, p, icc, (reps, G))
    pb = _beta(rng, p, icc, (reps, G))
    cl = np.repeat(np.arange(G), m)
    a = rng.random((reps, len(cl))) < pa[:, cl]
    b = rng.random((reps, len(cl))) < pb[:, cl]
    d = b.astype(float) - a.astype(float)
    reps_items.append(d)
    n = d.shape[1]
    se = d.std(1, ddof=1) / np.sqrt(n)
    from scipy.stats import t as tdist

    with np.errstate(invalid="ignore", divide="ignore"):
        tstat = np.where(se > 0, d.mean(1) / se, 0.0)
    return float(np.mean(2 * tdist.sf(np.abs(tstat), n - 1) < alpha))


#: Accuracies near 0, 0.5 and 1.
PS = (0.05, 0.5, 0.95)
ICCS = (0.05, 0.2, 0.5)


def grid(quick: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    """The settings: ``quick`` is the default test run's grid (seconds), else the full one."""
    seed = 0
    Gs = {
        "condaqa": (5, 150) if quick else (2, 5, 10, 30, 100, 149, 150, 300),
        "minimal-pairs": (2, 150) if quick else (2, 5, 10, 30, 100, 149, 150, 300),
        "blocks": (2, 6, 150) if quick else (2, 3, 6, 20, 100, 149, 150, 300),
        "seeds": (30, 150) if quick else (10, 30, 100, 149, 150, 300),
    }
    for n in (20, 30, 100, 300) if quick else (10, 20, 29, 30, 60, 100, 300, 1000):
        for p in PS:
            seed += 1
            yield "proportion", {"structure": "items", "G": n, "p": p, "icc": 0.0, "seed": seed}
    for st, gs in Gs.items():
        iccs = (0.3, 0.6, 0.9) if st == "seeds" else ICCS
        for G in gs:
            for p in PS:
                for icc in iccs:
                    seed += 1
                    yield "proportion", {"structure": st, "G": G, "p": p, "icc": icc, "seed": seed}
    for G in (2, 150) if quick else (2, 10, 30, 100, 149, 150, 300):
        for pc, pt in ((0.5, 0.5), (0.9, 0.6), (0.95, 0.95), (0.05, 0.1)):
            for icc in ICCS:
                seed += 1
                yield "accchg", {"G": G, "pc": pc, "pt": pt, "icc": icc, "seed": seed}
    for G in (6, 150) if quick else (6, 30, 100, 150, 300):
        for pa, pb in ((0.5, 0.5), (0.95, 0.05), (0.9, 0.6)):
            for icc in ICCS:
                seed += 1
                yield "contrast", {"G": G, "pa": pa, "pb": pb, "icc": icc, "seed": seed}
    for G in (5, 50) if quick else (2, 5, 30, 49, 50, 100, 300):
        for rho in (0.0, 0.3, 0.7):
            seed += 1
            yield "correlation", {"G": G, "rho_x": rho, "seed": seed}
    cmp_settings = [("blocks", 50), ("condaqa", 50), ("minimal-pairs", 50), ("seeds", 50)]
    cmp_settings += [("blocks", 20)] if quick else []
    if not quick:
        cmp_settings += [
            ("blocks", 20),
            ("condaqa", 30),
            ("minimal-pairs", 30),
            ("blocks", 100),
            ("condaqa", 200),
            ("minimal-pairs", 100),
            ("seeds", 150),
        ]
    for st, G in cmp_settings:
        for p in (0.5, 0.9):
            for icc in (0.1, 0.5) if st != "items" else (0.0,):
                seed += 1
                yield "compare", {"structure": st, "G": G, "p": p, "icc": icc, "seed": seed}


def _seed(kind: str, kw: dict[str, Any]) -> int:
    """A setting's own seed (the same in the quick and the full grid)."""
    import zlib

    return zlib.crc32(repr((kind, sorted((k, v) for k, v in kw.items() if k != "seed"))).encode())


def run(reps: int = 1000, quick: bool = True) -> list[Row]:
    """Every setting of :func:`grid`, ``reps`` replications each."""
    out = []
    for kind, kw in grid(quick):
        kw = {**kw, "seed": _seed(kind, kw)}
        if kind == "proportion":
            out.append(proportion_setting(reps=reps, **kw))
        elif kind == "accchg":
            out.append(accchg_setting(reps=reps, **kw))
        elif kind == "correlation":
            out.append(correlation_setting(reps=reps, **kw))
        elif kind == "contrast":
            out.append(contrast_setting(reps=reps, **kw))
        else:
            out.append(compare_setting(reps=4 * reps, **kw))  # a rate near 5 %: ± 0.35 %
    return out


def table(rows: list[Row]) -> str:
    """The study as a Markdown table."""
    lines = [
        "| kind | structure | G | ICC | truth | method | shown | coverage / type-I | ok |",
        "|---|---|---:|---:|---|---|---:|---:|---|",
    ]
    for r in rows:
        cov = "–" if r.coverage is None else f"{100 * r.coverage:.1f} %"
        lines.append(
            f"| {r.kind} | {r.structure} | {r.G} | {r.icc:g} | {r.truth} | {r.method} | "
            f"{100 * r.shown:.0f} % | {cov} | {'yes' if r.ok() else 'NO'} |"
        )
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    """The study by (kind, structure, G): the range of coverage (type-I error) over accuracies
    and intra-cluster correlations, as a Markdown table."""
    by: dict[tuple[str, str, int], list[Row]] = {}
    for r in rows:
        by.setdefault((r.kind, r.structure, r.G), []).append(r)
    lines = [
        "| kind | structure | G | settings | method | shown | coverage (min–max) | all ok |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    for (kind, st, G), rs in by.items():
        covs = [r.coverage for r in rs if r.coverage is not None]
        rng = f"{100 * min(covs):.1f}–{100 * max(covs):.1f} %" if covs else "withheld"
        shown = f"{100 * min(r.shown for r in rs):.0f}–{100 * max(r.shown for r in rs):.0f} %"
        lines.append(
            f"| {kind} | {st} | {G} | {len(rs)} | {rs[0].method} | {shown} | {rng} | "
            f"{'yes' if all(r.ok() for r in rs) else 'NO'} |"
        )
    return "\n".join(lines)


__all__ = [
    "COVERAGE_BAND",
    "Row",
    "STRUCTURES",
    "TYPE_I_MAX",
    "accchg_setting",
    "compare_setting",
    "contrast_setting",
    "correlation_setting",
    "grid",
    "item_level_type_i",
    "proportion_setting",
    "run",
    "summary",
    "table",
    "t_quantile",
]
