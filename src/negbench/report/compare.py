"""Comparing two runs (two models, or one model before / after fine-tuning), per benchmark unit:
which items flipped, and whether the difference is more than noise.

Items are paired by ``doc_id`` within units of the same name (task × mode × shots × seed), so both
runs must have evaluated the same data (checked with the dataset fingerprints in results.json).
The tests resample and pair by the **benchmark's own units** (``Task.structure``: CONDAQA
contrast groups, This is not a Dataset blocks, JSTS-/JNLI-Neg minimal-pair groups; a document
with all its seeds where a task has no larger unit), because items of one unit share their fate
and a per-item test counts them as independent evidence (type-I error 55 % on blocks of 93 in the
simulation of docs/statistics.md).  For each group of units (seeds pooled) and each unit:

* the per-sample score is the group's primary metric (``acc``, ``exact_match``, KoNUBench's
  ``acc_norm`` for cloze, …), 0/1 for every built-in task;
* ``test`` (:func:`negbench.scoring.intervals.paired_test`): units of one item with 0/1 scores
  get **McNemar's exact test** (scipy's binomial tail, with Lancaster's mid-p); units of several
  items the **cluster-robust t** on G − 1 degrees of freedom (type-I error ≤ 5.7 % at α = 0.05
  from 20 units); the 95 % interval of Δ = B − A is the cluster-robust t interval.  Too few units
  or discordant pairs: "too small", no p-value or interval;
* ``mcnemar``: McNemar's exact p and mid-p and the χ² with continuity correction over the
  discordant *items* — valid as a test only where every unit is one item;
* ``bootstrap``: a paired bootstrap of Δ that resamples units (``n_resamples`` times with
  ``numpy.random.default_rng(seed)``), percentile interval; withheld (None) under
  :data:`~negbench.scoring.intervals.MIN_CLUSTERS_TEST` units;
* ``p_holm``: the test's p-value adjusted by Holm's method over the comparison's groups (a family
  of tests); ``significant`` means ``p_holm`` < α.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Sequence

from negbench.errors import DataError
from negbench.scoring.intervals import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    MIN_CLUSTERS_TEST,
    holm,
    mcnemar_exact,
    paired_test,
    resample_ratios,
)
from negbench.scoring.runs import (
    Run,
    benchmark_of,
    error_type,
    is_correct,
    pred_text,
    gold_text,
    primary_metric,
)

SCHEMA = "negbench.compare/1"


def mcnemar(b: int, c: int) -> dict:
    """McNemar's test for b (A right, B wrong) and c (A wrong, B right): the exact p-value from
    scipy's binomial tail (milliseconds for any count), Lancaster's mid-p, and the χ² with
    continuity correction."""
    n = b + c
    if n == 0:
        return {
            "b": b,
            "c": c,
            "n_discordant": 0,
            "exact_p": 1.0,
            "mid_p": 1.0,
            "chi2": 0.0,
            "chi2_p": 1.0,
        }
    ex = mcnemar_exact(b, c)
    chi2 = max(0, abs(b - c) - 1) ** 2 / n
    return {
        "b": b,
        "c": c,
        "n_discordant": n,
        "exact_p": ex["exact_p"],
        "mid_p": ex["mid_p"],
        "chi2": chi2,
        "chi2_p": math.erfc(math.sqrt(chi2 / 2)),
    }


def unit_key(task: str, rec: dict, doc_id: str) -> str:
    """The benchmark unit an item belongs to (``Task.structure``: a contrast group, a block, a
    minimal-pair group), as a string; the document where the task has no larger unit or cannot
    be loaded any more."""
    try:
        from negbench.tasks import get_task

        st = get_task(task).structure
    except Exception:  # a task gone since (a deleted YAML file): documents
        return f"doc:{doc_id}"
    key = st.unit_key(rec.get("meta") or {}, default=None)
    if key is None:
        return f"doc:{doc_id}"
    parts = key if isinstance(key, tuple) else (key,)
    return "unit:" + "|".join(str(x) for x in parts)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Any] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
) -> dict:
    """Bootstrap of mean(b − a) over paired items, resampling clusters (the benchmark's units;
    default: each item; :func:`negbench.scoring.intervals.resample_ratios`).  Under
    :data:`MIN_CLUSTERS_TEST` clusters the interval and p are None and ``too_small`` says why
    (a single item would give p < 0.001 and [1, 1])."""
    import numpy as np

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    keys0 = list(range(len(d))) if clusters is None else list(clusters)
    G = len(set(keys0))
    if len(d) == 0 or G < MIN_CLUSTERS_TEST:
        return {
            "delta": float(d.mean()) if len(d) else float("nan"),
            "ci_low": None,
            "ci_high": None,
            "p": None,
            "n_resamples": n_resamples,
            "seed": seed,
            "alpha": alpha,
            "n_clusters": G,
            "too_small": f"too small: {G} unit(s); the bootstrap needs {MIN_CLUSTERS_TEST}",
        }
    keys = list(range(len(d))) if clusters is None else list(clusters)
    index: dict[Any, int] = {}
    cl = np.array([index.setdefault(k, len(index)) for k in keys])
    sums = np.bincount(cl, weights=d)
    cnts = np.bincount(cl).astype(float)
    stats = resample_ratios(sums, cnts, n_resamples, seed)
    lo, hi = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    p = min(1.0, 2 * min(float(np.mean(stats <= 0)), float(np.mean(stats >= 0))))
    return {
        "delta": float(d.mean()),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p": p,
        "n_resamples": n_resamples,
        "seed": seed,
        "alpha": alpha,
        "n_clusters": len(sums),
        "too_small": None,
    }


def _check_data(a: Run, b: Run, tasks: Sequence[str], force: bool) -> list[str]:
    warnings = []
    da, db = a.results.get("datasets") or {}, b.results.get("datasets") or {}
    for t in tasks:
        x, y = da.get(t) or {}, db.get(t) or {}
        for split, info in x.items():
            if not isinstance(info, dict) or not isinstance(y.get(split), dict):
                continue
            ha, hb = info.get("sha256"), y[split].get("sha256")
            if ha and hb and ha != hb:
                msg = (
                    f"task '{t}' split '{split}' holds different data in the two runs "
                    f"(sha256 {ha[:12]}… vs {hb[:12]}…)"
                )
                if not force:
                    raise DataError(
                        msg,
                        path=str(b.path / "results.json"),
                        fix="compare runs made on the same data, or pass --force to "
                        "pair items by doc_id anyway",
                    )
                warnings.append(msg)
    return warnings


def compare_runs(
    a: Run,
    b: Run,
    tasks: Sequence[str] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
    force: bool = False,
) -> dict:
    """Per-sample comparison of run ``b`` against run ``a`` (schema ``negbench.compare/1``)."""
    ta, tb = a.tasks(), b.tasks()
    common = [t for t in ta if t in tb]
    if tasks:
        missing = [t for t in tasks if t not in common]
        if missing:
            raise DataError(
                f"task(s) {', '.join(missing)} are not in both runs (A: "
                f"{', '.join(ta)}; B: {', '.join(tb)})",
                path=f"{a.path / 'results.json'} vs {b.path / 'results.json'}",
                fix="choose tasks both runs evaluated",
            )
        common = [t for t in common if t in tasks]
    if not common:
        raise DataError(
            f"the runs have different tasks (A: {', '.join(ta)}; B: {', '.join(tb)}), "
            "nothing to compare",
            path=f"{a.path / 'results.json'} vs {b.path / 'results.json'}",
            fix="compare two runs of the same task(s)",
        )
    warnings = _check_data(a, b, common, force)
    skipped: list[dict] = []
    pairs = _unit_pairs(a, b, common, skipped)
    if not pairs:
        raise DataError(
            "the runs share no unit (same task, shots and seed) to pair",
            path=f"{a.path / 'results.json'} vs {b.path / 'results.json'}",
            fix="compare runs made with the same --shots / --seeds",
        )
    groups: dict[tuple, list[tuple[str, str]]] = {}
    for na, nb in pairs:
        ua, ub = a.units[na], b.units[nb]
        mode = ua.mode if ua.mode == ub.mode else f"{ua.mode} vs {ub.mode}"
        groups.setdefault((ua.task, mode, ua.shots), []).append((na, nb))
    out_groups, out_units, flips = [], [], []
    for (task, mode, k), names in groups.items():
        gid = f"{task}.{mode.replace(' vs ', '-vs-')}.{k}shot"
        pa_all, pb_all, clusters = [], [], []
        unit_rows = []
        metric = metric_b = None
        for na, nb in names:
            n = na if na == nb else f"{na} vs {nb}"
            ua, ub = a.units[na], b.units[nb]
            ra, rb = a.samples(na), b.samples(nb)
            metric = metric or primary_metric(task, ua.mode, ua.metrics, ra[0] if ra else None)
            metric_b = metric_b or primary_metric(task, ub.mode, ub.metrics, rb[0] if rb else None)
            ia = {str(r.get("doc_id", i)): r for i, r in enumerate(ra)}
            ib = {str(r.get("doc_id", i)): r for i, r in enumerate(rb)}
            ids = [d for d in ia if d in ib]
            if len(ids) != len(ia) or len(ids) != len(ib):
                warnings.append(f"{n}: {len(ia)} items in A, {len(ib)} in B, {len(ids)} paired")
            if not ids:
                skipped.append({"unit": n, "reason": "no item in common (doc_id)"})
                continue
            pa, pb, keys = [], [], []
            for d in ids:
                x, y = ia[d], ib[d]
                keys.append(unit_key(task, x, d))
                sa, sb = _score(x, metric), _score(y, metric_b)
                pa.append(sa)
                pb.append(sb)
                if sa != sb:
                    ca, cb = is_correct(x, metric), is_correct(y, metric_b)
                    flips.append(
                        {
                            "group": gid,
                            "unit": n,
                            "doc_id": d,
                            "change": "gain" if sb > sa else "loss",
                            "a_score": sa,
                            "b_score": sb,
                            "a_pred": pred_text(x),
                            "b_pred": pred_text(y),
                            "gold": gold_text(x),
                            "a_error_type": error_type(x, ca),
                            "b_error_type": error_type(y, cb),
                        }
                    )
            shown = metric if metric == metric_b else f"{metric} vs {metric_b}"
            unit_rows.append(
                _stats(n, task, mode, k, shown, [n], pa, pb, keys, n_resamples, seed, alpha)
            )
            pa_all += pa
            pb_all += pb
            clusters += keys
        if not pa_all:
            continue
        g = _stats(
            gid,
            task,
            mode,
            k,
            metric if metric == metric_b else f"{metric} vs {metric_b}",
            [r["id"] for r in unit_rows],
            pa_all,
            pb_all,
            clusters,
            n_resamples,
            seed,
            alpha,
        )
        out_groups.append(g)
        for r in unit_rows:
            r["group"] = gid
        out_units += unit_rows
    _adjust(out_groups, alpha)
    _adjust(out_units, alpha)
    return {
        "schema": SCHEMA,
        "a": a.summary(),
        "b": b.summary(),
        "settings": {
            "bootstrap_resamples": n_resamples,
            "seed": seed,
            "alpha": alpha,
            "pairing": "doc_id within units of the same name (when the runs share none: "
            "units of the same task, shots and seed in different scoring modes); tests and "
            "the bootstrap go by the benchmark's units (contrast groups, blocks, minimal-pair "
            "groups; else documents), all seeds of a unit together",
            "adjustment": "Holm over the comparison's groups (and, separately, its units)",
        },
        "groups": out_groups,
        "units": out_units,
        "flips": flips,
        "skipped": skipped,
        "warnings": warnings,
    }


def _unit_pairs(a: Run, b: Run, tasks: Sequence[str], skipped: list[dict]) -> list[tuple[str, str]]:
    """(unit of A, unit of B) to pair: units of the same name; when the runs share none, units
    of the same task, shots and seed in different scoring modes (cloze in A against letter in
    B: the same items scored two ways, paired by doc_id).  Units left out go to ``skipped``."""
    ua = [n for n, u in a.units.items() if u.task in tasks]
    ub = [n for n, u in b.units.items() if u.task in tasks]
    pairs = [(n, n) for n in ua if n in b.units]
    if not pairs:

        def key(u):
            return (u.task, u.shots, u.seed)

        pairs = [(na, nb) for na in ua for nb in ub if key(a.units[na]) == key(b.units[nb])]
    in_a = {na for na, _ in pairs}
    in_b = {nb for _, nb in pairs}
    skipped += [{"unit": n, "reason": "only in A"} for n in ua if n not in in_a]
    skipped += [{"unit": n, "reason": "only in B"} for n in ub if n not in in_b]
    return pairs


def _adjust(rows: list[dict], alpha: float) -> None:
    """Holm-adjust the rows' test p-values as one family; ``significant``: adjusted p < α."""
    adj = holm([r["test"]["p"] for r in rows])
    for r, p in zip(rows, adj):
        r["p_holm"] = p
        r["significant"] = bool(p is not None and p < alpha)


def _score(rec: dict, metric: str | None) -> float:
    if metric and isinstance(rec.get(metric), (int, float)):
        return float(rec[metric])
    c = is_correct(rec, metric)
    return float(bool(c))


def _stats(
    id_: str,
    task: str,
    mode: str,
    shots: int,
    metric: str | None,
    units: list[str],
    pa: list[float],
    pb: list[float],
    clusters: list,
    n_resamples: int,
    seed: int,
    alpha: float,
) -> dict:
    n = len(pa)
    binary = all(v in (0.0, 1.0) for v in pa + pb)
    both = sum(1 for x, y in zip(pa, pb) if x == 1 and y == 1) if binary else None
    neither = sum(1 for x, y in zip(pa, pb) if x == 0 and y == 0) if binary else None
    losses = sum(1 for x, y in zip(pa, pb) if y < x)
    gains = sum(1 for x, y in zip(pa, pb) if y > x)
    mc = mcnemar(losses, gains) if binary else None
    boot = paired_bootstrap(pa, pb, clusters, n_resamples, seed, alpha)
    test = paired_test(pa, pb, clusters, alpha)
    am, bm = sum(pa) / n, sum(pb) / n
    return {
        "id": id_,
        "task": task,
        "benchmark": benchmark_of(task),
        "mode": mode,
        "shots": shots,
        "metric": metric,
        "units": units,
        "n_pairs": n,
        "n_docs": len(set(clusters)),  # the units the tests resample (kept name)
        "n_units": len(set(clusters)),
        "a_mean": am,
        "b_mean": bm,
        "delta": bm - am,
        "both_correct": both,
        "both_wrong": neither,
        "gains": gains,
        "losses": losses,
        "mcnemar": mc,
        "bootstrap": boot,
        "test": test,
        "p_holm": test["p"],  # replaced by the family's Holm adjustment (_adjust)
        "significant": bool(test["p"] is not None and test["p"] < alpha),
    }


# -- rendering ------------------------------------------------------------------------------------
def p_text(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "<0.001" if x < 0.001 else f"{x:.3f}"


def comparison_rows(cmp: dict, level: str = "groups") -> tuple[list[str], list[list[str]]]:
    head = [
        "task",
        "mode",
        "shots",
        "metric",
        "n",
        "A",
        "B",
        "Δ (B−A)",
        "gains",
        "losses",
        "units",
        "McNemar p (exact, items)",
        "95% CI (by units)",
        "p (by units)",
        "p (Holm)",
        "sig.",
    ]
    rows = []
    for g in cmp[level]:
        ts = g.get("test") or {}
        rows.append(
            [
                g["task"],
                g["mode"],
                str(g["shots"]),
                str(g["metric"]),
                str(g["n_pairs"]),
                f"{g['a_mean']:.3f}",
                f"{g['b_mean']:.3f}",
                f"{g['delta']:+.3f}",
                str(g["gains"]),
                str(g["losses"]),
                str(g.get("n_units", g.get("n_docs", ""))),
                p_text(g["mcnemar"]["exact_p"]) if g["mcnemar"] else "–",
                ci_text(ts),
                p_text(ts.get("p")) if ts.get("p") is not None else "too small",
                p_text(g.get("p_holm")),
                "yes" if g["significant"] else "",
            ]
        )
    return head, rows


def ci_text(test: dict) -> str:
    """A test's 95 % interval of Δ, or why there is none."""
    if test.get("ci_low") is None or test.get("ci_high") is None:
        return "too small" if test.get("too_small") else "–"
    return f"[{test['ci_low']:+.3f}, {test['ci_high']:+.3f}]"


#: Columns of the console and Markdown text a flipped item's answers are wrapped to.
WRAP = 100


def flip_lines(f: dict, width: int = WRAP) -> list[str]:
    """One flipped item as a Markdown list item: its unit, document and change, then A's answer,
    B's answer and the gold answer each in full, wrapped (long answers often share a long
    beginning and differ only at the end, so no answer is cut)."""
    out = [f"- {f['unit']}, doc {f['doc_id']}: {f['change']}"]
    for label, text in (("A", f["a_pred"]), ("B", f["b_pred"]), ("gold", f["gold"])):
        text = "–" if text is None else str(text).replace("\r\n", "\n").replace("\n", " ⏎ ")
        out += textwrap.wrap(
            f"{label}: {text}",
            width,
            initial_indent="  - ",
            subsequent_indent="    ",
            break_long_words=True,
            break_on_hyphens=False,
        ) or [f"  - {label}:"]
    return out


def to_markdown(cmp: dict, max_flips: int = 20) -> str:
    a, b = cmp["a"]["label"], cmp["b"]["label"]
    head, rows = comparison_rows(cmp)
    lines = [
        f"**Comparison: A = {a}, B = {b}** (gains = wrong in A, right in B; losses = the "
        f"reverse; tests by the benchmark's units: McNemar's exact test where a unit is one "
        f"item, else the cluster-robust t on units − 1 df; sig. = Holm-adjusted p < "
        f"{cmp['settings']['alpha']} over the {len(cmp['groups'])} groups compared)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if cmp["flips"] and max_flips:
        shown = min(max_flips, len(cmp["flips"]))
        lines += [
            "",
            f"Flipped items: {'' if shown == len(cmp['flips']) else f'first {shown} of '}"
            f"{len(cmp['flips'])} (answers in full)",
            "",
        ]
        for f in cmp["flips"][:max_flips]:
            lines += flip_lines(f)
    for w in cmp["warnings"]:
        lines += ["", f"*warning: {w}*"]
    if cmp["skipped"]:
        lines += [
            "",
            "*not compared: "
            + ", ".join(f"{s['unit']} ({s['reason']})" for s in cmp["skipped"])
            + "*",
        ]
    return "\n".join(lines)
