"""JSTS-Neg in ``negbench profile``: its part, the minimal-pair phenomena and the paper's numbers."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.profile_parts import Benchmark, Part, ReportedPaper
from negbench.tasks.common.minimal_pairs import pair_phenomena

PROFILE = Benchmark(
    key="jsts-neg",
    title="JSTS-Neg",
    order=60,
    paper="jsts-neg",
    quick=(Part("jsts-neg", ("jsts-neg",), ("generate",), sample=100),),
    full=(Part("jsts-neg", ("jsts-neg",), ("generate",), shots=None, protocol=True),),
    how_to_get="get github.com/reiko-y/JSTS-Neg and set $NEGBENCH_JSTS_NEG, or build a set "
    "from JGLUE with 'negbench build jsts-neg' (--inhouse: negbench's own "
    "annotations) and point $NEGBENCH_JSTS_NEG at it",
)

PHENOMENA = pair_phenomena()

REPORTED = ReportedPaper(
    "jsts-neg",
    "JSTS-Neg (Yuasa, Kato & Matsubara)",
    Path(__file__).resolve().parent / "reported_results.csv",
    order=5,
)
