"""CONDAQA (Ravichander et al., EMNLP 2022).  Files: ``tasks.py`` (loading, prompts, modes,
metrics, Table 4), ``analysis.py`` (App. D: question length, cue novelty), ``study.py`` (App. C.2
few-shot studies, Tables 8-9), ``paper_tables.py`` (report tables), ``README.md``."""

from __future__ import annotations

ORDER = 10
BENCHMARK = "condaqa"


def register(r) -> None:
    from negbench.tasks.condaqa import study
    from negbench.tasks.condaqa.tasks import TASKS, table4

    r.tasks(TASKS)
    for t in TASKS:  # App. C.2 studies: condaqa-split{i}[sampling=…,pool=…,ctx=…]
        if t.name.startswith("condaqa-split"):
            r.add("task_factory", t.name, lambda opts, _t=t: study.make_task(_t, opts))
    r.add("paper_tables", "condaqa", "negbench.tasks.condaqa.paper_tables:paper_tables")
    r.add("run_section", "CONDAQA Table 4 (percent; mean ± SD over test splits)", table4)
    r.add(
        "run_section",
        "CONDAQA Tables 8-9 (percent; few-shot sampling strategy and context length)",
        study.table8_9,
    )
    r.add("profile", "condaqa", "negbench.tasks.condaqa.profile_part:PROFILE")
    r.add("phenomena", "condaqa", "negbench.tasks.condaqa.profile_part:PHENOMENA")
    r.add("reported", "condaqa", "negbench.tasks.condaqa.profile_part:REPORTED")
