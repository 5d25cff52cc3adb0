"""ScoNe report tables: accuracy per negation condition (ScoNe-NLI Tables 2-3, ScoNe-NLG Table 4)."""

from __future__ import annotations

from typing import Sequence

from negbench.scoring.runs import primary_metric
from negbench.scoring.paper_tables import RATE_CI, SD_OVER_SEEDS, Context, shot_label
from negbench.scoring.tables import Column, Row, Table, metric_cell
from negbench.scoring.registry import benchmark_of


# -- ScoNe ---------------------------------------------------------------------------------------------
def _split_table(
    ctx: Context,
    task: str,
    splits: Sequence[tuple[str, str]],
    extra: Sequence[str],
    title: str,
    caption: str,
    paper: str,
) -> Table | None:
    """A row per model × mode × shots; accuracy (percent) per split (``meta.split``) + overall."""
    cols = [Column(("Accuracy", label), f"acc_{key}") for key, label in splits]
    cols.append(Column(("Accuracy", "Overall"), "accuracy"))
    cols += [Column((name.replace("_", " ").capitalize(),), name) for name in extra]
    rows = []
    for r in ctx.runs_with(task):
        for mode in r.modes(task):
            for k in r.shots(task, mode):
                units = r.select(task, mode, k)
                f = primary_metric(task, mode, units[0].metrics if units else None) or "acc"
                cells = [
                    metric_cell(
                        r,
                        units,
                        f"acc_{key}",
                        scale=100.0,
                        digits=1,
                        stat="mean",
                        field_=f,
                        where={"meta.split": key},
                    )
                    for key, _ in splits
                ]
                cells.append(
                    metric_cell(r, units, "accuracy", scale=100.0, digits=1, stat="mean", field_=f)
                )
                cells += [metric_cell(r, units, name, scale=100.0, digits=1) for name in extra]
                rows.append(Row([r.label, mode, shot_label(k)], cells))
    if not rows:
        return None
    return Table(
        f"{task}-by-split",
        title,
        benchmark_of(task),
        ["model", "mode", "shots"],
        cols,
        rows,
        caption=caption,
        paper=paper,
    )


def scone_nli_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    from negbench.tasks.scone.tasks import CONDITION_LABELS, CONDITIONS

    out = []
    for task in tasks:
        t = _split_table(
            ctx,
            task,
            [(c, CONDITION_LABELS[c]) for c in CONDITIONS],
            (),
            f"ScoNe-NLI ({task}): accuracy per negation condition (percent)",
            "Accuracy in percent per ScoNe-NLI condition (200 test pairs each) and over "
            f"all records, {RATE_CI}; {SD_OVER_SEEDS}. Conditions absent from a run are blank.",
            "ScoNe Tables 2-3 (shape)",
        )
        if t:
            out.append(t)
    return out


def scone_nlg_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    from negbench.tasks.scone.tasks import NLG_TYPE_LABELS, NLG_TYPES

    out = []
    for task in tasks:
        t = _split_table(
            ctx,
            task,
            [(c, NLG_TYPE_LABELS[c]) for c in NLG_TYPES],
            ("triplet_consistency",),
            "ScoNe-NLG: outcome accuracy per condition (percent; negbench's automatic proxy)",
            "loglik: the gold outcome more likely than the triplet's other "
            "outcome; generate: the gold outcome found in the completion. Both are "
            "negbench proxies; the paper judged completions.",
            "ScoNe Table 4 (shape)",
        )
        if t:
            out.append(t)
    return out
