"""This is not a Dataset §3.2 human evaluation: the judge sheet (four questions per sentence) and
Table 3 from the filled sheets (% per annotator, A∩B, A∪B, Cohen's and Fleiss' κ)."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Sequence

from negbench.scoring.agreement import cohen_kappa, counts_from_ratings, fleiss_kappa
from negbench.scoring.sheets import (
    Sheet,
    check_n,
    read_rows,
    write_csv,
    annotator_names,
    seeded_sample,
)
from negbench.errors import DataError

#: The 220 sentences of §3.2; the fields ``--stratify`` takes (the paper drew at random).
DEFAULT_N = 220
STRATA = ("pattern", "negation_type", "label", "distractor")


@dataclass(frozen=True)
class Question:
    column: str  # sheet column
    ask: str  # the question as printed for people
    values: tuple[str, str]  # the two allowed answers (the first one counts as "yes")
    row: str  # Table 3 row name


#: §3.2's four questions, in the paper's order; Table 3 lists them T/F, comprehensibility,
#: grammaticality, plausibility (:data:`TABLE3_ORDER`).
QUESTIONS = (
    Question("true_false", "Is the sentence true or false?", ("true", "false"), "T/F prediction"),
    Question(
        "grammatical", "Is the sentence grammatically correct?", ("yes", "no"), "Grammaticality"
    ),
    Question(
        "understandable", "Is the sentence understandable?", ("yes", "no"), "Comprehensibility"
    ),
    Question(
        "plausible",
        "Is the sentence plausible, one a speaker might produce?",
        ("yes", "no"),
        "Plausibility",
    ),
)
TABLE3_ORDER = ("true_false", "understandable", "grammatical", "plausible")
_Q = {q.column: q for q in QUESTIONS}
_SYNONYMS = {
    "true": "true",
    "t": "true",
    "false": "false",
    "f": "false",
    "yes": "yes",
    "y": "yes",
    "no": "no",
    "n": "no",
}
JUDGE_SHEET_FIELDS = ("item", "sentence") + tuple(q.column for q in QUESTIONS)
JUDGE_KEY_FIELDS = (
    "item",
    "block",
    "pattern",
    "template",
    "negation_type",
    "semantic_type",
    "syntactic_scope",
    "distractor",
    "label",
)
#: Paper Table 3 (two testers, 220 sentences), printed beside ours.
PAPER_TABLE3 = {
    "true_false": (90.9, 89.1, 87.27, 96.36),
    "understandable": (91.82, 100, 91.82, 100),
    "grammatical": (83.64, 96.82, 83.64, 96.82),
    "plausible": (20.45, 45.91, 19.55, 46.82),
}


def notadataset_items(
    n: int, seed: int, source: str | None = None, stratify: str | None = None
) -> list[dict]:
    """``n`` sentences of a This-is-not-a-Dataset release (the raw zip, a folder of its
    ``#NN.Pattern.txt`` files — what ``negbench build notadataset`` writes under ``raw/`` — or the
    hub JSON lines), seeded, in release order."""
    from negbench.tasks.notadataset import tasks as N

    rel = N.load_release(str(source) if source is not None else N.default_source())
    sents = rel.sentences
    check_n(n, len(sents), f"the release {rel.source}")
    key = {
        "pattern": lambda s: s.pattern_id,
        "negation_type": lambda s: s.negation_type,
        "label": lambda s: s.label,
        "distractor": lambda s: s.distractor > 0,
    }
    strata = [key[stratify](s) for s in sents] if stratify else [0] * len(sents)
    picked = seeded_sample(strata, n, seed, bool(stratify))
    return [
        {
            "item": k,
            "sentence": sents[i].sentence,
            "block": sents[i].block,
            "pattern": sents[i].pattern_id,
            "template": sents[i].template,
            "negation_type": sents[i].negation_type,
            "semantic_type": sents[i].semantic_type,
            "syntactic_scope": sents[i].syntactic_scope,
            "distractor": sents[i].distractor,
            "label": "True" if sents[i].label else "False",
        }
        for k, i in enumerate(picked, 1)
    ]


def write_judge_sheet(
    items: Sequence[dict], out_dir: str | os.PathLike, title: str
) -> dict[str, Path]:
    """``sheet.csv`` (item, sentence, the four questions left empty), ``sheet.md`` (printable,
    with the questions and the allowed answers) and ``key.csv`` (labels and the release's
    negation / pattern fields)."""
    from negbench.files import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"sheet": out / "sheet.csv", "markdown": out / "sheet.md", "key": out / "key.csv"}
    write_csv(
        paths["sheet"],
        JUDGE_SHEET_FIELDS,
        [[it["item"], it["sentence"]] + [""] * len(QUESTIONS) for it in items],
    )
    write_csv(paths["key"], JUDGE_KEY_FIELDS, [[it[f] for f in JUDGE_KEY_FIELDS] for it in items])
    md = [
        f"# {title} ({len(items)} sentences)",
        "",
        "Answer four questions for every sentence, in the columns of sheet.csv:",
        "",
    ]
    md += [f"- `{q.column}`: {q.ask} ({' / '.join(q.values)})" for q in QUESTIONS]
    md += ["", "Judge each sentence on its own; do not look anything up.", ""]
    for it in items:
        md += [f"## {it['item']}", "", it["sentence"], ""]
        md += [f"- {q.ask} ____" for q in QUESTIONS] + [""]
    atomic_write_text(paths["markdown"], "\n".join(md))
    return paths


def read_judge_key(key: str | os.PathLike) -> dict[str, dict]:
    path = Path(key)
    _, rows = read_rows(path, JUDGE_KEY_FIELDS, "key.csv")
    out: dict[str, dict] = {}
    for n, r in enumerate(rows, 2):
        if r["label"] not in ("True", "False"):
            raise DataError(
                f"label {r['label']!r} is not True or False",
                path=str(path),
                record=f"line {n}",
                field="label",
            )
        if r["item"] in out:
            raise DataError(
                f"item {r['item']} twice", path=str(path), record=f"line {n}", field="item"
            )
        out[r["item"]] = r
    if not out:
        raise DataError("the key has no items", path=str(path))
    return out


def read_judge_sheet(path: str | os.PathLike, key: dict[str, dict]) -> dict[str, dict[str, str]]:
    """item → question → normalised answer (``true``/``false``, ``yes``/``no``).  Every item of
    the key once, every question answered with an allowed value; else DataError naming the file,
    the line and the column."""
    path = Path(path)
    _, rows = read_rows(path, ("item",) + tuple(q.column for q in QUESTIONS), "sheet.csv")
    out: dict[str, dict[str, str]] = {}
    for n, r in enumerate(rows, 2):
        it = (r["item"] or "").strip()
        if it not in key:
            raise DataError(
                f"item {it!r} is not in the key",
                path=str(path),
                record=f"line {n}",
                field="item",
                fix="keep the item numbers of the sheet as written",
            )
        if it in out:
            raise DataError(
                f"item {it} answered twice", path=str(path), record=f"line {n}", field="item"
            )
        ans = {}
        for q in QUESTIONS:
            raw = (r[q.column] or "").strip()
            allowed = " / ".join(q.values)
            if not raw:
                raise DataError(
                    "no answer",
                    path=str(path),
                    record=f"line {n}",
                    field=q.column,
                    fix=f"answer {allowed}",
                )
            v = _SYNONYMS.get(raw.lower())
            if v not in q.values:
                raise DataError(
                    f"answer {raw!r} is not one of {allowed}",
                    path=str(path),
                    record=f"line {n}",
                    field=q.column,
                    fix=f"{allowed} (or {q.values[0][0]} / {q.values[1][0]})",
                )
            ans[q.column] = v
        out[it] = ans
    if set(out) != set(key):
        missing = sorted(set(key) - set(out), key=lambda s: (len(s), s))
        raise DataError(
            f"items missing: {', '.join(missing[:10])}" + (" …" if len(missing) > 10 else ""),
            path=str(path),
            fix="the sheet must hold every item of the key",
        )
    return out


def _fleiss(ratings: list[list[str]], cats: Sequence[str]) -> float | None:
    try:
        return fleiss_kappa(counts_from_ratings(ratings, cats)).kappa
    except ValueError:  # every rating in one category
        return None


def score_judge_sheets(key: str | os.PathLike, filled: Sequence[str | os.PathLike]) -> dict:
    """Table 3 over the filled sheets (all validated first), plus agreement with ≥ 2 sheets and
    the T/F agreement with the label by negation type and by distractor."""
    k = read_judge_key(key)
    sheets = [read_judge_sheet(p, k) for p in filled]
    names = annotator_names(filled)
    items = sorted(k, key=lambda s: (len(s), s))

    def hit(ans: dict[str, str], it: str, q: str) -> bool:
        if q == "true_false":
            return ans[q] == k[it]["label"].lower()
        return ans[q] == "yes"

    table: dict[str, dict] = {}
    for q in TABLE3_ORDER:
        hits = [[hit(s[it], it, q) for it in items] for s in sheets]
        row = {
            "per_annotator": {nm: 100 * sum(h) / len(items) for nm, h in zip(names, hits)},
            "all": 100 * sum(all(col) for col in zip(*hits)) / len(items),
            "any": 100 * sum(any(col) for col in zip(*hits)) / len(items),
        }
        if len(sheets) >= 2:
            raw = [[s[it][q] for it in items] for s in sheets]
            row["agreement"] = 100 * sum(len(set(col)) == 1 for col in zip(*raw)) / len(items)
            row["cohen"] = {
                f"{names[i]} vs {names[j]}": cohen_kappa(raw[i], raw[j])
                for i, j in combinations(range(len(sheets)), 2)
            }
            row["fleiss"] = _fleiss([list(col) for col in zip(*raw)], _Q[q].values)
        table[q] = row
    breakdown: dict[str, dict] = {}
    for fld, fmt in (
        ("negation_type", str),
        ("distractor", lambda v: "distractor" if v != "0" else "WordNet triple"),
    ):
        groups: dict[str, list[str]] = defaultdict(list)
        for it in items:
            groups[fmt(k[it][fld])].append(it)
        breakdown[fld] = {
            g: {
                "items": len(its),
                **{
                    nm: 100 * sum(hit(s[it], it, "true_false") for it in its) / len(its)
                    for nm, s in zip(names, sheets)
                },
            }
            for g, its in sorted(groups.items())
        }
    return {
        "kind": "judge",
        "items": len(items),
        "annotators": names,
        "table3": table,
        "true_false_by": breakdown,
    }


def _f(v: float | None, nd: int = 2) -> str:
    return "–" if v is None else f"{v:.{nd}f}"


def format_table3(res: dict) -> str:
    names = res["annotators"]
    if len(names) == 2:
        both, either = f"{names[0]} ∩ {names[1]}", f"{names[0]} ∪ {names[1]}"
    else:
        both, either = "all", "any"
    cols = names + ([both, either] if len(names) > 1 else [])
    lines = [
        f"Table 3 (human evaluation, {res['items']} sentences; % of sentences; T/F: answer "
        "agrees with the generated label):",
        "",
        "| % | " + " | ".join(cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for q in TABLE3_ORDER:
        r = res["table3"][q]
        vals = [r["per_annotator"][nm] for nm in names]
        if len(names) > 1:
            vals += [r["all"], r["any"]]
        lines.append(f"| {_Q[q].row} | " + " | ".join(_f(v) for v in vals) + " |")
    lines += [
        "",
        "Paper (Table 3: A tester, B tester, A∩B, A∪B; 220 sentences): "
        + "; ".join(
            f"{_Q[q].row} " + " / ".join(f"{v:g}" for v in PAPER_TABLE3[q]) for q in TABLE3_ORDER
        )
        + ".",
    ]
    if len(names) >= 2:
        pairs = list(res["table3"]["true_false"]["cohen"])
        lines += [
            "",
            "Agreement between annotators (raw answers; T/F: the true/false answers themselves):",
            "",
            "| question | raw agreement % | "
            + " | ".join(f"Cohen's κ {p}" for p in pairs)
            + " | Fleiss' κ |",
            "|---|" + "---:|" * (len(pairs) + 2),
        ]
        for q in TABLE3_ORDER:
            r = res["table3"][q]
            lines.append(
                f"| {_Q[q].row} | {_f(r['agreement'])} | "
                + " | ".join(_f(r["cohen"][p], 3) for p in pairs)
                + f" | {_f(r['fleiss'], 3)} |"
            )
    for fld, groups in res["true_false_by"].items():
        lines += [
            "",
            f"T/F agreement with the label by {fld.replace('_', ' ')} (%):",
            "",
            "| | items | " + " | ".join(names) + " |",
            "|---|---:|" + "---:|" * len(names),
        ]
        lines += [
            f"| {g} | {v['items']} | " + " | ".join(_f(v[nm]) for nm in names) + " |"
            for g, v in groups.items()
        ]
    return "\n".join(lines)


def write(
    out_dir: str | os.PathLike, n: int, seed: int, source: str | None, stratify: str | None
) -> dict[str, Path]:
    items = notadataset_items(n, seed, source, stratify)
    strat = f", stratified by {stratify}" if stratify else ""
    return write_judge_sheet(
        items, out_dir, f"This is not a Dataset human evaluation (seed {seed}{strat})"
    )


def score(key: str | os.PathLike, filled: Sequence[str | os.PathLike]) -> tuple[dict, str]:
    res = score_judge_sheets(key, filled)
    return res, format_table3(res)


SHEET = Sheet("judge", DEFAULT_N, STRATA, write, score)
