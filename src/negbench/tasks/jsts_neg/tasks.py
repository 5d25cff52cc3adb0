"""JSTS-Neg (Yuasa, Kato & Matsubara): Japanese semantic textual similarity with negation minimal
pairs.  See ``src/negbench/tasks/jsts_neg/README.md`` for the schema, the prompt and every choice made where the paper
is silent.

Data: JSON lines in the layout of the JNLI-Neg release (one instance per line, ``jsts-neg-{split}.jsonl``
for ``train`` — the few-shot pool —, ``test`` and optionally ``valid``) in the folder
``$NEGBENCH_JSTS_NEG``, else ``$NEGBENCH_DATA/jsts-neg``, else ``../shared/data/jsts-neg``.  The
official release (github reiko-y/JSTS-Neg) is not reachable here; ``negbench.builders`` writes an
in-house set in this schema.

Task (§4): six-way classification of the similarity score 0–5 with the Figure 7 prompt in the
llm-jp-eval (v1) layout::

    以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。

    ### 指示:
    <Figure 7 instruction, with the JSTS guideline's line breaks and rules>

    ### 入力:
    文1：<sentence1>
    文2：<sentence2>

    ### 応答:
    <score>

Modes: ``generate`` (the paper's: greedy generation, the first number of the output must be an
integer 0–5, else the answer is *unparseable* and wrong) and ``loglik`` (ours: log-likelihood of
the six labels ``0``..``5`` after ``### 応答:``).  Shots (§4.1): 0, 4 (2 from D_orig + 2 from
D_neg) and 11 (5 + 6), the shots of one part with pairwise different gold scores, the same shots
for every test instance of a trial, five seeds (:class:`negbench.tasks.common.minimal_pairs.StratifiedShots`).
Metrics (§4.2): Acc, Acc', AccChg on the negation minimal pairs M, M_i, M_u
(:mod:`negbench.tasks.common.minimal_pairs`), plus accuracy, Pearson and Spearman over the parsed scores.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import negbench.tasks.common.minimal_pairs as mp
from negbench.tasks.data_source import DataSource
from negbench.errors import DataError, TaskError
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
import negbench.tasks.common.llm_jp as llm_jp
from negbench.scoring.task import Doc, ModeSpec, Rendered, Task
from negbench.tasks.common.llm_jp import FEWSHOT_DELIMITER, MAX_TOKENS, STOP, TARGET_DELIMITER

SOURCE = (
    "JSTS-Neg, Yuasa, Kato & Matsubara; github reiko-y/JSTS-Neg (built from JGLUE JSTS, "
    "CC BY-SA 4.0); or an in-house set in the same schema"
)
SPLITS = ("train", "valid", "test")
SPLIT_ALIASES = {"validation": "valid", "dev": "valid"}
#: type -> (sentence1 negated, sentence2 negated): D_orig, D1, D2, D12 of §3.2.2.
TYPES = {
    "original": (False, False),
    "s1_neg": (True, False),
    "s2_neg": (False, True),
    "both_neg": (True, True),
}
SCORES = tuple(range(6))
LABELS = tuple(str(s) for s in SCORES)

# -- prompt (Figure 7, llm-jp-eval v1 layout) ------------------------------------------------------
#: Figure 7's instruction.  Its text is the paper's, character for character; the line breaks,
#: the blank line and the two rule lengths follow the JSTS task guideline the instruction is taken
#: from (JGLUE ``task_guidelines.md``), whose layout the figure reproduces (see src/negbench/tasks/jsts_neg/README.md).
RULE_LONG = "-" * 51
RULE_SHORT = "-" * 23
INSTRUCTION = (
    "2つの文の類似度を0~5のいずれかで教えてください。\n"
    "数字が大きいほど2つの文は似ています。\n"
    "\n"
    "以下の指標を参考に回答してください。\n"
    f"{RULE_LONG}\n"
    "【類似度：5】\n"
    "2つの文は意味が完全に一致している。\n"
    f"{RULE_SHORT}\n"
    "【類似度：4】\n"
    "2つの文はほぼ意味が同じだが、重要でない部分で意味が異なる。\n"
    f"{RULE_SHORT}\n"
    "【類似度：3】\n"
    "2つの文はある程度同じ意味だが、重要な部分で意味が異なる。\n"
    f"{RULE_SHORT}\n"
    "【類似度：2】\n"
    "2つの文は異なる意味であるが、細かい要素が共通している。\n"
    f"{RULE_SHORT}\n"
    "【類似度：1】\n"
    "2つの文は異なる意味であるが、話題に共通点がある。\n"
    f"{RULE_SHORT}\n"
    "【類似度：0】\n"
    "2つの文は全く異なる意味であり、話題も単語も共通していない。"
)
#: Figure 7 in the llm-jp-eval v1 layout (:mod:`negbench.tasks.common.llm_jp`).
DESCRIPTION = llm_jp.description(INSTRUCTION)
PAPER_SHOTS = (0, 4, 11)
#: The paper does not publish its seeds; ours (five trials, §4.1).
PROTOCOL_SEEDS = (0, 1, 2, 3, 4)


def input_text(s1: str, s2: str) -> str:
    """llm-jp-eval's JSTS input: ``文1：{sentence1}\\n文2：{sentence2}`` (full-width colons)."""
    return f"文1：{s1}\n文2：{s2}"


def query(s1: str, s2: str) -> str:
    return llm_jp.query(input_text(s1, s2))


def description(mode: str = "") -> str:
    return DESCRIPTION


# -- data location -----------------------------------------------------------------------------------
DATA = DataSource("JSTS-Neg", "NEGBENCH_JSTS_NEG", "jsts-neg")


def data_root() -> Path:
    """``$NEGBENCH_DATA/jsts-neg`` when that variable is set, else ``../shared/data/jsts-neg``
    relative to the current working directory."""
    local = DATA.local()
    assert local is not None  # DATA names a folder
    return local


def default_source() -> str:
    """``$NEGBENCH_JSTS_NEG`` (a folder) when set, else :func:`data_root`."""
    return DATA.resolve()


def canonical_split(split: str) -> str:
    s = SPLIT_ALIASES.get(split, split)
    if s not in SPLITS:
        raise TaskError(
            f"JSTS-Neg has no split '{split}'", where="split", fix="one of " + ", ".join(SPLITS)
        )
    return s


def split_file(root: Path, split: str) -> Path | None:
    name = f"jsts-neg-{split}.jsonl"
    for p in (root / name, root / "data" / name):
        if p.is_file():
            return p
    return None


# -- records -----------------------------------------------------------------------------------------
def _parse_gold(v: Any, path: str, rec: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise DataError(
            f"expected an integer 0..5, got {type(v).__name__} {v!r:.30}",
            path=path,
            record=rec,
            field="gold_score",
        )
    if v not in SCORES:
        raise DataError(
            f"score out of range: {v} (the scale is 0..5)",
            path=path,
            record=rec,
            field="gold_score",
        )
    return v


def _parse_annotators(v: Any, gold: int, path: str, rec: str) -> list[int] | None:
    """Null, or three integer scores 0..5 whose median is the gold score (§3.2.2)."""
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 3:
        raise DataError(
            f"expected a list of three scores or null, got {v!r:.60}",
            path=path,
            record=rec,
            field="annotator_scores",
        )
    for x in v:
        if not isinstance(x, int) or isinstance(x, bool) or x not in SCORES:
            raise DataError(
                f"annotator score {x!r} is not an integer 0..5",
                path=path,
                record=rec,
                field="annotator_scores",
            )
    med = sorted(v)[1]
    if med != gold:
        raise DataError(
            f"gold_score {gold} is not the median ({med}) of annotator_scores {v}",
            path=path,
            record=rec,
            field="gold_score",
            fix="the gold score is the median of the three annotators (§3.2.2)",
        )
    return list(v)


SCHEMA = mp.Schema(
    group_field="jsts_sentence_pair_id",
    group_type=str,
    neg_id_field="neg_id_in_jsts_sentence",
    types=TYPES,
    gold_field="gold_score",
    parse_gold=_parse_gold,
    annotator_field="annotator_scores",
    parse_annotators=_parse_annotators,
)


@lru_cache(maxsize=None)
def _load_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if not root.is_dir():
        raise DataError(
            "JSTS-Neg data folder not found",
            path=source,
            fix="set NEGBENCH_JSTS_NEG to a folder holding jsts-neg-train.jsonl and "
            "jsts-neg-test.jsonl (or NEGBENCH_DATA to a folder holding jsts-neg/)",
        )
    p = split_file(root, split)
    if p is None:
        raise DataError(
            f"JSTS-Neg {split} file not found",
            path=str(root),
            fix=f"expected jsts-neg-{split}.jsonl in this folder (see src/negbench/tasks/jsts_neg/README.md)",
        )
    return tuple(Doc(str(f["id"]), f, str(p)) for f, _ in mp.read_instances(p, SCHEMA))


def load_split(split: str, source: str | os.PathLike | None = None) -> list[Doc]:
    """The validated instances of ``train`` / ``valid`` / ``test`` in file order."""
    src = str(source) if source is not None else default_source()
    if Path(src).is_dir():
        src = str(Path(src).resolve())
    return list(_load_cached(src, canonical_split(split)))


def clear_cache() -> None:
    _load_cached.cache_clear()


# -- rendering -----------------------------------------------------------------------------------------
def meta(d: Doc) -> dict[str, Any]:
    return {**mp.instance_meta(d), "annotator_scores": d["annotators"]}


def render_generate(d: Doc) -> Rendered:
    return Rendered(
        query(d["sentence1"], d["sentence2"]),
        [],
        str(d["gold"]),
        target=str(d["gold"]),
        meta=meta(d),
    )


def render_loglik(d: Doc) -> Rendered:
    return Rendered(
        query(d["sentence1"], d["sentence2"]),
        list(LABELS),
        d["gold"],
        target=str(d["gold"]),
        meta=meta(d),
    )


# -- answers -------------------------------------------------------------------------------------------
#: The first number of the output, not one that names a sentence (文1 / 文2).
_NUMBER = re.compile(r"(?<![文\d.])[-+]?\d+(?:\.\d+)?")


def score_status(text: str | None) -> tuple[str, str | None]:
    """(status, score): the output NFKC-normalised (full-width digits become ASCII) and cut at the
    first ``###``; its first number, which must be an integer 0–5 (``4`` and ``4.0`` read as 4).
    Status ``ok``, ``empty``, ``no_number``, ``not_integer`` (``3.5``) or ``out_of_range``."""
    s = unicodedata.normalize("NFKC", text or "").split("###", 1)[0]
    if not s.strip():
        return "empty", None
    m = _NUMBER.search(s)
    if m is None:
        return "no_number", None
    v = float(m.group())
    if v != int(v):
        return "not_integer", None
    if int(v) not in SCORES:
        return "out_of_range", None
    return "ok", str(int(v))


def parse_score(text: str) -> str | None:
    """The ``generate`` answer filter: the score ``"0"``..``"5"``, or None (unparseable)."""
    return score_status(text)[1]


GENERATE = Generation(
    stop=STOP, max_tokens=MAX_TOKENS, extract=parse_score, normalize=lambda s: s.strip()
)
LOGLIK = ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER)


# -- metrics (pure functions of records) ---------------------------------------------------------------
def predicted_score(r: dict) -> int | None:
    """The record's predicted score: the parsed generation, or the argmax label (log-likelihood)."""
    if "output" in r or "answer" in r:
        a = r.get("answer")
        return int(a) if a is not None else None
    if r.get("pred") is not None and r.get("choices"):
        return int(r["choices"][r["pred"]])
    return None


def _softmax(xs: Sequence[float]) -> list[float]:
    m = max(xs)
    e = [math.exp(x - m) for x in xs]
    z = sum(e)
    return [x / z for x in e]


def jsts_neg_metrics(mode: str, records: list[dict]) -> dict:
    """``Task.extra_metrics``: the minimal-pair scores (flat, so they average over seeds), plain
    accuracy per instance kind, the unparseable count, Pearson / Spearman of the parsed scores
    against gold (unparseable outputs left out), and nested breakdowns."""
    records = list(records)
    key = mp.correctness_key(records)
    out: dict[str, Any] = mp.minimal_pair_scores(records, key)
    out.update(mp.instance_accuracy(records, key))
    preds = [predicted_score(r) for r in records]
    golds = [r["meta"]["gold"] for r in records]
    parsed = [(g, p) for g, p in zip(golds, preds) if p is not None]
    out["unparseable"] = len(records) - len(parsed)
    out["unparseable_rate"] = out["unparseable"] / len(records) if records else float("nan")
    out["pearson"] = mp.corr([g for g, _ in parsed], [p for _, p in parsed])
    out["spearman"] = mp.spearman([g for g, _ in parsed], [p for _, p in parsed])
    # Pearson's 95 % interval by minimal-pair groups (Fisher's z, cluster jackknife, t on G − 1
    # df); None when the groups are too few for its coverage (docs/statistics.md)
    from negbench.scoring.intervals import correlation_interval

    groups = [str(r["meta"].get("group")) for r, p in zip(records, preds) if p is not None]
    iv = correlation_interval([g for g, _ in parsed], [p for _, p in parsed], groups)
    out["pearson_ci95"] = list(iv.ci) if iv.ci else None
    if records and "scores" in records[0]:  # log-likelihood: the expected score too
        exp = [sum(i * p for i, p in enumerate(_softmax(r["scores"]))) for r in records]
        out["pearson_expected"] = mp.corr(golds, exp)
    if records and "output" in records[0]:
        out["parse_status"] = dict(Counter(score_status(r["output"])[0] for r in records))
    out["pred_distribution"] = {str(s): sum(p == s for p in preds) for s in SCORES}
    out["pred_distribution"]["none"] = out["unparseable"]
    out["gold_distribution"] = {str(s): sum(g == s for g in golds) for s in SCORES}
    out["pair_breakdown"] = mp.pair_breakdown(records, key)
    return out


def jsts_neg_tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    title = (
        f"JSTS-Neg {mode}: accuracy on negation minimal pairs (Tables 3–5; Acc, Acc' in %, "
        "AccChg in points, negative in bold; mean over seeds in the groups)"
    )
    return mp.pairs_table(
        title,
        rows,
        extra=(("unparseable", "unparseable"), ("Pearson", "pearson"), ("Spearman", "spearman")),
    )


# -- task --------------------------------------------------------------------------------------------
def make_tasks(source: str | os.PathLike | None = None) -> tuple[Task, ...]:
    """``jsts-neg``, reading from ``source`` (default :func:`default_source`, resolved when the
    data is first loaded)."""

    def loader(split: str) -> list[Doc]:
        return load_split(split, source)

    return (
        Task(
            name="jsts-neg",
            summary="JSTS-Neg test: Japanese STS (score 0-5) on negation minimal pairs; Figure 7 "
            "prompt (llm-jp-eval); Acc / Acc' / AccChg on M, M_i, M_u",
            load=loader,
            modes={
                "generate": ModeSpec(
                    render_generate,
                    GENERATE,
                    "Figure 7 prompt, greedy generation, first number of the output "
                    "must be an integer 0-5 (else unparseable); the paper's setting",
                    headline=mp.HEADLINE,
                ),
                "loglik": ModeSpec(
                    render_loglik,
                    LOGLIK,
                    "log-likelihood of the labels 0..5 after '### 応答:\\n' (negbench's addition)",
                    headline=mp.HEADLINE,
                ),
            },
            test_split="test",
            fewshot_split="train",
            default_modes=("generate", "loglik"),
            default_shots=(0,),
            default_seeds=(PROTOCOL_SEEDS[0],),
            protocol_shots=PAPER_SHOTS,
            protocol_seeds=PROTOCOL_SEEDS,
            fewshot_sampler=mp.StratifiedShots(),
            description=description,
            target_delimiter=TARGET_DELIMITER,
            fewshot_delimiter=FEWSHOT_DELIMITER,
            extra_metrics=jsts_neg_metrics,
            tables=jsts_neg_tables,
            language="ja",
            source=SOURCE,
            structure=mp.STRUCTURE,
            headline_parts=mp.acc_chg_parts,
            headline_proportion=False,
            data=DATA,
        ),
    )


TASKS: tuple[Task, ...] = make_tasks()
