"""Human-evaluation sheets for a sample of a released or built set, and their scores.

Two kinds of sheet, one per paper that reports a human evaluation:

* **judge** (This is not a Dataset §3.2, Table 3): people read each sentence and answer four
  questions — true or false? grammatical? understandable? plausible (might a speaker produce
  it)?  Scored per question as the percentage for each annotator, for all of them (A∩B) and for
  any of them (A∪B); the true/false answer counts when it agrees with the generated label.
  With two or more sheets: raw agreement, Cohen's κ per pair and Fleiss' κ over all, per question.
* **answer** (Thunder-KoNUBench §4.3, Table 7): people answer the benchmark's own
  multiple-choice items; 100 / n points per right letter; Max / Min / Median / Average.  The
  KoNUBench sheet, key and scorer are :mod:`negbench.tasks.konubench`'s (unchanged); NUBench
  items (released, or built by ``negbench build mcq``) use the same columns and scorer.

A sheet never holds the labels: ``sheet.csv`` / ``sheet.md`` go to people, ``key.csv`` stays
with the organiser.  Every filled sheet is checked (ids, one answer per question, allowed values)
before anything is printed.
"""
from __future__ import annotations

import csv
import os
import random
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Hashable, Sequence

from negbench.build.agreement import cohen_kappa, counts_from_ratings, fleiss_kappa
from negbench.errors import DataError, OptionError, TaskError

#: Tasks with a sheet, and the kind of sheet.
SHEET_TASKS = {"notadataset": "judge", "nubench": "answer", "konubench": "answer"}
#: Items drawn by default: the 220 sentences of This is not a Dataset §3.2; 50 items as
#: Thunder-KoNUBench §4.3 (NUBench reports no human evaluation: the same size as KoNUBench's).
DEFAULT_N = {"notadataset": 220, "nubench": 50, "konubench": 50}
#: ``--stratify`` keys per task (none by default: both papers drew at random).
STRATA = {"notadataset": ("pattern", "negation_type", "label", "distractor"),
          "nubench": ("choice2_type",), "konubench": ()}


@dataclass(frozen=True)
class Question:
    column: str          # sheet column
    ask: str             # the question as printed for people
    values: tuple[str, str]   # the two allowed answers (the first one counts as "yes")
    row: str             # Table 3 row name


#: §3.2's four questions, in the paper's order; Table 3 lists them T/F, comprehensibility,
#: grammaticality, plausibility (:data:`TABLE3_ORDER`).
QUESTIONS = (
    Question("true_false", "Is the sentence true or false?", ("true", "false"), "T/F prediction"),
    Question("grammatical", "Is the sentence grammatically correct?", ("yes", "no"),
             "Grammaticality"),
    Question("understandable", "Is the sentence understandable?", ("yes", "no"),
             "Comprehensibility"),
    Question("plausible", "Is the sentence plausible, one a speaker might produce?", ("yes", "no"),
             "Plausibility"),
)
TABLE3_ORDER = ("true_false", "understandable", "grammatical", "plausible")
_Q = {q.column: q for q in QUESTIONS}
_SYNONYMS = {"true": "true", "t": "true", "false": "false", "f": "false",
             "yes": "yes", "y": "yes", "no": "no", "n": "no"}
JUDGE_SHEET_FIELDS = ("item", "sentence") + tuple(q.column for q in QUESTIONS)
JUDGE_KEY_FIELDS = ("item", "block", "pattern", "template", "negation_type", "semantic_type",
                    "syntactic_scope", "distractor", "label")
#: Paper Table 3 (two testers, 220 sentences), printed beside ours.
PAPER_TABLE3 = {"true_false": (90.9, 89.1, 87.27, 96.36),
                "understandable": (91.82, 100, 91.82, 100),
                "grammatical": (83.64, 96.82, 83.64, 96.82),
                "plausible": (20.45, 45.91, 19.55, 46.82)}


# -- sampling -------------------------------------------------------------------------------------
def seeded_sample(strata: Sequence[Hashable], n: int, seed: int, stratified: bool) -> list[int]:
    """``n`` indices of ``strata`` (one stratum value per record), in record order.

    Unstratified: ``random.Random(seed).sample``.  Stratified: when ``n`` allows, every stratum
    gets one item (a small pattern is not left out), and the rest of ``n`` is shared in proportion
    to the strata's remaining sizes (largest remainder, ties to the larger stratum; never more
    than a stratum has); with fewer items than strata, plain proportional shares.  Each stratum
    is drawn with its own ``random.Random(f"{seed}-{stratum}")``."""
    total = len(strata)
    if not stratified:
        return sorted(random.Random(seed).sample(range(total), n))
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, s in enumerate(strata):
        groups[s].append(i)
    keys = sorted(groups, key=str)
    base = 1 if n >= len(keys) else 0
    size = {k: len(groups[k]) - base for k in keys}
    share, pool = n - base * len(keys), total - base * len(keys)
    quota = {k: base + (share * size[k] // pool if pool else 0) for k in keys}
    rest = n - sum(quota.values())
    by_rem = sorted(keys, key=lambda k: (-(share * size[k] % pool if pool else 0), -size[k], str(k)))
    for k in by_rem[:rest]:
        quota[k] += 1
    out: list[int] = []
    for k in keys:
        out += random.Random(f"{seed}-{k}").sample(groups[k], min(quota[k], len(groups[k])))
    return sorted(out)


def _check_n(n: int, available: int, what: str) -> None:
    if not 1 <= n <= available:
        raise TaskError(f"--n {n}: {what} has {available} items", where="--n",
                        fix=f"1 … {available}")


def _check_stratify(task: str, stratify: str | None) -> None:
    if stratify and stratify not in STRATA[task]:
        raise OptionError(f"--stratify {stratify}: not a field of {task}", where="--stratify",
                          fix=("one of " + ", ".join(STRATA[task])) if STRATA[task]
                          else f"drop --stratify ({task} is drawn at random, as its paper did)")


# -- judge sheets (This is not a Dataset, Table 3) ------------------------------------------------
def notadataset_items(n: int, seed: int, source: str | None = None,
                      stratify: str | None = None) -> list[dict]:
    """``n`` sentences of a This-is-not-a-Dataset release (the raw zip, a folder of its
    ``#NN.Pattern.txt`` files — what ``negbench build notadataset`` writes under ``raw/`` — or the
    hub JSON lines), seeded, in release order."""
    from negbench.tasks import notadataset as N
    rel = N.load_release(str(source) if source is not None else N.default_source())
    sents = rel.sentences
    _check_n(n, len(sents), f"the release {rel.source}")
    key = {"pattern": lambda s: s.pattern_id, "negation_type": lambda s: s.negation_type,
           "label": lambda s: s.label, "distractor": lambda s: s.distractor > 0}
    strata = [key[stratify](s) for s in sents] if stratify else [0] * len(sents)
    picked = seeded_sample(strata, n, seed, bool(stratify))
    return [{"item": k, "sentence": sents[i].sentence, "block": sents[i].block,
             "pattern": sents[i].pattern_id, "template": sents[i].template,
             "negation_type": sents[i].negation_type, "semantic_type": sents[i].semantic_type,
             "syntactic_scope": sents[i].syntactic_scope, "distractor": sents[i].distractor,
             "label": "True" if sents[i].label else "False"}
            for k, i in enumerate(picked, 1)]


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence]) -> None:
    from negbench.store import atomic_write_text
    import io
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def write_judge_sheet(items: Sequence[dict], out_dir: str | os.PathLike, title: str) -> dict[str, Path]:
    """``sheet.csv`` (item, sentence, the four questions left empty), ``sheet.md`` (printable,
    with the questions and the allowed answers) and ``key.csv`` (labels and the release's
    negation / pattern fields)."""
    from negbench.store import atomic_write_text
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"sheet": out / "sheet.csv", "markdown": out / "sheet.md", "key": out / "key.csv"}
    _write_csv(paths["sheet"], JUDGE_SHEET_FIELDS,
               [[it["item"], it["sentence"]] + [""] * len(QUESTIONS) for it in items])
    _write_csv(paths["key"], JUDGE_KEY_FIELDS, [[it[f] for f in JUDGE_KEY_FIELDS] for it in items])
    md = [f"# {title} ({len(items)} sentences)", "",
          "Answer four questions for every sentence, in the columns of sheet.csv:", ""]
    md += [f"- `{q.column}`: {q.ask} ({' / '.join(q.values)})" for q in QUESTIONS]
    md += ["", "Judge each sentence on its own; do not look anything up.", ""]
    for it in items:
        md += [f"## {it['item']}", "", it["sentence"], ""]
        md += [f"- {q.ask} ____" for q in QUESTIONS] + [""]
    atomic_write_text(paths["markdown"], "\n".join(md))
    return paths


# -- answer sheets (NUBench items, as Thunder-KoNUBench Table 7) ----------------------------------
def nubench_items(n: int, seed: int, source: str | None = None,
                  stratify: str | None = None) -> list[dict]:
    """``n`` Thunder-NUBench test items (the release, or ``negbench build mcq``'s output), options
    in the order the option mode shows them (Listing 9's shuffle), gold = the standard negation."""
    from negbench.tasks import nubench as NB
    docs = NB.load_split("test", source)
    _check_n(n, len(docs), "the test split")
    strata = [d["choice2_type"] for d in docs] if stratify else [0] * len(docs)
    out = []
    for k, i in enumerate(seeded_sample(strata, n, seed, bool(stratify)), 1):
        d = docs[i]
        keys = list(d["option_keys"])
        out.append({"item": k, "idx": d["index"], "original_sentence": d["sentence"],
                    "options": [d[c] for c in keys], "gold": NB.LETTERS[keys.index("choice1")],
                    "option_types": [NB.KEY_TYPES[c] for c in keys]})
    return out


def write_answer_sheet(items: Sequence[dict], out_dir: str | os.PathLike, title: str,
                       intro: Sequence[str], text_column: str = "original_sentence",
                       text_label: str = "Sentence") -> dict[str, Path]:
    """The KoNUBench sheet layout (:data:`negbench.tasks.konubench.SHEET_FIELDS` /
    ``KEY_FIELDS``) for other multiple-choice items, so one scorer reads both (it reads only
    ``item`` and ``answer`` of a sheet; the text column may be named for what it holds)."""
    from negbench.store import atomic_write_text
    from negbench.tasks.konubench import KEY_FIELDS, LETTERS, SHEET_FIELDS
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"sheet": out / "sheet.csv", "markdown": out / "sheet.md", "key": out / "key.csv"}
    _write_csv(paths["sheet"], (SHEET_FIELDS[0], text_column, *SHEET_FIELDS[2:]),
               [[it["item"], it["original_sentence"],
                 *(it["options"] + [""] * (4 - len(it["options"]))), ""] for it in items])
    _write_csv(paths["key"], KEY_FIELDS,
               [[it["item"], it["idx"], it["gold"], "+".join(it["option_types"])] for it in items])
    md = [f"# {title} ({len(items)} items)", "", *intro, "",
          "Write the letter of your answer in the `answer` column of sheet.csv.", ""]
    for it in items:
        md += [f"## {it['item']}", "", f"{text_label}: {it['original_sentence']}", ""]
        md += [f"{LETTERS[j]}. {t}" for j, t in enumerate(it["options"])] + ["", "Answer: ____", ""]
    atomic_write_text(paths["markdown"], "\n".join(md))
    return paths


def choice_mode(task) -> tuple[str, "object"]:
    """The first mode of ``task`` (its defaults first) that scores a choice among 2–4 options:
    people answer what that mode asks the model."""
    names = list(dict.fromkeys([*task.default_modes, *task.modes]))
    for name in names:
        if getattr(task.modes[name].formulation, "kind", "") in ("loglikelihood", "next_token"):
            return name, task.modes[name]
    raise TaskError(f"task '{task.name}' has no multiple-choice mode to put on a sheet",
                    where="--task", fix="modes: " + ", ".join(names) + "; sheets are for "
                    "tasks whose items have options (or notadataset / nubench / konubench)")


def generic_items(task_name: str, n: int, seed: int) -> tuple[list[dict], str]:
    """``n`` test items of any registered multiple-choice task, rendered zero-shot by its
    choice mode (the prompt the model sees, its options, the gold option); and the mode name.
    Option texts are shuffled per item (seeded); letter options stay as the prompt lists them.
    ``option_types`` in the key name each shown option's position in the task's own order."""
    from negbench.tasks import get_task
    from negbench.tasks.konubench import LETTERS
    task = get_task(task_name)
    mode, spec = choice_mode(task)
    docs = [d for d in task.load(task.test_split) if spec.include is None or spec.include(d)]
    _check_n(n, len(docs), f"the {task.test_split} split of {task.name} ({mode} mode)")
    out = []
    for k, i in enumerate(seeded_sample([0] * len(docs), n, seed, False), 1):
        r = spec.render(docs[i])
        if not isinstance(r.gold, int) or not 2 <= len(r.choices) <= len(LETTERS):
            raise TaskError(f"item {docs[i].id} of {task.name} has {len(r.choices)} options "
                            f"(gold {r.gold!r}); a sheet takes 2–{len(LETTERS)} with one right",
                            where="--task")
        order = list(range(len(r.choices)))
        if not all(c.strip() in LETTERS for c in r.choices):
            # a cloze mode lists its options in a fixed order (often the gold first), which a
            # model never sees but a person would: shuffled per item, seeded
            random.Random(f"{seed}-{docs[i].id}").shuffle(order)
        out.append({"item": k, "idx": docs[i].id, "original_sentence": r.query,
                    "options": [r.choices[j] for j in order], "gold": LETTERS[order.index(r.gold)],
                    "option_types": [f"option{j + 1}" for j in order]})
    return out, mode


def write_sheet(task: str, out_dir: str | os.PathLike, n: int | None = None, seed: int = 0,
                source: str | None = None, stratify: str | None = None) -> dict[str, Path]:
    """Draw the sample of ``task`` and write its sheet, printable sheet and key.  Tasks without
    a paper's sheet get a Table 7-style sheet of their multiple-choice mode (:func:`generic_items`)."""
    if task not in SHEET_TASKS:
        if source is not None or stratify:
            flag = "--source" if source is not None else "--stratify"
            raise OptionError(f"{flag} is for " + ", ".join(SHEET_TASKS), where=flag,
                              fix=f"drop {flag}; other tasks take their data as 'negbench run' "
                                  "does (environment variables, task options)")
        items, mode = generic_items(task, DEFAULT_N["konubench"] if n is None else n, seed)
        return write_answer_sheet(items, out_dir, f"{task} human evaluation ({mode} mode, seed "
                                  f"{seed})", ["Choose the answer to each prompt."],
                                  text_column="prompt", text_label="Prompt")
    _check_stratify(task, stratify)
    n = DEFAULT_N[task] if n is None else n
    if task == "konubench":
        from negbench.tasks import konubench as kb
        return kb.write_human_sheet(out_dir, n, seed, source)
    if task == "nubench":
        from negbench.tasks.nubench import INSTRUCTIONS, OPTION_HEADER
        items = nubench_items(n, seed, source, stratify)
        return write_answer_sheet(items, out_dir, f"Thunder-NUBench human evaluation (seed {seed})",
                                  [OPTION_HEADER, f"Instruction: {INSTRUCTIONS['simple']}"])
    items = notadataset_items(n, seed, source, stratify)
    strat = f", stratified by {stratify}" if stratify else ""
    return write_judge_sheet(items, out_dir,
                             f"This is not a Dataset human evaluation (seed {seed}{strat})")


# -- reading filled sheets ------------------------------------------------------------------------
def _read_rows(path: Path, need: Sequence[str], what: str) -> tuple[list[str], list[dict]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DataError(f"not a readable CSV file ({exc})", path=str(path)) from None
    for k in need:
        if k not in header:
            raise DataError(f"no '{k}' column", path=str(path), field=k,
                            fix=f"use the {what} written by 'negbench human-eval sheet'")
    return header, rows


def key_kind(key: str | os.PathLike) -> str:
    """``judge`` or ``answer``, from the key's columns."""
    header, _ = _read_rows(Path(key), ("item",), "key.csv")
    if "label" in header:
        return "judge"
    if "gold" in header and "option_types" in header:
        return "answer"
    raise DataError("neither a judge key (label column) nor an answer key (gold, option_types)",
                    path=str(key), fix="use the key.csv written by 'negbench human-eval sheet'")


def read_judge_key(key: str | os.PathLike) -> dict[str, dict]:
    path = Path(key)
    _, rows = _read_rows(path, JUDGE_KEY_FIELDS, "key.csv")
    out: dict[str, dict] = {}
    for n, r in enumerate(rows, 2):
        if r["label"] not in ("True", "False"):
            raise DataError(f"label {r['label']!r} is not True or False", path=str(path),
                            record=f"line {n}", field="label")
        if r["item"] in out:
            raise DataError(f"item {r['item']} twice", path=str(path), record=f"line {n}",
                            field="item")
        out[r["item"]] = r
    if not out:
        raise DataError("the key has no items", path=str(path))
    return out


def read_judge_sheet(path: str | os.PathLike, key: dict[str, dict]) -> dict[str, dict[str, str]]:
    """item → question → normalised answer (``true``/``false``, ``yes``/``no``).  Every item of
    the key once, every question answered with an allowed value; else DataError naming the file,
    the line and the column."""
    path = Path(path)
    _, rows = _read_rows(path, ("item",) + tuple(q.column for q in QUESTIONS), "sheet.csv")
    out: dict[str, dict[str, str]] = {}
    for n, r in enumerate(rows, 2):
        it = (r["item"] or "").strip()
        if it not in key:
            raise DataError(f"item {it!r} is not in the key", path=str(path), record=f"line {n}",
                            field="item", fix="keep the item numbers of the sheet as written")
        if it in out:
            raise DataError(f"item {it} answered twice", path=str(path), record=f"line {n}",
                            field="item")
        ans = {}
        for q in QUESTIONS:
            raw = (r[q.column] or "").strip()
            allowed = " / ".join(q.values)
            if not raw:
                raise DataError("no answer", path=str(path), record=f"line {n}", field=q.column,
                                fix=f"answer {allowed}")
            v = _SYNONYMS.get(raw.lower())
            if v not in q.values:
                raise DataError(f"answer {raw!r} is not one of {allowed}", path=str(path),
                                record=f"line {n}", field=q.column,
                                fix=f"{allowed} (or {q.values[0][0]} / {q.values[1][0]})")
            ans[q.column] = v
        out[it] = ans
    if set(out) != set(key):
        missing = sorted(set(key) - set(out), key=lambda s: (len(s), s))
        raise DataError(f"items missing: {', '.join(missing[:10])}"
                        + (" …" if len(missing) > 10 else ""), path=str(path),
                        fix="the sheet must hold every item of the key")
    return out


def annotator_names(paths: Sequence[str | os.PathLike]) -> list[str]:
    """File stems, or the paths themselves when two stems are the same (a/sheet.csv, b/sheet.csv)."""
    stems = [Path(p).stem for p in paths]
    return stems if len(set(stems)) == len(stems) else [str(p) for p in paths]


# -- agreement ------------------------------------------------------------------------------------
def _fleiss(ratings: list[list[str]], cats: Sequence[str]) -> float | None:
    try:
        return fleiss_kappa(counts_from_ratings(ratings, cats)).kappa
    except ValueError:                       # every rating in one category
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
        row = {"per_annotator": {nm: 100 * sum(h) / len(items) for nm, h in zip(names, hits)},
               "all": 100 * sum(all(col) for col in zip(*hits)) / len(items),
               "any": 100 * sum(any(col) for col in zip(*hits)) / len(items)}
        if len(sheets) >= 2:
            raw = [[s[it][q] for it in items] for s in sheets]
            row["agreement"] = 100 * sum(len(set(col)) == 1 for col in zip(*raw)) / len(items)
            row["cohen"] = {f"{names[i]} vs {names[j]}": cohen_kappa(raw[i], raw[j])
                            for i, j in combinations(range(len(sheets)), 2)}
            row["fleiss"] = _fleiss([list(col) for col in zip(*raw)], _Q[q].values)
        table[q] = row
    breakdown: dict[str, dict] = {}
    for fld, fmt in (("negation_type", str), ("distractor", lambda v: "distractor" if v != "0"
                                                     else "WordNet triple")):
        groups: dict[str, list[str]] = defaultdict(list)
        for it in items:
            groups[fmt(k[it][fld])].append(it)
        breakdown[fld] = {g: {"items": len(its),
                              **{nm: 100 * sum(hit(s[it], it, "true_false") for it in its) / len(its)
                                 for nm, s in zip(names, sheets)}}
                          for g, its in sorted(groups.items())}
    return {"kind": "judge", "items": len(items), "annotators": names, "table3": table,
            "true_false_by": breakdown}


def _f(v: float | None, nd: int = 2) -> str:
    return "–" if v is None else f"{v:.{nd}f}"


def format_table3(res: dict) -> str:
    names = res["annotators"]
    if len(names) == 2:
        both, either = f"{names[0]} ∩ {names[1]}", f"{names[0]} ∪ {names[1]}"
    else:
        both, either = "all", "any"
    cols = names + ([both, either] if len(names) > 1 else [])
    lines = [f"Table 3 (human evaluation, {res['items']} sentences; % of sentences; T/F: answer "
             "agrees with the generated label):", "",
             "| % | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for q in TABLE3_ORDER:
        r = res["table3"][q]
        vals = [r["per_annotator"][nm] for nm in names]
        if len(names) > 1:
            vals += [r["all"], r["any"]]
        lines.append(f"| {_Q[q].row} | " + " | ".join(_f(v) for v in vals) + " |")
    lines += ["", "Paper (Table 3: A tester, B tester, A∩B, A∪B; 220 sentences): "
              + "; ".join(f"{_Q[q].row} " + " / ".join(f"{v:g}" for v in PAPER_TABLE3[q])
                          for q in TABLE3_ORDER) + "."]
    if len(names) >= 2:
        pairs = list(res["table3"]["true_false"]["cohen"])
        lines += ["", "Agreement between annotators (raw answers; T/F: the true/false answers "
                  "themselves):", "",
                  "| question | raw agreement % | " + " | ".join(f"Cohen's κ {p}" for p in pairs)
                  + " | Fleiss' κ |", "|---|" + "---:|" * (len(pairs) + 2)]
        for q in TABLE3_ORDER:
            r = res["table3"][q]
            lines.append(f"| {_Q[q].row} | {_f(r['agreement'])} | "
                         + " | ".join(_f(r["cohen"][p], 3) for p in pairs)
                         + f" | {_f(r['fleiss'], 3)} |")
    for fld, groups in res["true_false_by"].items():
        lines += ["", f"T/F agreement with the label by {fld.replace('_', ' ')} (%):", "",
                  "| | items | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
        lines += [f"| {g} | {v['items']} | " + " | ".join(_f(v[nm]) for nm in names) + " |"
                  for g, v in groups.items()]
    return "\n".join(lines)


def score(key: str | os.PathLike, filled: Sequence[str | os.PathLike]) -> tuple[dict, str]:
    """Score filled sheets against their key: (result, printable text).  The key's columns say
    the kind; answer keys go through KoNUBench's Table 7 scorer unchanged."""
    if key_kind(key) == "judge":
        res = score_judge_sheets(key, filled)
        return res, format_table3(res)
    from negbench.tasks import konubench as kb
    res = kb.score_human_sheets(key, filled)
    return res, kb.format_table7(res)
