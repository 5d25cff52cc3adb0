"""Thunder-NUBench training data as Alpaca records (App. N, Listing 11; App. O / Q instructions)."""

from __future__ import annotations

import os
from functools import partial

from negbench.errors import TaskError
from negbench.tasks.alpaca import Exporter
from negbench.tasks.nubench.tasks import INSTRUCTIONS, PAIR_SPLITS, STYLES, load_split


def alpaca_records(
    split: str = "train", source: str | os.PathLike | None = None, style: str = "simple"
) -> list[dict]:
    """Listing 11: ``{"instruction": "Negate the sentence.", "input": "Sentence: {premise}",
    "output": "{hypothesis}"}`` per sentence-negation pair (``style`` swaps in the App. O
    instruction, for the SFT runs of App. Q)."""
    if split not in PAIR_SPLITS:
        raise TaskError(
            f"the Alpaca export reads the sentence-negation pairs, not '{split}'",
            where="--split",
            fix="use --split train",
        )
    return [
        {
            "instruction": INSTRUCTIONS[style],
            "input": f"Sentence: {d['premise']}",
            "output": d["hypothesis"],
        }
        for d in load_split(split, source)
    ]


def make_exporters(source: str | os.PathLike | None = None) -> list[Exporter]:
    names = {
        "simple": "nubench-negation",
        "definition": "nubench-negation-definition",
        "detail": "nubench-negation-detail",
    }
    what = {
        "simple": "App. N, Listing 11",
        "definition": "App. Q: SFT with the App. O definition instruction",
        "detail": "App. Q: SFT with the App. O detail instruction (Listing 12)",
    }
    return [
        Exporter(
            name=names[style],
            summary=f"Thunder-NUBench sentence-negation pairs as Alpaca records ({what[style]})",
            records=partial(alpaca_records, source=source, style=style),
            default_split="train",
        )
        for style in STYLES
    ]


EXPORTERS: tuple[Exporter, ...] = tuple(make_exporters())


def register(r) -> None:
    """Called by the registry the first time exporters are asked for."""
    for e in EXPORTERS:
        r.add("exporter", e.name, e)
