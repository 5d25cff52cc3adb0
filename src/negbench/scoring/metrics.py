"""Metrics are pure functions of per-sample records, so any of them can be recomputed from a
saved run (``samples/*.jsonl``) without the model."""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Any, Iterable, Sequence, cast

if TYPE_CHECKING:
    from negbench.scoring.task import Task


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def stderr(xs: Sequence[float]) -> float:
    """Standard error of the mean (sample SD / sqrt(n)), as lm-eval reports it."""
    n = len(xs)
    if n < 2:
        return float("nan")
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1) / n)


def sd(xs: Sequence[float]) -> float:
    """Sample standard deviation (n − 1), used for spread over seeds."""
    n = len(xs)
    if n < 2:
        return 0.0 if n == 1 else float("nan")
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))


def summarize(records: Iterable[dict], metric_names: Iterable[str]) -> dict:
    """Mean and standard error of each per-sample metric field, in one pass over ``records`` (a
    list or a stream of a saved unit's samples); the values are kept as 8-byte floats, summed in
    record order as a list would be."""
    names = list(metric_names)
    vals = {name: array("d") for name in names}
    n = 0
    for r in records:
        n += 1
        for name in names:
            v = r.get(name)
            if v is not None:
                vals[name].append(float(v))
    out: dict = {"n": n}
    for name in names:
        out[name] = mean(vals[name])
        out[name + "_stderr"] = stderr(vals[name])
    return out


def by_group(records: list[dict], key: str, metric: str) -> dict[str, dict]:
    """A metric per value of ``meta[key]`` (e.g. accuracy per negation type), each with its n
    and, for a 0/1 metric, the Wilson 95 % interval of the cell (``{metric}_ci95``; None under
    30 items, :func:`negbench.scoring.intervals.share_interval`) — so every breakdown a run
    prints says how far its cells can be trusted."""
    from negbench.scoring.intervals import share_interval

    groups: dict[str, list[float]] = {}
    for r in records:
        g = r.get("meta", {}).get(key)
        groups.setdefault(str(g), []).append(float(r[metric]))
    out: dict[str, dict] = {}
    for g, v in sorted(groups.items()):
        cell: dict[str, Any] = {"n": len(v), metric: mean(v)}
        if v and all(x in (0.0, 1.0) for x in v):
            ci = share_interval(sum(v), len(v)).ci
            cell[f"{metric}_ci95"] = list(ci) if ci else None
        out[g] = cell
    return out


def over_seeds(values: Sequence[float]) -> dict:
    """Mean over few-shot seeds and their SD — None for one seed (one value has no spread; 0.0
    would say the seeds do not matter)."""
    from negbench.scoring.intervals import seed_sd

    return {
        "mean": mean(values),
        "sd": seed_sd(values),
        "n_seeds": len(values),
        "values": list(values),
    }


def unit_metrics(task: Task, mode: str, records: Iterable[dict]) -> dict:
    """All metrics of one unit: pure functions of its per-sample records.  ``records``: a list,
    or a re-iterable stream of a saved unit's samples (:meth:`RunStore.samples`), read once per
    metric family; tasks whose ``extra_metrics`` need a list get one."""
    metrics = summarize(records, task.mode(mode).formulation.metrics)
    if task.extra_metrics:
        if not task.stream_metrics and not isinstance(records, list):
            records = list(records)
        # a list unless the task reads a stream (stream_metrics)
        metrics.update(task.extra_metrics(mode, cast(list[dict], records)))
    return metrics


def share_cell(p: Any, n: Any) -> str:
    """A breakdown cell of a 0/1 score as the task tables print it: ``62.5 [41.0–80.2] (40)`` —
    percent, its Wilson 95 % interval over the cell's n items, n; ``62.5 (24, no CI)`` under 30
    items (:func:`negbench.scoring.intervals.rate_text`); ``–`` when undefined."""
    from negbench.scoring.intervals import rate_text, share_interval

    if not isinstance(p, (int, float)) or isinstance(p, bool) or math.isnan(p):
        return "–" + (f" ({n})" if isinstance(n, int) else "")
    if not isinstance(n, int) or n <= 0:
        return f"{100 * p:.1f}"
    return rate_text(100 * p, 1, share_interval(round(p * n), n), n, 100.0)
