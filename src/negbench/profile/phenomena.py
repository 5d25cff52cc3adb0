"""The negation phenomena a profile shows across benchmarks, each as a contrast of two conditions
computed from the per-sample records (so each number links to the items behind it):

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

A condition is a :class:`~negbench.report.tables.Ref`: the share / mean over records matching a
filter (paired item by item when two profiles are compared), or a task metric recomputed from
the unit's records (group metrics: consistency, coherence, AccChg).  Phenomena are computed on
each benchmark's headline units: the first task (all tasks of a pooled part), the first mode,
the fewest shots, every seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from negbench.report.load import Run, UnitResult, primary_metric
from negbench.report.tables import Ref, resolve_ref


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
    from negbench.tasks import get_task

    return get_task(u.task).mode(u.mode).formulation.kind == "generate"


def _choice_types(run, units, bench) -> list[Phenomenon]:
    """Standard vs local negation: the share of items whose picked option is of each type."""
    name = "standard vs local negation"
    std = Condition(
        "standard negation picked", _ref(run, units, "share", {}, {"error_type": None}, None)
    )
    out = [
        Phenomenon(
            bench,
            name,
            Condition(
                "local negation picked",
                _ref(run, units, "share", {}, {"error_type": "local"}, None),
            ),
            std,
            "share of all items; the paper's error analysis counts the same picks",
        )
    ]
    kinds = [("contradiction", "contradiction picked"), ("paraphrase", "paraphrase picked")]
    if any(_generated(u) for u in units):
        kinds.append(("format", "no option named"))
    for kind, label in kinds:
        out.append(
            Phenomenon(
                bench,
                "other wrong picks",
                Condition(label, _ref(run, units, "share", {}, {"error_type": kind}, None)),
            )
        )
    from negbench.tasks.registry import REGISTRY

    key = "choice2_type" if bench == "nubench" else "local_type"
    for sub, title in REGISTRY.get("subtype_labels", bench) or ():
        where = {f"meta.{key}": sub}
        out.append(
            Phenomenon(
                bench,
                "local negation by clause",
                Condition(
                    f"{title}: local picked",
                    _ref(run, units, "share", where, {"error_type": "local"}, None),
                ),
                Condition(
                    "standard picked", _ref(run, units, "share", where, {"error_type": None}, None)
                ),
            )
        )
    return out


def _diagnostics(run, units_of, bench) -> list[Phenomenon]:
    out = []
    for neg, pos, what in (
        ("kmmlu-neg", "kmmlu-pos", "KMMLU"),
        ("kobest-boolq-neg", "kobest-boolq", "KoBEST BoolQ"),
    ):
        a, b = units_of(neg), units_of(pos)
        if not a:
            continue
        fa = _field(run, a)
        cond = Condition(f"{what}, negated", _ref(run, a, "mean", {}, None, fa))
        ref = (
            Condition("affirmative", _ref(run, b, "mean", {}, None, _field(run, b))) if b else None
        )
        out.append(
            Phenomenon(
                bench,
                "negated vs affirmative questions",
                cond,
                ref,
                "" if b else f"{pos} not run (no data)",
            )
        )
    return out


def _notadataset(run, units, bench) -> list[Phenomenon]:
    f = _field(run, units)
    neg = {"not": "affirmation"}
    out = []
    for dist, label in ((False, "w/o distractor"), (True, "with distractor")):
        out.append(
            Phenomenon(
                bench,
                "negated vs affirmative sentences",
                Condition(
                    f"negated, {label}",
                    _ref(
                        run,
                        units,
                        "mean",
                        {"meta.negation_type": neg, "meta.is_distractor": dist},
                        None,
                        f,
                    ),
                ),
                Condition(
                    "affirmative",
                    _ref(
                        run,
                        units,
                        "mean",
                        {"meta.negation_type": "affirmation", "meta.is_distractor": dist},
                        None,
                        f,
                    ),
                ),
            )
        )
    out.append(
        Phenomenon(
            bench,
            "with vs without distractors",
            Condition(
                "accuracy, with distractor",
                _ref(run, units, "mean", {"meta.is_distractor": True}, None, f),
            ),
            Condition(
                "w/o distractor", _ref(run, units, "mean", {"meta.is_distractor": False}, None, f)
            ),
        )
    )
    out.append(
        Phenomenon(
            bench,
            "with vs without distractors",
            Condition(
                "coherence, with distractor",
                _ref(
                    run,
                    units,
                    "metric",
                    {"meta.is_distractor": True},
                    None,
                    "coherence_w_distractor",
                ),
            ),
            Condition(
                "w/o distractor",
                _ref(
                    run,
                    units,
                    "metric",
                    {"meta.is_distractor": False},
                    None,
                    "coherence_wo_distractor",
                ),
            ),
            "coherence: every sentence of a block answered right (blocks the subset holds whole)",
        )
    )
    return out


def _scone(run, units, bench) -> list[Phenomenon]:
    from negbench.tasks.scone.tasks import CONDITIONS

    f = _field(run, units)
    base = Condition(
        "no negation", _ref(run, units, "mean", {"meta.split": "no_negation"}, None, f)
    )
    return [
        Phenomenon(
            bench,
            "negation scope",
            Condition(c.replace("_", " "), _ref(run, units, "mean", {"meta.split": c}, None, f)),
            base,
        )
        for c in CONDITIONS
        if c != "no_negation"
    ]


def _condaqa(run, units, bench, replicate) -> list[Phenomenon]:
    from negbench.tasks.condaqa.tasks import EDITS

    orig = Condition(
        "original passage",
        _ref(run, units, "metric", {"meta.PassageEditID": 0}, None, "acc_original", replicate),
    )
    out = [
        Phenomenon(
            bench,
            "edited vs original passage",
            Condition(
                f"{EDITS[e]} edit",
                _ref(
                    run,
                    units,
                    "metric",
                    {"meta.PassageEditID": e},
                    None,
                    f"acc_{EDITS[e]}",
                    replicate,
                ),
            ),
            orig,
        )
        for e in (1, 2, 3)
    ]
    acc = Condition("accuracy", _ref(run, units, "metric", {}, None, "accuracy", replicate))
    out.append(
        Phenomenon(
            bench,
            "group consistency",
            Condition(
                "all four passages right",
                _ref(run, units, "metric", {}, None, "consistency", replicate),
            ),
            acc,
            "a question counts when its answers on the original and all three edits are right",
        )
    )
    for e in (1, 2, 3):
        out.append(
            Phenomenon(
                bench,
                "group consistency",
                Condition(
                    f"original and {EDITS[e]} right",
                    _ref(
                        run,
                        units,
                        "metric",
                        {"meta.PassageEditID": [0, e]},
                        None,
                        f"consistency_{EDITS[e]}",
                        replicate,
                    ),
                ),
            )
        )
    return out


def _pairs(run, units, bench) -> list[Phenomenon]:
    from negbench.tasks.common.minimal_pairs import PAPER_SETS, SET_TITLES

    out = []
    for s in PAPER_SETS:
        out.append(
            Phenomenon(
                bench,
                "minimal-pair accuracy change",
                Condition(
                    f"{SET_TITLES[s]}: Acc' (negation added)",
                    _ref(
                        run,
                        units,
                        "metric",
                        {"meta.type": {"not": "original"}},
                        None,
                        f"{s}.acc_prime",
                    ),
                ),
                Condition("Acc", _ref(run, units, "metric", {}, None, f"{s}.acc")),
                "Δ = AccChg (JSTS-Neg §4.2), in points",
            )
        )
    return out


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
    rows: list[Phenomenon]
    if bench in ("nubench", "konubench"):
        rows = _choice_types(run, units, bench)
    elif bench == "konubench-diagnostics":

        def units_of(t: str) -> list[UnitResult]:
            return headline_units(run, [t], False)

        rows = _diagnostics(run, units_of, bench)
    elif bench == "notadataset":
        rows = _notadataset(run, units, bench)
    elif bench == "scone-nli":
        rows = _scone(run, units, bench)
    elif bench == "condaqa":
        rows = _condaqa(run, units, bench, "task" if pooled else "unit")
    elif bench in ("jsts-neg", "jnli-neg"):
        rows = _pairs(run, units, bench)
    else:
        return []
    for p in rows:
        for c in (p.condition, p.reference):
            if c is not None:
                evaluate(run, c)
    return [p for p in rows if not math.isnan(p.condition.value) or p.condition.n]


def evaluate(run: Run, c: Condition, cache: dict | None = None) -> Condition:
    """Fill in a condition's value (percent), SD over replicates, and population size."""
    from negbench.report.load import matches, sample_view

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
    from negbench.report.load import matches, sample_view

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
