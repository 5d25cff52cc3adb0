"""``negbench build notadataset``: WordNet triples → distractors → templates → the release's raw
format, JSON lines and a manifest.  Everything is validated and generated in memory before the
first file is written; files are written atomically and only when their text changes, so a rerun
with the same settings is a no-op.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypedDict, overload

from negbench.errors import OptionError

EPILOG = """examples:
  negbench build notadataset --out nad                      # all 11 patterns, shipped templates
  negbench build notadataset --patterns 5,6 --limit 20 --seed 1 --out nad-small
  negbench build notadataset --recover-templates my-templates   # from your copy of the release
  negbench build notadataset --templates my-templates --out nad-orig
  negbench run --tasks "notadataset[source=nad/raw]" --model smollm2-135m-instruct --limit 50
"""
LANGS = ("en",)


def add_parser(subparsers) -> None:
    n = subparsers.add_parser(
        "notadataset",
        help="This is not a Dataset from WordNet 3.0 (triples, distractors, templates)",
        description="Generate This is not a Dataset (García-Ferrero et al. 2023, §3) from WordNet 3.0: "
        "relation triples over Core WordNet senses, seeded distractors (App. C), affirmative and "
        "negative templates; writes OUT/raw/#NN.Pattern.txt, OUT/notadataset.jsonl, OUT/manifest.json. "
        "Substitutes for the resources that are not installable are described in "
        "src/negbench/tasks/notadataset/build/README.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    n.add_argument(
        "--wordnet",
        metavar="DIR",
        default=None,
        help="WordNet 3.0 wndb folder (default: $NEGBENCH_WORDNET, /usr/share/wordnet, nltk_data)",
    )
    n.add_argument(
        "--patterns", default=None, help="comma-separated pattern numbers 1-11 (default: all)"
    )
    # the default is resolved in run(): importing the generator here would cost every negbench
    # start-up ~40 ms (WordNet reader, triples)
    n.add_argument(
        "--seed", default=None, help="distractor seed (default: the generator's DEFAULT_SEED, 0)"
    )
    n.add_argument(
        "--templates",
        metavar="DIR",
        default=None,
        help="templates folder of NN.json files (default: the shipped ones)",
    )
    n.add_argument(
        "--recover-templates",
        metavar="OUT_DIR",
        default=None,
        help="induce the original templates from the raw release and write them to OUT_DIR",
    )
    n.add_argument(
        "--release",
        default=None,
        help="raw release for --recover-templates (default: $NEGBENCH_NOTADATASET or "
        "../shared/data/not-a-dataset)",
    )
    n.add_argument("--limit", default=None, help="at most N triples per pattern")
    n.add_argument(
        "--core",
        metavar="FILE|URL",
        default=None,
        help="Core WordNet list core-wordnet.txt (default: frequency substitute)",
    )
    n.add_argument(
        "--morphosemantic",
        metavar="FILE|URL",
        default=None,
        help="Morphosemantic Links as a CSV/TSV export of morphosemantic-links.xls "
        "(default: substitute from derivational pointers)",
    )
    n.add_argument(
        "--lang",
        default="en",
        help="language: only en (others need the Open Multilingual Wordnet, a download "
        "not reachable here)",
    )
    n.add_argument("--out", metavar="DIR", default=None, help="output folder")


def parse_patterns(text: str | None) -> list[int]:
    from negbench.tasks.notadataset.build.triples import PATTERNS

    if text is None or text.strip() == "":
        return list(PATTERNS)
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) not in PATTERNS:
            raise OptionError(
                f"--patterns: {part!r} is not a pattern number",
                where=f"--patterns {text}",
                fix="use numbers 1-11 separated by commas, e.g. --patterns 1,5",
            )
        if int(part) not in out:
            out.append(int(part))
    return out


class _PatternCount(TypedDict):
    """One pattern's line of the manifest's ``counts``: what was built, and the paper's."""

    relation: str
    triples: int
    sentences: int
    paper_triples: int
    paper_sentences: int


@overload
def _int(name: str, text: str, lo: int) -> int: ...
@overload
def _int(name: str, text: str | None, lo: int) -> int | None: ...
def _int(name: str, text: str | None, lo: int) -> int | None:
    if text is None:
        return None
    try:
        v = int(text)
    except ValueError:
        v = lo - 1
    if v < lo:
        raise OptionError(f"{name} must be a whole number ≥ {lo}", where=f"{name} {text}")
    return v


def _check_out(out: str) -> Path:
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise OptionError(
            "--out exists and is not a folder", where=str(p), fix="pass a folder path"
        )
    for parent in p.absolute().parents:
        if parent.exists():
            if parent.is_file():
                raise OptionError("--out is inside a file", where=str(p))
            break
    return p


def run(args, log=lambda s: print(s, file=sys.stderr)) -> int:
    from negbench.tasks.notadataset.build import templates as TP
    from negbench.tasks.notadataset.build import triples as T
    from negbench.tasks.notadataset.build.wordnet import open_wordnet
    from negbench.files import atomic_write_text, git_commit, package_versions, to_json
    from negbench.tasks.notadataset.tasks import PAPER_TABLE2

    # -- validate everything before any work or write ------------------------------------------
    if args.lang not in LANGS:
        raise OptionError(
            f"--lang {args.lang}: only English is available here",
            fix="the Open Multilingual Wordnet data for other languages comes from the "
            "`wn` package's download (wn.download), which is not reachable from "
            "this machine; the templates would also need translating",
        )
    patterns = parse_patterns(args.patterns)
    seed = T.DEFAULT_SEED if args.seed is None else _int("--seed", args.seed, 0)
    limit = _int("--limit", args.limit, 1)
    if not args.out and not args.recover_templates:
        raise OptionError(
            "nothing to do", fix="pass --out DIR (build) and/or --recover-templates DIR"
        )
    out = _check_out(args.out) if args.out else None
    rec = _check_out(args.recover_templates) if args.recover_templates else None
    for opt in ("core", "morphosemantic"):
        v = getattr(args, opt)
        if v and not v.startswith(("http://", "https://")) and not Path(v).is_file():
            raise OptionError(f"--{opt}: file not found", where=v)
    wn = open_wordnet(args.wordnet) if out else None
    templates = None
    if rec:
        from negbench.tasks.notadataset.tasks import default_source, load_release

        release = load_release(args.release or default_source())
        templates = TP.recover_templates(release)
        if out is None:
            paths = TP.write_templates(rec, templates)
            print(
                f"recovered templates of {len(templates)} patterns from {release.source} → {rec}/ "
                f"({len(paths)} files)"
            )
            return 0
    if templates is None:
        templates = TP.load_templates(args.templates)
    missing = [p for p in patterns if p not in templates]
    if missing:
        raise OptionError(
            "no templates for pattern(s) " + ", ".join(f"#{p:02d}" for p in missing),
            where=str(args.templates or TP.SHIPPED),
            fix="add NN.json files or restrict --patterns",
        )
    for p in patterns:
        want = len(T.DISTRACTOR_SLOTS[p])
        have = len(templates[p].distractors)
        if have != want:
            raise OptionError(
                f"pattern #{p:02d} templates declare {have} distractor(s); the "
                f"generator draws {want}",
                where=templates[p].path,
            )
        slots = [s for _, s in templates[p].distractors]
        if slots != [s for s, _ in T.DISTRACTOR_SLOTS[p]]:
            raise OptionError(
                f"pattern #{p:02d} templates replace {slots} with distractors; the "
                f"generator draws them for {[s for s, _ in T.DISTRACTOR_SLOTS[p]]}",
                where=templates[p].path,
                fix="fix the 'distractors' of the template file",
            )

    # -- generate in memory --------------------------------------------------------------------
    assert out is not None and wn is not None  # --out given (the recovery alone returned above)
    res = T.resources(wn, core=args.core, morphosemantic=args.morphosemantic)
    triples = T.extract(wn, res, patterns, seed=seed, limit=limit)
    from negbench.tasks.notadataset.build.inflect_en import exceptions_from

    exc = exceptions_from(wn.path)
    blocks: list[TP.RawBlock] = []
    counts: dict[int, _PatternCount] = {}
    for p in patterns:
        n_sent = 0
        for tr in triples[p]:
            gen = tuple(TP.instantiate(tr, templates, exc))
            n_sent += len(gen)
            blocks.append(TP.RawBlock(p, tr.source, tr.distractor_headers(), gen))
        counts[p] = {
            "relation": T.RELATION[p],
            "triples": len(triples[p]),
            "sentences": n_sent,
            "paper_triples": PAPER_TABLE2[p][0],
            "paper_sentences": PAPER_TABLE2[p][1],
        }
        log(
            f"#{p:02d} {T.RELATION[p]:<12} {len(triples[p]):>6} triples (paper {PAPER_TABLE2[p][0]:,}) "
            f"{n_sent:>8,} sentences (paper {PAPER_TABLE2[p][1]:,})"
        )
    if rec:
        TP.write_templates(rec, templates)
    manifest = {
        "generator": "negbench build notadataset",
        "lang": args.lang,
        "patterns": patterns,
        "provenance": {"packages": package_versions(), "git": git_commit()},
        "seed": seed,
        "limit": limit,
        "templates": str(rec)
        if rec
        else str(Path(args.templates).absolute())
        if args.templates
        else "shipped",
        "wordnet": {"path": str(wn.path), "sha256": wn.fingerprint()},
        "core": args.core,
        "morphosemantic": args.morphosemantic,
        "resources": res.notes,
        "counts": {f"{p:02d}": c for p, c in counts.items()},
        "total": {
            "triples": sum(c["triples"] for c in counts.values()),
            "sentences": sum(c["sentences"] for c in counts.values()),
        },
    }
    # -- write ---------------------------------------------------------------------------------
    (out / "raw").mkdir(parents=True, exist_ok=True)
    written = {x.name for x in TP.write_raw(out / "raw", blocks)}
    for stale in (out / "raw").glob("#*.Pattern.txt"):  # a previous build's other patterns
        if stale.name not in written:
            stale.unlink()
    TP.write_jsonl(out / "notadataset.jsonl", blocks)
    text = to_json(manifest, indent=1) + "\n"
    mp = out / "manifest.json"
    if not (mp.is_file() and mp.read_text(encoding="utf-8") == text):
        atomic_write_text(mp, text)
    tot = manifest["total"]
    print(
        f"{tot['triples']} triples, {tot['sentences']} sentences → {out}/raw/#NN.Pattern.txt, "
        f"{out}/notadataset.jsonl, {out}/manifest.json"
    )
    print(f'load with: negbench run --tasks "notadataset[source={out}/raw]" …')
    return 0
