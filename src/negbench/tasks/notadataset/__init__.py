"""This is not a Dataset (García-Ferrero et al., EMNLP 2023).  Files: ``tasks.py`` (the release,
splits, samples, prompts, modes), ``truth_scorer.py`` (the official scorer: coherence, Tables
4-7), ``paper_tables.py`` (report tables), ``recipes.py`` (LoRA, §6), ``export.py`` (Alpaca
records), ``human_eval.py`` (§3.2 judge sheet, Table 3), ``build/`` (``negbench build
notadataset``: WordNet triples, templates), ``README.md``."""

from __future__ import annotations

ORDER = 40
BENCHMARK = "notadataset"


def register(r) -> None:
    from negbench.tasks.notadataset.tasks import NAME, TASK, make_task
    from negbench.scoring.registry import Builder

    r.tasks([TASK])
    r.add("task_factory", NAME, make_task)
    r.add("exporter_factory", NAME, "negbench.tasks.notadataset.export:exporter")
    r.add("training_data", NAME, "negbench.tasks.notadataset.export:training_selection")
    r.add("paper_tables", BENCHMARK, "negbench.tasks.notadataset.paper_tables:paper_tables")
    r.later(("recipe", "recipe_alias"), "negbench.tasks.notadataset.recipes:register")
    r.add("sheet", "notadataset", "negbench.tasks.notadataset.human_eval:SHEET")
    r.add("builder", "notadataset", Builder(_add_build_parser, _run_build))
    r.add("profile", "notadataset", "negbench.tasks.notadataset.profile_part:PROFILE")
    r.add("phenomena", "notadataset", "negbench.tasks.notadataset.profile_part:PHENOMENA")
    r.add("reported", "this-is-not-a-dataset", "negbench.tasks.notadataset.profile_part:REPORTED")


def _add_build_parser(sub) -> None:
    from negbench.tasks.notadataset.build.cli import add_parser

    add_parser(sub)


def _run_build(args, open_model) -> int:
    from negbench.tasks.notadataset.build.cli import run

    return run(args)  # builds from WordNet and templates: no model
