"""ScoNe in ``negbench profile``: the NLI and NLG parts and the negation-scope phenomena."""

from __future__ import annotations

from negbench.scoring.phenomena import PhenomenonSpec, Side
from negbench.scoring.profile_parts import Benchmark, Part
from negbench.tasks.scone.tasks import CONDITIONS

_PROMPTS = ("cond-q", "hyp-q", "cond-truth", "brown", "structured")

NLI_PROFILE = Benchmark(
    key="scone-nli",
    title="ScoNe-NLI",
    order=80,
    paper="",
    quick=(Part("scone-nli", ("scone-nli",), ("cloze",), sample=240),),
    full=(
        Part("scone-nli", ("scone-nli",), ("cloze",) + _PROMPTS),
        Part("scone-nli-fewshot", ("scone-nli",), tuple(f"{m}-fs" for m in _PROMPTS), shots=(4,)),
    ),
    generation_mode={"cloze": "cond-q"},
    how_to_get="clone github.com/selenashe/ScoNe and set $NEGBENCH_SCONE, or put it in "
    "$NEGBENCH_DATA/scone",
    cluster_fields=("row",),
)

NLG_PROFILE = Benchmark(
    key="scone-nlg",
    title="ScoNe-NLG",
    order=90,
    paper="",
    quick=(),
    full=(Part("scone-nlg", ("scone-nlg",), ("loglik",)),),
    generation_mode={"loglik": "generate"},
    how_to_get="clone github.com/selenashe/ScoNe and set $NEGBENCH_SCONE",
)

#: each negation-scope condition against the pairs without negation
NLI_PHENOMENA = [
    PhenomenonSpec(
        "negation scope",
        Side(c.replace("_", " "), "mean", {"meta.split": c}),
        Side("no negation", "mean", {"meta.split": "no_negation"}),
    )
    for c in CONDITIONS
    if c != "no_negation"
]
