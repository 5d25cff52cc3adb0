"""Exact tokenisation of many texts at a time, by the places where a tokenizer never merges.

Why: a run's prompts repeat most of their characters (a chat template, an instruction, a
context shared by four options), and a Rust tokenizer costs ~30 µs per text plus ~0.5 µs per
token, single-threaded: tokenisation was the largest host cost per request.  Here each distinct
text is tokenised once; the parts every text of a call shares (the longest common prefix and
suffix, cut at a safe place) are tokenised once; the distinct middles are tokenised in a few
calls, joined by a special token; and a continuation's tokens follow its context's when the
join between them is safe.  The ids are exactly the tokenizer's own for every text.

A cut between two characters x | y is *safe* when ``tokens(a + b) == tokens(a) + tokens(b)``
for any ``a`` ending in x and ``b`` starting with y.  That is proved, not sampled, for the two
pipelines the embedded models use (anything else is tokenised whole, one text at a time):

* every pipeline: no added token (special or not) contains "xy", so no added-token match
  crosses the cut; the tokenizer splits its input at added tokens before anything else, so a
  cut at the start or end of an added-token match is a segment boundary and always safe;
* byte-level BPE with the GPT-2 pre-tokenizer regex (SmolLM2, GPT-2): y is whitespace and x is
  not — no alternative of the regex matches across that point, so it is a pre-token boundary,
  and BPE never merges across pre-tokens;
* BPE on whole segments with spaces replaced by "▁" (Gemma 3): no vocabulary token contains
  "xy" (spaces as "▁"); every merge yields a vocabulary token, so no merge crosses the cut and
  both sides merge exactly as they would alone.

Joining texts by a special token S is safe on the same grounds: the tokenizer cuts the joined
string at each S, and each text between is a segment of its own.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import numpy as np

#: Characters a safe cut may have on its right (the whitespace the rules above cover).
CUT_BEFORE = (" ", "\n", "\t", "\r", "\x0b", "\x0c")
#: Texts joined per tokenizer call (one long string per group: the Rust tokenizer is slower on
#: megabyte strings than on a batch of shorter ones).
JOIN = 64
#: The whitespace a safe cut may precede in byte-level pipelines (the rest of what Python calls
#: whitespace may not be whitespace to the tokenizer's regex: texts holding it take the slow way).
_WS = " \t\n\r\x0b\x0c"
_ODD_SPACE = re.compile("[^\\S%s]" % re.escape(_WS))
#: Pieces remembered between calls (words and phrases recur across a run's shards).
CACHE = 1 << 20


class SplitTokenizer:
    """A transformers fast tokenizer's ``add_special_tokens=False`` encoding, computed by safe
    pieces (see the module docstring).  ``kind`` is None for pipelines the rules do not cover:
    those texts are encoded whole (still once per distinct text)."""

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.bt: Any = getattr(tokenizer, "backend_tokenizer", None)
        self.kind: str | None = None
        self._bad: dict[str, set[str]] = {}
        self._added: dict[str, tuple[str, ...]] = {}
        self._added_end: dict[str, tuple[str, ...]] = {}
        self._added_pairs: set[str] = set()
        self._sep: list[tuple[str, int]] = []
        self._cache: dict[str, list[int]] = {}
        self._cuts: Any = None
        try:
            self.kind = self._pipeline()
            self._cuts = self._cut_pattern() if self.kind else None
        except Exception:  # an unusual tokenizer object: whole texts only
            self.kind = None

    # -- what the tokenizer is ------------------------------------------------------------------
    def _pipeline(self) -> str | None:
        bt = self.bt
        if bt is None:
            return None
        model = bt.model
        if type(model).__name__ != "BPE" or getattr(model, "dropout", None):
            return None
        if getattr(model, "ignore_merges", False):
            return None
        if getattr(model, "continuing_subword_prefix", None) or getattr(
            model, "end_of_word_suffix", None
        ):
            return None
        added = list(bt.get_added_tokens_decoder().values())
        if any(a.lstrip or a.rstrip or a.single_word or a.normalized for a in added):
            return None
        norm = _state(bt.normalizer)
        pre = _state(bt.pre_tokenizer)
        if (
            norm is None
            and pre
            and pre.get("type") == "ByteLevel"
            and pre.get("use_regex", True)
            and not pre.get("add_prefix_space", False)
        ):
            kind = "bytelevel"
        elif (
            norm
            and norm.get("type") == "Replace"
            and norm.get("pattern") == {"String": " "}
            and norm.get("content") == "\u2581"
            and (
                pre is None
                or (pre.get("type") == "Split" and pre.get("pattern") == {"String": " "})
            )
        ):
            kind = "spaces"
            if getattr(model, "fuse_unk", False) and not getattr(model, "byte_fallback", False):
                return None
            heads = sorted({_norm(y) for y in CUT_BEFORE})
            self._bad = {y: set() for y in heads}
            vocab = list(bt.get_vocab())
            words = "\x00".join(w for w in vocab if "\x00" not in w)
            # which characters precede a space/newline inside a vocabulary token (one pass in C;
            # tokens holding the separator itself are few and scanned one by one)
            for x, y in re.findall("([^\x00])(?=([%s]))" % _cls(heads), words):
                self._bad[y].add(x)
            for w in (w for w in vocab if "\x00" in w):
                for i in range(1, len(w)):
                    if w[i] in self._bad:
                        self._bad[w[i]].add(w[i - 1])
        else:
            return None
        for a in added:
            c = a.content
            self._added_pairs.update(c[i : i + 2] for i in range(len(c) - 1))
            self._added.setdefault(c[0], ())
            self._added[c[0]] += (c,)
            self._added_end.setdefault(c[-1], ())
            self._added_end[c[-1]] += (c,)
        ids = {a.content: i for i, a in bt.get_added_tokens_decoder().items()}
        for a in added:
            if a.special:
                self._sep.append((a.content, ids[a.content]))
        return kind

    def _cut_pattern(self):
        """A regular expression matching (empty) every safe cut before whitespace: the rules of
        :meth:`safe` as character classes, so a text splits into its safe pieces in C."""
        alts = []
        for y in CUT_BEFORE:
            bad = {p[0] for p in self._added_pairs if p[1] == y}
            if self.kind == "bytelevel":  # x is not whitespace
                alts.append("(?<=[^\\s%s])(?=%s)" % (_cls(bad), re.escape(y)))
            else:
                bad |= {(" " if c == "\u2581" else c) for c in self._bad.get(_norm(y), ())}
                bad |= {"\u2581"} if "\u2581" in self._bad.get(_norm(y), ()) else set()
                alts.append(
                    "(?<=.)(?<![%s])(?=%s)" % (_cls(bad), re.escape(y))
                    if bad
                    else "(?<=.)(?=%s)" % re.escape(y)
                )
        self._fast = None
        if self.kind == "bytelevel" and not any(p[1] in _WS for p in self._added_pairs):
            # no added token holds whitespace: the safe pieces are runs of whitespace then
            # non-whitespace, found by one findall (texts with other whitespace take the split)
            ws = r" \t\n\r\x0b\x0c"
            self._fast = re.compile("[%s]*[^%s]+|[%s]+" % (ws, ws, ws))
        return re.compile("|".join(alts), re.S)

    # -- where texts may be cut -----------------------------------------------------------------
    def safe(self, text: str, i: int) -> bool:
        """Whether ``text`` may be cut before position ``i`` (0 < i < len(text))."""
        x, y = text[i - 1], text[i]
        if x + y in self._added_pairs:
            return False
        if self.kind == "bytelevel":
            if y in CUT_BEFORE and not x.isspace():
                return True
        elif self.kind == "spaces":
            bad = self._bad.get(_norm(y))
            if bad is not None and _norm(x) not in bad:
                return True
        else:
            return False
        return text.startswith(self._added.get(y, ()), i) or text.endswith(
            self._added_end.get(x, ()), 0, i
        )

    def can_split(self, left: str, right: str) -> bool:
        """Whether ``tokens(left + right) == tokens(left) + tokens(right)``."""
        if not left or not right:
            return True
        if self.kind is None:
            return False
        return self.safe(left[-1] + right[0], 1)

    # -- encoding -------------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens added: exactly ``tokenizer(texts,
        add_special_tokens=False)["input_ids"]``."""
        if not texts:
            return []
        uniq = sorted(set(texts))
        if self.kind is None or self.bt.truncation or self.bt.padding or len(uniq) < 2:
            got = self._whole(uniq)
        else:
            got = self._pieces(uniq)
        table = dict(zip(uniq, got))
        return [table[t] for t in texts]

    def _whole(self, texts: list[str]) -> list[list[int]]:
        if not texts:
            return []
        if self.bt is None:
            return self.tok(texts, add_special_tokens=False)["input_ids"]
        enc = getattr(self.bt, "encode_batch_fast", self.bt.encode_batch)
        return [e.ids for e in enc(texts, add_special_tokens=False)]

    def _pieces(self, uniq: list[str]) -> list[list[int]]:
        """Sorted distinct texts: the prefix and suffix all of them share, cut safely, tokenised
        once; the middles in joined groups."""
        first, last = uniq[0], uniq[-1]
        common = _common_prefix(first, last)
        suffix = first
        for t in uniq:
            if not t.endswith(suffix):
                suffix = suffix[len(suffix) - _common_suffix(t, suffix) :]
        p = 0
        for i in range(min(common, len(first) - 1), 0, -1):  # last safe cut inside the prefix
            if self.safe(first, i) and self._inside(first, i, 0, common):
                p = i
                break
        k = 0
        n = len(first)
        for j in range(max(1, len(suffix) - 1), 0, -1):  # first safe cut inside the suffix
            i = n - j
            if i > p and self.safe(first, i) and self._inside(first, i, n - len(suffix), n):
                k = j
                break
        head = self._whole([first[:p]])[0] if p else []
        tail = self._whole([first[n - k :]])[0] if k else []
        mids, whole = [], []
        for t in uniq:
            if len(t) - k >= p:
                mids.append(t[p : len(t) - k])
            else:
                whole.append(t)
        mid_ids = dict(zip(mids, self._by_pieces(mids)))
        out = []
        short = dict(zip(whole, self._whole(whole))) if whole else {}
        for t in uniq:
            if t in short:
                out.append(short[t])
            else:
                out.append(head + mid_ids[t[p : len(t) - k]] + tail)
        return out

    def _inside(self, text: str, i: int, lo: int, hi: int) -> bool:
        """A cut justified by the characters of ``text[lo:hi]`` only (the part every text of
        the call shares): both neighbours inside, and an added-token boundary found inside."""
        if not (lo < i < hi):
            return False
        if self.kind == "bytelevel" and text[i] in CUT_BEFORE and not text[i - 1].isspace():
            return True
        if (
            self.kind == "spaces"
            and _norm(text[i]) in self._bad
            and _norm(text[i - 1]) not in self._bad[_norm(text[i])]
        ):
            return True
        return any(
            text.startswith(c, i) and i + len(c) <= hi for c in self._added.get(text[i], ())
        ) or any(
            text.endswith(c, 0, i) and i - len(c) >= lo
            for c in self._added_end.get(text[i - 1], ())
        )

    def _by_pieces(self, mids: list[str]) -> list[list[int]]:
        """Each text cut at every safe cut before whitespace (words, or runs of them), each
        distinct piece tokenised once (and remembered for later calls)."""
        cache = self._cache
        split = self._cuts.split
        if self._fast is not None:
            fast, odd = self._fast.findall, _ODD_SPACE.search
            pieces = [split(m) if odd(m) else fast(m) for m in mids]
        else:
            pieces = [split(m) for m in mids]
        new = list({p: None for ps in pieces for p in ps if p not in cache})
        if new:
            if len(cache) + len(new) > CACHE:
                cache.clear()
            cache.update(zip(new, self._joined(new)))
        chain = itertools.chain.from_iterable
        get = cache.__getitem__
        return [list(chain(map(get, ps))) for ps in pieces]

    def _joined(self, mids: list[str]) -> list[list[int]]:
        """Distinct middles tokenised in groups joined by a special token none of them holds."""
        if not mids:
            return []
        sep = next(((s, i) for s, i in self._sep if not any(s in m for m in mids)), None)
        if sep is None:
            return self._whole(mids)
        s, sid = sep
        pairs = self._added_pairs
        ok = [not m or (m[-1] + s[0] not in pairs and s[-1] + m[0] not in pairs) for m in mids]
        alone = [m for m, good in zip(mids, ok) if not good]
        joinable = [m for m, good in zip(mids, ok) if good]
        res: dict[str, list[int]] = dict(zip(alone, self._whole(alone))) if alone else {}
        groups = [s.join(joinable[g : g + JOIN]) for g in range(0, len(joinable), JOIN)]
        encode = getattr(self.bt, "encode_batch_fast", self.bt.encode_batch)
        for g, enc in enumerate(encode(groups, add_special_tokens=False)):
            ids = enc.ids
            arr = np.asarray(ids, dtype=np.int64)
            cuts = np.flatnonzero(arr == sid).tolist()
            part = joinable[g * JOIN : (g + 1) * JOIN]
            if len(cuts) != len(part) - 1:  # not what the rules promise: be safe
                res.update(zip(part, self._whole(part)))
                continue
            bounds = [-1] + cuts + [len(ids)]
            for j, m in enumerate(part):
                res[m] = ids[bounds[j] + 1 : bounds[j + 1]]
        return [res[m] for m in mids]


def _cls(chars) -> str:
    """A regular-expression character class body matching exactly ``chars``."""
    return "".join(re.escape(c) for c in sorted(chars))


def _norm(c: str) -> str:
    return "\u2581" if c == " " else c


def _state(component) -> dict | None:
    if component is None:
        return None
    return json.loads(component.__getstate__())


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on slices (compared in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo
