"""This is not a Dataset in ``negbench profile``: its part, its phenomena (negated vs affirmative
sentences without and with distractors; coherence) and the paper's numbers."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.phenomena import Items, PhenomenonSpec, Side
from negbench.scoring.profile_parts import Benchmark, Part, ReportedPaper

PROFILE = Benchmark(
    key="notadataset",
    title="This is not a Dataset",
    order=50,
    paper="this-is-not-a-dataset",
    quick=(Part("notadataset", ("notadataset",), ("next_token",), sample=600),),
    full=(Part("notadataset", ("notadataset",), ("next_token",)),),
    generation_mode={"next_token": "generate"},
    how_to_get="download the release of github.com/hitz-zentroa/This-is-not-a-Dataset (hub "
    "HiTZ/This-is-not-a-dataset) and set $NEGBENCH_NOTADATASET, or put it in "
    "$NEGBENCH_DATA/not-a-dataset",
)


def _negated_vs_affirmative(distractor: bool, label: str) -> PhenomenonSpec:
    return PhenomenonSpec(
        "negated vs affirmative sentences",
        Side(
            f"negated, {label}",
            "mean",
            {"meta.negation_type": {"not": "affirmation"}, "meta.is_distractor": distractor},
        ),
        Side(
            "affirmative",
            "mean",
            {"meta.negation_type": "affirmation", "meta.is_distractor": distractor},
        ),
    )


PHENOMENA = [
    _negated_vs_affirmative(False, "w/o distractor"),
    _negated_vs_affirmative(True, "with distractor"),
    PhenomenonSpec(
        "with vs without distractors",
        Side("accuracy, with distractor", "mean", {"meta.is_distractor": True}),
        Side("w/o distractor", "mean", {"meta.is_distractor": False}),
    ),
    PhenomenonSpec(
        "with vs without distractors",
        Side(
            "coherence, with distractor",
            "metric",
            {"meta.is_distractor": True},
            field="coherence_w_distractor",
            items=Items("all", {"meta.is_distractor": True}),
            counted="blocks",
        ),
        Side(
            "w/o distractor",
            "metric",
            {"meta.is_distractor": False},
            field="coherence_wo_distractor",
            items=Items("all", {"meta.is_distractor": False}),
            counted="blocks",
        ),
        "coherence: every sentence of a block answered right (blocks the subset holds whole)",
    ),
]

REPORTED = ReportedPaper(
    "this-is-not-a-dataset",
    "This is not a Dataset (García-Ferrero et al., EMNLP 2023)",
    Path(__file__).resolve().parent / "reported_results.csv",
    order=4,
)
