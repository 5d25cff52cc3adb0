"""Thunder-NUBench report tables: Tables 11-13 (zero-shot, few-shot, SFT) and the error
analysis of Table 6 / Tables 15-22."""

from __future__ import annotations

from negbench.scoring.paper_tables import (
    RATE_CI,
    SD_OVER_SEEDS,
    Context,
    error_table,
    shots_table,
    union_modes,
)
from negbench.scoring.tables import Table

# -- Thunder-NUBench ------------------------------------------------------------------------------
NUBENCH_MODES = {"completion": "completion", "option": "option", "letter": "letter"}
NUBENCH_SUBTYPES = (
    ("relative_part", "Relative Clause"),
    ("pp_part", "Participle Clause"),
    ("compound_part", "Compound Sentence"),
    ("adverb_part", "Adverbial Clause"),
)
_STYLE = {
    "nubench": ("simple", "Table 11"),
    "nubench-definition": ("definition", "Table 12"),
    "nubench-detail": ("detail", "Table 13"),
}
_SETTING = {
    "completion": "completion-based setting",
    "option": "option-selection setting",
    "letter": "letter log-likelihood (negbench addition)",
}


def paper_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    out = []
    for task in tasks:
        style, paper = _STYLE.get(task, (task, "Table 11"))
        t = shots_table(
            ctx,
            task,
            modes=NUBENCH_MODES,
            metric=lambda m: "exact_match" if m == "option" else "acc",
            field_of=lambda m: "exact_match" if m == "option" else "acc",
            scale=1.0,
            digits=3,
            title=f"Thunder-NUBench ({task}, {style} prompt): zero-shot, few-shot and SFT accuracy",
            paper=f"Thunder-NUBench {paper}",
            caption=f"Accuracy (completion: acc; option: exact match), {RATE_CI}. Few-shot "
            f"cells: {SD_OVER_SEEDS}. After SFT = runs with a LoRA adapter, zero-shot.",
            mode_order=("completion", "option", "letter"),
        )
        if t:
            out.append(t)
        from negbench.tasks.nubench.tasks import ERROR_ANALYSIS_SEED as s0

        for mode in union_modes(ctx.runs_with(task), task, ("completion", "option", "letter")):
            e = error_table(
                ctx,
                task,
                mode,
                subtype_key="choice2_type",
                subtypes=NUBENCH_SUBTYPES,
                title=f"Thunder-NUBench ({task}): error rates, incorrect choice distributions and "
                f"local negation confusion rates, {_SETTING.get(mode, mode)}",
                paper="Thunder-NUBench Table 6 / Tables 15–22",
                seed=s0,
                caption="Error rate = 1 − acc; incorrect-choice shares over the wrong answers that "
                "name an option; confusion = items of the clause type whose local negation "
                f"was picked, over the items of that type; {RATE_CI}. Few-shot rows: seed {s0} "
                "only, as App. R (a few-shot setting run without that seed has no row here).",
            )
            if e:
                out.append(e)
            if any(
                u.seed not in (None, s0)
                for r in ctx.runs_with(task)
                for u in r.select(task, mode)
                if u.shots
            ):
                e = error_table(
                    ctx,
                    task,
                    mode,
                    subtype_key="choice2_type",
                    subtypes=NUBENCH_SUBTYPES,
                    title=f"Thunder-NUBench ({task}): error analysis, mean over few-shot seeds "
                    f"(ours), {_SETTING.get(mode, mode)}",
                    paper="negbench addition (not in the paper)",
                    table_id=f"{task}-{mode}-errors-seed-mean",
                    caption="As the App. R table, but few-shot cells are the mean ± SD over every "
                    "seed run (ours; the paper reports seed 1234 only): ± is the SD over seeds, "
                    f"not a 95 % margin; {RATE_CI}, the interval over the items pooled over "
                    "the seeds.",
                )
                if e:
                    out.append(e)
    return out
