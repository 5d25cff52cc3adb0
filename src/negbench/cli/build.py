"""``negbench build TARGET``: construct benchmark data.  Targets: ``mcq`` (the generic
multiple-choice builder of :mod:`negbench.builders.mcq`, for Thunder-NUBench / KoNUBench), and
every builder a benchmark home registers (``jsts-neg``, ``notadataset``; registry kind
``builder``)."""

from __future__ import annotations

import argparse
import sys

from negbench.options import EngineOptions, ModelOptions
from negbench.options import whole_number
from negbench.scoring.registry import REGISTRY


def add_parser(subparsers) -> None:
    b = subparsers.add_parser("build", help="construct benchmark data (JSTS-Neg from JGLUE JSTS)")
    bs = b.add_subparsers(dest="build_target", metavar="TARGET")
    builders = REGISTRY.entries("builder")
    order = ["jsts-neg", "mcq", *[n for n in builders if n != "jsts-neg"]]
    for name in order:
        if name == "mcq":
            add_mcq_parser(bs)
        elif name in builders:
            builders[name].add_parser(bs)
    b.set_defaults(func=run)


def _log(s: str) -> None:
    print(s, file=sys.stderr)


def run(args) -> int:
    target = getattr(args, "build_target", None)
    if target == "mcq":
        return run_mcq(args)
    builder = REGISTRY.get("builder", target) if target else None
    if builder is None:
        print("usage: negbench build jsts-neg [options]  (see --help)", file=sys.stderr)
        return 2
    from negbench.evaluation.session import open_model

    return builder.run(args, open_model)


# -- negbench build mcq (negbench.builders.mcq) -----------------------------------------------------
MCQ_EPILOG = """examples (docs/build_mcq.md):
  negbench build mcq --lang en --input examples/mcq_sentences_en.txt --out B      # LLM stages + author sheet
  negbench build mcq --lang en --input … --out B --author A.csv                   # + review-1 sheet
  negbench build mcq --lang en --input … --out B --author A.csv --review-sheet R1.csv R2.csv   # finalize
  NEGBENCH_NUBENCH=B/nubench negbench run --tasks nubench --modes completion
"""


def add_mcq_parser(bs) -> None:
    m = bs.add_parser(
        "mcq",
        help="NUBench / KoNUBench multiple choice: LLM stages, author and "
        "review sheets, release files",
        description="Build a Thunder-NUBench (en) or Thunder-KoNUBench (ko) style "
        "multiple-choice set from your text: extract, merge, conditionals, "
        "contradiction and paraphrase by an LLM (the papers' prompts; answers "
        "cached), then people write standard and local negations and review every "
        "item in --review rounds.  Rerun the same command with the filled sheets "
        "to go on; finished stages are reused.",
        epilog=MCQ_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument(
        "--lang",
        default="en",
        choices=REGISTRY.names("mcq_language"),
        help="en: NUBench, ko: KoNUBench",
    )
    m.add_argument(
        "--input",
        required=True,
        help="source text: one document per line (.txt), or JSON lines (.jsonl)",
    )
    m.add_argument(
        "--text-field",
        default=None,
        help="JSON lines: the field with the text (default: text, summary, sentence)",
    )
    m.add_argument("--out", required=True, help="build folder")
    m.add_argument(
        "--model",
        default=None,
        help="generator model spec, as negbench run --model (default: "
        "smollm2-135m-instruct for en, gemma3-270m for ko)",
    )
    ModelOptions.add_to(m, only=("dtype", "device"), title="generator model")
    EngineOptions.add_to(m, only=("cache",), title="generator engine")
    m.add_argument(
        "--max-tokens",
        type=whole_number(1),
        default=None,
        help="new tokens per generated sentence (default: 128)",
    )
    m.add_argument(
        "--min-words",
        type=whole_number(0),
        default=None,
        help="length filter in words (default: 30 for en as NUBench Listing 3, 0 for ko)",
    )
    mg = m.add_mutually_exclusive_group()
    mg.add_argument(
        "--merge",
        dest="merge",
        action="store_true",
        default=None,
        help="merge consecutive sentence pairs (default for ko)",
    )
    mg.add_argument(
        "--no-merge",
        dest="merge",
        action="store_false",
        help="one sentence per item (default for en)",
    )
    m.add_argument(
        "--conditionals",
        type=whole_number(0),
        default=0,
        help="en: rewrite this many originals (a seeded choice) as conditionals "
        "(Listing 4; default 0)",
    )
    m.add_argument("--limit", type=whole_number(1), default=None, help="a seeded sample of N units")
    m.add_argument("--seed", type=whole_number(0), default=None, help="sampling seed (default: 42)")
    m.add_argument(
        "--split",
        default="test",
        help="release split to write (en: test, demonstration; ko: train, validation, "
        "test; default: test)",
    )
    m.add_argument(
        "--review",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="review rounds before finalize (default: 2, KoNUBench App. E)",
    )
    m.add_argument("--author", default=None, metavar="FILE", help="the filled author sheet")
    m.add_argument(
        "--review-sheet",
        nargs="+",
        default=[],
        metavar="FILE",
        help="the filled review sheets, round 1 first",
    )
    m.add_argument("--quiet", action="store_true", help="no progress bars")


def run_mcq(args) -> int:
    from negbench.builders import mcq as M

    cfg = M.McqConfig(
        input=args.input,
        out=args.out,
        lang=args.lang,
        model=args.model,
        dtype=args.dtype,
        device=args.device,
        cache=args.cache,
        text_field=args.text_field,
        min_words=args.min_words,
        merge=args.merge,
        conditionals=args.conditionals,
        limit=args.limit,
        seed=M.DEFAULT_SEED if args.seed is None else args.seed,
        max_tokens=args.max_tokens or M.DEFAULT_MAX_TOKENS,
        split=args.split,
        rounds=args.review or M.DEFAULT_ROUNDS,
        author=args.author,
        reviews=list(args.review_sheet),
    )
    res = M.build(cfg, log=_log, progress=not args.quiet)
    stages = ", ".join(
        f"{k} {v['records']}{' (reused)' if v['reused'] else ''}" for k, v in res["stages"].items()
    )
    print(f"{res['items']} items; stages: {stages}")
    print(
        f"model requests {res['model_requests']}, computed {res['model_computed']} "
        f"(the rest from the response cache)"
    )
    for r in res["rounds"]:
        by = ", ".join(f"{k} {v}" for k, v in r["by_label"].items())
        print(
            f"review round {r['round']}: {r['disagreements']} of {r['items']} items with a "
            f"disagreement = {100 * r['rate']:.1f}% ({by}; {r['revised']} revised)"
        )
    if res["next"] == "author":
        print(
            "author sheet: " + " / ".join(res["sheets"]) + " — write standard_negation, "
            "local_negation + local_negation_type, fix original/contradiction/paraphrase; "
            "then rerun with --author FILE"
        )
    elif res["next"]:
        print(
            f"{res['next']} sheet: " + " / ".join(res["sheets"]) + " — agree/disagree per "
            "label, comment; write the agreed revision into the text columns; then rerun "
            "adding it to --review-sheet"
        )
    else:
        print(f"wrote {res['release']} and {res['manifest']}")
        lang = M.language(args.lang)
        print(f"run it: {lang.env}={res['task_source']} negbench run --tasks {lang.task}")
    return 0
