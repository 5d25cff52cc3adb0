"""Built-in tasks written by the negbench authors (no download needed), and user JSONL tasks.

``negation-mini``: 48 hand-written items in the Thunder-NUBench design (standard negation is
gold; local negation, contradiction and paraphrase are distractors); 8 form the few-shot split.
``truefalse-mini``: 32 affirmative/negated true-false pairs in the This-is-not-a-Dataset style.
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

from negbench.scoring.formulations import (
    ChoiceLoglikelihood,
    Generation,
    NextTokenLabels,
    first_letter,
)
from negbench.records import field, iter_jsonl
from negbench.errors import DataError
from negbench.scoring.negation_errors import error_analysis, format_error_table
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task

DATA = Path(__file__).resolve().parent / "data"
LETTERS = "ABCDEFGHIJ"
LOCAL_TYPES = {"relative_part", "pp_part", "adverb_part", "compound_part", "non-applicable"}


# -- negation-mini ----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _negation_mini() -> tuple[Doc, ...]:
    path = str(DATA / "negation_mini.jsonl")
    docs = []
    for n, obj in iter_jsonl(path):
        rec = f"line {n}"
        rid = field(obj, "id", str, path=path, record=rec)
        f = {
            k: field(obj, k, str, path=path, record=rid)
            for k in ("sentence", "standard_negation", "contradiction", "paraphrase")
        }
        f["local_negation_type"] = field(obj, "local_negation_type", str, path=path, record=rid)
        if f["local_negation_type"] not in LOCAL_TYPES:
            raise DataError(
                f"unknown local_negation_type {f['local_negation_type']!r}",
                path=path,
                record=rid,
                field="local_negation_type",
                fix="one of " + ", ".join(sorted(LOCAL_TYPES)),
            )
        f["local_negation"] = field(
            obj, "local_negation", str, path=path, record=rid, optional=True
        )
        docs.append(Doc(rid, f, path))
    return tuple(docs)


def _nm_split(split: str) -> list[Doc]:
    docs = list(_negation_mini())
    return {"dev": docs[:8], "test": docs[8:]}[split]


def _nm_options(d: Doc) -> tuple[list[str], list[str]]:
    """Options in canonical order and their types (local negation dropped when absent)."""
    opts = [
        ("standard", d["standard_negation"]),
        ("local", d["local_negation"]),
        ("contradiction", d["contradiction"]),
        ("paraphrase", d["paraphrase"]),
    ]
    opts = [(t, o) for t, o in opts if o]
    return [o for _, o in opts], [t for t, _ in opts]


def _nm_cloze(d: Doc) -> Rendered:
    opts, types = _nm_options(d)
    return Rendered(
        f"Negate the sentence.\nSentence: {d['sentence']}\nNegation:",
        opts,
        0,
        meta={"option_types": types, "local_negation_type": d["local_negation_type"]},
    )


def _nm_letter(d: Doc) -> Rendered:
    opts, types = _nm_options(d)
    order = list(range(len(opts)))
    random.Random(int(d.id.split("-")[1])).shuffle(order)  # fixed per item
    lines = "".join(f"{LETTERS[i]}. {opts[j]}\n" for i, j in enumerate(order))
    gold = order.index(0)
    letters = list(LETTERS[: len(opts)])
    q = (
        "Choose the option that negates the main clause of the sentence.\n"
        f"Sentence: {d['sentence']}\n{lines}Answer:"
    )
    return Rendered(
        q,
        letters,
        gold,
        meta={
            "option_types": [types[j] for j in order],
            "local_negation_type": d["local_negation_type"],
        },
    )


def _nm_generate(d: Doc) -> Rendered:
    r = _nm_letter(d)
    assert isinstance(r.gold, int)  # the letter mode's gold is an index
    return Rendered(r.query, r.choices, r.choices[r.gold], meta=r.meta)


def _choice_errors(mode: str, records: list[dict]) -> dict:
    """Which wrong option type the model prefers (NUBench Table 6 style)."""
    return {"error_analysis": error_analysis(records, "pred", subtype_key="local_negation_type")}


def _error_table(mode: str, rows: list[tuple[str, dict]]) -> str:
    return format_error_table(
        [(n, m["error_analysis"]) for n, m in rows],
        ["relative_part", "pp_part", "adverb_part", "compound_part"],
    )


NEGATION_MINI = Task(
    name="negation-mini",
    summary="48 hand-written sentence-negation items, NUBench design: 40 scored (test), the "
    "first 8 (nm-001..nm-008) the few-shot pool (dev) (built in, English)",
    load=_nm_split,
    test_split="test",
    fewshot_split="dev",
    modes={
        "cloze": ModeSpec(
            _nm_cloze, ChoiceLoglikelihood(), "log-likelihood of each option sentence"
        ),
        "letter": ModeSpec(
            _nm_letter,
            ChoiceLoglikelihood(metrics=("acc",)),
            "log-likelihood of each option letter",
        ),
        "generate": ModeSpec(
            _nm_generate,
            Generation(stop=("\n",), max_tokens=8, extract=first_letter("ABCD")),
            "greedy generation of the letter, first [A-D] match",
        ),
    },
    default_modes=("cloze", "letter"),
    extra_metrics=_choice_errors,
    tables=_error_table,
    source="written by the negbench authors",
    structure=Structure(stratum="local_negation_type", stratum_name="local-negation type"),
)


# -- truefalse-mini ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _truefalse_mini() -> tuple[Doc, ...]:
    path = str(DATA / "truefalse_mini.jsonl")
    docs = []
    for n, obj in iter_jsonl(path):
        rid = field(obj, "id", str, path=path, record=f"line {n}")
        docs.append(
            Doc(
                rid,
                {
                    "pair": field(obj, "pair", int, path=path, record=rid),
                    "sentence": field(obj, "sentence", str, path=path, record=rid),
                    "negated": field(obj, "negated", bool, path=path, record=rid),
                    "label": field(obj, "label", bool, path=path, record=rid),
                },
                path,
            )
        )
    return tuple(docs)


def _tf_split(split: str) -> list[Doc]:
    docs = list(_truefalse_mini())
    return {"dev": [d for d in docs if d["pair"] <= 4], "test": [d for d in docs if d["pair"] > 4]}[
        split
    ]


def _tf_render(d: Doc) -> Rendered:
    return Rendered(
        f"Is the following statement True or False? {d['sentence']}",
        ["True", "False"],
        0 if d["label"] else 1,
        meta={"pair": d["pair"], "negated": d["negated"]},
    )


def _tf_metrics(mode: str, records: list[dict]) -> dict:
    from negbench.scoring.metrics import mean

    aff = [r["acc"] for r in records if not r["meta"]["negated"]]
    neg = [r["acc"] for r in records if r["meta"]["negated"]]
    pairs: dict[int, list[float]] = {}
    for r in records:
        pairs.setdefault(r["meta"]["pair"], []).append(r["acc"])
    full = [v for v in pairs.values() if len(v) == 2]
    return {
        "acc_affirmative": mean(aff),
        "acc_negated": mean(neg),
        "pair_consistency": mean([float(all(v)) for v in full]),
        "n_pairs": len(full),
    }


TRUEFALSE_MINI = Task(
    name="truefalse-mini",
    summary="32 hand-written affirmative/negated true-false pairs: 28 scored (56 items, test), "
    "pairs 1-4 the few-shot pool (dev) (built in, English)",
    load=_tf_split,
    test_split="test",
    fewshot_split="dev",
    modes={
        "next_token": ModeSpec(
            _tf_render, NextTokenLabels(), "P(True) vs P(False) from one next-token distribution"
        ),
        "cloze": ModeSpec(
            _tf_render, ChoiceLoglikelihood(), "log-likelihood of ' True' / ' False'"
        ),
    },
    default_modes=("next_token",),
    extra_metrics=_tf_metrics,
    source="written by the negbench authors",
    structure=Structure(
        unit=("pair",), unit_name="affirmative/negated pair", units_name="affirmative/negated pairs"
    ),
)


# -- user JSONL multiple choice ---------------------------------------------------------------------
def jsonl_task(path: str) -> Task:
    """A multiple-choice task from a JSON-lines file: ``{"question", "choices": [...], "answer": i}``
    (optional ``id``).  Few-shot examples come from the same file, never the item itself."""
    p = Path(path)

    @lru_cache(maxsize=None)
    def load_all() -> tuple[Doc, ...]:
        docs: list[Doc] = []
        seen: dict[str, int] = {}  # id -> line
        for n, obj in iter_jsonl(p):
            rec = f"line {n}"
            q = field(obj, "question", str, path=str(p), record=rec)
            choices = field(obj, "choices", list, path=str(p), record=rec)
            if len(choices) < 2 or not all(isinstance(c, str) and c.strip() for c in choices):
                raise DataError(
                    "'choices' must be a list of at least two non-empty strings",
                    path=str(p),
                    record=rec,
                    field="choices",
                )
            if len(choices) > len(LETTERS):
                raise DataError(
                    f"{len(choices)} choices; at most {len(LETTERS)} are supported",
                    path=str(p),
                    record=rec,
                    field="choices",
                )
            if len(set(choices)) < len(choices):
                raise DataError(
                    "two choices have the same text",
                    path=str(p),
                    record=rec,
                    field="choices",
                    fix="every choice must differ, or the answer is ambiguous",
                )
            ans = field(obj, "answer", (int, str), path=str(p), record=rec)
            if isinstance(ans, str):
                if ans not in choices:
                    raise DataError(
                        f"answer {ans!r} is not one of the choices",
                        path=str(p),
                        record=rec,
                        field="answer",
                        fix="give the 0-based index of the correct choice, or its exact text",
                    )
                ans = choices.index(ans)
            if not 0 <= ans < len(choices):
                raise DataError(
                    f"answer {ans} is not an index into {len(choices)} choices",
                    path=str(p),
                    record=rec,
                    field="answer",
                    fix=f"answer is the 0-based index of the correct choice "
                    f"(0 to {len(choices) - 1}), or its exact text",
                )
            rid = obj.get("id", n)
            if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid).strip() == "":
                raise DataError(
                    f"expected a non-empty string or integer, got {rid!r:.60}",
                    path=str(p),
                    record=rec,
                    field="id",
                )
            rid = str(rid)
            if rid in seen:
                raise DataError(
                    f"duplicate id {rid!r} (first on line {seen[rid]})",
                    path=str(p),
                    record=rec,
                    field="id",
                    fix="every record needs its own id: runs are compared item by item through it",
                )
            seen[rid] = n
            docs.append(Doc(rid, {"question": q, "choices": choices, "answer": ans}, str(p)))
        if not docs:
            raise DataError(
                "no records",
                path=str(p),
                fix='one JSON object per line: {"question": ..., "choices": [...], "answer": 0}',
            )
        return tuple(docs)

    def render_cloze(d: Doc) -> Rendered:
        return Rendered(f"{d['question']}\nAnswer:", list(d["choices"]), d["answer"])

    def render_letter(d: Doc) -> Rendered:
        lines = "".join(f"{LETTERS[i]}. {c}\n" for i, c in enumerate(d["choices"]))
        return Rendered(
            f"{d['question']}\n{lines}Answer:", list(LETTERS[: len(d["choices"])]), d["answer"]
        )

    def render_gen(d: Doc) -> Rendered:
        r = render_letter(d)
        assert isinstance(r.gold, int)  # the letter mode's gold is an index
        return Rendered(r.query, r.choices, r.choices[r.gold])

    return Task(
        name=p.stem,
        summary=f"multiple choice from {p}",
        load=lambda split: list(load_all()),
        test_split="test",
        fewshot_split="test",
        modes={
            "cloze": ModeSpec(render_cloze, ChoiceLoglikelihood()),
            "letter": ModeSpec(render_letter, ChoiceLoglikelihood(metrics=("acc",))),
            "generate": ModeSpec(
                render_gen, Generation(stop=("\n",), max_tokens=8, extract=first_letter(LETTERS))
            ),
        },
        default_modes=("cloze",),
        source=str(p),
    )
