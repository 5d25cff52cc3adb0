"""``negbench run``: evaluate a model on tasks — the command line in front of
:class:`negbench.evaluation.session.Session` (``--config FILE`` gives the same options from a YAML
file: :mod:`negbench.cli.config`)."""

from __future__ import annotations

import os
import sys

from negbench.evaluation.tracking import REPORT_TO_HELP, report_to
from negbench.options import batch_size_value, limit_value
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
    g.add_argument(
        "--limit",
        type=limit_value,
        default=None,
        help="evaluate about N records (or a share of each task's, e.g. 0.1), taken in data "
        "order by the benchmark's whole units (CONDAQA contrast groups, "
        "This-is-not-a-Dataset blocks, minimal pairs) and spread over its strata (ScoNe "
        "conditions, categories, patterns); each unit's subset rule is printed and saved",
    )
    g.add_argument(
        "--sample",
        type=_int(1),
        default=None,
        help="evaluate about N records drawn at random (--seed), by the same whole "
        "units and strata as --limit",
    )
    g.add_argument(
        "--sample-seed",
        "--seed",
        type=_int(0),
        default=None,
        dest="sample_seed",
        help="seed of --sample's random draw of records (default: 0; --seed is the same "
        "option); not the few-shot seeds, which are --seeds",
    )
    g.add_argument(
        "--chat",
        action="store_true",
        help="wrap each prompt in the model's chat template (layout: --chat-layout)",
    )
    g.add_argument("--system-prompt", default=None, help="system message used with --chat")
    g.add_argument(
        "--chat-layout",
        default="lm-eval",
        choices=["lm-eval", "user"],
        help="with --chat: 'lm-eval' puts the task description (and --system-prompt) "
        "in the system message and few-shot block + question in one user turn, "
        "as lm-eval 0.4.13 --apply_chat_template; 'user' puts everything in the "
        "user turn (default: lm-eval)",
    )
    m = r.add_argument_group("model")
    m.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="weights dtype (auto: bfloat16 on GPU, float32 on CPU)",
    )
    m.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 … (default: auto)")
    m.add_argument(
        "--quantize",
        default="none",
        choices=["none", "8bit"],
        help="load the weights in 8 bits (bitsandbytes LLM.int8(); needs a CUDA GPU), "
        "as This is not a Dataset Table 9 (default: none)",
    )
    m.add_argument("--adapter", default=None, help="LoRA adapter folder (PEFT) to apply")
    m.add_argument(
        "--max-length",
        type=_int(2),
        default=None,
        help="truncate contexts from the left to this many tokens (default: model's)",
    )
    m.add_argument("--threads", type=_int(1), default=None, help="CPU threads for torch")
    m.add_argument(
        "--add-bos",
        default="auto",
        choices=["auto", "yes", "no"],
        help="prepend BOS to prompts: auto = the tokenizer's default, as lm-eval "
        ">= 0.4.9.2 (use 'no' to match older lm-eval with non-Gemma models)",
    )
    a = r.add_argument_group(
        "API and server backends (openai:, openai-compatible:, vllm:, anthropic:)"
    )
    a.add_argument(
        "--concurrency",
        type=_int(1),
        default=4,
        help="requests in flight at once (default: %(default)s)",
    )
    a.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        help="at most this many requests per second, client side (default: none)",
    )
    a.add_argument(
        "--max-retries",
        type=_int(0),
        default=6,
        help="retries per request on 429/5xx/timeouts/dropped connections/malformed "
        "answers, with exponential backoff and jitter (default: %(default)s)",
    )
    a.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per HTTP request (default: %(default)s)",
    )
    a.add_argument(
        "--tokenizer",
        default=None,
        help="folder of the served model's tokenizer (openai-compatible: default: the "
        "folder the server reports as the model's root, when it exists here)",
    )
    a.add_argument(
        "--api-key-env",
        default=None,
        help="environment variable holding the API key (default: OPENAI_API_KEY, "
        "OPENAI_COMPATIBLE_API_KEY or ANTHROPIC_API_KEY); keys are never "
        "accepted on the command line nor written anywhere",
    )
    a.add_argument(
        "--api-seed",
        type=_int(0),
        default=0,
        help="sampling seed sent with generation requests (default: %(default)s)",
    )
    a.add_argument(
        "--vllm-arg",
        action="append",
        default=[],
        help="extra argument for the managed vLLM server of --model vllm:… "
        "(repeatable, e.g. --vllm-arg=--max-model-len=4096)",
    )
    e = r.add_argument_group("engine and output")
    e.add_argument(
        "--output",
        default=None,
        help="run folder (default: runs/<model>__<tasks>, then what differs from the "
        "defaults: modes, shots, seeds, limit or sample, adapter, chat, a hash "
        "of other settings)",
    )
    e.add_argument(
        "--cache",
        default=None,
        help="response cache file (default: $NEGBENCH_CACHE/responses.sqlite, ~/.cache/negbench)",
    )
    e.add_argument(
        "--no-cache", action="store_true", help="do not read or write the response cache"
    )
    e.add_argument(
        "--batch-size",
        type=batch_size_value,
        default="auto",
        help="rows per forward pass, or auto: on a GPU the largest call that fits (found once "
        "per model and device, remembered), on a CPU 32 (default: auto)",
    )
    e.add_argument(
        "--max-row-tokens",
        type=_int(16),
        default=None,
        help="tokens packed into one row (default: auto — the cheapest of 256, 512, "
        "1024 and 2048 by the engine's cost model of tokens, attended keys and calls)",
    )
    e.add_argument(
        "--max-batch-tokens",
        type=_int(16),
        default=None,
        help="upper bound on rows × (prefix + row length) per forward pass (default: "
        "the backend's — transformers: 2048 on CPU, where larger batches only "
        "add memory, 32768 on GPU)",
    )
    e.add_argument(
        "--no-prefix-sharing",
        action="store_true",
        help="score every request in its own row (for comparison; slower)",
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
    add_cluster_args(r)
    r.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="a YAML file of these options (keys as the long option names, e.g. "
        "tasks: [negation-mini], shots: [0, 5]): the same as giving them as "
        "flags before the others, so the command line wins (docs/yaml_tasks.md)",
    )
    r.set_defaults(func=run)


def add_cluster_args(parser) -> None:
    """--ray and its options (``run`` and ``experiment``); see docs/ray.md."""
    c = parser.add_argument_group("cluster (Ray; pip install 'negbench[ray]'; docs/ray.md)")
    c.add_argument(
        "--ray",
        default=None,
        metavar="auto|HOST:PORT|local[:N]",
        help="spread the work over a Ray cluster: local[:N] starts one here with N "
        "workers (default 2), auto joins the one `ray start --head` started, "
        "HOST:PORT joins that head; results are identical to a one-process run "
        "with the same --group-tokens and --threads",
    )
    c.add_argument(
        "--ray-workers",
        type=_int(1),
        default=None,
        help="workers (model replicas; default: local: 2, a cluster: as many as its "
        "CPUs/GPUs allow)",
    )
    c.add_argument(
        "--ray-cpus-per-worker",
        type=float,
        default=None,
        help="CPUs reserved per worker (default: 1)",
    )
    c.add_argument(
        "--ray-gpus-per-worker",
        type=float,
        default=None,
        help="GPUs per worker, e.g. 1 or 0.5 (default: 0)",
    )
    c.add_argument(
        "--group-tokens",
        type=_int(16),
        default=None,
        help="tokens per prefix-sharing group, the unit of work handed to a worker "
        "(default: the engine's chunk size, 200000); also valid without --ray, "
        "where the same value gives the same groups and hence identical samples",
    )


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
    session = Session(
        spec,
        dtype=args.dtype,
        device=args.device,
        quantize=args.quantize,
        adapter=args.adapter,
        max_length=args.max_length,
        threads=args.threads,
        add_bos=args.add_bos,
        tokenizer=args.tokenizer,
        api_key_env=args.api_key_env,
        concurrency=args.concurrency,
        rate_limit=args.rate_limit,
        max_retries=args.max_retries,
        timeout=args.timeout,
        api_seed=args.api_seed,
        vllm_args=args.vllm_arg,
        cache=None if args.no_cache else (args.cache or True),
        batch_size=args.batch_size,
        max_row_tokens=args.max_row_tokens,
        max_batch_tokens=args.max_batch_tokens,
        share_prefix=not args.no_prefix_sharing,
        group_tokens=args.group_tokens,
        ray=args.ray,
        ray_workers=args.ray_workers,
        ray_cpus_per_worker=args.ray_cpus_per_worker,
        ray_gpus_per_worker=args.ray_gpus_per_worker,
        progress=not args.quiet,
    )
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
