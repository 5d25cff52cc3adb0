"""Negation minimal pairs (JSTS-Neg §3.3 / §4.2; JNLI-Neg): pairs, metrics, shot selection, and the
record checks both loaders share.

**Instances.**  Every instance of JSTS-Neg and JNLI-Neg belongs to a *group* (the source JSTS / JNLI
instance it was derived from) and carries, for each of its two sentences, either no added
negation cue or the id of the cue-inserted variant of that sentence (``neg_id_in_*_sentence``).
An instance is therefore identified within its group by the key ``(s1_neg_id, s2_neg_id)``:
``(None, None)`` is the original (D_orig), ``(a, None)`` / ``(None, b)`` are D1 / D2, ``(a, b)`` is
D12.

**Pairs** (§3.3).  ``M = M_single ∪ M_both`` with

* ``M_single = {(i, i') | i ∈ D_orig, i' ∈ D1(i) ∪ D2(i)}`` — the original and each single-negated
  instance of its group;
* ``M_both = {(i', i'') | i' ∈ D1(i), i'' ∈ D2(i')} ∪ {(i', i'') | i' ∈ D2(i), i'' ∈ D1(i')}`` —
  a single-negated instance and each doubly negated instance that keeps its cue and adds one to
  the other sentence.

Both are "the treatment is the control with one cue added to one sentence": control
``(None, b)`` → treatment ``(a, b)`` or control ``(a, None)`` → treatment ``(a, b)``, in the same
group.  :func:`derive_pairs` builds exactly these (on JNLI-Neg v1.1 it finds the release's 6,735
train / 1,722 valid pairs).  ``M_i`` holds the pairs whose gold changed (``l ≠ l'``), ``M_u`` the
others.

**Metrics** (§4.2), literally: ``Acc = 1/|M| Σ_{(c, t) ∈ M} 1[ĉ = c]``,
``Acc' = 1/|M| Σ 1[t̂ = t]``, ``AccChg = Acc' − Acc`` — sums over *pairs*, so an instance counts once
per pair it belongs to: the original of a group with three single-negated variants counts three
times in ``Acc``; a single-negated instance is the treatment of one pair and the control of
others; a doubly negated instance is the treatment of two pairs.  The same on ``M_i`` and ``M_u``.
They are pure functions of per-sample records whose ``meta`` holds ``group``, ``s1_neg_id``,
``s2_neg_id`` and ``gold`` (and optionally ``s1_neg`` / ``s2_neg`` dicts with ``neg_position`` and
``target_pos`` for the breakdown by the added cue); the correctness field is ``exact_match``
(generation) or ``acc`` (log-likelihood).  Pairs whose two instances are not both in the records
(``--limit``) are left out; the unit reports how many pairs it scored.

**Shots** (§4.1): :class:`StratifiedShots` — ``k // 2`` shots from D_orig and ``k − k // 2`` from
D_neg of the few-shot split, the shots taken from one part having pairwise different gold labels,
one draw per (task, seed) used for every evaluated instance.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Iterator, Sequence

from negbench.errors import DataError, TaskError
from negbench.scoring.metrics import mean
from negbench.scoring.task import Structure

#: Pair sets with flat metric keys (``M.acc``, ``Mi.acc_prime``, ``Msingle.acc_chg``, …).
PAIR_SETS = ("M", "Mi", "Mu", "Msingle", "Mboth")
#: The three sets of the paper's Tables 3–5.
PAPER_SETS = ("M", "Mi", "Mu")
SET_TITLES = {"M": "M", "Mi": "M_i", "Mu": "M_u", "Msingle": "M_single", "Mboth": "M_both"}


# -- pairs ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    """One negation minimal pair: indices (into the record list) of its control and treatment."""

    control: int
    treatment: int
    kind: str  # "single" (control is the original) or "both" (treatment is doubly negated)
    added: str  # the sentence that received the cue: "s1" or "s2"
    changed: bool  # gold label / score differs (M_i) or not (M_u)


def instance_key(meta: dict) -> tuple[str, Any, Any]:
    """(group, s1_neg_id, s2_neg_id) of an instance record's ``meta``."""
    return str(meta["group"]), meta.get("s1_neg_id"), meta.get("s2_neg_id")


def derive_pairs(metas: Sequence[dict]) -> list[Pair]:
    """All minimal pairs among instances given by their ``meta`` dicts (in order of the treatment,
    then of the control).  An instance key occurring twice pairs each occurrence (the loaders
    reject such duplicates)."""
    index: dict[tuple, list[int]] = {}
    for i, m in enumerate(metas):
        index.setdefault(instance_key(m), []).append(i)
    pairs = []
    for t, m in enumerate(metas):
        g, a, b = instance_key(m)
        controls = []
        if a is not None:  # the cue of s1 is the added one
            controls.append(("s1", (g, None, b)))
        if b is not None:  # the cue of s2 is the added one
            controls.append(("s2", (g, a, None)))
        for added, key in controls:
            for c in index.get(key, ()):
                kind = "single" if key[1] is None and key[2] is None else "both"
                pairs.append(Pair(c, t, kind, added, metas[c]["gold"] != m["gold"]))
    return pairs


def pair_correct(r: dict, key: str) -> float:
    v = r.get(key)
    return float(bool(v)) if v is not None and not (isinstance(v, float) and math.isnan(v)) else 0.0


def correctness_key(records: Sequence[dict], key: str | None = None) -> str:
    """``key`` or, by default, ``exact_match`` when the records carry it (generation), else ``acc``."""
    if key:
        return key
    return "exact_match" if records and "exact_match" in records[0] else "acc"


def pair_accuracy(records: Sequence[dict], pairs: Iterable[Pair], key: str) -> dict:
    """``acc`` (controls), ``acc_prime`` (treatments), ``acc_chg`` and ``n`` over ``pairs``
    (NaN when there is none)."""
    ps = list(pairs)
    acc = mean([pair_correct(records[p.control], key) for p in ps])
    acc_p = mean([pair_correct(records[p.treatment], key) for p in ps])
    return {"acc": acc, "acc_prime": acc_p, "acc_chg": acc_p - acc, "n": len(ps)}


#: A subset keeps whole groups (an original instance and every negated variant of it), so each
#: minimal pair is evaluated with both its instances.
STRUCTURE = Structure(
    unit=("group",), unit_name="group of minimal pairs", units_name="groups of minimal pairs"
)
#: The papers' headline: AccChg on all minimal pairs (JSTS-Neg Tables 3-5).
HEADLINE = "M.acc_chg"


def acc_chg_parts(mode: str, records: Sequence[dict]) -> dict[Hashable, tuple[float, float]]:
    """AccChg on ``M`` per group: (Σ over its pairs of treatment − control correctness, pairs);
    the headline's 95 % interval resamples whole groups."""
    records = list(records)
    k = correctness_key(records)
    out: dict[Hashable, tuple[float, float]] = {}  # (group,) -> (sum, pairs)
    for p in derive_pairs([r["meta"] for r in records]):
        g = (str(records[p.treatment]["meta"]["group"]),)
        s, n = out.get(g, (0.0, 0.0))
        out[g] = (
            s + pair_correct(records[p.treatment], k) - pair_correct(records[p.control], k),
            n + 1.0,
        )
    return out


def pair_sets(pairs: Sequence[Pair]) -> dict[str, list[Pair]]:
    return {
        "M": list(pairs),
        "Mi": [p for p in pairs if p.changed],
        "Mu": [p for p in pairs if not p.changed],
        "Msingle": [p for p in pairs if p.kind == "single"],
        "Mboth": [p for p in pairs if p.kind == "both"],
    }


def _added_cue(records: Sequence[dict], p: Pair) -> dict:
    return records[p.treatment]["meta"].get(f"{p.added}_neg") or {}


def minimal_pair_scores(records: Sequence[dict], key: str | None = None) -> dict:
    """The flat unit metrics: ``{set}.acc``, ``{set}.acc_prime``, ``{set}.acc_chg`` for
    ``M``, ``Mi``, ``Mu``, ``Msingle``, ``Mboth`` (fractions; AccChg in [−1, 1]) and
    ``n_pairs.{set}``; plus ``n_unpaired`` (records in no pair)."""
    records = list(records)
    k = correctness_key(records, key)
    pairs = derive_pairs([r["meta"] for r in records])
    out: dict[str, Any] = {}
    for name, ps in pair_sets(pairs).items():
        s = pair_accuracy(records, ps, k)
        out[f"{name}.acc"], out[f"{name}.acc_prime"], out[f"{name}.acc_chg"] = (
            s["acc"],
            s["acc_prime"],
            s["acc_chg"],
        )
        out[f"n_pairs.{name}"] = s["n"]
    used = {p.control for p in pairs} | {p.treatment for p in pairs}
    out["n_unpaired"] = len(records) - len(used)
    return out


def pair_breakdown(records: Sequence[dict], key: str | None = None) -> dict:
    """Nested (not averaged over seeds): M / M_i / M_u split by the added cue's position
    (``end``: clausal, sentence-final; ``mid``: sub-clausal), by the part of speech it was attached
    to, and by the sentence that received it."""
    records = list(records)
    k = correctness_key(records, key)
    pairs = derive_pairs([r["meta"] for r in records])
    out: dict[str, dict] = {}
    for field, getter in (
        ("neg_position", lambda p: _added_cue(records, p).get("neg_position")),
        ("target_pos", lambda p: _added_cue(records, p).get("target_pos")),
        ("added_to", lambda p: p.added),
    ):
        vals = sorted({str(getter(p)) for p in pairs})
        out[field] = {
            v: {
                name: pair_accuracy(records, ps, k)
                for name, ps in pair_sets([p for p in pairs if str(getter(p)) == v]).items()
                if name in PAPER_SETS
            }
            for v in vals
        }
    return out


def instance_accuracy(records: Sequence[dict], key: str | None = None) -> dict:
    """Plain accuracy per instance kind (each instance once): ``acc_original``, ``acc_single_neg``,
    ``acc_both_neg``."""
    k = correctness_key(records, key)
    per: dict[str, list[float]] = {"original": [], "single_neg": [], "both_neg": []}
    for r in records:
        _, a, b = instance_key(r["meta"])
        kind = (
            "original"
            if a is None and b is None
            else ("both_neg" if a is not None and b is not None else "single_neg")
        )
        per[kind].append(pair_correct(r, k))
    return {f"acc_{kind}": mean(v) for kind, v in per.items()}


# -- tables (JSTS-Neg Tables 3-5) ----------------------------------------------------------------
def _pct(v: Any, bold_negative: bool = False) -> str:
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
        return "–"
    s = f"{100 * v:.2f}"
    return f"**{s}**" if bold_negative and v < 0 else s


def pairs_table(
    title: str,
    rows: Sequence[tuple[str, dict]],
    sets: Sequence[str] = PAPER_SETS,
    extra: Sequence[tuple[str, str]] = (),
) -> str:
    """Markdown in the shape of JSTS-Neg Tables 3–5: one row per unit, for each pair set
    Acc, Acc' (%) and AccChg (points; negative values in bold as in the paper), then the
    number of pairs and ``extra`` (header, metric key) columns."""
    rows = [(n, m) for n, m in rows if any(f"{s}.acc" in m for s in sets)]
    if not rows:
        return ""
    head = ["unit"]
    for s in sets:
        t = SET_TITLES[s]
        head += [f"{t} Acc", f"{t} Acc'", f"{t} AccChg"]
    head += [f"n {SET_TITLES[s]}" for s in sets] + [h for h, _ in extra]
    lines = [title, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in rows:
        cells = [name]
        for s in sets:
            cells += [
                _pct(m.get(f"{s}.acc")),
                _pct(m.get(f"{s}.acc_prime")),
                _pct(m.get(f"{s}.acc_chg"), bold_negative=True),
            ]
        cells += [str(m.get(f"n_pairs.{s}", "–")) for s in sets]
        for _, k in extra:
            v = m.get(k, "–")
            cells.append(f"{v:.4f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# -- shot selection (§4.1) -----------------------------------------------------------------------
def is_original(d) -> bool:
    """An instance of D_orig: no cue added to either sentence (Doc fields ``s1_neg``, ``s2_neg``)."""
    return d["s1_neg"] is None and d["s2_neg"] is None


@dataclass(frozen=True)
class StratifiedShots:
    """The JSTS-Neg few-shot draw, used as ``Task.fewshot_sampler``.

    For ``k`` shots: ``k // 2`` from D_orig and ``k - k // 2`` from D_neg of the few-shot split
    (4 → 2 + 2, 11 → 5 + 6).  Within each part the shots have pairwise different gold labels:
    ``rnd.sample`` of the part's distinct labels (sorted), then for each chosen label, in the
    order drawn, ``rnd.choice`` among the part's records with that label (in file order); finally
    ``rnd.shuffle`` of the whole list, so that neither the part nor the label predicts a shot's
    position.  ``rnd = random.Random(seed)``, one draw per (task, seed); every evaluated record
    gets the same shots.  Asking for more shots from a part than it has distinct labels is a
    :class:`TaskError` (the paper's footnote 9: no 12-shot setting because D_orig's train split
    has no score 5)."""

    label: str = "gold"

    @staticmethod
    def split(k: int) -> tuple[int, int]:
        return k // 2, k - k // 2

    def by_label(self, docs: Sequence) -> dict[Any, list]:
        by: dict[Any, list] = {}  # gold label (a str or an int: sorted below) -> docs
        for d in docs:
            by.setdefault(d[self.label], []).append(d)
        return by

    def max_shots(self, pool: Sequence) -> int:
        """The most shots the pool allows: ``k // 2 <= #labels(D_orig)`` and
        ``k - k // 2 <= #labels(D_neg)``."""
        a = len(self.by_label([d for d in pool if is_original(d)]))
        b = len(self.by_label([d for d in pool if not is_original(d)]))
        return min(2 * a + 1, 2 * b)

    def draw(self, pool: Sequence, k: int, seed: int | None) -> list:
        rnd = random.Random(seed)
        n_orig, n_neg = self.split(k)
        parts = (
            ("D_orig", self.by_label([d for d in pool if is_original(d)]), n_orig),
            ("D_neg", self.by_label([d for d in pool if not is_original(d)]), n_neg),
        )
        for name, by, n in parts:
            if n > len(by):
                raise TaskError(
                    f"{k} shots need {n} different gold labels from {name} of the few-shot split, "
                    f"which has {len(by)} ({', '.join(map(str, sorted(by))) or 'none'})",
                    where="--shots",
                    fix=f"use at most {self.max_shots(pool)} shots (k // 2 come from D_orig, "
                    "k - k // 2 from D_neg, each with different gold labels)",
                )
        shots = []
        for name, by, n in parts:
            if n:
                for lab in rnd.sample(sorted(by), n):
                    shots.append(rnd.choice(by[lab]))
        rnd.shuffle(shots)
        return shots

    def __call__(self, docs: Sequence, pool: Sequence, k: int, seed: int | None) -> Iterator[list]:
        shots = self.draw(pool, k, seed)
        for _ in docs:
            yield list(shots)


# -- record checks shared by the loaders ---------------------------------------------------------
POSITIONS = ("end", "mid")


def parse_sentence(
    obj: dict, name: str, neg_id_field: str, path: str, rec: str
) -> tuple[str, dict | None]:
    """``{"sentence": str, "neg": null | {neg_id_field: int ≥ 0, "neg_position": "end" | "mid",
    "target_pos": str}}`` → (sentence, neg or None)."""
    s = obj.get(name)
    if s is None:
        raise DataError("missing field", path=path, record=rec, field=name)
    if not isinstance(s, dict):
        raise DataError(
            f"expected an object {{sentence, neg}}, got {type(s).__name__}",
            path=path,
            record=rec,
            field=name,
        )
    text = s.get("sentence")
    if text is None:
        raise DataError("missing field", path=path, record=rec, field=f"{name}.sentence")
    if not isinstance(text, str) or not text.strip():
        raise DataError(
            f"expected a non-empty string, got {text!r:.60}",
            path=path,
            record=rec,
            field=f"{name}.sentence",
        )
    if "neg" not in s:
        raise DataError(
            "missing field (null when the sentence has no added cue)",
            path=path,
            record=rec,
            field=f"{name}.neg",
        )
    neg = s["neg"]
    if neg is None:
        return text, None
    if not isinstance(neg, dict):
        raise DataError(
            f"expected null or an object, got {type(neg).__name__}",
            path=path,
            record=rec,
            field=f"{name}.neg",
        )
    nid = neg.get(neg_id_field)
    if not isinstance(nid, int) or isinstance(nid, bool) or nid < 0:
        raise DataError(
            f"expected an integer ≥ 0, got {nid!r}",
            path=path,
            record=rec,
            field=f"{name}.neg.{neg_id_field}",
        )
    pos = neg.get("neg_position")
    if pos not in POSITIONS:
        raise DataError(
            f"expected 'end' or 'mid', got {pos!r}",
            path=path,
            record=rec,
            field=f"{name}.neg.neg_position",
        )
    tpos = neg.get("target_pos")
    if not isinstance(tpos, str) or not tpos.strip():
        raise DataError(
            f"expected a non-empty string, got {tpos!r}",
            path=path,
            record=rec,
            field=f"{name}.neg.target_pos",
        )
    return text, {"neg_id": nid, "neg_position": pos, "target_pos": tpos}


def check_type(
    typ: str, types: dict[str, tuple[bool, bool]], s1_neg, s2_neg, path: str, rec: str
) -> None:
    """``types``: type name → (s1 negated, s2 negated); the instance's ``neg`` objects must agree."""
    if typ not in types:
        raise DataError(
            f"unknown type {typ!r}",
            path=path,
            record=rec,
            field="type",
            fix="one of " + ", ".join(types),
        )
    want1, want2 = types[typ]
    for name, want, neg in (("sentence1", want1, s1_neg), ("sentence2", want2, s2_neg)):
        if want and neg is None:
            raise DataError(
                f"a '{typ}' instance needs a negation cue in {name}, but its neg is null",
                path=path,
                record=rec,
                field=f"{name}.neg",
            )
        if not want and neg is not None:
            raise DataError(
                f"a '{typ}' instance has no added cue in {name}, but its neg is set",
                path=path,
                record=rec,
                field=f"{name}.neg",
                fix="use null",
            )


def check_unique(rows: Sequence[tuple[dict, str]], path: str) -> None:
    """Ids unique; within a group, one instance per (s1 cue, s2 cue) key and per
    ``pair_id_in_group``, at most one original.  ``rows``: (fields, record label)."""
    ids: dict[int, str] = {}
    keys: dict[tuple, str] = {}
    pig: dict[tuple, str] = {}
    for f, rec in rows:
        if f["id"] in ids:
            raise DataError(
                f"duplicate id {f['id']} (also {ids[f['id']]})", path=path, record=rec, field="id"
            )
        ids[f["id"]] = rec
        k = (f["group"], f["s1_neg_id"], f["s2_neg_id"])
        if k in keys:
            what = (
                "a second original instance"
                if k[1] is None and k[2] is None
                else f"a second instance with the same cues (sentence1 neg id {k[1]}, "
                f"sentence2 neg id {k[2]})"
            )
            raise DataError(
                f"{what} in group {f['group']!r} (also {keys[k]})",
                path=path,
                record=rec,
                field="sentence1.neg / sentence2.neg",
                fix="each instance of a group must differ in its negation cues",
            )
        keys[k] = rec
        p = (f["group"], f["pair_id_in_group"])
        if p in pig:
            raise DataError(
                f"duplicate pair_id_in_group {p[1]} in group {f['group']!r} (also {pig[p]})",
                path=path,
                record=rec,
                field="pair_id_in_group",
            )
        pig[p] = rec


def text_inconsistencies(docs: Iterable) -> list[tuple[str, str, str]]:
    """Minimal-pair integrity check (not enforced by the loaders): within a group every instance
    that shares a sentence's cue key (no cue, or cue id *a*) should show the same sentence text.
    Returns (group, field, doc id) for each instance that differs from the first one seen
    (JNLI-Neg v1.1 train has 2: a doubled '。')."""
    seen: dict[tuple, str] = {}
    bad = []
    for d in docs:
        for f, nid in (("sentence1", d["s1_neg_id"]), ("sentence2", d["s2_neg_id"])):
            k = (d["group"], f, nid)
            if k in seen and seen[k] != d[f]:
                bad.append((d["group"], f, d.id))
            seen.setdefault(k, d[f])
    return bad


@dataclass(frozen=True)
class Schema:
    """How one release names the fields of the common instance layout (JNLI-Neg's, which
    JSTS-Neg's mirrors)."""

    group_field: str  # jnli_sentence_pair_id / jsts_sentence_pair_id
    group_type: type  # int (JNLI-Neg) / str (JSTS-Neg)
    neg_id_field: str  # neg_id_in_jnli_sentence / neg_id_in_jsts_sentence
    types: dict[str, tuple[bool, bool]]  # type -> (sentence1 negated, sentence2 negated)
    gold_field: str  # gold_label / gold_score
    parse_gold: Any  # (value, path, rec) -> gold, raises DataError
    annotator_field: str  # annotator_labels / annotator_scores
    parse_annotators: Any  # (value, gold, path, rec) -> value, raises DataError


def parse_instance(obj: dict, schema: Schema, path: str, rec: str) -> dict[str, Any]:
    """Validate one instance; returns the Doc fields both tasks use: ``id``, ``group`` (str),
    ``pair_id_in_group``, ``type``, ``sentence1``, ``sentence2``, ``s1_neg`` / ``s2_neg``
    (``{neg_id, neg_position, target_pos}`` or None), ``s1_neg_id`` / ``s2_neg_id``, ``gold``,
    ``annotators``."""
    from negbench.records import field

    iid = field(obj, "id", int, path=path, record=rec)
    rec = f"{rec} (id {iid})"
    group = field(obj, schema.group_field, schema.group_type, path=path, record=rec)
    pig = field(obj, "pair_id_in_group", int, path=path, record=rec)
    if pig < 0:
        raise DataError(
            f"expected an integer >= 0, got {pig}", path=path, record=rec, field="pair_id_in_group"
        )
    typ = field(obj, "type", str, path=path, record=rec)
    s1, n1 = parse_sentence(obj, "sentence1", schema.neg_id_field, path, rec)
    s2, n2 = parse_sentence(obj, "sentence2", schema.neg_id_field, path, rec)
    check_type(typ, schema.types, n1, n2, path, rec)
    if (typ == "original") != (pig == 0):
        raise DataError(
            f"pair_id_in_group is {pig} for a '{typ}' instance",
            path=path,
            record=rec,
            field="pair_id_in_group",
            fix="0 for the original instance of a group, 1, 2, ... for the others",
        )
    if schema.gold_field not in obj or obj[schema.gold_field] is None:
        raise DataError("missing field", path=path, record=rec, field=schema.gold_field)
    gold = schema.parse_gold(obj[schema.gold_field], path, rec)
    if schema.annotator_field not in obj:
        raise DataError(
            "missing field (null when there are no annotations)",
            path=path,
            record=rec,
            field=schema.annotator_field,
        )
    ann = schema.parse_annotators(obj[schema.annotator_field], gold, path, rec)
    return {
        "id": iid,
        "group": str(group),
        schema.group_field: group,
        "pair_id_in_group": pig,
        "type": typ,
        "sentence1": s1,
        "sentence2": s2,
        "s1_neg": n1,
        "s2_neg": n2,
        "s1_neg_id": None if n1 is None else n1["neg_id"],
        "s2_neg_id": None if n2 is None else n2["neg_id"],
        "gold": gold,
        "annotators": ann,
    }


def read_instances(path, schema: Schema) -> list[tuple[dict, str]]:
    """Every instance of a JSON-lines file, validated (fields, ids, one instance per cue key per
    group); returns (fields, "line N") in file order."""
    from negbench.records import iter_jsonl

    rows = [
        (parse_instance(obj, schema, str(path), f"line {n}"), f"line {n}")
        for n, obj in iter_jsonl(path)
    ]
    if not rows:
        raise DataError("no records", path=str(path))
    check_unique(rows, str(path))
    return rows


def instance_meta(d) -> dict:
    """The ``Rendered.meta`` the pair metrics read (plus the annotations)."""
    return {
        "group": d["group"],
        "type": d["type"],
        "pair_id_in_group": d["pair_id_in_group"],
        "s1_neg_id": d["s1_neg_id"],
        "s2_neg_id": d["s2_neg_id"],
        "s1_neg": neg_meta(d["s1_neg"]),
        "s2_neg": neg_meta(d["s2_neg"]),
        "gold": d["gold"],
    }


def neg_meta(neg: dict | None) -> dict | None:
    return (
        None
        if neg is None
        else {"neg_position": neg["neg_position"], "target_pos": neg["target_pos"]}
    )


def corr(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson correlation (NaN when fewer than two points or a constant series)."""
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan")
    return sxy / math.sqrt(sxx * syy)


def ranks(xs: Sequence[float]) -> list[float]:
    """Average ranks (1-based; ties share the mean of their positions), as scipy's rankdata."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            r[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    return corr(ranks(xs), ranks(ys))


def pair_phenomena() -> list:
    """The profile's minimal-pair phenomena (JSTS-Neg, JNLI-Neg): accuracy with the added negation
    (Acc') vs without it (Acc) on all pairs (M), pairs whose label changed (M_i) and did not
    (M_u); Δ is AccChg."""
    from negbench.scoring.phenomena import Items, PhenomenonSpec, Side

    return [
        PhenomenonSpec(
            "minimal-pair accuracy change",
            Side(
                f"{SET_TITLES[s]}: Acc' (negation added)",
                "metric",
                {"meta.type": {"not": "original"}},
                field=f"{s}.acc_prime",
                items=Items("treatment", pair_set=s),
                counted="pairs",
            ),
            Side(
                "Acc",
                "metric",
                field=f"{s}.acc",
                items=Items("control", pair_set=s),
                counted="pairs",
            ),
            "Δ = AccChg (JSTS-Neg §4.2), in points",
        )
        for s in PAPER_SETS
    ]
