"""Reading sentences and KMMLU questions, corpus statistics in the form of Table 2, and the §3.3
KMMLU selection — the pure parts of ``negbench analyze negation``."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from negbench.analyze.ko_negation import (
    LEXICAL_TYPES,
    SYNTACTIC_TYPES,
    TABLE2_CLAUSES,
    TYPE_NAMES,
    NegationHit,
    sentence_label,
)
from negbench.errors import DataError
from negbench.records import field, iter_jsonl, read_text
from negbench.tasks.konubench.corpus_numbers import PAPER_TABLE2

#: Fields a KMMLU-style record must have (the release's kmmlu_neg / kmmlu_pos files; KMMLU
#: itself has A–D).
KMMLU_QUESTION = "question"
KMMLU_OPTIONS = ("A", "B", "C", "D")
_ASK_END = re.compile(r"[가-힣]\?(?!\?)")


@dataclass(frozen=True)
class Sentence:
    """One input sentence and where it came from (file, line), for errors and the hits file."""

    text: str
    path: str
    line: int
    record: dict | None = None


def read_sentences(path: str | Path, *, json_field: str | None = None) -> Iterator[Sentence]:
    """Sentences of a text file (one a line; blank lines skipped) or, with ``json_field``, of a
    JSON-lines file (that field of each object; it must be a string)."""
    path = Path(path)
    if json_field is None:
        if not path.is_file():
            raise DataError("input file not found", path=str(path), fix="check the path")
        for n, line in enumerate(read_text(path).splitlines(), 1):
            line = line.lstrip("\ufeff") if n == 1 else line
            if line.strip():
                yield Sentence(line.strip(), str(path), n)
        return
    for n, obj in iter_jsonl(
        path,
        missing="input file not found",
        missing_fix="check the path",
        fix=f"with --field each line must be a JSON object with a '{json_field}' string",
    ):
        text = field(obj, json_field, str, path=str(path), record=f"line {n}", nonempty=False)
        yield Sentence(text, str(path), n, obj)


def read_kmmlu(path: str | Path) -> list[dict]:
    """KMMLU-style records: a JSON array of objects (the release's format) or JSON lines, each
    with a ``question`` string; option fields ``A``–``D`` are kept when present."""
    path = Path(path)
    text = read_text(path)
    if text.lstrip("\ufeff").lstrip().startswith("["):
        try:
            data = json.loads(text.lstrip("\ufeff"))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                path=str(path),
                fix="a JSON array of question objects, or JSON lines",
            ) from None
        rows = list(enumerate(data, 1))
        where = "item"
    else:
        rows = list(iter_jsonl(path, missing="input file not found"))
        where = "line"
    if not rows:
        raise DataError("no questions", path=str(path))
    out = []
    for n, obj in rows:
        if not isinstance(obj, dict):
            raise DataError(
                f"expected a question object, got {type(obj).__name__}",
                path=str(path),
                record=f"{where} {n}",
            )
        field(obj, KMMLU_QUESTION, str, path=str(path), record=f"{where} {n}")
        for opt in KMMLU_OPTIONS:
            if opt in obj and obj[opt] is not None and not isinstance(obj[opt], (str, int, float)):
                raise DataError(
                    f"expected text, got {type(obj[opt]).__name__}",
                    path=str(path),
                    record=f"{where} {n}",
                    field=opt,
                )
        out.append(obj)
    return out


def kmmlu_key(rec: dict) -> tuple:
    """Identity of a KMMLU item: its question and options (the released negated questions are
    KMMLU's own; the affirmative file shares their options under rewritten questions)."""
    return (
        rec[KMMLU_QUESTION],
        *(str(rec.get(o)) for o in KMMLU_OPTIONS if rec.get(o) is not None),
    )


def kmmlu_ask(question: str) -> str:
    """The asking sentence of a KMMLU question: up to its first ``?`` that closes a Korean word
    (a source passage or a remark may follow: ``…옳지 않은 것은? 제1조 …``; a quoted English
    ``…hotel?"`` or a doubled ``??`` does not end it), the whole text when it has none."""
    m = _ASK_END.search(question)
    return question[: m.end()] if m else question


def kmmlu_negated(hits: Sequence[NegationHit]) -> bool:
    """§3.3's selection, over the hits of :func:`kmmlu_ask`: its last predicate is negated (``옳지 않은 것은?``,
    ``…이 아닌 것은?``, ``부적당한 것은?``); a negation elsewhere (``오염되지 않은 지하수 …에 관한
    설명으로 옳은 것은?``) does not make the question negative."""
    return any(h.final for h in hits)


def compare_selection(selected: Iterable[dict], reference: Iterable[dict]) -> dict:
    """How a selection of KMMLU items matches the released negated set (same question and
    options)."""
    ref_k = Counter(kmmlu_key(r) for r in reference)
    sel_k = Counter(kmmlu_key(r) for r in selected)
    both = sum((ref_k & sel_k).values())
    n_sel, n_ref = sum(sel_k.values()), sum(ref_k.values())
    return {
        "selected": n_sel,
        "reference": n_ref,
        "same_item": both,
        "selected_not_in_reference": n_sel - both,
        "reference_not_selected": n_ref - both,
    }


# -- Table 2 --------------------------------------------------------------------------------------
def corpus_stats(hits_per_sentence: Iterable[Sequence[NegationHit]]) -> dict:
    """Table 2 of the paper over analysed sentences: each negated sentence is counted once, under
    the type and clause of :func:`sentence_label`; every hit is also counted (``instances``)."""
    n = 0
    types: Counter[str] = Counter()
    clauses: Counter[str] = Counter()
    inst_types: Counter[str] = Counter()
    inst_clauses: Counter[str] = Counter()
    lexical: Counter[str] = Counter()
    for hits in hits_per_sentence:
        n += 1
        lab = sentence_label(hits)
        if lab is not None:
            types[lab.type] += 1
            clauses[lab.table2_clause] += 1
        for h in hits:
            if h.syntactic:
                inst_types[h.type] += 1
                inst_clauses[h.table2_clause] += 1
            else:
                lexical[h.type] += 1
    neg = sum(types.values())
    return {
        "sentences": n,
        "negated": neg,
        "negated_share": neg / n if n else math.nan,
        "types": {t: types[t] for t in SYNTACTIC_TYPES},
        "clauses": {c: clauses[c] for c in TABLE2_CLAUSES},
        "instances": {
            "types": {t: inst_types[t] for t in SYNTACTIC_TYPES},
            "clauses": {c: inst_clauses[c] for c in TABLE2_CLAUSES},
        },
        "lexical_hits": {t: lexical[t] for t in LEXICAL_TYPES},
    }


def _pct(k: int, total: int) -> str:
    return f"{k:,} ({100 * k / total:.2f}%)" if total else f"{k:,} (–)"


def table2_markdown(stats: dict, *, title: str = "Distribution of syntactic negation") -> str:
    """Table 2's two parts in Markdown, our counts beside the paper's."""
    neg = stats["negated"]
    share = f"{100 * stats['negated_share']:.1f}%" if stats["sentences"] else "–"
    lines = [
        f"### {title}",
        "",
        f"{stats['sentences']:,} sentences, {neg:,} with syntactic negation ({share}); "
        f"paper: {PAPER_TABLE2['sentences']:,} / {PAPER_TABLE2['negated']:,} "
        f"({100 * PAPER_TABLE2['negated'] / PAPER_TABLE2['sentences']:.1f}%).",
        "",
    ]
    for part, keys, names, paper in (
        ("types", SYNTACTIC_TYPES, TYPE_NAMES, PAPER_TABLE2["types"]),
        ("clauses", TABLE2_CLAUSES, None, PAPER_TABLE2["clauses"]),
    ):
        head = [names[k] if names else f"{k} clause" for k in keys]
        lines += [
            "| | " + " | ".join(head) + " | Total |",
            "|---|" + "---:|" * (len(keys) + 1),
            "| this corpus | "
            + " | ".join(_pct(stats[part][k], neg) for k in keys)
            + f" | {_pct(neg, neg)} |",
            "| this corpus, every hit | "
            + " | ".join(f"{stats['instances'][part][k]:,}" for k in keys)
            + f" | {sum(stats['instances'][part].values()):,} |",
            "| paper (Table 2) | "
            + " | ".join(_pct(paper[k], PAPER_TABLE2["negated"]) for k in keys)
            + f" | {PAPER_TABLE2['negated']:,} (100%) |",
            "",
        ]
    lex = stats.get("lexical_hits") or {}
    if any(lex.values()):
        lines.append(
            "Lexical negation, not in Table 2: "
            + ", ".join(f"{TYPE_NAMES[t]} {v:,}" for t, v in lex.items())
            + "."
        )
        lines.append("")
    return "\n".join(lines)
