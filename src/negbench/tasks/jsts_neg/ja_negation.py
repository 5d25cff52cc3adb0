"""Rule-based insertion of one Japanese negation cue (ない / ず) per candidate word.

This is the cue-addition step of JNLI-Neg (Yoshida et al. 2025) that JSTS-Neg reuses (§3.2.1):
a sentence is analysed with MeCab + UniDic (here fugashi + unidic-lite), and every verb,
adjective or adjectival noun that the rules below can negate yields *one* new sentence with a
single cue, re-inflecting its neighbours where needed::

    走っている → 走っていない        停まっています → 停まっていません
    取り付けられた → 取り付けられなかった   高い → 高くない      静かな → 静かでない

A candidate's index in the sentence's list is its ``neg_id`` (JNLI-Neg's
``neg_id_in_jnli_sentence``). Candidates are produced in the order of the morpheme that triggers
them, and every trigger the JNLI-Neg rules fire on gives a candidate slot, so ids line up with the
release; where those rules would emit a garbled string (a bug in the reference, e.g. the prefix
duplicated for 「あった」+ noun) the slot is kept and the string is written correctly.

``neg_position`` follows the release's convention: ``end`` when the rewritten morpheme is the last
word before the final punctuation, otherwise ``mid`` — so a sentence-final 〜ませんでした or
〜なかった (whose last word is た) counts as ``mid``, exactly as in JNLI-Neg v1.1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

NegPosition = Literal["end", "mid"]
TargetPos = Literal["動詞", "形容詞", "形容動詞"]

#: 五段 verbs: final kana of the dictionary form → its あ-row (未然形) kana.
A_ROW = {
    "う": "わ",
    "つ": "た",
    "る": "ら",
    "む": "ま",
    "ぶ": "ば",
    "ぬ": "な",
    "ぐ": "が",
    "す": "さ",
    "く": "か",
}


@dataclass(frozen=True)
class Morph:
    """One UniDic morpheme (the fields the rules read)."""

    surface: str
    pos1: str
    pos2: str
    ctype: str
    cform: str
    lemma: str
    orth: str
    orth_base: str

    @property
    def base(self) -> str:
        """Dictionary form as written (UniDic orthBase), the stem the rules inflect."""
        return self.orth_base or self.surface


@dataclass(frozen=True)
class Edit:
    """Replace morphemes ``start:end`` by ``text``; ``trigger`` is the morpheme the rule fired on."""

    start: int
    end: int
    text: str
    trigger: int
    target_pos: TargetPos
    rule: str


@dataclass(frozen=True)
class Candidate:
    """One negated version of a sentence (one cue)."""

    neg_id: int
    sentence: str
    target_pos: TargetPos
    neg_position: NegPosition
    rule: str
    trigger: int


# -- text normalisation and analysis -------------------------------------------------------------
def normalize(sentence: str) -> str:
    """The clean-up JNLI-Neg applies before analysis (full-width space, half-width and doubled
    full stops), so that e.g. JSTS's 「…。。」 ends in one 。."""
    return sentence.replace("\u3000", " ").replace("｡", "。").replace("。。", "。")


@functools.lru_cache(maxsize=1)
def _tagger():
    try:
        import fugashi
        import unidic_lite
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from negbench.errors import NegbenchError

        raise NegbenchError(
            "Japanese morphological analysis needs fugashi and unidic-lite",
            fix="pip install 'negbench[multilingual]' (fugashi, unidic-lite)",
        ) from exc
    import os

    rc = os.path.join(unidic_lite.DICDIR, "mecabrc")
    return fugashi.Tagger(f'-d "{unidic_lite.DICDIR}" -r "{rc}"')


def dictionary_version() -> str:
    """Which UniDic the analysis used (recorded with every built stage)."""
    import os
    import unidic_lite

    with open(os.path.join(unidic_lite.DICDIR, "version"), encoding="utf-8") as f:
        return "unidic-lite " + f.read().strip()


@functools.lru_cache(maxsize=65536)
def analyze(sentence: str) -> tuple[Morph, ...]:
    """Morphemes of ``sentence`` (not normalised here)."""
    out = []
    for w in _tagger()(sentence):
        f = w.feature

        def g(name: str) -> str:
            v = getattr(f, name, None)
            return "" if v in (None, "*") else v

        out.append(
            Morph(
                w.surface,
                g("pos1"),
                g("pos2"),
                g("cType"),
                g("cForm"),
                g("lemma"),
                g("orth"),
                g("orthBase"),
            )
        )
    return tuple(out)


# -- negation detection (neg(s) of §3.2.2) -------------------------------------------------------
_NEG_AUX = {"ない", "ず", "ぬ"}
_NEG_PREFIX = {"未", "無", "不", "非"}
_NEG_WORDS = {"無い", "無し", "無くなる", "無地"}


def negation_cues(sentence: str) -> list[str]:
    """Negation cues already in a sentence: auxiliaries ない/ず/ぬ(ん), the adjective 無い and
    words built on it, and the prefixes 未/無/不/非 — the kinds the cue detector of Yuasa et al.
    (2025) reports in JNLI (see the JNLI-Neg construction logs)."""
    cues = []
    for m in analyze(normalize(sentence)):
        if (
            (m.pos1 == "助動詞" and m.lemma in _NEG_AUX)
            or m.lemma in _NEG_WORDS
            or (m.pos1 == "接頭辞" and m.lemma in _NEG_PREFIX)
        ):
            cues.append(m.surface)
    return cues


def has_negation(sentence: str) -> bool:
    return bool(negation_cues(sentence))


# -- the rules -----------------------------------------------------------------------------------
def _plain_negative(m: Morph) -> str | None:
    """ない-form of a verb in its dictionary (終止/連体) form."""
    b, ct = m.base, m.ctype
    if ct[:3] in ("上一段", "下一段"):
        return b[:-1] + "ない"
    if b.endswith("ある"):
        return b[:-2] + "ない"
    if b.endswith("有る"):
        return b[:-2] + "無い"
    if ct.startswith("五段"):
        return b[:-1] + A_ROW[b[-1]] + "ない" if b and b[-1] in A_ROW else None
    if ct == "カ行変格":
        return "来ない"
    if "サ行変格" in ct:
        return "しない"
    return None


def _past_negative(m: Morph) -> tuple[str, bool] | None:
    """なかっ-form of a verb in 連用形 before past た/だ: (text, whether it absorbs だ)."""
    b, ct, cf = m.base, m.ctype, m.cform
    if cf == "連用形-イ音便":
        if ct == "五段-カ行":
            return b[:-1] + "かなかっ", False
        if ct.startswith("五段-ガ行"):  # 泳いだ → 泳がなかった
            return b[:-1] + "がなかった", True
        return None
    if cf == "連用形-ウ音便":
        return b[:-1] + "わなかっ", False
    if cf == "連用形-促音便":
        if ct == "五段-ワア行":
            return b[:-1] + "わなかっ", False
        if ct.startswith("五段-タ行"):
            return b[:-1] + "たなかっ", False
        if b.endswith("ある"):
            return b[:-2] + "なかっ", False
        if b.endswith("有る"):
            return b[:-2] + "無かっ", False
        if ct.startswith("五段-ラ行"):
            return b[:-1] + "らなかっ", False
        if ct.startswith("五段-カ行"):  # 行った → 行かなかった
            return b[:-1] + "かなかっ", False
        return None
    if cf == "連用形-撥音便":  # 飛んだ → 飛ばなかった
        for row, kana in (("五段-マ行", "ま"), ("五段-ナ行", "な"), ("五段-バ行", "ば")):
            if ct.startswith(row):
                return b[:-1] + kana + "なかった", True
        return None
    if cf.startswith("連用形"):
        if ct[:3] in ("上一段", "下一段"):
            return b[:-1] + "なかっ", False
        if ct.startswith("五段-サ行"):
            return b[:-1] + "さなかっ", False
        if ct == "サ行変格":
            return b[:-2] + "しなかっ", False
    return None


def _te_negative(m: Morph) -> str | None:
    """ず-form replacing a verb + て/で (連用中止: 座って → 座らず; ある + て → なくて)."""
    b, ct = m.base, m.ctype
    if ct[:3] in ("上一段", "下一段"):
        return b[:-1] + "ず"
    if b.endswith("ある"):
        return b[:-2] + "なくて"
    if b.endswith("有る"):
        return b[:-2] + "無くて"
    if ct.startswith("五段"):
        return b[:-1] + A_ROW[b[-1]] + "ず" if b and b[-1] in A_ROW else None
    if ct == "カ行変格":
        return "来ず"
    if ct == "サ行変格":
        return "せず"
    return None


def _adjective_base(m: Morph) -> str:
    """Stem + い of an adjective; いい has no く-form of its own (→ よく)."""
    return "よい" if m.base in ("いい", "良い") and m.surface.startswith("い") else m.base


def rule_at(ms: tuple[Morph, ...] | list[Morph], i: int) -> Edit | None:
    """The edit the rules make when they fire on morpheme ``i`` (None when they do not)."""
    m = ms[i]
    nxt = ms[i + 1] if i + 1 < len(ms) else None
    prev = ms[i - 1] if i > 0 else None
    if m.pos1 == "動詞":
        if m.cform[:3] in ("終止形", "連体形"):
            t = _plain_negative(m)
            return Edit(i, i + 1, t, i, "動詞", "verb-plain") if t else None
        if nxt is not None and nxt.surface in ("た", "だ"):
            if nxt.cform[:3] == "終止形":
                r = _past_negative(m)
                if r is None:
                    return None
                text, absorb = r
                return Edit(i, i + 2 if absorb else i + 1, text, i, "動詞", "verb-past")
            return None  # 連体形 た: handled at the た
        if nxt is not None and nxt.surface in ("て", "で"):
            t = _te_negative(m)
            return Edit(i, i + 2, t, i, "動詞", "verb-te") if t else None
        return None
    if m.pos1 == "助動詞":
        b = m.base
        if m.ctype == "助動詞-レル" or b in ("させる", "せる"):
            if m.cform[:3] in ("終止形", "連体形"):
                return Edit(i, i + 1, b[:-1] + "ない", i, "動詞", "aux-passive-causative")
            if nxt is not None and nxt.surface == "た":
                return Edit(i, i + 1, b[:-1] + "なかっ", i, "動詞", "aux-passive-causative-past")
            return None
        if m.ctype == "助動詞-マス":
            if m.surface == "ます":
                return Edit(i, i + 1, "ません", i, "動詞", "aux-masu")
            if m.surface == "まし":
                return Edit(i, i + 1, "ませんでし", i, "動詞", "aux-mashita")
            return None  # ませ / ましょ: no cue slot
        if (
            m.ctype == "助動詞-タ"
            and m.cform[:3] == "連体形"
            and prev is not None
            and prev.pos1 == "動詞"
        ):
            if prev.base.endswith("ある"):  # あった + noun → なかった
                return Edit(
                    i - 1, i + 1, prev.base[:-2] + "なかった", i, "動詞", "ta-attributive-aru"
                )
            if prev.base.endswith("有る"):
                return Edit(
                    i - 1, i + 1, prev.base[:-2] + "無かった", i, "動詞", "ta-attributive-aru"
                )
            text = "ていない" if m.orth == "た" else "でいない"  # 走った犬 → 走っていない犬
            return Edit(i, i + 1, text, i, "動詞", "ta-attributive")
        if m.ctype == "助動詞-ダ" and prev is not None and prev.pos1 == "形状詞":
            if m.surface in ("だ", "な"):
                return Edit(i, i + 1, "でない", i, "形容動詞", "adjectival-noun")
            if m.surface == "だっ":
                return Edit(i, i + 1, "でなかっ", i, "形容動詞", "adjectival-noun-past")
        return None
    if m.pos1 == "形容詞" and m.lemma != "無い":
        b = _adjective_base(m)
        if m.cform[:3] in ("終止形", "連体形"):
            return Edit(i, i + 1, b[:-1] + "くない", i, "形容詞", "adjective")
        if m.cform == "連用形-促音便" and nxt is not None and nxt.surface == "た":
            return Edit(i, i + 1, b[:-1] + "くなかっ", i, "形容詞", "adjective-past")
    return None


def last_word_index(ms: tuple[Morph, ...] | list[Morph]) -> int:
    """Index of the last morpheme that is not punctuation or blank."""
    for j in range(len(ms) - 1, -1, -1):
        if ms[j].pos1 not in ("補助記号", "空白"):
            return j
    return len(ms) - 1


def apply_edit(ms: tuple[Morph, ...] | list[Morph], e: Edit) -> str:
    return (
        "".join(m.surface for m in ms[: e.start]) + e.text + "".join(m.surface for m in ms[e.end :])
    )


def candidates(sentence: str) -> list[Candidate]:
    """Every one-cue negation of ``sentence`` (normalised first), in neg_id order."""
    ms = analyze(normalize(sentence))
    end = last_word_index(ms)
    out: list[Candidate] = []
    for i in range(len(ms)):
        e = rule_at(ms, i)
        if e is None:
            continue
        out.append(
            Candidate(
                len(out),
                apply_edit(ms, e),
                e.target_pos,
                "end" if e.trigger == end else "mid",
                e.rule,
                e.trigger,
            )
        )
    return out
