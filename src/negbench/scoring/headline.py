"""The headline of a unit and of a group: the paper's metric for the task and mode, its 95 %
confidence interval and n — what the console prints per unit, what reports and profiles show.

A metric's interval comes from its *parts*: per cluster (a unit of the benchmark's
:class:`~negbench.scoring.task.Structure`, else one document) the sum and count behind it, so the
metric is Σ sums / Σ counts.  For the mean of a per-sample field (``acc``, ``exact_match``, This
is not a Dataset's ``acc``) the parts are read from the records; a task whose headline is defined
otherwise (CONDAQA's ``accuracy`` from its own answer reading, AccChg over minimal pairs)
supplies them (``Task.headline_parts``).  Parts of several seeds add up per cluster, so a
group's interval resamples documents with all their seeds (:mod:`negbench.scoring.intervals`).
"""

from __future__ import annotations

import math
from typing import Any, Hashable, Iterable

from negbench.scoring.intervals import Interval, interval_of
from negbench.scoring.metrics import sd

Parts = dict[Hashable, tuple[float, float]]

#: Per-sample 0/1 fields whose mean gets an interval wherever a unit has them.
PROPORTIONS = ("acc", "acc_norm", "exact_match")


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return None if math.isnan(v) else v


def field_parts(task, records: Iterable[dict], fields: Iterable[str]) -> dict[str, Parts]:
    """Parts of the mean of each per-sample ``field`` (records without it left out), clustered
    by the task's units (else by document), in one pass over ``records``."""
    names = list(fields)
    out: dict[str, Parts] = {f: {} for f in names}
    st = task.structure
    for r in records:
        key = st.unit_key(r.get("meta") or {}, default=("doc", str(r.get("doc_id"))))
        for f in names:
            v = _num(r.get(f))
            if v is None:
                continue
            s, c = out[f].get(key, (0.0, 0.0))
            out[f][key] = (s + v, c + 1.0)
    return {f: p for f, p in out.items() if p}


def headline_parts(task, mode: str, records: Iterable[dict]) -> Parts | None:
    """The parts of a unit's headline metric (None when the records do not define it)."""
    if task.headline_parts is not None:
        if not isinstance(records, list):
            records = list(records)
        return task.headline_parts(mode, records) or None
    return field_parts(task, records, [task.headline(mode)]).get(task.headline(mode))


def interval_from(parts: Parts | None, proportion: bool = True, unit: str = "units") -> Interval:
    """The 95 % interval of Σ sums / Σ counts over ``parts``, or why it is withheld
    (:func:`negbench.scoring.intervals.interval_of`)."""
    if not parts:
        return Interval(None, "none", 0, 0.0, "no item to count")
    sums = [s for s, _ in parts.values()]
    counts = [c for _, c in parts.values()]
    return interval_of(sums, counts, proportion, unit)


def ci_of(parts: Parts | None, proportion: bool = True) -> list[float] | None:
    iv = interval_from(parts, proportion)
    return [iv.ci[0], iv.ci[1]] if iv.ci else None


def withheld_note(metric: str, iv: Interval) -> dict | None:
    """What ``headline["ci_withheld"]`` holds when a headline's interval is withheld: why, the
    units it rests on and how many it needs (None when the interval is shown or nothing was
    counted)."""
    if iv.ci is not None or not iv.units:
        return None
    return {
        "metric": metric,
        "reason": iv.reason,
        "units": iv.units,
        "units_needed": iv.units_needed,
        "method": iv.method,
    }


def add_intervals(
    task, mode: str, records: Iterable[dict], metrics: dict
) -> tuple[dict, Parts | None]:
    """Add ``{m}_ci95`` to ``metrics`` for the headline and the per-sample proportions; returns
    the unit's headline (``units[u]["headline"]``: metric, value, ci95, n) and its parts (for
    the group)."""
    h = task.headline(mode)
    fields = [f for f in PROPORTIONS if f in metrics]
    if task.headline_parts is None and h not in fields:
        fields.append(h)
    got = field_parts(task, records, fields)
    for f in fields:
        if f != h and f in got:
            metrics[f"{f}_ci95"] = ci_of(got[f])
    parts = got.get(h) if task.headline_parts is None else headline_parts(task, mode, records)
    value = _num(metrics.get(h))
    if value is None and parts and h not in metrics:
        value = sum(s for s, _ in parts.values()) / sum(c for _, c in parts.values())
    unit = task.structure.units_name if task.structure.unit else "items"
    iv = interval_from(parts, task.headline_proportion, unit) if value is not None else None
    ci = [iv.ci[0], iv.ci[1]] if iv and iv.ci else None
    metrics[f"{h}_ci95"] = ci
    n = int(round(sum(c for _, c in parts.values()))) if parts else int(metrics.get("n") or 0)
    head: dict[str, Any] = {"metric": h, "value": value, "ci95": ci, "n": n}
    note = withheld_note(h, iv) if iv else None
    if note:
        head["ci_withheld"] = note
    return head, parts


def group_headline(task, mode: str, units: list[dict], parts: list[Parts | None]) -> dict:
    """``groups[g]["headline"]``: the mean over seeds, their SD (None for one), the interval of
    the seeds' pooled parts (documents resampled with all their seeds), n per seed."""
    heads = [u.get("headline") or {} for u in units]
    h = task.headline(mode) if task is not None else heads[0].get("metric")
    vals = [v for v in (_num(x.get("value")) for x in heads) if v is not None]
    mean = sum(vals) / len(vals) if len(vals) == len(heads) and vals else None
    if len(units) == 1:
        ci = heads[0].get("ci95")
    elif mean is not None and all(p for p in parts):
        pooled: Parts = {}
        for p in parts:
            for k, (s, c) in (p or {}).items():
                s0, c0 = pooled.get(k, (0.0, 0.0))
                pooled[k] = (s0 + s, c0 + c)
        ci = ci_of(pooled, task.headline_proportion if task is not None else True)
    else:
        ci = None
    return {
        "metric": h,
        "mean": mean,
        "sd": sd(vals) if len(vals) > 1 else None,
        "ci95": ci,
        "n": heads[0].get("n", 0) if heads else 0,
        "seeds": len(units),
    }


def _v(x: Any, digits: int = 3) -> str:
    v = _num(x)
    return "undefined" if v is None else f"{v:.{digits}f}"


def unit_note(name: str, entry: dict) -> str:
    """One Markdown line under a unit's tables: its headline with the 95 % interval, n of the
    full set, and the subset's rule — so every table says how far to trust it."""
    h = entry.get("headline") or {}
    sub = entry.get("subset") or {}
    if not h:
        return ""
    ci = h.get("ci95")
    wh = h.get("ci_withheld") or {}
    ci_text = (
        f" (95 % CI {_v(ci[0])}–{_v(ci[1])})"
        if ci
        else f" (95 % CI withheld: {wh.get('units')} units, {wh.get('units_needed')} needed)"
        if wh.get("units_needed")
        else " (95 % CI –)"
    )
    n = int(sub.get("n", h.get("n") or 0))
    full = int(sub.get("full", n))
    size = f"n = {n:,} of {full:,} records"
    if sub.get("subset"):
        size += f" — subset: {sub.get('rule', '')}"
    if h.get("n") and int(h["n"]) != n:
        size += f"; the headline is over {int(h['n']):,}"
    return f"- {name}: {h.get('metric')} {_v(h.get('value'))}{ci_text}; {size}"
