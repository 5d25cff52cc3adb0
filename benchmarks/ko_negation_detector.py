"""Precision and recall of negbench's Korean negation detector on the Thunder-KoNUBench release.

The labelled set is built at run time from ../shared/data/konubench (never written anywhere):

* KoNUBench standard and local negations (negated) against their original sentences, and
  paraphrases (which should add no negation; compared by type count, since they reword it).  Original sentences are real Wikipedia-style text and often already
  hold a negation (``…에 속하지 않는다``), which the negated versions keep; so a sentence is not
  scored on its own but against its original: the negations the detector finds in the negated
  (or paraphrased) sentence *beyond* those it finds in the original — multiset difference per
  type — are compared with the types the release labels for the added negation (``sn_절1..3``,
  ``ln_절1..2``: 안/못 단형/장형, 말다, 아니다, 어휘적).  Added hits of a labelled type count as true
  positives up to the labelled count, the rest as false positives; labelled negations not found
  are false negatives.  Paraphrases should add none: hits beyond the original's count of their
  type are counted as false positives.
  ``어휘적`` (antonym) negations are out of reach of any rule here and are reported apart.
* Clause type: for local negations whose release label has one added negation the detector also
  finds exactly once, its clause type against ``local_negation_type`` (and, for standard
  negations, that every added hit is read as a main clause).
* KMMLU (§3.3): the 7,154 released negated questions (positives) and their affirmative rewrites
  (negatives): which the detector selects, with and without lexical negation (아니다, 부-).

Rules were written looking at examples of the train split; the test split is also shown alone.

    python benchmarks/ko_negation_detector.py [KONUBENCH_DIR]   # default: ../shared/data/konubench
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from negbench.analyze.corpus import PAPER_KMMLU_NEGATED, kmmlu_ask, kmmlu_negated
from negbench.analyze.ko_negation import CLAUSES, RELEASE_TYPES, SYNTACTIC_TYPES, KoNegationDetector
from negbench.tasks.konubench.tasks import LOCAL_TYPES, SPLITS, find_diag_file, find_split_file

SCORED = SYNTACTIC_TYPES + ("anida",)


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * p * r / (p + r) if tp and (p + r) else 0.0
    return p, r, f


def added(neg: list, orig: list) -> list:
    """Hits of ``neg`` not matched by a hit of the same type and surface in ``orig``."""
    left = Counter((h.type, h.text) for h in orig)
    out = []
    for h in neg:
        if left[(h.type, h.text)] > 0:
            left[(h.type, h.text)] -= 1
        else:
            out.append(h)
    return out


def added_by_type(neg: list, orig: list) -> list:
    """Hits of ``neg`` beyond the original's count of their type (surface ignored: a paraphrase
    rewords the original's own negation, 속하지 않는다 → 포함되지 않는다)."""
    left = Counter(h.type for h in orig)
    out = []
    for h in neg:
        if left[h.type] > 0:
            left[h.type] -= 1
        else:
            out.append(h)
    return out


def labels(rec: dict, prefix: str, n: int) -> list[str]:
    return [RELEASE_TYPES[rec[f"{prefix}{i}"]] for i in range(1, n + 1) if rec.get(f"{prefix}{i}")]


class Tally:
    def __init__(self):
        self.tp, self.fp, self.fn = Counter(), Counter(), Counter()
        self.antonym = 0

    def add(self, expected: list[str], found: list) -> None:
        exp = Counter(t for t in expected if t in SCORED)
        self.antonym += sum(t == "antonym" for t in expected)
        got = Counter(h.type for h in found)
        for t in set(exp) | set(got):
            hit = min(exp[t], got[t])
            self.tp[t] += hit
            self.fp[t] += got[t] - hit
            self.fn[t] += exp[t] - hit

    def rows(self) -> list[tuple[str, int, int, int]]:
        rows = [(t, self.tp[t], self.fp[t], self.fn[t]) for t in SCORED]
        syn = [r for r in rows if r[0] in SYNTACTIC_TYPES]
        rows.append(("syntactic", *(sum(r[i] for r in syn) for i in (1, 2, 3))))
        rows.append(("all", *(sum(r[i] for r in rows[: len(SCORED)]) for i in (1, 2, 3))))
        return rows


def print_tally(name: str, tally: Tally) -> None:
    print(
        f"\n{name}: negations added to the original, by type (antonym negations, not "
        f"detectable: {tally.antonym})"
    )
    print(f"  {'type':10} {'TP':>6} {'FP':>6} {'FN':>6} {'P':>7} {'R':>7} {'F1':>7}")
    for t, tp, fp, fn in tally.rows():
        p, r, f = prf(tp, fp, fn)
        print(f"  {t:10} {tp:6d} {fp:6d} {fn:6d} {p:7.3f} {r:7.3f} {f:7.3f}")


def konubench(root: Path, det: KoNegationDetector, splits: tuple[str, ...]) -> None:
    recs = []
    for split in splits:
        path = find_split_file(root, split)
        if path is None:
            sys.exit(f"no {split} file under {root}")
        recs += json.loads(path.read_text(encoding="utf-8"))
    sents = []
    for r in recs:
        sents += [
            r["original_sentence"],
            r["standard_negation"],
            r["paraphrase"],
            r.get("local_negation") or "",
        ]
    t0 = time.perf_counter()
    hits = list(det.detect_many(sents))
    dt = time.perf_counter() - t0
    std, loc, par = Tally(), Tally(), Tally()
    pair = Counter()  # sentence-pair level: does the detector see more?
    clause_conf: Counter = Counter()
    std_main = Counter()
    orig_with_hit = 0
    for n, r in enumerate(recs):
        o, s, p, ln = hits[4 * n : 4 * n + 4]
        orig_with_hit += bool(o)
        sa, pa = added(s, o), added_by_type(p, o)
        pair["par_surface"] += len(added(p, o))
        std.add(labels(r, "sn_절", 3), sa)
        par.add([], pa)
        pair["std_tp" if sa else "std_fn"] += 1
        pair["par_fp" if pa else "par_tn"] += 1
        for h in sa:
            std_main[h.clause == "main"] += 1
        if r.get("local_negation") and r.get("local_negation_type"):
            la = added(ln, o)
            lab = labels(r, "ln_절", 2)
            loc.add(lab, la)
            pair["loc_tp" if la else "loc_fn"] += 1
            scored = [t for t in lab if t in SCORED]
            if len(scored) == 1:
                match = [h for h in la if h.type == scored[0]]
                if len(match) == 1:
                    clause_conf[(LOCAL_TYPES[r["local_negation_type"]], match[0].clause)] += 1
    print(
        f"\n=== Thunder-KoNUBench {'+'.join(splits)}: {len(recs)} items, {len(sents)} sentences "
        f"analysed in {dt:.1f} s; {orig_with_hit} originals ({orig_with_hit / len(recs):.1%}) "
        f"already hold a negation the detector sees"
    )
    print_tally("standard negation vs original", std)
    print_tally("local negation vs original", loc)
    print(
        f"\nparaphrase vs original (should add no negation): {pair['par_surface']} hits whose "
        f"surface is not in the original, {sum(par.fp.values())} beyond the original's count of "
        f"their type ("
        + ", ".join(f"{t} {par.fp[t]}" for t in SCORED if par.fp[t])
        + "); the latter, an upper bound on false positives (a paraphrase may also add a "
        "genuine negation), is counted as false positives below"
    )
    tp, fn, fp = pair["std_tp"] + pair["loc_tp"], pair["std_fn"] + pair["loc_fn"], pair["par_fp"]
    p, r_, f = prf(tp, fp, fn)
    print(
        f"\nsentence level (a sentence is 'negated' when the detector finds a negation its original "
        f"lacks; for paraphrases, by type count): standard {pair['std_tp']}/{pair['std_tp'] + pair['std_fn']}, local "
        f"{pair['loc_tp']}/{pair['loc_tp'] + pair['loc_fn']} found; paraphrases flagged "
        f"{pair['par_fp']}/{pair['par_fp'] + pair['par_tn']}; P {p:.3f} R {r_:.3f} F1 {f:.3f}"
    )
    tot = sum(std_main.values())
    print(
        f"standard negation: {std_main[True]}/{tot} added hits read as main clause "
        f"({std_main[True] / max(tot, 1):.1%})"
    )
    gold = ("adnominal", "adverbial", "noun", "quotation", "subordinate", "coordinated")
    total = sum(clause_conf.values())
    right = sum(v for (g, d), v in clause_conf.items() if g == d)
    print(
        f"\nlocal negation clause type: {right}/{total} = {right / max(total, 1):.3f} "
        f"(items whose single labelled negation was found once)"
    )
    print(f"  {'release / detector':20}" + "".join(f"{c[:6]:>8}" for c in CLAUSES) + f"{'acc':>8}")
    for g in gold:
        row = [clause_conf[(g, c)] for c in CLAUSES]
        acc = clause_conf[(g, g)] / max(sum(row), 1)
        print(f"  {g:20}" + "".join(f"{v:8d}" for v in row) + f"{acc:8.3f}")


def kmmlu(root: Path) -> None:
    data = {}
    for task in ("kmmlu-neg", "kmmlu-pos"):
        path = find_diag_file(root, task)
        if path is None:
            sys.exit(f"no {task} file under {root}")
        data[task] = [
            kmmlu_ask(r["question"]) for r in json.loads(path.read_text(encoding="utf-8"))
        ]
    print(
        f"\n=== KMMLU §3.3: {len(data['kmmlu-neg'])} released negated questions (the paper says "
        f"{PAPER_KMMLU_NEGATED}), {len(data['kmmlu-pos'])} affirmative rewrites"
    )
    for lexical in (False, True):
        det = KoNegationDetector(lexical=lexical)
        neg_hits = list(det.detect_many(data["kmmlu-neg"]))
        pos_hits = list(det.detect_many(data["kmmlu-pos"]))
        for rule, pick in (("any negation", bool), ("last predicate", kmmlu_negated)):
            neg = [pick(h) for h in neg_hits]
            pos = [pick(h) for h in pos_hits]
            tp, fp = sum(neg), sum(pos)
            p, r, f = prf(tp, fp, len(neg) - tp)
            name = f"{'syntactic + lexical' if lexical else 'syntactic only'}, {rule}"
            print(
                f"  {name:36} selects {tp}/{len(neg)} negated, {fp}/{len(pos)} affirmative; "
                f"P {p:.3f} R {r:.3f} F1 {f:.3f}"
            )
            if lexical and rule == "last predicate":
                missed = [q for q, x in zip(data["kmmlu-neg"], neg) if not x]
                flagged = [q for q, x in zip(data["kmmlu-pos"], pos) if x]
                print("    missed negated, e.g.: " + " | ".join(missed[:5]))
                print("    flagged affirmative, e.g.: " + " | ".join(flagged[:5]))


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path.cwd().parent / "shared" / "data" / "konubench"
    det = KoNegationDetector(lexical=True)
    konubench(root, det, SPLITS)
    konubench(root, det, ("test",))
    kmmlu(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
