"""Thunder-KoNUBench SFT data as Alpaca records (App. G; the official ``sft/load.py`` formats)."""

from __future__ import annotations

import os
from functools import partial

from negbench.errors import OptionError
from negbench.tasks.alpaca import Exporter, TrainingSelection
from negbench.scoring.task import Doc
from negbench.tasks.konubench.tasks import (
    CLOZE_INSTRUCTION,
    DESCRIPTION_API,
    LETTERS,
    load_split,
    shuffled_options,
    symbol_query,
)

#: Alpaca ``instruction + ALPACA_JOIN + input + " " + output`` is the official SFT sequence text.
ALPACA_JOIN = "\n\n"


def alpaca_cloze(d: Doc | dict) -> dict:
    """Cloze-style SFT record: generate the standard negation (official ``tokenize_load_dataset_cloze``:
    instruction, blank line, the ``-말다`` description, ``원문: {sentence}\\n부정문:`` then
    `` {standard_negation}``)."""
    return {
        "instruction": CLOZE_INSTRUCTION + "\n\n" + DESCRIPTION_API.rstrip("\n"),
        "input": f"원문: {d['original_sentence']}\n부정문:",
        "output": d["standard_negation"],
    }


def alpaca_symbol(d: Doc | dict) -> dict:
    """Symbol-style SFT record (official ``tokenize_load_dataset_symbol``): the ``-말다``
    description, then the symbol prompt with the per-idx option order; the output is
    ``{letter}. {standard_negation}`` as the official target is."""
    opts = shuffled_options(d)
    texts = [t for _, t in opts]
    gold = texts.index(d["standard_negation"])
    return {
        "instruction": DESCRIPTION_API.rstrip("\n"),
        "input": symbol_query(d["original_sentence"], texts),
        "output": f"{LETTERS[gold]}. {d['standard_negation']}",
    }


def export_records(
    style: str, split: str = "train", source: str | os.PathLike | None = None
) -> list[dict]:
    fn = {"cloze": alpaca_cloze, "symbol": alpaca_symbol}[style]
    return [fn(d) for d in load_split(split, source)]


EXPORTERS = (
    Exporter(
        "konubench-cloze",
        "Thunder-KoNUBench cloze-style SFT data (output: the standard negation)",
        partial(export_records, "cloze"),
    ),
    Exporter(
        "konubench-symbol",
        "Thunder-KoNUBench symbol-style SFT data (output: 'A. <standard negation>')",
        partial(export_records, "symbol"),
    ),
)


#: ``konubench-symbol[target=…]``: what the symbol-style response is.
SYMBOL_TARGETS = ("letter", "letter-negation")


def _letter_only(r: dict) -> dict:
    """``"A. 그는 …"`` → ``"A"`` (the symbol format answers the letter)."""
    letter, sep, _ = r["output"].partition(".")
    return {**r, "output": letter if sep and len(letter) == 1 else r["output"]}


def symbol_selection(options: dict[str, str], split: str) -> TrainingSelection:
    """``konubench-symbol[target=letter]`` as ``negbench train --data``: the letter alone (the
    paper's symbol format) or, by default, the official ``'{letter}. {standard negation}'``."""
    target = options.pop("target", None)
    if target is None:
        return TrainingSelection(split)
    if target not in SYMBOL_TARGETS:
        raise OptionError(
            f"konubench-symbol: target={target!r}",
            where="--data",
            fix="target=letter (the answer letter) or target=letter-negation "
            "(the official '{letter}. {standard negation}')",
        )
    return TrainingSelection(split, transform=_letter_only if target == "letter" else None)


def register(r) -> None:
    """Called by the registry the first time exporters are asked for."""
    for e in EXPORTERS:
        r.add("exporter", e.name, e)
