"""``negbench train`` and ``negbench recipes``: the command-line face of :mod:`negbench.train`."""

from __future__ import annotations

import argparse
import sys

from negbench.options import EngineOptions, ModelOptions
from negbench.options import whole_number
from negbench.evaluation.tracking import report_to

EPILOG = """examples:
  negbench recipes                                         # every recipe and hyper-parameter
  negbench recipes notadataset --yaml > my.yaml            # a config file to edit
  negbench train --recipe notadataset --model smollm2 --out runs/nad-lora \\
      --data 'notadataset[sample=2000]' --eval-limit 3000
  negbench train --recipe konubench-cloze --model gemma3-270m --out runs/ko-cloze --max-steps 50
  negbench train --recipe nubench-simple --model ./my-model --out runs/nu --set learning_rate=2e-4
  negbench train --recipe nubench-simple --model M --out D --data my_pairs.jsonl --no-eval

The adapter is written to OUT/adapter (with negbench_train.json), the evaluation runs to
OUT/eval/base and OUT/eval/adapter, the comparison to OUT/compare.md; with --profile the
negation profiles of both to OUT/profile/ (base, adapter, compare). A killed training resumes
from its last checkpoint when the same command is run again.
"""


def add_parser(subparsers) -> None:
    t = subparsers.add_parser(
        "train",
        help="LoRA fine-tuning with a paper's recipe, then before/after evaluation",
        description="Fine-tune a LoRA adapter with one of the papers' recipes (peft + "
        "transformers Trainer), then evaluate the base model and the adapter on the "
        "recipe's test protocol and compare them (flips, McNemar, paired bootstrap).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.set_defaults(func=cmd_train)
    t.add_argument(
        "--recipe",
        default=None,
        help="recipe name (negbench recipes lists them); optional with a --config "
        "file that names one",
    )
    t.add_argument(
        "--model",
        default=None,
        help="base model: embedded name, folder, .gguf or hub id (default: "
        "smollm2-135m-instruct; gemma3-270m for Korean recipes)",
    )
    t.add_argument("--out", required=True, help="output folder (adapter in OUT/adapter)")
    t.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a recipe setting, e.g. --set learning_rate=2e-4 (repeatable; "
        "strings take \\n escapes, lists are comma-separated, 'none' clears)",
    )
    t.add_argument(
        "--config",
        default=None,
        metavar="FILE.yaml",
        help="YAML file of recipe settings (applied before --set)",
    )
    t.add_argument(
        "--data",
        default=None,
        help="training data: an exporter spec (negbench export lists them), e.g. "
        "'notadataset[patterns=1+3,polarity=negative,sample=2000]', or a "
        ".json/.jsonl file of Alpaca records (default: the recipe's)",
    )
    t.add_argument(
        "--max-steps",
        type=whole_number(1),
        default=None,
        help="stop after N optimiser steps (instead of the recipe's epochs)",
    )
    t.add_argument(
        "--no-eval",
        action="store_true",
        help="do not evaluate base model and adapter after training",
    )
    t.add_argument(
        "--eval-limit",
        type=whole_number(1),
        default=None,
        help="evaluate about N test records, chosen as negbench run --limit chooses them (whole "
        "units across the benchmark's strata; notadataset: sample=N, whole test blocks in a "
        "seeded random order, spread over the patterns)",
    )
    t.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a finished adapter of a different training in OUT (and "
        "evaluation runs of a different configuration)",
    )
    t.add_argument(
        "--restart",
        action="store_true",
        help="discard an unfinished training in OUT instead of resuming it",
    )
    t.add_argument(
        "--memory-budget",
        type=float,
        default=None,
        metavar="GB",
        help="memory the activations of one micro-batch may take: the recipe's batch is split "
        "into micro-batches with gradient accumulation that fit it, with the same gradients "
        "(default: 1 GB on a CPU, at most a quarter of the free memory; half the free GPU "
        "memory on a GPU; same as --set memory_budget_gb=GB)",
    )
    ModelOptions.add_to(t, only=("device", "threads"))
    EngineOptions.add_to(t, only=("cache",), title="evaluation after training")
    t.add_argument("--quiet", action="store_true", help="no progress bars")
    t.add_argument(
        "--report-to",
        type=report_to,
        default=[],
        metavar="TRACKERS",
        help="log the training (loss, learning rate, …: transformers' Trainer "
        "report_to) and the evaluation runs to experiment trackers, "
        "comma-separated: tensorboard (OUT/logs), wandb, mlflow (default: none; "
        "docs/tracking.md)",
    )
    t.add_argument(
        "--general-tasks",
        default=None,
        metavar="TASK,…",
        help="after training, run these lm-evaluation-harness tasks (e.g. "
        "arc_easy,boolq,hellaswag; lm-eval's default settings) on the base model "
        "and the adapter through negbench's engine; lm-eval's results go to "
        "OUT/general/base.json and OUT/general/adapter.json (needs "
        "'negbench[lm-eval]'; docs/lm_eval_model.md)",
    )
    t.add_argument(
        "--general-include-path",
        default=None,
        metavar="DIR",
        help="folder of local lm-eval task YAMLs for --general-tasks",
    )
    t.add_argument(
        "--general-limit",
        type=whole_number(1),
        default=None,
        help="--general-tasks: only the first N documents of each task",
    )
    t.add_argument(
        "--profile",
        nargs="?",
        const="quick",
        default=None,
        metavar="PRESET",
        help="after training, write the negation profile of the base model and of the "
        "adapter and compare them (OUT/profile/base, OUT/profile/adapter, "
        "OUT/profile/compare): every negation benchmark with data, not only the "
        "recipe's (default preset when given: quick, about ten minutes per "
        "profile for SmolLM2 on 2 CPU cores; off by default: docs/profile.md)",
    )
    t.add_argument(
        "--profile-benchmarks",
        default=None,
        metavar="NAME,…",
        help="--profile: only these benchmarks (e.g. the recipe's, to keep it short)",
    )

    r = subparsers.add_parser(
        "recipes",
        help="list the fine-tuning recipes and every setting",
        description="The papers' LoRA recipes: name, source, and every "
        "hyper-parameter (docs/training.md explains them).",
    )
    r.set_defaults(func=cmd_recipes)
    r.add_argument("name", nargs="?", help="show one recipe")
    r.add_argument(
        "--yaml", action="store_true", help="print the recipe as a YAML config (for --config)"
    )
    r.add_argument(
        "--llama-factory",
        dest="llama_factory",
        action="store_true",
        help="print the recipe's LLaMA-Factory training YAML keys",
    )


def cmd_recipes(args) -> int:
    from negbench.scoring import recipes as R

    if not args.name:
        if args.yaml or args.llama_factory:
            from negbench.errors import OptionError

            raise OptionError(
                "--yaml / --llama-factory show one recipe",
                where="negbench recipes",
                fix="negbench recipes NAME --yaml",
            )
        print(R.table())
        print(
            "\nnegbench recipes NAME shows one; --yaml writes it as a --config file. "
            "Sources: docs/training.md."
        )
        return 0
    rec = R.get_recipe(args.name)
    if args.yaml:
        sys.stdout.write(R.to_yaml(rec))
    elif args.llama_factory:
        import yaml

        y, caveats = rec.llamafactory(
            "MODEL", rec.name.replace("-", "_"), "TEMPLATE", f"saves/{rec.name}"
        )
        sys.stdout.write(yaml.safe_dump(y, sort_keys=False, allow_unicode=True))
        for c in caveats:
            print(f"# not expressible: {c}")
    else:
        print(R.describe(rec))
    return 0


def cmd_train(args) -> int:
    from negbench.backends.sources import DEFAULT_MODEL, MULTILINGUAL_DEFAULT
    from negbench.scoring.recipes import resolve_recipe

    overrides = list(args.overrides)
    if args.memory_budget is not None:
        overrides.append(f"memory_budget_gb={args.memory_budget:g}")
    recipe = resolve_recipe(
        args.recipe,
        config=args.config,
        overrides=overrides,
        data=args.data,
        max_steps=args.max_steps,
        eval_limit=args.eval_limit,
    )
    model = args.model or (MULTILINGUAL_DEFAULT if recipe.language != "en" else DEFAULT_MODEL)
    general = _general_tasks(args)  # checked before any training
    profile = _profile_options(args)
    from negbench.train.trainer import train

    adapter = train(
        recipe,
        model,
        args.out,
        eval=not args.no_eval,
        overwrite=args.overwrite,
        restart=args.restart,
        device=args.device,
        threads=args.threads,
        cache=args.cache,
        progress=not args.quiet,
        report_to=args.report_to,
    )
    print(f"adapter: {adapter}")
    if profile:
        _profiles(args, model, str(adapter), *profile)
    if general:
        from pathlib import Path
        from negbench.integrations.lm_eval import general_eval

        for name, adp in (("base", None), ("adapter", str(adapter))):
            out = Path(args.out) / "general" / f"{name}.json"
            print(f"lm-eval {','.join(general)} on the {name} model:")
            general_eval(
                model,
                adp,
                general,
                str(out),
                include_path=args.general_include_path,
                device=args.device,
                threads=args.threads,
                cache=args.cache,
                limit=args.general_limit,
                progress=not args.quiet,
            )
            print(f"lm-eval results: {out}")
    return 0


def _profile_options(args) -> tuple[str, list[str] | None] | None:
    """--profile and --profile-benchmarks, checked (preset and benchmark names) before training."""
    if args.profile is None:
        if args.profile_benchmarks:
            from negbench.errors import OptionError

            raise OptionError(
                "--profile-benchmarks goes with --profile",
                where="negbench train",
                fix="add --profile (quick preset) or --profile paper",
            )
        return None
    from negbench.profile.presets import select

    names = (
        [b.strip() for b in args.profile_benchmarks.split(",") if b.strip()]
        if args.profile_benchmarks
        else None
    )
    select(args.profile, names)
    return args.profile, names


def _profiles(args, model: str, adapter: str, preset: str, benchmarks: list[str] | None) -> None:
    """The negation profiles of the base model and of the adapter, and their comparison."""
    from pathlib import Path
    from negbench.profile.compare import compare_profiles, summary_text, write_comparison
    from negbench.profile.runner import profile

    out = Path(args.out) / "profile"
    opts = dict(
        preset=preset,
        benchmarks=benchmarks,
        device=args.device,
        threads=args.threads,
        cache=args.cache or True,
        progress=not args.quiet,
        overwrite=args.overwrite,
    )
    folders = []
    for name, adp in (("base", None), ("adapter", adapter)):
        print(f"negation profile of the {name} model ({preset} preset):")
        folders.append(profile(model, out=out / name, adapter=adp, **opts).folder)
    pc = compare_profiles(folders, labels=["base", "adapter"])
    print(summary_text(pc))
    files = write_comparison(pc, out / "compare")
    print(f"profiles: {folders[0]} {folders[1]}\ncomparison: {out / 'compare' / files['html']}")


def _general_tasks(args) -> list[str] | None:
    """--general-tasks, checked (lm_eval installed, task names known) before training."""
    if not args.general_tasks:
        if args.general_include_path or args.general_limit:
            from negbench.errors import OptionError

            raise OptionError(
                "--general-include-path / --general-limit go with --general-tasks",
                where="negbench train",
                fix="add --general-tasks TASK,…",
            )
        return None
    from negbench.errors import require

    require("lm_eval")
    from negbench.integrations.lm_eval import task_manager

    tasks = [t.strip() for t in args.general_tasks.split(",") if t.strip()]
    task_manager(tasks, args.general_include_path)
    return tasks
