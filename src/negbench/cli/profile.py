"""``negbench profile``: a model's negation profile in one command (:mod:`negbench.profile`), and
``negbench profile compare A B [C …]``."""

from __future__ import annotations

import argparse
import sys

from negbench.options import (
    ApiOptions,
    EngineOptions,
    ModelOptions,
    SessionOptions,
    fraction,
    whole_number as _int,
)

EPILOG = """examples:
  negbench profile                                          # SmolLM2-135M-Instruct, quick preset
  negbench profile --model gemma3-270m --out profiles/gemma
  negbench profile --model ./my-model --preset paper        # every paper's full protocol
  negbench profile --model openai:gpt-4o-mini --mode konubench=api --mode nubench=option
  negbench profile --model M --benchmarks notadataset,scone-nli --sample 400
  negbench profile compare profiles/a profiles/b --out profiles/a-vs-b
  negbench report profiles/gemma                            # the page again (no model)

Benchmarks whose data is missing are listed with how to get them; a killed profile rerun with
the same command resumes (finished benchmarks are not recomputed). docs/profile.md.
"""


def add_parser(sub) -> None:
    from negbench.profile.presets import PRESETS, by_key

    p = sub.add_parser(
        "profile",
        help="a model's negation profile: every negation benchmark, one page",
        description="Run every negation benchmark whose data is available with its "
        "paper's headline protocol on one loaded model, one cache and one engine, and "
        "write one page (HTML, Markdown, JSON): headline scores with CIs beside chance "
        "and the papers' models, and the negation phenomena across benchmarks.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="embedded model name, model folder, .gguf file, hub id or API model "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--preset",
        default="quick",
        help="; ".join(f"{k}: {v}" for k, v in PRESETS.items()) + " (default: quick)",
    )
    p.add_argument(
        "--out", "-o", default=None, help="profile folder (default: profiles/<model>__<preset>)"
    )
    p.add_argument(
        "--benchmarks",
        default=None,
        metavar="NAME,…",
        help="only these benchmarks: " + ", ".join(by_key()),
    )
    p.add_argument(
        "--mode",
        action="append",
        default=[],
        metavar="BENCH=MODE",
        help="run a benchmark in another mode than its headline one, e.g. konubench=api "
        "for a model without prompt log-probabilities (repeatable)",
    )
    p.add_argument(
        "--sample",
        type=_int(1),
        default=None,
        help="items per benchmark instead of the quick preset's (a seeded subset of "
        "whole units across strata)",
    )
    p.add_argument(
        "--limit",
        type=_int(1),
        default=None,
        help="at most about N items per task, in data order (for a trial)",
    )
    ModelOptions.add_to(p, only=("adapter", "dtype", "device", "threads", "max_length"))
    EngineOptions.add_to(p, only=("cache", "no_cache", "batch_size"))
    ApiOptions.add_to(
        p,
        only=("concurrency", "rate_limit", "max_retries", "timeout", "tokenizer", "api_key_env"),
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a profile of a different configuration in --out",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run_profile)
    s = p.add_subparsers(dest="action", metavar="compare")
    c = s.add_parser(
        "compare",
        help="compare profiles: several models, or a base model and its adapter",
        description="Each profile against the first: per benchmark, items paired by doc "
        "id with McNemar's test and the paired bootstrap (as 'negbench compare'); the "
        "headline side by side; the phenomena that moved.",
    )
    c.add_argument("profiles", nargs="+", metavar="PROFILE", help="profile folders (two or more)")
    c.add_argument(
        "--out",
        "-o",
        default=None,
        help="folder for compare.html, compare.md, compare.json (default: print only)",
    )
    c.add_argument(
        "--label", action="append", default=None, help="a display name per profile, in order"
    )
    from negbench.cli.report import add_bootstrap_args

    add_bootstrap_args(c)
    c.add_argument(
        "--alpha", type=fraction(0, 1), default=0.05, help="significance level (default: 0.05)"
    )
    c.add_argument("--force", action="store_true", help="pair items even when the data differ")
    c.add_argument("--json", action="store_true", help="print the JSON")
    c.set_defaults(func=run_compare)


def parse_modes(items: list[str]) -> dict[str, str]:
    from negbench.errors import OptionError

    out = {}
    for it in items:
        bench, sep, mode = it.partition("=")
        if not sep or not bench.strip() or not mode.strip():
            raise OptionError(
                f"--mode expects BENCH=MODE, got {it!r}",
                where="--mode",
                fix="e.g. --mode konubench=api",
            )
        out[bench.strip()] = mode.strip()
    return out


def run_profile(args) -> int:
    from negbench.profile.runner import profile

    benchmarks = (
        [b.strip() for b in args.benchmarks.split(",") if b.strip()] if args.benchmarks else None
    )
    prof = profile(
        args.model,
        preset=args.preset,
        out=args.out,
        benchmarks=benchmarks,
        modes=parse_modes(args.mode),
        sample=args.sample,
        limit=args.limit,
        overwrite=args.overwrite,
        options=SessionOptions.from_args(args),
        progress=not args.quiet,
    )
    print(prof.summary())
    files = prof.manifest.get("files") or {}
    print(f"\nprofile: {prof.folder}")
    for k in ("html", "md", "json", "model_card", "lm_eval"):
        if k in files:
            print(f"{k}: {prof.folder / files[k]}")
    bad = [b for b in prof.benchmarks if b.get("status") in ("failed", "unsupported")]
    return 1 if bad and len(bad) == len(prof.benchmarks) else 0


def run_compare(args) -> int:
    from negbench.cli.report import bootstrap_options
    from negbench.profile.compare import compare_profiles, summary_text, write_comparison
    from negbench.files import to_json

    pc = compare_profiles(
        args.profiles,
        labels=args.label,
        **bootstrap_options(args),
        alpha=args.alpha,
        force=args.force,
    )
    if args.json:
        print(to_json(pc.to_dict(), indent=1))
    else:
        print(summary_text(pc))
    for w in pc.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.out:
        files = write_comparison(pc, args.out)
        if not args.json:
            print("\n" + "\n".join(f"{k}: {args.out}/{v}" for k, v in files.items()))
    return 0
