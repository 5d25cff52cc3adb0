"""ScoNe (She, Potts, Bowman & Geiger, ACL 2023): negation scope in NLI and in narrative completion.

Data: the official release (github selenashe/ScoNe, CC0) at ``$NEGBENCH_SCONE`` or
``../shared/data/scone`` — ``scone_nli/{train,test}/<condition>.csv`` and
``scone_nlg/scone_nlg.csv``.  Nothing of it is shipped here.  See ``src/negbench/tasks/scone/README.md``.

``scone-nli``: the six conditions' test files (200 rows each, 1,200 records in the order of
:data:`CONDITIONS`); every record carries its condition (``meta.split``).  ``scone-nli[split=X]``
evaluates one condition.  Few-shot demonstrations come from the train file of the record's own
condition, two per label (entailment first), as the authors' prompt code draws them.

Prompts are the in-context-learning prompts of the paper, as published in the authors'
experiment code (github cgpotts/llm-negation, ``gpt3_negation.ipynb``): conditional question,
hypothesis question, conditional truth evaluation, Brown et al.-style, structured, each zero-shot
and few-shot, and the chain-of-thought "reasoning" prompt.  Generation answers are parsed as
there: ``entailment`` when the word "yes" occurs anywhere (case-insensitive), else ``neutral``.
``cloze`` / ``cloze-hyp`` (ours) score the few-shot answer words by log-likelihood.

``scone-nlg``: 74 triplets (negation / non-scoping negation / no negation) of half-finished
narratives.  The paper judged free completions; ``loglik`` (ours, the default) compares the
log-likelihood of the row's gold outcome with the other outcome of its triplet, ``generate``
records the greedy completion with a strict string-match proxy (ours).

Metrics: accuracy per condition (all six, ``acc_<condition>``) and over all records — pure
functions of the per-sample records (``meta.split``, ``meta.label`` and the mode's correctness
field), so ``negbench rescore`` recomputes them.
"""

from __future__ import annotations

import csv
import io
import random
import re
import string
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

from negbench.errors import DataError, TaskError
from negbench.scoring.metrics import by_group, mean
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
from negbench.tasks.data_source import DataSource
from negbench.records import read_text
from negbench.core.requests import GenerationRequest, GenerationResponse, Request
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task

NLI_NAME = "scone-nli"
NLG_NAME = "scone-nlg"
SOURCE = (
    "ScoNe, She et al. (ACL 2023); github selenashe/ScoNe (CC0); prompts from github "
    "cgpotts/llm-negation"
)

#: The six conditions, in the paper's order (Table 1): number of negations, scoping or not.
CONDITIONS: tuple[str, ...] = (
    "no_negation",
    "one_not_scoped",
    "two_not_scoped",
    "two_scoped",
    "one_scoped",
    "one_scoped_one_not_scoped",
)
CONDITION_LABELS = {
    "no_negation": "No negation",
    "one_not_scoped": "One not scoped",
    "two_not_scoped": "Two not scoped",
    "two_scoped": "Two scoped",
    "one_scoped": "One scoped",
    "one_scoped_one_not_scoped": "One scoped, one not",
}
LABELS = ("entailment", "neutral")
#: Columns per file: the edited pair, except ``one_scoped.csv`` (the original NMoNLI columns).
COLUMNS = {c: ("sentence1_edited", "sentence2_edited", "gold_label_edited") for c in CONDITIONS}
COLUMNS["one_scoped"] = ("sentence1", "sentence2", "gold_label")
NLG_COLUMNS = ("sentence", "hyper", "hypo", "gold_outcome", "prompt_type", "frame_num")
NLG_TYPES = ("neg", "not_scope", "pos")
NLG_TYPE_LABELS = {"neg": "Negation", "not_scope": "Non-scoping negation", "pos": "No negation"}
#: Paper-code generation settings: greedy (temperature 0), 200 tokens, no stop sequence.
MAX_TOKENS = 200
NLG_MAX_TOKENS = 32


# -- data ------------------------------------------------------------------------------------------
DATA = DataSource("ScoNe", "NEGBENCH_SCONE", "scone")


def data_root() -> Path:
    """``$NEGBENCH_SCONE`` when set, else ``$NEGBENCH_DATA/scone`` or ``../shared/data/scone``."""
    return Path(DATA.resolve())


def read_csv(path: Path, required: Sequence[str]) -> list[tuple[str, dict[str, str]]]:
    """(record name, row) for each data row of a CSV file; checks the header has ``required``
    and every row has as many fields as the header.  Record names are ``row n`` (1-based after
    the header)."""
    text = read_text(path) if path.is_file() else None
    if text is None:
        raise DataError(
            "data file not found",
            path=str(path),
            fix="point $NEGBENCH_SCONE at the ScoNe release (github selenashe/ScoNe)",
        )
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(reader, None)
    if not header:
        raise DataError("empty file (no header row)", path=str(path))
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(
            f"missing column(s) {', '.join(missing)}",
            path=str(path),
            record="header",
            field=missing[0],
            fix="the header must name: " + ", ".join(required),
        )
    out = []
    for n, row in enumerate(reader, 1):
        if not any(x.strip() for x in row):
            continue
        if len(row) != len(header):
            raise DataError(
                f"{len(row)} fields, the header has {len(header)}",
                path=str(path),
                record=f"row {n}",
                fix="quote fields that contain commas",
            )
        out.append((f"row {n}", dict(zip(header, row))))
    if not out:
        raise DataError("no records", path=str(path))
    return out


def _text(row: dict, col: str, path: Path, rec: str) -> str:
    v = row.get(col, "").strip()
    if not v:
        raise DataError("empty field", path=str(path), record=rec, field=col)
    return v


def read_nli(path: Path, condition: str, part: str) -> list[Doc]:
    """One condition's file as Docs: premise, hypothesis, label, split (= condition)."""
    s1, s2, lab = COLUMNS[condition]
    docs: list[Doc] = []
    seen: dict[str, str] = {}  # id -> record
    for rec, row in read_csv(path, (s1, s2, lab)):
        label = _text(row, lab, path, rec).lower()
        if label not in LABELS:
            raise DataError(
                f"label {label!r} is not entailment or neutral",
                path=str(path),
                record=rec,
                field=lab,
                fix="ScoNe-NLI labels are entailment / neutral",
            )
        idx = row.get("", "").strip() or rec.split()[1]
        rid = f"{part}/{condition}/{idx}"
        if rid in seen:
            raise DataError(
                f"duplicate row index {idx!r} (first at {seen[rid]})",
                path=str(path),
                record=rec,
                field="(index column)",
            )
        seen[rid] = rec
        docs.append(
            Doc(
                rid,
                {
                    "premise": _text(row, s1, path, rec),
                    "hypothesis": _text(row, s2, path, rec),
                    "label": label,
                    "split": condition,
                    "row": idx,
                },
                str(path),
            )
        )
    return docs


@lru_cache(maxsize=None)
def _nli(root: str, part: str, condition: str) -> tuple[Doc, ...]:
    return tuple(read_nli(Path(root) / "scone_nli" / part / f"{condition}.csv", condition, part))


def load_nli(
    part: str, conditions: Sequence[str] = CONDITIONS, root: str | Path | None = None
) -> list[Doc]:
    """Records of ``part`` (``test`` or ``train``) for ``conditions``, condition by condition."""
    r = str(root or data_root())
    return [d for c in conditions for d in _nli(r, part, c)]


def _triplet(d: Doc) -> str:
    return f"{d['frame']}/{d['hyper']}/{d['hypo']}"


def read_nlg(path: Path) -> list[Doc]:
    """ScoNe-NLG rows as Docs; every (frame, hyper, hypo) triplet must hold one row of each
    prompt type and exactly two distinct outcomes (the gold one and its contrast)."""
    docs = []
    for rec, row in read_csv(path, NLG_COLUMNS):
        f: dict[str, Any] = {c: _text(row, c, path, rec) for c in NLG_COLUMNS}
        if f["prompt_type"] not in NLG_TYPES:
            raise DataError(
                f"prompt_type {f['prompt_type']!r}",
                path=str(path),
                record=rec,
                field="prompt_type",
                fix="one of " + ", ".join(NLG_TYPES),
            )
        try:
            frame = int(f.pop("frame_num"))
        except ValueError:
            raise DataError(
                f"frame_num {row['frame_num']!r} is not an integer",
                path=str(path),
                record=rec,
                field="frame_num",
            ) from None
        f["frame"] = frame
        f["outcome"] = f["gold_outcome"].replace("HYPO", f["hypo"])
        idx = row.get("", "").strip() or rec.split()[1]
        docs.append(Doc(f"nlg/{idx}", f, str(path)))
    groups: dict[str, list[Doc]] = defaultdict(list)
    for d in docs:
        groups[_triplet(d)].append(d)
    out = []
    for key, ds in groups.items():
        types = sorted(d["prompt_type"] for d in ds)
        outcomes = list(dict.fromkeys(d["outcome"] for d in ds))
        if types != sorted(NLG_TYPES) or len(outcomes) != 2:
            raise DataError(
                f"triplet {key} has prompt types {types} and {len(outcomes)} distinct outcome(s)",
                path=str(path),
                record=ds[0].id.split("/")[1],
                field="prompt_type" if types != sorted(NLG_TYPES) else "gold_outcome",
                fix="each (frame_num, hyper, hypo) needs one neg, one not_scope and "
                "one pos row, with two different gold outcomes",
            )
    for d in docs:
        outcomes = list(dict.fromkeys(x["outcome"] for x in groups[_triplet(d)]))
        out.append(Doc(d.id, {**d.fields, "outcomes": outcomes, "triplet": _triplet(d)}, d.source))
    return out


@lru_cache(maxsize=None)
def _nlg(root: str) -> tuple[Doc, ...]:
    return tuple(read_nlg(Path(root) / "scone_nlg" / "scone_nlg.csv"))


# -- NLI prompts (authors' code, github cgpotts/llm-negation) ------------------------------------
def mid(s: str) -> str:
    """The authors' ``_mid_sentence_normalization``: lower-case the first character and drop
    trailing full stops, so a sentence can sit inside a conditional."""
    return (s[0].lower() + s[1:]).rstrip(".")


@dataclass(frozen=True)
class Prompt:
    """One published prompt: its zero-shot query, its few-shot query and numbered demonstration
    (``{i}`` = 1-based position), and the demonstration answers."""

    zero: str
    query: str
    demo: str
    answers: tuple[str, str]  # (entailment, neutral)
    normalize: bool = True  # mid-sentence normalisation of premise and hypothesis
    strip_hypothesis: bool = False  # (without it) drop the hypothesis's final full stops


# Placeholders: {p} premise, {h} hypothesis, {i} / {j} demonstration number / number + 1.
PROMPTS: dict[str, Prompt] = {
    "cond-q": Prompt(
        "Is it true that if {p}, then {h}?",
        "Q: Is it true that if {p}, then {h}?\nA:",
        "Q{i}: Is it true that if {p}, then {h}?\nA{i}:",
        ("Yes", "Maybe"),
    ),
    "hyp-q": Prompt(
        "Assume that {p}. Is it then definitely true that {h}? Answer Yes or No.",
        "Q: Assume that {p}. Is it then definitely true that {h}? Answer Yes or No.\nA:",
        "Q{i}: Assume that {p}. Is it then definitely true that {h}? Answer Yes or No.\nA{i}:",
        ("Yes", "No"),
    ),
    "cond-truth": Prompt(
        "If {p}, then {h}. Is this true?",
        # the authors' few-shot query has no space after "C:"
        "C:If {p}, then {h}. Is this true?\nA:",
        "C{i}: If {p}, then {h}. Is this true?\nA{i}:",
        ("Yes", "Maybe"),
    ),
    # Brown et al.-style: raw sentences, the hypothesis's final full stop dropped; the authors'
    # demonstrations number the answer one ahead (C1 / Q1 / A2), kept as published
    "brown": Prompt(
        "C: {p}\nQ: {h}. Yes, No, or Maybe?",
        "C: {p}\nQ: {h}. Yes, No, or Maybe?\nA:",
        "C{i}: {p}\nQ{i}: {h}. Yes, No, or Maybe?\nA{j}:",
        ("Yes", "Maybe"),
        normalize=False,
        strip_hypothesis=True,
    ),
    "structured": Prompt(
        "P: {p}\nH: {h}\nL:",
        "P: {p}\nH: {h}\nL:",
        "P{i}: {p}\nH{i}: {h}\nL{i}:",
        ("entailment", "neutral"),
        normalize=False,
    ),
}
REASONING = (
    "Logical and commonsense reasoning exam.\n\n"
    "Explain your reasoning in detail, then answer with Yes or No. Your answers should "
    "follow this 4-line format:\n\n"
    "Premise: <a tricky logical statement about the world>.\n"
    "Question: <question requiring logical deduction>.\n"
    "Reasoning: <an explanation of what you understand about the possible scenarios>.\n"
    "Answer: <Yes or No>.\n\n"
    "Premise: {p}\n"
    "Question: Can we logically conclude for sure that {h}?\n"
    "Reasoning: Let's think logically step by step. The premise basically tells us that"
)


def _fill(template: str, d: Doc, prompt: Prompt, i: int | None = None) -> str:
    p, h = d["premise"], d["hypothesis"]
    if prompt.normalize:
        p, h = mid(p), mid(h)
    elif prompt.strip_hypothesis:
        h = h.rstrip(".")
    return template.format(p=p, h=h, i=i, j=None if i is None else i + 1)


def _meta(d: Doc) -> dict[str, Any]:
    return {"split": d["split"], "label": d["label"], "row": d["row"]}


DEMO_INDEX = "demo_index"


def _render(prompt: Prompt, fewshot: bool):
    """Renderer of one prompt: the zero-shot query, or the few-shot query; a Doc drawn as a
    demonstration (it carries ``demo_index``) renders as the numbered demonstration."""

    def render(d: Doc) -> Rendered:
        i = d.fields.get(DEMO_INDEX)
        gold = LABELS.index(d["label"])
        if i is not None:
            q = _fill(prompt.demo, d, prompt, i)
        else:
            q = _fill(prompt.query if fewshot else prompt.zero, d, prompt)
        return Rendered(q, list(prompt.answers), gold, target=prompt.answers[gold], meta=_meta(d))

    return render


def _render_gen(prompt: Prompt, fewshot: bool):
    base = _render(prompt, fewshot)

    def render(d: Doc) -> Rendered:
        r = base(d)
        return Rendered(r.query, [], d["label"], target=r.target, meta=r.meta)

    return render


def render_reasoning(d: Doc) -> Rendered:
    return Rendered(
        REASONING.format(p=mid(d["premise"]), h=mid(d["hypothesis"])), [], d["label"], meta=_meta(d)
    )


_YES = re.compile(r"\byes\b", re.I | re.M)


def infer_label(text: str) -> str:
    """The authors' answer parsing: ``entailment`` if "yes" occurs as a word, else ``neutral``."""
    return "entailment" if _YES.search(text) else "neutral"


def _exact(s: str) -> str:
    return s.strip().lower()


GENERATE = Generation(stop=(), max_tokens=MAX_TOKENS, extract=infer_label, normalize=_exact)


def paired_sampler(
    docs: Sequence[Doc], pool: Sequence[Doc], k: int, seed: int | None
) -> Iterator[list[Doc]]:
    """The authors' demonstrations: for each record, ``k / 2`` examples per label drawn from the
    pool's records of the same condition whose premise and hypothesis both differ from the
    record's, entailment ones first; numbered 1..k (``demo_index``).  One ``random.Random(seed)``
    per unit, consumed in record order."""
    if k % 2:
        raise TaskError(
            f"ScoNe few-shot prompts take two demonstrations per label; {k} is odd",
            where="--shots",
            fix="use an even number of shots (the paper: 4)",
        )
    rnd = random.Random(seed)
    by: dict[tuple[str, str], list[Doc]] = defaultdict(list)
    for p in pool:
        by[(p["split"], p["label"])].append(p)
    for d in docs:
        shots: list[Doc] = []
        for lab in LABELS:
            cand = [
                p
                for p in by[(d["split"], lab)]
                if p["premise"] != d["premise"] and p["hypothesis"] != d["hypothesis"]
            ]
            if len(cand) < k // 2:
                raise TaskError(
                    f"{k // 2} {lab} demonstrations of {d['split']} asked, the pool "
                    f"has {len(cand)}",
                    where="--shots",
                    fix="use fewer shots",
                )
            shots += rnd.sample(cand, k // 2)
        yield [
            Doc(f"{s.id}#{i}", {**s.fields, DEMO_INDEX: i}, s.source)
            for i, s in enumerate(shots, 1)
        ]


# -- metrics ---------------------------------------------------------------------------------------
def correct_field(records: Sequence[dict]) -> str:
    """The per-sample correctness field: ``exact_match`` (generation) or ``acc`` (cloze)."""
    first = records[0] if records else {}
    return "exact_match" if "exact_match" in first else "acc"


def nli_metrics(mode: str, records: list[dict]) -> dict:
    """Accuracy per condition and overall (the paper's Table 2 / 3 columns), accuracy per gold
    label, and the share of records predicted entailment."""
    f = correct_field(records)
    out: dict[str, Any] = {"accuracy": mean([float(r[f]) for r in records])}
    by: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by[r["meta"]["split"]].append(float(r[f]))
    for c in CONDITIONS:
        if c in by:
            out[f"acc_{c}"] = mean(by[c])
            out[f"n_{c}"] = len(by[c])
    # the same per condition as a breakdown: n and a Wilson interval per cell, shown by run,
    # show and the report
    out["acc_by_condition"] = by_group(records, "split", f)
    for lab in LABELS:
        xs = [float(r[f]) for r in records if r["meta"]["label"] == lab]
        if xs:
            out[f"acc_gold_{lab}"] = mean(xs)
    preds = [_predicted(r) for r in records]
    out["pred_entailment_rate"] = mean([float(p == "entailment") for p in preds if p])
    return out


def accuracy_parts(mode: str, records: list[dict]) -> dict:
    """The headline ``accuracy`` per record (its correctness field), for its 95 % interval."""
    f = correct_field(records)
    return {("doc", str(r["doc_id"])): (float(r[f]), 1.0) for r in records}


def triplet_parts(mode: str, records: list[dict]) -> dict:
    """The NLG ``accuracy`` per triplet (sum, rows): triplets are resampled whole."""
    out: dict = {}
    for r in records:
        k = r["meta"]["triplet"]
        s, c = out.get(k, (0.0, 0.0))
        out[k] = (s + float(r["acc"]), c + 1.0)
    return out


#: Subsets spread over the six conditions (``--limit 12``: two records of each).
NLI_STRUCTURE = Structure(stratum="split", stratum_name="condition")
#: A subset keeps whole triplets (their three prompt types).
NLG_STRUCTURE = Structure(unit=("triplet",), unit_name="triplet", units_name="triplets")


def _predicted(r: dict) -> str | None:
    if "answer" in r:
        return r["answer"]
    if "pred" in r:
        return LABELS[r["pred"]]
    return None


def nli_table(mode: str, rows: list[tuple[str, dict]]) -> str:
    """Markdown: a row per unit, accuracy (percent) per condition and overall, each with its
    Wilson 95 % interval and n (the items of a condition are distinct examples)."""
    from negbench.scoring.metrics import share_cell

    head = "| unit | " + " | ".join(CONDITION_LABELS[c] for c in CONDITIONS) + " | Overall |"
    lines = [
        "Accuracy (%) per condition: value [95 % Wilson interval] (n items)",
        "",
        head,
        "|" + "---|" * (len(CONDITIONS) + 2),
    ]
    for name, m in rows:
        cells = [share_cell(m.get(f"acc_{c}"), m.get(f"n_{c}")) for c in CONDITIONS] + [
            share_cell(m.get("accuracy"), m.get("n"))
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pct(v: Any) -> str:
    return f"{100 * v:.1f}" if isinstance(v, (int, float)) and v == v else "–"


# -- NLG ---------------------------------------------------------------------------------------------
def render_nlg(d: Doc) -> Rendered:
    outs = list(d["outcomes"])
    return Rendered(
        d["sentence"],
        outs,
        outs.index(d["outcome"]),
        meta={
            "split": d["prompt_type"],
            "triplet": d["triplet"],
            "frame": d["frame"],
            "outcomes": outs,
        },
    )


def _norm(s: str) -> str:
    s = s.replace("\u2019", "'").replace("\u2018", "'").lower()
    s = s.translate(str.maketrans("", "", string.punctuation.replace("'", "")))
    return " ".join(s.split())


def outcome_in(text: str, outcomes: Sequence[str]) -> int | None:
    """Our strict proxy: the index of the longest outcome whose normalised text occurs in the
    completion (longest first, so "no allergic reaction" wins over "allergic reaction"); None
    when none does."""
    t = f" {_norm(text)} "
    for i in sorted(range(len(outcomes)), key=lambda i: -len(outcomes[i])):
        if f" {_norm(outcomes[i])} " in t:
            return i
    return None


@dataclass(frozen=True)
class CompletionMatch:
    """Greedy completion of the narrative; correct when the gold outcome (and not the contrasting
    one) is found in it — a strict automatic proxy for the paper's judgement (ours)."""

    stop: tuple[str, ...] = ("\n",)
    max_tokens: int = NLG_MAX_TOKENS
    kind: str = "generate"
    metrics: tuple[str, ...] = ("acc", "outcome_found")

    def requests(self, context: str, r: Rendered) -> list[Request]:
        return [GenerationRequest(context, self.stop, self.max_tokens)]

    def score(self, r: Rendered, responses: list[GenerationResponse]) -> dict:
        out = responses[0].text
        found = outcome_in(out, r.choices)
        return {
            "output": out,
            "matched": found,
            "stopped_by": responses[0].stopped_by,
            "outcome_found": float(found is not None),
            "acc": float(found == r.gold),
        }


def nlg_metrics(mode: str, records: list[dict]) -> dict:
    """Accuracy per prompt type (neg / not_scope / pos), overall, and triplet consistency (all
    three rows of a triplet right)."""
    f = "acc"
    out: dict[str, Any] = {"accuracy": mean([float(r[f]) for r in records])}
    for t in NLG_TYPES:
        xs = [float(r[f]) for r in records if r["meta"]["split"] == t]
        if xs:
            out[f"acc_{t}"] = mean(xs)
    trip: dict[str, list[float]] = defaultdict(list)
    for r in records:
        trip[r["meta"]["triplet"]].append(float(r[f]))
    full = [v for v in trip.values() if len(v) == len(NLG_TYPES)]
    out["triplet_consistency"] = mean([float(all(v)) for v in full])
    out["n_triplets"] = len(full)
    return out


def nlg_table(mode: str, rows: list[tuple[str, dict]]) -> str:
    head = (
        "| unit | "
        + " | ".join(NLG_TYPE_LABELS[t] for t in NLG_TYPES)
        + " | Overall | Triplets all right |"
    )
    lines = [head, "|" + "---|" * (len(NLG_TYPES) + 3)]
    for name, m in rows:
        cells = [_pct(m.get(f"acc_{t}")) for t in NLG_TYPES] + [
            _pct(m.get("accuracy")),
            _pct(m.get("triplet_consistency")),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- tasks -------------------------------------------------------------------------------------------
def nli_modes() -> dict[str, ModeSpec]:
    modes = {
        "cloze": ModeSpec(
            _render(PROMPTS["cond-q"], True),
            ChoiceLoglikelihood(),
            "log-likelihood of ' Yes' / ' Maybe' after the conditional question "
            "(Q: … A:, ours after the paper's few-shot format)",
        ),
        "cloze-hyp": ModeSpec(
            _render(PROMPTS["hyp-q"], True),
            ChoiceLoglikelihood(),
            "log-likelihood of ' Yes' / ' No' after the hypothesis question (Q: … A:, ours)",
        ),
    }
    for name, p in PROMPTS.items():
        modes[name] = ModeSpec(
            _render_gen(p, False),
            GENERATE,
            f"the paper's zero-shot {name} prompt; 'yes' in the output = entailment",
        )
        modes[f"{name}-fs"] = ModeSpec(
            _render_gen(p, True), GENERATE, f"the paper's few-shot {name} prompt (use --shots 4)"
        )
    modes["reasoning"] = ModeSpec(
        render_reasoning, GENERATE, "the paper's chain-of-thought reasoning prompt (zero-shot)"
    )
    for spec in modes.values():  # the paper's number: accuracy over the records
        spec.headline = "accuracy"
    return modes


def make_nli(options: dict[str, str] | None = None, root: str | Path | None = None) -> Task:
    """``scone-nli`` (all six conditions) or ``scone-nli[split=<condition>]``."""
    opts = dict(options or {})
    split = opts.pop("split", None)
    if opts:
        raise TaskError(
            f"unknown option(s) {', '.join(opts)} for {NLI_NAME}",
            where="--tasks",
            fix="scone-nli takes split=<condition>",
        )
    if split is not None and split not in CONDITIONS:
        raise TaskError(
            f"unknown ScoNe condition {split!r}",
            where="--tasks",
            fix="split= one of " + ", ".join(CONDITIONS),
        )
    conds = (split,) if split else CONDITIONS
    name = f"{NLI_NAME}[split={split}]" if split else NLI_NAME
    return Task(
        name=name,
        summary="ScoNe-NLI: 6 negation-scope conditions × 200 test pairs, entailment / neutral "
        "(option split=<condition>)",
        load=lambda part: load_nli(part, conds, root),
        modes=nli_modes(),
        test_split="test",
        fewshot_split="train",
        default_modes=("cloze",),
        default_shots=(0,),
        protocol_shots=(0, 4),
        fewshot_sampler=paired_sampler,
        target_delimiter=" ",
        fewshot_delimiter="\n\n",
        extra_metrics=nli_metrics,
        tables=nli_table,
        language="en",
        source=SOURCE,
        structure=NLI_STRUCTURE,
        headline_parts=accuracy_parts,
        data=DATA,
    )


def make_nlg(root: str | Path | None = None) -> Task:
    def load(part: str) -> list[Doc]:
        if part != "test":
            raise TaskError("ScoNe-NLG has only a test set", where="--shots", fix="use --shots 0")
        return list(_nlg(str(root or data_root())))

    return Task(
        name=NLG_NAME,
        summary="ScoNe-NLG: 74 triplets of narratives to complete (negation / non-scoping / none)",
        load=load,
        modes={
            "loglik": ModeSpec(
                render_nlg,
                ChoiceLoglikelihood(),
                "log-likelihood of the gold outcome vs the triplet's other outcome "
                "(our automatic proxy)",
                headline="accuracy",
            ),
            "generate": ModeSpec(
                render_nlg,
                CompletionMatch(),
                "greedy completion; gold outcome found in it (our strict proxy)",
                headline="accuracy",
            ),
        },
        test_split="test",
        fewshot_split=None,
        default_modes=("loglik",),
        extra_metrics=nlg_metrics,
        tables=nlg_table,
        language="en",
        source=SOURCE,
        structure=NLG_STRUCTURE,
        headline_parts=triplet_parts,
        data=DATA,
    )


def make_task(options: dict[str, str]) -> Task:
    return make_nli(options)


NLI_TASK = make_nli()
NLG_TASK = make_nlg()
TASKS = (NLI_TASK, NLG_TASK)
