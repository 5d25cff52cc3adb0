"""Human-evaluation sheets for a sample of a released or built set, and their scores.

Two kinds of sheet, one per paper that reports a human evaluation:

* **judge** (This is not a Dataset §3.2, Table 3): people read each sentence and answer four
  questions; the sheet and its scorer are :mod:`negbench.tasks.notadataset.human_eval`'s.
* **answer** (Thunder-KoNUBench §4.3, Table 7): people answer the benchmark's own
  multiple-choice items; 100 / n points per right letter; Max / Min / Median / Average
  (:func:`score_answer_sheets`).  KoNUBench and NUBench items (released, or built by
  ``negbench build mcq``) and any registered multiple-choice task use the same columns.

Benchmarks register their :class:`Sheet` (registry kind ``sheet``); this module holds the
sampling, the answer-sheet layout, the reading of filled sheets and the dispatch.

A sheet never holds the labels: ``sheet.csv`` / ``sheet.md`` go to people, ``key.csv`` stays
with the organiser.  Every filled sheet is checked (ids, one answer per question, allowed values)
before anything is printed.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Sequence

from negbench.errors import DataError, OptionError, TaskError
from negbench.scoring.sheets import (
    DEFAULT_N,
    KEY_FIELDS,
    LETTERS,
    Sheet,
    check_n,
    read_rows,
    seeded_sample,
    write_answer_sheet,
)


def sheets() -> dict[str, Sheet]:
    """Every task with a paper's sheet (the benchmark homes register them)."""
    from negbench.scoring.registry import REGISTRY

    return REGISTRY.entries("sheet")


def _check_stratify(task: str, strata: Sequence[str], stratify: str | None) -> None:
    if stratify and stratify not in strata:
        raise OptionError(
            f"--stratify {stratify}: not a field of {task}",
            where="--stratify",
            fix=("one of " + ", ".join(strata))
            if strata
            else f"drop --stratify ({task} is drawn at random, as its paper did)",
        )


def choice_mode(task) -> tuple[str, Any]:
    """The first mode of ``task`` (its defaults first) that scores a choice among 2–4 options:
    people answer what that mode asks the model."""
    names = list(dict.fromkeys([*task.default_modes, *task.modes]))
    for name in names:
        if getattr(task.modes[name].formulation, "kind", "") in ("loglikelihood", "next_token"):
            return name, task.modes[name]
    raise TaskError(
        f"task '{task.name}' has no multiple-choice mode to put on a sheet",
        where="--task",
        fix="modes: " + ", ".join(names) + "; sheets are for "
        "tasks whose items have options (or notadataset / nubench / konubench)",
    )


def generic_items(task_name: str, n: int, seed: int) -> tuple[list[dict], str]:
    """``n`` test items of any registered multiple-choice task, rendered zero-shot by its
    choice mode (the prompt the model sees, its options, the gold option); and the mode name.
    Option texts are shuffled per item (seeded); letter options stay as the prompt lists them.
    ``option_types`` in the key name each shown option's position in the task's own order."""
    from negbench.tasks import get_task

    task = get_task(task_name)
    mode, spec = choice_mode(task)
    docs = [d for d in task.load(task.test_split) if spec.include is None or spec.include(d)]
    check_n(n, len(docs), f"the {task.test_split} split of {task.name} ({mode} mode)")
    out = []
    for k, i in enumerate(seeded_sample([0] * len(docs), n, seed, False), 1):
        r = spec.render(docs[i])
        if not isinstance(r.gold, int) or not 2 <= len(r.choices) <= len(LETTERS):
            raise TaskError(
                f"item {docs[i].id} of {task.name} has {len(r.choices)} options "
                f"(gold {r.gold!r}); a sheet takes 2–{len(LETTERS)} with one right",
                where="--task",
            )
        order = list(range(len(r.choices)))
        if not all(c.strip() in LETTERS for c in r.choices):
            # a cloze mode lists its options in a fixed order (often the gold first), which a
            # model never sees but a person would: shuffled per item, seeded
            random.Random(f"{seed}-{docs[i].id}").shuffle(order)
        out.append(
            {
                "item": k,
                "idx": docs[i].id,
                "original_sentence": r.query,
                "options": [r.choices[j] for j in order],
                "gold": LETTERS[order.index(r.gold)],
                "option_types": [f"option{j + 1}" for j in order],
            }
        )
    return out, mode


def write_sheet(
    task: str,
    out_dir: str | os.PathLike,
    n: int | None = None,
    seed: int = 0,
    source: str | None = None,
    stratify: str | None = None,
) -> dict[str, Path]:
    """Draw the sample of ``task`` and write its sheet, printable sheet and key.  Tasks without
    a paper's sheet get a Table 7-style sheet of their multiple-choice mode (:func:`generic_items`)."""
    known = sheets()
    if task not in known:
        if source is not None or stratify:
            flag = "--source" if source is not None else "--stratify"
            raise OptionError(
                f"{flag} is for " + ", ".join(known),
                where=flag,
                fix=f"drop {flag}; other tasks take their data as 'negbench run' "
                "does (environment variables, task options)",
            )
        items, mode = generic_items(task, DEFAULT_N if n is None else n, seed)
        return write_answer_sheet(
            items,
            out_dir,
            f"{task} human evaluation ({mode} mode, seed {seed})",
            ["Choose the answer to each prompt."],
            text_column="prompt",
            text_label="Prompt",
        )
    sheet = known[task]
    _check_stratify(task, sheet.strata, stratify)
    return sheet.write(out_dir, sheet.default_n if n is None else n, seed, source, stratify)


# -- reading filled sheets ------------------------------------------------------------------------
def key_kind(key: str | os.PathLike) -> str:
    """``judge`` or ``answer``, from the key's columns."""
    header, _ = read_rows(Path(key), ("item",), "key.csv")
    if "label" in header:
        return "judge"
    if "gold" in header and "option_types" in header:
        return "answer"
    raise DataError(
        "neither a judge key (label column) nor an answer key (gold, option_types)",
        path=str(key),
        fix="use the key.csv written by 'negbench human-eval sheet'",
    )


def score(key: str | os.PathLike, filled: Sequence[str | os.PathLike]) -> tuple[dict, str]:
    """Score filled sheets against their key: (result, printable text).  The key's columns say
    the kind: answer keys get Table 7 (:func:`score_answer_sheets`), judge keys the scorer of
    the benchmark whose sheet asks questions (This is not a Dataset's Table 3)."""
    kind = key_kind(key)
    if kind == "answer":
        res = score_answer_sheets(key, filled)
        return res, format_table7(res)
    scorer = next(s.score for s in sheets().values() if s.kind == kind and s.score)
    return scorer(key, filled)


# -- answer sheets: Thunder-KoNUBench Table 7 -----------------------------------------------------
def _read_csv(path: Path, need: Sequence[str]) -> list[dict]:
    return read_rows(path, need, "sheet.csv / key.csv")[1]


def score_answer_sheets(key: str | os.PathLike, filled: Sequence[str | os.PathLike]) -> dict:
    """Each filled sheet is one participant (named by its file stem): 100 / n points per correct
    letter (2 for 50 items; a blank answer scores 0), and Table 7 over the participants."""
    import statistics

    key_rows = _read_csv(Path(key), KEY_FIELDS)
    gold = {r["item"]: r for r in key_rows}
    if not gold:
        raise DataError("the key has no items", path=str(key))
    per = {}
    for p in map(Path, filled):
        rows = _read_csv(p, ("item", "answer"))
        seen = set()
        right = blank = 0
        for n, r in enumerate(rows, 2):
            it = r["item"]
            if it not in gold:
                raise DataError(
                    f"item {it!r} is not in the key {key}",
                    path=str(p),
                    record=f"line {n}",
                    field="item",
                )
            if it in seen:
                raise DataError(
                    f"item {it} answered twice", path=str(p), record=f"line {n}", field="item"
                )
            seen.add(it)
            ans = r["answer"].strip().upper()
            n_opt = len(gold[it]["option_types"].split("+"))
            if not ans:
                blank += 1
            elif ans not in LETTERS[:n_opt]:
                raise DataError(
                    f"answer {r['answer']!r} is not an option letter",
                    path=str(p),
                    record=f"line {n}",
                    field="answer",
                    fix="one of " + ", ".join(LETTERS[:n_opt]) + " (or leave it blank)",
                )
            right += ans == gold[it]["gold"]
        if seen != set(gold):
            missing = sorted(set(gold) - seen, key=int)
            raise DataError(
                f"items missing: {', '.join(missing[:10])}",
                path=str(p),
                fix="the sheet must hold every item of the key",
            )
        per[p.stem] = {"correct": right, "blank": blank, "score": 100 * right / len(gold)}
    scores = [v["score"] for v in per.values()]
    return {
        "items": len(gold),
        "participants": per,
        "table7": {
            "Max": max(scores),
            "Min": min(scores),
            "Median": statistics.median(scores),
            "Average": statistics.mean(scores),
        },
    }


def format_table7(res: dict) -> str:
    t = res["table7"]
    lines = ["| participant | correct | blank | score |", "|---|---:|---:|---:|"]
    lines += [
        f"| {k} | {v['correct']} / {res['items']} | {v['blank']} | {v['score']:.1f} |"
        for k, v in res["participants"].items()
    ]
    return (
        "\n".join(lines) + "\n\nTable 7 (human evaluation):\n\n| Max | Min | Median | Average |\n"
        "|---:|---:|---:|---:|\n" + f"| {t['Max']:.1f} | {t['Min']:.1f} | {t['Median']:.1f} | "
        f"{t['Average']:.1f} |"
    )
