"""Speed of the This-is-not-a-Dataset scorer (``tasks/notadataset.metrics``: the official accuracy
cells and block coherence, per pattern, calibration and the Random row) on synthetic per-sentence
records shaped like a run's samples — no model, no data files.

    python benchmarks/notadataset_scorer.py [--sentences 100000 381300] [--repeat 3]

Prints seconds per run and seconds per 100k sentences (best of the repeats).
"""

from __future__ import annotations

import argparse
import random
import time

from negbench.tasks.notadataset.tasks import metrics
from negbench.tasks.notadataset.truth_scorer import ANTONYMY, regular_label

TYPES = [
    ("affirmation", "none", "none"),
    ("verbal", "analytic", "clausal"),
    ("verbal", "synthetic", "subclausal"),
    ("non_verbal", "analytic", "subclausal"),
    ("non_verbal", "synthetic", "clausal"),
]


def records(n: int, seed: int = 0) -> list[dict]:
    """``n`` sample records in blocks of 20-120 sentences over the 11 patterns."""
    rnd = random.Random(seed)
    out: list[dict] = []
    b = 0
    while len(out) < n:
        pid = rnd.randint(1, 11)
        size = min(rnd.randint(20, 120), n - len(out))
        block = f"p{pid:02d}.b{b:06d}"
        b += 1
        for i in range(size):
            neg, sem, scope = TYPES[rnd.randrange(len(TYPES))]
            dist = rnd.random() < 0.5
            label = regular_label(pid, dist, neg == "affirmation")
            if rnd.random() < 0.1:
                label = not label
            p = rnd.random()
            out.append(
                {
                    "meta": {
                        "pattern_id": pid,
                        "block": block,
                        "negation_type": neg,
                        "semantic_type": sem,
                        "syntactic_scope": scope,
                        "is_distractor": dist,
                        "label": label,
                        "block_size": size,
                    },
                    "pred_bool": p > 0.5,
                    "p_true": p,
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sentences", type=int, nargs="+", default=[100_000, 381_300])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    assert ANTONYMY
    print(f"{'sentences':>10}  {'s / run':>8}  {'s / 100k':>8}")
    for n in args.sentences:
        recs = records(n)
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            metrics("next_token", recs)
            best = min(best, time.perf_counter() - t)
        print(f"{n:>10}  {best:>8.3f}  {best / n * 1e5:>8.3f}")


if __name__ == "__main__":
    main()
