"""This is not a Dataset §6 training data as Alpaca records (True / False instructions)."""

from __future__ import annotations

from negbench.errors import TaskError
from negbench.tasks.alpaca import Exporter, TrainingSelection
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


#: the splits of §6 (by block, never by sentence)
SPLITS = ("train", "dev", "test", "all")
#: options of a training-data spec that the evaluation after training inherits (same release,
#: same split)
INHERITED_EVAL_OPTIONS = ("source", "split_seed")


def training_selection(options: dict[str, str], split: str) -> TrainingSelection:
    """``notadataset[split=…,…]`` as ``negbench train --data``: the split (popped) and the options
    the evaluation after training inherits."""
    split = options.pop("split", split)
    if split not in SPLITS:
        raise TaskError(
            f"This is not a Dataset has no split '{split}'",
            where="--data / data_split",
            fix="one of " + ", ".join(SPLITS) + " (by block, §6)",
        )
    return TrainingSelection(split, {k: options[k] for k in INHERITED_EVAL_OPTIONS if k in options})
