"""Closing-note item 1, WordNet side: the raw This-is-not-a-dataset release against WordNet 3.0
and against our triple extractor (with its documented substitutes).

Reads the raw release in memory (never writes it).  Prints per pattern: the release's triples
(blocks) vs Table 2; the share of its Source triples that are real WordNet relations — with the
release's own offsets, and after resolving each word sense (word + sense number) in this WordNet
(Debian re-grinds WordNet 3.0 and some verb offsets moved); the share of its distractors that
satisfy our lexicographer-file rule against the replaced word; the triples our extractor
generates vs Table 2 and how many of the release's triples it regenerates (same relation, words
and sense numbers).

    python benchmarks/notadataset_wordnet.py [--release ZIP|DIR] [--wordnet DIR] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import negbench.tasks.notadataset.build.triples as T
from negbench.tasks.notadataset.build.wordnet import open_wordnet
from negbench.tasks.notadataset.tasks import default_source, load_release


def lexnames_of_word(wn, word: str, pos: str) -> set[str]:
    return {wn.synset(o).lexname for o in wn.index(pos).get(word.lower(), ())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default=None)
    ap.add_argument("--wordnet", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.time()
    wn = open_wordnet(args.wordnet)
    rel = load_release(args.release or default_source())
    triples = T.triples_from_release(rel, wn)
    t1 = time.time()
    res = T.resources(wn)
    ours = T.extract(wn, res, seed=args.seed)
    t2 = time.time()
    # diagnosis: the release's own word senses as "Core WordNet" (isolates the relation logic
    # from the Core substitute; BLCs, Top Ontology and Morphosemantic substitutes still apply)
    oracle_core = defaultdict(list)
    for tr in triples:
        for t in (tr.a,) if tr.relation == "variant" else (tr.a, tr.b):
            o = T.resolve_release_term(wn, t.synset, t.word, t.sense)
            form = next((w for w in wn.synset(o).words if w.lower() == t.word.lower()), t.word)
            if (form, o) not in oracle_core[o[-1]]:
                oracle_core[o[-1]].append((form, o))
    ores = T.Resources(dict(oracle_core), res.blc, res.morpho, dict(res.notes))
    oracle = T.extract(wn, ores, seed=args.seed)

    stat = defaultdict(lambda: defaultdict(int))
    release_keys = defaultdict(set)
    for tr in triples:
        p = tr.pattern_id
        s = stat[p]
        s["blocks"] += 1
        terms = [tr.a] if tr.relation == "variant" else [tr.a, tr.b]
        a, b = terms[0], terms[-1]
        s["real_offsets"] += T.is_real_relation(wn, tr.relation, a.synset, a.word, b.synset, b.word)
        ra = T.resolve_release_term(wn, a.synset, a.word, a.sense)
        rb = T.resolve_release_term(wn, b.synset, b.word, b.sense)
        s["offset_moved"] += (ra != a.synset) + (len(terms) > 1 and rb != b.synset)
        s["real_senses"] += bool(ra and rb) and T.is_real_relation(
            wn, tr.relation, ra, a.word, rb, b.word
        )
        release_keys[p].add((tr.relation, a.word.lower(), a.sense, b.word.lower(), b.sense))
        for (slot, kind), d in zip(T.DISTRACTOR_SLOTS[p], tr.distractors):
            rep = tr.a if slot == "a" else tr.b
            pos = rep.synset.rpartition("-")[2]
            avoid = lexnames_of_word(wn, rep.word, pos)
            repl = {wn.synset(T.resolve_release_term(wn, rep.synset, rep.word, rep.sense)).lexname}
            if kind == "synset":
                got = {wn.synset(d.synset).lexname} if wn.has(d.synset) else set()
            else:
                got = lexnames_of_word(wn, d.word, pos)
            s["distractors"] += 1
            s["d_rule"] += bool(got) and not (got & avoid)
            s["d_synset"] += bool(got) and not (got & repl)
    print(f"WordNet {wn.path} (sha256 {wn.fingerprint()[:12]}); release {rel.source}")
    print(f"load + parse {t1 - t0:.1f}s; resources + extraction (seed {args.seed}) {t2 - t1:.1f}s")
    print("resources: " + "; ".join(f"{k}: {v}" for k, v in res.notes.items()))
    print()
    print(
        "| # | relation | release triples | Table 2 | real WN rel. (offsets) | real WN rel. (word senses) "
        "| verb/noun offsets moved | distractors: rule (word senses) | distractors: ≠ synset lexfile "
        "| ours | ours ∩ release | ours, release senses as Core | that ∩ release |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    tot = defaultdict(int)
    for p in T.PATTERNS:
        s = stat[p]
        ok = {t.key() for t in ours.get(p, [])}
        inter = len(ok & release_keys[p])
        oo = {t.key() for t in oracle.get(p, [])}
        ointer = len(oo & release_keys[p])
        n = s["blocks"]
        pct = lambda x, d: f"{100 * x / d:.1f}%" if d else "-"  # noqa: E731
        print(
            f"| {p:02d} | {T.RELATION[p]} | {n} | {T.TABLE2_TRIPLES[p]} | {pct(s['real_offsets'], n)} "
            f"| {pct(s['real_senses'], n)} | {s['offset_moved']} | {pct(s['d_rule'], s['distractors'])} "
            f"| {pct(s['d_synset'], s['distractors'])} | {len(ours.get(p, []))} "
            f"| {inter} ({pct(inter, len(release_keys[p]))} of {len(release_keys[p])} distinct) "
            f"| {len(oo)} | {ointer} ({pct(ointer, len(release_keys[p]))}) |"
        )
        for k in ("blocks", "real_offsets", "real_senses", "distractors", "d_rule", "d_synset"):
            tot[k] += s[k]
        tot["ours"] += len(ours.get(p, []))
        tot["inter"] += inter
        tot["oracle"] += len(oo)
        tot["ointer"] += ointer
        tot["distinct"] += len(release_keys[p])
    pct = lambda x, d: f"{100 * x / d:.1f}%" if d else "-"  # noqa: E731
    print(
        f"| all | | {tot['blocks']} | {sum(T.TABLE2_TRIPLES.values())} | {pct(tot['real_offsets'], tot['blocks'])} "
        f"| {pct(tot['real_senses'], tot['blocks'])} | | {pct(tot['d_rule'], tot['distractors'])} "
        f"| {pct(tot['d_synset'], tot['distractors'])} | {tot['ours']} "
        f"| {tot['inter']} ({pct(tot['inter'], tot['distinct'])}) | {tot['oracle']} "
        f"| {tot['ointer']} ({pct(tot['ointer'], tot['distinct'])}) |"
    )
    # the Core WordNet substitute against the senses the release uses
    rs = defaultdict(set)
    for tr in triples:
        for t in (tr.a,) if tr.relation == "variant" else (tr.a, tr.b):
            pos = t.synset.rpartition("-")[2]
            rs[pos].add((t.word.lower(), T.resolve_release_term(wn, t.synset, t.word, t.sense)))
    for pos in ("n", "v"):
        mine = {(w.lower(), o) for w, o in res.core[pos]}
        print(
            f"Core substitute ({pos}): {len(mine)} senses; the release's {len(rs[pos])} {pos}-senses: "
            f"{len(rs[pos] & mine)} in it ({100 * len(rs[pos] & mine) / max(1, len(rs[pos])):.1f}%)"
        )
    blc_hits = sum(1 for _, o in rs["n"] if o in res.blc)
    print(
        f"BLC substitute: {len(res.blc)} synsets; of the release's noun senses {blc_hits} fall on one "
        f"(the paper excludes BLCs from #01/#03/#05 triples)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
