"""Thunder-NUBench in ``negbench profile``: its parts, its phenomena and its paper's numbers."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.profile_parts import Benchmark, Part, ReportedPaper
from negbench.tasks.common.choice_phenomena import choice_phenomena
from negbench.tasks.nubench.paper_tables import NUBENCH_SUBTYPES

PROFILE = Benchmark(
    key="nubench",
    title="Thunder-NUBench",
    order=10,
    paper="thunder-nubench",
    quick=(Part("nubench", ("nubench",), ("completion",), sample=250),),
    full=(
        Part(
            "nubench",
            ("nubench", "nubench-definition", "nubench-detail"),
            ("completion", "option"),
            shots=None,
            protocol=True,
        ),
    ),
    generation_mode={"completion": "option"},
    how_to_get="download the release (arXiv 2506.14397; hub "
    "thunder-research-group/SNU_Thunder-NUBench) and set $NEGBENCH_NUBENCH, or "
    "put it in $NEGBENCH_DATA/nubench",
)

PHENOMENA = choice_phenomena("choice2_type", NUBENCH_SUBTYPES)

REPORTED = ReportedPaper(
    "thunder-nubench",
    "Thunder-NUBench (So et al., Findings of EACL 2026)",
    Path(__file__).resolve().parent / "reported_results.csv",
    order=1,
)
