"""Triples and distractors of "This is not a Dataset" (García-Ferrero et al. 2023, §3.1, App. C).

A :class:`Triple` is one WordNet (or Morphosemantic) relation between two word senses plus its
distractors: the release's ``Source`` header and ``Distractor…`` headers as typed terms.  The
paper's side resources are not installable here, so each has a documented substitute
(src/negbench/tasks/notadataset/build/README.md): Core WordNet → the most frequent senses by SemCor tag count (or the
real list with ``core=FILE``); BLCs → an Izquierdo-style local maximum of relation counts on
the hypernym chain; Top Ontology → hypernym closure reaching person/animal; Morphosemantic Links
→ derivational ``+`` pointers typed by the noun's lexicographer file (or the real links with
``morphosemantic=FILE``); WordNet Domains → not available, the distractor rule uses lexicographer
files only.  Every random choice is drawn from a ``random.Random`` seeded by (seed, pattern,
triple), so a triple's distractors do not depend on ``limit`` or on the other patterns.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

from negbench.tasks.notadataset.build.wordnet import (
    ANTONYM,
    HYPERNYM,
    INSTANCE_HYPERNYM,
    LEXNAMES,
    MEMBER_MERONYM,
    PART_MERONYM,
    SUBSTANCE_MERONYM,
    DERIVATION,
    SS_TYPE_POS,
    WordNet,
)
from negbench.errors import DataError, NegbenchError, OptionError

PATTERNS = tuple(range(1, 12))
DEFAULT_SEED = 0
RELATION = {
    1: "variant",
    2: "ant",
    3: "synset",
    4: "ant",
    5: "hyp",
    6: "wn_part",
    7: "wn_substance",
    8: "wn_member",
    9: "agent",
    10: "instrument",
    11: "result",
}
#: Table 2: triples per pattern in the paper.
TABLE2_TRIPLES = {1: 2996, 2: 58, 3: 14, 4: 58, 5: 634, 6: 199, 7: 21, 8: 11, 9: 60, 10: 9, 11: 40}
#: Which term each distractor replaces, and whether it is a word or a whole synset (gloss),
#: in header order — read off the release (App. C: one distracting triple per WordNet triple,
#: two — one per synset — for #02–#04; synsets instead of words in the gloss patterns #01/#02).
DISTRACTOR_SLOTS: dict[int, tuple[tuple[str, str], ...]] = {
    1: (("b", "synset"),),
    2: (("a", "word"), ("b", "synset")),
    3: (("a", "word"), ("b", "word")),
    4: (("a", "word"), ("b", "word")),
    5: (("a", "word"),),
    6: (("a", "word"),),
    7: (("a", "word"),),
    8: (("a", "word"),),
    9: (("b", "word"),),
    10: (("a", "word"),),
    11: (("a", "word"),),
}
MERONYMY = {6: PART_MERONYM, 7: SUBSTANCE_MERONYM, 8: MEMBER_MERONYM}
MORPHO = {9: "agent", 10: "instrument", 11: "result"}
CORE_SIZES = {"n": 3299, "v": 1000}  # §3.1: Core WordNet's nouns and verbs
BLC_MIN_SUBSUMED = 20  # BLC-20 (Izquierdo et al. 2007)
PERSON, ANIMAL = "00007846-n", "00015388-n"
CORE_URL = "https://wordnetcode.princeton.edu/standoff-files/core-wordnet.txt"
MORPHOSEMANTIC_URL = "https://wordnetcode.princeton.edu/standoff-files/morphosemantic-links.xls"
#: Substitute typing of a derivational verb→noun link (docs: "Morphosemantic Links").
AGENT_LEX = frozenset({"noun.person", "noun.animal"})
INSTRUMENT_LEX = frozenset({"noun.artifact"})
NOT_RESULT_LEX = frozenset(
    {
        "noun.person",
        "noun.animal",
        "noun.artifact",
        "noun.act",
        "noun.event",
        "noun.process",
        "noun.time",
        "noun.location",
        "noun.Tops",
        "noun.phenomenon",
    }
)


# -- data ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """A term of a triple: a word sense (word + synset), a distractor word (synset None; its
    synsets of the part of speech in ``synsets``), or a gloss distractor (synset + definition)."""

    word: str
    synset: str | None = None
    definition: str | None = None
    synsets: tuple[str, ...] = ()
    sense: int | None = None  # sense number of ``word`` in ``synset`` ("person_1")
    lemmas: tuple[tuple[str, int], ...] = ()  # gloss distractor: its words and sense numbers


@dataclass(frozen=True)
class Triple:
    pattern_id: int
    relation: str
    a: Term
    b: Term
    distractors: tuple[Term, ...]
    source: str  # the release's Source header, e.g. "hyp(0003…-n contact_1,…)"

    def key(self) -> tuple:
        """Identity across WordNet builds: relation and (word, sense number) of both terms."""
        return (self.relation, self.a.word.lower(), self.a.sense, self.b.word.lower(), self.b.sense)

    def distractor_headers(self) -> tuple[tuple[str, str], ...]:
        """The release's ``Distractor`` / ``Distractor-1`` / ``Distractor-2`` header fields."""
        n = len(self.distractors)
        names = ["Distractor"] if n == 1 else [f"Distractor-{i}" for i in range(1, n + 1)]
        return tuple((nm, format_distractor(d)) for nm, d in zip(names, self.distractors))


def format_source(relation: str, terms: Sequence[Term]) -> str:
    return f"{relation}(" + ",".join(f"{t.synset} {t.word}_{t.sense}" for t in terms) + ")"


def format_distractor(d: Term) -> str:
    """``"whale [02062744-n,10129133-n]"`` (word) or ``"08388074-n [(few,1)]"`` (synset)."""
    if d.definition is not None and d.synset:
        pairs = d.lemmas or ((d.word, d.sense or 1),)
        return f"{d.synset} [" + ",".join(f"({w},{n})" for w, n in pairs) + "]"
    return f"{d.word} [" + ",".join(d.synsets) + "]"


# -- the release's own triples ---------------------------------------------------------------------
_SOURCE_RE = re.compile(r"^(\w+)\((.*)\)$")
_SENSE_RE = re.compile(r"^(\d{8}-[nvasr]) (.+)_(\d+)$")
_DWORD_RE = re.compile(r"^(.+?) \[([0-9a-z,\-]*)\]$")
_DSYN_RE = re.compile(r"^(\d{8}-[nvasr]) \[(.*)\]$")
_PAIR_RE = re.compile(r"\(([^()]+),(\d+)\)")


def parse_source(text: str, where: str = "Source") -> tuple[str, list[tuple[str, str, int]]]:
    """``"hyp(00039297-n contact_1,00039021-n interaction_1)"`` → relation, [(offset, word, n)]."""
    m = _SOURCE_RE.match(text.strip())
    if not m:
        raise DataError(f"cannot read Source header {text!r}", path=where, field="Source")
    parts = []
    for x in m.group(2).split(","):
        s = _SENSE_RE.match(x.strip())
        if not s:
            raise DataError(f"cannot read word sense {x!r}", path=where, field="Source")
        parts.append((s.group(1), s.group(2), int(s.group(3))))
    return m.group(1), parts


def parse_distractor(text: str, wn: WordNet | None = None, where: str = "Distractor") -> Term:
    """A ``Distractor…`` header value → :class:`Term` (gloss terms get their definition from ``wn``)."""
    text = text.strip()
    m = _DSYN_RE.match(text)
    if m:
        pairs = tuple((w, int(n)) for w, n in _PAIR_RE.findall(m.group(2)))
        word = pairs[0][0] if pairs else ""
        return Term(
            word,
            m.group(1),
            _definition(wn, m.group(1)) or "",
            (),
            pairs[0][1] if pairs else None,
            pairs,
        )
    m = _DWORD_RE.match(text)
    if not m:
        raise DataError(f"cannot read distractor {text!r}", path=where, field="Distractor")
    return Term(m.group(1), None, None, tuple(x for x in m.group(2).split(",") if x))


def _definition(wn: WordNet | None, offset: str) -> str | None:
    if wn is None:
        return None
    try:
        return wn.synset(offset).gloss
    except NegbenchError:
        return None


def _auto_wordnet() -> WordNet | None:
    from negbench.tasks.notadataset.build.wordnet import open_wordnet

    try:
        return open_wordnet()
    except NegbenchError:
        return None


def triples_from_release(release, wn: WordNet | None | Literal["auto"] = "auto") -> list[Triple]:
    """The release's own triples, one per block in ``release.blocks`` order (for regeneration
    checks).  Definitions (gloss patterns) come from ``wn`` — by default the installed WordNet;
    without one they are None.  Variant triples (#01) have ``a == b``."""
    if wn == "auto":
        wn = _auto_wordnet()
    out = []
    for key, b in release.blocks.items():
        where = f"{release.source}, block {key}"
        rel, parts = parse_source(b.source, where)
        terms = [Term(w, off, _definition(wn, off), (), n) for off, w, n in parts]
        a, bb = terms[0], terms[1] if len(terms) > 1 else terms[0]
        ds = tuple(parse_distractor(v, wn, where) for _, v in b.distractors)
        out.append(Triple(b.pattern_id, rel, a, bb, ds, b.source))
    return out


# -- side resources and their substitutes --------------------------------------------------------
@dataclass
class Resources:
    """Core senses, BLCs and Morphosemantic links in use, with a note on where each came from."""

    core: dict[str, list[tuple[str, str]]]  # pos -> [(word, offset)] frequency order
    blc: frozenset[str]
    morpho: dict[str, set[tuple[str, str]]]  # relation -> {(verb offset, noun offset)}
    notes: dict[str, str] = field(default_factory=dict)

    def core_words(self, offset: str) -> list[str]:
        return self._by_synset().get(offset, [])

    def _by_synset(self) -> dict[str, list[str]]:
        if not hasattr(self, "_bs"):
            bs: dict[str, list[str]] = {}
            for senses in self.core.values():
                for w, o in senses:
                    bs.setdefault(o, []).append(w)
            self._bs = bs
        return self._bs


def _read_text(src: str, what: str, fix: str) -> str:
    """A local file or an http(s) URL (no network here: the error says to download elsewhere)."""
    if re.match(r"^https?://", src):
        try:
            import urllib.request  # only for a URL (costs ~15 ms at import)

            with urllib.request.urlopen(src, timeout=30) as r:
                data = r.read()
        except Exception as e:  # noqa: BLE001 - any network failure
            raise OptionError(
                f"cannot download the {what} ({e})",
                where=src,
                fix=f"download it on a machine with internet access and pass the file; {fix}",
            ) from None
    else:
        p = Path(src)
        if not p.is_file():
            raise OptionError(f"{what} file not found", where=src, fix=fix)
        data = p.read_bytes()
    if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":  # OLE2: an .xls workbook
        raise OptionError(
            f"the {what} is an Excel .xls workbook",
            where=src,
            fix="export its sheet as CSV or TSV (LibreOffice: File > Save As > .csv) and pass that",
        )
    return data.decode("utf-8", errors="replace")


def _parse_sense_key(key: str) -> tuple[str, str, int, int] | None:
    """``"board%1:14:00::"`` → (lemma, pos, lex_filenum, lex_id)."""
    m = re.match(r"^(.+)%([1-5]):(\d\d):(\d\d):", key.strip())
    if not m:
        return None
    return (
        m.group(1).replace("_", " ").lower(),
        SS_TYPE_POS[m.group(2)],
        int(m.group(3)),
        int(m.group(4)),
    )


def resolve_sense_key(wn: WordNet, key: str) -> tuple[str, str] | None:
    """Sense key → (word as in the synset, offset), or None when this WordNet lacks it."""
    k = _parse_sense_key(key)
    if k is None:
        return None
    lemma, pos, lexfile, lex_id = k
    for off in wn.index(pos).get(lemma, ()):
        s = wn.synset(off)
        if s.lexname != LEXNAMES[lexfile]:
            continue
        for w, lid in zip(s.words, s.lex_ids):
            if w.lower() == lemma and lid == lex_id:
                return w, off
    return None


def core_from_frequency(
    wn: WordNet, sizes: Mapping[str, int] = CORE_SIZES
) -> dict[str, list[tuple[str, str]]]:
    """Substitute of Core WordNet: per part of speech, the ``sizes[pos]`` word senses with the
    highest SemCor tag counts (cntlist.rev); ties by word then offset; words with digits or
    capitals (proper names) left out."""
    out = {}
    for pos, n in sizes.items():
        cands = []
        for word, offs in wn.index(pos).items():
            if not word.isascii() or any(c.isdigit() for c in word):
                continue
            for off in offs:
                c = wn.tag_count(word, off)
                if c <= 0:
                    continue
                s = wn.synset(off)
                form = next((w for w in s.words if w.lower() == word), word)
                if form != form.lower():
                    continue
                cands.append((-c, form, off))
        cands.sort()
        out[pos] = [(w, o) for _, w, o in cands[:n]]
    return out


def load_core(wn: WordNet, src: str) -> dict[str, list[tuple[str, str]]]:
    """The real Core WordNet list (core-wordnet.txt: ``n [board] board%1:14:00:: board``)."""
    text = _read_text(src, "Core WordNet list", f"get it from {CORE_URL}")
    out: dict[str, list[tuple[str, str]]] = {"n": [], "v": []}
    bad = 0
    for i, line in enumerate(text.splitlines(), 1):
        key = next((t for t in line.split() if "%" in t), None)
        if key is None:
            continue
        r = resolve_sense_key(wn, key)
        if r is None:
            bad += 1
            continue
        pos = r[1].rpartition("-")[2]
        if pos in out:
            out[pos].append(r)
    if not out["n"]:
        raise DataError(
            "no noun sense keys found (expected lines like 'n [board] board%1:14:00:: board')",
            path=src,
            fix=f"pass core-wordnet.txt from {CORE_URL}",
        )
    return out


def blc_synsets(wn: WordNet, min_subsumed: int = BLC_MIN_SUBSUMED) -> frozenset[str]:
    """Substitute of the Basic Level Concepts (Izquierdo et al. 2007, "all relations", BLC-N):
    walking up each noun synset's first hypernym chain, the BLC is the first synset whose
    number of relations (pointers) is a local maximum — more than its hypernym's — among those
    that subsume at least ``min_subsumed`` synsets."""
    nouns = wn.synsets("n")
    hyper = {}
    for off, s in nouns.items():
        h = s.targets(HYPERNYM) or s.targets(INSTANCE_HYPERNYM)
        hyper[off] = h[0] if h else None
    subsumed: dict[str, int] = {}
    for off in nouns:  # count along the first chain
        seen = set()
        cur = hyper[off]
        while cur is not None and cur not in seen:
            seen.add(cur)
            subsumed[cur] = subsumed.get(cur, 0) + 1
            cur = hyper.get(cur)
    nrel = {off: len(s.pointers) for off, s in nouns.items()}
    out = set()
    for off in nouns:
        cur = off
        seen = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            up = hyper.get(cur)
            if subsumed.get(cur, 0) >= min_subsumed and (up is None or nrel[cur] > nrel[up]):
                out.add(cur)
                break
            cur = up
    return frozenset(out)


def hypernym_closure(wn: WordNet, offset: str) -> set[str]:
    seen, todo = set(), [offset]
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        s = wn.synset(cur)
        todo += s.targets(HYPERNYM) + s.targets(INSTANCE_HYPERNYM)
    return seen


def person_or_animal(wn: WordNet, offset: str) -> bool:
    """Substitute of the Top Ontology's Human/Animal: the hypernym closure reaches person_1 or
    animal_1 (a group of them — noun.group — does not)."""
    return bool(hypernym_closure(wn, offset) & {PERSON, ANIMAL})


def morpho_from_derivation(wn: WordNet) -> dict[str, set[tuple[str, str]]]:
    """Substitute of the Morphosemantic Links: verb→noun derivational pointers ``+`` (any words of
    the two synsets), typed by the noun: agent = noun.person/noun.animal referring to a person or
    animal; instrument = noun.artifact; result = the remaining lexicographer files except events,
    acts, processes, times, locations and phenomena (which the real links mostly type as event,
    location …)."""
    out: dict[str, set[tuple[str, str]]] = {"agent": set(), "instrument": set(), "result": set()}
    for voff, v in wn.synsets("v").items():
        for p in v.pointers:
            if p.symbol != DERIVATION or not p.target.endswith("-n"):
                continue
            n = wn.synset(p.target)
            if n.lexname in AGENT_LEX:
                if person_or_animal(wn, n.offset):
                    out["agent"].add((voff, n.offset))
            elif n.lexname in INSTRUMENT_LEX:
                out["instrument"].add((voff, n.offset))
            elif n.lexname not in NOT_RESULT_LEX:
                out["result"].add((voff, n.offset))
    return out


def load_morphosemantic(wn: WordNet, src: str) -> dict[str, set[tuple[str, str]]]:
    """The real Morphosemantic Links as a CSV/TSV export of morphosemantic-links.xls: per row, the
    verb sense key (``%2:``), the noun sense key (``%1:``) and the relation name."""
    text = _read_text(src, "Morphosemantic Links", f"get {MORPHOSEMANTIC_URL} and export it as CSV")
    dialect = "excel-tab" if text.count("\t") > text.count(",") else "excel"
    out: dict[str, set[tuple[str, str]]] = {r: set() for r in MORPHO.values()}
    rows = 0
    for row in csv.reader(io.StringIO(text), dialect=dialect):
        cells = [c.strip() for c in row]
        vk = next((c for c in cells if re.search(r"%2:\d\d:\d\d:", c)), None)
        nk = next((c for c in cells if re.search(r"%1:\d\d:\d\d:", c)), None)
        rel = next((c.lower() for c in cells if c.lower() in out), None)
        if not (vk and nk):
            continue
        rows += 1
        if rel is None:
            continue
        v, n = resolve_sense_key(wn, vk), resolve_sense_key(wn, nk)
        if v and n:
            out[rel].add((v[1], n[1]))
    if rows == 0:
        raise DataError(
            "no rows with a verb (%2:) and a noun (%1:) sense key",
            path=src,
            fix="pass a CSV/TSV export of morphosemantic-links.xls",
        )
    return out


def resources(wn: WordNet, core: str | None = None, morphosemantic: str | None = None) -> Resources:
    notes = {}
    if core:
        c = load_core(wn, core)
        notes["core"] = (
            f"Core WordNet from {core} ({len(c['n'])} nouns, {len(c['v'])} verbs resolved)"
        )
    else:
        c = core_from_frequency(wn)
        notes["core"] = (
            f"substitute: the {CORE_SIZES['n']} noun and {CORE_SIZES['v']} verb senses "
            f"with the highest SemCor tag counts"
        )
    if morphosemantic:
        m = load_morphosemantic(wn, morphosemantic)
        notes["morphosemantic"] = f"Morphosemantic Links from {morphosemantic}"
    else:
        m = morpho_from_derivation(wn)
        notes["morphosemantic"] = (
            "substitute: derivational '+' pointers typed by the noun's lexicographer file"
        )
    notes["blc"] = (
        f"substitute: BLC-{BLC_MIN_SUBSUMED} by local maximum of relations on the hypernym chain"
    )
    notes["top_ontology"] = "substitute: hypernym closure reaching person_1 / animal_1"
    notes["domains"] = "not available: distractor rule on lexicographer files only"
    return Resources(c, blc_synsets(wn), m, notes)


# -- triple extraction ----------------------------------------------------------------------------
def _term(wn: WordNet, word: str, offset: str) -> Term:
    s = wn.synset(offset)
    return Term(word, offset, s.gloss, (), wn.sense_number(word, offset))


def _pairs_for(wn: WordNet, res: Resources, pattern: int) -> list[tuple[Term, Term]]:
    cw = res.core_words
    out: list[tuple[Term, Term]] = []
    if pattern == 1:
        for w, o in res.core["n"]:
            if o not in res.blc:
                t = _term(wn, w, o)
                out.append((t, t))
    elif pattern == 3:
        done = set()
        for w, o in res.core["n"]:
            if o in res.blc or o in done:
                continue
            done.add(o)
            ws = cw(o)
            out += [(_term(wn, x, o), _term(wn, y, o)) for x in ws for y in ws if x != y]
    elif pattern in (2, 4):  # synset-level: any word's antonym pointer (the release
        for w, o in res.core["n"]:  # pairs front_4 with back_2 through front ! rear)
            targets = dict.fromkeys(p.target for p in wn.synset(o).pointers if p.symbol == ANTONYM)
            for target in targets:
                out += [(_term(wn, w, o), _term(wn, x, target)) for x in cw(target)]
    elif pattern == 5:
        for w, o in res.core["n"]:
            if o in res.blc:
                continue
            s = wn.synset(o)
            for h in s.targets(HYPERNYM) + s.targets(INSTANCE_HYPERNYM):  # west_1 @i region_3
                if h in res.blc:
                    continue
                out += [(_term(wn, w, o), _term(wn, x, h)) for x in cw(h)]
    elif pattern in MERONYMY:
        sym = MERONYMY[pattern]
        for w, o in res.core["n"]:
            for m in wn.synset(o).targets(sym):
                if pattern == 8 and not person_or_animal(wn, m):
                    continue
                out += [(_term(wn, w, o), _term(wn, x, m)) for x in cw(m)]
    elif pattern in MORPHO:
        links = res.morpho.get(MORPHO[pattern], set())
        for v, n in sorted(links):
            if pattern == 9 and not person_or_animal(wn, n):
                continue
            out += [(_term(wn, x, v), _term(wn, y, n)) for x in cw(v) for y in cw(n)]
    seen, uniq = set(), []
    for a, b in out:
        k = (a.word, a.synset, b.word, b.synset)
        if k not in seen:
            seen.add(k)
            uniq.append((a, b))
    return uniq


# -- distractors (Appendix C) ----------------------------------------------------------------------
class DistractorPool:
    """Core words (or synsets) as distractor candidates, drawn with probability ∝ log frequency
    among those whose lexicographer files are disjoint from the replaced word's senses' files."""

    def __init__(self, wn: WordNet, res: Resources):
        self.wn, self.res = wn, res
        self._cache: dict[tuple, tuple[list, list[float]]] = {}
        self.words: dict[str, list[tuple[str, int, float, tuple[str, ...]]]] = {}
        for pos, senses in res.core.items():
            seen = {}
            for w, _ in senses:
                key = w.lower()
                if key in seen:
                    continue
                offs = wn.index(pos).get(key, ())
                if any(o in res.blc for o in offs):
                    continue  # App. C: words belonging to a BLC are out
                f = sum(wn.tag_count(key, o) for o in offs)
                seen[key] = (w, self.mask(offs), math.log(1 + f), tuple(sorted(offs)))
            self.words[pos] = list(seen.values())
        self.synsets: list[tuple[str, int, float]] = []
        for o in dict.fromkeys(o for _, o in res.core.get("n", [])):
            if o in res.blc:
                continue
            f = wn.synset_frequency(o)
            self.synsets.append((o, self.mask([o]), math.log(1 + f)))

    def mask(self, offsets: Iterable[str]) -> int:
        m = 0
        for o in offsets:
            m |= 1 << LEXNAMES.index(self.wn.synset(o).lexname)
        return m

    def word_mask(self, term: Term) -> int:
        """Lexicographer files of every sense of the replaced word (App. C's example:
        expenditure → noun.possession and noun.act)."""
        assert term.synset is not None  # a word sense of the triple
        pos = term.synset.rpartition("-")[2]
        offs = self.wn.index(pos).get(term.word.lower(), ()) or (term.synset,)
        return self.mask(offs)

    def draw(self, rng: random.Random, term: Term, kind: str, exclude: set[str]) -> Term | None:
        assert term.synset is not None  # a word sense of the triple
        pos = term.synset.rpartition("-")[2]
        avoid = self.word_mask(term)
        key = (kind, pos, avoid)
        if key not in self._cache:
            pool: list[tuple] = self.synsets if kind == "synset" else self.words.get(pos, [])
            cands = [c for c in pool if not (c[1] & avoid) and c[2] > 0]
            cum, tot = [], 0.0
            for c in cands:
                tot += c[2]
                cum.append(tot)
            self._cache[key] = (cands, cum)
        cands, cum = self._cache[key]
        for _ in range(50):
            if not cands:
                return None
            c = cands[bisect.bisect_right(cum, rng.random() * cum[-1])]
            if kind == "synset":
                s = self.wn.synset(c[0])
                if c[0] in exclude:
                    continue
                pairs = tuple((w, self.wn.sense_number(w, c[0])) for w in s.words)
                return Term(s.words[0], c[0], s.gloss, (), pairs[0][1], pairs)
            if c[0].lower() in exclude:
                continue
            return Term(c[0], None, None, c[3])
        return None


def triple_rng(seed: int, pattern: int, source: str) -> random.Random:
    """The generator of one triple's distractors (string seeds hash with SHA-512: stable)."""
    return random.Random(f"{seed}|{pattern}|{source}")


def with_distractors(
    pool: DistractorPool, pattern: int, a: Term, b: Term, seed: int
) -> Triple | None:
    rel = RELATION[pattern]
    terms = [a] if pattern == 1 else [a, b]
    source = format_source(rel, terms)
    rng = triple_rng(seed, pattern, source)
    assert a.synset is not None and b.synset is not None  # word senses
    exclude = {a.word.lower(), b.word.lower(), a.synset, b.synset}
    ds = []
    for slot, kind in DISTRACTOR_SLOTS[pattern]:
        d = pool.draw(rng, a if slot == "a" else b, kind, exclude)
        if d is None:
            return None
        ds.append(d)
    return Triple(pattern, rel, a, b, tuple(ds), source)


def extract(
    wn: WordNet,
    res: Resources,
    patterns: Iterable[int] = PATTERNS,
    seed: int = 0,
    limit: int | None = None,
    pool: DistractorPool | None = None,
) -> dict[int, list[Triple]]:
    """Triples with distractors per pattern (``limit``: the first N of each pattern)."""
    pool = pool or DistractorPool(wn, res)
    out = {}
    for p in patterns:
        pairs = _pairs_for(wn, res, p)
        if limit is not None:
            pairs = pairs[:limit]
        ts = [t for t in (with_distractors(pool, p, a, b, seed) for a, b in pairs) if t is not None]
        out[p] = ts
    return out


# -- checks against the release -------------------------------------------------------------------
def resolve_release_term(wn: WordNet, offset: str, word: str, n: int) -> str | None:
    """This WordNet's offset of ``word``'s sense ``n`` (the release's offsets come from Princeton's
    build; Debian re-grinds the database and some verb offsets moved)."""
    pos = offset.rpartition("-")[2]
    offs = wn.index(pos).get(word.lower(), ())
    return offs[n - 1] if 0 < n <= len(offs) else None


def is_real_relation(wn: WordNet, relation: str, a: str, wa: str, b: str, wb: str) -> bool:
    """Does this WordNet hold the relation between the two synsets (and words, for antonymy)?"""
    if not (wn.has(a) and wn.has(b)):
        return False
    sa = wn.synset(a)
    if relation == "variant":
        return any(w.lower() == wa.lower() for w in sa.words)
    if relation == "synset":
        return a == b and wa != wb
    if relation == "ant":
        return any(p.symbol == ANTONYM and p.target == b for p in sa.pointers)
    if relation == "hyp":
        return b in sa.targets(HYPERNYM) or b in sa.targets(INSTANCE_HYPERNYM)
    sym = {"wn_part": PART_MERONYM, "wn_substance": SUBSTANCE_MERONYM, "wn_member": MEMBER_MERONYM}
    if relation in sym:
        return b in sa.targets(sym[relation])
    if relation in MORPHO.values():  # only the derivational link itself is checkable
        return any(p.symbol == DERIVATION and p.target == b for p in sa.pointers)
    return False
