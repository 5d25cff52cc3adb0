"""A Markdown snippet for a model card: each benchmark's headline score with its confidence
interval, the number of items and the protocol, from a run's results.

A model card is read without the run folder next to it, so the snippet says everything a reader
needs to trust or reproduce a number: how many items, which mode and shots, whether a chat
template was used, whether the run was a subset (which, and how many of how many items), the
unit of every number (% for scores, points for a change such as AccChg), the warnings the runs
raised (a model answering one label, unreadable outputs …), and the negbench version, commit and
data fingerprints behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, TypeGuard

from negbench.errors import NegbenchError
from negbench.scoring.intervals import Z95, wilson
from negbench.scoring.task import parse_spec

#: Metric endings that are a difference of two accuracies (shown in points, signed, with no
#: Wilson interval: they are not proportions).
CHANGES = ("acc_chg",)


@dataclass(frozen=True)
class CardRow:
    """One line of the snippet: a task × mode × shots cell (a seed mean when several seeds)."""

    task: str
    mode: str
    shots: int
    metric: str
    value: float
    low: float | None
    high: float | None
    n: int
    seeds: tuple[int, ...]
    seed_sd: float | None
    chat: bool
    subset: bool
    subset_text: str = ""  # "60 of 2,000 items: a seeded sample of whole …" ("" for all)
    units: tuple[str, ...] = ()  # the run's units behind the row (their warnings are flagged)

    @property
    def points(self) -> bool:
        """Whether the value is a change between two accuracies (points), not a score (%)."""
        return self.metric.endswith(CHANGES)

    @property
    def unit(self) -> str:
        return "points" if self.points else "%"


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def interval(
    metrics: Mapping[str, Any], metric: str, value: float, proportion: bool = True
) -> tuple[float, float] | None:
    """95 % interval of a headline score when the run saved none (runs written before negbench
    saved headline intervals): Wilson over the items the metric counts
    (``n_scored`` where a task excludes items, else ``n``) for a proportion; else value ± z·stderr
    when the unit has a stderr; else None.  A change (AccChg) is no proportion: never Wilson."""
    n = metrics.get("n_scored", metrics.get("n"))
    if (
        proportion
        and not metric.endswith(CHANGES)
        and 0.0 <= value <= 1.0
        and isinstance(n, int)
        and n > 0
    ):
        return wilson(value * n, n)
    se = metrics.get(metric + "_stderr")
    if _finite(se):
        return value - Z95 * se, value + Z95 * se
    return None


def card_rows(results: Mapping[str, Any]) -> list[CardRow]:
    """One row per group of units (same task, mode, shots), in run order.  A seed mean gets the
    interval of its items (the seeds share them, so more seeds do not shrink the item-sampling
    error) and, beside it, the SD over seeds."""
    units = results["units"]
    datasets = results.get("datasets") or {}
    by_group: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, u in units.items():
        by_group.setdefault(u.get("group") or name, []).append((name, u))
    rows: list[CardRow] = []
    for members in by_group.values():
        u0 = members[0][1]
        task, mode, shots = u0["task"], u0["mode"], int(u0["shots"])
        try:
            from negbench.tasks import get_task

            t = get_task(task)
            metric, proportion = t.headline(mode), bool(t.headline_proportion)
        except NegbenchError:  # a task negbench cannot load any more
            metric = "exact_match" if "exact_match" in u0["metrics"] else "acc"
            proportion = True
        vals = [m["metrics"].get(metric) for _, m in members]
        if not vals or not all(_finite(v) for v in vals):
            continue
        value = sum(vals) / len(vals)
        head = ((results.get("groups") or {}).get(u0.get("group") or "") or {}).get(
            "headline"
        ) or {}
        if head.get("metric") == metric:  # the run's own interval, or none where it withheld
            saved = head.get("ci95")  # one (too few items or units: its warnings say why)
            ci = (
                (float(saved[0]), float(saved[1]))
                if saved and all(_finite(x) for x in saved)
                else None
            )
        else:  # a run saved before headline intervals were
            ci = interval(u0["metrics"], metric, value, proportion)
        low, high = ci if ci else (None, None)
        n = int(u0["metrics"].get("n", 0))
        seeds = tuple(int(m["seed"]) for _, m in members if m.get("seed") is not None)
        sd = None
        if len(vals) > 1:
            sd = math.sqrt(sum((v - value) ** 2 for v in vals) / (len(vals) - 1))
        split = next(
            (
                v
                for k, v in (datasets.get(task) or {}).items()
                if isinstance(v, dict)
                and v.get("evaluated") is not None
                and v.get("evaluated") != v.get("n")
            ),
            None,
        )
        sub = u0.get("subset") or {}
        subset_text = ""
        if sub.get("subset"):
            full = sub.get("full")
            count = f"{int(sub.get('n') or n):,}" + (f" of {int(full):,}" if full else "")
            rule = str(sub.get("rule") or "")
            # the rule usually says the counts itself ("…: 30 of 7,154 records")
            subset_text = (
                rule if count in rule else f"{count} items" + (f": {rule}" if rule else "")
            )
        rows.append(
            CardRow(
                task,
                mode,
                shots,
                metric,
                value,
                low,
                high,
                n,
                seeds,
                sd,
                bool(u0.get("chat")),
                split is not None or "sample" in parse_spec(task)[1] or bool(sub.get("subset")),
                subset_text,
                tuple(name for name, _ in members),
            )
        )
    return rows


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _value(x: float, points: bool) -> str:
    return f"{100 * x:+.1f}" if points else _pct(x)


def _warnings(results: Mapping[str, Any]) -> list[str]:
    """The runs' warnings as Markdown list items (``[kind] unit: message — fix``)."""
    from negbench.evaluation.run_warnings import RunWarning

    out = []
    for w in results.get("warnings") or []:
        x = RunWarning.of(w)
        unit = f"`{x.unit}`: " if x.unit else ""
        out.append(f"- **[{x.kind}]** {unit}{x.message}" + (f" — {x.fix}" if x.fix else ""))
    return out


def model_card_markdown(
    results: Mapping[str, Any], *, title: str = "Negation understanding"
) -> str:
    """The snippet (Markdown): a table of headline scores and a provenance line."""
    rows = card_rows(results)
    model = (results.get("model") or {}).get("spec") or (results.get("config") or {}).get(
        "model", ""
    )
    lines = [
        f"### {title} (negbench)",
        "",
        f"Model: `{model}`. Scores in % (accuracy and the like); a change between two "
        "conditions (AccChg: accuracy with the added negation − without it) in points, signed. "
        "The Unit column says which. 95 % confidence intervals as the run computed them, over "
        "the items (clustered by the benchmark's groups, blocks or pairs where it has them); "
        "– where the run withheld one because too few items or units were evaluated for an "
        "interval of measured coverage (its warning says how many are needed). "
        "Setting: the mode, shots, whether a chat template was used, and the "
        "items: all of the test set or a subset (how many, how chosen).",
        "",
        "| Benchmark | Mode | Shots | Metric | Score | Unit | 95 % CI | n | Setting |",
        "|---|---|---:|---|---:|---|---|---:|---|",
    ]
    from negbench.evaluation.run_warnings import RunWarning

    warned = {RunWarning.of(w).unit for w in results.get("warnings") or []}
    for r in rows:
        ci = (
            f"{_value(r.low, r.points)} to {_value(r.high, r.points)}"
            if r.low is not None and r.high is not None
            else "–"
        )
        proto = [f"{r.shots}-shot"]
        if r.seeds:
            proto.append(
                ("seeds " if len(r.seeds) > 1 else "seed ")
                + ", ".join(map(str, r.seeds))
                + (
                    f" (mean; SD over seeds {_pct(r.seed_sd)} points)"
                    if r.seed_sd is not None
                    else ""
                )
            )
        proto.append("chat template" if r.chat else "no chat template")
        if r.subset_text:
            proto.append(f"subset: {r.subset_text}")
        elif r.subset:
            proto.append("subset of the test set")
        else:
            proto.append("all items")
        flag = " ⚠" if any(u in warned for u in r.units) else ""
        lines.append(
            f"| {r.task} | {r.mode} | {r.shots} | {r.metric} | {_value(r.value, r.points)}{flag} "
            f"| {r.unit} | {ci} | {r.n} | {'; '.join(proto).replace('|', '/')} |"
        )
    warns = _warnings(results)
    if warns:
        lines += [
            "",
            f"**Warnings ({len(warns)})** — ⚠ above marks the rows they concern; such a score "
            "may measure the answer format or the label balance rather than negation:",
            "",
            *warns,
        ]
    prov = results.get("provenance") or {}
    git = (prov.get("git") or {}).get("commit")
    fp = []
    for task, d in (results.get("datasets") or {}).items():
        for split, v in d.items():
            if isinstance(v, dict) and v.get("sha256"):
                fp.append(f"{task}/{split} `{v['sha256'][:12]}`")
    lines += [
        "",
        f"negbench {results.get('negbench', '?')}"
        + (f" (commit `{git[:12]}`)" if git else "")
        + f", run finished {results.get('finished', '?')}"
        + (f"; data: {', '.join(fp)}" if fp else "")
        + ".",
    ]
    return "\n".join(lines) + "\n"
