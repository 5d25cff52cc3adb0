"""Built-in tasks written by the negbench authors: ``negation-mini`` (Thunder-NUBench design) and
``truefalse-mini`` (This is not a Dataset style); no download needed.  Files: ``tasks.py`` (data,
prompts, modes, metrics; also the reader of users' JSON-lines tasks), ``paper_tables.py``
(report tables in the shape of the papers), ``data/`` (the items)."""

from __future__ import annotations

ORDER = 0


def register(r) -> None:
    from negbench.tasks.builtin.tasks import NEGATION_MINI, TRUEFALSE_MINI

    r.tasks([NEGATION_MINI], benchmark="negation-mini")
    r.tasks([TRUEFALSE_MINI], benchmark="truefalse-mini")
    r.add(
        "paper_tables", "negation-mini", "negbench.tasks.builtin.paper_tables:negation_mini_tables"
    )
    r.add("paper_tables", "truefalse-mini", "negbench.tasks.builtin.paper_tables:truefalse_tables")
