"""``negbench build jsts-neg``: the command-line face of :mod:`negbench.build.jsts_neg`.

Wire into ``negbench.cli``: ``add_build_parser(sub)`` in ``build_parser`` and
``if args.command == "build": return run_build(args)`` in ``main``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from negbench.build import jsts_neg as J
from negbench.models import MULTILINGUAL_DEFAULT
from negbench.options import whole_number

EPILOG = """examples:
  negbench build jsts-neg --split test --out jsts-neg-build            # judge: gemma3-270m
  negbench build jsts-neg --split test --out B --judge-model none --export-annotation sheet.csv
  negbench build jsts-neg --split test --out B --import-annotations a1.csv a2.csv a3.csv
  negbench build jsts-neg --inhouse --out data/jsts-neg-inhouse        # our single-annotator set
"""


def add_build_parser(subparsers) -> None:
    b = subparsers.add_parser("build", help="construct benchmark data (JSTS-Neg from JGLUE JSTS)")
    bs = b.add_subparsers(dest="build_target", metavar="TARGET")
    j = bs.add_parser("jsts-neg", help="JSTS-Neg by the JNLI-Neg method (cue insertion, LLM "
                      "judge, D1/D2/D12 pairing, annotation export/import)",
                      description="Build JSTS-Neg instances from JGLUE JSTS (Yuasa et al. §3). "
                      "Every stage is written atomically under OUT/work/SPLIT and reused by a "
                      "rerun with the same settings; judge answers are cached.",
                      epilog=EPILOG, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    j.add_argument("--jsts", default=None,
                   help="JGLUE JSTS v1.3 folder (default: $NEGBENCH_DATA/jsts or ../shared/data/jsts)")
    j.add_argument("--split", default="test", choices=list(J.SPLITS), help="JSTS split (default: test)")
    j.add_argument("--out", default="jsts-neg-build", help="output folder (default: %(default)s)")
    j.add_argument("--judge-model", default=None,
                   help=f"well-formedness judge: a model spec, or 'none' to keep every candidate "
                        f"(default: {MULTILINGUAL_DEFAULT}; with --inhouse: no judge run)")
    j.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                   help="judge weights dtype")
    j.add_argument("--device", default="auto", help="judge device: cpu, cuda … (default: auto)")
    j.add_argument("--cache", default=None, help="response cache file (default: negbench's)")
    j.add_argument("--limit", type=whole_number(1), default=None, help="use only the first N JSTS pairs (by id)")
    j.add_argument("--target", type=whole_number(1), default=None,
                   help="stop once more than N new instances exist (default: the paper's "
                        "4000 / 1000 / 1000 for train / valid / test)")
    j.add_argument("--seed", type=whole_number(0), default=J.DEFAULT_SEED,
                   help="seed of the random order of JSTS pairs (default: %(default)s)")
    j.add_argument("--inhouse", action="store_true",
                   help="write our in-house single-annotator set (train + test) to --out")
    j.add_argument("--export-annotation", metavar="FILE", default=None,
                   help="also write an annotation sheet (.csv or .jsonl) of the built pairs")
    j.add_argument("--import-annotations", metavar="FILE", nargs="+", default=None,
                   help="three annotators' filled sheets: gold = median, Fleiss' kappa")
    add_mcq_parser(bs)
    from negbench.build.notadataset_cli import add_parser as add_notadataset_parser
    add_notadataset_parser(bs)


def _log(s: str) -> None:
    print(s, file=sys.stderr)


def run_build(args) -> int:
    if getattr(args, "build_target", None) == "mcq":
        return run_mcq(args)
    if getattr(args, "build_target", None) == "notadataset":
        from negbench.build.notadataset_cli import run as run_notadataset
        return run_notadataset(args)
    if getattr(args, "build_target", None) != "jsts-neg":
        print("usage: negbench build jsts-neg [options]  (see --help)", file=sys.stderr)
        return 2
    jsts = args.jsts or str(J.default_jsts_dir())
    out = Path(args.out)
    if args.inhouse:
        return _inhouse(args, jsts, out)
    if args.import_annotations:
        res = J.finish(out, args.split, args.import_annotations)
        kappa = (f"{res['fleiss_kappa']:.3f}" if res["fleiss_kappa"] is not None
                 else f"undefined ({res.get('kappa_note')})")
        print(f"{args.split}: {res['instances']} instances, gold = median of 3 annotators; "
              f"Fleiss' kappa {kappa}")
        print(f"minimal pairs {res['minimal_pairs']} (M_single {res['M_single']}, M_both "
              f"{res['M_both']}; M_i {res['M_i']}, M_u {res['M_u']})")
        print(f"wrote {res['path']} and {out / f'stats-{args.split}.json'}")
        return 0
    model = args.judge_model or MULTILINGUAL_DEFAULT
    cfg = J.BuildConfig(jsts_dir=jsts, split=args.split, out=str(out),
                        judge_model=None if model.lower() == "none" else model,
                        judge_dtype=args.dtype, judge_device=args.device, cache=args.cache,
                        limit=args.limit, target=args.target, seed=args.seed)
    res = J.build(cfg, log=_log)
    s = res["summary"]
    print(f"{args.split}: {res['jsts_pairs']} JSTS pairs, {res['eligible']} eligible (no cue, "
          f"candidates on both sides); {res['selected_groups']} selected")
    print(f"instances {s['instances']}: " + ", ".join(f"{k} {v}" for k, v in s["by_type"].items())
          + f"; minimal pairs {s['minimal_pairs']}")
    if res["verdicts"]:
        print("judge verdicts: " + json.dumps(res["verdicts"], ensure_ascii=False))
    print(f"wrote {res['pairs']} (gold_score null until --import-annotations)")
    if args.export_annotation:
        J.export_annotation(J.read_jsonl(res["pairs"]), args.export_annotation)
        print(f"annotation sheet: {args.export_annotation} (fill 'score' with 0-5)")
    return 0


def _inhouse(args, jsts: str, out: Path) -> int:
    from negbench.store import atomic_write_text, write_jsonl
    sets = J.build_inhouse(jsts)
    for split, insts in sets.items():
        write_jsonl(out / f"jsts-neg-{split}.jsonl", insts)
        s = J.summary(insts)
        print(f"{split}: {s['groups']} groups, {s['instances']} instances ("
              + ", ".join(f"{k} {v}" for k, v in s["by_type"].items())
              + f"), minimal pairs {s['minimal_pairs']}")
    atomic_write_text(out / "README.md", f"{J.INHOUSE_NOTE} Files: "
                      + ", ".join(f"jsts-neg-{s}.jsonl" for s in sets) + ".\n")
    print(f"wrote {out}/ ({J.INHOUSE_NOTE})")
    if args.judge_model and args.judge_model.lower() != "none":
        from negbench.build.judge import load_judge
        judge = load_judge(args.judge_model, dtype=args.dtype, device=args.device,
                           cache_path=args.cache)
        r = J.inhouse_judge_agreement(J.judge_fn(judge), jsts)
        print(f"judge {args.judge_model}: {r['judge_well_formed']} of {r['candidates']} judged "
              f"well-formed ({r['judge_unparsed']} unparsed); ours {r['ours_well_formed']}; "
              f"agreement {r['agreement']:.3f}")
        print(json.dumps(r["table"], ensure_ascii=False))
    return 0


# -- negbench build mcq (negbench.build.mcq) -----------------------------------------------------
MCQ_EPILOG = """examples (docs/build_mcq.md):
  negbench build mcq --lang en --input examples/mcq_sentences_en.txt --out B      # LLM stages + author sheet
  negbench build mcq --lang en --input … --out B --author A.csv                   # + review-1 sheet
  negbench build mcq --lang en --input … --out B --author A.csv --review-sheet R1.csv R2.csv   # finalize
  NEGBENCH_NUBENCH=B/nubench negbench run --tasks nubench --modes completion
"""


def add_mcq_parser(bs) -> None:
    import argparse
    m = bs.add_parser("mcq", help="NUBench / KoNUBench multiple choice: LLM stages, author and "
                      "review sheets, release files",
                      description="Build a Thunder-NUBench (en) or Thunder-KoNUBench (ko) style "
                      "multiple-choice set from your text: extract, merge, conditionals, "
                      "contradiction and paraphrase by an LLM (the papers' prompts; answers "
                      "cached), then people write standard and local negations and review every "
                      "item in --review rounds.  Rerun the same command with the filled sheets "
                      "to go on; finished stages are reused.",
                      epilog=MCQ_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--lang", default="en", choices=["en", "ko"], help="en: NUBench, ko: KoNUBench")
    m.add_argument("--input", required=True,
                   help="source text: one document per line (.txt), or JSON lines (.jsonl)")
    m.add_argument("--text-field", default=None,
                   help="JSON lines: the field with the text (default: text, summary, sentence)")
    m.add_argument("--out", required=True, help="build folder")
    m.add_argument("--model", default=None,
                   help="generator model spec, as negbench run --model (default: "
                        "smollm2-135m-instruct for en, gemma3-270m for ko)")
    m.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    m.add_argument("--device", default="auto", help="cpu, cuda … (default: auto)")
    m.add_argument("--cache", default=None, help="response cache file (default: negbench's)")
    m.add_argument("--max-tokens", type=whole_number(1), default=None,
                   help="new tokens per generated sentence (default: 128)")
    m.add_argument("--min-words", type=whole_number(0), default=None,
                   help="length filter in words (default: 30 for en as NUBench Listing 3, 0 for ko)")
    mg = m.add_mutually_exclusive_group()
    mg.add_argument("--merge", dest="merge", action="store_true", default=None,
                    help="merge consecutive sentence pairs (default for ko)")
    mg.add_argument("--no-merge", dest="merge", action="store_false",
                    help="one sentence per item (default for en)")
    m.add_argument("--conditionals", type=whole_number(0), default=0,
                   help="en: rewrite this many originals (a seeded choice) as conditionals "
                        "(Listing 4; default 0)")
    m.add_argument("--limit", type=whole_number(1), default=None,
                   help="a seeded sample of N units")
    m.add_argument("--seed", type=whole_number(0), default=None, help="sampling seed (default: 42)")
    m.add_argument("--split", default="test",
                   help="release split to write (en: test, demonstration; ko: train, validation, "
                        "test; default: test)")
    m.add_argument("--review", type=whole_number(1), default=None, metavar="N",
                   help="review rounds before finalize (default: 2, KoNUBench App. E)")
    m.add_argument("--author", default=None, metavar="FILE", help="the filled author sheet")
    m.add_argument("--review-sheet", nargs="+", default=[], metavar="FILE",
                   help="the filled review sheets, round 1 first")
    m.add_argument("--quiet", action="store_true", help="no progress bars")


def run_mcq(args) -> int:
    from negbench.build import mcq as M
    cfg = M.McqConfig(input=args.input, out=args.out, lang=args.lang, model=args.model,
                      dtype=args.dtype, device=args.device, cache=args.cache,
                      text_field=args.text_field, min_words=args.min_words, merge=args.merge,
                      conditionals=args.conditionals, limit=args.limit,
                      seed=M.DEFAULT_SEED if args.seed is None else args.seed,
                      max_tokens=args.max_tokens or M.DEFAULT_MAX_TOKENS, split=args.split,
                      rounds=args.review or M.DEFAULT_ROUNDS, author=args.author,
                      reviews=list(args.review_sheet))
    res = M.build(cfg, log=_log, progress=not args.quiet)
    stages = ", ".join(f"{k} {v['records']}{' (reused)' if v['reused'] else ''}"
                       for k, v in res["stages"].items())
    print(f"{res['items']} items; stages: {stages}")
    print(f"model requests {res['model_requests']}, computed {res['model_computed']} "
          f"(the rest from the response cache)")
    for r in res["rounds"]:
        by = ", ".join(f"{k} {v}" for k, v in r["by_label"].items())
        print(f"review round {r['round']}: {r['disagreements']} of {r['items']} items with a "
              f"disagreement = {100 * r['rate']:.1f}% ({by}; {r['revised']} revised)")
    if res["next"] == "author":
        print("author sheet: " + " / ".join(res["sheets"]) + " — write standard_negation, "
              "local_negation + local_negation_type, fix original/contradiction/paraphrase; "
              "then rerun with --author FILE")
    elif res["next"]:
        print(f"{res['next']} sheet: " + " / ".join(res["sheets"]) + " — agree/disagree per "
              "label, comment; write the agreed revision into the text columns; then rerun "
              "adding it to --review-sheet")
    else:
        print(f"wrote {res['release']} and {res['manifest']}")
        env = "NEGBENCH_NUBENCH" if args.lang == "en" else "NEGBENCH_KONUBENCH"
        task = "nubench" if args.lang == "en" else "konubench"
        print(f"run it: {env}={res['task_source']} negbench run --tasks {task}")
    return 0
