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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from negbench.scoring.phenomena import Side
from negbench.scoring.registry import REGISTRY
from negbench.scoring.runs import Run, UnitResult, primary_metric
from negbench.scoring.tables import Ref, resolve_ref


@dataclass
class Condition:
    label: str
    ref: Ref
    value: float = float("nan")  # in percent (or points)
    sd: float | None = None  # over seeds / pooled tasks
    n: int = 0  # records in the condition's population (per unit, summed)

    def per_item(self) -> bool:
        """Whether the value is a mean of one 0/1 (or numeric) value per record (pairable)."""
        return self.ref.stat in ("mean", "share")


@dataclass
class Phenomenon:
    benchmark: str
    name: str  # "standard vs local negation"
    condition: Condition
    reference: Condition | None = None
    note: str = ""

    @property
    def delta(self) -> float | None:
        if self.reference is None:
            return None
        d = self.condition.value - self.reference.value
        return None if math.isnan(d) else d

    def to_dict(self) -> dict:
        def cond(c: Condition | None) -> dict | None:
            if c is None:
                return None
            return {
                "label": c.label,
                "value": None if math.isnan(c.value) else c.value,
                "sd": c.sd,
                "n": c.n,
                "ref": c.ref.to_dict(),
            }

        return {
            "benchmark": self.benchmark,
            "phenomenon": self.name,
            "condition": cond(self.condition),
            "reference": cond(self.reference),
            "delta": self.delta,
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
    return [p for p in rows if not math.isnan(p.condition.value) or p.condition.n]


def evaluate(run: Run, c: Condition, cache: dict | None = None) -> Condition:
    """Fill in a condition's value (percent), SD over replicates, and population size."""
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
    return c


def paired_items(a: Run, b: Run, ref: Ref) -> tuple[list[float], list[float], list[str]]:
    """The per-item values of a per-item condition in two runs, paired by (unit, doc id), and
    each item's benchmark unit (contrast group, block, minimal-pair group; else its document:
    :func:`negbench.report.compare.unit_key`) — the input of the paired test by units."""
    from negbench.report.compare import unit_key
    from negbench.scoring.runs import matches, sample_view

    units: dict[tuple[str, str], str] = {}

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
                units.setdefault((name, v["id"]), unit_key(u.task, r, str(v["id"])))
                if ref.stat == "share":
                    out[(name, v["id"])] = 1.0 if matches(v, ref.hit) else 0.0
                elif r.get(ref.field) is not None:
                    out[(name, v["id"])] = float(r[ref.field])
        return out

    va, vb = values(a), values(b)
    keys = [k for k in va if k in vb]
    return [va[k] for k in keys], [vb[k] for k in keys], [units[k] for k in keys]
