"""Thunder-KoNUBench (Korean sentence negation) and its diagnostics (KMMLU-Neg/Pos, KoBEST
BoolQ-Neg).  Files: ``tasks.py`` (loading, prompts, modes, metrics), ``paper_tables.py``
(Tables 8, 16, App. I), ``recipes.py`` (LoRA, App. G), ``export.py`` (SFT records),
``human_eval.py`` (§4.3 sheet, Table 7), ``build.py`` (the Korean side of ``negbench build
mcq``), ``README.md``."""

from __future__ import annotations

ORDER = 30
BENCHMARK = "konubench"


def register(r) -> None:
    from negbench.tasks.konubench.tasks import PAPER_METRIC, TASKS

    for t in TASKS:
        r.tasks([t], benchmark=BENCHMARK if t.name == "konubench" else "konubench-diagnostics")
    r.add("paper_tables", BENCHMARK, "negbench.tasks.konubench.paper_tables:paper_tables")
    r.add("subtype_labels", BENCHMARK, "negbench.tasks.konubench.paper_tables:KONU_SUBTYPES")
    r.add("paper_metric", BENCHMARK, PAPER_METRIC)
    r.later(("recipe", "recipe_alias"), "negbench.tasks.konubench.recipes:register")
    r.later("exporter", "negbench.tasks.konubench.export:register")
    r.add("training_data", "konubench-symbol", "negbench.tasks.konubench.export:symbol_selection")
    r.add("sheet", "konubench", "negbench.tasks.konubench.human_eval:SHEET")
    r.add("mcq_language", "ko", "negbench.tasks.konubench.build:LANGUAGE")
    r.add("profile", "konubench", "negbench.tasks.konubench.profile_part:PROFILE")
    r.add(
        "profile",
        "konubench-diagnostics",
        "negbench.tasks.konubench.profile_part:DIAGNOSTICS_PROFILE",
    )
    r.add("phenomena", "konubench", "negbench.tasks.konubench.profile_part:PHENOMENA")
    r.add(
        "phenomena",
        "konubench-diagnostics",
        "negbench.tasks.konubench.profile_part:DIAGNOSTICS_PHENOMENA",
    )
    r.add("reported", "thunder-konubench", "negbench.tasks.konubench.profile_part:REPORTED")
