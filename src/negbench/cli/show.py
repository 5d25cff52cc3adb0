"""``negbench show RUN``: print a saved run's results and tables."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    s = sub.add_parser("show", help="print the results of a saved run")
    s.add_argument("run", help="run folder")
    s.add_argument("--units", action="store_true", help="one row per unit (seed) as well")
    s.add_argument(
        "--all",
        action="store_true",
        dest="all_metrics",
        help="every metric of every unit (the console shows each unit's headline)",
    )
    s.set_defaults(func=run)


def run(args) -> int:
    from negbench.evaluation.results import format_results, tables_text, warnings_text
    from negbench.evaluation.store import load_results

    res = load_results(args.run)
    print(format_results(res, units=args.units, all_metrics=args.all_metrics, with_warnings=False))
    sys.stdout.write(tables_text(res))
    w = warnings_text(res)
    if w:
        print("\n" + w)
    return 0
