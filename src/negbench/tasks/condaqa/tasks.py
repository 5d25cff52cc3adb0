"""CONDAQA (Ravichander, Gardner & Marasović, EMNLP 2022): reading comprehension about negation.

Data: the official JSON-lines release (github AbhilashaRavichander/CondaQA) — ``condaqa_dev.json``,
the test set as five disjoint few-shot test splits and 9 shots per split — or the official
``condaqa_{train,dev,test}.json`` in a folder of the user's, or the Hugging Face id
``lasha-nlp/CONDAQA`` (needs the optional ``datasets`` package).  See ``src/negbench/tasks/condaqa/README.md``.

Splits: ``dev``, ``test`` (test splits 1..5 concatenated in that order; each record carries its
split number), ``test1``..``test5``, ``shots1``..``shots5`` (the 9-shot train splits), and
``train`` when an official train file is present.

Prompt (Figure 5): the task description, then for each shot ``Passage: …\\nQuestion: …\\nAnswer: X``
followed by ``\\n###\\n``, then the test instance ending in ``Answer:``.

Modes: ``generate`` (the paper's: greedy generation, the answer line compared with the gold after
strip + lower-case only — §4's exact match; the label-normalised figure is reported beside it),
``cot`` (Figure 6 chain of thought: "Answer: Let's think step by step." and the answer after "So
the answer is") and ``loglik`` (log-likelihood of the three label answers; records whose gold
answer is a span are excluded from its metrics and counted).

Metrics (§4, App. B, D) are pure functions of the runner's per-sample records: accuracy,
question-level consistency over (PassageID, QuestionID) groups holding all four passage edits,
edit-level consistency on (original, paraphrase | scope | affirmative) pairs taken from those same
complete groups, accuracy per edit type (Table 10), a breakdown by answer type (Figure 8), and the
majority-answer floor of Table 4; accuracy by question length and by negation-cue novelty (App. D,
:mod:`negbench.tasks.condaqa.analysis`).  The few-shot studies of Tables 8-9 are options of the
split tasks (:mod:`negbench.tasks.condaqa.study`).

Protocol (§4.1, App. C.2): zero-shot on the full test set (``condaqa``; its metrics also give the
per-split numbers and their mean / SD), and few-shot as five tasks ``condaqa-split{i}`` that
evaluate test split *i* with exactly the 9 shots of train split *i*; average with
:func:`average_over_splits`.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence, TypedDict

from negbench.errors import DataError, TaskError
from negbench.scoring.metrics import mean, sd
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
from negbench.tasks.data_source import DataSource, load_hub_dataset
from negbench.records import field, iter_jsonl
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task
from negbench.tasks.condaqa import analysis
from negbench.tasks.condaqa.analysis import EDITS, question_tokens

HF_ID = "lasha-nlp/CONDAQA"
SOURCE = (
    "CONDAQA, Ravichander et al. (EMNLP 2022); github AbhilashaRavichander/CondaQA "
    f"(Apache-2.0); Hugging Face {HF_ID}"
)
N_SPLITS = 5
N_SHOTS = 9

#: The three label answers, in the order the ``loglik`` mode scores them.
LABELS: tuple[str, ...] = ("YES", "NO", "DON'T KNOW")
LABEL_TYPE = {"YES": "yes", "NO": "no", "DON'T KNOW": "dont_know"}
ANSWER_TYPES = ("yes", "no", "dont_know", "span")

#: Figure 5 task description (written after Wang et al., 2022).
DESCRIPTION = (
    "In this task, you're expected to write answers to questions involving reasoning "
    'about negation. The answer to the question should be "yes", "no", "don\'t '
    'know" or a phrase in the passage. Questions can have only one correct answer.'
)
#: What separates the description from the first block (our reading of Figure 5).
DESCRIPTION_SEPARATOR = "\n"
#: Figure 5 separates consecutive instances with ``###``.
FEWSHOT_DELIMITER = "\n###\n"
TARGET_DELIMITER = " "
STOP = ("\n", "###")
MAX_TOKENS = 32

#: Table 4's "Majority" row is answering NO everywhere (47.75 % of the test set); the training
#: file that would define the majority is not released here, and the dev majority is YES.
PAPER_MAJORITY = "NO"


# -- data location ---------------------------------------------------------------------------------
DATA = DataSource("CONDAQA", "NEGBENCH_CONDAQA", "condaqa/data", HF_ID)


def data_root() -> Path:
    """Default folder of the official release: ``$NEGBENCH_DATA/condaqa/data`` when that variable
    is set, else ``../shared/data/condaqa/data`` relative to the current working directory."""
    local = DATA.local()
    assert local is not None  # DATA names a folder
    return local


def default_source() -> str:
    """Where the tasks read from: ``$NEGBENCH_CONDAQA`` (a folder or a Hugging Face id such as
    ``hf:lasha-nlp/CONDAQA``), else the data tree, else the hub
    (:mod:`negbench.tasks.data_source`)."""
    return DATA.resolve()


_TEST_FILES = [
    (d, n)
    for d in ("few-shot/test_splits", "fewshot/test_splits", ".")
    for n in ("conda_fewshot_test_{i}.json", "condaqa_fewshot_test_{i}.json")
]
_SHOT_FILES = [
    (d, n)
    for d in (
        "few-shot/train_splits/sampling_c_shots_9",
        "fewshot/train_splits/sampling_c_shots_9",
        ".",
    )
    for n in ("conda_fewshot_train_{i}.json", "condaqa_fewshot_train_{i}.json")
]
OFFICIAL_FILES = {
    "train": "condaqa_train.json",
    "dev": "condaqa_dev.json",
    "test": "condaqa_test.json",
}
_HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
SPLITS = (
    ("train", "dev", "test")
    + tuple(f"test{i}" for i in range(1, N_SPLITS + 1))
    + tuple(f"shots{i}" for i in range(1, N_SPLITS + 1))
)
_HF_PAT = re.compile(r"^[\w.-]+/[\w.-]+$")


def _find(root: Path, candidates: list[tuple[str, str]], i: int) -> Path | None:
    for d, n in candidates:
        p = root / d / n.format(i=i)
        if p.is_file():
            return p
    return None


def _split_number(split: str, prefix: str) -> int | None:
    if split.startswith(prefix) and split[len(prefix) :].isdigit():
        i = int(split[len(prefix) :])
        if 1 <= i <= N_SPLITS:
            return i
    return None


# -- answers ---------------------------------------------------------------------------------------
_LABEL_VARIANTS = {
    "yes": "YES",
    "no": "NO",
    "don't know": "DON'T KNOW",
    "dont know": "DON'T KNOW",
    "do not know": "DON'T KNOW",
}


def canonical_label(text: str) -> str | None:
    """``YES`` / ``NO`` / ``DON'T KNOW`` when ``text`` is one of them up to case, surrounding
    whitespace and quotes, a trailing ``.`` or ``!``, curly apostrophes and ``dont`` /
    ``do not``; else None (a span)."""
    t = text.replace("\u2019", "'").replace("\u2018", "'")
    t = " ".join(t.lower().split()).strip(" .!\"'`")
    return _LABEL_VARIANTS.get(t)


def answer_type(answer: str) -> str:
    """``yes`` / ``no`` / ``dont_know`` for the label answers, else ``span``."""
    lab = canonical_label(answer)
    return LABEL_TYPE[lab] if lab else "span"


def normalize_prediction(text: str) -> str | None:
    """The ``generate`` answer filter: cut at the first ``###`` or newline (as the stop strings
    do), strip; a label answer
    becomes its canonical form, anything else is kept as a span; empty output gives None."""
    s = text.split("###", 1)[0].split("\n", 1)[0].strip()
    if not s:
        return None
    return canonical_label(s) or s


_LEADING = re.compile(r"^\W*(yes|no|don'?t know|do not know)\b", re.I)


def leading_label(text: str) -> str | None:
    """Our lenient reading for chatty models (not the paper's): a label that *opens* the output
    ("No, you cannot …" → NO); None when the output does not start with one."""
    m = _LEADING.match(text.replace("\u2019", "'"))
    return canonical_label(m.group(1)) if m else None


def lenient_accuracy(records: Sequence[dict]) -> dict:
    """Accuracy when a generation that opens with a label counts as that label — for chat models
    that answer in sentences.  Reported beside, never instead of, the paper's exact match."""
    hits, opened = [], 0
    for r in records:
        out = r.get("output") or ""
        lab = leading_label(out)
        opened += lab is not None
        pred = lab if lab is not None else (normalize_prediction(out) or "")
        hits.append(float(em_normalize(pred) == em_normalize(r["meta"]["answer"])))
    return {"accuracy_lenient": mean(hits), "n_opens_with_label": opened}


def em_normalize(s: str) -> str:
    """The headline exact-match comparison: strip and lower-case, nothing else.  §4: "The
    percentage of predictions which match the ground truth answer.  If the answer is a span, this
    metric measures whether the prediction matches the ground truth answer exactly."  The release
    has no scorer; we ignore case because Figure 5 asks for "yes" / "no" / "don't know" while the
    gold labels are upper-case (and UnifiedQA's answers were lower-cased, App. C.2)."""
    return s.strip().lower()


def cut_answer(text: str) -> str | None:
    """The headline ``generate`` answer: the output up to the first ``###`` or newline (where the
    stop strings end it), stripped; None when empty.  No other normalisation: ``No.`` is not
    ``NO`` here (it is under :func:`normalize_prediction`, the ``normalized`` figure)."""
    s = text.split("###", 1)[0].split("\n", 1)[0].strip()
    return s or None


#: App. C.2: the CoT output is "{explanation} So the answer is {answer}."; FLAN-T5 sometimes wrote
#: "(final) answer is" or "(final) answer:" instead — all are accepted, the last one wins.
_COT_ANSWER = re.compile(
    r"\b(?:so\s+)?the\s+(?:final\s+)?answer\s+is\b\s*:?|\b(?:final\s+)?answer\s*:", re.I
)


def cot_answer(text: str) -> str | None:
    """The ``cot`` answer: the text after the last "So the answer is" (or "the answer is",
    "final answer is", "answer:") that has one (an output cut by the token limit may end in a bare
    "So the answer is"), up to the end of that line or a ``###``, stripped, with one
    trailing ``.`` removed (the template's full stop, App. C.2); None when no such phrase.  The
    output is first cut where the stop strings (``###``, a new ``Passage:``) would end it."""
    s = text.split("###", 1)[0].split("\nPassage:", 1)[0]
    for m in reversed(list(_COT_ANSWER.finditer(s))):  # the last phrase with an answer after it
        ans = s[m.end() :].split("\n", 1)[0].strip()
        if ans.endswith("."):
            ans = ans[:-1].rstrip()
        if ans:
            return ans
    return None


# -- loading ---------------------------------------------------------------------------------------
def _parse(obj: dict, path: str, rec: str, split_no: int | None) -> dict[str, Any]:
    passage = field(obj, "sentence1", str, path=path, record=rec)
    question = field(obj, "sentence2", str, path=path, record=rec)
    label = field(obj, "label", str, path=path, record=rec)
    pid = field(obj, "PassageID", int, path=path, record=rec)
    qid = field(obj, "QuestionID", (str, int), path=path, record=rec)
    edit = field(obj, "PassageEditID", int, path=path, record=rec)
    if edit not in EDITS:
        raise DataError(
            f"PassageEditID must be 0, 1, 2 or 3, got {edit!r}",
            path=path,
            record=rec,
            field="PassageEditID",
            fix="0 original, 1 paraphrase, 2 scope, 3 affirmative edit",
        )
    cue = field(obj, "original cue", str, path=path, record=rec, optional=True)
    sid = field(obj, "SampleID", int, path=path, record=rec, optional=True)
    expl = field(obj, "explanation", str, path=path, record=rec, optional=True)
    lab = canonical_label(label)
    return {
        "passage": passage,
        "question": question,
        "label": label,
        "answer": lab or label.strip(),
        "answer_type": LABEL_TYPE[lab] if lab else "span",
        "PassageID": pid,
        "QuestionID": str(qid),
        "PassageEditID": edit,
        "original cue": cue,
        "SampleID": sid,
        "split": split_no,
        "explanation": expl,
        "question_len": question_tokens(question),
    }


def _read_file(path: Path, split_no: int | None = None) -> list[tuple[dict, str, int]]:
    out = []
    for n, obj in iter_jsonl(path):
        out.append((_parse(obj, str(path), f"line {n}", split_no), str(path), n))
    if not out:
        raise DataError("no records", path=str(path))
    return out


def _make_docs(rows: list[tuple[dict, str, int]]) -> list[Doc]:
    """Doc ids: the SampleID when every record has one and they are unique, else
    ``p{PassageID}-{QuestionID}-e{PassageEditID}`` when unique, else ``{file}:{line}``."""
    sids = [f["SampleID"] for f, _, _ in rows]
    if None not in sids and len(set(sids)) == len(sids):
        ids = [str(s) for s in sids]
    else:
        ids = [f"p{f['PassageID']}-{f['QuestionID']}-e{f['PassageEditID']}" for f, _, _ in rows]
        if len(set(ids)) != len(ids):
            ids = [f"{Path(p).stem}:{n}" for _, p, n in rows]
    return [Doc(i, f, p) for i, (f, p, _) in zip(ids, rows)]


def _load_local(root: Path, split: str) -> list[Doc]:
    if split == "test":
        found = [_find(root, _TEST_FILES, i) for i in range(1, N_SPLITS + 1)]
        parts = [p for p in found if p is not None]
        if len(parts) == len(found):
            return _make_docs([r for i, p in enumerate(parts, 1) for r in _read_file(p, i)])
        if (root / OFFICIAL_FILES["test"]).is_file():
            return _make_docs(_read_file(root / OFFICIAL_FILES["test"]))
        raise DataError(
            "CONDAQA test data not found (need the five few-shot test split files "
            "or condaqa_test.json)",
            path=str(root),
            fix="point NEGBENCH_DATA / NEGBENCH_CONDAQA at the official data folder",
        )
    if split in ("train", "dev"):
        return _make_docs(_read_file(root / OFFICIAL_FILES[split]))
    for prefix, files, what, stem in (
        ("test", _TEST_FILES, "test split", "conda_fewshot_test"),
        ("shots", _SHOT_FILES, "9-shot train split", "conda_fewshot_train"),
    ):
        i = _split_number(split, prefix)
        if i is not None:
            p = _find(root, files, i)
            if p is None:
                raise DataError(
                    f"{what} {i} not found",
                    path=str(root / files[0][0]),
                    fix=f"expected {stem}_{i}.json from the official release",
                )
            return _make_docs(_read_file(p, i))
    raise TaskError(
        f"CONDAQA has no split '{split}'", where="split", fix="one of " + ", ".join(SPLITS)
    )


def _load_hf(dataset_id: str, split: str) -> list[Doc]:
    where = f"hf:{dataset_id}"
    if split not in _HF_SPLITS:
        raise DataError(
            f"split '{split}' exists only in the GitHub release (the Hugging Face copy "
            "has train / validation / test)",
            path=where,
            fix="use a local folder of the official release for test1..5 / shots1..5",
        )
    ds = load_hub_dataset(
        dataset_id,
        _HF_SPLITS[split],
        what="CONDAQA",
        local="use a local folder of the official release (NEGBENCH_DATA / NEGBENCH_CONDAQA)",
    )
    src = f"{where}/{_HF_SPLITS[split]}"
    rows = [(_parse(dict(obj), src, f"row {n}", None), src, n) for n, obj in enumerate(ds)]
    if not rows:
        raise DataError("no records", path=src)
    return _make_docs(rows)


@lru_cache(maxsize=None)
def _train_cues(source: str) -> frozenset[str] | None:
    """``original cue`` values of the training set, or None when no train file is available."""
    root = Path(source)
    if root.is_dir():
        return (
            analysis.cue_set(d.fields for d in _load_local(root, "train"))
            if (root / OFFICIAL_FILES["train"]).is_file()
            else None
        )
    try:
        return analysis.cue_set(d.fields for d in _load_cached(source, "train"))
    except DataError:  # no train split reachable: unknown
        return None


@lru_cache(maxsize=None)
def _shot_cues(source: str, i: int) -> frozenset[str] | None:
    root = Path(source)
    p = _find(root, _SHOT_FILES, i) if root.is_dir() else None
    return analysis.cue_set(f for f, _, _ in _read_file(p)) if p else None


def _annotate(docs: list[Doc], source: str, split: str) -> list[Doc]:
    """Add the cue-novelty flags (:func:`negbench.tasks.condaqa.analysis.cue_flags`)."""
    train = _train_cues(source) if split != "train" else None
    out = []
    for d in docs:
        shots = _shot_cues(source, d["split"]) if d["split"] is not None else None
        flags = analysis.cue_flags(d["original cue"], train, shots)
        if split == "train":
            flags["cue_seen_train"] = d["original cue"] is not None or None
        out.append(Doc(d.id, {**d.fields, **flags}, d.source))
    return out


@lru_cache(maxsize=None)
def _load_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if root.is_dir():
        return tuple(_annotate(_load_local(root, split), source, split))
    if source.startswith("hf:") or (not root.exists() and _HF_PAT.match(source)):
        docs = _load_hf(source[3:] if source.startswith("hf:") else source, split)
        return tuple(_annotate(docs, source, split))
    raise DataError(
        "CONDAQA data folder not found",
        path=source,
        fix="set NEGBENCH_DATA (folder holding condaqa/data), NEGBENCH_CONDAQA (a "
        "folder or hf:lasha-nlp/CONDAQA), or run from the project root next to "
        "../shared/data",
    )


def load_split(split: str, source: str | os.PathLike | None = None) -> list[Doc]:
    """The records of one split from a folder (official layout or file names) or a Hugging Face
    id (``hf:owner/name`` or ``owner/name``); ``source`` defaults to :func:`default_source`."""
    if split not in SPLITS:
        raise TaskError(
            f"CONDAQA has no split '{split}'", where="split", fix="one of " + ", ".join(SPLITS)
        )
    src = str(source) if source is not None else default_source()
    if Path(src).is_dir():
        src = str(Path(src).resolve())
    return list(_load_cached(src, split))


def clear_cache() -> None:
    _load_cached.cache_clear()
    _train_cues.cache_clear()
    _shot_cues.cache_clear()


# -- rendering -------------------------------------------------------------------------------------
def render_query(passage: str, question: str) -> str:
    """One Figure 5 instance up to ``Answer:`` (passage and question stripped)."""
    return f"Passage: {passage.strip()}\nQuestion: {question.strip()}\nAnswer:"


def description(mode: str = "") -> str:
    return DESCRIPTION + DESCRIPTION_SEPARATOR


def _meta(d: Doc) -> dict[str, Any]:
    """What the metrics read: group keys, gold answer, split, and the analysis fields (question
    length in Treebank tokens, the negation cue and whether it is seen in train / in the split's
    9 released shots; see :mod:`negbench.tasks.condaqa.analysis`)."""
    f = d.fields
    return {
        "PassageID": d["PassageID"],
        "QuestionID": d["QuestionID"],
        "PassageEditID": d["PassageEditID"],
        "answer_type": d["answer_type"],
        "answer": d["answer"],
        "split": d["split"],
        "SampleID": d["SampleID"],
        "question_len": f.get("question_len"),
        "cue": f.get("original cue"),
        "cue_seen_train": f.get("cue_seen_train"),
        "cue_in_shots": f.get("cue_in_shots"),
    }


def render_generate(d: Doc) -> Rendered:
    return Rendered(
        render_query(d["passage"], d["question"]),
        [],
        d["answer"],
        target=d["answer"],
        meta=_meta(d),
    )


def render_loglik(d: Doc) -> Rendered:
    """Choices YES / NO / DON'T KNOW; a span-answer record gets ``gold=None`` (excluded from the
    metrics) but still shows its span when used as a shot."""
    gold = LABELS.index(d["answer"]) if d["answer_type"] != "span" else None
    return Rendered(
        render_query(d["passage"], d["question"]),
        list(LABELS),
        gold,
        target=d["answer"],
        meta=_meta(d),
    )


#: Figure 6 / App. C.2: "Input: {task_description} {task_examples} {test_instance} Answer: Let's
#: think step by step." — "Output: {explanation} So the answer is {answer}."
COT_TRIGGER = "Let's think step by step."
COT_STOP = ("###", "\nPassage:")
COT_MAX_TOKENS = 128


def cot_target(answer: str, explanation: str | None) -> str:
    """A CoT shot's answer line after ``Answer: Let's think step by step.``.  The paper's 45
    hand-written explanations are not released: a shot without an ``explanation`` field shows
    only ``So the answer is {answer}.``"""
    tail = f"So the answer is {answer}."
    return f"{explanation.strip()} {tail}" if explanation and explanation.strip() else tail


def render_cot(d: Doc) -> Rendered:
    return Rendered(
        render_query(d["passage"], d["question"]) + " " + COT_TRIGGER,
        [],
        d["answer"],
        target=cot_target(d["answer"], d.fields.get("explanation")),
        meta=_meta(d),
    )


def is_label_answer(d: Doc) -> bool:
    return d["answer_type"] != "span"


GENERATE = Generation(stop=STOP, max_tokens=MAX_TOKENS, extract=cut_answer, normalize=em_normalize)
COT = Generation(
    stop=COT_STOP, max_tokens=COT_MAX_TOKENS, extract=cot_answer, normalize=em_normalize
)
LOGLIK = ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER)


# -- metrics (pure functions of per-sample records) -------------------------------------------------
def _key(records: Sequence[dict], key: str | None) -> str:
    if key:
        return key
    return "exact_match" if records and "exact_match" in records[0] else "acc"


def _outcomes(records: Iterable[dict], key: str, spans: str) -> list[tuple[dict, bool]]:
    """(meta, correct) per record.  ``spans``: ``keep`` the record's own score, ``exclude`` records
    whose gold answer is a span, or count them ``wrong``."""
    if spans not in ("keep", "exclude", "wrong"):
        raise ValueError(f"spans must be keep, exclude or wrong, not {spans!r}")
    out = []
    for r in records:
        m = r["meta"]
        if m.get("answer_type") == "span":
            if spans == "exclude":
                continue
            if spans == "wrong":
                out.append((m, False))
                continue
        v = r.get(key)
        out.append((m, bool(v) if v is not None else False))
    return out


def accuracy(records: Sequence[dict], key: str | None = None, spans: str = "keep") -> float:
    """Share of correct records (``key``: ``exact_match`` for generation, ``acc`` / ``acc_norm``
    for log-likelihood; default: whichever the records carry)."""
    return mean([float(c) for _, c in _outcomes(records, _key(records, key), spans)])


def accuracy_by_edit(
    records: Sequence[dict], key: str | None = None, spans: str = "keep"
) -> dict[str, dict]:
    """Table 10: accuracy per passage type over all scored records."""
    per: dict[int, list[float]] = {e: [] for e in EDITS}
    for m, c in _outcomes(records, _key(records, key), spans):
        per[m["PassageEditID"]].append(float(c))
    return {EDITS[e]: {"n": len(v), "acc": mean(v)} for e, v in per.items()}


def groups(
    records: Sequence[dict], key: str | None = None, spans: str = "keep"
) -> tuple[dict[tuple, dict[int, bool]], int]:
    """Complete consistency groups and the number of incomplete ones.

    A group is the records sharing (PassageID, QuestionID); it is complete when it holds exactly one
    record for each PassageEditID 0, 1, 2, 3 (§4: the 5,608 questions with all four edit types).
    Returns ({(PassageID, QuestionID): {edit: correct}}, number of incomplete groups)."""
    raw: dict[tuple, list[tuple[int, bool]]] = {}
    for m, c in _outcomes(records, _key(records, key), spans):
        raw.setdefault((m["PassageID"], str(m["QuestionID"])), []).append((m["PassageEditID"], c))
    complete, incomplete = {}, 0
    for g, members in raw.items():
        if sorted(e for e, _ in members) == [0, 1, 2, 3]:
            complete[g] = dict(members)
        else:
            incomplete += 1
    return complete, incomplete


def consistency(records: Sequence[dict], key: str | None = None, spans: str = "keep") -> dict:
    """Question-level consistency (§4): share of complete groups whose four records are all
    correct."""
    comp, inc = groups(records, key, spans)
    return {
        "consistency": mean([float(all(g.values())) for g in comp.values()]),
        "n_groups": len(comp),
        "n_groups_incomplete": inc,
    }


def edit_consistency(records: Sequence[dict], key: str | None = None, spans: str = "keep") -> dict:
    """Edit-level consistency (§4): for each complete group, the pair (original, edit) counts when
    both are correct; one pair per complete group and edit type (App. B: 1,402 groups for each)."""
    comp, _ = groups(records, key, spans)
    out = {}
    for e in (1, 2, 3):
        out[f"consistency_{EDITS[e]}"] = mean([float(g[0] and g[e]) for g in comp.values()])
    out["n_pairs"] = len(comp)
    return out


def consistency_intervals(
    records: Sequence[dict], key: str | None = None, spans: str = "keep"
) -> dict:
    """95 % intervals of the consistency metrics: each complete group counts once (a 0/1 per
    group), so Wilson over the groups — None under the groups its coverage needs
    (:func:`negbench.scoring.intervals.proportion_interval`, docs/statistics.md)."""
    from negbench.scoring.intervals import proportion_interval

    comp, _ = groups(records, key, spans)
    vals = {"consistency": [float(all(g.values())) for g in comp.values()]}
    for e in (1, 2, 3):
        vals[f"consistency_{EDITS[e]}"] = [float(g[0] and g[e]) for g in comp.values()]
    out: dict[str, Any] = {}
    for name, v in vals.items():
        iv = proportion_interval(v, [1.0] * len(v), "groups")
        out[f"{name}_ci95"] = list(iv.ci) if iv.ci else None
    return out


def _label_of(text: str | None) -> str:
    if text is None:
        return "none"
    return answer_type(text)


def _pred_type(r: dict) -> str:
    if "answer" in r:
        return _label_of(r["answer"])
    pred = r.get("pred")
    if pred is not None and r.get("choices"):
        return _label_of(r["choices"][pred])
    return "none"


def answer_type_breakdown(
    records: Sequence[dict], key: str | None = None, spans: str = "keep"
) -> dict:
    """Figure 8: accuracy per gold answer type (yes / no / dont_know / span; the span accuracy is
    NaN when ``spans="exclude"``), and how often each type is predicted (``none``: no answer)."""
    k = _key(records, key)
    by: dict[str, list[float]] = {t: [] for t in ANSWER_TYPES}
    preds: Counter = Counter()
    for r in records:
        by[r["meta"]["answer_type"]].append(float(bool(r.get(k))))
        preds[_pred_type(r)] += 1
    n = len(records)
    gold = {
        t: {"n": len(v), "share": len(v) / n if n else float("nan"), "acc": mean(v)}
        for t, v in by.items()
    }
    if spans == "exclude":
        gold["span"]["acc"] = float("nan")
    elif spans == "wrong":
        gold["span"]["acc"] = 0.0 if by["span"] else float("nan")
    return {"gold": gold, "predicted": {t: preds.get(t, 0) for t in ANSWER_TYPES + ("none",)}}


def scores(records: Sequence[dict], key: str | None = None, spans: str = "keep") -> dict:
    """The Table 4 columns plus Table 10 as one flat dict (fractions, not percentages)."""
    k = _key(records, key)
    out: dict[str, Any] = {
        "accuracy": accuracy(records, k, spans),
        "n_scored": len(_outcomes(records, k, spans)),
    }
    out.update(consistency(records, k, spans))
    out.update({kk: v for kk, v in edit_consistency(records, k, spans).items() if kk != "n_pairs"})
    out.update(consistency_intervals(records, k, spans))
    by_edit = accuracy_by_edit(records, k, spans)
    for name, v in by_edit.items():
        out[f"acc_{name}"] = v["acc"]
        out[f"n_{name}"] = v["n"]
    # per edit type as a breakdown (n and a Wilson interval per cell: one passage of each kind
    # per question), shown by run, show and the report
    out["acc_by_edit"] = {
        name: {"n": v["n"], "acc": v["acc"], "acc_ci95": _wilson_list(v["acc"], v["n"])}
        for name, v in by_edit.items()
    }
    return out


def _wilson_list(p: float, n: int) -> list[float] | None:
    """Wilson's interval of a share p of n items, None under 30 (``share_interval``)."""
    from negbench.scoring.intervals import share_interval

    ci = share_interval(round(p * n), n).ci if n and p == p else None
    return list(ci) if ci else None


HEADLINE = (
    "accuracy",
    "consistency",
    "consistency_paraphrase",
    "consistency_scope",
    "consistency_affirmative",
    "acc_original",
    "acc_paraphrase",
    "acc_scope",
    "acc_affirmative",
)


def summarize_splits(per_split: Sequence[dict], metrics: Sequence[str] = HEADLINE) -> dict:
    """Mean and spread of each metric over the splits (Table 11): ``sd`` is the sample SD (n − 1,
    :func:`negbench.scoring.metrics.sd`), ``sd_pop`` the population SD (numpy's default)."""
    out = {}
    for m in metrics:
        vals = [float(s[m]) for s in per_split if isinstance(s.get(m), (int, float))]
        mu = mean(vals)
        pop = math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals)) if vals else float("nan")
        out[m] = {"mean": mu, "sd": sd(vals), "sd_pop": pop, "n_splits": len(vals), "values": vals}
    return out


def by_split(records: Sequence[dict], key: str | None = None, spans: str = "keep") -> dict:
    """Scores per test split (records' ``meta.split``) and their mean / SD over the splits."""
    k = _key(records, key)
    parts: dict[int, list[dict]] = {}
    for r in records:
        s = r["meta"].get("split")
        if s is not None:
            parts.setdefault(int(s), []).append(r)
    per = {str(s): scores(rs, k, spans) for s, rs in sorted(parts.items())}
    return {"per_split": per, "over_splits": summarize_splits(list(per.values()))}


GENERATION_MODES = ("generate", "cot")


def rescore_generation(mode: str, records: Sequence[dict]) -> list[dict]:
    """Generation records with both correctness fields recomputed from the raw ``output`` (so a
    run saved before a fix is rescored the same way): ``em_paper`` — the mode's answer
    (:func:`cut_answer` / :func:`cot_answer`) equal to the gold after strip + lower-case (§4, the
    headline) — and ``em_normalized`` — the same answer read with :func:`canonical_label` first
    (``No.``, ``"no"``, ``dont know`` count as labels; negbench's lenient reading)."""
    extract = cot_answer if mode == "cot" else cut_answer
    out = []
    for r in records:
        gold = em_normalize(r["meta"]["answer"])
        out_text = r.get("output")
        ans = extract(out_text) if isinstance(out_text, str) else r.get("answer")
        strict = ans is not None and em_normalize(ans) == gold
        norm = ans is not None and em_normalize(canonical_label(ans) or ans) == gold
        out.append({**r, "em_paper": float(strict), "em_normalized": float(norm)})
    return out


def condaqa_metrics(mode: str, records: list[dict]) -> dict:
    """``Task.extra_metrics`` for CONDAQA: the flat headline scores (for generation modes from
    ``em_paper``, with the label-normalised variant beside them as ``*_normalized`` and
    ``normalized``); for ``loglik`` span-answer records are excluded (``n_span_excluded``;
    ``spans_as_wrong`` gives the paper-comparable variant that counts them wrong) and the
    ``acc_norm`` variant is added; ``by_answer_type``; ``by_question_length`` and
    ``by_cue_novelty`` (App. D); and, when the records come from two or more test splits,
    ``by_split`` with the mean / SD."""
    generation = mode in GENERATION_MODES or bool(records and "exact_match" in records[0])
    if generation:
        records = rescore_generation(mode, records)
    key = "em_paper" if generation else "acc"
    spans = "keep" if generation else "exclude"
    out = scores(records, key, spans)
    if generation:
        norm = scores(records, "em_normalized", spans)
        out["normalized"] = norm
        for m in (
            "accuracy",
            "consistency",
            "consistency_paraphrase",
            "consistency_scope",
            "consistency_affirmative",
        ):
            out[f"{m}_normalized"] = norm[m]
        if mode == "cot":
            out["n_cot_no_answer"] = sum(1 for r in records if r.get("answer") is None)
    kept = _outcomes(records, key, spans)
    out["by_question_length"] = analysis.by_question_length(kept)
    out["by_cue_novelty"] = analysis.by_cue_novelty(kept)
    n_span = sum(1 for r in records if r["meta"].get("answer_type") == "span")
    out["n_span"] = n_span
    if spans == "exclude":
        out["n_span_excluded"] = n_span
        out["spans_as_wrong"] = scores(records, key, "wrong")
        if records and "acc_norm" in records[0]:
            out["acc_norm_scores"] = scores(records, "acc_norm", spans)
    out["by_answer_type"] = answer_type_breakdown(records, key, spans)
    if len({r["meta"].get("split") for r in records} - {None}) >= 2:
        out["by_split"] = by_split(records, key, spans)
    out["majority"] = majority_baseline(records)  # the floor row, on the same records
    if generation and mode != "cot":
        out.update(lenient_accuracy(records))
    return out


def accuracy_parts(mode: str, records: list[dict]) -> dict:
    """The headline ``accuracy`` per contrast group (correct, scored records), read as
    :func:`condaqa_metrics` reads it — so its 95 % interval resamples whole groups."""
    generation = mode in GENERATION_MODES or bool(records and "exact_match" in records[0])
    if generation:
        records = rescore_generation(mode, records)
    out: dict = {}
    for m, c in _outcomes(
        records, "em_paper" if generation else "acc", "keep" if generation else "exclude"
    ):
        k = (m["PassageID"], str(m["QuestionID"]))
        s, n = out.get(k, (0.0, 0.0))
        out[k] = (s + float(c), n + 1.0)
    return out


#: A subset keeps whole contrast groups: one question asked on the original passage and its
#: paraphrase, scope and affirmative edits (consistency needs all four).
STRUCTURE = Structure(
    unit=("PassageID", "QuestionID"), unit_name="contrast group", units_name="contrast groups"
)
#: The paper's strict exact match beside negbench's lenient readings of the same outputs.
LENIENT = (("accuracy", "accuracy_lenient"), ("accuracy", "accuracy_normalized"))


# -- majority baseline --------------------------------------------------------------------------
def docs_to_records(docs: Iterable[Doc]) -> list[dict]:
    """Model-free records (``doc_id``, ``gold``, ``meta``) for baselines computed from data."""
    return [{"doc_id": d.id, "gold": d["answer"], "meta": _meta(d)} for d in docs]


def majority_label(items: Iterable[Doc | dict]) -> str:
    """The most frequent label answer (YES / NO / DON'T KNOW; spans ignored; ties broken in that
    order) among Docs or records."""
    c: Counter = Counter()
    for x in items:
        a = x["answer"] if isinstance(x, Doc) else x["meta"]["answer"]
        lab = canonical_label(a)
        if lab:
            c[lab] += 1
    if not c:
        raise ValueError("no label answers to take a majority from")
    return max(LABELS, key=lambda lab: (c[lab], -LABELS.index(lab)))


def majority_baseline(records: Sequence[dict], label: str = PAPER_MAJORITY) -> dict:
    """Table 4's floor: answer ``label`` to every record (the gold comes from ``meta.answer``);
    the same scores as :func:`scores`.  ``label=majority_label(dev_docs)`` gives the dev majority."""
    pred = em_normalize(label)
    recs = [
        {"meta": r["meta"], "correct": float(em_normalize(r["meta"]["answer"]) == pred)}
        for r in records
    ]
    out = scores(recs, "correct", "keep")
    out["label"] = label
    return out


# -- averaging the few-shot protocol over the five splits --------------------------------------
def average_over_splits(
    results: dict,
    mode: str = "generate",
    shots: int = N_SHOTS,
    prefix: str = "condaqa-split",
    metrics: Sequence[str] = HEADLINE,
) -> dict:
    """Mean / SD over the five ``condaqa-split{i}`` tasks of a runner ``results`` dict (its
    ``units``) for one mode and number of shots.  Several seeds of one split are averaged first."""
    per_split = []
    found = []
    for i in range(1, N_SPLITS + 1):
        units = [
            u
            for u in results.get("units", {}).values()
            if u.get("task") == f"{prefix}{i}" and u.get("mode") == mode and u.get("shots") == shots
        ]
        if not units:
            continue
        found.append(i)
        per_split.append(
            {
                m: mean(
                    [
                        float(u["metrics"][m])
                        for u in units
                        if isinstance(u["metrics"].get(m), (int, float))
                    ]
                )
                for m in metrics
            }
        )
    if not per_split:
        raise TaskError(
            f"no {prefix}1..{N_SPLITS} results for mode '{mode}' with {shots} shots",
            where="results",
            fix=f"run the tasks {prefix}1..{prefix}{N_SPLITS}",
        )
    out = summarize_splits(per_split, metrics)
    out["_splits"] = found
    return out


# -- Table 4 beside the paper ----------------------------------------------------------------------
#: Rows of the paper's Table 4 (percent): accuracy, consistency, paraphrase / scope / affirmative
#: consistency.  Only rows whose numbers are legible in our copy of the paper are listed (the
#: InstructGPT rows are read from Table 11, which repeats Table 4 with SDs).
PAPER_TABLE4: tuple[tuple[str, str, tuple[float, ...]], ...] = (
    ("heuristic", "Majority (paper)", (47.75, 1.35, 51.50, 16.48, 8.71)),
    ("few-shot", "UnifiedQA-v2-Base 220M (paper)", (52.58, 11.97, 50.11, 24.19, 25.03)),
    ("few-shot", "InstructGPT text-davinci-002 (paper)", (60.88, 20.30, 63.92, 36.40, 33.98)),
    (
        "few-shot, cot",
        "InstructGPT text-davinci-002 + CoT (paper)",
        (66.28, 27.28, 64.27, 45.08, 44.91),
    ),
    ("zero-shot", "UnifiedQA-v2-Base 220M (paper)", (55.65, 16.20, 52.47, 29.23, 30.83)),
    ("zero-shot", "Flan-T5-XXL 11B (paper)", (67.53, 31.61, 67.43, 45.45, 47.86)),
    ("zero-shot", "GPT-3 175B (paper)", (43.72, 1.28, 41.33, 10.67, 10.89)),
    ("human", "Human (paper)", (91.94, 81.58, 93.65, 86.49, 88.22)),
)
TABLE4_COLUMNS = (
    "accuracy",
    "consistency",
    "consistency_paraphrase",
    "consistency_scope",
    "consistency_affirmative",
)


def _is_split_task(unit: dict) -> bool:
    """A plain ``condaqa-split{i}`` unit (study variants ``condaqa-split{i}[…]`` have their own
    table, :func:`negbench.tasks.condaqa.study.table8_9`)."""
    return re.fullmatch(r"condaqa-split\d+", str(unit.get("task", ""))) is not None


def table4(results: dict) -> str | None:
    """Our rows — each mode × shots averaged over the five ``condaqa-split{i}`` tasks (mean ± SD),
    plus the majority floor on the same records — beside the legible rows of the paper's
    Table 4.  None when the run has no split tasks."""
    units = results.get("units", {})
    cells = sorted({(u["mode"], u["shots"]) for u in units.values() if _is_split_task(u)})
    if not cells:
        return None
    head = (
        ["setting", "model", "splits", "n"]
        + ["acc", "acc 95 % CI", "cons", "para", "scope", "affirm"]
        + ["acc normalised (ours)", "acc lenient (ours)"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    model = str(results.get("model", {}).get("spec", "model"))
    majority_done = False
    for mode, shots in cells:
        avg = average_over_splits(results, mode, shots, metrics=TABLE4_COLUMNS)
        cell = [
            u
            for u in units.values()
            if _is_split_task(u) and u["mode"] == mode and u["shots"] == shots
        ]
        n = sum(u["metrics"].get("n", 0) for u in cell)
        full = sum(
            int((u.get("subset") or {}).get("full") or u["metrics"].get("n", 0)) for u in cell
        )
        n_text = (
            f"{n} of {full} *"
            if any((u.get("subset") or {}).get("subset") for u in cell)
            else str(n)
        )
        vals = [_pm(avg[m]) for m in TABLE4_COLUMNS]
        vals.insert(1, _split_ci(cell, avg["accuracy"]))
        len_avg = average_over_splits(
            results, mode, shots, metrics=("accuracy_normalized", "accuracy_lenient")
        )
        vals += [_pm(len_avg["accuracy_normalized"]), _pm(len_avg["accuracy_lenient"])]
        setting = f"{'zero' if shots == 0 else f'{shots}'}-shot, {mode}"
        lines.append(
            "| " + " | ".join([setting, model, str(len(avg["_splits"])), n_text] + vals) + " |"
        )
        if not majority_done:
            maj = [
                u["metrics"]["majority"]
                for u in units.values()
                if _is_split_task(u)
                and u["mode"] == mode
                and u["shots"] == shots
                and isinstance(u["metrics"].get("majority"), dict)
            ]
            if maj:
                ms = summarize_splits(maj, TABLE4_COLUMNS)
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            "heuristic",
                            f"Majority ({PAPER_MAJORITY}), same items",
                            str(len(maj)),
                            n_text,
                        ]
                        + [_pm(ms[m]) for m in TABLE4_COLUMNS[:1]]
                        + ["–"]
                        + [_pm(ms[m]) for m in TABLE4_COLUMNS[1:]]
                        + ["–", "–"]
                    )
                    + " |"
                )
                majority_done = True
    for setting, name, paper_vals in PAPER_TABLE4:
        lines.append(
            "| "
            + " | ".join(
                [setting, name, "5", "7240", f"{paper_vals[0]:.2f}", "–"]
                + [f"{v:.2f}" for v in paper_vals[1:]]
                + ["–", "–"]
            )
            + " |"
        )
    lines.append(
        "\nn: records scored over the splits (* a subset: see each unit's rule); the "
        "accuracy's 95 % CI combines the splits' intervals (independent test splits, "
        "one seed each)."
    )
    return "\n".join(lines)


def _split_ci(cell: list[dict], mean_acc: dict) -> str:
    """95 % CI (percent) of the mean accuracy over the splits from each split's own interval:
    mean ± 1.96 √(Σ var_i) / S, var_i from the split's half-width (the first seed of each)."""
    by: dict[str, dict] = {}
    for u in cell:
        by.setdefault(str(u["task"]), u)
    halves = []
    for u in by.values():
        ci = (u.get("headline") or {}).get("ci95")
        if not ci or ci[0] is None or ci[1] is None:
            return "–"
        halves.append((ci[1] - ci[0]) / 2)
    mu = mean_acc.get("mean")
    if not halves or mu is None or mu != mu:
        return "–"
    half = math.sqrt(sum(h * h for h in halves)) / len(halves)
    return f"{100 * max(0.0, mu - half):.2f}–{100 * min(1.0, mu + half):.2f}"


def _pm(agg: dict) -> str:
    mu, s = 100 * agg["mean"], 100 * agg["sd"]
    if mu != mu:
        return "–"
    return f"{mu:.2f}" + (f" ± {s:.2f}" if agg.get("n_splits", 1) > 1 and s == s else "")


# -- tasks ---------------------------------------------------------------------------------------
def _modes() -> dict[str, ModeSpec]:
    return {
        "generate": ModeSpec(
            render_generate,
            GENERATE,
            "Figure 5 prompt, greedy generation until newline / ###, answer "
            "normalised to YES / NO / DON'T KNOW or a span, exact match",
            headline="accuracy",
        ),
        "cot": ModeSpec(
            render_cot,
            COT,
            "Figure 6 chain-of-thought: the Figure 5 prompt ending in 'Answer: Let's "
            "think step by step.'; the answer after 'So the answer is', exact match",
            headline="accuracy",
        ),
        "loglik": ModeSpec(
            render_loglik,
            LOGLIK,
            "log-likelihood of ' YES' / ' NO' / ' DON'T KNOW' after the "
            "Figure 5 prompt; span-answer records excluded",
            include=is_label_answer,
            headline="accuracy",
        ),
    }


class _CommonOptions(TypedDict):
    """The :class:`Task` options every CONDAQA task shares."""

    load: Callable[[str], Sequence[Doc]]
    modes: dict[str, ModeSpec]
    default_modes: Sequence[str]
    description: Callable[[str], str]
    target_delimiter: str
    fewshot_delimiter: str
    extra_metrics: Callable[[str, list[dict]], dict] | None
    tables: Callable[[str, list[tuple[str, dict]]], str] | None
    language: str
    source: str
    structure: Structure
    headline_parts: Callable[[str, list[dict]], dict[Hashable, tuple[float, float]]] | None
    lenient_metrics: tuple[tuple[str, str], ...]
    data: Any


def make_tasks(source: str | os.PathLike | None = None) -> list[Task]:
    """``condaqa`` (full test set, zero-shot) and ``condaqa-split1..5`` (test split i with the 9
    shots of train split i), reading from ``source`` (default: :func:`default_source`, resolved
    when the data is first loaded)."""

    def loader(split: str) -> list[Doc]:
        return load_split(split, source)

    common: _CommonOptions = dict(
        load=loader,
        modes=_modes(),
        default_modes=("generate",),
        description=description,
        target_delimiter=TARGET_DELIMITER,
        fewshot_delimiter=FEWSHOT_DELIMITER,
        extra_metrics=condaqa_metrics,
        tables=analysis.tables,
        language="en",
        source=SOURCE,
        structure=STRUCTURE,
        headline_parts=accuracy_parts,
        lenient_metrics=LENIENT,
        data=DATA,
    )
    tasks = [
        Task(
            name="condaqa",
            summary="CONDAQA test set (7,240), zero-shot, Figure 5 prompt; accuracy and "
            "consistency (English reading comprehension about negation)",
            test_split="test",
            fewshot_split="dev",
            default_shots=(0,),
            **common,
        )
    ]
    for i in range(1, N_SPLITS + 1):
        tasks.append(
            Task(
                name=f"condaqa-split{i}",
                summary=f"CONDAQA test split {i} with the 9 shots of train split {i} "
                "(paper's few-shot protocol; average the five)",
                test_split=f"test{i}",
                fewshot_split=f"shots{i}",
                default_shots=(0, N_SHOTS),
                fewshot_sampler="fixed",
                **common,
            )
        )
    return tasks


TASKS: list[Task] = make_tasks()
