"""Coverage of negbench's 95 % intervals and type-I error of its paired test, by simulation.

    python benchmarks/coverage.py                # the full grid, 2,000 replications per setting
    python benchmarks/coverage.py --reps 1000 --quick

Prints the table of docs/statistics.md (every setting: structure, number of clusters G,
intra-cluster correlation, truth, method, share of replications with an interval shown, coverage
among them — for `compare` rows the type-I error at α = 0.05 —, and whether it is within the
band [93 %, 97.5 %] / ≤ 6 %), then the type-I error of an item-level paired test (what
`negbench compare` did before it went by units) on the same nulls.  Pure numpy/scipy, no model;
about a minute on one core.
"""

from __future__ import annotations

import argparse
import time

from negbench.scoring import coverage


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000, help="replications per setting (≥ 1000)")
    ap.add_argument("--quick", action="store_true", help="the default test run's grid")
    ap.add_argument("--summary", action="store_true", help="one row per kind × structure × G")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = coverage.run(args.reps, quick=args.quick)
    print(coverage.summary(rows) if args.summary else coverage.table(rows))
    bad = [r for r in rows if not r.ok()]
    print(
        f"\n{len(rows)} settings, {args.reps} replications each (compare rows: {4 * args.reps}); "
        f"{len(bad)} outside the band; {time.perf_counter() - t0:.0f} s"
    )
    print("\nType-I error at α = 0.05 under a null with unit effects (4,000 replications):")
    print("| structure | G | ICC | p | items as independent | by units (negbench) |")
    print("|---|---:|---:|---:|---:|---:|")
    for st, G, icc, p in (
        ("blocks", 20, 0.1, 0.5),
        ("blocks", 50, 0.1, 0.5),
        ("blocks", 50, 0.5, 0.5),
        ("condaqa", 50, 0.1, 0.5),
        ("condaqa", 50, 0.5, 0.5),
        ("minimal-pairs", 50, 0.5, 0.5),
        ("seeds", 50, 0.5, 0.5),
    ):
        before = coverage.item_level_type_i(st, G, p, icc, 4000, seed=7)
        row = coverage.compare_setting(st, G, p, icc, 4000, seed=7)
        now = "too small" if row.coverage is None else f"{100 * row.coverage:.1f} %"
        print(f"| {st} | {G} | {icc:g} | {p:.2f} | {100 * before:.1f} % | {now} |")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
