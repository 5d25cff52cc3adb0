"""A Thunder-NUBench answer sheet: test items for people to answer, scored as Thunder-KoNUBench
Table 7 (NUBench reports no human evaluation; the sheet has KoNUBench's size)."""

from __future__ import annotations

import os
from pathlib import Path

from negbench.scoring.sheets import Sheet, check_n, seeded_sample, write_answer_sheet

DEFAULT_N = 50
STRATA = ("choice2_type",)


def nubench_items(
    n: int, seed: int, source: str | None = None, stratify: str | None = None
) -> list[dict]:
    """``n`` Thunder-NUBench test items (the release, or ``negbench build mcq``'s output), options
    in the order the option mode shows them (Listing 9's shuffle), gold = the standard negation."""
    from negbench.tasks.nubench import tasks as NB

    docs = NB.load_split("test", source)
    check_n(n, len(docs), "the test split")
    strata = [d["choice2_type"] for d in docs] if stratify else [0] * len(docs)
    out = []
    for k, i in enumerate(seeded_sample(strata, n, seed, bool(stratify)), 1):
        d = docs[i]
        keys = list(d["option_keys"])
        out.append(
            {
                "item": k,
                "idx": d["index"],
                "original_sentence": d["sentence"],
                "options": [d[c] for c in keys],
                "gold": NB.LETTERS[keys.index("choice1")],
                "option_types": [NB.KEY_TYPES[c] for c in keys],
            }
        )
    return out


def write(
    out_dir: str | os.PathLike, n: int, seed: int, source: str | None, stratify: str | None
) -> dict[str, Path]:
    from negbench.tasks.nubench.tasks import INSTRUCTIONS, OPTION_HEADER

    items = nubench_items(n, seed, source, stratify)
    return write_answer_sheet(
        items,
        out_dir,
        f"Thunder-NUBench human evaluation (seed {seed})",
        [OPTION_HEADER, f"Instruction: {INSTRUCTIONS['simple']}"],
    )


SHEET = Sheet("answer", DEFAULT_N, STRATA, write)
