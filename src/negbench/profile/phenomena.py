"""The negation phenomena a profile shows across benchmarks, each as a contrast of two conditions
computed from the per-sample records (so each number links to the items behind it).  Each
benchmark folder declares its own (``tasks/<name>/profile_part.py``, registry kind
``phenomena``, :class:`negbench.scoring.phenomena.PhenomenonSpec`); today they are:

* standard vs local negation (Thunder-NUBench, Thunder-KoNUBench): how often the model picks the
  local negation, a contradiction or a paraphrase instead of the standard negation, overall and
  per clause type of the local negation;
* negated vs affirmative questions (KoNUBench's KMMLU and KoBEST BoolQ diagnostics);
* negated vs affirmative sentences, without and with distractors (This is not a Dataset), and
  coherence without vs with distractors;
* scope conditions (ScoNe-NLI): each negation-scope condition vs the pairs without negation;
* group consistency (CONDAQA): accuracy on each kind of edited passage vs the original passage,
  and consistency over the four passages of a question vs accuracy;
* minimal-pair accuracy change (JSTS-Neg, JNLI-Neg): accuracy with the added negation (Acc')
  vs without it (Acc), on all pairs (M), pairs whose label changed (M_i) and did not (M_u).

A condition is a :class:`~negbench.scoring.tables.Ref`: the share / mean over records matching a
filter (paired item by item when two profiles are compared), or a task metric recomputed from
the unit's records (group metrics: consistency, coherence, AccChg).  Phenomena are computed on
each benchmark's headline units: the first task (all tasks of a pooled part), the first mode,
the fewest shots, every seed.

Each contrast is a difference on the same items, clustered by the benchmark's own units (a block,
a contrast group, a group of minimal pairs; else the item): n on both sides and a cluster-robust
95 % interval (:func:`negbench.scoring.intervals.paired_difference`).  A side whose
predictions are constant (one answer for :data:`~negbench.evaluation.run_warnings.CONSTANT_SHARE`
of its items), or with fewer than :data:`MIN_SIDE_N` items, is flagged: the table marks it and
the figure leaves the contrast out — such a difference measures the label balance or noise.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Hashable

from negbench.scoring.intervals import Difference, paired_difference
from negbench.scoring.phenomena import Items, Side
from negbench.scoring.registry import REGISTRY
from negbench.scoring.runs import Run, UnitResult, primary_metric
from negbench.scoring.tables import Ref, resolve_ref

#: Fewest items (groups, pairs, blocks for a metric over them) a side of a contrast needs before
#: its difference is drawn in the figure: below it the side is flagged (the coverage study of
#: issue 33 puts a usable interval at ten clusters or more; twenty items keep one item's flip
#: under five points).
MIN_SIDE_N = 20


@dataclass
class Condition:
    label: str
    ref: Ref
    value: float = float("nan")  # in percent (or points)
    sd: float | None = None  # over seeds / pooled tasks
    n: int = 0  # what the value counts (items; groups, blocks or pairs for group metrics)
    items: Items | None = None  # how it decomposes (None: from ``ref``, a mean or share)
    counted: str = "items"  # what ``n`` counts
    constant: str | None = None  # the one answer the model gives on this side's items
    sums: dict[Hashable, tuple[float, float]] = field(default_factory=dict, repr=False)

    def per_item(self) -> bool:
        """Whether the value is a mean of one 0/1 (or numeric) value per record (pairable)."""
        return self.ref.stat in ("mean", "share")

    def flags(self) -> list[str]:
        """Why this side says little: constant predictions, or too few items."""
        out = []
        if self.constant is not None:
            out.append(f"one answer ({self.constant})")
        if self.n < MIN_SIDE_N:
            out.append(f"n < {MIN_SIDE_N}")
        return out


@dataclass
class Phenomenon:
    benchmark: str
    name: str  # "standard vs local negation"
    condition: Condition
    reference: Condition | None = None
    note: str = ""
    diff: Difference | None = None  # the paired difference over clusters, in points

    @property
    def delta(self) -> float | None:
        if self.reference is None:
            return None
        d = self.condition.value - self.reference.value
        return None if math.isnan(d) else d

    @property
    def ci(self) -> tuple[float, float] | None:
        """The 95 % interval of Δ (points), or None (see :meth:`ci_note`)."""
        return self.diff.ci if self.diff is not None else None

    def ci_note(self) -> str:
        if self.reference is None or self.delta is None:
            return ""
        if self.diff is None:
            return "no interval: the value does not split over the items"
        return self.diff.why

    def flags(self) -> list[str]:
        """Each flagged side, said: ``both sides: one answer ('A')``, ``reference: n < 20``."""
        a = self.condition.flags()
        b = self.reference.flags() if self.reference is not None else []
        if self.reference is None:
            return a
        both = [f for f in a if f in b]
        return (
            [f"both sides: {f}" for f in both]
            + [f"condition: {f}" for f in a if f not in both]
            + [f"reference: {f}" for f in b if f not in both]
        )

    @property
    def drawn(self) -> bool:
        """Whether the figure draws this contrast (both sides unflagged)."""
        return self.reference is not None and self.delta is not None and not self.flags()

    def to_dict(self) -> dict:
        def cond(c: Condition | None) -> dict | None:
            if c is None:
                return None
            return {
                "label": c.label,
                "value": None if math.isnan(c.value) else c.value,
                "sd": c.sd,
                "n": c.n,
                "counted": c.counted,
                "constant_answer": c.constant,
                "flags": c.flags(),
                "ref": c.ref.to_dict(),
            }

        d = self.diff
        return {
            "benchmark": self.benchmark,
            "phenomenon": self.name,
            "condition": cond(self.condition),
            "reference": cond(self.reference),
            "delta": self.delta,
            "ci95": list(self.ci) if self.ci else None,
            "ci_note": self.ci_note() or None,
            "clusters": d.clusters if d else None,
            "paired_clusters": d.paired if d else None,
            "flags": self.flags(),
            "drawn": self.drawn,
            "note": self.note,
        }


# -- definitions -----------------------------------------------------------------------------------
Spec = tuple[str, str, dict, dict | None, str | None]  # (label, stat, where, hit, field)


def _ref(
    run: Run,
    units: list[UnitResult],
    stat: str,
    where: dict,
    hit: dict | None,
    field: str | None,
    replicate: str = "unit",
) -> Ref:
    return Ref(run.index, [u.name for u in units], stat, field, dict(where), hit, 100.0, replicate)


def _field(run: Run, units: list[UnitResult]) -> str:
    u = units[0]
    recs = run.samples(u.name)
    return primary_metric(u.task, u.mode, u.metrics, recs[0] if recs else None) or "acc"


def _generated(u: UnitResult) -> bool:
    """Whether the unit's answers are generated text (an answer may then name no option)."""
    return REGISTRY.task(u.task).mode(u.mode).formulation.kind == "generate"


def _condition(run: Run, units: list[UnitResult], side: Side, replicate: str) -> Condition:
    field = side.field
    if field is None and side.stat == "mean":
        field = _field(run, units)
    return Condition(
        side.label,
        _ref(
            run,
            units,
            side.stat,
            dict(side.where),
            None if side.hit is None else dict(side.hit),
            field,
            replicate,
        ),
        items=side.items,
        counted=side.counted,
    )


def _rows(run: Run, units: list[UnitResult], bench: str, pooled: bool) -> list[Phenomenon]:
    """The benchmark's declared phenomena (:mod:`negbench.scoring.phenomena`) on these units."""
    replicate = "task" if pooled else "unit"
    generated = any(_generated(u) for u in units)

    def units_for(side: Side) -> list[UnitResult]:
        return headline_units(run, [side.task], False) if side.task else units

    rows = []
    for spec in REGISTRY.get("phenomena", bench) or ():
        if spec.generated_only and not generated:
            continue
        cu = units_for(spec.condition)
        if not cu:
            continue
        reference, note = None, spec.note
        if spec.reference is not None:
            ru = units_for(spec.reference)
            if ru:
                reference = _condition(run, ru, spec.reference, replicate)
            else:
                note = spec.missing_reference_note or note
        rows.append(
            Phenomenon(
                bench, spec.name, _condition(run, cu, spec.condition, replicate), reference, note
            )
        )
    return rows


def headline_units(run: Run, tasks: list[str], pooled: bool) -> list[UnitResult]:
    """The units a benchmark's phenomena are computed on: the first task (all, when pooled), its
    first mode, its fewest shots, every seed."""
    us = [u for u in run.units.values() if u.task in (tasks if pooled else tasks[:1])]
    if not us:
        return []
    mode = us[0].mode
    us = [u for u in us if u.mode == mode]
    k = min(u.shots for u in us)
    return [u for u in us if u.shots == k]


def phenomena(run: Run, bench: str, tasks: list[str], pooled: bool = False) -> list[Phenomenon]:
    """The phenomena of one benchmark of a profile (``tasks``: its finished part's tasks), with
    their values computed from the records."""
    units = headline_units(run, tasks, pooled)
    if not units:
        return []
    rows = _rows(run, units, bench, pooled)
    for p in rows:
        for c in (p.condition, p.reference):
            if c is not None:
                evaluate(run, c)
        contrast(p)
    return [p for p in rows if not math.isnan(p.condition.value) or p.condition.n]


#: Largest gap (points) between a shown Δ and the same Δ recomputed from the clusters for which
#: the interval is still the shown Δ's (the metric may leave items out that the split keeps).
AGREE_POINTS = 0.5


def contrast(p: Phenomenon) -> Phenomenon:
    """Fill in the contrast's paired difference over the clusters both sides were split into."""
    c, r = p.condition, p.reference
    if r is None or p.delta is None or not c.sums or not r.sums:
        return p
    keys = list(dict.fromkeys([*c.sums, *r.sums]))
    zero = (0.0, 0.0)
    a = [c.sums.get(k, zero) for k in keys]
    b = [r.sums.get(k, zero) for k in keys]
    d = paired_difference(
        [100 * x for x, _ in a], [n for _, n in a], [100 * x for x, _ in b], [n for _, n in b]
    )
    if d is not None and abs(d.delta - p.delta) > AGREE_POINTS:
        d = None  # the split does not reproduce the metric: no interval rather than a wrong one
    if d is not None and d.ci is not None:  # a difference of two percentages
        d = replace(d, ci=(max(-100.0, d.ci[0]), min(100.0, d.ci[1])))
    p.diff = d
    return p


def _cluster_key(run: Run, u: UnitResult, rec: dict, view: dict) -> Hashable:
    """The benchmark's unit a record belongs to (a block, a contrast group, a group of minimal
    pairs), else the item; the same document under several seeds is one cluster."""
    from negbench.errors import NegbenchError

    meta = rec.get("meta") or {}
    declared = REGISTRY.get("profile", view.get("benchmark", ""))
    extra = declared.cluster_fields if declared is not None else ()
    if extra and all(f in meta for f in extra):
        return ("unit", tuple(meta[f] for f in extra))
    try:
        st = REGISTRY.task(u.task).structure
    except NegbenchError:
        st = None
    k = st.unit_key(meta) if st is not None else None
    return ("unit", k) if k is not None else ("item", view["id"])


def _value(view: dict, rec: dict, items: Items) -> float | None:
    from negbench.scoring.runs import matches

    if items.hit is not None:
        return 1.0 if matches(view, items.hit) else 0.0
    if items.field is not None:
        v = rec.get(items.field)
        if not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v)):
            return None
        return float(v)
    c = view.get("correct")
    return None if c is None else float(bool(c))


def _split(run: Run, c: Condition) -> None:
    """``c.sums`` (per cluster: Σ value, count), ``c.n`` and whether its answers are constant."""
    from negbench.evaluation.run_warnings import CONSTANT_SHARE, prediction, shown_answer
    from negbench.scoring.runs import matches, sample_view

    items = c.items or Items(
        "item",
        c.ref.where,
        c.ref.field if c.ref.stat == "mean" else None,
        c.ref.hit or {} if c.ref.stat == "share" else None,
    )
    sums: dict[Hashable, list[float]] = {}
    preds: Counter = Counter()
    choices = None
    for name in c.ref.units:
        u = run.units[name]
        recs = run.samples(name)
        if items.kind in ("treatment", "control"):
            choices = _split_pairs(run, u, recs, items, sums, preds) or choices
            continue
        groups: dict[Hashable, list[float]] = {}
        for i, r in enumerate(recs):
            view = sample_view(run, u, r, i)
            if not matches(view, items.where):
                continue
            pr, _, ok = prediction(r)
            if ok:
                preds[_hashable(pr)] += 1
                choices = choices or r.get("choices")
            v = _value(view, r, items)
            if v is None:
                continue
            k = _cluster_key(run, u, r, view)
            if items.kind == "all":
                groups.setdefault(k, []).append(v)
            else:
                s = sums.setdefault(k, [0.0, 0.0])
                s[0] += v
                s[1] += 1
        for k, vs in groups.items():
            s = sums.setdefault(k, [0.0, 0.0])
            s[0] += float(all(x >= 1 for x in vs))
            s[1] += 1
    c.sums = {k: (s[0], s[1]) for k, s in sums.items()}
    if c.items is not None:
        c.n = int(sum(s[1] for s in sums.values()) / max(1, _replicates(run, c)))
    answered = sum(preds.values())
    if answered:
        top, cnt = preds.most_common(1)[0]
        if cnt / answered >= CONSTANT_SHARE:
            c.constant = shown_answer(top, choices)


def _replicates(run: Run, c: Condition) -> int:
    """How many seeds (or other replicates) of the same items the condition's units hold."""
    seeds = {run.units[n].seed for n in c.ref.units}
    tasks = {run.units[n].task for n in c.ref.units}
    return max(1, len(c.ref.units) // max(1, len(tasks))) if len(seeds) > 1 else 1


def _hashable(x: object) -> Hashable:
    return x if isinstance(x, Hashable) else repr(x)


def _split_pairs(run, u, recs, items: Items, sums, preds) -> list | None:
    from negbench.tasks.common.minimal_pairs import (
        pair_correct,
        correctness_key,
        derive_pairs,
        pair_sets,
    )
    from negbench.evaluation.run_warnings import prediction

    recs = list(recs)
    k = correctness_key(recs)
    choices = None
    for p in pair_sets(derive_pairs([r["meta"] for r in recs]))[items.pair_set]:
        i = p.treatment if items.kind == "treatment" else p.control
        r = recs[i]
        pr, _, ok = prediction(r)
        if ok:
            preds[_hashable(pr)] += 1
            choices = choices or r.get("choices")
        g = ("unit", str(recs[p.treatment]["meta"]["group"]))
        s = sums.setdefault(g, [0.0, 0.0])
        s[0] += pair_correct(r, k)
        s[1] += 1
    return choices


def evaluate(run: Run, c: Condition, cache: dict | None = None) -> Condition:
    """Fill in a condition's value (percent), SD over replicates, population size, its split
    over clusters and whether its answers are constant."""
    from negbench.scoring.runs import matches, sample_view

    cache = {} if cache is None else cache
    c.value, c.sd = resolve_ref(run, c.ref, cache)
    n = 0
    for name in c.ref.units:
        u = run.units[name]
        n += sum(
            1
            for i, r in enumerate(run.samples(name))
            if matches(sample_view(run, u, r, i), c.ref.where)
        )
    c.n = n
    _split(run, c)
    return c


def paired_items(a: Run, b: Run, ref: Ref) -> tuple[list[float], list[float], list[str]]:
    """The per-item values of a per-item condition in two runs, paired by (unit, doc id) — the
    input of a McNemar test and a paired bootstrap."""
    from negbench.scoring.runs import matches, sample_view

    def values(run: Run) -> dict[tuple[str, str], float]:
        out = {}
        for name in ref.units:
            if name not in run.units:
                continue
            u = run.units[name]
            for i, r in enumerate(run.samples(name)):
                v = sample_view(run, u, r, i)
                if not matches(v, ref.where):
                    continue
                if ref.stat == "share":
                    out[(name, v["id"])] = 1.0 if matches(v, ref.hit) else 0.0
                elif r.get(ref.field) is not None:
                    out[(name, v["id"])] = float(r[ref.field])
        return out

    va, vb = values(a), values(b)
    keys = [k for k in va if k in vb]
    return [va[k] for k in keys], [vb[k] for k in keys], [k[1] for k in keys]
