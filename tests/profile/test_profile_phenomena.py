"""The profile's phenomena carry their uncertainty, and an artefact is neither drawn nor ranked:
each contrast is a difference over the benchmark's clusters with n on both sides and a
cluster-robust 95 % interval (none with too few clusters, said why); a side whose answers are one
label, or with fewer than MIN_SIDE_N items, is flagged and left out of the figure; a headline row
whose model answers one label gets no rank among the papers' models."""

from __future__ import annotations

import math

import numpy as np
import pytest

from negbench.scoring.intervals import MIN_CLUSTERS, paired_difference
from negbench.profile.page import (
    NOT_RANKED,
    HeadlineRow,
    PaperModel,
    _papers_text,
    paper_label,
    phenomena_plot,
    phenomena_table,
)
from negbench.profile.phenomena import MIN_SIDE_N, Condition, Phenomenon
from negbench.report.plots import close
from negbench.scoring.tables import Ref


def test_paired_difference_is_the_difference_of_the_ratios_with_a_t_interval():
    reps = 13  # 156 clusters: at least MIN_CLUSTERS, where the coverage study shows intervals
    a_s, a_n = (
        [3, 1, 2, 0, 4, 2, 1, 3, 2, 2, 1, 0] * reps,
        [4, 2, 3, 1, 4, 3, 2, 4, 3, 2, 2, 1] * reps,
    )
    b_s, b_n = (
        [1, 1, 1, 0, 2, 1, 0, 2, 1, 1, 0, 0] * reps,
        [4, 2, 3, 1, 4, 3, 2, 4, 3, 2, 2, 1] * reps,
    )
    g = 12 * reps
    assert g >= MIN_CLUSTERS
    d = paired_difference(a_s, a_n, b_s, b_n)
    assert d is not None and d.clusters == d.paired == g
    ra, rb = sum(a_s) / sum(a_n), sum(b_s) / sum(b_n)
    assert d.delta == pytest.approx(ra - rb)
    # the linearised cluster variance on G − 1 degrees of freedom, by hand
    u = [
        (sa - ra * na) / sum(a_n) - (sb - rb * nb) / sum(b_n)
        for sa, na, sb, nb in zip(a_s, a_n, b_s, b_n)
    ]
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, g - 1)) * math.sqrt(g / (g - 1) * sum(x * x for x in u))
    assert d.ci == pytest.approx((d.delta - half, d.delta + half))


def test_too_few_clusters_give_no_interval_and_say_why():
    d = paired_difference([1, 0], [93, 93], [0, 1], [93, 93])
    assert d is not None and d.ci is None and d.clusters == 2
    assert f"{MIN_CLUSTERS}" in d.why  # how many units an interval needs
    n = MIN_CLUSTERS + 10
    same = paired_difference([1] * n, [1] * n, [0] * n, [1] * n)  # no spread at all
    assert same is not None and same.ci is None and "no spread" in same.why
    assert paired_difference([1], [1], [], []) is None


def test_paired_difference_covers_95_percent_with_cluster_effects():
    """400 replications, 160 clusters of 2–6 items with a per-cluster effect shared by both sides
    (minimal-pair groups, blocks): the interval covers the true difference 0.93–0.975 of the time
    (binomial SE of the estimate ≈ 0.011)."""
    rng = np.random.default_rng(0)
    hits = 0
    reps, g = 400, 160
    for _ in range(reps):
        sizes = rng.integers(2, 7, g)
        eff = rng.normal(0, 1.0, g)
        pa = 1 / (1 + np.exp(-(0.3 + eff)))
        pb = 1 / (1 + np.exp(-(-0.2 + eff)))
        a = rng.binomial(sizes, pa)
        b = rng.binomial(sizes, pb)
        d = paired_difference(a.tolist(), sizes.tolist(), b.tolist(), sizes.tolist())
        assert d is not None and d.ci is not None
        # the truth: the expected difference of the two ratios (by a large simulation below)
        hits += d.ci[0] <= TRUE_DIFF <= d.ci[1]
    assert 0.93 <= hits / reps <= 0.975, hits / reps


def _true_diff() -> float:
    rng = np.random.default_rng(1)
    sizes = rng.integers(2, 7, 2_000_000)
    eff = rng.normal(0, 1.0, sizes.size)
    pa = 1 / (1 + np.exp(-(0.3 + eff)))
    pb = 1 / (1 + np.exp(-(-0.2 + eff)))
    return float((sizes * pa).sum() / sizes.sum() - (sizes * pb).sum() / sizes.sum())


TRUE_DIFF = _true_diff()


def _cond(label: str, value: float, n: int, constant: str | None = None) -> Condition:
    c = Condition(label, Ref(0, ["u"], "mean", "acc", {}, None, 100.0, "unit"))
    c.value, c.n, c.constant = value, n, constant
    return c


def test_a_constant_or_small_side_is_flagged_marked_and_not_drawn():
    ok = Phenomenon("b", "p", _cond("negated", 40.0, 50), _cond("affirmative", 60.0, 50))
    ok.diff = paired_difference([2] * 25, [2] * 25, [1, 2] * 12 + [2], [2] * 25)
    const = Phenomenon(
        "notadataset",
        "negated vs affirmative sentences",
        _cond("negated, w/o distractor", 100.0, 191, "False"),
        _cond("affirmative", 0.0, 122, "False"),
    )
    small = Phenomenon(
        "condaqa", "edits", _cond("scope edit", 0.0, MIN_SIDE_N - 1), _cond("o", 0.0, 50)
    )
    assert ok.drawn and not ok.flags()
    assert not const.drawn and const.flags() == ["both sides: one answer (False)"]
    assert not small.drawn and small.flags() == [f"condition: n < {MIN_SIDE_N}"]
    t = phenomena_table([ok, const, small])
    heads = [c.label() for c in t.columns]
    assert "95 % CI of Δ" in heads and heads.count("n") == 1 and "n " in heads
    rows = {r.labels[0]: [c.text() if c else "" for c in r.cells] for r in t.rows}
    note = heads.index("note")
    assert rows["notadataset: negated vs affirmative sentences"][note].startswith(
        "⚠ both sides: one answer (False): not drawn"
    )
    assert rows["condaqa: edits"][note].startswith("⚠ condition: n < ")
    assert not rows["b: p"][note].startswith("⚠")
    plot = phenomena_plot([("m", [ok, const, small])])
    assert plot is not None and "Left out: 2 contrast(s)" in plot.caption
    ax = plot._fig.axes[0]  # type: ignore[attr-defined]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["b: negated\nvs affirmative"]
    close([plot])


def _row(constant: str | None) -> HeadlineRow:
    r = HeadlineRow(
        "konubench-diagnostics",
        "KoNUBench diagnostics",
        "kmmlu-pos",
        ["kmmlu-pos"],
        "symbol",
        0,
        "acc",
        ["u"],
        70.0,
        None,
        30,
        7154,
        "",
        [],
        None,
    )
    r.papers = [PaperModel(f"m{i}", 50.0 + i, "src", "model") for i in range(43)]
    r.papers.append(PaperModel("All Models (average)", 60.0, "src", "average"))
    r.constant = constant
    return r


def test_a_model_answering_one_label_is_not_ranked():
    assert _row(None).rank() == (23, 44)  # 22 of the 43 above 70
    r = _row("the model answers 'A' for 100 % of the 30 items")
    assert r.rank() is None and r.to_dict()["rank"] is None
    assert r.to_dict()["not_ranked"] == NOT_RANKED
    assert _papers_text(r).startswith("not ranked: the model answers one label")
    # "(average)" said once
    assert paper_label(r.papers[-1]) == "All Models (average)"
    assert (
        paper_label(PaperModel("Korean Models", 1.0, "s", "average")) == "Korean Models (average)"
    )
