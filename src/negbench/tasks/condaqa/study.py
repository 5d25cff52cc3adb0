"""CONDAQA few-shot studies of App. C.2: how the demonstrations are sampled (Table 8) and how many
fit in the context (Table 9), as options of the split tasks::

    condaqa-split1[sampling=groups4]          # Table 8, strategy 3, shots from the pool
    condaqa-split1[ctx=4000]                  # Table 9, as many shots as fit in 4,000 tokens

Options: ``sampling`` = ``random`` (strategy 1) | ``no-affirmative`` (2) | ``groups4`` (3) |
``groups3`` (4); ``pool`` = ``train`` | ``dev`` | ``shots`` (the split's 9 released shots); ``ctx``
= a context budget in tokens.  The draw is one seeded draw per split (``--seeds``), used for every
test item, as the paper does ("we sample 9 paragraph-question pairs ... and use these samples for
all few-shot experiments"); with ``ctx`` each item keeps the longest prefix of that draw that fits.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Sequence

from negbench.errors import TaskError
from negbench.scoring.metrics import mean
from negbench.scoring.task import Doc, Task

#: sampling option -> the paper's strategy number (App. C.2 list; Table 8 rows)
STRATEGIES = {"random": 1, "no-affirmative": 2, "groups4": 3, "groups3": 4}
#: records per group: strategy 3 shows a question with its 4 paragraphs (original and three edits),
#: strategy 4 with 3 (original, paraphrase, scope; no affirmative)
GROUP_EDITS = {"groups4": (0, 1, 2, 3), "groups3": (0, 1, 2)}
POOLS = ("train", "dev", "shots")
OPTIONS = ("sampling", "pool", "ctx")
#: OpenAI's rule of thumb for English (about 4 characters a token): GPT-3's tokenizer is not
#: available offline; the paper's averages (8–9 shots in 2,045 tokens, 17–18 in 4,000) follow.
CHARS_PER_TOKEN = 4

#: Table 8 (GPT-3 davinci, one test split): strategy -> (acc, cons, para, scope, affirm)
PAPER_TABLE8 = {
    1: (52.81, 6.62, 49.83, 21.95, 21.95),
    2: (51.42, 5.57, 44.95, 21.25, 26.48),
    3: (50.31, 4.88, 40.07, 18.12, 25.78),
}
#: Table 9 (text-davinci-002, one test split): max sequence length -> the same columns
PAPER_TABLE9 = {
    2045: (60.88, 20.30, 63.92, 36.40, 33.98),
    4000: (59.70, 20.42, 62.94, 36.04, 34.38),
}

_SPLIT_TASK = re.compile(r"^condaqa-split([1-5])$")


def est_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def complete_groups(pool: Sequence[Doc], edits: Sequence[int]) -> list[list[Doc]]:
    """Groups (PassageID, QuestionID) of the pool holding one record for each of ``edits``, the
    records in edit order; groups in order of first appearance."""
    by: dict[tuple, dict[int, Doc]] = {}
    for d in pool:
        by.setdefault((d["PassageID"], str(d["QuestionID"])), {})[d["PassageEditID"]] = d
    return [[g[e] for e in edits] for g in by.values() if all(e in g for e in edits)]


def draw_shots(strategy: str, pool: Sequence[Doc], k: int, rnd: random.Random) -> list[Doc]:
    """One draw of ``k`` demonstrations by a Table 8 strategy.  Group strategies take
    ⌈k / group size⌉ random complete groups (members kept together, in edit order; the groups in
    drawn order) and cut the last group to reach exactly ``k``."""
    if strategy == "random":
        return rnd.sample(list(pool), k)
    if strategy == "no-affirmative":
        cand = [d for d in pool if d["PassageEditID"] != 3]
        if k > len(cand):
            raise TaskError(
                f"{k} shots asked but the pool has {len(cand)} non-affirmative records",
                where="--shots",
                fix=f"use at most {len(cand)} shots",
            )
        return rnd.sample(cand, k)
    edits = GROUP_EDITS[strategy]
    groups = complete_groups(pool, edits)
    need = math.ceil(k / len(edits))
    if need > len(groups):
        raise TaskError(
            f"sampling={strategy} needs {need} complete groups for {k} shots; the pool "
            f"has {len(groups)}",
            where="--tasks",
            fix="use pool=dev or pool=train (the 9 released shots hold no groups)",
        )
    return [d for g in rnd.sample(groups, need) for d in g][:k]


def shot_block(d: Doc) -> str:
    """The Figure 5 text one demonstration adds to the prompt."""
    from negbench.tasks.condaqa.tasks import FEWSHOT_DELIMITER, TARGET_DELIMITER, render_query

    return (
        render_query(d["passage"], d["question"])
        + TARGET_DELIMITER
        + d["answer"]
        + FEWSHOT_DELIMITER
    )


def shots_that_fit(shots: Sequence[Doc], item: Doc, ctx: int) -> int:
    """How many leading ``shots`` fit with ``item`` in ``ctx`` tokens, leaving room for the answer
    (``MAX_TOKENS``): description + shots + query, estimated at :data:`CHARS_PER_TOKEN`."""
    from negbench.tasks.condaqa.tasks import MAX_TOKENS, description, render_query

    used = est_tokens(description() + render_query(item["passage"], item["question"])) + MAX_TOKENS
    n = 0
    for d in shots:
        used += est_tokens(shot_block(d))
        if used > ctx:
            break
        n += 1
    return n


def make_sampler(strategy: str, ctx: int | None = None):
    """A ``Task.fewshot_sampler``: one seeded draw per trial; with ``ctx`` each item keeps the
    prefix of the draw that fits."""

    def sampler(
        docs: Sequence[Doc], pool: Sequence[Doc], k: int, seed: int | None
    ) -> Iterator[list[Doc]]:
        shots = draw_shots(strategy, pool, k, random.Random(seed))
        for d in docs:
            yield shots if ctx is None else shots[: shots_that_fit(shots, d, ctx)]

    return sampler


def parse_options(options: dict[str, str]) -> dict[str, object]:
    """Validated options with defaults: sampling=random, pool=train when a train file is present
    else dev, ctx=None (no budget)."""
    bad = sorted(set(options) - set(OPTIONS))
    if bad:
        raise TaskError(
            f"unknown CONDAQA study option(s) {', '.join(bad)}",
            where="--tasks",
            fix="options: sampling=random|no-affirmative|groups4|groups3, "
            "pool=train|dev|shots, ctx=<tokens>",
        )
    sampling = options.get("sampling", "random")
    if sampling not in STRATEGIES:
        raise TaskError(
            f"unknown sampling '{sampling}'",
            where="--tasks",
            fix="sampling=" + "|".join(STRATEGIES),
        )
    pool = options.get("pool") or _default_pool()
    if pool not in POOLS:
        raise TaskError(f"unknown pool '{pool}'", where="--tasks", fix="pool=" + "|".join(POOLS))
    ctx_text = options.get("ctx")
    ctx: int | None = None
    if ctx_text is not None:
        if not ctx_text.isdigit() or int(ctx_text) < 256:
            raise TaskError(
                f"ctx must be a number of tokens ≥ 256, not '{ctx_text}'",
                where="--tasks",
                fix="e.g. ctx=2045 or ctx=4000 (Table 9)",
            )
        ctx = int(ctx_text)
    return {"sampling": sampling, "pool": pool, "ctx": ctx}


def _default_pool() -> str:
    from negbench.tasks.condaqa.tasks import OFFICIAL_FILES, default_source

    src = default_source()
    return (
        "train" if Path(src).is_dir() and (Path(src) / OFFICIAL_FILES["train"]).is_file() else "dev"
    )


def default_shots(sampling: str, ctx: int | None) -> int:
    """8 for strategy 3 (two groups of four), else 9; with a budget, 9 per 2,045 tokens (the
    paper's 8–9 and 17–18), so the budget decides how many are shown."""
    base = 8 if sampling == "groups4" else 9
    return base if ctx is None else max(base, round(9 * ctx / 2045))


def canonical_name(base: str, opts: dict[str, object]) -> str:
    parts = [f"{k}={opts[k]}" for k in sorted(opts) if opts[k] is not None]
    return f"{base}[{','.join(parts)}]"


def make_task(base: Task, options: dict[str, str]) -> Task:
    """``condaqa-split{i}[…]``: the split task with a study sampler and few-shot pool."""
    m = _SPLIT_TASK.match(base.name)
    if not m:
        raise TaskError(
            f"study options apply to condaqa-split1..5, not '{base.name}'", where="--tasks"
        )
    opts = parse_options(options)
    i = int(m.group(1))
    pool = f"shots{i}" if opts["pool"] == "shots" else str(opts["pool"])
    k = default_shots(str(opts["sampling"]), opts["ctx"])  # type: ignore[arg-type]
    strategy = STRATEGIES[str(opts["sampling"])]
    return replace(
        base,
        name=canonical_name(base.name, opts),
        summary=f"CONDAQA test split {i}, App. C.2 study: strategy {strategy} "
        f"({opts['sampling']}) from {pool}"
        + (f", shots that fit in {opts['ctx']} tokens" if opts["ctx"] else ""),
        fewshot_split=pool,
        fewshot_sampler=make_sampler(str(opts["sampling"]), opts["ctx"]),  # type: ignore[arg-type]
        default_shots=(k,),
        protocol_shots=(k,),
        protocol_seeds=(1234,),
    )


# -- Tables 8-9 from a run ---------------------------------------------------------------------
COLUMNS = (
    "accuracy",
    "consistency",
    "consistency_paraphrase",
    "consistency_scope",
    "consistency_affirmative",
)
_STUDY_TASK = re.compile(r"^condaqa-split([1-5])\[(.*)\]$")


def study_rows(results: dict) -> list[dict]:
    """One row per (options, mode, shots) of the run's study tasks: the metrics averaged over
    seeds, then over splits (the paper reports one split; more splits are averaged)."""
    cells: dict[tuple, dict[int, list[dict]]] = {}
    for u in results.get("units", {}).values():
        m = _STUDY_TASK.match(str(u.get("task", "")))
        if not m:
            continue
        key = (m.group(2), u["mode"], u["shots"])
        cells.setdefault(key, {}).setdefault(int(m.group(1)), []).append(u["metrics"])
    rows = []
    for (opts, mode, shots), per_split in sorted(cells.items()):
        o = dict(p.split("=", 1) for p in opts.split(",") if "=" in p)
        split_means = [
            {
                c: mean([float(x[c]) for x in ms if isinstance(x.get(c), (int, float))])
                for c in COLUMNS + ("accuracy_normalized",)
            }
            for ms in per_split.values()
        ]
        rows.append(
            {
                "options": o,
                "mode": mode,
                "shots": shots,
                "splits": sorted(per_split),
                "n": sum(int(x.get("n", 0)) for ms in per_split.values() for x in ms[:1]),
                **{
                    c: mean([s[c] for s in split_means]) for c in COLUMNS + ("accuracy_normalized",)
                },
            }
        )
    return rows


def table8_9(results: dict) -> str | None:
    """Markdown: our study rows beside the paper's Tables 8 and 9 (percent)."""
    rows = study_rows(results)
    if not rows:
        return None
    head = [
        "setting",
        "strategy",
        "ctx",
        "pool",
        "mode",
        "shots",
        "splits",
        "n",
        "acc",
        "cons",
        "para",
        "scope",
        "affirm",
        "acc normalised (ours)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def pct(v: float) -> str:
        return f"{100 * v:.2f}" if v == v else "–"

    for r in rows:
        o = r["options"]
        lines.append(
            "| "
            + " | ".join(
                [
                    "ours",
                    f"{STRATEGIES.get(o.get('sampling', 'random'), '?')} ({o.get('sampling', 'random')})",
                    o.get("ctx", "–"),
                    o.get("pool", "–"),
                    r["mode"],
                    str(r["shots"]),
                    ",".join(map(str, r["splits"])),
                    str(r["n"]),
                ]
                + [pct(r[c]) for c in COLUMNS]
                + [pct(r["accuracy_normalized"])]
            )
            + " |"
        )
    for s, vals in PAPER_TABLE8.items():
        lines.append(
            "| "
            + " | ".join(
                [
                    "Table 8, GPT-3 (paper)",
                    str(s),
                    "2045",
                    "train",
                    "generate",
                    "8–9",
                    "1 split",
                    "~1440",
                ]
                + [f"{v:.2f}" for v in vals]
                + ["–"]
            )
            + " |"
        )
    for c, vals in PAPER_TABLE9.items():
        lines.append(
            "| "
            + " | ".join(
                [
                    "Table 9, InstructGPT (paper)",
                    "1",
                    str(c),
                    "train",
                    "generate",
                    "8–9" if c == 2045 else "17–18",
                    "1 split",
                    "~1440",
                ]
                + [f"{v:.2f}" for v in vals]
                + ["–"]
            )
            + " |"
        )
    return "\n".join(lines)
