"""CONDAQA in ``negbench profile``: its parts (zero-shot, and the paper's 9-shot over the five
test splits, pooled), its phenomena and the paper's numbers."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.phenomena import Items, PhenomenonSpec, Side
from negbench.scoring.profile_parts import Benchmark, Part, ReportedPaper
from negbench.tasks.condaqa.analysis import EDITS

_SPLITS = tuple(f"condaqa-split{i}" for i in range(1, 6))

PROFILE = Benchmark(
    key="condaqa",
    title="CONDAQA",
    order=40,
    paper="condaqa",
    quick=(Part("condaqa", ("condaqa",), ("generate",), sample=32),),
    full=(
        Part("condaqa", ("condaqa",), ("generate",)),
        Part("condaqa-fewshot", _SPLITS, ("generate",), shots=(9,), pooled=True),
    ),
    how_to_get="clone github.com/AbhilashaRavichander/CondaQA (hub lasha-nlp/CONDAQA) and "
    "set $NEGBENCH_CONDAQA, or put it in $NEGBENCH_DATA/condaqa",
)

_ORIGINAL = Side(
    "original passage",
    "metric",
    {"meta.PassageEditID": 0},
    field="acc_original",
    items=Items("item", {"meta.PassageEditID": 0}),
)

#: accuracy on each kind of edited passage vs the original, and group consistency vs accuracy
PHENOMENA = (
    [
        PhenomenonSpec(
            "edited vs original passage",
            Side(
                f"{EDITS[e]} edit",
                "metric",
                {"meta.PassageEditID": e},
                field=f"acc_{EDITS[e]}",
                items=Items("item", {"meta.PassageEditID": e}),
            ),
            _ORIGINAL,
        )
        for e in (1, 2, 3)
    ]
    + [
        PhenomenonSpec(
            "group consistency",
            Side(
                "all four passages right",
                "metric",
                field="consistency",
                items=Items("all", {}),
                counted="groups",
            ),
            Side("accuracy", "metric", field="accuracy", items=Items("item", {})),
            "a question counts when its answers on the original and all three edits are right",
        )
    ]
    + [
        PhenomenonSpec(
            "group consistency",
            Side(
                f"original and {EDITS[e]} right",
                "metric",
                {"meta.PassageEditID": [0, e]},
                field=f"consistency_{EDITS[e]}",
                items=Items("all", {"meta.PassageEditID": [0, e]}),
                counted="groups",
            ),
        )
        for e in (1, 2, 3)
    ]
)

REPORTED = ReportedPaper(
    "condaqa",
    "CONDAQA (Ravichander, Gardner & Marasović, EMNLP 2022)",
    Path(__file__).resolve().parent / "reported_results.csv",
    order=3,
)
