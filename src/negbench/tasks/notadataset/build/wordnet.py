"""A small reader of Princeton WordNet 3.0 in its own database format (wndb(5WN)).

Why our own: the builder needs only synsets, their lexicographer file, gloss, a few pointer
types and tag counts, and must not depend on nltk or a download. ``data.POS`` lines are parsed
once per part of speech (nouns + verbs in about a second); offsets are the release's
``"00007846-n"`` form.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Sequence

from negbench.errors import NegbenchError

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
SS_TYPE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}  # sense-key ss_type digit

# lexnames(5WN): the 45 lexicographer files, numbered 00-44 (Debian's wordnet-base ships no
# ``lexnames`` file, so the fixed list is here).
LEXNAMES = (
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
)

# Pointer symbols used by the builder (wninput(5WN)).
ANTONYM, HYPERNYM, INSTANCE_HYPERNYM, HYPONYM = "!", "@", "@i", "~"
PART_MERONYM, MEMBER_MERONYM, SUBSTANCE_MERONYM = "%p", "%m", "%s"
PART_HOLONYM, MEMBER_HOLONYM, SUBSTANCE_HOLONYM = "#p", "#m", "#s"
DERIVATION = "+"

INSTALL_FIX = (
    "install WordNet 3.0 (Debian/Ubuntu: apt-get install wordnet-base), or pass "
    "--wordnet DIR / set $NEGBENCH_WORDNET to a folder holding data.noun, index.noun …"
)


class Pointer(NamedTuple):
    """One pointer of a synset: symbol, target offset ("00004475-n"), and the source/target
    word numbers (1-based; 0 for a semantic pointer between whole synsets)."""

    symbol: str
    target: str
    source_word: int = 0
    target_word: int = 0


def release_definition(definition: str, examples: Sequence[str] = ()) -> str:
    """The synset text the release's glosses start from, rebuilt from WordNet's definition and
    examples: the release cut the raw gloss at its first ``;``, so where the first example follows
    a colon with no ``;`` between (8 noun synsets, e.g. cow_1 'female of domestic cattle: "`moo-cow'
    is a child's term"') the example stays in its gloss."""
    if definition.rstrip().endswith(":") and examples:
        return f'{definition} "{examples[0]}"'
    return definition


@dataclass(frozen=True)
class Synset:
    offset: str  # "00007846-n" (satellites "s" are stored as "a")
    pos: str  # n v a r
    lexname: str  # "noun.person"
    words: tuple[str, ...]  # lemmas in WordNet order, '_' -> ' ', markers like (a) dropped
    definition: str  # the gloss without its example sentences
    examples: tuple[str, ...] = ()
    lex_ids: tuple[int, ...] = ()  # lex_id of each word (sense keys: lemma%ss:lexfile:lex_id)
    pointers: tuple[Pointer, ...] = field(default=(), repr=False)

    @property
    def gloss(self) -> str:
        """The definition as This is not a Dataset's glosses use it (:func:`release_definition`)."""
        return release_definition(self.definition, self.examples)

    def targets(self, symbol: str) -> list[str]:
        """Offsets reached by a semantic pointer ``symbol`` (whole-synset pointers only)."""
        return [p.target for p in self.pointers if p.symbol == symbol and p.source_word == 0]

    def lexical(self, symbol: str) -> list[tuple[int, str, int]]:
        """Lexical pointers ``symbol``: (source word number, target offset, target word number)."""
        return [
            (p.source_word, p.target, p.target_word)
            for p in self.pointers
            if p.symbol == symbol and p.source_word != 0
        ]


def split_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """``'a human being; "there was too much …"'`` → definition and example sentences."""
    gloss = gloss.strip()
    q = gloss.find('"')
    if q < 0:
        return gloss, ()
    definition = gloss[:q].rstrip().rstrip(";").rstrip()
    examples = tuple(e.strip().strip('"') for e in gloss[q:].split('";') if e.strip().strip('"'))
    return definition, examples


def _clean_word(w: str) -> str:
    if w.endswith(")") and "(" in w:  # adjective markers: (a) (p) (ip)
        w = w[: w.rindex("(")]
    return w.replace("_", " ")


def parse_data_line(line: str, where: str = "data") -> Synset:
    """One ``data.POS`` line (wndb(5WN)) → :class:`Synset`."""
    head, _, gloss = line.partition(" | ")
    t = head.split()
    try:
        off, lexfile, ss_type = t[0], int(t[1]), t[2]
        n = int(t[3], 16)
        words = tuple(_clean_word(t[4 + 2 * i]) for i in range(n))
        lex_ids = tuple(int(t[5 + 2 * i], 16) for i in range(n))
        i = 4 + 2 * n
        p_cnt = int(t[i])
        i += 1
        ptrs = []
        for _ in range(p_cnt):
            sym, toff, tpos, st = t[i], t[i + 1], t[i + 2], t[i + 3]
            ptrs.append(
                Pointer(
                    sym, f"{toff}-{'a' if tpos == 's' else tpos}", int(st[:2], 16), int(st[2:], 16)
                )
            )
            i += 4
    except (IndexError, ValueError) as e:
        raise NegbenchError(
            f"malformed WordNet data line ({e})", where=f"{where}: {line[:60]!r}", fix=INSTALL_FIX
        ) from None
    pos = "a" if ss_type == "s" else ss_type
    definition, examples = split_gloss(gloss)
    lexname = LEXNAMES[lexfile] if 0 <= lexfile < len(LEXNAMES) else f"lexfile.{lexfile}"
    return Synset(f"{off}-{pos}", pos, lexname, words, definition, examples, lex_ids, tuple(ptrs))


def _candidates(path: str | os.PathLike | None) -> list[Path]:
    if path is not None:
        return [Path(path)]
    out = []
    if os.environ.get("NEGBENCH_WORDNET"):
        out.append(Path(os.environ["NEGBENCH_WORDNET"]))
    out.append(Path("/usr/share/wordnet"))
    roots = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    roots += [
        str(Path.home() / "nltk_data"),
        "/usr/share/nltk_data",
        "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data",
        "/usr/local/lib/nltk_data",
    ]
    out += [Path(r) / "corpora" / "wordnet" for r in roots]
    return out


def _is_wndb(p: Path) -> bool:
    return all((p / f"{k}.{v}").is_file() for v in ("noun", "verb") for k in ("data", "index"))


def open_wordnet(path: str | os.PathLike | None = None) -> "WordNet":
    """The WordNet at ``path`` (a wndb folder), else $NEGBENCH_WORDNET, /usr/share/wordnet, or an
    nltk_data ``corpora/wordnet`` folder; a clear error naming every place tried otherwise."""
    tried = _candidates(path)
    for p in tried:
        if _is_wndb(p):
            return WordNet(p)
    raise NegbenchError(
        "WordNet 3.0 database not found (need data.noun, index.noun, data.verb, index.verb)",
        where="tried " + ", ".join(str(p) for p in tried),
        fix=INSTALL_FIX,
    )


class WordNet:
    """Lazy per part of speech: a POS's data and index files are read on first use."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._synsets: dict[str, dict[str, Synset]] = {}
        self._index: dict[str, dict[str, tuple[str, ...]]] = {}
        self._tags: dict[tuple[str, str, int], int] | None = None
        self._exc: dict[str, dict[str, list[str]]] = {}

    # -- loading ---------------------------------------------------------------------------
    def _file(self, name: str) -> Path:
        return self.path / name

    def synsets(self, pos: str) -> dict[str, Synset]:
        """All synsets of ``pos`` by offset, in file order."""
        pos = "a" if pos == "s" else pos
        if pos not in self._synsets:
            if pos not in POS_FILES:
                raise NegbenchError(f"unknown part of speech {pos!r}", fix="use one of n, v, a, r")
            f = self._file(f"data.{POS_FILES[pos]}")
            out: dict[str, Synset] = {}
            if f.is_file():
                with open(f, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if line[:1] != " " and line.strip():
                            s = parse_data_line(line, str(f))
                            out[s.offset] = s
            self._synsets[pos] = out
        return self._synsets[pos]

    def index(self, pos: str) -> dict[str, tuple[str, ...]]:
        """lemma (lower case, spaces) → synset offsets in sense order (index.POS)."""
        pos = "a" if pos == "s" else pos
        if pos not in self._index:
            f = self._file(f"index.{POS_FILES[pos]}")
            out: dict[str, tuple[str, ...]] = {}
            if f.is_file():
                with open(f, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if line[:1] == " " or not line.strip():
                            continue
                        t = line.split()
                        n_syn, p_cnt = int(t[2]), int(t[3])
                        offs = t[4 + p_cnt + 2 : 4 + p_cnt + 2 + n_syn]
                        out[t[0].replace("_", " ")] = tuple(f"{o}-{pos}" for o in offs)
            self._index[pos] = out
        return self._index[pos]

    def _tag_counts(self) -> dict[tuple[str, str, int], int]:
        if self._tags is None:
            self._tags = {}
            f = self._file("cntlist.rev")
            if f.is_file():
                with open(f, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        t = line.split()
                        if len(t) != 3 or "%" not in t[0]:
                            continue
                        lemma, _, rest = t[0].partition("%")
                        pos = SS_TYPE_POS.get(rest[:1])
                        if pos:
                            key = (lemma.replace("_", " "), pos, int(t[1]))
                            self._tags[key] = self._tags.get(key, 0) + int(t[2])
        return self._tags

    # -- queries ---------------------------------------------------------------------------
    def synset(self, offset: str) -> Synset:
        """The synset ``"00007846-n"`` (``-s`` is accepted for satellites)."""
        off, _, pos = offset.partition("-")
        pos = "a" if pos == "s" else pos
        s = self.synsets(pos).get(f"{off}-{pos}") if pos in POS_FILES else None
        if s is None:
            raise NegbenchError(
                f"no synset {offset!r} in WordNet",
                where=str(self.path),
                fix="offsets look like 00007846-n (WordNet 3.0)",
            )
        return s

    def has(self, offset: str) -> bool:
        off, _, pos = offset.partition("-")
        pos = "a" if pos == "s" else pos
        return pos in POS_FILES and f"{off}-{pos}" in self.synsets(pos)

    def lookup(self, word: str, pos: str) -> list[Synset]:
        """Synsets of ``word`` (any inflection WordNet's morphy knows) in sense order."""
        idx = self.index(pos)
        for lemma in self.morphy(word, pos):
            if lemma in idx:
                return [self.synset(o) for o in idx[lemma]]
        return []

    def sense_number(self, word: str, offset: str) -> int:
        """1-based sense number of ``word`` in synset ``offset`` ("person", "00007846-n" → 1)."""
        pos = offset.rpartition("-")[2]
        pos = "a" if pos == "s" else pos
        offs = self.index(pos).get(word.lower().replace("_", " "), ())
        if offset.replace("-s", "-a") not in offs:
            raise NegbenchError(f"{word!r} is not a lemma of synset {offset}", where=str(self.path))
        return offs.index(offset.replace("-s", "-a")) + 1

    def tag_count(self, word: str, offset: str) -> int:
        """Semcor tag count of the sense (cntlist.rev); 0 when untagged."""
        try:
            n = self.sense_number(word, offset)
        except NegbenchError:
            return 0
        pos = offset.rpartition("-")[2]
        return self._tag_counts().get(
            (word.lower().replace("_", " "), "a" if pos == "s" else pos, n), 0
        )

    def synset_frequency(self, offset: str) -> int:
        """Sum of the tag counts of the synset's word senses."""
        return sum(self.tag_count(w, offset) for w in self.synset(offset).words)

    def word_frequency(self, word: str, pos: str) -> int:
        """Sum of the tag counts of every sense of ``word``."""
        return sum(self.tag_count(word, o) for o in self.index(pos).get(word.lower(), ()))

    def morphy(self, word: str, pos: str) -> list[str]:
        """Base-form candidates of ``word`` (exception list, then detachment rules; morphy(7WN))."""
        w = word.lower().replace("_", " ")
        out = [w]
        exc = self._exceptions(pos)
        out += exc.get(w.replace(" ", "_"), [])
        for suf, rep in _DETACH.get(pos, ()):
            if w.endswith(suf) and len(w) > len(suf):
                out.append(w[: len(w) - len(suf)] + rep)
        return list(dict.fromkeys(out))

    def _exceptions(self, pos: str) -> dict[str, list[str]]:
        if pos not in self._exc:
            out: dict[str, list[str]] = {}
            f = self._file(f"{POS_FILES.get(pos, pos)}.exc")
            if f.is_file():
                for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                    t = line.split()
                    if len(t) >= 2:
                        out.setdefault(t[0], []).extend(x.replace("_", " ") for x in t[1:])
            self._exc[pos] = out
        return self._exc[pos]

    def fingerprint(self) -> str:
        """sha256 over the data and index files used (identifies the WordNet version)."""
        h = hashlib.sha256()
        for name in ("data.noun", "data.verb", "index.noun", "index.verb", "cntlist.rev"):
            f = self._file(name)
            if f.is_file():
                h.update(name.encode())
                h.update(f.read_bytes())
        return h.hexdigest()


_DETACH = {
    "n": (
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ),
    "v": (
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
