"""Templates of ``negbench build notadataset``: the template language, its JSON files, instantiation
of a WordNet triple into the release's sentences, recovery of the original templates from a copy
of the raw release, and the release's two output formats.

Template language (one string per template, JSON files ``NN.json`` per pattern):

* ``{a}`` / ``{b}`` — the triple's first / second term (the release's ``Source`` header order);
  ``{a:a}`` with ``a``/``an``, ``{a:pl}`` plural, ``{a:a+pl}`` article chosen by the singular
  before the plural (the release's #08 "members of an electorates"), ``{a:ing}`` gerund,
  ``{b:gloss}`` the synset's definition (Patterns #01/#02);
* ``[x|y]`` alternatives, ``(x)`` optional part (= ``[x|]``); they nest;  ``\\[`` etc. escape;
* the variation numbers of the release ("6-1" … "6-4") are the expansions in this order:
  left-most choice varies slowest, an optional part is first taken, then left out;
* after expansion, runs of spaces collapse and a space before ``,`` / ``.`` goes; the sentence's
  first character is upper-cased.

A recovered template (``recover_templates``) lists its expansions instead (``"variants"``), since
the release only shows the expanded sentences.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from negbench.tasks.notadataset.build import inflect_en
from negbench.tasks.notadataset.build.wordnet import release_definition
from negbench.errors import DataError, NegbenchError
from negbench.files import atomic_write_text, json_lines, to_json

if TYPE_CHECKING:  # pragma: no cover
    from negbench.tasks.notadataset.build.triples import Term, Triple
    from negbench.tasks.notadataset.tasks import Release

SHIPPED = Path(__file__).with_name("shipped_templates")
SLOTS = ("a", "b")
FORMS = ("", "a", "pl", "a+pl", "ing", "gloss")
NEGATION = ("affirmation", "verbal", "non_verbal")
SEMANTIC = ("none", "analytic", "synthetic")
SCOPE = ("none", "clausal", "subclausal")
KINDS = ("Input", "Distractor", "Distractor-1", "Distractor-2")
POLARITIES = ("affirmation", "negation")
_SLOT_RE = re.compile(r"\{([ab])(?::(a\+pl|a|pl|ing|gloss))?\}")


# -- data ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Template:
    """One template: its types and its expansions (flat texts with slots) in release order."""

    id: int
    negation_type: str
    semantic_type: str
    syntactic_scope: str
    variants: tuple[str, ...]
    text: str | None = None  # the source form with [..|..] and (..), when written that way
    truth: Mapping[str, bool] | None = None  # kind -> label, overriding the pattern's Table 10
    # row (#03/#04 "X and Y are always different")

    @property
    def polarity(self) -> str:
        return "affirmation" if self.negation_type == "affirmation" else "negation"

    def label(self, pt: "PatternTemplates", kind: str) -> bool:
        if self.truth is not None and kind in self.truth:
            return self.truth[kind]
        return pt.truth[self.polarity][kind]


@dataclass(frozen=True)
class PatternTemplates:
    """A pattern's templates plus which slot each distractor replaces and Table 10's labels."""

    pattern_id: int
    relation: str
    distractors: tuple[tuple[str, str], ...]  # (kind, slot replaced), header order
    truth: Mapping[str, Mapping[str, bool]]  # polarity -> kind -> label
    templates: tuple[Template, ...]
    path: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        return ("Input",) + tuple(k for k, _ in self.distractors)

    @property
    def sentences_per_block(self) -> int:
        return sum(len(t.variants) for t in self.templates) * len(self.kinds)


Templates = dict[int, PatternTemplates]


@dataclass(frozen=True)
class Generated:
    """One generated sentence, with the raw release's fields."""

    pattern_id: int
    template: str  # "3-1": template 3, variation 1
    negation_type: str
    semantic_type: str
    syntactic_scope: str
    kind: str  # Input | Distractor | Distractor-1 | Distractor-2
    label: bool
    sentence: str

    @property
    def is_distractor(self) -> bool:
        return self.kind != "Input"


@dataclass(frozen=True)
class RawBlock:
    """A test block of the raw format: header fields and its sentences."""

    pattern_id: int
    source: str  # "wn_part(00007846-n person_1,…)"
    distractors: tuple[tuple[str, str], ...]  # ("Distractor", "section [0067…]")
    sentences: tuple[Generated, ...] = field(default=())


# -- the template language -------------------------------------------------------------------------
class TemplateSyntaxError(ValueError):
    pass


def _parse_seq(text: str, i: int, stop: str) -> tuple[list, int]:
    """Parse until one of ``stop`` (not consumed); returns nodes: str | ("alt", [seqs])."""
    nodes: list = []
    buf: list[str] = []
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            buf.append(text[i + 1])
            i += 2
            continue
        if c in stop:
            break
        if c in "[(":
            if buf:
                nodes.append("".join(buf))
                buf = []
            close = "]" if c == "[" else ")"
            options = []
            i += 1
            while True:
                seq, i = _parse_seq(text, i, "|" + close)
                options.append(seq)
                if i >= len(text):
                    raise TemplateSyntaxError(f"unclosed '{c}'")
                if text[i] == close:
                    i += 1
                    break
                if c == "(":
                    raise TemplateSyntaxError("'|' inside an optional part '( )': use '[x|y]'")
                i += 1  # '|'
            if c == "(":
                options.append([])
            nodes.append(("alt", options))
            continue
        if c in "])|":
            raise TemplateSyntaxError(f"unexpected '{c}' at character {i + 1}")
        if c == "{":
            j = text.find("}", i)
            m = _SLOT_RE.fullmatch(text, i, j + 1) if j > 0 else None
            if not m:
                raise TemplateSyntaxError(
                    f"bad slot {text[i : j + 1 if j > 0 else i + 12]!r}: use {{a}}, {{b}}, "
                    "{a:a} (article), {a:pl}, {a:a+pl}, {a:ing}, {b:gloss}"
                )
        buf.append(c)
        i += 1
    if buf:
        nodes.append("".join(buf))
    return nodes, i


def _expand(nodes: list) -> list[str]:
    parts: list[list[str]] = []
    for n in nodes:
        if isinstance(n, str):
            parts.append([n])
        else:
            parts.append([x for opt in n[1] for x in _expand(opt)])
    return ["".join(p) for p in itertools.product(*parts)]


def tidy(text: str) -> str:
    """Whitespace after expansion: single spaces, none before ``,``/``.``, none at the ends."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r" ([,.;:?!])", r"\1", text)


def expand(text: str) -> tuple[str, ...]:
    """All expansions of a template text, in the release's variation order."""
    nodes, i = _parse_seq(text, 0, "")
    return tuple(tidy(v) for v in _expand(nodes))


def slots_of(text: str) -> set[str]:
    return {m.group(1) for m in _SLOT_RE.finditer(text)}


# -- rendering -------------------------------------------------------------------------------------
def _form(term: "Term", form: str, exc: inflect_en.Exceptions | None) -> str:
    if form == "gloss":
        if not term.definition:
            raise NegbenchError(
                f"template needs the gloss of {term.word!r} but the term has none",
                fix="build the triple with its synset (Patterns #01/#02 use glosses)",
            )
        return gloss(term.definition)
    w = term.word
    if form == "a":
        return inflect_en.with_article(w)
    if form == "pl":
        return inflect_en.plural(w, exc)
    if form == "a+pl":  # the release's #08 "members of an electorates"
        return f"{inflect_en.article(w)} {inflect_en.plural(w, exc)}"
    if form == "ing":
        return inflect_en.gerund(w, exc)
    return w


def gloss(definition: str) -> str:
    """The gloss as the release uses it: the definition up to its first ``;`` (WordNet packs
    several paraphrases into one definition; the release keeps the first) without a leading
    usage label such as ``(computer science)``."""
    text = definition.split(";", 1)[0].strip()
    return re.sub(r"^\([^()]*\)\s*", "", text)


def render(
    variant: str, terms: Mapping[str, "Term"], exc: inflect_en.Exceptions | None = None
) -> str:
    """One expansion with its slots filled; the first character upper-cased."""
    out = _SLOT_RE.sub(lambda m: _form(terms[m.group(1)], m.group(2) or "", exc), variant)
    return inflect_en.capitalise(out)


def instantiate(
    triple: "Triple",
    templates: Templates | PatternTemplates,
    exc: inflect_en.Exceptions | None = None,
) -> list[Generated]:
    """Every template × variation × (Input, distractors…) for one triple, in the release's order."""
    pt = templates if isinstance(templates, PatternTemplates) else templates.get(triple.pattern_id)
    if pt is None:
        raise NegbenchError(
            f"no templates for pattern #{triple.pattern_id:02d}",
            fix="add NN.json to the templates folder or drop the pattern",
        )
    if len(triple.distractors) != len(pt.distractors):
        raise NegbenchError(
            f"pattern #{pt.pattern_id:02d} templates expect {len(pt.distractors)} distractor(s), "
            f"the triple {triple.source!r} has {len(triple.distractors)}",
            where=pt.path or None,
        )
    base = {"a": triple.a, "b": triple.b}
    sets = [("Input", base)]
    for (kind, slot), d in zip(pt.distractors, triple.distractors):
        sets.append((kind, {**base, slot: d}))
    out = []
    for t in pt.templates:
        for v, text in enumerate(t.variants, 1):
            for kind, terms in sets:
                out.append(
                    Generated(
                        pt.pattern_id,
                        f"{t.id}-{v}",
                        t.negation_type,
                        t.semantic_type,
                        t.syntactic_scope,
                        kind,
                        t.label(pt, kind),
                        render(text, terms, exc),
                    )
                )
    return out


# -- files -----------------------------------------------------------------------------------------
def _req(obj: Mapping, key: str, typ, where: str, record: str | None = None):
    if key not in obj:
        raise DataError("missing field", path=where, record=record, field=key)
    v = obj[key]
    if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
        raise DataError(
            f"expected {getattr(typ, '__name__', typ)}, got {v!r:.60}",
            path=where,
            record=record,
            field=key,
        )
    return v


def parse_pattern(obj: Any, where: str) -> PatternTemplates:
    """One pattern's JSON object → PatternTemplates (DataError naming file, template and field)."""
    if not isinstance(obj, dict):
        raise DataError("expected a JSON object", path=where)
    pid = _req(obj, "pattern_id", int, where)
    if not 1 <= pid <= 11:
        raise DataError(f"pattern_id {pid} not in 1..11", path=where, field="pattern_id")
    relation = _req(obj, "relation", str, where)
    dis = []
    for i, d in enumerate(_req(obj, "distractors", list, where)):
        if not (isinstance(d, dict) and d.get("kind") in KINDS[1:] and d.get("replaces") in SLOTS):
            raise DataError(
                f"bad distractor {d!r:.80}",
                path=where,
                record=f"distractors[{i}]",
                field="distractors",
                fix='{"kind": "Distractor"|"Distractor-1"|"Distractor-2", "replaces": "a"|"b"}',
            )
        dis.append((d["kind"], d["replaces"]))
    if len({k for k, _ in dis}) != len(dis):
        raise DataError("distractor kinds repeat", path=where, field="distractors")
    kinds = ["Input"] + [k for k, _ in dis]
    truth_obj = _req(obj, "truth", dict, where)
    truth: dict[str, dict[str, bool]] = {}
    for pol in POLARITIES:
        row = truth_obj.get(pol)
        if not isinstance(row, dict) or any(not isinstance(row.get(k), bool) for k in kinds):
            raise DataError(
                f"truth.{pol} must give true/false for each of {', '.join(kinds)}",
                path=where,
                field=f"truth.{pol}",
                fix='e.g. "truth": {"affirmation": {"Input": true, "Distractor": false}, '
                '"negation": {"Input": false, "Distractor": true}}',
            )
        truth[pol] = {k: row[k] for k in kinds}
    templates = []
    seen: set[int] = set()
    for i, t in enumerate(_req(obj, "templates", list, where)):
        rec = f"template {t.get('id', f'#{i + 1}') if isinstance(t, dict) else f'#{i + 1}'}"
        if not isinstance(t, dict):
            raise DataError("expected a JSON object", path=where, record=rec)
        tid = _req(t, "id", int, where, rec)
        if tid < 1 or tid in seen:
            raise DataError(
                f"template id {tid} is not a new positive number",
                path=where,
                record=rec,
                field="id",
            )
        seen.add(tid)
        types = []
        for key, allowed in (
            ("negation_type", NEGATION),
            ("semantic_type", SEMANTIC),
            ("syntactic_scope", SCOPE),
        ):
            v = _req(t, key, str, where, rec)
            if v not in allowed:
                raise DataError(
                    f"unknown {key} {v!r}",
                    path=where,
                    record=rec,
                    field=key,
                    fix="one of " + ", ".join(allowed),
                )
            types.append(v)
        if (types[0] == "affirmation") != (types[1] == "none") or (types[0] == "affirmation") != (
            types[2] == "none"
        ):
            raise DataError(
                f"inconsistent types {'/'.join(types)}",
                path=where,
                record=rec,
                field="negation_type",
                fix="affirmations have semantic_type and syntactic_scope 'none', "
                "negations have neither",
            )
        if ("text" in t) == ("variants" in t):
            raise DataError(
                "give exactly one of 'text' or 'variants'", path=where, record=rec, field="text"
            )
        text = None
        if "text" in t:
            text = _req(t, "text", str, where, rec)
            try:
                variants = expand(text)
            except TemplateSyntaxError as e:
                raise DataError(str(e), path=where, record=rec, field="text") from None
        else:
            vs = _req(t, "variants", list, where, rec)
            if not vs or not all(isinstance(v, str) and v.strip() for v in vs):
                raise DataError(
                    "variants must be a non-empty list of strings",
                    path=where,
                    record=rec,
                    field="variants",
                )
            for v in vs:
                bad = re.sub(_SLOT_RE, "", v)
                if "{" in bad or "}" in bad:
                    raise DataError(
                        f"bad slot in {v!r:.80}",
                        path=where,
                        record=rec,
                        field="variants",
                        fix="use {a}, {b}, {a:a}, {a:pl}, {a:a+pl}, {a:ing}, {b:gloss}",
                    )
            variants = tuple(tidy(v) for v in vs)
        for v in variants:
            if not slots_of(v):
                raise DataError(
                    f"expansion {v!r:.80} has no slot",
                    path=where,
                    record=rec,
                    field="text",
                    fix="use {a} / {b} for the triple's terms",
                )
        ttruth = None
        if "truth" in t:
            tt = t["truth"]
            if not isinstance(tt, dict) or any(
                k not in kinds or not isinstance(v, bool) for k, v in tt.items()
            ):
                raise DataError(
                    f"truth must map kinds ({', '.join(kinds)}) to true/false",
                    path=where,
                    record=rec,
                    field="truth",
                )
            ttruth = dict(tt)
        templates.append(
            Template(tid, types[0], types[1], types[2], variants=variants, text=text, truth=ttruth)
        )
    if not templates:
        raise DataError("no templates", path=where, field="templates")
    return PatternTemplates(pid, relation, tuple(dis), truth, tuple(templates), where)


def load_templates(path: str | os.PathLike | None = None) -> Templates:
    """Every ``NN.json`` of a templates folder (default: the shipped ones) or one such file."""
    p = Path(path) if path is not None else SHIPPED
    if p.is_dir():
        files = sorted(p.glob("*.json"))
    elif p.is_file():
        files = [p]
    else:
        raise NegbenchError(
            f"templates folder {p} does not exist",
            fix="pass --templates DIR with NN.json files, or leave it out for the "
            "shipped templates",
        )
    if not files:
        raise NegbenchError(
            f"no *.json template files in {p}",
            fix="write NN.json files (see src/negbench/tasks/notadataset/build/README.md, 'Templates') "
            "or create them with --recover-templates",
        )
    out: Templates = {}
    for f in files:
        try:
            obj = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"cannot read ({e})", path=str(f)) from None
        except json.JSONDecodeError as e:
            raise DataError(
                f"not valid JSON: {e.msg}", path=str(f), record=f"line {e.lineno}"
            ) from None
        pt = parse_pattern(obj, str(f))
        if pt.pattern_id in out:
            raise DataError(
                f"pattern #{pt.pattern_id:02d} also defined in {out[pt.pattern_id].path}",
                path=str(f),
                field="pattern_id",
            )
        out[pt.pattern_id] = pt
    return out


def pattern_to_json(pt: PatternTemplates) -> dict:
    """The JSON object of one pattern (``text`` when the template has one, else ``variants``)."""
    temps = []
    for t in pt.templates:
        d: dict[str, Any] = {
            "id": t.id,
            "negation_type": t.negation_type,
            "semantic_type": t.semantic_type,
            "syntactic_scope": t.syntactic_scope,
        }
        if t.text is not None:
            d["text"] = t.text
        else:
            d["variants"] = list(t.variants)
        if t.truth is not None:
            d["truth"] = dict(t.truth)
        temps.append(d)
    return {
        "pattern_id": pt.pattern_id,
        "relation": pt.relation,
        "distractors": [{"kind": k, "replaces": s} for k, s in pt.distractors],
        "truth": {p: dict(pt.truth[p]) for p in POLARITIES},
        "templates": temps,
    }


def write_templates(out_dir: str | os.PathLike, templates: Templates) -> list[Path]:
    """One ``NN.json`` per pattern (atomic; an unchanged file is left alone)."""
    out = []
    for pid, pt in sorted(templates.items()):
        path = Path(out_dir) / f"{pid:02d}.json"
        text = to_json(pattern_to_json(pt), indent=1) + "\n"
        if not (path.is_file() and path.read_text(encoding="utf-8") == text):
            atomic_write_text(path, text)
        out.append(path)
    return out


def raw_block(triple: "Triple", sentences: Sequence[Generated]) -> RawBlock:
    """The raw-format block of one triple (its Source and Distractor headers)."""
    return RawBlock(triple.pattern_id, triple.source, triple.distractor_headers(), tuple(sentences))


# -- output formats --------------------------------------------------------------------------------
def raw_text(blocks: Iterable[RawBlock]) -> str:
    """The release's ``#NN.Pattern.txt`` text: ``% Test NNNNNN`` + tab-separated header fields, a
    blank line, one tab-separated line per sentence (kind padded to 10), a blank line."""
    out = []
    for n, b in enumerate(blocks, 1):
        head = [f"% Test {n:06d}", f"Source: {b.source}"] + [f"{k}: {v}" for k, v in b.distractors]
        out.append("\t".join(head) + "\n\n")
        for s in b.sentences:
            out.append(
                "\t".join(
                    (
                        s.template,
                        s.negation_type,
                        s.semantic_type,
                        s.syntactic_scope,
                        s.kind.ljust(10),
                        "T" if s.label else "F",
                        s.sentence,
                    )
                )
                + "\n"
            )
        out.append("\n")
    return "".join(out)


def write_raw(out_dir: str | os.PathLike, blocks: Iterable[RawBlock]) -> list[Path]:
    """``OUT/#NN.Pattern.txt`` per pattern (atomic), loadable by ``notadataset[source=OUT]``."""
    by_pattern: dict[int, list[RawBlock]] = defaultdict(list)
    for b in blocks:
        by_pattern[b.pattern_id].append(b)
    paths = []
    for pid, bl in sorted(by_pattern.items()):
        path = Path(out_dir) / f"#{pid:02d}.Pattern.txt"
        text = raw_text(bl)
        if not (path.is_file() and path.read_text(encoding="utf-8") == text):
            atomic_write_text(path, text)
        paths.append(path)
    return paths


def jsonl_records(blocks: Iterable[RawBlock], first_test_id: int = 0) -> Iterable[dict]:
    """The hub release's fields, one record per sentence; ``test_id`` numbers blocks."""
    from negbench.tasks.notadataset.truth_scorer import PATTERNS

    for n, b in enumerate(blocks, first_test_id):
        for s in b.sentences:
            yield {
                "pattern_id": s.pattern_id,
                "pattern": PATTERNS[s.pattern_id],
                "test_id": n,
                "negation_type": s.negation_type,
                "semantic_type": s.semantic_type,
                "syntactic_scope": s.syntactic_scope,
                "isDistractor": s.is_distractor,
                "label": s.label,
                "sentence": s.sentence,
            }


def write_jsonl(path: str | os.PathLike, blocks: Iterable[RawBlock]) -> Path:
    """JSON lines with the hub release's field names (atomic), loadable by ``notadataset``."""
    p = Path(path)
    text = "".join(json_lines(jsonl_records(blocks)))
    if not (p.is_file() and p.read_text(encoding="utf-8") == text):
        atomic_write_text(p, text)
    return p


# -- recovering the original templates from the release ------------------------------------------
def _surfaces(terms: Mapping[str, "Term"], exc) -> dict[str, list[str]]:
    """Surface string -> slot tokens that produce it (several when two terms share a form)."""
    out: dict[str, list[str]] = defaultdict(list)
    for name in SLOTS:
        t = terms[name]
        for form in FORMS:
            if form == "gloss" and not t.definition:
                continue
            s = _form(t, form, exc)
            if s:
                tok = "{" + name + (":" + form if form else "") + "}"
                if tok not in out[s]:
                    out[s].append(tok)
    return out


def induce(sentence: str, terms: Mapping[str, "Term"], exc=None, limit: int = 8) -> list[str]:
    """Candidate flat templates for one sentence: every form of the terms found in it (longest
    first, whole words, the first one possibly capitalised) replaced by its slot."""
    surf = _surfaces(terms, exc)
    if not surf:
        return [sentence]
    keys = sorted(surf, key=len, reverse=True)
    rx = re.compile(
        r"(?<![\w-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w-])", re.IGNORECASE
    )
    pieces: list[list[str]] = []
    pos = 0
    for m in rx.finditer(sentence):
        txt = m.group(0)
        key = next(
            (k for k in keys if k == txt or (m.start() == 0 and inflect_en.capitalise(k) == txt)),
            None,
        )
        if key is None:
            continue
        pieces.append([sentence[pos : m.start()]])
        pieces.append(surf[key])
        pos = m.end()
    pieces.append([sentence[pos:]])
    out = []
    for combo in itertools.product(*pieces):
        t = "".join(combo)
        out.append(t[:1].lower() + t[1:] if t[:1].isupper() and t[:1] != "{" else t)
        if len(out) >= limit:
            break
    return out


# -- writing expansions back as one template text --------------------------------------------------
_TOKEN = re.compile(r"[^\s.,]+|[.,]")


def _esc(tokens: Sequence[str]) -> str:
    return re.sub(r"([\[\]()|\\])", r"\\\1", " ".join(tokens))


def _common_prefix(seqs: Sequence[Sequence[str]]) -> int:
    n = 0
    while all(len(x) > n for x in seqs) and len({tuple(x[n : n + 1]) for x in seqs}) == 1:
        n += 1
    return n


def _factor(vs: list[list[str]], depth: int = 0) -> str | None:
    """Token lists → a template text whose expansion lists them in order (or None)."""
    if len(vs) == 1:
        return _esc(vs[0])
    if depth > 6:
        return None
    p = _common_prefix(vs)
    rev = [x[p:][::-1] for x in vs]
    q = _common_prefix(rev)
    mids = [x[p : len(x) - q] for x in vs]
    head, tail = vs[0][:p], vs[0][len(vs[0]) - q :] if q else []
    n = len(vs)
    for k in range(2, n):  # k options for the first choice point
        if n % k:
            continue
        m = n // k
        groups = [mids[i * m : (i + 1) * m] for i in range(k)]
        cuts = [_common_prefix(g) for g in groups]
        tails = [[x[c:] for x in g] for g, c in zip(groups, cuts)]
        if any(t != tails[0] for t in tails[1:]):
            continue
        first = _factor([g[0][:c] for g, c in zip(groups, cuts)], depth + 1)
        rest = _factor(tails[0], depth + 1)
        if first is not None and rest is not None:
            return " ".join(x for x in (_esc(head), first, rest, _esc(tail)) if x)
    if len({tuple(x) for x in mids}) != n:
        return None
    opts = [_esc(x) for x in mids]
    alt = f"({opts[0]})" if n == 2 and not mids[1] and mids[0] else "[" + "|".join(opts) + "]"
    return " ".join(x for x in (_esc(head), alt, _esc(tail)) if x)


def factor_variants(variants: Sequence[str]) -> str | None:
    """A template text with ``[x|y]`` / ``(x)`` that expands to exactly ``variants`` in order,
    or None when none is found (recovered templates then keep their list of expansions)."""
    try:
        text = _factor([_TOKEN.findall(v) for v in variants])
        if text is None:
            return None
        for cand in (re.sub(r" ([.,])", r"\1", text), text):
            if expand(cand) == tuple(variants):
                return cand
        return None
    except TemplateSyntaxError:
        return None


@dataclass
class Recovery:
    """What recovery found, for reports: templates plus how well the votes agreed."""

    templates: Templates
    agreement: dict[int, float]  # pattern -> share of variant votes for the winner
    unexplained: dict[int, int]  # pattern -> variant instances with no slot found


def recover_templates(
    release: "Release",
    triples: Mapping[str, "Triple"] | None = None,
    exc: inflect_en.Exceptions | None = None,
    *,
    details: bool = False,
):
    """Induce every pattern's templates from the raw release in memory: per block, substitute the
    triple's word forms and glosses back into slots, check the candidate regenerates the block's
    Input and distractor sentences, and take the majority per template variant over all blocks.

    ``triples`` maps block key -> Triple (default: ``triples_from_release(release)``).  Returns
    Templates (or a :class:`Recovery` with vote agreement when ``details``)."""
    if any(not b.source for b in release.blocks.values()) or any(
        not s.template for s in release.sentences[:1]
    ):
        raise NegbenchError(
            "template recovery needs the raw release (its Source headers and "
            "template ids); this looks like the JSON-lines release",
            where=release.source,
            fix="point at This-is-not-a-dataset_RAW_DATA.zip or a folder of its "
            "#NN.Pattern.txt files",
        )
    if triples is None:
        triples = _triples_by_block(release)
    by_block: dict[str, list] = defaultdict(list)
    for s in release.sentences:
        by_block[s.block].append(s)
    votes: dict[int, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    types: dict[int, dict[str, Counter[tuple[str, str, str]]]] = defaultdict(
        lambda: defaultdict(Counter)
    )
    slot_votes: dict[int, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    label_votes: dict[int, dict[tuple[str, str], Counter]] = defaultdict(
        lambda: defaultdict(Counter)
    )
    relation: dict[int, Counter] = defaultdict(Counter)
    unexplained: Counter = Counter()
    header_kinds_of: dict[int, list[str]] = {}
    tlabel_votes: dict[int, dict[tuple[str, str], Counter]] = defaultdict(
        lambda: defaultdict(Counter)
    )
    kind_names = {0: "Input", 1: "Distractor", 2: "Distractor-2"}
    for key, sents in by_block.items():
        block = release.blocks[key]
        tr = triples.get(key)
        if tr is None:
            continue
        pid = block.pattern_id
        relation[pid][tr.relation] += 1
        header_kinds = [k for k, _ in block.distractors]
        header_kinds_of.setdefault(pid, header_kinds)
        groups: dict[str, dict[str, str]] = defaultdict(dict)
        for s in sents:
            kind = (
                "Input"
                if s.distractor == 0
                else (
                    header_kinds[s.distractor - 1]
                    if len(header_kinds) >= s.distractor
                    else kind_names[s.distractor]
                )
            )
            groups[s.template][kind] = s.sentence
            types[pid][s.template][(s.negation_type, s.semantic_type, s.syntactic_scope)] += 1
            pol = "affirmation" if s.negation_type == "affirmation" else "negation"
            label_votes[pid][(pol, kind)][s.label] += 1
            tlabel_votes[pid][(s.template.partition("-")[0], kind)][s.label] += 1
        base = {"a": tr.a, "b": tr.b}
        dterms = dict(zip(header_kinds, tr.distractors))
        for tid, by_kind in groups.items():
            inp = by_kind.get("Input")
            if inp is None:
                continue
            found = None
            for kind, d in dterms.items():
                if kind not in by_kind:
                    continue
                for slot in ("b", "a"):  # b first: #01's a == b, distractor is b
                    terms = {**base, slot: d}
                    for cand in induce(by_kind[kind], terms, exc):
                        if not slots_of(cand):
                            continue
                        try:
                            ok = (
                                render(cand, base, exc) == inp
                                and render(cand, terms, exc) == by_kind[kind]
                            )
                        except NegbenchError:
                            ok = False
                        if ok:
                            found = cand
                            slot_votes[pid][kind][slot] += 1
                            break
                    if found:
                        break
            if found is None:
                cands = [c for c in induce(inp, base, exc) if slots_of(c)]
                if not cands:
                    unexplained[pid] += 1
                    continue
                found = cands[0]
            votes[pid][tid][found] += 1
    out: Templates = {}
    agreement: dict[int, float] = {}
    for pid in sorted(votes):
        by_tid: dict[int, list[tuple[int, str]]] = defaultdict(list)
        won = total = 0
        for tid, c in votes[pid].items():
            text, n = c.most_common(1)[0]
            won += n
            total += sum(c.values())
            num, _, v = tid.partition("-")
            by_tid[int(num)].append((int(v or 1), text))
        agreement[pid] = won / total if total else 0.0
        kinds = []
        for i, kind in enumerate(header_kinds_of[pid]):
            sc = slot_votes[pid].get(kind)
            kinds.append((kind, sc.most_common(1)[0][0] if sc else ("a", "b")[min(i, 1)]))
        truth: dict[str, dict[str, bool]] = {}
        for pol in POLARITIES:
            truth[pol] = {}
            for kind in ["Input"] + [k for k, _ in kinds]:
                lc = label_votes[pid].get((pol, kind))
                truth[pol][kind] = (
                    lc.most_common(1)[0][0] if lc else ((pol == "affirmation") == (kind == "Input"))
                )
        temps = []
        for t in sorted(by_tid):
            first = f"{t}-{min(v for v, _ in by_tid[t])}"
            ty = types[pid][first].most_common(1)[0][0]
            pol = "affirmation" if ty[0] == "affirmation" else "negation"
            own = {}
            for kind in truth[pol]:
                tc = tlabel_votes[pid].get((str(t), kind))
                if tc:
                    own[kind] = tc.most_common(1)[0][0]
            override = own if any(own[k] != truth[pol][k] for k in own) else None
            variants = tuple(x for _, x in sorted(by_tid[t]))
            temps.append(
                Template(t, *ty, variants=variants, text=factor_variants(variants), truth=override)
            )
        out[pid] = PatternTemplates(
            pid,
            relation[pid].most_common(1)[0][0],
            tuple(kinds),
            truth,
            tuple(temps),
            f"recovered from {release.source}",
        )
    if details:
        return Recovery(out, agreement, dict(unexplained))
    return out


GLOSS_PATTERNS = (1, 2)


def _triples_by_block(release: "Release") -> dict[str, "Triple"]:
    """The release's own triples by block key, glosses as the release has them."""
    from negbench.tasks.notadataset.build.triples import triples_from_release
    from negbench.tasks.notadataset.build.wordnet import open_wordnet

    wn = None
    if any(b.pattern_id in GLOSS_PATTERNS for b in release.blocks.values()):
        try:
            wn = open_wordnet()
        except NegbenchError as e:
            raise NegbenchError(
                "recovering the templates of Patterns #01/#02 needs WordNet 3.0 "
                "for the glosses: " + e.what,
                where=e.where,
                fix=e.fix,
            ) from None
    ts = triples_from_release(release, wn)
    if len(ts) != len(release.blocks):
        raise NegbenchError("triples_from_release returned a different number of triples")
    return {k: with_release_glosses(t, wn) for k, t in zip(release.blocks, ts)}


def with_release_glosses(triple: "Triple", wn) -> "Triple":
    """``triple`` with each gloss term's definition as the release used it
    (:func:`release_definition`: the 8 colon-introduced examples)."""
    if wn is None:
        return triple
    from dataclasses import replace

    def fix(term):
        if (
            term.definition
            and term.synset
            and term.definition.rstrip().endswith(":")
            and wn.has(term.synset)
        ):
            syn = wn.synset(term.synset)
            return replace(term, definition=release_definition(syn.definition, syn.examples))
        return term

    return replace(
        triple,
        a=fix(triple.a),
        b=fix(triple.b),
        distractors=tuple(fix(d) for d in triple.distractors),
    )
