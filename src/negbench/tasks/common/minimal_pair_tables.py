"""The AccChg tables of the minimal-pair benchmarks (JSTS-Neg Tables 3-5; JNLI-Neg in the same
shape): Acc, Acc' and AccChg on M, M_i and M_u."""

from __future__ import annotations

from negbench.scoring.paper_tables import Context, shot_label, union_modes, union_shots
from negbench.scoring.tables import Column, Row, Table, metric_cell
from negbench.scoring.registry import benchmark_of

# -- JSTS-Neg / JNLI-Neg --------------------------------------------------------------------------
JSTS_SETS = (("M", "M"), ("Mi", "M_i"), ("Mu", "M_u"))
JSTS_STATS = (("acc", "Acc"), ("acc_prime", "Acc'"), ("acc_chg", "AccChg"))


def accchg_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    out = []
    for task in tasks:
        runs = ctx.runs_with(task)
        name = "JSTS-Neg" if benchmark_of(task) == "jsts-neg" else "JNLI-Neg"
        cols = [Column((sl, stl), f"{s}.{st}") for s, sl in JSTS_SETS for st, stl in JSTS_STATS]
        paper_no = {0: "Table 3", 4: "Table 4", 11: "Table 5"}
        for mode in union_modes(runs, task):
            for k in union_shots(runs, task, mode):
                rows = []
                for r in runs:
                    units = r.select(task, mode, k)
                    if not units:
                        continue
                    cells = [
                        metric_cell(r, units, f"{s}.{st}", scale=100.0, digits=2)
                        for s, _ in JSTS_SETS
                        for st, _ in JSTS_STATS
                    ]
                    rows.append(Row([r.label], cells))
                if rows:
                    out.append(
                        Table(
                            f"{task}-{mode}-{k}shot-accchg",
                            f"{name} ({task}, {mode}): AccChg results in the {shot_label(k)} "
                            "setting",
                            benchmark_of(task),
                            ["model"],
                            cols,
                            rows,
                            caption="Acc and Acc' in percent, AccChg in percentage points "
                            "(Acc' − Acc); mean ± SD over seeds (± is the SD over seeds, not a 95 % "
                            "margin).",
                            paper=f"JSTS-Neg {paper_no.get(k, 'Tables 3–5')} (shape)",
                        )
                    )
    return out
