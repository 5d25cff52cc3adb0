"""JSTS-Neg (Japanese similarity under negation; minimal pairs, AccChg).  Files: ``tasks.py``
(loading, prompts, modes, metrics), ``build.py`` + ``ja_negation.py`` + ``judge.py`` (``negbench
build jsts-neg``: cue insertion, the LLM judge, pairing, annotation), ``inhouse/`` (our
single-annotator set), ``README.md``, ``BUILD.md``.  Its report tables are the minimal-pair
AccChg tables of :mod:`negbench.tasks.common.minimal_pair_tables`."""

from __future__ import annotations

ORDER = 50
BENCHMARK = "jsts-neg"


def register(r) -> None:
    from negbench.tasks.jsts_neg.tasks import TASKS
    from negbench.scoring.registry import Builder

    r.tasks(TASKS)
    r.add("paper_tables", BENCHMARK, "negbench.tasks.common.minimal_pair_tables:accchg_tables")
    r.add("builder", "jsts-neg", Builder(_add_build_parser, _run_build))
    r.add("profile", "jsts-neg", "negbench.tasks.jsts_neg.profile_part:PROFILE")
    r.add("phenomena", "jsts-neg", "negbench.tasks.jsts_neg.profile_part:PHENOMENA")
    r.add("reported", "jsts-neg", "negbench.tasks.jsts_neg.profile_part:REPORTED")


def _add_build_parser(sub) -> None:
    from negbench.tasks.jsts_neg.build_cli import add_parser

    add_parser(sub)


def _run_build(args, open_model) -> int:
    from negbench.tasks.jsts_neg.build_cli import run

    return run(args, open_model)
