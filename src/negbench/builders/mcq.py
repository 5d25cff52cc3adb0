"""Thunder-NUBench / Thunder-KoNUBench multiple-choice construction (NUBench §4, App. I–K;
KoNUBench §4.2, App. D–E) as resumable stages.

Stages (each written atomically under ``OUT/work/<stage>.jsonl`` with a ``.meta.json`` holding the
settings and upstream fingerprints it was made with; a rerun with the same ones reuses it and
opens no model)::

    extract        documents → sentences (English: Listing 3's regex split; Korean: KSS
                   ``split_sentences`` when installed, else kiwipiepy, else a regex) → units: one
                   sentence (en) or two consecutive sentences (ko, §4.2), length filter (Listing 3:
                   ≥ 30 words for en), optional seeded sample (``limit``)
    merge          two-sentence units → one sentence by an LLM (Listing 2 / Figure 5)
    conditionals   en: a seeded choice of ``conditionals`` originals rewritten as conditionals
                   (Listing 4)
    contradiction  LLM contradiction option (Listing 5 / Figure 6)
    paraphrase     LLM paraphrase option (Listing 6 / Figure 7)

Then people take over (the papers' protocol): an author sheet (CSV + JSON lines) where the
original is finalised, standard and local negation are written and the generated options are
corrected; ``rounds`` review rounds, each a sheet with agree/disagree per label (original,
standard negation, local negation, contradiction, paraphrase) and a comment; the disagreement
rate of a round is the share of items with ≥ 1 disagreement (KoNUBench Table 14).  After the
last round, ``finalize`` writes the release schema (``nubench`` / ``konubench`` loadable) and a
``manifest.json``.

Every LLM stage goes through a :class:`negbench.evaluation.session.Session` (the model, the engine
and the response cache of ``negbench run``): greedy generation, so a rerun computes nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from negbench.scoring.construction import McqLanguage, Prompt
from negbench.errors import DataError, OptionError
from negbench.records import iter_jsonl, read_text
from negbench.files import (
    atomic_write_text,
    file_sha256,
    read_jsonl,
    to_json,
    write_json,
    write_jsonl,
)

if TYPE_CHECKING:
    from negbench.core.engine import Engine

LANGS = ("en", "ko")


def language(code: str) -> McqLanguage:
    from negbench.scoring.registry import REGISTRY

    lang = REGISTRY.get("mcq_language", code)
    if lang is None:
        raise OptionError(
            f"unknown language {code!r}",
            where="--lang",
            fix=" or ".join(REGISTRY.names("mcq_language")),
        )
    return lang


#: Answer labels the prompts end with; a model that repeats one is cut after it.
ANSWER_LABELS = (
    "Contradicted sentence:",
    "Paraphrased sentence:",
    "Conditional sentence:",
    "Merged sentence:",
    "Resulting sentence:",
    "Contradiction:",
    "Paraphrase:",
    "contradiction:",
    "paraphrase:",
    "생성된 문장:",
)

#: bump when a stage's code changes what it produces: older stage files are then rebuilt
STAGE_VERSION = 1
#: Listing 3 ``shuffle(seed=42)``.
DEFAULT_SEED = 42
#: KoNUBench E.2: two rounds of cross-checking.
DEFAULT_ROUNDS = 2
#: new tokens per generated sentence (a ≥ 30-word English sentence is ~45 tokens)
DEFAULT_MAX_TOKENS = 128
#: The five labels a reviewer agrees or disagrees with (KoNUBench E.2).
LABELS = ("original", "standard_negation", "local_negation", "contradiction", "paraphrase")
AGREE, DISAGREE = "agree", "disagree"
#: ``choice2_type`` of the NUBench release (Table 10) and ``local_negation_type`` of KoNUBench's.
EN_NON_APPLICABLE = "non-applicable"
KO_NONE = ("", "none", "없음")
#: Author / reviewer sheet text columns (language-neutral names; finalize maps them).
TEXT_COLUMNS = (
    "original",
    "standard_negation",
    "local_negation",
    "local_negation_type",
    "local_negation_element",
    "contradiction",
    "paraphrase",
)
AUTHOR_COLUMNS = ("id", "doc", "source") + TEXT_COLUMNS + ("note",)
AGREE_COLUMNS = tuple(f"agree_{k}" for k in LABELS)
REVIEW_COLUMNS = ("id",) + TEXT_COLUMNS + AGREE_COLUMNS + ("comment",)
#: which label a text column belongs to (type and element are part of the local negation)
COLUMN_LABEL = {
    "original": "original",
    "standard_negation": "standard_negation",
    "local_negation": "local_negation",
    "local_negation_type": "local_negation",
    "local_negation_element": "local_negation",
    "contradiction": "contradiction",
    "paraphrase": "paraphrase",
}


def local_types(lang: str) -> tuple[str, ...]:
    return language(lang).local_types


# -- configuration ---------------------------------------------------------------------------------
@dataclass
class McqConfig:
    input: str
    out: str
    lang: str = "en"
    model: str | None = None  # default: smollm2-135m-instruct (en), gemma3-270m (ko)
    dtype: str = "auto"
    device: str = "auto"
    cache: str | None = None  # response cache file (default: negbench's)
    text_field: str | None = None  # JSON lines input: the field holding the text
    min_words: int | None = None  # default per language
    merge: bool | None = None  # default per language
    conditionals: int = 0  # en: how many originals become conditionals
    limit: int | None = None  # seeded sample of this many units
    seed: int = DEFAULT_SEED
    max_tokens: int = DEFAULT_MAX_TOKENS
    split: str = "test"
    rounds: int = DEFAULT_ROUNDS
    author: str | None = None  # the filled author sheet
    reviews: list[str] = field(default_factory=list)  # filled review sheets, round 1, 2, …

    def resolved(self) -> "McqConfig":
        from negbench.backends.sources import DEFAULT_MODEL, MULTILINGUAL_DEFAULT

        c = McqConfig(**{**asdict(self), "reviews": list(self.reviews)})
        if c.lang not in LANGS:
            raise OptionError(f"unknown language {c.lang!r}", where="--lang", fix="en or ko")
        c.model = c.model or (DEFAULT_MODEL if c.lang == "en" else MULTILINGUAL_DEFAULT)
        c.min_words = language(c.lang).min_words if c.min_words is None else c.min_words
        c.merge = language(c.lang).merge if c.merge is None else c.merge
        if c.conditionals and c.lang != "en":
            raise OptionError(
                "--conditionals is the English pipeline's (NUBench Listing 4)",
                where="--conditionals",
                fix="drop it for --lang ko",
            )
        splits = language(c.lang).splits
        if c.split not in splits:
            raise OptionError(
                f"split {c.split!r} is not one of the {c.lang} release's",
                where="--split",
                fix="one of " + ", ".join(splits),
            )
        if c.rounds < 1:
            raise OptionError("at least one review round", where="--review", fix="--review 2")
        if c.reviews and not c.author:
            raise OptionError(
                "review sheets given without the author sheet",
                where="--review-sheet",
                fix="pass --author FILE (the filled author sheet) as well",
            )
        if len(c.reviews) > c.rounds:
            raise OptionError(
                f"{len(c.reviews)} review sheets for {c.rounds} rounds",
                where="--review-sheet",
                fix=f"raise --review to {len(c.reviews)}",
            )
        return c


# -- input and sentence splitting ------------------------------------------------------------------
#: Listing 3 ``re.split(r'(?<=[!?!]) +', text)`` as printed; we read the class as ``[.!?]``
#: (the printed one never splits at a full stop, which cannot be what produced one-sentence rows).
EN_SPLIT = re.compile(r"(?<=[.!?]) +")
KO_SPLIT = re.compile(r"(?<=[.!?。])\s+")
TEXT_FIELDS = ("text", "summary", "sentence")


def read_documents(path: str | Path, text_field: str | None = None) -> list[tuple[str, str]]:
    """(document id, text) pairs: JSON lines (one document per record, the text in
    ``text_field`` or the first of text / summary / sentence; id from ``id`` or the line number)
    or plain text (one document per non-empty line; id = line number)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(
            "input file not found",
            path=str(p),
            fix="give a text file (one document per line) or JSON lines",
        )
    out: list[tuple[str, str]] = []
    if p.suffix.lower() in (".jsonl", ".json"):
        for n, obj in iter_jsonl(p):
            names = (text_field,) if text_field else TEXT_FIELDS
            key = next((k for k in names if k in obj), None)
            if key is None:
                raise DataError(
                    "no text field",
                    path=str(p),
                    record=f"line {n}",
                    field=text_field or "text",
                    fix="name the field with --text-field" if not text_field else None,
                )
            text = obj[key]
            if not isinstance(text, str):
                raise DataError(
                    f"expected a string, got {type(text).__name__}",
                    path=str(p),
                    record=f"line {n}",
                    field=key,
                )
            out.append((str(obj.get("id", n)), text))
    else:
        for n, line in enumerate(read_text(p, encoding="utf-8-sig").splitlines(), 1):
            if line.strip():
                out.append((str(n), line.strip()))
    if not out:
        raise DataError("no documents in the input", path=str(p))
    return out


def korean_splitter() -> tuple[str, Callable[[str], list[str]]]:
    """KSS ``split_sentences`` (the paper's) when installed, else kiwipiepy's
    ``split_into_sents`` (negbench[multilingual]), else :data:`KO_SPLIT`."""
    try:
        import kss  # optional; not a dependency (heavy)

        return f"kss-{getattr(kss, '__version__', '?')}", lambda t: list(kss.split_sentences(t))
    except ImportError:
        pass
    try:
        from kiwipiepy import Kiwi, __version__ as kv

        kiwi = Kiwi()
        return f"kiwipiepy-{kv}", lambda t: [s.text for s in kiwi.split_into_sents(t)]
    except ImportError:
        return "regex", lambda t: KO_SPLIT.split(t)


def splitter(lang: str) -> tuple[str, Callable[[str], list[str]]]:
    if lang == "en":
        return "listing3-regex", lambda t: EN_SPLIT.split(t)
    return korean_splitter()


def word_count(text: str) -> int:
    return len(text.split())


def extract_units(
    docs: Sequence[tuple[str, str]],
    split_fn: Callable[[str], list[str]],
    *,
    merge: bool,
    min_words: int,
    limit: int | None,
    seed: int,
) -> list[dict]:
    """Units of the build: a sentence, or two consecutive sentences of one document when
    ``merge`` (§4.2 "split the text into pairs of sentences": non-overlapping pairs, a trailing
    odd sentence dropped); kept when the unit has ≥ ``min_words`` whitespace words; then a seeded
    sample of ``limit`` units in input order."""
    units: list[dict] = []
    for doc, text in docs:
        sents = [s.strip() for s in split_fn(text) if s and s.strip()]
        groups = (
            [sents[i : i + 2] for i in range(0, len(sents) - 1, 2)]
            if merge
            else [[s] for s in sents]
        )
        for k, g in enumerate(groups):
            joined = " ".join(g)
            if word_count(joined) >= min_words:
                units.append({"uid": f"{doc}-{k}", "doc": doc, "sentences": g, "text": joined})
    if limit is not None and limit < len(units):
        keep = sorted(random.Random(seed).sample(range(len(units)), limit))
        units = [units[i] for i in keep]
    return units


# -- stages ----------------------------------------------------------------------------------------
def _hash(d: Any) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[
        :16
    ]


class Stages:
    """Stage files under ``work`` (data first, meta last: a crash in between only rebuilds)."""

    def __init__(self, work: Path, log: Callable[[str], None]):
        self.work, self.log = work, log
        self.fingerprints: dict[str, dict] = {}

    def run(self, name: str, settings: dict, make: Callable[[], list[dict]]) -> list[dict]:
        data, meta = self.work / f"{name}.jsonl", self.work / f"{name}.meta.json"
        h = _hash(settings)
        if data.is_file() and meta.is_file():
            try:
                m = json.loads(meta.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                m = {}
            if m.get("hash") == h:
                self.log(f"{name}: reusing {data}")
                self.fingerprints[name] = {"hash": h, "records": m.get("records"), "reused": True}
                return read_jsonl(data)
        rows = make()
        write_jsonl(data, rows)
        write_json(meta, {"hash": h, "settings": settings, "records": len(rows)})
        self.fingerprints[name] = {"hash": h, "records": len(rows), "reused": False}
        return rows


def clean_answer(raw: str) -> str:
    """The generated sentence from a model's answer: the first non-empty line (a preamble line
    ending in ':' skipped), a repeated answer label cut, surrounding quotes removed."""
    lines = [ln.strip() for ln in raw.strip().splitlines() if ln.strip()]
    while len(lines) > 1 and lines[0].endswith(":"):
        lines.pop(0)
    s = lines[0] if lines else ""
    s = re.sub(r"^[-*]\s+", "", s)
    for lab in ANSWER_LABELS:
        if s.startswith(lab):
            s = s[len(lab) :].strip()
            break
    for a, b in (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’")):
        if len(s) >= 2 and s.startswith(a) and s.endswith(b):
            s = s[1:-1].strip()
            break
    return s


class Generator:
    """Greedy generation for the LLM stages through one negbench backend and the engine's
    response cache.  The model is opened on first use: a rerun whose stages are all reused
    never loads it.  ``computed`` counts requests the model answered (not from the cache)."""

    def __init__(
        self,
        spec: str,
        *,
        dtype: str = "auto",
        device: str = "auto",
        cache_path: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        log: Callable[[str], None] = lambda s: None,
        progress: bool = True,
    ):
        self.spec, self.dtype, self.device, self.cache_path = spec, dtype, device, cache_path
        self.max_tokens, self.log, self.progress = max_tokens, log, progress
        self.backend: Any = None  # a negbench backend, once opened
        self.engine: Engine | None = None
        self.computed = 0
        self.requests = 0

    def _open(self) -> Engine:
        """The engine, the model opened on first use."""
        if self.engine is not None:
            return self.engine
        from negbench.evaluation.session import open_model

        session = open_model(
            self.spec,
            dtype=self.dtype,
            device=self.device,
            cache=self.cache_path or True,
            progress=self.progress,
            log=self.log,
        )
        self.backend = session.backend  # logs "loading …"
        self.engine = session.engine
        return session.engine

    @property
    def fingerprint(self) -> str | None:
        return None if self.backend is None else str(getattr(self.backend, "fingerprint", "?"))

    def context(self, prompt: Prompt, sentence: str) -> str:
        """Chat models: the papers' system + user messages through the chat template (system
        folded into the user turn where a template refuses a system role); base models: the same
        text as one plain prompt."""
        user = prompt.render(sentence)
        if getattr(self.backend, "has_chat_template", False):
            msgs = [{"role": "system", "content": prompt.system}] if prompt.system else []
            msgs.append({"role": "user", "content": user})
            try:
                return self.backend.apply_chat_template(msgs)
            except Exception:  # templates without a system role
                folded = (prompt.system + "\n\n" + user) if prompt.system else user
                return self.backend.apply_chat_template([{"role": "user", "content": folded}])
        return (prompt.system + "\n\n" + user if prompt.system else user) + "\n"

    def generate(self, prompt: Prompt, sentences: Sequence[str], desc: str) -> list[str]:
        """Raw answers, in order."""
        if not sentences:
            return []
        from negbench.core.requests import GenerationRequest, GenerationResponse

        engine = self._open()
        chat = getattr(self.backend, "has_chat_template", False)
        stop = () if chat else ("\n\n",)
        reqs = [
            GenerationRequest(self.context(prompt, s), stop=stop, max_tokens=self.max_tokens)
            for s in sentences
        ]
        before = engine.stats.computed
        resps = engine.run(reqs, desc=desc)
        self.computed += engine.stats.computed - before
        self.requests += len(reqs)
        # the engine answers a generation request with a GenerationResponse
        return [r.text for r in cast(list[GenerationResponse], resps)]


def stage_records(
    cfg: McqConfig, gen: Generator, log: Callable[[str], None]
) -> tuple[list[dict], Stages]:
    """Run (or reuse) the machine stages; returns the items the author sheet is made of."""
    work = Path(cfg.out) / "work"
    st = Stages(work, log)
    prompts = language(cfg.lang).prompts
    split_name, split_fn = splitter(cfg.lang)
    base = {
        "version": STAGE_VERSION,
        "lang": cfg.lang,
        "input": file_sha256(cfg.input),
        "text_field": cfg.text_field,
    }
    s_extract = {
        **base,
        "splitter": split_name,
        "merge": cfg.merge,
        "min_words": cfg.min_words,
        "limit": cfg.limit,
        "seed": cfg.seed,
    }
    units = st.run(
        "extract",
        s_extract,
        lambda: extract_units(
            read_documents(cfg.input, cfg.text_field),
            split_fn,
            merge=bool(cfg.merge),
            min_words=int(cfg.min_words or 0),
            limit=cfg.limit,
            seed=cfg.seed,
        ),
    )
    if not units:
        raise DataError(
            f"no sentence passes the length filter (≥ {cfg.min_words} words)",
            path=cfg.input,
            fix="lower --min-words or give longer sentences",
        )
    gen_settings = {"model": cfg.model, "dtype": cfg.dtype, "max_tokens": cfg.max_tokens}

    def llm_stage(name: str, upstream: str, items: list[dict], key: str, only=None) -> list[dict]:
        p = prompts[name]
        settings = {
            "upstream": st.fingerprints[upstream]["hash"],
            **gen_settings,
            "prompt": p.sha256,
            "only": only,
        }

        def make() -> list[dict]:
            todo = [it for it in items if only is None or it["uid"] in only]
            raws = gen.generate(p, [it[key] for it in todo], desc=name)
            return [
                {
                    "uid": it["uid"],
                    "input": it[key],
                    "output": clean_answer(r),
                    "raw": r,
                    "model": gen.fingerprint,
                }
                for it, r in zip(todo, raws)
            ]

        return st.run(name, settings, make)

    items = [
        {
            "uid": u["uid"],
            "doc": u["doc"],
            "source": u["text"],
            "original": u["text"],
            "origin": "sentence",
        }
        for u in units
    ]
    last = "extract"
    if cfg.merge:
        pairs = {u["uid"] for u in units if len(u["sentences"]) > 1}
        merged = {r["uid"]: r for r in llm_stage("merge", last, items, "source", sorted(pairs))}
        for it in items:
            if it["uid"] in merged and merged[it["uid"]]["output"]:
                it["original"], it["origin"] = merged[it["uid"]]["output"], "merged"
        last = "merge"
    if cfg.lang == "en" and cfg.conditionals:
        n = min(cfg.conditionals, len(items))
        chosen = sorted(
            items[i]["uid"] for i in random.Random(cfg.seed).sample(range(len(items)), n)
        )
        conds = {r["uid"]: r for r in llm_stage("conditionals", last, items, "original", chosen)}
        for it in items:
            if it["uid"] in conds and conds[it["uid"]]["output"]:
                it["original"], it["origin"] = conds[it["uid"]]["output"], "conditional"
        last = "conditionals"
    contra = {r["uid"]: r["output"] for r in llm_stage("contradiction", last, items, "original")}
    para = {r["uid"]: r["output"] for r in llm_stage("paraphrase", last, items, "original")}
    for it in items:
        it["contradiction"], it["paraphrase"] = contra[it["uid"]], para[it["uid"]]
    return items, st


# -- sheets ----------------------------------------------------------------------------------------
def _csv_text(rows: Sequence[dict], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return "\ufeff" + buf.getvalue()  # BOM: spreadsheets open it as UTF-8


def write_sheet(
    stem: Path, rows: Sequence[dict], columns: Sequence[str], log: Callable[[str], None]
) -> list[Path]:
    """``stem.csv`` and ``stem.jsonl``; an existing file with other content (a sheet someone is
    filling in) is never overwritten."""
    out = []
    for path, text in (
        (stem.with_suffix(".csv"), _csv_text(rows, columns)),
        (
            stem.with_suffix(".jsonl"),
            "".join(to_json({k: r.get(k) for k in columns}) + "\n" for r in rows),
        ),
    ):
        if path.is_file() and path.read_text(encoding="utf-8") != text:
            log(
                f"{path} exists with other content (being filled?): left as is; delete it to "
                "regenerate"
            )
        elif not path.is_file():
            atomic_write_text(path, text)
        out.append(path)
    return out


def read_sheet(path: str | Path, columns: Sequence[str], what: str) -> list[tuple[str, dict]]:
    """(record name, row) of a filled CSV (``row n``, 1-based after the header) or JSON lines
    (``line n``) sheet; every column of ``columns`` must be present."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{what} not found", path=str(p))
    if p.suffix.lower() == ".csv":
        text = read_text(p, encoding="utf-8-sig")
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise DataError(
                f"missing column(s) {', '.join(missing)}",
                path=str(p),
                record="header",
                field=missing[0],
                fix=f"the {what} has columns " + ", ".join(columns),
            )
        rows = []
        for n, r in enumerate(reader, 1):
            if None in r:
                raise DataError("more cells than header columns", path=str(p), record=f"row {n}")
            rows.append((f"row {n}", {k: (v if v is not None else "") for k, v in r.items()}))
    elif p.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for n, obj in iter_jsonl(p):
            missing = [c for c in columns if c not in obj]
            if missing:
                raise DataError(
                    "missing field",
                    path=str(p),
                    record=f"line {n}",
                    field=missing[0],
                    fix=f"the {what} has fields " + ", ".join(columns),
                )
            rows.append((f"line {n}", {k: ("" if v is None else v) for k, v in obj.items()}))
    else:
        raise DataError(
            f"unsupported {what} type {p.suffix!r}", path=str(p), fix="use .csv or .jsonl"
        )
    if not rows:
        raise DataError(f"the {what} has no rows", path=str(p))
    return rows


def _text(row: dict, k: str, path: str, rec: str) -> str:
    v = row.get(k, "")
    if not isinstance(v, str):
        raise DataError(
            f"expected text, got {type(v).__name__} {v!r:.40}", path=path, record=rec, field=k
        )
    return v.strip()


def check_item(row: dict, lang: str, path: str, rec: str) -> dict:
    """One item's label texts, validated: original, standard negation, contradiction and
    paraphrase non-empty; a local negation with a known type, or none (en: type
    ``non-applicable``; ko: type empty) — NUBench Table 10 / the KoNUBench release's values."""
    out = {k: _text(row, k, path, rec) for k in TEXT_COLUMNS}
    for k in ("original", "standard_negation", "contradiction", "paraphrase"):
        if not out[k]:
            raise DataError(
                f"empty {k.replace('_', ' ')}",
                path=path,
                record=rec,
                field=k,
                fix="write it (every item needs original, standard negation, "
                "contradiction and paraphrase)",
            )
    if out["standard_negation"] == out["original"]:
        raise DataError(
            "the standard negation equals the original",
            path=path,
            record=rec,
            field="standard_negation",
            fix="negate the main predicate of the main clause",
        )
    t, local = out["local_negation_type"], out["local_negation"]
    types = local_types(lang)
    if lang == "en":
        allowed = types + (EN_NON_APPLICABLE,)
        none = t == EN_NON_APPLICABLE
    else:
        allowed = types + ("(empty)",)
        none = t.lower() in KO_NONE
        if none:
            out["local_negation_type"] = ""
    if not none and t not in types:
        raise DataError(
            f"unknown local negation type {t!r}" if t else "empty local negation type",
            path=path,
            record=rec,
            field="local_negation_type",
            fix="one of " + ", ".join(allowed),
        )
    if none and local:
        raise DataError(
            "a local negation is written but its type says there is none",
            path=path,
            record=rec,
            field="local_negation",
            fix="give its type, or empty the local negation",
        )
    if not none and not local:
        raise DataError(
            f"empty local negation (type {t!r})",
            path=path,
            record=rec,
            field="local_negation",
            fix=f"write it, or set the type to "
            f"{EN_NON_APPLICABLE if lang == 'en' else '(empty)'} for a "
            "three-option item",
        )
    return out


def read_author(path: str | Path, lang: str) -> dict[str, dict]:
    """The filled author sheet, validated (structure only; ids are checked against the build
    by :func:`match_ids`).  id → {uid, doc, source, labels…, note}."""
    path = str(path)
    out: dict[str, dict] = {}
    where: dict[str, str] = {}
    for rec, row in read_sheet(path, AUTHOR_COLUMNS, "author sheet"):
        uid = _text(row, "id", path, rec)
        if not uid:
            raise DataError("empty id", path=path, record=rec, field="id")
        if uid in out:
            raise DataError(
                f"id {uid!r} appears twice (also {where[uid]})", path=path, record=rec, field="id"
            )
        where[uid] = rec
        out[uid] = {
            "uid": uid,
            "doc": _text(row, "doc", path, rec),
            "source": _text(row, "source", path, rec),
            **check_item(row, lang, path, rec),
            "note": _text(row, "note", path, rec),
            "_rec": rec,
        }
    return out


def _agree(row: dict, col: str, path: str, rec: str) -> bool:
    v = row.get(col, "")
    v = v.strip().lower() if isinstance(v, str) else v
    if v in (AGREE, True):
        return True
    if v in (DISAGREE, False):
        return False
    raise DataError(
        f"{v!r} is not agree or disagree" if v not in ("", None) else "no decision",
        path=path,
        record=rec,
        field=col,
        fix="write agree or disagree",
    )


@dataclass
class ReviewRow:
    uid: str
    labels: dict[str, str]
    agree: dict[str, bool]
    comment: str
    rec: str


def read_review(path: str | Path, lang: str) -> dict[str, ReviewRow]:
    """A filled review sheet, validated (structure and values)."""
    path = str(path)
    out: dict[str, ReviewRow] = {}
    for rec, row in read_sheet(path, REVIEW_COLUMNS, "review sheet"):
        uid = _text(row, "id", path, rec)
        if not uid:
            raise DataError("empty id", path=path, record=rec, field="id")
        if uid in out:
            raise DataError(
                f"id {uid!r} appears twice (also {out[uid].rec})", path=path, record=rec, field="id"
            )
        agree = {k: _agree(row, f"agree_{k}", path, rec) for k in LABELS}
        out[uid] = ReviewRow(
            uid, check_item(row, lang, path, rec), agree, _text(row, "comment", path, rec), rec
        )
    return out


def match_ids(sheet: dict, expected: Sequence[str], path: str, what: str) -> None:
    """The sheet holds exactly the build's items."""
    missing = [u for u in expected if u not in sheet]
    if missing:
        raise DataError(
            f"{len(missing)} item(s) of the build missing (first: id {missing[0]})",
            path=str(path),
            field="id",
            fix=f"the {what} must hold one row per item; it was exported from another build?",
        )
    extra = [u for u in sheet if u not in set(expected)]
    if extra:
        raise DataError(
            f"id {extra[0]!r} is not an item of this build",
            path=str(path),
            record=_rec(sheet[extra[0]]),
            field="id",
            fix="the sheet was exported from another build (other input or settings)",
        )


def _rec(x: Any) -> str | None:
    return x.rec if isinstance(x, ReviewRow) else x.get("_rec")


@dataclass(frozen=True)
class RoundStats:
    """One review round (KoNUBench Table 14): items with ≥ 1 disagreement / items."""

    round: int
    items: int
    disagreements: int  # items with at least one 'disagree'
    by_label: dict  # label → items where it was disagreed with
    revised: int  # items whose text the round changed

    @property
    def rate(self) -> float:
        return self.disagreements / self.items if self.items else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "rate": self.rate}


def disagreement_stats(round_no: int, rows: dict[str, ReviewRow], revised: int = 0) -> RoundStats:
    by = {k: sum(1 for r in rows.values() if not r.agree[k]) for k in LABELS}
    n = sum(1 for r in rows.values() if not all(r.agree.values()))
    return RoundStats(round_no, len(rows), n, by, revised)


def apply_review(state: dict[str, dict], rows: dict[str, ReviewRow], path: str) -> tuple[dict, int]:
    """The items after a round: each row's texts (the version agreed at the meeting).  A text
    changed under 'agree' is refused: every revision must show as a disagreement, or the round's
    rate would understate what was fixed."""
    match_ids(rows, list(state), path, "review sheet")
    new, revised = {}, 0
    for uid, item in state.items():
        r = rows[uid]
        changed = False
        for col in TEXT_COLUMNS:
            if r.labels[col] != item[col]:
                changed = True
                if r.agree[COLUMN_LABEL[col]]:
                    raise DataError(
                        f"{col.replace('_', ' ')} was changed but marked agree",
                        path=path,
                        record=r.rec,
                        field=f"agree_{COLUMN_LABEL[col]}",
                        fix="mark it disagree (and say why in comment), or restore the text",
                    )
        revised += changed
        new[uid] = {**item, **r.labels, "comment": r.comment}
    return new, revised


def review_sheet_rows(state: dict[str, dict]) -> list[dict]:
    return [
        {
            "id": uid,
            **{k: it[k] for k in TEXT_COLUMNS},
            **{c: "" for c in AGREE_COLUMNS},
            "comment": "",
        }
        for uid, it in state.items()
    ]


def author_sheet_rows(items: Sequence[dict]) -> list[dict]:
    return [
        {
            "id": it["uid"],
            "doc": it["doc"],
            "source": it["source"],
            "original": it["original"],
            "standard_negation": "",
            "local_negation": "",
            "local_negation_type": "",
            "local_negation_element": "",
            "contradiction": it["contradiction"],
            "paraphrase": it["paraphrase"],
            "note": f"origin: {it['origin']}",
        }
        for it in items
    ]


# -- finalize --------------------------------------------------------------------------------------
def release_records(state: dict[str, dict], lang: str) -> list[dict]:
    """The items in the release schema: NUBench App. L.2 (en) or the KoNUBench release (ko)."""
    out = []
    for i, (uid, it) in enumerate(state.items()):
        none = (
            it["local_negation_type"] == EN_NON_APPLICABLE
            if lang == "en"
            else not it["local_negation_type"]
        )
        if lang == "en":
            out.append(
                {
                    "wikipedia_index": it["doc"],
                    "index": i,
                    "sentence": it["original"],
                    "choice1": it["standard_negation"],
                    "choice2": None if none else it["local_negation"],
                    "choice2_type": it["local_negation_type"],
                    "choice2_element": it["local_negation_element"] or None,
                    "choice3": it["contradiction"],
                    "choice4": it["paraphrase"],
                    "build_id": uid,
                }
            )
        else:
            out.append(
                {
                    "idx": str(i),
                    "raw_id": uid,
                    "original_sentence": it["original"],
                    "standard_negation": it["standard_negation"],
                    "local_negation_type": None if none else it["local_negation_type"],
                    "local_negation": None if none else it["local_negation"],
                    "local_부정요소": it["local_negation_element"] or None,
                    "contradiction": it["contradiction"],
                    "paraphrase": it["paraphrase"],
                    "note": it.get("note") or None,
                }
            )
    return out


def release_path(out: Path, lang: str, split: str) -> tuple[Path, Path]:
    """(file, the folder to point the task at: NEGBENCH_NUBENCH / NEGBENCH_KONUBENCH)."""
    return language(lang).release_path(out, split)


def check_release(records: list[dict], lang: str, split: str, path: str) -> None:
    """The task loaders' own validation, before the file is written."""
    language(lang).check_release(records, split, path)


# -- the whole build -------------------------------------------------------------------------------
def build(
    cfg: McqConfig, *, log: Callable[[str], None] = lambda s: None, progress: bool = True
) -> dict:
    """Run or resume the build as far as the given sheets allow; returns what was done.

    Filled sheets are validated (structure and values) before any stage runs or file is
    written; their ids and revisions are checked against the build before any sheet or release
    file is written."""
    cfg = cfg.resolved()
    assert cfg.model is not None  # resolved() names the language's default
    if not Path(cfg.input).is_file():
        raise DataError(
            "input file not found",
            path=cfg.input,
            fix="give a text file (one document per line) or JSON lines",
        )
    author = read_author(cfg.author, cfg.lang) if cfg.author else None
    reviews = [read_review(p, cfg.lang) for p in cfg.reviews]
    out = Path(cfg.out)
    gen = Generator(
        cfg.model,
        dtype=cfg.dtype,
        device=cfg.device,
        cache_path=cfg.cache,
        max_tokens=cfg.max_tokens,
        log=log,
        progress=progress,
    )
    items, stages = stage_records(cfg, gen, log)
    uids = [it["uid"] for it in items]
    res: dict[str, Any] = {
        "items": len(items),
        "stages": stages.fingerprints,
        "model_requests": gen.requests,
        "model_computed": gen.computed,
        "model_opened": gen.engine is not None,
        "rounds": [],
        "sheets": [],
    }
    sheets = out / "sheets"
    if author is None:
        res["sheets"] = [
            str(p)
            for p in write_sheet(sheets / "author", author_sheet_rows(items), AUTHOR_COLUMNS, log)
        ]
        res["next"] = "author"
        return res
    assert cfg.author is not None  # the author sheet was read from it
    match_ids(author, uids, cfg.author, "author sheet")
    state = {u: {k: v for k, v in author[u].items() if k != "_rec"} for u in uids}
    rounds: list[RoundStats] = []
    for k, (path, rows) in enumerate(zip(cfg.reviews, reviews), 1):
        state, revised = apply_review(state, rows, path)
        rounds.append(disagreement_stats(k, rows, revised))
    res["rounds"] = [r.as_dict() for r in rounds]
    if len(rounds) < cfg.rounds:
        k = len(rounds) + 1
        res["sheets"] = [
            str(p)
            for p in write_sheet(
                sheets / f"review-{k}", review_sheet_rows(state), REVIEW_COLUMNS, log
            )
        ]
        res["next"] = f"review-{k}"
        return res
    records = release_records(state, cfg.lang)
    final, root = release_path(out, cfg.lang, cfg.split)
    check_release(records, cfg.lang, cfg.split, str(final))
    language(cfg.lang).write_release(final, records)
    manifest = {
        "builder": "negbench build mcq",
        "lang": cfg.lang,
        "split": cfg.split,
        "input": {"path": cfg.input, "sha256": file_sha256(cfg.input)},
        "settings": {k: v for k, v in asdict(cfg).items() if k not in ("author", "reviews")},
        "model": {"spec": cfg.model, "fingerprint": _model_fingerprint(out, gen)},
        "prompts": {
            name: {"source": p.source, "sha256": p.sha256}
            for name, p in language(cfg.lang).prompts.items()
        },
        "stages": stages.fingerprints,
        "author_sheet": {"path": cfg.author, "sha256": file_sha256(cfg.author)},
        "reviews": [
            {**r.as_dict(), "path": p, "sha256": file_sha256(p)}
            for r, p in zip(rounds, cfg.reviews)
        ],
        "items": len(records),
        "choice2_types" if cfg.lang == "en" else "local_negation_types": _type_counts(
            records, cfg.lang
        ),
        "release": str(final),
        "task_source": str(root),
    }
    write_json(out / "manifest.json", manifest)
    res.update(
        {
            "next": None,
            "release": str(final),
            "task_source": str(root),
            "manifest": str(out / "manifest.json"),
        }
    )
    return res


def _type_counts(records: list[dict], lang: str) -> dict[str, int]:
    key = "choice2_type" if lang == "en" else "local_negation_type"
    out: dict[str, int] = {}
    for r in records:
        t = r[key] or "none"
        out[t] = out.get(t, 0) + 1
    return out


def _model_fingerprint(out: Path, gen: Generator) -> str | None:
    """The backend fingerprint that made the LLM stages (from the stage files when reused)."""
    if gen.fingerprint:
        return gen.fingerprint
    for name in ("paraphrase", "contradiction"):
        p = out / "work" / f"{name}.jsonl"
        if p.is_file():
            rows = read_jsonl(p)
            if rows and rows[0].get("model"):
                return rows[0]["model"]
    return None
