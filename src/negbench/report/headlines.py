"""What every report says about each unit before any paper-shaped table: the headline metric of
the benchmark's paper with its 95 % interval, n of the full set and whether it is a subset (the
"Headline" table), a line under each paper table with the same for the units it shows, and the
warnings the runs saved (a banner)."""

from __future__ import annotations

import math
from typing import Any, Sequence

from negbench.scoring.runs import Run
from negbench.scoring.tables import Cell, Column, Row, Table

#: Lines of sizes under one table before the rest are left to the Headline table.
MAX_NOTE_LINES = 8


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(float(v)) else float(v)


def _ci(ci: Any, short: bool = False) -> str:
    if not ci or any(_num(x) is None for x in ci):
        return "–"
    return f"{ci[0]:.3f}–{ci[1]:.3f}" if short else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _group(run: Run, name: str) -> tuple[dict, dict]:
    """A group's (headline, subset) from results.json (older runs: the first metric, no CI)."""
    g = (run.results.get("groups") or {}).get(name) or {}
    units = g.get("units") or []
    first = (run.results.get("units") or {}).get(units[0], {}) if units else {}
    head = g.get("headline") or {}
    if not head:
        metrics = first.get("metrics") or {}
        metric = next((m for m in ("exact_match", "acc", "accuracy") if m in metrics), "")
        head = {
            "metric": metric,
            "mean": (g.get("metrics") or {}).get(metric, {}).get("mean"),
            "ci95": None,
            "n": metrics.get("n"),
            "seeds": len(units),
        }
    subset = g.get("subset") or first.get("subset") or {}
    if not subset:
        n = int((first.get("metrics") or {}).get("n") or 0)
        subset = {"n": n, "full": None, "subset": None, "rule": "not recorded (an older run)"}
    return head, subset


def headline_table(runs: Sequence[Run]) -> Table:
    """One row per run and group (task.mode.shots), seeds; n of the full set, subset or not;
    the headline metric, its value (mean over seeds, ± SD) and 95 % interval."""
    cols = [Column(("n of full",)), Column(("metric",)), Column(("value",)), Column(("95 % CI",))]
    t = Table(
        "headline",
        "Headline metric per unit: n, subset, 95 % CI",
        "all",
        ["run", "task.mode.shots"],
        cols,
        caption="Each benchmark's paper metric for the task and mode (mean ± SD over "
        "seeds). * a subset (its rule below). 95 % CI: Wilson, with the effective "
        "n of the benchmark's units where items come in units (contrast groups, "
        "blocks, minimal pairs; a document under several seeds); a cluster "
        "bootstrap for AccChg (10,000 resamples, seed 0); – where undefined.",
        paper="",
    )
    rules: dict[str, str] = {}
    for r in runs:
        for name, g in (r.results.get("groups") or {}).items():
            head, sub = _group(r, name)
            mean = _num(head.get("mean"))
            sd = _num(head.get("sd"))
            seeds = int(head.get("seeds") or len(g.get("units") or []) or 1)
            t.rows.append(
                Row(
                    [r.label, name + (f" ({seeds} seeds)" if seeds > 1 else "")],
                    [
                        Cell(
                            f"{int(sub.get('n') or 0):,} of "
                            + (f"{int(sub['full']):,}" if sub.get("full") is not None else "?")
                            + (" *" if sub.get("subset") else "")
                        ),
                        Cell(str(head.get("metric") or "")),
                        Cell(mean, sd=sd, n=seeds if sd is not None else 1, digits=4),
                        Cell(_ci(head.get("ci95"), short=True)),
                    ],
                )
            )
            if sub.get("subset"):
                rules.setdefault(f"{r.label}: {g.get('task')}", str(sub.get("rule") or ""))
    t.notes = [f"* {k}: {v}" for k, v in rules.items()]
    return t


def size_note(table: Table, runs: Sequence[Run]) -> str | None:
    """The line under a paper table: n of the full set, subset or not, and the headline with
    its interval, for the groups its cells come from."""
    by_index = {r.index: r for r in runs}
    seen: dict[tuple[int, str], None] = {}
    for row in table.rows:
        for c in row.cells:
            if c is None or c.ref is None or c.ref.run not in by_index:
                continue
            run = by_index[c.ref.run]
            for u in c.ref.units:
                unit = run.units.get(u)
                if unit is not None:
                    seen.setdefault((run.index, unit.group), None)
    if not seen:
        return None
    parts = []
    for ri, group in list(seen)[:MAX_NOTE_LINES]:
        run = by_index[ri]
        head, sub = _group(run, group)
        mean = _num(head.get("mean"))
        full = f" of {int(sub['full']):,}" if sub.get("full") is not None else ""
        tag = " (subset)" if sub.get("subset") else ""
        who = f"{run.label}: {group}" if len(runs) > 1 else group
        parts.append(
            f"{who} n = {int(sub.get('n') or 0):,}{full}{tag}, {head.get('metric')} "
            + ("–" if mean is None else f"{mean:.3f}")
            + f" {_ci(head.get('ci95'))}"
        )
    more = len(seen) - MAX_NOTE_LINES
    text = "n and 95 % CI: " + "; ".join(parts)
    if more > 0:
        text += f"; {more} more in the Headline table"
    return text


def run_warnings(runs: Sequence[Run]) -> list[dict]:
    """Every warning the runs saved, with the run's label ({run, unit, kind, message, fix})."""
    from negbench.evaluation.run_warnings import RunWarning

    out = []
    for r in runs:
        for w in r.results.get("warnings") or []:
            x = RunWarning.of(w)
            out.append({"run": r.label, **x.to_dict()})
    return out


def warning_text(w: dict) -> str:
    unit = f"{w['unit']}: " if w.get("unit") else ""
    return f"[{w['kind']}] {w['run']}: {unit}{w['message']}" + (
        f" — {w['fix']}" if w.get("fix") else ""
    )
