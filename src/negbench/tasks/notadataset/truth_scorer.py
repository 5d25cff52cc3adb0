"""The This-is-not-a-Dataset scorer: accuracy with TP/TN/FP/FN per sentence type, and coherence
per test block — pure functions of per-sentence predictions, so a saved run can be rescored.

Semantics follow the official ``evaluate.py`` (hitz-zentroa/This-is-not-a-Dataset) exactly:

* accuracy cells: ``all``, ``all_affirmations``, ``all_negations``, ``input_affirmation``,
  ``input_negation``, ``distractor_affirmation``, ``distractor_negation``; and under
  ``Negation_analysis`` ``<type>_all|_input|_distractor`` for each of the sentence's negation type,
  semantic type and syntactic scope (verbal, non_verbal, analytic, synthetic, clausal,
  subclausal); a cell exists only when a sentence falls in it; accuracy in percent, 2 decimals;
* coherence per block (a WordNet triple with all its templates): only the sentences whose label is
  the pattern's regular one (Table 10) take part; the affirmative and the negated answers must each
  be uniform and opposite, without distractor (``Affirmation-Negation_Input``) and with
  (``Affirmation-Negation_Distractor``); ``All`` also requires every answer of the block — all of
  its sentences — correct, or every one wrong; ``Input-Distractor_*`` compare the same polarity
  with and without distractor (opposite answers expected, equal for the antonymy patterns 2 and 4).

Where the official scorer would crash (a block with no sentence on one side of a comparison, as in
a partial block), the block is counted as *unscorable* for that cell and left out of its
percentage; :func:`coherence` reports how many.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterable, NamedTuple

PATTERNS = {
    1: "Synonymy1",
    2: "Antonymy1",
    3: "Synonymy2",
    4: "Antonymy2",
    5: "Hypernymy",
    6: "Part",
    7: "Substance",
    8: "Member",
    9: "Agent",
    10: "Instrument",
    11: "Result",
}
ANTONYMY = frozenset({2, 4})
NEGATION_TYPES = ("verbal", "non_verbal", "analytic", "synthetic", "clausal", "subclausal")
COHERENCE_CELLS = (
    "All",
    "Affirmation-Negation_Input",
    "Affirmation-Negation_Distractor",
    "Input-Distractor_Affirmation",
    "Input-Distractor_Negation",
)
ACCURACY_ORDER = (
    "all",
    "all_affirmations",
    "all_negations",
    "input_affirmation",
    "input_negation",
    "distractor_affirmation",
    "distractor_negation",
)


class Judged(NamedTuple):
    """One sentence's gold and predicted label, with what the scorer groups by (a named tuple:
    a full run makes 381,300 of them, twice)."""

    pattern_id: int
    block: str  # test block (triple) id
    negation_type: str  # affirmation | verbal | non_verbal
    semantic_type: str  # none | analytic | synthetic
    syntactic_scope: str  # none | clausal | subclausal
    is_distractor: bool
    label: bool
    pred: bool

    @property
    def affirmative(self) -> bool:
        return self.negation_type == "affirmation"


def regular_label(pattern_id: int, is_distractor: bool, affirmative: bool) -> bool:
    """Table 10: the truth value a sentence of this kind has in this pattern."""
    if is_distractor:
        return not affirmative
    return affirmative != (pattern_id in ANTONYMY)


# -- accuracy ---------------------------------------------------------------------------------------
# Every cell depends on a sentence only through its signature (types, distractor, gold, predicted),
# of which a run has a few hundred distinct ones: count the signatures in one pass, then fill the
# cells from the counts.
def signature(x: Judged) -> tuple:
    return (x.negation_type, x.semantic_type, x.syntactic_scope, x.is_distractor, x.label, x.pred)


def _cell() -> dict:
    return {"TP": 0, "FP": 0, "FN": 0, "TN": 0}


def _accuracy(cell: dict) -> float:
    n = cell["TP"] + cell["TN"] + cell["FP"] + cell["FN"]
    return round((cell["TP"] + cell["TN"]) / n * 100, 2) if n else 0


def cells_from_counts(counts: Iterable[tuple[tuple, int]]) -> dict:
    """The accuracy cells of sentences given as (signature, count) pairs in first-seen order."""
    cells: dict[str, dict] = {}
    neg: dict[str, dict] = {}
    for (ntype, sem, scope, dist, gold, pred), n in counts:
        outcome = ("TP" if gold else "TN") if gold == pred else ("FN" if gold else "FP")
        pol = "affirmation" if ntype == "affirmation" else "negation"
        side = "distractor" if dist else "input"
        for key in ("all", f"all_{pol}s", f"{side}_{pol}"):
            cell = cells.get(key)
            if cell is None:
                cell = cells[key] = _cell()
            cell[outcome] += n
        for t in (ntype, sem, scope):
            t = t.strip().lower()
            if t in ("affirmation", "none"):
                continue
            if f"{t}_all" not in neg:
                for suffix in ("all", "input", "distractor"):
                    neg[f"{t}_{suffix}"] = _cell()
            neg[f"{t}_all"][outcome] += n
            neg[f"{t}_{side}"][outcome] += n
    out = {k: {**cells[k], "accuracy": _accuracy(cells[k])} for k in ACCURACY_ORDER if k in cells}
    if neg:
        out["Negation_analysis"] = {k: {**v, "accuracy": _accuracy(v)} for k, v in neg.items()}
    return out


def accuracy_cells(items: Iterable[Judged]) -> dict:
    """The official ``Scorer`` output: confusion counts and accuracy (percent) per cell."""
    return cells_from_counts(Counter(map(signature, items)).items())


# -- coherence --------------------------------------------------------------------------------------
def _uniform_opposite(a: list[bool], b: list[bool], opposite: bool = True) -> bool | None:
    """Coherent (True), incoherent (False), or None where the official scorer would index an
    empty list.  Non-uniform answers are incoherent before emptiness matters, as there."""
    if len(set(a)) > 1 or len(set(b)) > 1:
        return False
    if not a or not b:
        return None
    return (a[0] != b[0]) if opposite else (a[0] == b[0])


def block_coherence(block: list[Judged]) -> dict[str, bool | None]:
    """The five coherence verdicts of one block (None: not scorable)."""
    cols = Columns.of(block)
    return _verdict(range(len(block)), block[0].pattern_id, cols)


def _verdict(idx: Iterable[int], pid: int, c: "Columns") -> dict[str, bool | None]:
    """:func:`block_coherence` of the sentences ``idx`` of columns ``c``."""
    antonymy = pid in ANTONYMY
    groups: tuple[list[bool], ...] = ([], [], [], [])  # negated, affirmative; then with distractor
    n = n_correct = 0
    ntype, dist, label, pred = c.negation_type, c.is_distractor, c.label, c.pred
    for i in idx:
        n += 1
        aff = ntype[i] == "affirmation"
        gold, p = label[i], pred[i]
        if gold == p:
            n_correct += 1
        regular = (not aff) if dist[i] else (aff != antonymy)  # regular_label
        if gold == regular:
            groups[2 * dist[i] + aff].append(p)
    neg, aff_, neg_d, aff_d = groups
    wo = _uniform_opposite(aff_, neg)
    w = _uniform_opposite(aff_d, neg_d)
    if wo is None or w is None:
        everything = None if (wo is not False and w is not False) else False
    else:
        everything = wo and w and (n_correct == n or n_correct == 0)
    return {
        "All": everything,
        "Affirmation-Negation_Input": wo,
        "Affirmation-Negation_Distractor": w,
        "Input-Distractor_Affirmation": _uniform_opposite(aff_, aff_d, opposite=not antonymy),
        "Input-Distractor_Negation": _uniform_opposite(neg, neg_d, opposite=not antonymy),
    }


def columns_verdict(idx: Iterable[int], pid: int, c: "Columns") -> dict[str, bool | None]:
    """The five coherence verdicts of the sentences ``idx`` of columns ``c`` (pattern ``pid``):
    what the Random row's expectation evaluates on the all-right and all-wrong answers."""
    return _verdict(idx, pid, c)


def tally(verdicts: Iterable[dict[str, bool | None]]) -> dict:
    """Coherence counts and percentages from per-block verdicts (:func:`block_coherence`)."""
    out: dict[str, dict[str, float]] = {
        c: {"Coherent": 0, "Incoherent": 0} for c in COHERENCE_CELLS
    }
    unscorable = {c: 0 for c in COHERENCE_CELLS}
    for verdict in verdicts:
        for cell, ok in verdict.items():
            if ok is None:
                unscorable[cell] += 1
            else:
                out[cell]["Coherent" if ok else "Incoherent"] += 1
    for cell, v in out.items():
        n = v["Coherent"] + v["Incoherent"]
        v["Coherence_percentage"] = round(v["Coherent"] / n * 100, 2) if n else 0
        if unscorable[cell]:
            v["Unscorable"] = unscorable[cell]
    return out


def coherence(blocks: Iterable[list[Judged]]) -> dict:
    """The official ``Coherence_Scorer`` output (counts and percent), plus ``Unscorable`` counts
    where a block lacks the sentences a cell compares."""
    return tally(map(block_coherence, blocks))


@dataclass
class Columns:
    """The same sentences as a list of :class:`Judged`, one list per field: what the report
    reads, and what lets a second set of predictions (the Random row) be scored without
    building the sentences again."""

    pattern_id: list[int]
    block: list[str]
    negation_type: list[str]
    semantic_type: list[str]
    syntactic_scope: list[str]
    is_distractor: list[bool]
    label: list[bool]
    pred: list[bool]

    @classmethod
    def of(cls, items: list[Judged]) -> "Columns":
        if not items:
            return cls([], [], [], [], [], [], [], [])
        return cls(*map(list, zip(*items)))

    def with_pred(self, pred: list[bool]) -> "Columns":
        return replace(self, pred=pred)

    def blocks(self) -> dict[str, list[int]]:
        """The indices of each block's sentences, blocks in first-seen order."""
        out: dict[str, list[int]] = {}
        for i, b in enumerate(self.block):
            idx = out.get(b)
            if idx is None:
                out[b] = [i]
            else:
                idx.append(i)
        return out


def report_columns(c: Columns, blocks: dict[str, list[int]]) -> dict:
    """The official report: overall cells and ``coherence_scores``, then one section per pattern
    present (named as in the release: Synonymy1, Antonymy1, …). Coherence is judged over
    ``blocks`` (block → sentence indices; each verdict computed once, counted overall and in its
    pattern)."""
    counts = Counter(
        zip(
            c.pattern_id,
            c.negation_type,
            c.semantic_type,
            c.syntactic_scope,
            c.is_distractor,
            c.label,
            c.pred,
        )
    )
    overall: dict[tuple, int] = {}
    per: dict[int, list[tuple[tuple, int]]] = {}
    for (pid, *sig), n in counts.items():
        key = tuple(sig)
        overall[key] = overall.get(key, 0) + n
        per.setdefault(pid, []).append((key, n))
    verdicts: dict[int, list[dict]] = {}
    for idx in blocks.values():
        pid = c.pattern_id[idx[0]]
        verdicts.setdefault(pid, []).append(_verdict(idx, pid, c))
    out = cells_from_counts(overall.items())
    out["coherence_scores"] = tally(v for vs in verdicts.values() for v in vs)
    for pid, name in PATTERNS.items():
        if pid in per:
            out[name] = cells_from_counts(per[pid])
            out[name]["coherence_scores"] = tally(verdicts.get(pid, ()))
    return out


def table4_row(report: dict) -> dict[str, float]:
    """The paper's Table 4 columns (percent) from a :func:`score` report."""
    acc = lambda k: report[k]["accuracy"] if k in report else float("nan")
    coh = report["coherence_scores"]
    return {
        "coherence_all": coh["All"]["Coherence_percentage"],
        "coherence_wo_distractor": coh["Affirmation-Negation_Input"]["Coherence_percentage"],
        "coherence_w_distractor": coh["Affirmation-Negation_Distractor"]["Coherence_percentage"],
        "acc": acc("all"),
        "acc_aff_wo": acc("input_affirmation"),
        "acc_neg_wo": acc("input_negation"),
        "acc_aff_w": acc("distractor_affirmation"),
        "acc_neg_w": acc("distractor_negation"),
    }
