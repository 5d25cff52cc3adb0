"""``negbench show RUN``: print a saved run's results and tables."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    s = sub.add_parser("show", help="print the results of a saved run")
    s.add_argument("run", help="run folder")
    s.add_argument("--units", action="store_true", help="one row per unit (seed) as well")
    s.set_defaults(func=run)


def run(args) -> int:
    from negbench.evaluation.results import format_results, tables_text
    from negbench.evaluation.store import load_results
    res = load_results(args.run)
    print(format_results(res, units=args.units))
    sys.stdout.write(tables_text(res))
    return 0
