"""``negbench experiment NAME``: the papers' fine-tuning experiments (This is not a Dataset §6,
the generalisation matrix of Figure 2; :mod:`negbench.train.experiment`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from negbench.options import EngineOptions, ModelOptions
from negbench.options import whole_number
from negbench.train.experiment import NAMES, notadataset_generalisation

EPILOG = """examples:
  negbench experiment notadataset-generalisation --model smollm2 --out runs/fig2 \\
      --patterns 2,4,6 --sample 2000 --eval-sample 1000
  negbench experiment notadataset-generalisation --model M --out runs/fig2 --patterns all
  negbench experiment notadataset-generalisation --model M --out runs/tab7 \\
      --types affirmation,negation,verbal,non_verbal --sample 5000 --max-steps 200
  negbench report runs/fig2                     # the matrix and the heatmap in the report

Rows are trained on the train split, columns tested on the test split (by block, never by
sentence). DIR/matrix.md and DIR/heatmap.png hold the result; rerunning the same command continues
a killed experiment and redoes nothing that has finished. Docs: docs/experiments.md.
"""


def add_parser(subparsers) -> None:
    e = subparsers.add_parser(
        "experiment",
        help="the papers' fine-tuning experiments (generalisation matrix)",
        description="notadataset-generalisation: This is not a Dataset §6, Figure 2 — one LoRA "
        "adapter per training subset (pattern, or negation type as in Table 7), each "
        "evaluated on every subset, with the base model as the zero-shot row. "
        "Writes OUT/matrix.json, OUT/matrix.md and OUT/heatmap.png; every cell is a "
        "run folder under OUT/cells and is not redone on a rerun.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.set_defaults(func=run)
    e.add_argument(
        "name",
        metavar="NAME",
        choices=sorted(NAMES),
        help="the experiment: notadataset-generalisation",
    )
    e.add_argument(
        "--model",
        default=None,
        help="base model: embedded name, folder, .gguf or hub id (default: smollm2-135m-instruct)",
    )
    e.add_argument("--out", required=True, help="experiment folder")
    e.add_argument(
        "--patterns",
        default=None,
        help="comma-separated patterns, by number (1-11) or name (Synonymy1, "
        "Antonymy1, …), or 'all' (default: all 11, as Figure 2)",
    )
    e.add_argument(
        "--types",
        default=None,
        help="comma-separated negation types instead of patterns (Table 7): "
        "affirmation, negation, verbal, non_verbal, analytic, synthetic, clausal, "
        "subclausal; row T trains on affirmations + T",
    )
    e.add_argument(
        "--all-row",
        action="store_true",
        help="also train one adapter on all the listed subsets together (Figure 2's 'All' row)",
    )
    e.add_argument(
        "--sample",
        type=whole_number(1),
        default=None,
        help="training sentences per subset: a stratified sample of whole train blocks "
        "of about N sentences (default: the subset's whole train split)",
    )
    e.add_argument(
        "--eval-sample",
        type=whole_number(1),
        default=None,
        help="test sentences per subset, whole test blocks (default: all)",
    )
    e.add_argument(
        "--eval-split",
        choices=["test", "dev"],
        default="test",
        help="the held-out split the columns are tested on (default: test)",
    )
    e.add_argument(
        "--max-steps",
        type=whole_number(1),
        default=None,
        help="optimiser steps per adapter (instead of the recipe's epochs)",
    )
    e.add_argument(
        "--recipe",
        default="notadataset",
        help="training recipe (default: notadataset; negbench recipes lists them)",
    )
    e.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a recipe setting, e.g. --set learning_rate=1e-4 (repeatable)",
    )
    e.add_argument(
        "--overwrite",
        action="store_true",
        help="continue in OUT even though it holds another configuration (what "
        "differs is redone; cells that do not change are kept)",
    )
    ModelOptions.add_to(e, only=("device", "threads"))
    EngineOptions.add_to(e, only=("cache",), title="evaluations")
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    c = e.add_argument_group("cluster (Ray; pip install 'negbench[ray]'; docs/ray.md)")
    c.add_argument(
        "--ray",
        default=None,
        metavar="auto|HOST:PORT|local[:N]",
        help="run the base cells and the rows (training + evaluation) as jobs on a Ray "
        "cluster; workers must see --out (one machine or a shared filesystem)",
    )
    c.add_argument(
        "--ray-workers",
        type=whole_number(1),
        default=None,
        help="jobs at once (default: local: 2, a cluster: its CPUs/GPUs per worker)",
    )
    c.add_argument(
        "--ray-cpus-per-worker",
        type=float,
        default=None,
        help="CPUs per job (default: 1; also its torch threads without --threads)",
    )
    c.add_argument(
        "--ray-gpus-per-worker", type=float, default=None, help="GPUs per job (default: 0)"
    )


def run(args) -> int:
    from negbench.evaluation.cluster import parse_options, require_ray
    from negbench.backends.sources import DEFAULT_MODEL

    ray = parse_options(
        args.ray, args.ray_workers, args.ray_cpus_per_worker, args.ray_gpus_per_worker
    )
    if ray is not None:
        require_ray()
    m = notadataset_generalisation(
        args.model or DEFAULT_MODEL,
        args.out,
        patterns=args.patterns,
        types=args.types,
        sample=args.sample,
        eval_sample=args.eval_sample,
        eval_split=args.eval_split,
        max_steps=args.max_steps,
        recipe=args.recipe,
        overrides=args.overrides,
        all_row=args.all_row,
        device=args.device,
        threads=args.threads,
        cache=args.cache,
        overwrite=args.overwrite,
        progress=not args.quiet,
        ray=ray,
    )
    from negbench.report.matrix import metric_table_md

    out = Path(args.out)
    st = m.get("stats") or {}
    print("Accuracy (%), rows: trained on, columns: tested on\n")
    print(metric_table_md(m, "acc"))
    print(
        f"\n{st.get('trained', 0)} adapter(s) trained, {st.get('reused_adapters', 0)} reused; "
        f"{st.get('evaluated', 0)} cell(s) evaluated, {st.get('reused_cells', 0)} reused; "
        f"{st.get('wall_s', 0)}s"
    )
    print(
        f"matrix:  {out / 'matrix.md'}\njson:    {out / 'matrix.json'}\nheatmap: "
        f"{out / 'heatmap.png'}\nreport:  negbench report {out}"
    )
    return 0
