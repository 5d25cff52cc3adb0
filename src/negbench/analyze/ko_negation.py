"""Rule-based Korean negation detector (Thunder-KoNUBench §3.2–3.3, Table 2, App. A–B).

The paper finds negated sentences "with a rule-based method" and then checks them by hand; it does
not publish the rules.  These are ours, written from its definitions, over the morphemes of Kiwi
(``kiwipiepy``, Sejong tag set):

* syntactic negation (App. A.1, the five columns of Table 2):

  - ``an-short``  — adverb 안 (MAG) right before a predicate: ``안 먹었다``
  - ``an-long``   — ``-지`` (EC) + auxiliary 않- / 아니하-: ``먹지 않았다``
  - ``mot-short`` — adverb 못 (MAG) right before a predicate: ``못 먹었다``
  - ``mot-long``  — ``-지`` + 못하- (one VX, or 못 MAG + 하): ``먹지 못했다``
  - ``malda``     — ``-지`` + auxiliary 말-: ``먹지 마라``, ``가지 말고``

  A particle may sit between ``-지`` and the auxiliary (``먹지는 않았다``, ``먹지도 못했다``).
* lexical negation (App. A.2), only when asked for (``lexical=True``): ``anida`` — the negative
  copula 아니다 (VCN), which the release labels as its own type and the KMMLU negated questions
  use (``…이 아닌 것은?``); ``prefix`` — a negative prefix 부/불/비/미/무/몰 on a ``noun + 하다``
  predicate (``부적당하다``), the one prefix form the paper allows.  Table 2 counts syntactic
  negation only, so lexical hits never enter it.

Clause type of the negated predicate (§3.1 Table 1, App. B Table 11), read from the ending that
closes the negated predicate once pre-final endings (EP), auxiliary constructions (``-고 있다``,
``-어 버리다``, ``-게 되다``, ``-어야 하다``, a second ``-지 않다``) and periphrastic nouns
(``-ㄹ 것이다``, ``-ㄹ 수 있다/없다``, ``-ㄴ 것 같다``, ``-ㄴ 적이 있다``) are passed over:

* final ending (EF) → ``main``; EF followed by a quotative particle (JKQ ``라고``) or ``고`` →
  ``quotation``
* adnominal ending (ETM ``-는/-(으)ㄴ/-(으)ㄹ/-던``) → ``adnominal``; the quotative adnominal
  ``-다는/-라는/-냐는/-자는`` → ``quotation``
* nominal ending (ETN ``-기/-(으)ㅁ``) → ``noun``
* connective ending (EC): quotative ``-다고/-라고/-냐고/-자고/-다며`` → ``quotation``;
  coordinating ``-고/-(으)며/-지만/-(으)나/-거나/-든지`` → ``coordinated``; ``-게/-도록/-듯(이)/
  -어(서)/-아(서)/-(으)면서`` → ``adverbial`` (Table 11 puts ``-게``, ``-도록`` and ``-아서`` there;
  ``-면서`` goes where the release labels it more often); any other
  (``-면``, ``-면서``, ``-니까``, ``-는데``, ``-자``, ``-려고``, ``-어도`` …) → ``subordinate``.

A sentence's main clauses are the clauses closed by a coordinating connective plus the last
one.  When it has several and the negation reaches exactly one of them, its main-clause hit is
``coordinated`` ("coordinated sentence with local negation", Table 1); when two or more are
negated (standard negation by De Morgan negates all) they are all ``main``.  Table 2 has no coordinated
column: :func:`table2_clause` folds ``coordinated`` into ``main``.  Every place where the paper
is silent and what we chose is listed in docs/analyze.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

from negbench.errors import NegbenchError

#: Syntactic negation types, the columns of Table 2 (upper part) in its order.
SYNTACTIC_TYPES = ("an-short", "an-long", "mot-short", "mot-long", "malda")
#: Lexical negation types reported with ``lexical=True`` (never counted in Table 2).
LEXICAL_TYPES = ("anida", "prefix")
TYPES = SYNTACTIC_TYPES + LEXICAL_TYPES
#: Fine clause types of a negated predicate; the local ones are negbench's KoNUBench names
#: (:data:`negbench.tasks.konubench.tasks.LOCAL_TYPES`).
CLAUSES = ("main", "adnominal", "adverbial", "noun", "quotation", "subordinate", "coordinated")
#: Clause columns of Table 2 (lower part) in its order.
TABLE2_CLAUSES = ("adnominal", "adverbial", "noun", "quotation", "subordinate", "main")
#: The paper's names (Table 2).
TYPE_NAMES = {
    "an-short": "안 short-form",
    "an-long": "안 long-form",
    "mot-short": "못 short-form",
    "mot-long": "못 long-form",
    "malda": "말다",
    "anida": "아니다 (lexical)",
    "prefix": "negative prefix (lexical)",
}
#: Type labels of the release's ``sn_절*`` / ``ln_절*`` fields → ours (``어휘적`` = lexical antonym,
#: which no rule here can see).
RELEASE_TYPES = {
    "안 단형": "an-short",
    "안 장형": "an-long",
    "못 단형": "mot-short",
    "못 장형": "mot-long",
    "말다": "malda",
    "아니다": "anida",
    "어휘적": "antonym",
}

_PRED = {"VV", "VA", "VX", "VCP", "VCN", "XSV", "XSA"}
_STEM_NOUN = {"NNG", "NNP", "XR", "SL", "SH", "NR", "SN"}
_NEG_PREFIX = {"부", "불", "비", "미", "무", "몰"}
_QUOTE_EC = ("다고", "라고", "냐고", "자고", "다며", "라며", "다면서", "라면서", "냐며")
_QUOTE_ETM = ("다는", "라는", "냐는", "자는")
_COORD_EC = {"고", "며", "으며", "지만", "나", "으나", "거나", "든지", "든가", "되", "으되"}
_ADVERB_EC = {
    "게",
    "도록",
    "듯이",
    "듯",
    "게끔",
    "다시피",
    "어",
    "아",
    "여",
    "어서",
    "아서",
    "여서",
    "면서",
    "으면서",
}
#: Dependent nouns of periphrastic predicates: ``-ㄹ 것이다``, ``-ㄹ 수 없다``, ``-ㄴ 적이 있다`` …
_PERIPH_NOUN = {
    "것",
    "수",
    "적",
    "줄",
    "터",
    "뻔",
    "법",
    "리",
    "모양",
    "셈",
    "척",
    "체",
    "양",
    "따름",
    "뿐",
    "듯",
    "만",
}
_PERIPH_PRED = {"이", "있", "없", "같", "하", "되", "아니"}
_PARTICLE = {"JX", "JKS", "JKC", "JKO"}
_OPEN, _CLOSE = set("([{（［｛〔"), set(")]}）］｝〕")


def table2_clause(clause: str) -> str:
    """Table 2's clause column of a fine clause type: a negated clause of a coordinated sentence
    is a main clause there (the table has no coordinated column)."""
    return "main" if clause == "coordinated" else clause


@dataclass(frozen=True)
class NegationHit:
    """One negation: its type, the negated predicate's span (character offsets into the
    sentence, ``start`` inclusive, ``end`` exclusive, up to and including the ending that decides
    the clause type), that ending, and the clause type."""

    type: str
    marker: str
    start: int
    end: int
    text: str
    predicate: str
    ending: str | None
    clause: str
    #: Nothing predicative but a copula follows (``…옳지 않은 것은?``, ``…아닌 것은 무엇인가?``):
    #: the negation is in the sentence's last predicate — what a KMMLU question asks about.
    final: bool = False

    @property
    def syntactic(self) -> bool:
        return self.type in SYNTACTIC_TYPES

    @property
    def table2_clause(self) -> str:
        return table2_clause(self.clause)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["table2_clause"] = self.table2_clause
        return d


@dataclass(frozen=True)
class _Tok:
    form: str
    tag: str
    start: int
    end: int


@lru_cache(maxsize=1)
def _kiwi():
    from negbench.errors import require

    kiwipiepy = require("kiwipiepy")
    return kiwipiepy.Kiwi()


def analyser_version() -> str:
    """Which Kiwi did the analysis (recorded with every statistics file)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"kiwipiepy {version('kiwipiepy')} (model {version('kiwipiepy_model')})"
    except PackageNotFoundError:  # pragma: no cover - depends on the environment
        return "kiwipiepy (version unknown)"


def _tokens(raw) -> list[_Tok]:
    return [_Tok(t.form, t.tag.split("-")[0], t.start, t.start + t.len) for t in raw]


class KoNegationDetector:
    """Finds negations in Korean sentences (one sentence per call; split text first — the paper
    used KSS ``split_sentences``)."""

    def __init__(self, *, lexical: bool = False, kiwi=None):
        self.lexical = lexical
        self._kiwi_obj = kiwi

    @property
    def kiwi(self):
        if self._kiwi_obj is None:
            self._kiwi_obj = _kiwi()
        return self._kiwi_obj

    def detect(self, sentence: str) -> list[NegationHit]:
        """The negations of one sentence, in text order."""
        return next(iter(self.detect_many([sentence])))

    def detect_many(self, sentences: Iterable[str]) -> Iterator[list[NegationHit]]:
        """:meth:`detect` over many sentences (Kiwi analyses them in one batch)."""
        batch: list[str] = []
        for s in sentences:
            if not isinstance(s, str):
                raise NegbenchError(
                    f"expected a sentence as text, got {type(s).__name__} {s!r:.60}",
                    fix="pass str sentences",
                )
            batch.append(s)
            if len(batch) == 256:
                yield from self._batch(batch)
                batch = []
        if batch:
            yield from self._batch(batch)

    def _batch(self, batch: list[str]) -> Iterator[list[NegationHit]]:
        todo = [i for i, s in enumerate(batch) if s.strip()]
        out: list[list[NegationHit]] = [[] for _ in batch]
        if todo:
            for i, raw in zip(todo, self.kiwi.tokenize([batch[i] for i in todo])):
                out[i] = detect_tokens(batch[i], _tokens(raw), lexical=self.lexical)
        yield from out


# -- the rules -----------------------------------------------------------------------------------
def _long_aux(toks: Sequence[_Tok], i: int) -> tuple[str, int, int] | None:
    """``toks[i]`` is ``-지`` (EC): (type, marker index, last aux index) of a negative auxiliary
    after it (a particle may intervene), else None."""
    j = i + 1
    while j < len(toks) and j <= i + 2 and toks[j].tag in ("JX", "JKO"):
        j += 1
    if j >= len(toks) or toks[j].start - toks[j - 1].end > 1:
        return None
    t = toks[j]
    if t.form in ("않", "아니하") and t.tag in ("VX", "VV", "VA"):
        return "an-long", j, j
    if t.form == "못하" and t.tag in ("VX", "VV", "VA"):
        return "mot-long", j, j
    if (
        t.form == "못"
        and t.tag == "MAG"
        and j + 1 < len(toks)
        and toks[j + 1].form == "하"
        and toks[j + 1].tag in ("XSV", "VV", "VX")
    ):
        return "mot-long", j, j + 1
    if t.form == "말" and t.tag in ("VX", "VV"):
        return "malda", j, j
    return None


def _is_long_ji(toks: Sequence[_Tok], i: int) -> bool:
    return (
        toks[i].form == "지" and toks[i].tag == "EC" and i > 0 and toks[i - 1].tag in _PRED | {"EP"}
    )


def _stem_start(toks: Sequence[_Tok], k: int) -> int:
    """Index of the first morpheme of the predicate whose last stem morpheme is ``toks[k]``
    (a ``noun + 하다`` predicate starts at its noun, a prefixed one at its prefix)."""
    while k > 0 and toks[k].tag in ("EP", "XSV", "XSA") and toks[k - 1].end >= toks[k].start:
        k -= 1
    if (
        k > 0
        and toks[k].tag in _STEM_NOUN
        and toks[k - 1].tag == "XPN"
        and toks[k - 1].end == toks[k].start
    ):
        k -= 1
    return k


def _short_pred_end(toks: Sequence[_Tok], j: int) -> int | None:
    """The predicate's last stem index when a predicate starts at ``toks[j]`` (after 안/못)."""
    n = len(toks)
    if j >= n:
        return None
    if toks[j].tag in ("VV", "VA", "VX") or (
        toks[j].form == "하" and toks[j].tag in ("XSV", "XSA")
    ):
        k = j  # 못했다 may come out as 못 + 하/XSV
    elif (
        toks[j].tag in _STEM_NOUN
        and j + 1 < n
        and toks[j + 1].tag in ("XSV", "XSA")
        and toks[j + 1].start <= toks[j].end
    ):
        k = j + 1
    else:
        return None
    while k + 1 < n and toks[k + 1].tag in ("XSV", "XSA") and toks[k + 1].start <= toks[k].end:
        k += 1
    return k


def _next_word(toks: Sequence[_Tok], k: int, skip: set[str]) -> int:
    while k < len(toks) and toks[k].tag in skip:
        k += 1
    return k


def _clause(toks: Sequence[_Tok], k: int) -> tuple[str, int | None]:
    """Clause type of a predicate whose next unread morpheme is ``toks[k]``, and the index of the
    ending that decided it (None: the text ends without one, read as a main clause)."""
    n = len(toks)
    while True:
        while k < n and toks[k].tag == "EP":
            k += 1
        if k >= n:
            return "main", None
        t = toks[k]
        if t.tag == "EF":
            nxt = _next_word(toks, k + 1, {"SSC", "SS", "SSO", "SE"})
            if nxt < n and (
                toks[nxt].tag == "JKQ" or (toks[nxt].tag == "EC" and toks[nxt].form == "고")
            ):
                return "quotation", k
            return "main", k
        if t.tag == "ETN":
            return "noun", k
        if t.tag == "ETM":
            if t.form.endswith(_QUOTE_ETM):
                return "quotation", k
            after = _periphrastic(toks, k)
            if after is not None:
                k = after
                continue
            return "adnominal", k
        if t.tag == "EC":
            after = _continuation(toks, k)
            if after is not None:
                k = after
                continue
            f = t.form.lstrip("ᆫᆯᆷ")
            if f.endswith(_QUOTE_EC):
                return "quotation", k
            if f in _COORD_EC:
                return "coordinated", k
            if f in _ADVERB_EC:
                return "adverbial", k
            return "subordinate", k
        if t.tag in _PRED:
            k += 1
            continue
        return "main", None


def _periphrastic(toks: Sequence[_Tok], k: int) -> int | None:
    """After an adnominal ending at ``k``: the index past ``것이다`` / ``수 없다`` / ``것 같다`` …
    when the adnominal clause is only the first half of such a periphrastic predicate."""
    n = len(toks)
    j = k + 1
    if j >= n or toks[j].tag != "NNB" or toks[j].form not in _PERIPH_NOUN:
        return None
    j += 1
    while j < n and toks[j].tag in _PARTICLE and j <= k + 3:
        j += 1
    if (
        j < n
        and toks[j].form in _PERIPH_PRED
        and toks[j].tag in ("VCP", "VA", "VV", "VX", "XSV", "XSA", "VCN")
    ):
        return j + 1
    return None


def _continuation(toks: Sequence[_Tok], k: int) -> int | None:
    """After a connective at ``k``: the index past an auxiliary predicate that carries the clause
    on (``-고 있다``, ``-어 버리다``, ``-게 되다``, ``-어야 하다``, ``-지 않다`` …), else None."""
    n = len(toks)
    j = k + 1
    while j < n and toks[j].tag == "JX" and j <= k + 2:
        j += 1
    if j >= n or toks[j].start - toks[j - 1].end > 1:
        return None
    f, t = toks[k].form, toks[j]
    if f == "지" and t.form == "못" and t.tag == "MAG" and j + 1 < n and toks[j + 1].form == "하":
        return j + 2
    if t.tag == "VX":
        return j + 1
    if f == "게" and t.form in ("되", "하", "만들") and t.tag == "VV":
        return j + 1
    if f.endswith("야") and t.form in ("하", "되") and t.tag in ("VV", "XSV"):
        return j + 1
    if f == "고" and t.form in ("있", "싶") and t.tag in ("VV", "VA"):
        return j + 1
    return None


def _hit(
    sentence: str,
    toks: Sequence[_Tok],
    typ: str,
    marker: int,
    first: int,
    pred: tuple[int, int],
    after: int,
) -> tuple[NegationHit, int | None]:
    """``first``: where the span starts; ``pred``: the negated predicate's stem morphemes;
    ``after``: the first morpheme after the negation (where the clause type is read)."""
    clause, end_idx = _clause(toks, after)
    stop = end_idx if end_idx is not None else after - 1
    start, end = toks[first].start, toks[min(stop, len(toks) - 1)].end
    stem = "".join(t.form for t in toks[pred[0] : pred[1] + 1] if t.tag != "EP")
    return NegationHit(
        type=typ,
        marker=toks[marker].form,
        start=start,
        end=end,
        text=sentence[start:end],
        predicate=stem + "다",
        ending=toks[end_idx].form if end_idx is not None else None,
        clause=clause,
        final=_final(toks, stop),
    ), end_idx


def _final(toks: Sequence[_Tok], k: int) -> bool:
    """No predicate but a copula after ``toks[k]``, nor is ``toks[k]`` inside brackets:
    a bracketed remark (``(단, …는 고려하지 않는다.)``) is not the sentence's last predicate."""
    depth = [0] * (len(toks) + 1)
    for i, t in enumerate(toks):
        depth[i + 1] = max(0, depth[i] + (t.form in _OPEN) - (t.form in _CLOSE))
    if depth[k + 1] > 0:
        return False
    return not any(
        t.tag in _PRED and t.tag != "VCP" and depth[i + 1] == 0 for i, t in enumerate(toks) if i > k
    )


def _hangul_before(sentence: str, pos: int) -> bool:
    """A Hangul syllable right before ``pos``: 안/못 inside a word (``병안하목``) is no adverb."""
    return pos > 0 and "\uac00" <= sentence[pos - 1] <= "\ud7a3"


def detect_tokens(
    sentence: str, toks: Sequence[_Tok], *, lexical: bool = False
) -> list[NegationHit]:
    """The negations in one analysed sentence (see the module docstring for the rules)."""
    found: list[tuple[NegationHit, int | None]] = []
    used_mag: set[int] = set()
    for i, t in enumerate(toks):
        if _is_long_ji(toks, i):
            aux = _long_aux(toks, i)
            if aux is not None:
                typ, m, last = aux
                if toks[m].tag == "MAG":
                    used_mag.add(m)
                first = _stem_start(toks, i - 1)
                found.append(_hit(sentence, toks, typ, m, first, (first, i - 1), last + 1))
        elif (
            t.tag == "MAG"
            and t.form in ("안", "못")
            and i not in used_mag
            and not _hangul_before(sentence, t.start)
        ):
            k = _short_pred_end(toks, i + 1)
            if k is not None:
                typ = "an-short" if t.form == "안" else "mot-short"
                found.append(_hit(sentence, toks, typ, i, i, (i + 1, k), k + 1))
        elif lexical and t.tag == "VCN" and t.form == "아니":
            first = i - 1 if i > 0 and toks[i - 1].tag in ("JKC", "JKS") else i
            found.append(_hit(sentence, toks, "anida", i, first, (i, i), i + 1))
        elif (
            lexical
            and t.tag == "XPN"
            and t.form in _NEG_PREFIX
            and i + 2 < len(toks)
            and toks[i + 1].tag in ("NNG", "XR")
            and toks[i + 2].tag in ("XSA", "XSV")
            and toks[i + 1].start == t.end
        ):
            found.append(_hit(sentence, toks, "prefix", i, i, (i, i + 2), i + 3))
    found.sort(key=lambda h: (h[0].start, h[0].end))
    return _coordination(toks, found)


def _coordination(
    toks: Sequence[_Tok], found: list[tuple[NegationHit, int | None]]
) -> list[NegationHit]:
    """Relabel main-clause hits: ``coordinated`` when exactly one of several main clauses is
    negated, ``main`` when all are or two or more are (standard negation negates every one, by De
    Morgan, but one of them may be negated lexically — 없다, an antonym — which no rule here sees,
    and a ``-고``/``-며`` inside an embedded clause looks like one more main clause)."""
    if not found:
        return []
    last_ef = max((i for i, t in enumerate(toks) if t.tag == "EF"), default=None)
    final = last_ef if last_ef is not None else -1
    mains = {final}
    for i, t in enumerate(toks):
        if (
            t.tag == "EC"
            and t.form in _COORD_EC
            and 0 < i < len(toks) - 1
            and (last_ef is None or i < last_ef)
            and toks[i - 1].tag in _PRED | {"EP"}
            and _continuation(toks, i) is None
        ):
            mains.add(i)
    negated = set()
    for h, idx in found:
        if h.clause in ("main", "coordinated"):
            negated.add(final if (idx is None or h.clause == "main") else idx)
    partial = len(mains) >= 2 and not mains <= negated and len(negated) < 2
    out = []
    for h, idx in found:
        if h.clause in ("main", "coordinated"):
            h = NegationHit(**{**asdict(h), "clause": "coordinated" if partial else "main"})
        out.append(h)
    return out


def sentence_label(hits: Sequence[NegationHit]) -> NegationHit | None:
    """The one hit a negated sentence is counted under in Table 2 (which counts each of its 3,160
    sentences once): the first syntactic hit in a main clause, else the first syntactic hit."""
    syn = [h for h in hits if h.syntactic]
    if not syn:
        return None
    return next((h for h in syn if h.table2_clause == "main"), syn[0])
