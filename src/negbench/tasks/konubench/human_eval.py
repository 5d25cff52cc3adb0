"""Thunder-KoNUBench §4.3 human evaluation: the answer sheet of 50 test items (Table 7 is scored
by :func:`negbench.builders.human_eval.score_answer_sheets`)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from negbench.scoring.sheets import KEY_FIELDS, SHEET_FIELDS, Sheet
from negbench.errors import TaskError
from negbench.tasks.konubench.tasks import (
    DESCRIPTION,
    LETTERS,
    SYMBOL_INSTRUCTION,
    load_split,
    render_symbol,
    shuffled_options,
)

#: §4.3: ten participants, 50 test questions drawn at random, 2 points per correct answer (out of
#: 100); Table 7 reports the Max, Min, Median and Average of the participants' scores.
HUMAN_ITEMS = 50
HUMAN_SEED = 0  # the paper gives no seed: ours


def human_sheet_items(
    n: int = HUMAN_ITEMS, seed: int = HUMAN_SEED, source: str | os.PathLike | None = None
) -> list[dict]:
    """``n`` test items drawn with ``random.Random(seed).sample`` (in test-file order), each with
    its options in the official symbol order (the order the models see) and the gold letter."""
    docs = load_split("test", source)
    if not 1 <= n <= len(docs):
        raise TaskError(
            f"--n {n}: the test split has {len(docs)} items", where="--n", fix=f"1 … {len(docs)}"
        )
    picked = sorted(random.Random(seed).sample(range(len(docs)), n))
    out = []
    for k, i in enumerate(picked, 1):
        d = docs[i]
        r = render_symbol(d)
        assert isinstance(r.gold, int)
        opts = [t for _, t in shuffled_options(d)]
        out.append(
            {
                "item": k,
                "idx": d["idx"],
                "original_sentence": d["original_sentence"],
                "options": opts,
                "gold": LETTERS[r.gold],
                "option_types": r.meta["option_types"],
            }
        )
    return out


def write_human_sheet(
    out_dir: str | os.PathLike,
    n: int = HUMAN_ITEMS,
    seed: int = HUMAN_SEED,
    source: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """``sheet.csv`` (for the participants: sentence, options A–D, an empty ``answer``),
    ``sheet.md`` (the same, printable, with the task's instruction and description) and
    ``key.csv`` (gold letters; keep it from the participants)."""
    import csv

    items = human_sheet_items(n, seed, source)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"sheet": out / "sheet.csv", "markdown": out / "sheet.md", "key": out / "key.csv"}
    with open(paths["sheet"], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(SHEET_FIELDS)
        for it in items:
            opts = it["options"] + [""] * (4 - len(it["options"]))
            w.writerow([it["item"], it["original_sentence"], *opts, ""])
    with open(paths["key"], "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(KEY_FIELDS)
        for it in items:
            w.writerow([it["item"], it["idx"], it["gold"], "+".join(it["option_types"])])
    md = [
        f"# Thunder-KoNUBench human evaluation ({len(items)} items, seed {seed})",
        "",
        SYMBOL_INSTRUCTION,
        "",
        DESCRIPTION.strip(),
        "",
        "Write the letter of your answer in the `answer` column of sheet.csv.",
        "",
    ]
    for it in items:
        md += [f"## {it['item']}", "", f"원문: {it['original_sentence']}", ""]
        md += [f"{LETTERS[j]}. {t}" for j, t in enumerate(it["options"])] + ["", "답: ____", ""]
    paths["markdown"].write_text("\n".join(md), encoding="utf-8")
    return paths


def write(
    out_dir: str | os.PathLike, n: int, seed: int, source: str | None, stratify: str | None
) -> dict[str, Path]:
    return write_human_sheet(out_dir, n, seed, source)


SHEET = Sheet("answer", HUMAN_ITEMS, (), write)
