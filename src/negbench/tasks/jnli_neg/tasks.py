"""JNLI-Neg v1.1 (Yoshida, Kato, Ogawa & Matsubara, NLP 2025): Japanese NLI with negation minimal
pairs, evaluated as JSTS-Neg evaluates its STS pairs (SPEC §5: "JNLI-Neg is evaluated the same way
(NLI labels instead of scores)").  See ``src/negbench/tasks/jnli_neg/README.md``.

Data: the official release (github asahi-y/JNLI-Neg, ``data/jnli-neg-v1.1/jnli-neg-{train,valid}-v1.1.jsonl``;
5,494 / 1,363 instances, 6,735 / 1,722 minimal pairs) in ``$NEGBENCH_JNLI_NEG``, else
``$NEGBENCH_DATA/jnli-neg``, else ``../shared/data/jnli-neg``.  Evaluated on ``valid``; shots from
``train``.

Prompt: llm-jp-eval's JNLI task (v1 layout, its instruction verbatim), input
``前提：{sentence1}\\n仮説：{sentence2}``, answer one of ``entailment`` / ``contradiction`` /
``neutral`` after ``### 応答:\\n``.  Modes ``generate`` (greedy; the first label word in the output,
else unparseable) and ``loglik`` (log-likelihood of the three label words).

Shots: :class:`negbench.tasks.common.minimal_pairs.StratifiedShots` on the labels — ``k // 2`` from D_orig and
``k - k // 2`` from D_neg, pairwise different labels within a part; protocol 0, 4 and 6 shots (6
is the most with different labels in each part: 3 + 3) × five seeds.
"""

from __future__ import annotations

import os
import unicodedata
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import negbench.tasks.common.minimal_pairs as mp
from negbench.tasks.data_source import DataSource
from negbench.errors import DataError, TaskError
from negbench.scoring.metrics import by_group
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
import negbench.tasks.common.llm_jp as llm_jp
from negbench.scoring.task import Doc, ModeSpec, Rendered, Task
from negbench.tasks.common.llm_jp import FEWSHOT_DELIMITER, MAX_TOKENS, STOP, TARGET_DELIMITER

SOURCE = (
    "JNLI-Neg v1.1, Yoshida, Kato, Ogawa & Matsubara (NLP 2025); github asahi-y/JNLI-Neg "
    "(CC BY-SA 4.0)"
)
VERSION = "v1.1"
SPLITS = ("train", "valid")
SPLIT_ALIASES = {"validation": "valid", "dev": "valid"}
#: The release's README.
SPLIT_SIZES = {"train": 5494, "valid": 1363}
PAIR_COUNTS = {"train": 6735, "valid": 1722}
TYPES = {
    "original": (False, False),
    "p_neg": (True, False),
    "h_neg": (False, True),
    "p_neg_h_neg": (True, True),
}
#: In the order llm-jp-eval's instruction lists them (also the log-likelihood choice order).
LABELS = ("entailment", "contradiction", "neutral")
#: Japanese names a chatty model may answer with (lenient reading, ours).
JA_LABELS = {"含意": "entailment", "矛盾": "contradiction", "中立": "neutral"}

#: llm-jp-eval ``jaster/jnli.py`` ``output_info.instruction``, verbatim.
INSTRUCTION = (
    "前提と仮説の関係をentailment、contradiction、neutralの中から回答してください。"
    "それ以外には何も含めないことを厳守してください。\n\n"
    "制約：\n"
    "- 前提から仮説が、論理的知識や常識的知識を用いて導出可能である場合はentailmentと出力\n"
    "- 前提と仮説が両立しえない場合はcontradictionと出力\n"
    "- そのいずれでもない場合はneutralと出力"
)
DESCRIPTION = llm_jp.description(INSTRUCTION)
PROTOCOL_SHOTS = (0, 4, 6)
PROTOCOL_SEEDS = (0, 1, 2, 3, 4)


def input_text(premise: str, hypothesis: str) -> str:
    """llm-jp-eval's JNLI input: ``前提：{premise}\\n仮説：{hypothesis}`` (full-width colons)."""
    return f"前提：{premise}\n仮説：{hypothesis}"


def query(premise: str, hypothesis: str) -> str:
    return llm_jp.query(input_text(premise, hypothesis))


def description(mode: str = "") -> str:
    return DESCRIPTION


# -- data location -------------------------------------------------------------------------------------
DATA = DataSource("JNLI-Neg", "NEGBENCH_JNLI_NEG", "jnli-neg")


def data_root() -> Path:
    local = DATA.local()
    assert local is not None  # DATA names a folder
    return local


def default_source() -> str:
    """``$NEGBENCH_JNLI_NEG`` (a folder) when set, else :func:`data_root`."""
    return DATA.resolve()


def canonical_split(split: str) -> str:
    s = SPLIT_ALIASES.get(split, split)
    if s not in SPLITS:
        raise TaskError(
            f"JNLI-Neg has no split '{split}'", where="split", fix="one of " + ", ".join(SPLITS)
        )
    return s


def split_file(root: Path, split: str) -> Path | None:
    name = f"jnli-neg-{split}-{VERSION}.jsonl"
    for p in (
        root / "data" / f"jnli-neg-{VERSION}" / name,
        root / f"jnli-neg-{VERSION}" / name,
        root / name,
    ):
        if p.is_file():
            return p
    return None


# -- records -----------------------------------------------------------------------------------------
def _parse_gold(v: Any, path: str, rec: str) -> str:
    if v not in LABELS:
        raise DataError(
            f"unknown gold_label {v!r:.40}",
            path=path,
            record=rec,
            field="gold_label",
            fix="one of " + ", ".join(LABELS),
        )
    return v


def _parse_annotators(v: Any, gold: str, path: str, rec: str) -> dict | None:
    """Null, or ``{entailment, neutral, contradiction}`` vote counts; when one label has a strict
    majority it must be the gold label (true of every instance of v1.1)."""
    if v is None:
        return None
    if not isinstance(v, dict) or set(v) != set(LABELS):
        raise DataError(
            f"expected null or an object with keys {', '.join(LABELS)}, got {v!r:.80}",
            path=path,
            record=rec,
            field="annotator_labels",
        )
    for k, x in v.items():
        if not isinstance(x, int) or isinstance(x, bool) or x < 0:
            raise DataError(
                f"vote count for {k} is {x!r}, not an integer >= 0",
                path=path,
                record=rec,
                field="annotator_labels",
            )
    top = max(v.values())
    winners = [k for k, x in v.items() if x == top]
    if len(winners) == 1 and winners[0] != gold:
        raise DataError(
            f"gold_label {gold!r} is not the annotators' majority ({winners[0]}: {v})",
            path=path,
            record=rec,
            field="gold_label",
        )
    return {k: v[k] for k in LABELS}


SCHEMA = mp.Schema(
    group_field="jnli_sentence_pair_id",
    group_type=int,
    neg_id_field="neg_id_in_jnli_sentence",
    types=TYPES,
    gold_field="gold_label",
    parse_gold=_parse_gold,
    annotator_field="annotator_labels",
    parse_annotators=_parse_annotators,
)


@lru_cache(maxsize=None)
def _load_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if not root.is_dir():
        raise DataError(
            "JNLI-Neg data folder not found",
            path=source,
            fix="set NEGBENCH_JNLI_NEG to a folder of the official release (or "
            "NEGBENCH_DATA to a folder holding jnli-neg/), or run from the project "
            "root next to ../shared/data",
        )
    p = split_file(root, split)
    if p is None:
        raise DataError(
            f"JNLI-Neg {split} file not found",
            path=str(root),
            fix=f"expected data/jnli-neg-{VERSION}/jnli-neg-{split}-{VERSION}.jsonl "
            "of the official release",
        )
    return tuple(Doc(str(f["id"]), f, str(p)) for f, _ in mp.read_instances(p, SCHEMA))


def load_split(split: str, source: str | os.PathLike | None = None) -> list[Doc]:
    src = str(source) if source is not None else default_source()
    if Path(src).is_dir():
        src = str(Path(src).resolve())
    return list(_load_cached(src, canonical_split(split)))


def clear_cache() -> None:
    _load_cached.cache_clear()


# -- rendering ---------------------------------------------------------------------------------------
def meta(d: Doc) -> dict[str, Any]:
    return {**mp.instance_meta(d), "annotator_labels": d["annotators"]}


def render_generate(d: Doc) -> Rendered:
    return Rendered(
        query(d["sentence1"], d["sentence2"]), [], d["gold"], target=d["gold"], meta=meta(d)
    )


def render_loglik(d: Doc) -> Rendered:
    return Rendered(
        query(d["sentence1"], d["sentence2"]),
        list(LABELS),
        LABELS.index(d["gold"]),
        target=d["gold"],
        meta=meta(d),
    )


def parse_label(text: str | None) -> str | None:
    """The ``generate`` answer filter: NFKC, lower-case, cut at the first ``###``; the label word
    (or 含意 / 矛盾 / 中立) that occurs first; None when there is none (unparseable)."""
    s = unicodedata.normalize("NFKC", text or "").split("###", 1)[0].lower()
    found = []
    for word, lab in [(lab, lab) for lab in LABELS] + list(JA_LABELS.items()):
        i = s.find(word)
        if i >= 0:
            found.append((i, lab))
    return min(found)[1] if found else None


GENERATE = Generation(
    stop=STOP, max_tokens=MAX_TOKENS, extract=parse_label, normalize=lambda s: s.strip().lower()
)
LOGLIK = ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER)


# -- metrics ---------------------------------------------------------------------------------------
def predicted_label(r: dict) -> str | None:
    if "output" in r or "answer" in r:
        return r.get("answer")
    if r.get("pred") is not None and r.get("choices"):
        return r["choices"][r["pred"]]
    return None


def jnli_neg_metrics(mode: str, records: list[dict]) -> dict:
    """``Task.extra_metrics``: minimal-pair scores (flat), accuracy per instance kind, the
    unparseable count, accuracy per gold label, the confusion matrix, nested breakdowns; for
    ``loglik`` the minimal-pair scores of ``acc_norm`` too."""
    records = list(records)
    key = mp.correctness_key(records)
    out: dict[str, Any] = mp.minimal_pair_scores(records, key)
    out.update(mp.instance_accuracy(records, key))
    preds = [predicted_label(r) for r in records]
    out["unparseable"] = sum(p is None for p in preds)
    out["unparseable_rate"] = out["unparseable"] / len(records) if records else float("nan")
    for lab, v in by_group(records, "gold", key).items():
        out[f"acc_gold_{lab}"] = v[key]
    conf = Counter((r["meta"]["gold"], p or "none") for r, p in zip(records, preds))
    out["confusion"] = {g: {p: conf.get((g, p), 0) for p in LABELS + ("none",)} for g in LABELS}
    out["pair_breakdown"] = mp.pair_breakdown(records, key)
    if records and "acc_norm" in records[0]:
        out["pairs_acc_norm"] = mp.minimal_pair_scores(records, "acc_norm")
    return out


def jnli_neg_tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    title = (
        f"JNLI-Neg {mode}: accuracy on negation minimal pairs (JSTS-Neg Tables 3–5 layout; "
        "Acc, Acc' in %, AccChg in points, negative in bold)"
    )
    return mp.pairs_table(title, rows, extra=(("unparseable", "unparseable"),))


# -- task --------------------------------------------------------------------------------------------
def make_tasks(source: str | os.PathLike | None = None) -> tuple[Task, ...]:
    def loader(split: str) -> list[Doc]:
        return load_split(split, source)

    return (
        Task(
            name="jnli-neg",
            summary="JNLI-Neg v1.1 valid (1,363): Japanese NLI on negation minimal pairs; llm-jp-eval "
            "JNLI prompt; Acc / Acc' / AccChg on M, M_i, M_u",
            load=loader,
            modes={
                "generate": ModeSpec(
                    render_generate,
                    GENERATE,
                    "llm-jp-eval JNLI prompt, greedy generation, first label word "
                    "in the output (else unparseable)",
                    headline=mp.HEADLINE,
                ),
                "loglik": ModeSpec(
                    render_loglik,
                    LOGLIK,
                    "log-likelihood of entailment / contradiction / neutral after '### 応答:\\n'",
                    headline=mp.HEADLINE,
                ),
            },
            test_split="valid",
            fewshot_split="train",
            default_modes=("loglik", "generate"),
            default_shots=(0,),
            default_seeds=(PROTOCOL_SEEDS[0],),
            protocol_shots=PROTOCOL_SHOTS,
            protocol_seeds=PROTOCOL_SEEDS,
            fewshot_sampler=mp.StratifiedShots(),
            description=description,
            target_delimiter=TARGET_DELIMITER,
            fewshot_delimiter=FEWSHOT_DELIMITER,
            extra_metrics=jnli_neg_metrics,
            tables=jnli_neg_tables,
            language="ja",
            source=SOURCE,
            structure=mp.STRUCTURE,
            headline_parts=mp.acc_chg_parts,
            headline_proportion=False,
            data=DATA,
        ),
    )


TASKS: tuple[Task, ...] = make_tasks()
