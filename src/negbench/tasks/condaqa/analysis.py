"""CONDAQA analyses of App. D: accuracy by question length (Figure 7) and by negation-cue novelty.

Both are pure functions of per-sample records: the records' ``meta`` carries ``question_len``
(Treebank tokens of the question), ``cue`` (the record's ``original cue``), ``cue_seen_train``
(the cue is the ``original cue`` of some training record; None when no train file is loaded) and
``cue_in_shots`` (the cue is the ``original cue`` of one of the 9 released shots of the record's
own few-shot split — the only training records a few-shot model sees; None when unknown).  So
``negbench rescore`` recomputes them, and ``tables`` renders them as Markdown with a run.

Why Treebank tokens: NLTK's Treebank tokenizer reproduces Table 1 exactly on the release (test:
3,616 questions with > 20 tokens, mean 24.34 vs the printed 24.35; dev: 650, 26.37 vs 26.38);
whitespace words give 3,243 / 22.18.  ``nltk`` is optional: without it a regex close to Treebank
is used (:func:`tokenizer_name` says which).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable, Sequence

from negbench.scoring.metrics import mean, share_cell

#: Figure 7's bins are not legible in our copy of the paper; we use 10-token bins, with the
#: boundary at 20 that Table 1 uses ("# Questions w/ >20 tokens").
LENGTH_BUCKETS: tuple[tuple[int, int | None, str], ...] = (
    (0, 10, "1-10"),
    (11, 20, "11-20"),
    (21, 30, "21-30"),
    (31, 40, "31-40"),
    (41, None, ">40"),
)

_FALLBACK = re.compile(r"n't|'\w+|\w+(?:[.-]\w+)*|[^\w\s]")

#: PassageEditID → the kind of passage (0: the original; 1–3: the three edits, §3)
EDITS = {0: "original", 1: "paraphrase", 2: "scope", 3: "affirmative"}


@functools.lru_cache(maxsize=1)
def _treebank():
    """NLTK's Treebank tokenizer, imported on first use: ``import nltk`` pulls in scipy, sklearn
    and pandas (3.4 s and ~100 MB), which a run that never measures question length should not
    pay."""
    try:  # optional dependency
        from nltk.tokenize import TreebankWordTokenizer
    except ImportError:  # pragma: no cover - depends on the env
        return None
    return TreebankWordTokenizer()


def tokenizer_name() -> str:
    """Which tokenizer :func:`question_tokens` uses here: ``nltk-treebank`` or ``regex``."""
    return "regex" if _treebank() is None else "nltk-treebank"


def question_tokens(text: str) -> int:
    """Number of tokens of a question (NLTK Treebank tokenizer; a close regex without nltk)."""
    tb = _treebank()
    if tb is not None:
        return len(tb.tokenize(text))
    return len(_FALLBACK.findall(text))


def length_bucket(n: int | None) -> str | None:
    if n is None:
        return None
    for lo, hi, name in LENGTH_BUCKETS:
        if n >= lo and (hi is None or n <= hi):
            return name
    return None


def norm_cue(cue: str | None) -> str | None:
    """Cues compare case-insensitively, surrounding whitespace ignored."""
    if cue is None:
        return None
    c = " ".join(cue.split()).lower()
    return c or None


def cue_set(fields: Iterable[dict]) -> frozenset[str]:
    return frozenset(c for c in (norm_cue(f.get("original cue")) for f in fields) if c)


def cue_flags(
    cue: str | None, train_cues: frozenset[str] | None, shot_cues: frozenset[str] | None
) -> dict[str, Any]:
    """The two novelty flags of one record (None where the reference set is unknown)."""
    c = norm_cue(cue)
    return {
        "cue_seen_train": None if train_cues is None or c is None else c in train_cues,
        "cue_in_shots": None if shot_cues is None or c is None else c in shot_cues,
    }


# -- metrics over (meta, correct) outcomes --------------------------------------------------------
Outcome = tuple[dict, bool]


def by_question_length(outcomes: Sequence[Outcome]) -> dict[str, dict]:
    """Figure 7: {bucket: {n, acc}} over the scored records (buckets of :data:`LENGTH_BUCKETS`;
    records without ``question_len`` are left out)."""
    per: dict[str, list[float]] = {name: [] for _, _, name in LENGTH_BUCKETS}
    for m, c in outcomes:
        b = length_bucket(m.get("question_len"))
        if b is not None:
            per[b].append(float(c))
    return {b: {"n": len(v), "acc": mean(v)} for b, v in per.items()}


def by_cue_novelty(outcomes: Sequence[Outcome]) -> dict[str, dict]:
    """App. D "Novelty of negation cues": accuracy on records whose cue was seen vs unseen.

    Two references: ``train`` (the paper's: the cue is the ``original cue`` of a training record;
    needs ``condaqa_train.json``) and ``shots`` (the cue is among the 9 released shots of the
    record's split — what a few-shot model was shown).  Each is given over the original Wikipedia
    passages (``original``, PassageEditID 0: the paper compares "Wikipedia passages") and over
    ``all`` records; ``unknown`` counts records without the flag."""
    out: dict[str, dict] = {}
    for ref, flag in (("train", "cue_seen_train"), ("shots", "cue_in_shots")):
        block: dict[str, dict] = {}
        for scope in ("original", "all"):
            seen: list[float] = []
            unseen: list[float] = []
            unknown = 0
            for m, c in outcomes:
                if scope == "original" and m.get("PassageEditID") != 0:
                    continue
                f = m.get(flag)
                if f is None:
                    unknown += 1
                else:
                    (seen if f else unseen).append(float(c))
            block[scope] = {
                "seen": {"n": len(seen), "acc": mean(seen)},
                "unseen": {"n": len(unseen), "acc": mean(unseen)},
                "n_unknown": unknown,
            }
        out[ref] = block
    return out


# -- Markdown with a run (Task.tables) ------------------------------------------------------------
def _pct(v: Any) -> str:
    return f"{100 * v:.2f}" if isinstance(v, (int, float)) and v == v else "–"


def tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    """Edit-type, question-length and cue-novelty tables of one task × mode: a row per unit,
    each cell with its Wilson 95 % interval and n."""
    parts = []
    erows = [(u, m) for u, m in rows if any(f"n_{e}" in m for e in EDITS.values())]
    if erows:
        lines = [
            "Accuracy (%) by passage edit (one passage of each kind per question): value [95 % "
            "Wilson interval] (n)",
            "",
            "| unit | " + " | ".join(EDITS.values()) + " |",
            "|---|" + "---|" * len(EDITS),
        ]
        for u, m in erows:
            lines.append(
                f"| {u} | "
                + " | ".join(share_cell(m.get(f"acc_{e}"), m.get(f"n_{e}")) for e in EDITS.values())
                + " |"
            )
        parts.append("\n".join(lines))
    qrows = [
        (u, m["by_question_length"])
        for u, m in rows
        if isinstance(m.get("by_question_length"), dict)
    ]
    if qrows:
        heads = [name for _, _, name in LENGTH_BUCKETS]
        lines = [
            "Accuracy (%) by question length (Treebank tokens; App. D Figure 7): value [95 % "
            "Wilson interval] (n)",
            "",
            "| unit | " + " | ".join(heads) + " |",
            "|---|" + "---|" * len(heads),
        ]
        for u, q in qrows:
            lines.append(
                f"| {u} | " + " | ".join(share_cell(q[h]["acc"], q[h]["n"]) for h in heads) + " |"
            )
        parts.append("\n".join(lines))
    crows = [(u, m["by_cue_novelty"]) for u, m in rows if isinstance(m.get("by_cue_novelty"), dict)]
    if crows:
        lines = [
            "Accuracy (%) by negation-cue novelty (App. D; seen / unseen: value [95 % Wilson "
            "interval] (n); "
            "train = cue of a training record, shots = cue of one of the split's 9 released shots)",
            "",
            "| unit | reference | passages | seen | unseen | unknown |",
            "|---|---|---|---|---|---|",
        ]
        for u, cn in crows:
            for ref in ("train", "shots"):
                for scope in ("original", "all"):
                    b = cn[ref][scope]
                    lines.append(
                        f"| {u} | {ref} | {scope} | {share_cell(b['seen']['acc'], b['seen']['n'])} | "
                        f"{share_cell(b['unseen']['acc'], b['unseen']['n'])} | {b['n_unknown']} |"
                    )
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
