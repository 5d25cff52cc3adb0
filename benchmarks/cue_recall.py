"""Cue-insertion recall on JNLI-Neg v1.1, and Fleiss' kappa of its annotators.

For every negated sentence of the JNLI-Neg release (``p_neg`` / ``h_neg`` / ``p_neg_h_neg``
sentences), check that negbench's candidate generator, run on the group's original sentence,
produces it — and with the same ``neg_id_in_jnli_sentence``, ``neg_position`` and ``target_pos``.
Misses are grouped by cause. Also checks the negation detector (neg(s)) against the JNLI-Neg
construction logs, and computes Fleiss' kappa from the released ``annotator_labels``.

    python benchmarks/cue_recall.py [JNLI_NEG_DIR]      # default: ../shared/data/jnli-neg
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import negbench.tasks.jsts_neg.ja_negation as ja
from negbench.scoring.agreement import fleiss_kappa

NLI_LABELS = ("entailment", "neutral", "contradiction")


def default_dir() -> Path:
    env = os.environ.get("NEGBENCH_DATA")
    if env:
        return Path(env) / "jnli-neg"
    for base in (Path.cwd().parent, Path(__file__).resolve().parents[2]):
        p = base / "shared" / "data" / "jnli-neg"
        if p.is_dir():
            return p
    return Path.cwd().parent / "shared" / "data" / "jnli-neg"


def release(root: Path, split: str) -> list[dict]:
    p = root / "data" / "jnli-neg-v1.1" / f"jnli-neg-{split}-v1.1.jsonl"
    with open(p, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@dataclass
class Recall:
    total: int = 0
    found: int = 0
    same_id: int = 0
    same_meta: int = 0
    misses: list[dict] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.total if self.total else float("nan")


def _changed_span(a: str, b: str) -> tuple[int, int]:
    """Start and end (in ``a``) of the region where ``b`` differs from ``a``."""
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return i, len(a) - j


def miss_cause(original: str, negated: str) -> str:
    """Why no candidate equals the released sentence."""
    src = ja.normalize(original)
    if (
        ja.normalize(negated) == negated
        and src != original
        and any(c.sentence == negated for c in ja.candidates(src))
    ):
        return "normalisation"
    lo, hi = _changed_span(src, negated)
    ms = ja.analyze(src)
    starts, pos = [], 0
    for m in ms:
        starts.append(pos)
        pos += len(m.surface)
    site = [k for k, s in enumerate(starts) if s < max(hi, lo + 1) and s + len(ms[k].surface) > lo]
    cands = ja.candidates(src)
    if any(c.trigger in site or c.trigger + 1 in site or c.trigger - 1 in site for c in cands):
        return "other surface form at the same word"
    if not site:
        return "edit outside any morpheme"
    m = ms[site[0]]
    return f"no rule fires ({m.pos1}/{m.ctype or '-'}/{m.cform or '-'})"


def cue_recall(root: Path, splits=("train", "valid")) -> Recall:
    r = Recall()
    for split in splits:
        rows = release(root, split)
        orig = {x["jnli_sentence_pair_id"]: x for x in rows if x["type"] == "original"}
        seen = set()
        for x in rows:
            if x["type"] == "original":
                continue
            o = orig[x["jnli_sentence_pair_id"]]
            for side in ("sentence1", "sentence2"):
                neg = x[side]["neg"]
                if not neg:
                    continue
                key = (split, x["jnli_sentence_pair_id"], side, neg["neg_id_in_jnli_sentence"])
                if key in seen:
                    continue
                seen.add(key)
                r.total += 1
                cands = ja.candidates(o[side]["sentence"])
                hit = [c for c in cands if c.sentence == x[side]["sentence"]]
                if not hit:
                    r.misses.append(
                        {
                            "split": split,
                            "pair": x["jnli_sentence_pair_id"],
                            "side": side,
                            "cause": miss_cause(o[side]["sentence"], x[side]["sentence"]),
                        }
                    )
                    continue
                c = hit[0]
                r.found += 1
                r.same_id += c.neg_id == neg["neg_id_in_jnli_sentence"]
                r.same_meta += (
                    c.neg_position == neg["neg_position"] and c.target_pos == neg["target_pos"]
                )
    return r


def detector_check(root: Path) -> tuple[int, int, int, int]:
    """(logged cue sentences, of them detected, release originals, of them flagged)."""
    logged = detected = 0
    for split in ("train", "valid"):
        p = root / "logs" / "jnli_neg_instance" / f"neg_instances-{split}.jsonl"
        with open(p, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                x = json.loads(line)
                for d in (x["sent1_detail"], x["sent2_detail"]):
                    if d["cues"]:
                        logged += 1
                        detected += ja.has_negation("".join(d["tokens"]))
    originals = flagged = 0
    for split in ("train", "valid"):
        for x in release(root, split):
            if x["type"] == "original":
                for side in ("sentence1", "sentence2"):
                    originals += 1
                    flagged += ja.has_negation(x[side]["sentence"])
    return logged, detected, originals, flagged


def label_counts(root: Path, split: str) -> list[list[int]]:
    """Per-instance counts of the three NLI labels (instances with annotator_labels)."""
    return [
        [x["annotator_labels"][k] for k in NLI_LABELS]
        for x in release(root, split)
        if x.get("annotator_labels")
    ]


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else default_dir()
    if not (root / "data" / "jnli-neg-v1.1").is_dir():
        print(f"JNLI-Neg v1.1 not found under {root}", file=sys.stderr)
        return 1
    r = cue_recall(root)
    print(f"JNLI-Neg v1.1 negated sentences (unique per original sentence and neg id): {r.total}")
    print(
        f"  recall (released sentence among our candidates): {r.found}/{r.total} = {r.recall:.4f}"
    )
    print(f"  same neg_id_in_jnli_sentence: {r.same_id}/{r.found}")
    print(f"  same neg_position and target_pos: {r.same_meta}/{r.found}")
    causes = Counter(m["cause"] for m in r.misses)
    print(
        "  misses by cause: " + (", ".join(f"{k}: {v}" for k, v in causes.most_common()) or "none")
    )
    for m in r.misses[:20]:
        print(f"    {m['split']} pair {m['pair']} {m['side']}: {m['cause']}")
    logged, detected, originals, flagged = detector_check(root)
    print(
        f"negation detector: {detected}/{logged} logged cue sentences detected; "
        f"{flagged}/{originals} release originals flagged"
    )
    allc = []
    for split in ("train", "valid"):
        c = label_counts(root, split)
        allc += c
        k = fleiss_kappa(c)
        print(
            f"Fleiss' kappa {split}: {k.kappa:.4f} (N={k.n_subjects}, P̄={k.p_bar:.4f}, "
            f"P̄e={k.p_e:.4f})"
        )
    k = fleiss_kappa(allc)
    print(f"Fleiss' kappa train+valid: {k.kappa:.4f} (N={k.n_subjects})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
