"""``negbench build jsts-neg``: the command-line face of :mod:`negbench.tasks.jsts_neg.build`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import negbench.tasks.jsts_neg.build as J
from negbench.backends.sources import MULTILINGUAL_DEFAULT
from negbench.scoring.registry import OpenModel
from negbench.options import whole_number

EPILOG = """examples:
  negbench build jsts-neg --split test --out jsts-neg-build            # judge: gemma3-270m
  negbench build jsts-neg --split test --out B --judge-model none --export-annotation sheet.csv
  negbench build jsts-neg --split test --out B --import-annotations a1.csv a2.csv a3.csv
  negbench build jsts-neg --inhouse --out data/jsts-neg-inhouse        # our single-annotator set
"""


def add_parser(bs) -> None:
    """``negbench build jsts-neg`` (the ``build`` command's sub-parsers ``bs``)."""
    j = bs.add_parser(
        "jsts-neg",
        help="JSTS-Neg by the JNLI-Neg method (cue insertion, LLM "
        "judge, D1/D2/D12 pairing, annotation export/import)",
        description="Build JSTS-Neg instances from JGLUE JSTS (Yuasa et al. §3). "
        "Every stage is written atomically under OUT/work/SPLIT and reused by a "
        "rerun with the same settings; judge answers are cached.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    j.add_argument(
        "--jsts",
        default=None,
        help="JGLUE JSTS v1.3 folder (default: $NEGBENCH_DATA/jsts or ../shared/data/jsts)",
    )
    j.add_argument(
        "--split", default="test", choices=list(J.SPLITS), help="JSTS split (default: test)"
    )
    j.add_argument("--out", default="jsts-neg-build", help="output folder (default: %(default)s)")
    j.add_argument(
        "--judge-model",
        default=None,
        help=f"well-formedness judge: a model spec, or 'none' to keep every candidate "
        f"(default: {MULTILINGUAL_DEFAULT}; with --inhouse: no judge run)",
    )
    j.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="judge weights dtype",
    )
    j.add_argument("--device", default="auto", help="judge device: cpu, cuda … (default: auto)")
    j.add_argument("--cache", default=None, help="response cache file (default: negbench's)")
    j.add_argument(
        "--limit",
        type=whole_number(1),
        default=None,
        help="use only the first N JSTS pairs (by id)",
    )
    j.add_argument(
        "--target",
        type=whole_number(1),
        default=None,
        help="stop once more than N new instances exist (default: the paper's "
        "4000 / 1000 / 1000 for train / valid / test)",
    )
    j.add_argument(
        "--seed",
        type=whole_number(0),
        default=J.DEFAULT_SEED,
        help="seed of the random order of JSTS pairs (default: %(default)s)",
    )
    j.add_argument(
        "--inhouse",
        action="store_true",
        help="write our in-house single-annotator set (train + test) to --out",
    )
    j.add_argument(
        "--export-annotation",
        metavar="FILE",
        default=None,
        help="also write an annotation sheet (.csv or .jsonl) of the built pairs",
    )
    j.add_argument(
        "--import-annotations",
        metavar="FILE",
        nargs="+",
        default=None,
        help="three annotators' filled sheets: gold = median, Fleiss' kappa",
    )


def _log(s: str) -> None:
    print(s, file=sys.stderr)


def run(args, open_model: OpenModel) -> int:
    jsts = args.jsts or str(J.default_jsts_dir())
    out = Path(args.out)
    if args.inhouse:
        return _inhouse(args, jsts, out, open_model)
    if args.import_annotations:
        res = J.finish(out, args.split, args.import_annotations)
        kappa = (
            f"{res['fleiss_kappa']:.3f}"
            if res["fleiss_kappa"] is not None
            else f"undefined ({res.get('kappa_note')})"
        )
        print(
            f"{args.split}: {res['instances']} instances, gold = median of 3 annotators; "
            f"Fleiss' kappa {kappa}"
        )
        print(
            f"minimal pairs {res['minimal_pairs']} (M_single {res['M_single']}, M_both "
            f"{res['M_both']}; M_i {res['M_i']}, M_u {res['M_u']})"
        )
        print(f"wrote {res['path']} and {out / f'stats-{args.split}.json'}")
        return 0
    model = args.judge_model or MULTILINGUAL_DEFAULT
    cfg = J.BuildConfig(
        jsts_dir=jsts,
        split=args.split,
        out=str(out),
        judge_model=None if model.lower() == "none" else model,
        judge_dtype=args.dtype,
        judge_device=args.device,
        cache=args.cache,
        limit=args.limit,
        target=args.target,
        seed=args.seed,
    )
    res = J.build(cfg, open_model=open_model, log=_log)
    s = res["summary"]
    print(
        f"{args.split}: {res['jsts_pairs']} JSTS pairs, {res['eligible']} eligible (no cue, "
        f"candidates on both sides); {res['selected_groups']} selected"
    )
    print(
        f"instances {s['instances']}: "
        + ", ".join(f"{k} {v}" for k, v in s["by_type"].items())
        + f"; minimal pairs {s['minimal_pairs']}"
    )
    if res["verdicts"]:
        print("judge verdicts: " + json.dumps(res["verdicts"], ensure_ascii=False))
    print(f"wrote {res['pairs']} (gold_score null until --import-annotations)")
    if args.export_annotation:
        J.export_annotation(J.read_jsonl(res["pairs"]), args.export_annotation)
        print(f"annotation sheet: {args.export_annotation} (fill 'score' with 0-5)")
    return 0


def _inhouse(args, jsts: str, out: Path, open_model: OpenModel) -> int:
    from negbench.files import atomic_write_text, write_jsonl

    sets = J.build_inhouse(jsts)
    for split, insts in sets.items():
        write_jsonl(out / f"jsts-neg-{split}.jsonl", insts)
        s = J.summary(insts)
        print(
            f"{split}: {s['groups']} groups, {s['instances']} instances ("
            + ", ".join(f"{k} {v}" for k, v in s["by_type"].items())
            + f"), minimal pairs {s['minimal_pairs']}"
        )
    atomic_write_text(
        out / "README.md",
        f"{J.INHOUSE_NOTE} Files: " + ", ".join(f"jsts-neg-{s}.jsonl" for s in sets) + ".\n",
    )
    print(f"wrote {out}/ ({J.INHOUSE_NOTE})")
    if args.judge_model and args.judge_model.lower() != "none":
        from negbench.tasks.jsts_neg.judge import load_judge

        judge = load_judge(
            args.judge_model,
            open_model,
            dtype=args.dtype,
            device=args.device,
            cache_path=args.cache,
        )
        r = J.inhouse_judge_agreement(J.judge_fn(judge), jsts)
        print(
            f"judge {args.judge_model}: {r['judge_well_formed']} of {r['candidates']} judged "
            f"well-formed ({r['judge_unparsed']} unparsed); ours {r['ours_well_formed']}; "
            f"agreement {r['agreement']:.3f}"
        )
        print(json.dumps(r["table"], ensure_ascii=False))
    return 0
