"""``negbench run``: evaluate a model on tasks — the command line in front of
:class:`negbench.evaluation.session.Session` (``--config FILE`` gives the same options from a YAML
file: :mod:`negbench.cli.config`)."""

from __future__ import annotations

import os
import sys

from negbench.evaluation.tracking import REPORT_TO_HELP, report_to
from negbench.options import (
    ApiOptions,
    ClusterOptions,
    EngineOptions,
    ModelOptions,
    SessionOptions,
)
from negbench.options import limit_value
from negbench.options import names_once as _names_once
from negbench.options import whole_number as _int, whole_numbers as _ints


def add_parser(sub) -> None:
    r = sub.add_parser(
        "run",
        help="evaluate a model on tasks",
        description="Evaluate a model. Every answered request is cached on disk as "
        "soon as it is computed: rerunning a killed run resumes where it stopped.",
    )
    g = r.add_argument_group("what to run")
    g.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="embedded model name (see 'negbench models'), a model folder, a .gguf file, "
        "or a Hugging Face hub id (default: %(default)s)",
    )
    g.add_argument(
        "--tasks",
        type=_names_once,
        default=["negation-mini"],
        help="comma-separated task names (see 'negbench tasks') or .jsonl files "
        "(default: negation-mini)",
    )
    g.add_argument(
        "--modes",
        type=_names_once,
        default=None,
        help="comma-separated scoring modes, for every task (each must have them), "
        "or TASK:MODE+MODE for one task, e.g. negation-mini:cloze+letter,"
        "truefalse-mini:next_token (default: each task's default modes)",
    )
    g.add_argument(
        "--shots",
        type=_ints(0),
        default=None,
        help="comma-separated few-shot counts, e.g. 0,1,5,10 (default: the task's)",
    )
    g.add_argument(
        "--seeds",
        type=_ints(0),
        default=None,
        help="comma-separated seeds of the few-shot examples' draw, one unit each (default: "
        "the task's; 0-shot units ignore seeds); --sample's seed is --sample-seed",
    )
    g.add_argument(
        "--protocol",
        action="store_true",
        help="run each task's paper protocol: its shot counts × seeds (e.g. NUBench "
        "0/1/5/10 shots × 5 seeds), unless --shots/--seeds are given",
    )
    s = r.add_argument_group(
        "subset (whole units of each benchmark; the rule is printed and saved)"
    )
    s.add_argument(
        "--limit",
        type=limit_value,
        default=None,
        help="evaluate about N records (or a share of each task's, e.g. 0.1), taken in data "
        "order by the benchmark's whole units (CONDAQA contrast groups, "
        "This-is-not-a-Dataset blocks, minimal pairs) and spread over its strata (ScoNe "
        "conditions, categories, patterns); each unit's subset rule is printed and saved (default: all records)",
    )
    s.add_argument(
        "--sample",
        type=_int(1),
        default=None,
        help="evaluate about N records drawn at random (--sample-seed), by the same "
        "whole units and strata as --limit (default: all records)",
    )
    s.add_argument(
        "--sample-seed",
        "--seed",
        type=_int(0),
        default=None,
        dest="sample_seed",
        help="seed of --sample's random draw of records (default: 0; --seed is the same "
        "option); not the few-shot seeds, which are --seeds",
    )
    c = r.add_argument_group("prompt format")
    c.add_argument(
        "--chat",
        action="store_true",
        help="wrap each prompt in the model's chat template (layout: --chat-layout)",
    )
    c.add_argument(
        "--system-prompt", default=None, help="system message used with --chat (default: none)"
    )
    c.add_argument(
        "--chat-layout",
        default="lm-eval",
        choices=["lm-eval", "user"],
        help="with --chat: 'lm-eval' puts the task description (and --system-prompt) "
        "in the system message and few-shot block + question in one user turn, "
        "as lm-eval 0.4.13 --apply_chat_template; 'user' puts everything in the "
        "user turn (default: lm-eval)",
    )
    ModelOptions.add_to(r)
    ApiOptions.add_to(r)
    EngineOptions.add_to(r)
    e = r.add_argument_group("output")
    e.add_argument(
        "--output",
        default=None,
        help="run folder (default: runs/<model>__<tasks>, then what differs from the "
        "defaults: modes, shots, seeds, limit or sample, adapter, chat, a hash "
        "of other settings)",
    )
    e.add_argument(
        "--shard-size",
        type=_int(1),
        default=20_000,
        help="samples per shard: each finished shard is saved in the run folder, so a "
        "killed long run resumes shard by shard (default: %(default)s)",
    )
    e.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a finished run of a different configuration in --output "
        "(without it such a run is kept and the new one refused)",
    )
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    e.add_argument(
        "--report-to", type=report_to, default=[], metavar="TRACKERS", help=REPORT_TO_HELP
    )
    ClusterOptions.add_to(r)
    r.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="a YAML file of these options (keys as the long option names, e.g. "
        "tasks: [negation-mini], shots: [0, 5]): the same as giving them as "
        "flags before the others, so the command line wins (docs/yaml_tasks.md)",
    )
    r.set_defaults(func=run)


def run(args) -> int:
    """Check everything the user gave (options, tasks, data, model path, output folder) before
    the model loads or anything is written; the run fills a staging folder that appears as the
    run folder only when it has finished."""
    from negbench.backends.spec import ModelSpec
    from negbench.errors import OptionError
    from negbench.evaluation.results import engine_line, format_results, tables_text, warnings_text
    from negbench.evaluation.session import Session, check_chat_options

    spec = ModelSpec.parse(args.model)
    check_chat_options(args.chat, args.system_prompt, args.chat_layout)
    if args.sample_seed is not None and args.sample is None:
        raise OptionError(
            "--sample-seed (--seed) is the seed of --sample's draw, but --sample is not given",
            where="--sample-seed / --seed",
            fix="add --sample N, or use --seeds for few-shot seeds (lm-eval's --seed sets "
            "its few-shot seed: here --seeds S)",
        )
    if args.limit is not None and args.sample is not None:
        raise OptionError(
            "--limit and --sample both choose a subset",
            where="--limit / --sample",
            fix="give one: --limit N (data order) or --sample N --seed S (random)",
        )
    sample_seed = args.sample_seed or 0
    session = Session(spec, SessionOptions.from_args(args), progress=not args.quiet)
    out = args.output or os.path.join("runs", default_folder(args, spec.slug, sample_seed))
    with session:
        results = session.evaluate(
            args.tasks,
            modes=args.modes,
            shots=args.shots,
            seeds=args.seeds,
            limit=args.limit,
            sample=args.sample,
            sample_seed=sample_seed,
            protocol=args.protocol,
            chat=args.chat,
            system_prompt=args.system_prompt,
            chat_layout=args.chat_layout,
            output=out,
            overwrite=args.overwrite,
            shard_size=args.shard_size,
            report_to=args.report_to,
        )
        engine = session.engine
        cache = session.cache
        pool = session.ray
    data = results.data
    print(format_results(data, with_warnings=False))
    sys.stdout.write(tables_text(data))
    print("\n" + engine_line(data, spec.is_api))
    if pool is not None:
        from negbench.evaluation.cluster import retry_table

        summary = engine.cluster_summary() or {}
        print(
            f"ray: {summary.get('groups', 0)} group(s) on {summary.get('workers', 0)} "
            f"worker(s), {summary.get('retries', 0)} retried"
        )
        if summary.get("retries"):
            print(retry_table(summary))
    if cache is not None and cache.readonly:
        print(
            f"note: the cache {cache.path} is read-only; the {data['engine']['computed']} answers "
            "computed now were not saved in it",
            file=sys.stderr,
        )
    w = warnings_text(data)
    if w:
        print("\n" + w)
    print(f"results: {results.output / 'results.json'}\nsamples: {results.output / 'samples'}/")
    return 0


def default_folder(args, model_slug: str, sample_seed: int) -> str:
    """``<model>__<tasks>`` plus what differs from the defaults
    (:func:`negbench.evaluation.session.run_folder_name`)."""
    from negbench.evaluation.session import run_folder_name

    other = {
        "dtype": None if args.dtype == "auto" else args.dtype,
        "quantize": None if args.quantize == "none" else args.quantize,
        "max_length": args.max_length,
        "add_bos": None if args.add_bos == "auto" else args.add_bos,
        "system_prompt": args.system_prompt,
        "chat_layout": None if args.chat_layout == "lm-eval" else args.chat_layout,
    }
    return run_folder_name(
        model_slug,
        list(args.tasks),
        modes=args.modes,
        shots=args.shots,
        seeds=args.seeds,
        protocol=args.protocol,
        limit=args.limit,
        sample=args.sample,
        sample_seed=sample_seed,
        adapter=args.adapter,
        chat=args.chat,
        other=other,
    )
