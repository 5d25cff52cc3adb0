"""Human-evaluation sheets as a benchmark declares them (registry kind ``sheet``): the
:class:`Sheet` a benchmark folder registers, the seeded (stratified) sample of items, the answer-sheet
layout of Thunder-KoNUBench §4.3 and the reading of filled CSV files.  Writing and scoring a sheet
for a task by name is :mod:`negbench.builders.human_eval`'s."""

from __future__ import annotations

import csv
import os
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Sequence

from negbench.errors import DataError, TaskError

#: The answer-sheet layout (Thunder-KoNUBench §4.3): what people fill, and the organiser's key.
SHEET_FIELDS = ("item", "original_sentence", "A", "B", "C", "D", "answer")
KEY_FIELDS = ("item", "idx", "gold", "option_types")
LETTERS = "ABCD"
#: Items of a sheet for a task without a paper's sheet (Thunder-KoNUBench §4.3's 50).
DEFAULT_N = 50


@dataclass(frozen=True)
class Sheet:
    """A benchmark's human-evaluation sheet (registry kind ``sheet``): ``judge`` or ``answer``,
    the items drawn by default, the fields ``--stratify`` takes, how to write it and — for a
    kind other than ``answer`` — how to score filled copies (key, filled) -> (result, text)."""

    kind: str
    default_n: int
    strata: tuple[str, ...]
    write: Callable[[str | os.PathLike, int, int, str | None, str | None], dict[str, Path]]
    score: Callable[[str | os.PathLike, Sequence[str | os.PathLike]], tuple[dict, str]] | None = (
        None
    )


# -- sampling -------------------------------------------------------------------------------------
def seeded_sample(strata: Sequence[Hashable], n: int, seed: int, stratified: bool) -> list[int]:
    """``n`` indices of ``strata`` (one stratum value per record), in record order.

    Unstratified: ``random.Random(seed).sample``.  Stratified: when ``n`` allows, every stratum
    gets one item (a small pattern is not left out), and the rest of ``n`` is shared in proportion
    to the strata's remaining sizes (largest remainder, ties to the larger stratum; never more
    than a stratum has); with fewer items than strata, plain proportional shares.  Each stratum
    is drawn with its own ``random.Random(f"{seed}-{stratum}")``."""
    total = len(strata)
    if not stratified:
        return sorted(random.Random(seed).sample(range(total), n))
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, s in enumerate(strata):
        groups[s].append(i)
    keys = sorted(groups, key=str)
    base = 1 if n >= len(keys) else 0
    size = {k: len(groups[k]) - base for k in keys}
    share, pool = n - base * len(keys), total - base * len(keys)
    quota = {k: base + (share * size[k] // pool if pool else 0) for k in keys}
    rest = n - sum(quota.values())
    by_rem = sorted(
        keys, key=lambda k: (-(share * size[k] % pool if pool else 0), -size[k], str(k))
    )
    for k in by_rem[:rest]:
        quota[k] += 1
    out: list[int] = []
    for k in keys:
        out += random.Random(f"{seed}-{k}").sample(groups[k], min(quota[k], len(groups[k])))
    return sorted(out)


def check_n(n: int, available: int, what: str) -> None:
    if not 1 <= n <= available:
        raise TaskError(
            f"--n {n}: {what} has {available} items", where="--n", fix=f"1 … {available}"
        )


# -- answer sheets (NUBench items, as Thunder-KoNUBench Table 7) ----------------------------------
def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence]) -> None:
    from negbench.files import atomic_write_text
    import io

    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def write_answer_sheet(
    items: Sequence[dict],
    out_dir: str | os.PathLike,
    title: str,
    intro: Sequence[str],
    text_column: str = "original_sentence",
    text_label: str = "Sentence",
) -> dict[str, Path]:
    """The KoNUBench sheet layout (:data:`negbench.tasks.konubench.tasks.SHEET_FIELDS` /
    ``KEY_FIELDS``) for other multiple-choice items, so one scorer reads both (it reads only
    ``item`` and ``answer`` of a sheet; the text column may be named for what it holds)."""
    from negbench.files import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"sheet": out / "sheet.csv", "markdown": out / "sheet.md", "key": out / "key.csv"}
    write_csv(
        paths["sheet"],
        (SHEET_FIELDS[0], text_column, *SHEET_FIELDS[2:]),
        [
            [
                it["item"],
                it["original_sentence"],
                *(it["options"] + [""] * (4 - len(it["options"]))),
                "",
            ]
            for it in items
        ],
    )
    write_csv(
        paths["key"],
        KEY_FIELDS,
        [[it["item"], it["idx"], it["gold"], "+".join(it["option_types"])] for it in items],
    )
    md = [
        f"# {title} ({len(items)} items)",
        "",
        *intro,
        "",
        "Write the letter of your answer in the `answer` column of sheet.csv.",
        "",
    ]
    for it in items:
        md += [f"## {it['item']}", "", f"{text_label}: {it['original_sentence']}", ""]
        md += [f"{LETTERS[j]}. {t}" for j, t in enumerate(it["options"])] + ["", "Answer: ____", ""]
    atomic_write_text(paths["markdown"], "\n".join(md))
    return paths


def read_rows(path: Path, need: Sequence[str], what: str) -> tuple[list[str], list[dict]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DataError(f"not a readable CSV file ({exc})", path=str(path)) from None
    for k in need:
        if k not in header:
            raise DataError(
                f"no '{k}' column",
                path=str(path),
                field=k,
                fix=f"use the {what} written by 'negbench human-eval sheet'",
            )
    return header, rows


def annotator_names(paths: Sequence[str | os.PathLike]) -> list[str]:
    """File stems, or the paths themselves when two stems are the same (a/sheet.csv, b/sheet.csv)."""
    stems = [Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else [str(p) for p in paths]
