"""Precision / recall of the English negation detector (``negbench analyze negation --lang en``)
on labelled sets read at run time from ``../shared/data`` (nothing is written out):

1. **This is not a Dataset** (raw release, through :mod:`negbench.tasks.notadataset.tasks`'s loader):
   every sentence's ``negation_type`` — negated (verbal / non_verbal) vs affirmation; for the
   negated ones, verbal vs non_verbal (the detector's ``kind`` of the sentence's label hit) and
   analytic vs synthetic (``form`` against ``semantic_type``).
2. **CONDAQA** (``condaqa_dev.json``, the only split here): positives = each passage's
   ``original sentence`` (it holds the annotated cue); negatives = the sentence an
   *affirmative* edit (PassageEditID 3) rewrote — the sentences of the edited passage that are
   not in the original passage.  These are not clean negatives: an affirmative edit often
   replaces an affixal cue by ``not`` (``illegal`` → ``was not imprisoned``) or leaves another
   negation in the sentence, so precision here is a lower bound; read the FP list.  Recall is
   split by whether the annotated cue is one of the detector's cues (CONDAQA's affixal / lexical
   cues — ``unclear``, ``lack`` — are out of scope).
3. **ScoNe-NLI** test (through :mod:`negbench.tasks.scone.tasks`): each premise and hypothesis; the
   condition says how many negations it has (no_negation 0, one_* 1, two_* / one_scoped_one_not 2).

    python benchmarks/en_negation_detector.py           # run from the repository root
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter, defaultdict

from negbench.analyze.en_negation import CUES, EnNegationDetector, sentence_label


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * p * r / (p + r) if p + r else float("nan")
    return p, r, f


def binary_row(name: str, gold: list[bool], pred: list[bool]) -> str:
    tp = sum(g and p for g, p in zip(gold, pred))
    fp = sum(p and not g for g, p in zip(gold, pred))
    fn = sum(g and not p for g, p in zip(gold, pred))
    acc = sum(g == p for g, p in zip(gold, pred)) / len(gold)
    p, r, f = prf(tp, fp, fn)
    return (
        f"| {name} | {len(gold):,} | {sum(gold):,} | {tp:,} | {fp:,} | {fn:,} | "
        f"{100 * p:.2f} | {100 * r:.2f} | {100 * f:.2f} | {100 * acc:.2f} |"
    )


HEAD = (
    "| set | sentences | positives | TP | FP | FN | precision % | recall % | F1 % | "
    "accuracy % |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def notadataset(det: EnNegationDetector) -> None:
    import negbench.tasks.notadataset.tasks as N

    t0 = time.time()
    rel = N.load_release(N.default_source())
    sents = rel.sentences
    hits = [det.detect(s.sentence) for s in sents]
    print(
        f"## This is not a Dataset (raw release, {len(sents):,} sentences; "
        f"detected in {time.time() - t0:.1f} s incl. loading)\n"
    )
    print(HEAD)
    print(
        binary_row(
            "negated vs affirmation",
            [s.negation_type != "affirmation" for s in sents],
            [bool(h) for h in hits],
        )
    )
    print(
        binary_row(
            "… counting main-clause cues only",
            [s.negation_type != "affirmation" for s in sents],
            [any(x.clause == "main" for x in h) for h in hits],
        )
    )
    neg = [
        (s, sentence_label(h))
        for s, h in zip(sents, hits)
        if s.negation_type != "affirmation" and h
    ]
    print(
        binary_row(
            "verbal vs non_verbal (negated, detected)",
            [s.negation_type == "verbal" for s, _ in neg],
            [lab.kind == "verbal" for _, lab in neg],
        )
    )
    print(
        binary_row(
            "synthetic vs analytic (negated, detected)",
            [s.semantic_type == "synthetic" for s, _ in neg],
            [lab.form == "synthetic" for _, lab in neg],
        )
    )
    conf = Counter((s.negation_type, lab.kind) for s, lab in neg)
    print(
        "\nconfusion (release negation_type → detector kind): "
        + ", ".join(f"{a} → {b}: {v:,}" for (a, b), v in sorted(conf.items()))
    )
    by_pat: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for s, h in zip(sents, hits):
        c = by_pat[s.pattern_id]
        c[0] += 1
        c[1] += (s.negation_type != "affirmation") != bool(h)
        c[2] += s.negation_type != "affirmation" and not h
    print(
        "errors per pattern (sentences / wrong negated-or-not / missed negations): "
        + "; ".join(f"#{p:02d} {c[0]:,}/{c[1]:,}/{c[2]:,}" for p, c in sorted(by_pat.items()))
    )
    fps = [s.sentence for s, h in zip(sents, hits) if s.negation_type == "affirmation" and h]
    fns = [s.sentence for s, h in zip(sents, hits) if s.negation_type != "affirmation" and not h]
    for what, xs in (("false positives", fps), ("misses", fns)):
        if xs:
            print(f"{what}, e.g.: " + " | ".join(sorted(set(xs))[:3]))
    print()


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9])")


def condaqa(det: EnNegationDetector) -> None:
    from negbench.tasks.data_source import shared_data
    from negbench.records import iter_jsonl

    path = shared_data("condaqa") / "data" / "condaqa_dev.json"
    if not path.is_file():
        print(f"## CONDAQA: skipped ({path} not found)\n")
        return
    rows = [o for _, o in iter_jsonl(path)]
    pos: dict[int, tuple[str, str]] = {}
    neg: dict[int, set[str]] = defaultdict(set)
    originals = {o["PassageID"]: o["original passage"] for o in rows}
    for o in rows:
        pos[o["PassageID"]] = (o["original sentence"], o["original cue"])
        if o["PassageEditID"] == 3:
            orig = set(_SPLIT.split(originals[o["PassageID"]]))
            neg[o["PassageID"]].update(s for s in _SPLIT.split(o["sentence1"]) if s not in orig)
    negs = [s for ss in neg.values() for s in ss]
    items = [(s, True, cue) for s, cue in pos.values()] + [(s, False, None) for s in negs]
    pred = [bool(det.detect(s)) for s, _, _ in items]
    print(
        f"## CONDAQA dev ({len(pos):,} passages: their original cue sentences; "
        f"{len(negs):,} sentences rewritten by affirmative edits)\n"
    )
    print(HEAD)
    print(binary_row("original cue sentence vs affirmative edit", [g for _, g, _ in items], pred))

    def in_scope(cue: str) -> bool:
        words = cue.lower().replace("n't", " n't").split()
        return any(w in CUES or w == "cannot" for w in words)

    sub = [(g, p) for (_, g, c), p in zip(items, pred) if not g or in_scope(c)]
    print(
        binary_row(
            "… positives whose annotated cue is a detector cue",
            [g for g, _ in sub],
            [p for _, p in sub],
        )
    )
    fps = [s for (s, g, _), p in zip(items, pred) if p and not g]
    print(
        '\n"false positives" (affirmative-edit sentences with a cue), e.g.: '
        + " | ".join(x[:90] for x in fps[:4])
    )
    cues_missed = Counter(c for (_, g, c), p in zip(items, pred) if g and not p)
    print(
        "\nmissed positives by annotated cue (top 12): "
        + ", ".join(f"{c} {v}" for c, v in cues_missed.most_common(12))
    )
    print()


def scone(det: EnNegationDetector) -> None:
    import negbench.tasks.scone.tasks as S

    expected = {
        "no_negation": 0,
        "one_not_scoped": 1,
        "one_scoped": 1,
        "two_not_scoped": 2,
        "two_scoped": 2,
        "one_scoped_one_not_scoped": 2,
    }
    docs = S.load_nli("test")
    seen: dict[str, str] = {}
    for d in docs:
        for s in (d["premise"], d["hypothesis"]):
            seen.setdefault(s, d["split"])
    print(f"## ScoNe-NLI test ({len(seen):,} distinct premises and hypotheses)\n")
    print(HEAD)
    sents = list(seen)
    hits = [det.detect(s) for s in sents]
    print(
        binary_row(
            "negation present vs no_negation",
            [expected[seen[s]] > 0 for s in sents],
            [bool(h) for h in hits],
        )
    )
    print(
        "\n| condition | sentences | expected negations | detected = expected % | "
        "detected > 0 % |\n|---|---:|---:|---:|---:|"
    )
    for c in S.CONDITIONS:
        xs = [(s, h) for s, h in zip(sents, hits) if seen[s] == c]
        if xs:
            print(
                f"| {c} | {len(xs)} | {expected[c]} | "
                f"{100 * sum(len(h) == expected[c] for _, h in xs) / len(xs):.1f} | "
                f"{100 * sum(bool(h) for _, h in xs) / len(xs):.1f} |"
            )
    odd = [
        (seen[s], s, [h.cue for h in hs])
        for s, hs in zip(sents, hits)
        if len(hs) != expected[seen[s]]
    ]
    if odd:
        print("\ncount differs, e.g.: " + " | ".join(f"{c}: {s} → {h}" for c, s, h in odd[:4]))
    print()


def main() -> int:
    det = EnNegationDetector()
    for f in (notadataset, condaqa, scone):
        try:
            f(det)
        except Exception as exc:  # report a missing set, go on
            print(f"## {f.__name__}: skipped ({type(exc).__name__}: {exc})\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
