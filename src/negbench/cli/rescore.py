"""``negbench rescore RUN``: recompute a saved run's metrics, groups and tables from its samples
(no model)."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    rs = sub.add_parser(
        "rescore", help="recompute a saved run's metrics from its samples (no model)"
    )
    rs.add_argument("run", help="run folder")
    rs.set_defaults(func=run)


def run(args) -> int:
    from negbench.evaluation.results import format_results, tables_text
    from negbench.evaluation.runner import rescore
    from negbench.evaluation.store import RunStore, load_results

    load_results(args.run)  # a clear error when it is not a run folder
    res = rescore(RunStore(args.run))
    print(format_results(res))
    sys.stdout.write(tables_text(res))
    return 0
