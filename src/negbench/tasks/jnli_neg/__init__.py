"""JNLI-Neg (Japanese NLI under negation; minimal pairs, AccChg).  Files: ``tasks.py`` (loading,
prompts, modes, metrics), ``README.md``.  Its report tables are the minimal-pair AccChg tables of
:mod:`negbench.tasks.common.minimal_pair_tables`."""

from __future__ import annotations

ORDER = 60
BENCHMARK = "jnli-neg"


def register(r) -> None:
    from negbench.tasks.jnli_neg.tasks import TASKS

    r.tasks(TASKS)
    r.add("paper_tables", BENCHMARK, "negbench.tasks.common.minimal_pair_tables:accchg_tables")
    r.add("profile", "jnli-neg", "negbench.tasks.jnli_neg.profile_part:PROFILE")
    r.add("phenomena", "jnli-neg", "negbench.tasks.jnli_neg.profile_part:PHENOMENA")
