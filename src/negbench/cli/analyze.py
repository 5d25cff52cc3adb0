"""``negbench analyze negation``: the command-line face of :mod:`negbench.analyze.ko_negation`
and :mod:`negbench.analyze.corpus` (Thunder-KoNUBench §3.2 Table 2 and the §3.3 KMMLU
selection).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from pathlib import Path

from negbench.errors import OptionError

EPILOG = """examples:
  negbench analyze negation --lang ko corpus.txt                      # one sentence a line
  negbench analyze negation --lang ko data.jsonl --field text --output hits.jsonl --stats table2.md
  negbench analyze negation --lang ko --kmmlu kmmlu_test.json --output selected.jsonl
      # §3.3: select the negated questions; compared with the released negated set
"""


def add_parser(subparsers) -> None:
    a = subparsers.add_parser(
        "analyze",
        help="corpus analysis (Korean and English negation detectors, "
        "Thunder-KoNUBench Table 2 / KMMLU selection)",
    )
    a.set_defaults(func=run)
    asub = a.add_subparsers(dest="analyze_target", metavar="TARGET")
    n = asub.add_parser(
        "negation",
        help="find negations; Table 2 statistics; KMMLU selection",
        description="Rule-based negation detection (Thunder-KoNUBench §3.2-3.3): "
        "per sentence, each negation's type (안/못 short and long form, 말다) and "
        "the clause type of the negated predicate; corpus statistics as the "
        "paper's Table 2. Rules and their limits: docs/analyze.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    n.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="text files (one sentence a line), JSON lines with --field, or "
        "KMMLU-style JSON with --kmmlu",
    )
    n.add_argument(
        "--lang",
        required=True,
        choices=["ko", "en"],
        help="language of the text: ko (Kiwi rules, Table 2) or en (cue rules: "
        "verbal / non-verbal, main / subordinate / non-finite clause)",
    )
    n.add_argument(
        "--field", default=None, help="read JSON lines and analyse this string field of each object"
    )
    n.add_argument(
        "--kmmlu",
        action="store_true",
        help="inputs are KMMLU-style questions (JSON array or lines with 'question'); "
        "select the negated ones as §3.3 did",
    )
    n.add_argument(
        "--reference",
        default=None,
        help="with --kmmlu: the released negated set to compare with (default: "
        "kmmlu_neg of the Thunder-KoNUBench release when present; 'none' to skip)",
    )
    n.add_argument(
        "--lexical",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also detect lexical negation (아니다, negative prefix 부/불/비/미/무/몰 + "
        "하다); never counted in Table 2 (default: on with --kmmlu, else off)",
    )
    n.add_argument(
        "--output",
        default=None,
        metavar="FILE.jsonl",
        help="write every input's hits as JSON lines here",
    )
    n.add_argument(
        "--stats",
        default=None,
        metavar="FILE.md",
        help="write the Table 2 statistics here (Markdown) and beside it as .json",
    )


def _out_paths(args) -> tuple[Path | None, Path | None, Path | None]:
    from negbench.files import check_writable_folder

    out = Path(args.output) if args.output else None
    md = js = None
    if out is not None:
        if out.is_dir():
            raise OptionError(
                f"--output {out} is a folder",
                where="--output",
                fix="give a file name, e.g. hits.jsonl",
            )
        check_writable_folder(out.parent if str(out.parent) else Path("."), "--output")
    if args.stats:
        base = Path(args.stats)
        if base.suffix.lower() in (".md", ".json"):
            base = base.with_suffix("")
        md, js = base.with_suffix(".md"), base.with_suffix(".json")
        if md.is_dir() or js.is_dir():
            raise OptionError(
                f"--stats {args.stats} names a folder",
                where="--stats",
                fix="give a file name, e.g. table2.md",
            )
        check_writable_folder(md.parent if str(md.parent) else Path("."), "--stats")
    return out, md, js


def run(args) -> int:
    if getattr(args, "analyze_target", None) != "negation":
        print("usage: negbench analyze negation --lang ko FILE... (see --help)", file=sys.stderr)
        return 2
    if args.lang == "en" and (args.kmmlu or args.lexical is not None):
        flag = "--kmmlu" if args.kmmlu else "--lexical"
        raise OptionError(
            f"{flag} is for Korean (--lang ko)", where=flag, fix=f"drop {flag}, or use --lang ko"
        )
    if args.kmmlu and args.field:
        raise OptionError(
            "--field and --kmmlu both say how to read the inputs",
            where="--field",
            fix="drop --field: --kmmlu reads each record's 'question'",
        )
    if args.reference and not args.kmmlu:
        raise OptionError(
            "--reference is for --kmmlu",
            where="--reference",
            fix="add --kmmlu, or drop --reference",
        )
    outputs = _out_paths(args)
    if args.kmmlu:
        return _kmmlu(args, outputs)
    return _sentences(args, outputs)


def _sentences(args, outputs) -> int:
    from negbench.analyze.corpus import read_sentences
    from negbench.files import atomic_write_chunks, to_json, write_json

    det: Any
    corpus_stats: Any
    sentence_label: Any
    if args.lang == "en":
        from negbench.analyze.en_negation import EnNegationDetector as Detector
        from negbench.analyze.en_negation import analyser_version, corpus_stats, sentence_label
        from negbench.analyze.en_negation import stats_markdown as table2_markdown

        det = Detector()
    else:
        from negbench.analyze.corpus import corpus_stats as ko_stats
        from negbench.analyze.corpus import table2_markdown
        from negbench.analyze.ko_negation import KoNegationDetector, analyser_version
        from negbench.analyze.ko_negation import sentence_label as ko_label

        corpus_stats, sentence_label = ko_stats, ko_label
        det = KoNegationDetector(lexical=bool(args.lexical))
    sents = [s for f in args.files for s in read_sentences(f, json_field=args.field)]
    if not sents:
        raise OptionError(
            "the input files hold no sentences",
            where=", ".join(args.files),
            fix="one sentence a line (or --field for JSON lines)",
        )
    hits = list(det.detect_many(s.text for s in sents))
    out, md, js = outputs
    if out is not None:

        def rows():
            for s, hs in zip(sents, hits):
                lab = sentence_label(hs)
                yield (
                    to_json(
                        {
                            "file": s.path,
                            "line": s.line,
                            "text": s.text,
                            "negated": lab is not None,
                            "type": lab.type if lab else None,
                            "clause": lab.table2_clause if lab else None,
                            "hits": [h.to_dict() for h in hs],
                        }
                    )
                    + "\n"
                )

        atomic_write_chunks(out, rows())
    stats = corpus_stats(hits)
    table = table2_markdown(stats)
    print(table)
    if md is not None:
        from negbench.files import atomic_write_text

        atomic_write_text(md, table)
        write_json(
            js,
            {
                **stats,
                "files": list(args.files),
                "lexical": bool(args.lexical),
                "analyser": analyser_version(),
            },
        )
    for p in (out, md, js):
        if p is not None:
            print(f"wrote {p}", file=sys.stderr)
    return 0


def _reference(args) -> Path | None:
    if args.reference:
        return None if args.reference.lower() == "none" else Path(args.reference)
    from negbench.tasks.konubench.tasks import find_diag_file, default_diag_source

    return find_diag_file(Path(default_diag_source()), "kmmlu-neg")


def _kmmlu(args, outputs) -> int:
    from negbench.tasks.konubench.corpus_numbers import PAPER_KMMLU_NEGATED
    from negbench.analyze.corpus import (
        compare_selection,
        kmmlu_ask,
        kmmlu_negated,
        read_kmmlu,
    )
    from negbench.analyze.ko_negation import KoNegationDetector
    from negbench.files import atomic_write_chunks, to_json, write_json

    recs = [(f, n, r) for f in args.files for n, r in enumerate(read_kmmlu(f), 1)]
    ref_path = _reference(args)
    ref = read_kmmlu(ref_path) if ref_path is not None else None
    lexical = True if args.lexical is None else args.lexical
    det = KoNegationDetector(lexical=lexical)
    hits = list(det.detect_many(kmmlu_ask(r["question"]) for _, _, r in recs))
    chosen = [kmmlu_negated(h) for h in hits]
    out, md, js = outputs
    if out is not None:
        atomic_write_chunks(
            out,
            (
                to_json(
                    {
                        "file": f,
                        "item": n,
                        "question": r["question"],
                        "analysed": kmmlu_ask(r["question"]),
                        "negated": c,
                        "hits": [h.to_dict() for h in hs],
                    }
                )
                + "\n"
                for (f, n, r), hs, c in zip(recs, hits, chosen)
            ),
        )
    selected = [r for (_, _, r), c in zip(recs, chosen) if c]
    summary = {
        "questions": len(recs),
        "selected": len(selected),
        "lexical": lexical,
        "paper_selected": PAPER_KMMLU_NEGATED,
    }
    print(
        f"{len(selected):,} of {len(recs):,} questions selected as negated "
        f"({'syntactic + lexical' if lexical else 'syntactic only'} negation in the question's "
        f"last predicate; the paper extracted {PAPER_KMMLU_NEGATED:,} from KMMLU)"
    )
    if ref is not None:
        cmp = compare_selection(selected, ref)
        summary["reference"] = {"path": str(ref_path), **cmp}
        print(
            f"released negated set {ref_path}: {cmp['reference']:,} items; {cmp['same_item']:,} "
            f"selected here, {cmp['reference_not_selected']:,} not selected; {cmp['selected_not_in_reference']:,} "
            f"selected items are not in it"
        )
    if md is not None:
        from negbench.files import atomic_write_text

        atomic_write_text(
            md,
            "### KMMLU negated-question selection\n\n```json\n"
            + to_json(summary, indent=2)
            + "\n```\n",
        )
        write_json(js, summary)
    for p in (out, md, js):
        if p is not None:
            print(f"wrote {p}", file=sys.stderr)
    return 0
