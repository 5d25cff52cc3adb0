"""ScoNe (She et al., ACL 2023): ScoNe-NLI and ScoNe-NLG.  Files: ``tasks.py`` (loading, prompts,
modes, metrics), ``paper_tables.py`` (accuracy per condition, Tables 2-4), ``README.md``.

This folder is the whole benchmark: ``register`` below is the only place that tells negbench
about it (found by the scan of :mod:`negbench.scoring.registry`)."""

from __future__ import annotations

ORDER = 70


def register(r) -> None:
    from negbench.tasks.scone.tasks import NLG_TASK, NLI_NAME, NLI_TASK, make_task

    r.tasks([NLI_TASK], benchmark="scone-nli")
    r.tasks([NLG_TASK], benchmark="scone-nlg")
    r.add("task_factory", NLI_NAME, make_task, benchmark="scone-nli")
    r.add("paper_tables", "scone-nli", "negbench.tasks.scone.paper_tables:scone_nli_tables")
    r.add("paper_tables", "scone-nlg", "negbench.tasks.scone.paper_tables:scone_nlg_tables")
    r.add("profile", "scone-nli", "negbench.tasks.scone.profile_part:NLI_PROFILE")
    r.add("profile", "scone-nlg", "negbench.tasks.scone.profile_part:NLG_PROFILE")
    r.add("phenomena", "scone-nli", "negbench.tasks.scone.profile_part:NLI_PHENOMENA")
