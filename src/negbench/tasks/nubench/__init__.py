"""Thunder-NUBench (English sentence negation).  Files: ``tasks.py`` (loading, prompts, modes,
metrics, error analysis), ``paper_tables.py`` (Tables 6, 11-13, 15-22), ``recipes.py`` (LoRA,
App. N), ``export.py`` (Alpaca records, Listing 11), ``human_eval.py`` (answer sheet),
``build.py`` (the English side of ``negbench build mcq``), ``README.md``."""

from __future__ import annotations

ORDER = 20
BENCHMARK = "nubench"


def register(r) -> None:
    from negbench.tasks.nubench.tasks import TASKS

    r.tasks(TASKS)
    r.add("paper_tables", BENCHMARK, "negbench.tasks.nubench.paper_tables:paper_tables")
    r.add("subtype_labels", BENCHMARK, "negbench.tasks.nubench.paper_tables:NUBENCH_SUBTYPES")
    r.later(("recipe", "recipe_alias"), "negbench.tasks.nubench.recipes:register")
    r.later("exporter", "negbench.tasks.nubench.export:register")
    r.add("sheet", "nubench", "negbench.tasks.nubench.human_eval:SHEET")
    r.add("mcq_language", "en", "negbench.tasks.nubench.build:LANGUAGE")
    r.add("profile", "nubench", "negbench.tasks.nubench.profile_part:PROFILE")
    r.add("phenomena", "nubench", "negbench.tasks.nubench.profile_part:PHENOMENA")
    r.add("reported", "thunder-nubench", "negbench.tasks.nubench.profile_part:REPORTED")
