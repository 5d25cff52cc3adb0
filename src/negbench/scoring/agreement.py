"""Fleiss' kappa (Fleiss 1971): chance-corrected agreement of a fixed number of raters; and
Cohen's kappa for a pair of raters (the human-evaluation sheets report both).

JSTS-Neg reports it over its three annotators' 0–5 scores (treated as six nominal categories,
§3.3: κ = 0.59); JNLI-Neg releases the per-instance label counts it is computed from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence


@dataclass(frozen=True)
class FleissKappa:
    kappa: float
    p_bar: float  # mean observed agreement P̄
    p_e: float  # chance agreement P̄e = Σ p_j²
    n_subjects: int
    n_raters: int
    p_j: tuple[float, ...]  # share of all ratings in category j


def counts_from_ratings(
    ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable]
) -> list[list[int]]:
    """Per-subject category counts n_ij from per-subject rating lists (one rating per rater)."""
    index = {c: j for j, c in enumerate(categories)}
    rows = []
    for i, rs in enumerate(ratings):
        row = [0] * len(categories)
        for r in rs:
            if r not in index:
                raise ValueError(f"subject {i}: rating {r!r} is not one of {list(categories)}")
            row[index[r]] += 1
        rows.append(row)
    return rows


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> FleissKappa:
    """κ = (P̄ − P̄e) / (1 − P̄e) from a subjects × categories matrix of rating counts.

    Every subject must have the same number n ≥ 2 of ratings. κ is undefined (ValueError) when
    all ratings fall into one category (P̄e = 1).
    """
    if not counts:
        raise ValueError("no subjects")
    n = sum(counts[0])
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per subject")
    k = len(counts[0])
    totals = [0] * k
    p_sum = 0.0
    for i, row in enumerate(counts):
        if len(row) != k or sum(row) != n or any(c < 0 for c in row):
            raise ValueError(
                f"subject {i}: expected {k} non-negative counts summing to {n}, got {list(row)}"
            )
        p_sum += (sum(c * c for c in row) - n) / (n * (n - 1))
        for j, c in enumerate(row):
            totals[j] += c
    N = len(counts)
    p_bar = p_sum / N
    p_j = tuple(t / (N * n) for t in totals)
    p_e = sum(p * p for p in p_j)
    if p_e >= 1.0:
        raise ValueError("all ratings fall in one category: kappa is undefined")
    return FleissKappa((p_bar - p_e) / (1 - p_e), p_bar, p_e, N, n, p_j)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's κ of two raters over the same items: (p_o − p_e) / (1 − p_e), with p_e from each
    rater's own marginals; None when undefined (p_e = 1: both always gave one same answer)."""
    if len(a) != len(b) or not a:
        raise ValueError("two equally long, non-empty rating lists are needed")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    cats = set(a) | set(b)
    p_e = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)
