"""Report tables of the built-in tasks, in the shape of the papers they follow (negation-mini:
Thunder-NUBench Tables 11 and 6; truefalse-mini: This is not a Dataset Table 4)."""

from __future__ import annotations

from negbench.scoring.paper_tables import (
    RATE_CI,
    SD_OVER_SEEDS,
    Context,
    error_table,
    shot_label,
    shots_table,
    union_modes,
)
from negbench.scoring.tables import Column, Row, Table, metric_cell
from negbench.tasks.nubench.paper_tables import NUBENCH_SUBTYPES


# -- negation-mini (NUBench design, built in) ----------------------------------------------------
def negation_mini_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    out = []
    for task in tasks:
        t = shots_table(
            ctx,
            task,
            modes={},
            metric=lambda m: "exact_match" if m == "generate" else "acc",
            field_of=lambda m: "exact_match" if m == "generate" else "acc",
            scale=1.0,
            digits=3,
            title="negation-mini: accuracy by shots (NUBench Table 11 shape)",
            paper="Thunder-NUBench Table 11 (shape)",
            caption=f"Accuracy, {RATE_CI}; {SD_OVER_SEEDS}.",
            mode_order=("cloze", "letter", "generate"),
        )
        if t:
            out.append(t)
        for mode in union_modes(ctx.runs_with(task), task, ("cloze", "letter", "generate")):
            e = error_table(
                ctx,
                task,
                mode,
                subtype_key="local_negation_type",
                subtypes=NUBENCH_SUBTYPES,
                title=f"negation-mini {mode}: error analysis (NUBench Table 6 shape)",
                paper="Thunder-NUBench Table 6 (shape)",
                caption=f"As NUBench Table 6; {RATE_CI}; {SD_OVER_SEEDS}.",
            )
            if e:
                out.append(e)
    return out


# -- truefalse-mini -------------------------------------------------------------------------------
def truefalse_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    out = []
    for task in tasks:
        cols = [
            Column(("Accuracy", "All"), "acc"),
            Column(("Accuracy", "Affirmative"), "acc_affirmative"),
            Column(("Accuracy", "Negated"), "acc_negated"),
            Column(("Pair consistency",), "pair_consistency"),
        ]
        rows = []
        for r in ctx.runs_with(task):
            for mode in r.modes(task):
                for k in r.shots(task, mode):
                    units = r.select(task, mode, k)
                    cells = [
                        metric_cell(
                            r, units, "acc", scale=100.0, digits=1, stat="mean", field_="acc"
                        ),
                        metric_cell(
                            r,
                            units,
                            "acc_affirmative",
                            scale=100.0,
                            digits=1,
                            stat="mean",
                            field_="acc",
                            where={"meta.negated": False},
                        ),
                        metric_cell(
                            r,
                            units,
                            "acc_negated",
                            scale=100.0,
                            digits=1,
                            stat="mean",
                            field_="acc",
                            where={"meta.negated": True},
                        ),
                        metric_cell(r, units, "pair_consistency", scale=100.0, digits=1),
                    ]
                    rows.append(Row([r.label, mode, shot_label(k)], cells))
        if rows:
            out.append(
                Table(
                    f"{task}-accuracy",
                    "truefalse-mini: accuracy on affirmative and "
                    "negated statements (percent; not-a-dataset Table 4 shape)",
                    "truefalse-mini",
                    ["model", "mode", "shots"],
                    cols,
                    rows,
                    caption=f"Pair consistency = both statements of a pair right. Accuracy: "
                    f"{RATE_CI}; {SD_OVER_SEEDS}.",
                    paper="This is not a Dataset Table 4 (shape)",
                )
            )
    return out
