"""Rule-based English negation detector (``negbench analyze negation --lang en``).

Issue 18 asks for a cheap English counterpart of the Korean detector.  It works on surface tokens
(no tagger, no parser, no downloads), so it is fast and predictable, and its limits are stated
here and in docs/analyze.md.

Cues (one hit each):

* ``not`` (also ``cannot``) and ``n't`` — *analytic* (their only job is to negate);
* ``no`` and ``no one`` / ``nobody`` / ``nothing`` / ``none`` / ``nowhere`` / ``never`` /
  ``neither`` / ``nor`` / ``without``.  ``no`` is analytic; the others fuse negation with a
  pronoun, adverb, conjunction or preposition, so they are *synthetic* (the terms of
  Huddleston & Pullum 2002 as the This-is-not-a-Dataset paper uses them, Table 1).
  ``neither … nor`` in one sentence is one hit.

Not cues: ``not only`` (additive focus), ``not to mention``, interjection ``No,`` / ``No!`` and
``No.`` before a number; affixal negation (``un-``, ``in-``, ``-less``), lexical negators
(``lack``, ``fail``, ``refuse``, ``false``) and approximate negators (``rarely``, ``hardly``,
``few``) — out of scope, so CONDAQA's affixal and lexical cues are misses by design.

Per hit:

* ``kind`` — ``verbal`` when the negation is marked on the verb: ``n't``, ``not`` right
  after an auxiliary / modal / copula (``is not``, ``does not``, ``cannot``), or ``not`` before
  a non-finite verb (``not to go``, ``not knowing``); every other cue is
  ``non_verbal`` (``never``, ``no``, ``nothing`` … and constituent ``not``: ``not a single``,
  ``not all``, ``but not a cat``).  This is Pullum's split as the notadataset release labels it
  (its ``never`` sentences are ``non_verbal``).
* ``form`` — ``analytic`` / ``synthetic`` as above.
* ``clause`` — where the cue sits: ``nonfinite`` (``not``/``never`` before ``to`` or an
  ``-ing`` / ``-ed`` form that no auxiliary introduces: ``decided not to go``, ``a benefit not
  enjoyed by all``), ``subordinate`` (inside parentheses, or after a
  subordinator — ``that``, ``which``, ``who``, ``if``, ``because``, ``although``, ``when`` … —
  in the same comma-delimited segment), else ``main``.  A subject relative clause
  (``who``/``which``/``that`` + verb) closes at the next auxiliary or copula after its own verb
  group (``A person who sings is not …`` → ``main``).  Without a tagger the detector cannot see
  lexical verbs, so an object relative before the main verb (``The amount by which something
  increases is not …``) or a fronted ``if`` clause without a comma still reads ``subordinate``.
  Clausal vs sub-clausal negation in Pullum's sense (does the whole clause become negative?) is
  not decided: it needs scope, and the notadataset release itself simply labels every
  non-verbal sentence ``subclausal``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Iterator, Sequence

KINDS = ("verbal", "non_verbal")
FORMS = ("analytic", "synthetic")
CLAUSES = ("main", "subordinate", "nonfinite")
SYNTHETIC = frozenset(
    {
        "never",
        "nobody",
        "nothing",
        "none",
        "nowhere",
        "neither",
        "nor",
        "without",
        "no one",
        "neither…nor",
    }
)
CUES = frozenset(
    {
        "not",
        "n't",
        "no",
        "never",
        "nobody",
        "nothing",
        "none",
        "nowhere",
        "neither",
        "nor",
        "without",
    }
)
#: Auxiliaries, modals and copula forms after which ``not`` is verbal negation (``ca``/``wo``/
#: ``sha`` are the stems of ``can't`` / ``won't`` / ``shan't``).
AUXILIARIES = frozenset(
    """am is are was were be been being 's 're 'm do does did have has had 've
    'd can could may might must shall should will would 'll ought need dare ca wo sha""".split()
)
SUBORDINATORS = frozenset(
    """that which who whom whose because although though if unless when
    whenever while whereas since until till whether where wherever once lest""".split()
)
_TOKEN = re.compile(
    r"[A-Za-z]+(?=n't\b)|n't\b|'[A-Za-z]+\b|[A-Za-z]+|\d+(?:[.,]\d+)*|[^\sA-Za-z\d]", re.IGNORECASE
)
_BREAK = frozenset(',;:()—–"“”')
#: Relative pronouns whose clause may close before the cue (``A person who sings is not …``).
SUBJECT_RELATIVES = frozenset({"who", "which", "that"})
#: Words after which a relative pronoun is not the subject of its clause (``that the man …``).
_NOT_A_VERB = frozenset(
    """the a an this these those his her its their our my your some any no
    every each all he she it they we i you one someone something anyone anything""".split()
)
_ADVERBS = frozenset(
    {
        "also",
        "really",
        "just",
        "simply",
        "still",
        "certainly",
        "probably",
        "surely",
        "often",
        "always",
        "usually",
        "normally",
        "commonly",
        "not",
        "never",
        "n't",
    }
)


def _relative_closed(toks: Sequence[_Tok], k: int, i: int) -> bool:
    """Whether the subject relative clause opened at ``k`` (``who``/``which``/``that`` + its
    verb) has closed before the cue at ``i``: an auxiliary or copula after the relative's own verb
    group starts the main clause again (``A person who specializes in X is never …``).  Object
    relatives and complement clauses (``that the man does not …``) never close here."""
    if k + 1 >= i or toks[k + 1].low in _NOT_A_VERB or not toks[k + 1].low[:1].isalpha():
        return False
    j = k + 1  # the relative's verb group: a lexical verb alone, or auxiliaries
    if toks[j].low in AUXILIARIES:  # (and adverbs) up to one participle
        while j + 1 < i and (toks[j + 1].low in AUXILIARIES or toks[j + 1].low in _ADVERBS):
            j += 1
        if j + 1 < i and toks[j + 1].low.endswith(("ed", "en", "ing")):
            j += 1
    return any(
        toks[m].low in AUXILIARIES and toks[m - 1].low not in {"and", "or", "but"}
        for m in range(j + 1, i + 1)
    )  # "that is closed and does not …" stays inside


@dataclass(frozen=True)
class EnNegationHit:
    """One negation cue: what it is, where it is (character offsets) and how it negates."""

    cue: str  # normalised cue: "not", "n't", "never", "no one", "neither…nor" …
    start: int
    end: int
    text: str  # the cue as written ("neither … nor" spans both words)
    kind: str  # verbal | non_verbal
    form: str  # analytic | synthetic
    clause: str  # main | subordinate | nonfinite

    @property
    def type(self) -> str:
        """The statistics column a sentence is counted under (the Korean hits' ``type``)."""
        return self.kind

    @property
    def table2_clause(self) -> str:
        """Same name as the Korean hit's, so the shared output row writer reads both."""
        return self.clause

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Tok:
    text: str
    low: str
    start: int
    end: int


def tokens(sentence: str) -> list[_Tok]:
    """Words (contractions split as ``do`` + ``n't``, ``it`` + ``'s``), numbers, punctuation."""
    out = []
    for m in _TOKEN.finditer(sentence.replace("’", "'")):  # same length: offsets hold
        t = m.group(0)
        out.append(_Tok(t, t.lower(), m.start(), m.end()))
    return out


class EnNegationDetector:
    """Cue hits per sentence (stateless; ``detect_many`` mirrors the Korean detector's API)."""

    def detect(self, sentence: str) -> list[EnNegationHit]:
        toks = tokens(sentence)
        hits: list[EnNegationHit] = []
        skip: set[int] = set()
        for i, t in enumerate(toks):
            if i in skip:
                continue
            cue = self._cue(toks, i)
            if cue is None:
                continue
            end_tok = i
            if cue == "no one":
                end_tok = i + 1
            elif cue == "neither":
                j = next((k for k in range(i + 1, len(toks)) if toks[k].low == "nor"), None)
                if j is not None:
                    cue, end_tok = "neither…nor", j
                    skip.add(j)
            after_aux = self._after_aux(toks, i)
            nonfinite = cue in {"not", "never"} and not after_aux and self._nonfinite_next(toks, i)
            kind = (
                "verbal"
                if cue == "n't" or (cue == "not" and (after_aux or nonfinite))
                else "non_verbal"
            )
            form = "synthetic" if cue in SYNTHETIC else "analytic"
            clause = "nonfinite" if nonfinite else self._clause(toks, i)
            hits.append(
                EnNegationHit(
                    cue,
                    t.start,
                    toks[end_tok].end,
                    sentence[t.start : toks[end_tok].end],
                    kind,
                    form,
                    clause,
                )
            )
        return hits

    def detect_many(self, sentences: Iterable[str]) -> Iterator[list[EnNegationHit]]:
        for s in sentences:
            yield self.detect(s)

    @staticmethod
    def _cue(toks: Sequence[_Tok], i: int) -> str | None:
        w = toks[i].low
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        if w == "cannot":
            return "not"
        if w not in CUES:
            return None
        if w == "not":
            if nxt == "only" or (
                nxt == "to" and i + 2 < len(toks) and toks[i + 2].low == "mention"
            ):
                return None
            return "not"
        if w == "no":
            if nxt in {",", "!", "?", "-"} or (
                nxt == "." and (i + 2 >= len(toks) or toks[i + 2].low[:1].isdigit())
            ):
                return None  # interjection, or "No. 5"
            if nxt == "one":
                return "no one"
        return w

    @staticmethod
    def _after_aux(toks: Sequence[_Tok], i: int) -> bool:
        j = i - 1
        if j >= 0 and toks[j].low in {
            "also",
            "really",
            "just",
            "simply",
            "still",
            "certainly",
            "probably",
            "surely",
            "often",
            "always",
            "usually",
        }:
            j -= 1  # "is really not", "does often not"
        return j >= 0 and (toks[j].low in AUXILIARIES or toks[i].low == "cannot")

    @staticmethod
    def _nonfinite_next(toks: Sequence[_Tok], i: int) -> bool:
        nxt = toks[i + 1].low if i + 1 < len(toks) else ""
        return nxt == "to" or (nxt.endswith(("ing", "ed")) and len(nxt) > 4)

    @staticmethod
    def _clause(toks: Sequence[_Tok], i: int) -> str:
        depth = 0
        for k in range(i - 1, -1, -1):
            t = toks[k]
            if t.low == ")":  # pass over a closed parenthesis
                depth += 1
                continue
            if t.low == "(":
                if depth == 0:  # inside one: a parenthetical, not the main clause
                    return "subordinate"
                depth -= 1
                continue
            if depth:
                continue
            if t.low in _BREAK:  # a comma closes a fronted subordinate clause
                break
            if t.low in SUBORDINATORS:
                if t.low in SUBJECT_RELATIVES and _relative_closed(toks, k, i):
                    return "main"
                return "subordinate"
        return "main"


def sentence_label(hits: Sequence[EnNegationHit]) -> EnNegationHit | None:
    """The hit a negated sentence is counted under: the first main-clause hit, else the first."""
    if not hits:
        return None
    return next((h for h in hits if h.clause == "main"), hits[0])


def analyser_version() -> str:
    return "negbench-en-rules-1"


# -- statistics (the English counterpart of corpus.corpus_stats) ----------------------------------
def corpus_stats(hits_per_sentence: Iterable[Sequence[EnNegationHit]]) -> dict:
    """Sentences, negated sentences (each once, under :func:`sentence_label`) by kind, form and
    clause, and every hit by cue."""
    n = 0
    kinds: Counter[str] = Counter()
    forms: Counter[str] = Counter()
    clauses: Counter[str] = Counter()
    cues: Counter[str] = Counter()
    for hits in hits_per_sentence:
        n += 1
        lab = sentence_label(hits)
        if lab is not None:
            kinds[lab.kind] += 1
            forms[lab.form] += 1
            clauses[lab.clause] += 1
        cues.update(h.cue for h in hits)
    neg = sum(kinds.values())
    return {
        "sentences": n,
        "negated": neg,
        "negated_share": neg / n if n else math.nan,
        "kinds": {k: kinds[k] for k in KINDS},
        "forms": {k: forms[k] for k in FORMS},
        "clauses": {k: clauses[k] for k in CLAUSES},
        "cues": dict(sorted(cues.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def stats_markdown(stats: dict, *, title: str = "Negation in English sentences") -> str:
    neg = stats["negated"]

    def pct(k: int) -> str:
        return f"{k:,} ({100 * k / neg:.2f}%)" if neg else f"{k:,} (–)"

    share = f"{100 * stats['negated_share']:.1f}%" if stats["sentences"] else "–"
    lines = [
        f"### {title}",
        "",
        f"{stats['sentences']:,} sentences, {neg:,} with negation ({share}); each negated "
        "sentence counted once, under its first main-clause cue.",
        "",
    ]
    for part in ("kinds", "forms", "clauses"):
        keys = list(stats[part])
        lines += [
            "| | " + " | ".join(keys) + " | Total |",
            "|---|" + "---:|" * (len(keys) + 1),
            "| sentences | " + " | ".join(pct(stats[part][k]) for k in keys) + f" | {neg:,} |",
            "",
        ]
    if stats["cues"]:
        lines += [
            "Every cue: " + ", ".join(f"{c} {v:,}" for c, v in stats["cues"].items()) + ".",
            "",
        ]
    return "\n".join(lines)
