"""This is not a Dataset §6 training data as Alpaca records (True / False instructions)."""

from __future__ import annotations

from negbench.tasks.alpaca import Exporter
from negbench.tasks.notadataset.tasks import PATTERNS, Selection, canonical_name, parse_selection


def alpaca_records(sel: Selection, split: str) -> list[dict]:
    """§6 training data in Alpaca form: the §4.2 instruction, the sentence, "True" / "False"."""
    return [
        {
            "instruction": "Is the following statement True or False?",
            "input": s.sentence.strip(),
            "output": "True" if s.label else "False",
            "pattern": PATTERNS[s.pattern_id],
            "block": s.block,
            "negation_type": s.negation_type,
        }
        for s in sel.sentences(split)
    ]


def exporter(options: dict[str, str]) -> Exporter:
    sel = parse_selection(options)
    return Exporter(
        canonical_name(options),
        "This is not a Dataset sentences (split by block; "
        "options patterns=, types=, sample=) as True/False instructions",
        lambda split: alpaca_records(sel, split),
        default_split="train",
    )
