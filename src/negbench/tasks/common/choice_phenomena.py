"""Standard vs local negation (Thunder-NUBench, Thunder-KoNUBench): how often the model picks the
local negation, a contradiction or a paraphrase instead of the standard negation, overall and per
clause type of the local negation — the profile's view of the papers' error analysis."""

from __future__ import annotations

from typing import Sequence

from negbench.scoring.phenomena import PhenomenonSpec, Side


def choice_phenomena(
    subtype_field: str, subtypes: Sequence[tuple[str, str]]
) -> list[PhenomenonSpec]:
    """The phenomena of a sentence-negation MCQ benchmark whose records carry the local
    negation's clause type in ``meta.<subtype_field>`` (``subtypes``: (type, display name))."""
    name = "standard vs local negation"
    std = Side("standard negation picked", "share", hit={"error_type": None})
    out = [
        PhenomenonSpec(
            name,
            Side("local negation picked", "share", hit={"error_type": "local"}),
            std,
            "share of all items; the paper's error analysis counts the same picks",
        )
    ]
    for kind, label, generated in (
        ("contradiction", "contradiction picked", False),
        ("paraphrase", "paraphrase picked", False),
        ("format", "no option named", True),
    ):
        out.append(
            PhenomenonSpec(
                "other wrong picks",
                Side(label, "share", hit={"error_type": kind}),
                generated_only=generated,
            )
        )
    for sub, title in subtypes:
        where = {f"meta.{subtype_field}": sub}
        out.append(
            PhenomenonSpec(
                "local negation by clause",
                Side(f"{title}: local picked", "share", where, {"error_type": "local"}),
                Side("standard picked", "share", where, {"error_type": None}),
            )
        )
    return out
