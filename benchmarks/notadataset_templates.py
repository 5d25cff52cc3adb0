"""Closing-note item 1, template side: how much of the raw This-is-not-a-dataset release our
template machinery regenerates EXACTLY from the release's own triples.

Reads the raw release in memory (never writes it), recovers every pattern's templates from it
(`recover_templates`), instantiates them on each block's triple (Source + Distractor headers;
glosses from the installed WordNet 3.0) and compares with the release sentence by sentence:
same template id, kind, label and string.  Prints per pattern: templates recovered, release
sentences, regenerated sentences, exact share, blocks whose sentence count matches; then the
main causes of mismatch.

    python benchmarks/notadataset_templates.py [--release ZIP|DIR] [--patterns 1,5] [--blocks N]
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import negbench.tasks.notadataset.build.inflect_en as inflect_en
from negbench.tasks.notadataset.build.templates import (
    _triples_by_block,
    instantiate,
    recover_templates,
)
from negbench.tasks.notadataset.tasks import Release, read_raw


def default_release() -> Path:
    here = Path(__file__).resolve().parents[1]
    return (
        here.parent
        / "shared"
        / "data"
        / "not-a-dataset"
        / "data"
        / "This-is-not-a-dataset_RAW_DATA.zip"
    )


def release_triples(release: Release) -> dict:
    """Block key -> Triple, from the release's own headers (glosses from the installed WordNet,
    as the release used them)."""
    return _triples_by_block(release)


def subset(release: Release, patterns: set[int] | None, blocks: int | None) -> Release:
    keep: dict[str, object] = {}
    per: Counter = Counter()
    for k, b in release.blocks.items():
        if patterns and b.pattern_id not in patterns:
            continue
        if blocks and per[b.pattern_id] >= blocks:
            continue
        per[b.pattern_id] += 1
        keep[k] = b
    return Release(
        [s for s in release.sentences if s.block in keep],
        keep,
        release.source,
        release.split_counts,
    )


def categorise(gen: str, ref: str, terms: dict, exc) -> str:
    """A short cause for one mismatching sentence (same template id and kind)."""
    a, b = gen.split(), ref.split()
    ops = [
        o
        for o in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if o[0] != "equal"
    ]
    if not ops:
        return "whitespace/case"
    g = " ".join(" ".join(a[i1:i2]) for _, i1, i2, _, _ in ops).lower()
    r = " ".join(" ".join(b[j1:j2]) for _, _, _, j1, j2 in ops).lower()
    if {g, r} <= {"a", "an"} or (
        g.split()[:1] in (["a"], ["an"])
        and r.split()[:1] in (["a"], ["an"])
        and g.split()[1:] == r.split()[1:]
    ):
        return "article a/an"
    for t in terms.values():
        if (
            t.definition
            and len(r.split()) > 1
            and (g in t.definition.lower() or r in t.definition.lower())
        ):
            return "gloss text differs from WordNet definition"
    for t in terms.values():
        w = t.word.lower()
        if g.strip(".,") == inflect_en.plural(t.word, exc).lower():
            return f"plural ({'multi-word' if ' ' in w else 'irregular/other'}): {t.word}->{r}"
        if g.strip(".,") == inflect_en.gerund(t.word, exc).lower():
            return f"gerund: {t.word}->{r}"
    return f"template text differs ({g!r} vs {r!r})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", type=Path, default=default_release())
    ap.add_argument("--patterns", default="")
    ap.add_argument("--blocks", type=int, default=0, help="first N blocks per pattern (0 = all)")
    ap.add_argument("--examples", type=int, default=3, help="mismatch examples per cause")
    args = ap.parse_args(argv)
    t0 = time.time()
    release = read_raw(args.release)
    pats = {int(x) for x in args.patterns.split(",") if x.strip()} or None
    release = subset(release, pats, args.blocks or None)
    triples = release_triples(release)
    exc = inflect_en.default_exceptions()
    rec = recover_templates(release, triples, exc, details=True)
    by_block = defaultdict(list)
    for s in release.sentences:
        by_block[s.block].append(s)
    kind_of = {0: "Input"}
    rows = []
    causes: Counter = Counter()
    examples: dict[str, list] = defaultdict(list)
    tot = Counter()
    for pid in sorted({b.pattern_id for b in release.blocks.values()}):
        pt = rec.templates.get(pid)
        n_rel = n_gen = n_exact = n_blocks = n_match = 0
        for key, block in release.blocks.items():
            if block.pattern_id != pid:
                continue
            n_blocks += 1
            ref = by_block[key]
            n_rel += len(ref)
            if pt is None:
                continue
            tr = triples[key]
            gen = instantiate(tr, pt, exc)
            n_gen += len(gen)
            n_match += len(gen) == len(ref)
            hk = [k for k, _ in block.distractors]
            gmap = {(g.template, g.kind): g for g in gen}
            base = {"a": tr.a, "b": tr.b, **{f"d{i}": d for i, d in enumerate(tr.distractors)}}
            for s in ref:
                kind = kind_of.get(s.distractor) or hk[s.distractor - 1]
                g = gmap.get((s.template, kind))
                if g is not None and g.sentence == s.sentence and g.label == s.label:
                    n_exact += 1
                    continue
                if g is None:
                    c = "template id not recovered"
                elif g.label != s.label:
                    c = "label differs from Table 10"
                else:
                    c = categorise(g.sentence, s.sentence, base, exc)
                head = c.split(":")[0]
                causes[(pid, head)] += 1
                if len(examples[head]) < args.examples:
                    examples[head].append(
                        (pid, s.template, kind, g.sentence if g else None, s.sentence)
                    )
        rows.append(
            (
                pid,
                len(pt.templates) if pt else 0,
                sum(len(t.variants) for t in pt.templates) if pt else 0,
                n_blocks,
                n_rel,
                n_gen,
                n_exact,
                n_match,
                rec.agreement.get(pid, 0.0),
            )
        )
        for k, v in zip(
            ("blocks", "rel", "gen", "exact", "match"), (n_blocks, n_rel, n_gen, n_exact, n_match)
        ):
            tot[k] += v
    print(f"release: {args.release}  (read in memory; {time.time() - t0:.1f}s)")
    print(
        f"{'pattern':>7} {'templ':>5} {'variants':>8} {'blocks':>6} {'release':>8} {'regen':>8} "
        f"{'exact':>8} {'exact%':>8} {'size ok':>7} {'vote agr':>8}"
    )
    for pid, nt, nv, nb, nr, ng, ne, nm, agr in rows:
        print(
            f"{'#%02d' % pid:>7} {nt:>5} {nv:>8} {nb:>6} {nr:>8} {ng:>8} {ne:>8} "
            f"{100 * ne / nr if nr else 0:>7.3f}% {nm:>3}/{nb:<3} {100 * agr:>7.2f}%"
        )
    print(
        f"{'all':>7} {'':>5} {'':>8} {tot['blocks']:>6} {tot['rel']:>8} {tot['gen']:>8} "
        f"{tot['exact']:>8} {100 * tot['exact'] / max(tot['rel'], 1):>7.3f}% "
        f"{tot['match']:>3}/{tot['blocks']}"
    )
    print("\nmismatches by cause (pattern, cause: sentences):")
    for (pid, c), n in sorted(causes.items(), key=lambda x: -x[1])[:25]:
        print(f"  #{pid:02d} {c}: {n}")
    print("\nexamples (pattern, template, kind, ours | release):")
    for c, exs in examples.items():
        for pid, t, k, g, r in exs:
            print(f"  [{c}] #{pid:02d} {t} {k}: {g!r} | {r!r}")
    print(f"\n{time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
