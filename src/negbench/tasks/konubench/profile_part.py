"""Thunder-KoNUBench in ``negbench profile``: its parts (the benchmark and its KMMLU / KoBEST
BoolQ diagnostics), their phenomena and the paper's numbers."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.phenomena import PhenomenonSpec, Side
from negbench.scoring.profile_parts import Benchmark, Part, ReportedPaper
from negbench.tasks.common.choice_phenomena import choice_phenomena
from negbench.tasks.konubench.paper_tables import KONU_SUBTYPES

_DIAGNOSTIC_TASKS = ("kmmlu-neg", "kmmlu-pos", "kobest-boolq-neg", "kobest-boolq")

PROFILE = Benchmark(
    key="konubench",
    title="Thunder-KoNUBench",
    order=20,
    paper="thunder-konubench",
    quick=(Part("konubench", ("konubench",), ("cloze",), sample=60),),
    full=(Part("konubench", ("konubench",), ("cloze", "symbol"), shots=None, protocol=True),),
    generation_mode={"cloze": "api", "symbol": "api"},
    how_to_get="clone github.com/mcrl/Thunder-KoNUBench (hub "
    "thunder-research-group/SNU_Thunder-KoNUBench) and set $NEGBENCH_KONUBENCH, "
    "or put it in $NEGBENCH_DATA/konubench",
)

DIAGNOSTICS_PROFILE = Benchmark(
    key="konubench-diagnostics",
    title="KoNUBench diagnostics",
    order=30,
    paper="thunder-konubench",
    quick=(Part("konubench-diagnostics", _DIAGNOSTIC_TASKS, ("symbol", "cloze"), sample=30),),
    full=(Part("konubench-diagnostics", _DIAGNOSTIC_TASKS, ("symbol", "cloze")),),
    how_to_get="KMMLU and BoolQ-negated come with the Thunder-KoNUBench release "
    "($NEGBENCH_KONUBENCH); the original KoBEST BoolQ comes from the hub "
    "(skt/kobest_v1) or $NEGBENCH_KOBEST_BOOLQ",
)

PHENOMENA = choice_phenomena("local_type", KONU_SUBTYPES)

#: negated vs affirmative questions (KMMLU and KoBEST BoolQ, §5): each side on its own task
DIAGNOSTICS_PHENOMENA = [
    PhenomenonSpec(
        "negated vs affirmative questions",
        Side(f"{what}, negated", "mean", task=neg),
        Side("affirmative", "mean", task=pos),
        missing_reference_note=f"{pos} not run (no data)",
    )
    for neg, pos, what in (
        ("kmmlu-neg", "kmmlu-pos", "KMMLU"),
        ("kobest-boolq-neg", "kobest-boolq", "KoBEST BoolQ"),
    )
]

REPORTED = ReportedPaper(
    "thunder-konubench",
    "Thunder-KoNUBench (Jung, So, Lee et al.)",
    Path(__file__).resolve().parent / "reported_results.csv",
    order=2,
)
