"""This is not a Dataset (García-Ferrero et al., EMNLP 2023): 381,300 English true/false sentences
about WordNet knowledge, two thirds negated, in 4,100 test blocks (one WordNet triple each).

Sources (option ``source=`` or ``$NEGBENCH_NOTADATASET``; default: the raw release under
``$NEGBENCH_DATA/not-a-dataset`` or ``../shared/data/not-a-dataset``):

* the raw release ``This-is-not-a-dataset_RAW_DATA.zip`` — ZipCrypto, password published in the
  release's ``data/README.md`` — read in memory, never written out; or a folder of its
  ``#NN.Pattern.txt`` files;
* the Hugging Face release ``hf:HiTZ/This-is-not-a-dataset`` (official train / validation / test),
  or a folder / file of its JSON lines (``train.jsonl``, ``dev.jsonl``, ``test.jsonl``).

The task name takes options: ``notadataset[split=test,sample=20000,seed=0,patterns=1+2,
types=affirmation+verbal]``.  ``split`` is ``all`` (the paper's zero-shot evaluation, default),
``train``, ``dev`` or ``test`` (§6: by block, never by sentence; the official split with the hub
release, else a seeded split with the release's per-pattern block counts); ``sample`` is a
stratified sample of whole blocks; ``patterns`` / ``types`` select by pattern and by negation type
(the §6 experiments).  See ``src/negbench/tasks/notadataset/README.md``.
"""

from __future__ import annotations

import random
import sys
from array import array
from collections.abc import Sequence
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from negbench.errors import DataError, TaskError
from negbench.tasks.data_source import DataSource, load_hub_dataset
from negbench.records import iter_jsonl, read_text
from negbench.scoring.metrics import mean
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation, TrueFalseNextToken
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task
from negbench.tasks.notadataset.truth_scorer import (
    NEGATION_TYPES,
    PATTERNS,
    Columns,
    Judged,
    report_columns,
    table4_row,
)

NAME = "notadataset"
HF_ID = "HiTZ/This-is-not-a-dataset"
RAW_ZIP = "This-is-not-a-dataset_RAW_DATA.zip"
ZIP_PASSWORD = b"hitz"  # published in the release's data/README.md
PROMPT = "Is the following statement True or False? {sentence}"
CHAT_PROMPT = "Is the following statement True or False? Answer only True or False. {sentence}"
NEGATION = ("affirmation", "verbal", "non_verbal")
SEMANTIC = ("none", "analytic", "synthetic")
SCOPE = ("none", "clausal", "subclausal")
KINDS = {"Input": 0, "Distractor": 1, "Distractor-1": 1, "Distractor-2": 2}
SPLITS = ("all", "train", "dev", "test")
#: Paper Table 2 (sentences per pattern; 4,100 blocks, 381,300 sentences in all).
PAPER_TABLE2 = {
    1: (2996, 281624),
    2: (58, 8178),
    3: (14, 2436),
    4: (58, 10092),
    5: (634, 60864),
    6: (199, 11940),
    7: (21, 1176),
    8: (11, 682),
    9: (60, 240),
    10: (9, 468),
    11: (40, 3600),
}
#: §6: 2,876 / 244 / 980 blocks (train / dev / test) — used when the release's per-pattern counts
#: (``example_count.txt``) are not at hand.
PAPER_SPLIT_BLOCKS = (2876, 244, 980)


@dataclass(frozen=True)
class Block:
    """A test block: one WordNet triple instantiated by all templates of its pattern."""

    key: str  # "p01.b000001" (raw) or "t123" (hub test_id)
    pattern_id: int
    source: str  # e.g. "wn_part(00007846-n person_1,04617562-n personality_1)"
    distractors: tuple[tuple[str, str], ...]
    size: int


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of the release (slots, shared type strings: the release holds 381,300)."""

    block: str
    pattern_id: int
    template: str  # "3-1" = template 3, variation 1 ("" in the hub release)
    negation_type: str
    semantic_type: str
    syntactic_scope: str
    distractor: int  # 0 = from the WordNet triple, 1 / 2 = from a distracting triple
    label: bool
    sentence: str

    @property
    def is_distractor(self) -> bool:
        return self.distractor > 0


@dataclass
class Release:
    sentences: list[Sentence]
    blocks: dict[str, Block]
    source: str
    split_counts: dict[int, tuple[int, int, int]] | None = None  # pattern -> train/dev/test blocks
    official_split: dict[str, str] | None = None  # block -> split (hub release)


# -- the raw release --------------------------------------------------------------------------------
def parse_pattern_text(
    text: str, pattern_id: int, where: str
) -> tuple[list[Block], list[Sentence]]:
    """Parse one ``#NN.Pattern.txt``: ``% Test NNNNNN`` headers (source triple, distractors) and
    tab-separated lines ``template, negation, semantic, scope, Input|Distractor[-k], T|F,
    sentence``.  A malformed line raises DataError naming file and line."""
    blocks: list[Block] = []
    sentences: list[Sentence] = []
    head: dict | None = None
    members: list[Sentence] = []

    def close() -> None:
        if head is not None:
            if not members:
                raise DataError("test block without sentences", path=where, record=head["line"])
            blocks.append(
                Block(head["key"], pattern_id, head["source"], head["distractors"], len(members))
            )
            sentences.extend(members)

    seen: set[str] = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        rec = f"line {n}"
        if line.startswith("%"):
            close()
            parts = line.split("\t")
            words = parts[0].split()
            if len(words) != 3 or words[1] != "Test" or not words[2].isdigit():
                raise DataError(
                    f"bad block header {parts[0]!r}",
                    path=where,
                    record=rec,
                    field="header",
                    fix="expected '% Test NNNNNN'",
                )
            key = f"p{pattern_id:02d}.b{int(words[2]):06d}"
            if key in seen:
                raise DataError(
                    f"duplicate block {words[2]}", path=where, record=rec, field="header"
                )
            seen.add(key)
            fields = {}
            for p in parts[1:]:
                name, sep, value = p.partition(": ")
                if not sep:
                    raise DataError(
                        f"bad header field {p[:60]!r}",
                        path=where,
                        record=rec,
                        field="header",
                        fix="expected 'Name: value'",
                    )
                fields[name.strip()] = value.strip()
            if "Source" not in fields:
                raise DataError(
                    "block header without Source", path=where, record=rec, field="Source"
                )
            dis = tuple((k, v) for k, v in fields.items() if k.startswith("Distractor"))
            head = {"key": key, "source": fields["Source"], "distractors": dis, "line": rec}
            members = []
            continue
        if head is None:
            raise DataError(
                "sentence line before the first '% Test' header", path=where, record=rec
            )
        cols = line.split("\t")
        if len(cols) != 7:
            raise DataError(
                f"expected 7 tab-separated fields, got {len(cols)}", path=where, record=rec
            )
        tmpl, neg, sem, scope, kind, lab, sent = (c.strip() for c in cols)
        for value, allowed, name in (
            (neg, NEGATION, "negation_type"),
            (sem, SEMANTIC, "semantic_type"),
            (scope, SCOPE, "syntactic_scope"),
            (kind, KINDS, "Input|Distractor"),
            (lab, ("T", "F"), "label"),
        ):
            if value not in allowed:
                raise DataError(
                    f"unknown {name} {value!r}",
                    path=where,
                    record=rec,
                    field=name,
                    fix="one of " + ", ".join(allowed),
                )
        if (neg == "affirmation") != (sem == "none") or (neg == "affirmation") != (scope == "none"):
            raise DataError(
                f"inconsistent types: {neg}/{sem}/{scope}",
                path=where,
                record=rec,
                field="negation_type",
                fix="affirmations have semantic and scope 'none'; negations have neither",
            )
        if not sent:
            raise DataError("empty sentence", path=where, record=rec, field="sentence")
        members.append(
            Sentence(
                head["key"],
                pattern_id,
                sys.intern(tmpl),
                sys.intern(neg),
                sys.intern(sem),
                sys.intern(scope),
                KINDS[kind],
                lab == "T",
                sent,
            )
        )
    close()
    return blocks, sentences


def parse_example_count(text: str, where: str) -> dict[int, tuple[int, int, int]]:
    """``NN - blocks | train dev test`` per pattern (the release's ``example_count.txt``)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            left, right = line.split("|")
            pid, total = (int(x) for x in left.split("-"))
            tr, dv, te = (int(x) for x in right.split())
        except ValueError:
            raise DataError(
                f"bad line {line!r}",
                path=where,
                record=f"line {n}",
                fix="expected 'NN - blocks | train dev test'",
            ) from None
        if tr + dv + te != total:
            raise DataError(
                f"split counts {tr}+{dv}+{te} != {total}", path=where, record=f"line {n}"
            )
        out[pid] = (tr, dv, te)
    return out


def _pattern_id(name: str) -> int | None:
    base = name.rsplit("/", 1)[-1]
    if base.startswith("#") and base.endswith(".Pattern.txt"):
        try:
            return int(base[1:3])
        except ValueError:
            return None
    return None


def read_raw(path: Path) -> Release:
    """The raw release: the zip (encrypted or not; read in memory) or a folder of pattern files."""
    files: dict[int, tuple[str, str]] = {}
    counts_text = None
    if path.is_dir():
        for p in sorted(path.rglob("#*.Pattern.txt")):
            pid = _pattern_id(p.name)
            if pid is not None:
                files[pid] = (str(p), read_text(p))
        c = next(iter(sorted(path.rglob("example_count.txt"))), None)
        counts_text = (str(c), read_text(c)) if c else None
    else:
        try:
            z = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise DataError(f"not a readable zip file ({exc})", path=str(path)) from None
        z.setpassword(ZIP_PASSWORD)
        with z:
            for name in sorted(z.namelist()):
                pid = _pattern_id(name)
                if pid is None and not name.endswith("example_count.txt"):
                    continue
                try:
                    text = z.read(name).decode("utf-8")
                except RuntimeError as exc:  # wrong password
                    raise DataError(
                        f"cannot decrypt {name} ({exc})",
                        path=str(path),
                        fix="use the official zip (its README gives the password)",
                    ) from None
                where = f"{path}:{name}"
                if pid is None:
                    counts_text = (where, text)
                else:
                    files[pid] = (where, text)
    if not files:
        raise DataError(
            "no '#NN.Pattern.txt' files found",
            path=str(path),
            fix=f"point at {RAW_ZIP}, a folder of its pattern files, or the JSON lines",
        )
    blocks: dict[str, Block] = {}
    sentences: list[Sentence] = []
    for pid in sorted(files):
        if pid not in PATTERNS:
            raise DataError(f"unknown pattern number {pid}", path=files[pid][0])
        bl, se = parse_pattern_text(files[pid][1], pid, files[pid][0])
        blocks.update((b.key, b) for b in bl)
        sentences.extend(se)
    counts = parse_example_count(counts_text[1], counts_text[0]) if counts_text else None
    return Release(sentences, blocks, str(path), counts)


# -- the Hugging Face release -----------------------------------------------------------------------
_HF_FILES = {
    "train": ("train.jsonl",),
    "dev": ("dev.jsonl", "validation.jsonl"),
    "test": ("test.jsonl",),
}


def parse_hub_record(obj: dict, where: str, rec: str) -> Sentence:
    """A hub-release line: pattern_id, pattern, test_id, negation_type, semantic_type,
    syntactic_scope, isDistractor, label, sentence."""

    def get(name, typ):
        if name not in obj or obj[name] is None:
            raise DataError("missing field", path=where, record=rec, field=name)
        v = obj[name]
        if typ is bool and isinstance(v, str) and v.lower() in ("true", "false"):
            v = v.lower() == "true"
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise DataError(
                f"expected {typ.__name__}, got {v!r:.40}", path=where, record=rec, field=name
            )
        return v

    pid = get("pattern_id", int)
    if pid not in PATTERNS:
        raise DataError(
            f"pattern_id {pid} not in 1..11", path=where, record=rec, field="pattern_id"
        )
    if get("pattern", str) != PATTERNS[pid]:
        raise DataError(
            f"pattern {obj['pattern']!r} does not match pattern_id {pid}",
            path=where,
            record=rec,
            field="pattern",
            fix=f"expected {PATTERNS[pid]!r}",
        )
    neg, sem, scope = (
        get(k, str).strip().lower() for k in ("negation_type", "semantic_type", "syntactic_scope")
    )
    for v, allowed, name in (
        (neg, NEGATION, "negation_type"),
        (sem, SEMANTIC, "semantic_type"),
        (scope, SCOPE, "syntactic_scope"),
    ):
        if v not in allowed:
            raise DataError(
                f"unknown {name} {v!r}",
                path=where,
                record=rec,
                field=name,
                fix="one of " + ", ".join(allowed),
            )
    sent = get("sentence", str)
    if not sent.strip():
        raise DataError("empty sentence", path=where, record=rec, field="sentence")
    return Sentence(
        f"t{get('test_id', int)}",
        pid,
        "",
        sys.intern(neg),
        sys.intern(sem),
        sys.intern(scope),
        int(get("isDistractor", bool)),
        get("label", bool),
        sent,
    )


def _collect(rows: list[tuple[str, Sentence]], source: str) -> Release:
    blocks: dict[str, list[Sentence]] = {}
    split_of: dict[str, str] = {}
    for split, s in rows:
        blocks.setdefault(s.block, []).append(s)
        if split_of.setdefault(s.block, split) != split:
            raise DataError(
                f"block {s.block} appears in both {split_of[s.block]} and {split}",
                path=source,
                field="test_id",
            )
    out = {}
    for key, members in blocks.items():
        if len({m.pattern_id for m in members}) != 1:
            raise DataError(f"block {key} mixes patterns", path=source, field="pattern_id")
        out[key] = Block(key, members[0].pattern_id, "", (), len(members))
    official = split_of if any(s != "all" for s in split_of.values()) else None
    return Release([s for _, s in rows], out, source, None, official)


def read_jsonl_release(path: Path) -> Release:
    """A folder holding the hub release's JSON lines (train/dev/test), or one .jsonl file."""
    targets: list[tuple[str, Path]] = []
    if path.is_dir():
        for split, names in _HF_FILES.items():
            for n in names:
                if (path / n).is_file():
                    targets.append((split, path / n))
                    break
        if not targets and (path / "all.jsonl").is_file():
            targets.append(("all", path / "all.jsonl"))
    else:
        targets.append(("all", path))
    if not targets:
        raise DataError("no train.jsonl / dev.jsonl / test.jsonl found", path=str(path))
    rows = [
        (split, parse_hub_record(obj, str(p), f"line {n}"))
        for split, p in targets
        for n, obj in iter_jsonl(p)
    ]
    return _collect(rows, str(path))


def read_hub(dataset_id: str = HF_ID) -> Release:
    where = f"hf:{dataset_id}"
    rows = []
    for split, hub_split in (("train", "train"), ("dev", "validation"), ("test", "test")):
        ds = load_hub_dataset(
            dataset_id, hub_split, what="This is not a Dataset", local="use the raw release zip"
        )
        rows += [
            (split, parse_hub_record(dict(o), f"{where}/{hub_split}", f"record {i}"))
            for i, o in enumerate(ds)
        ]
    return _collect(rows, where)


# -- where the data is ------------------------------------------------------------------------------
DATA = DataSource(
    "This is not a Dataset", "NEGBENCH_NOTADATASET", f"not-a-dataset/data/{RAW_ZIP}", HF_ID
)


def default_source() -> str:
    """``$NEGBENCH_NOTADATASET``, else the raw release in the data tree, else the hub
    (:mod:`negbench.tasks.data_source`)."""
    return DATA.resolve()


@lru_cache(maxsize=4)
def load_release(source: str) -> Release:
    if source.startswith("hf:"):
        return read_hub(source[3:])
    p = Path(source)
    if not p.exists():
        raise DataError(
            "This is not a Dataset: data not found",
            path=source,
            fix=f"set NEGBENCH_NOTADATASET to {RAW_ZIP}, a folder of its pattern files "
            f"or of the hub JSON lines, or hf:{HF_ID}; or NEGBENCH_DATA",
        )
    if p.suffix == ".zip":
        return read_raw(p)
    if p.is_dir() and not any(p.rglob("#*.Pattern.txt")):
        return read_jsonl_release(p)
    if p.suffix == ".jsonl":
        return read_jsonl_release(p)
    return read_raw(p)


# -- splits, samples, selections --------------------------------------------------------------------
def split_counts(release: Release) -> dict[int, tuple[int, int, int]]:
    """Blocks per pattern for train/dev/test: the release's counts, else the §6 proportions."""
    if release.split_counts:
        return release.split_counts
    per: dict[int, int] = {}
    for b in release.blocks.values():
        per[b.pattern_id] = per.get(b.pattern_id, 0) + 1
    tot = sum(PAPER_SPLIT_BLOCKS)
    out = {}
    for pid, n in per.items():
        dv = round(n * PAPER_SPLIT_BLOCKS[1] / tot)
        te = round(n * PAPER_SPLIT_BLOCKS[2] / tot)
        out[pid] = (n - dv - te, dv, te)
    return out


def block_split(release: Release, seed: int = 0) -> dict[str, str]:
    """Block → train/dev/test.  The hub release's official split when present; otherwise each
    pattern's blocks are shuffled with a seeded RNG and cut at the release's per-pattern counts
    (by block, never by sentence, so no triple leaks across splits)."""
    if release.official_split:
        return dict(release.official_split)
    counts = split_counts(release)
    out: dict[str, str] = {}
    for pid in sorted(counts):
        keys = sorted(k for k, b in release.blocks.items() if b.pattern_id == pid)
        tr, dv, te = counts[pid]
        if tr + dv + te != len(keys):
            raise DataError(
                f"pattern {pid} has {len(keys)} blocks, split counts say {tr + dv + te}",
                path=release.source,
            )
        random.Random(f"notadataset-split-{seed}-{pid}").shuffle(keys)
        out.update((k, "train") for k in keys[:tr])
        out.update((k, "dev") for k in keys[tr : tr + dv])
        out.update((k, "test") for k in keys[tr + dv :])
    return out


#: A subset keeps whole blocks (coherence is judged per block) and spreads over the patterns.
STRUCTURE = Structure(
    unit=("block",),
    stratum="pattern_id",
    unit_name="block",
    units_name="blocks",
    stratum_name="pattern",
)


def _block_units(release: Release, keys: list[str]) -> list[tuple[int, int]]:
    return [(release.blocks[k].pattern_id, release.blocks[k].size) for k in keys]


def stratified_blocks(
    release: Release, keys: list[str], n_sentences: int, seed: int = 0
) -> list[str]:
    """About ``n_sentences`` sentences in whole blocks, spread over the patterns in proportion to
    their sentences, each pattern's blocks in a seeded random order — the rule of every
    ``--sample`` (:func:`negbench.scoring.subsets.allocate`, the same draw as ``--sample N
    --seed S`` on the whole set); the result is in release order."""
    from negbench.scoring.subsets import allocate

    return [keys[i] for i in allocate(_block_units(release, keys), n_sentences, seed)]


TYPE_NAMES = ("affirmation", "negation") + NEGATION_TYPES
#: ``polarity=`` (§6, Table 7): a shorthand for ``types=affirmation`` / ``types=negation``.
POLARITIES = {"affirmative": frozenset({"affirmation"}), "negative": frozenset({"negation"})}


def matches_types(s: Sentence, types: frozenset[str]) -> bool:
    """``affirmation``, ``negation`` (any negated sentence) or one of the six negation types."""
    if s.negation_type == "affirmation":
        return "affirmation" in types
    return "negation" in types or bool(
        {s.negation_type, s.semantic_type, s.syntactic_scope} & types
    )


@dataclass(frozen=True)
class Selection:
    """What a ``notadataset[...]`` task evaluates."""

    source: str | None  # None: resolved when loading (env may change)
    split: str = "all"
    split_seed: int = 0
    sample: int | None = None
    seed: int = 0
    patterns: frozenset[int] | None = None
    types: frozenset[str] | None = None

    def resolved(self) -> "Selection":
        from dataclasses import replace

        return self if self.source else replace(self, source=default_source())

    def blocks(self, split: str | None = None) -> list[str]:
        """The blocks of ``split`` (default: the selection's) and patterns, before sampling."""
        if not self.source:
            return self.resolved().blocks(split)
        split = split or self.split
        rel = load_release(self.source)
        keys = list(rel.blocks)
        if split != "all":
            sp = block_split(rel, self.split_seed)
            keys = [k for k in keys if sp[k] == split]
        if self.patterns:
            keys = [k for k in keys if rel.blocks[k].pattern_id in self.patterns]
        return keys

    def sentences(self, split: str | None = None) -> list[Sentence]:
        if not self.source:
            return self.resolved().sentences(split)
        rel = load_release(self.source)
        keys = self.blocks(split)
        if self.sample:
            keys = stratified_blocks(rel, keys, self.sample, self.seed)
        keep = set(keys)
        out = [s for s in rel.sentences if s.block in keep]
        if self.types:
            out = [s for s in out if matches_types(s, self.types)]
        return out

    def subset(self, split: str | None = None):
        """How ``sample=`` chose the sentences (an :class:`negbench.scoring.subsets.Selection`),
        or None without a sample."""
        if not self.sample:
            return None
        if not self.source:
            return self.resolved().subset(split)
        from negbench.scoring.subsets import allocate, describe

        rel = load_release(self.source)
        keys = self.blocks(split)
        units = _block_units(rel, keys)
        if self.types:  # sizes as evaluated: the sentences of the chosen types
            per: dict[str, int] = {}
            for s in rel.sentences:
                if matches_types(s, self.types):
                    per[s.block] = per.get(s.block, 0) + 1
            units = [(p, per.get(k, 0)) for k, (p, _) in zip(keys, units)]
        chosen = allocate(_block_units(rel, keys), self.sample, self.seed)
        return describe(STRUCTURE, "sample", self.sample, self.seed, units, chosen)


def parse_selection(options: dict[str, str]) -> Selection:
    def ints(key: str, v: str) -> int:
        try:
            return int(v)
        except ValueError:
            raise TaskError(
                f"{NAME}: option {key}={v!r} is not an integer", where="--tasks"
            ) from None

    known = {
        "source",
        "split",
        "split_seed",
        "sample",
        "seed",
        "patterns",
        "types",
        "polarity",
        "chat",
    }
    for k in options:
        if k not in known:
            raise TaskError(
                f"{NAME}: unknown option {k!r}",
                where="--tasks",
                fix="options: " + ", ".join(sorted(known)),
            )
    split = options.get("split", "all")
    if split not in SPLITS:
        raise TaskError(
            f"{NAME}: split {split!r}", where="--tasks", fix="one of " + ", ".join(SPLITS)
        )
    pats = None
    if "patterns" in options:
        pats = frozenset(ints("patterns", x) for x in options["patterns"].split("+"))
        if not pats <= set(PATTERNS):
            raise TaskError(f"{NAME}: patterns must be in 1..11", where="--tasks")
    types = None
    if "types" in options:
        types = frozenset(options["types"].split("+"))
        if not types <= set(TYPE_NAMES):
            raise TaskError(
                f"{NAME}: unknown type in {options['types']!r}",
                where="--tasks",
                fix="types: " + ", ".join(TYPE_NAMES) + " (joined with +)",
            )
    if "polarity" in options:  # Table 7: affirmative-only / negative-only subsets
        pol = options["polarity"]
        if pol not in POLARITIES:
            raise TaskError(
                f"{NAME}: polarity {pol!r}",
                where="--tasks",
                fix="polarity=affirmative or polarity=negative",
            )
        keep = POLARITIES[pol]
        types = (
            keep
            if types is None
            else frozenset(t for t in types if (t == "affirmation") == ("affirmation" in keep))
        )
        if not types:
            raise TaskError(
                f"{NAME}: polarity={pol} and types={options['types']} select nothing",
                where="--tasks",
                fix="drop one of them, or choose types of that polarity",
            )
    return Selection(
        options.get("source") or None,
        split,
        ints("split_seed", options.get("split_seed", "0")),
        ints("sample", options["sample"]) if "sample" in options else None,
        ints("seed", options.get("seed", "0")),
        pats,
        types,
    )


# -- rendering and scoring --------------------------------------------------------------------------
def _doc(s: Sentence, i: int, size: int) -> Doc:
    return Doc(
        f"{s.block}.{i}",
        {
            "sentence": s.sentence,
            "label": s.label,
            "pattern_id": s.pattern_id,
            "block": s.block,
            "block_size": size,
            "template": s.template,
            "negation_type": s.negation_type,
            "semantic_type": s.semantic_type,
            "syntactic_scope": s.syntactic_scope,
            "distractor": s.distractor,
        },
    )


def _meta(d: Doc) -> dict:
    f = d.fields
    return {
        "pattern_id": f["pattern_id"],
        "pattern": PATTERNS[f["pattern_id"]],
        "block": f["block"],
        "block_size": f["block_size"],
        "template": f["template"],
        "negation_type": f["negation_type"],
        "semantic_type": f["semantic_type"],
        "syntactic_scope": f["syntactic_scope"],
        "is_distractor": f["distractor"] > 0,
        "distractor": f["distractor"],
        "label": f["label"],
    }


def render(d: Doc) -> Rendered:
    """§4.2 prompt; the official code strips the sentence."""
    return Rendered(
        PROMPT.format(sentence=d["sentence"].strip()),
        ["True", "False"],
        0 if d["label"] else 1,
        meta={**_meta(d), "prompt": "plain"},
    )


def render_chat(d: Doc) -> Rendered:
    """§4.2 prompt for chat models (inside the chat template, as one user turn)."""
    r = render(d)
    r.query = CHAT_PROMPT.format(sentence=d["sentence"].strip())
    r.meta["prompt"] = "chat"
    return r


def generated_label(text: str) -> str:
    """The official ``predict_with_generate`` rule: True iff 'true' occurs in the output."""
    return "True" if "true" in text.lower() else "False"


def prediction(rec: dict) -> bool:
    """The predicted truth value of a record of any mode."""
    if "pred_bool" in rec:
        return bool(rec["pred_bool"])
    if "answer" in rec:
        return rec["answer"] == "True"
    return rec["pred"] == 0


@dataclass
class _Collected:
    """What the metrics read from a unit's records, gathered in one pass: the scorer's columns
    (shared strings, singletons and small ints: ~70 bytes per sentence), block sizes, P(True)."""

    columns: Columns
    sizes: dict[str, int]
    p_true: array  # only when every record has one
    all_p: bool


def _gather(records) -> _Collected:
    cols: tuple[list, ...] = ([], [], [], [], [], [], [], [])
    pid, block, neg, sem, scope, dist, label, pred = cols
    shared: dict = {}  # one string object per distinct value (blocks, types)
    sizes: dict[str, int] = {}
    ps = array("d")
    all_p = True
    for r in records:
        m = r["meta"]
        b = shared.setdefault(m["block"], m["block"])
        pid.append(m["pattern_id"])
        block.append(b)
        neg.append(shared.setdefault(m["negation_type"], m["negation_type"]))
        sem.append(shared.setdefault(m["semantic_type"], m["semantic_type"]))
        scope.append(shared.setdefault(m["syntactic_scope"], m["syntactic_scope"]))
        dist.append(m["is_distractor"])
        label.append(m["label"])
        pred.append(prediction(r))
        sizes[b] = m["block_size"]
        p = r.get("p_true")
        if p is None:
            all_p = False
        elif all_p:
            ps.append(p)
    return _Collected(Columns(*cols), sizes, ps, all_p)


def _frac(cells: dict, key: str) -> float:
    c = cells.get(key)
    if not c:
        return float("nan")
    return (c["TP"] + c["TN"]) / (c["TP"] + c["TN"] + c["FP"] + c["FN"])


def scorer_report(
    items: list[Judged] | Columns,
    block_sizes: dict[str, int],
    blocks: dict[str, list[int]] | None = None,
) -> dict:
    """The official scorer's report over ``items``; coherence over complete blocks only (a block
    cut by ``--limit`` or by a type selection cannot be judged as a whole).  ``blocks``: the
    columns' :meth:`Columns.blocks`, when already at hand (the Random row reuses them)."""
    c = items if isinstance(items, Columns) else Columns.of(items)
    blocks = c.blocks() if blocks is None else blocks
    complete = {k: v for k, v in blocks.items() if len(v) == block_sizes[k]}
    rep = report_columns(c, complete)
    rep["blocks"] = {"complete": len(complete), "partial": len(blocks) - len(complete)}
    return rep


def calibration(p: Sequence[float], y: list[bool], bins: int = 10) -> dict:
    """Brier score and expected calibration error of P(True): equal-width bins
    ``b/bins <= p < (b+1)/bins``, 1.0 in the last, as the bin edges compare (not as p·bins rounds)."""
    import numpy as np

    pa = np.asarray(p, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    brier = mean([(pi - float(yi)) ** 2 for pi, yi in zip(p, y)])  # summed in order, as before
    b = np.minimum((pa * bins).astype(np.int64), bins - 1).clip(0)
    b -= (b > 0) & (pa < b / bins)
    b += (b < bins - 1) & (pa >= (b + 1) / bins)
    ok = (pa >= 0) & (pa <= 1) & ((pa < (b + 1) / bins) | (pa == 1.0))
    count = np.bincount(b[ok], minlength=bins)
    conf = np.bincount(b[ok], weights=pa[ok], minlength=bins)
    freq = np.bincount(b[ok], weights=ya[ok], minlength=bins)
    ece = 0.0  # bincount sums each bin in sample order: the per-bin means of old
    for n, cf, fq in zip(count.tolist(), conf.tolist(), freq.tolist()):
        if n:
            ece += n / len(pa) * abs(cf / n - fq / n)
    return {"brier": brier, "ece": ece}


def _p_uniform_opposite(na: int, nb: int) -> tuple[float, float]:
    """P(True) and P(None) of :func:`~negbench.tasks.notadataset.truth_scorer._uniform_opposite`
    on two groups of ``na`` and ``nb`` fair coins (equal or opposite: the same probability)."""
    ua = 2.0 ** (1 - na) if na else 1.0  # a group's answers all alike
    ub = 2.0 ** (1 - nb) if nb else 1.0
    if na and nb:
        return ua * ub / 2, 0.0
    return 0.0, ua * ub  # one side empty: None when the other is uniform, else False


def random_expectation(
    items: list[Judged] | Columns,
    block_sizes: dict[str, int],
    blocks: dict[str, list[int]] | None = None,
) -> dict:
    """Table 4's Random row on the same sentences, as the **expectation** of a fair coin per
    sentence (percent), not one draw: every accuracy cell is 50 (each sentence is right with
    probability ½); a coherence cell is 100 · Σ P(coherent) / Σ P(scorable) over the complete
    blocks, from the groups the official verdict compares (all answers of a group alike with
    probability 2^(1−k); "All" also needs every answer right or every answer wrong, 2 configurations
    of 2^n).  Exact where every block is scorable (the release's complete blocks); otherwise the
    ratio of the expected counts."""
    from negbench.tasks.notadataset.truth_scorer import ANTONYMY, columns_verdict

    c = items if isinstance(items, Columns) else Columns.of(items)
    blocks = c.blocks() if blocks is None else blocks
    shown = table4_row(scorer_report(c, block_sizes, blocks))  # which cells exist
    out = {k: (50.0 if v == v else v) for k, v in shown.items() if not k.startswith("coherence")}
    complete = [idx for k, idx in blocks.items() if len(idx) == block_sizes[k]]
    cells = ("All", "Affirmation-Negation_Input", "Affirmation-Negation_Distractor")
    coherent = dict.fromkeys(cells, 0.0)
    scorable = dict.fromkeys(cells, 0.0)
    for idx in complete:
        pid = c.pattern_id[idx[0]]
        antonymy = pid in ANTONYMY
        sizes = [0, 0, 0, 0]  # negated, affirmative; then with distractor (as _verdict)
        for i in idx:
            aff = c.negation_type[i] == "affirmation"
            regular = (not aff) if c.is_distractor[i] else (aff != antonymy)
            if c.label[i] == regular:
                sizes[2 * c.is_distractor[i] + aff] += 1
        wo_t, wo_n = _p_uniform_opposite(sizes[1], sizes[0])
        w_t, w_n = _p_uniform_opposite(sizes[3], sizes[2])
        for cell, (t, none) in (
            ("Affirmation-Negation_Input", (wo_t, wo_n)),
            ("Affirmation-Negation_Distractor", (w_t, w_n)),
        ):
            coherent[cell] += t
            scorable[cell] += 1 - none
        # All: None when neither side is False and one is None; True only on the all-right and
        # the all-wrong answers, and only where the verdict holds for them
        all_none = (1 - (1 - wo_t - wo_n)) * (1 - (1 - w_t - w_n)) - wo_t * w_t
        all_true = 0.0
        for answers in (c.label, [not x for x in c.label]):
            if columns_verdict(idx, pid, c.with_pred(list(answers)))["All"] is True:
                all_true += 0.5 ** len(idx)
        coherent["All"] += all_true
        scorable["All"] += 1 - all_none
    names = {
        "All": "coherence_all",
        "Affirmation-Negation_Input": "coherence_wo_distractor",
        "Affirmation-Negation_Distractor": "coherence_w_distractor",
    }
    for cell, key in names.items():
        out[key] = 100 * coherent[cell] / scorable[cell] if scorable[cell] > 0 else 0.0
    return {k: out[k] for k in shown}


def random_baseline(
    items: list[Judged] | Columns,
    block_sizes: dict[str, int],
    seed: int = 0,
    blocks: dict[str, list[int]] | None = None,
) -> dict:
    """Table 4's Random row on the same sentences: the expectation of a fair coin per sentence
    (:func:`random_expectation`; ``seed`` is kept for callers and unused — one draw of the coin
    moved coherence by tens of points on small subsets)."""
    return random_expectation(items, block_sizes, blocks)


def random_draw(
    items: list[Judged] | Columns,
    block_sizes: dict[str, int],
    seed: int = 0,
    blocks: dict[str, list[int]] | None = None,
) -> dict:
    """One draw of the fair coin per sentence, scored like a run (what the Random row was
    before it became the expectation; kept to check the expectation against many draws)."""
    c = items if isinstance(items, Columns) else Columns.of(items)
    flip = random.Random(seed).random
    return table4_row(
        scorer_report(c.with_pred([flip() < 0.5 for _ in c.pred]), block_sizes, blocks)
    )


def metrics(mode: str, records: Iterable[dict]) -> dict:
    """Table 4 columns (fractions), accuracy by negation type and by pattern, calibration, and the
    official scorer report (``scorer``, percent, as ``evaluate.py`` writes it).  Reads
    ``records`` once, in order (a list, or a saved unit's samples streamed from disk)."""
    got = _gather(records)
    items, sizes = got.columns, got.sizes
    blocks = items.blocks()
    rep = scorer_report(items, sizes, blocks)
    coh = rep["coherence_scores"]
    out: dict = {
        "coherence_all": coh["All"]["Coherence_percentage"] / 100,
        "coherence_wo_distractor": coh["Affirmation-Negation_Input"]["Coherence_percentage"] / 100,
        "coherence_w_distractor": coh["Affirmation-Negation_Distractor"]["Coherence_percentage"]
        / 100,
        "acc_aff_wo": _frac(rep, "input_affirmation"),
        "acc_neg_wo": _frac(rep, "input_negation"),
        "acc_aff_w": _frac(rep, "distractor_affirmation"),
        "acc_neg_w": _frac(rep, "distractor_negation"),
        "acc_affirmation": _frac(rep, "all_affirmations"),
        "acc_negation": _frac(rep, "all_negations"),
        "blocks_complete": rep["blocks"]["complete"],
        "blocks_partial": rep["blocks"]["partial"],
    }
    if not rep["blocks"]["complete"]:  # no whole block: coherence is undefined, not 0
        for k in ("coherence_all", "coherence_wo_distractor", "coherence_w_distractor"):
            out[k] = float("nan")
    na = rep.get("Negation_analysis", {})
    for t in NEGATION_TYPES:
        out[f"acc_{t}"] = _frac(na, f"{t}_all")
    out["pred_true_rate"] = mean([float(x) for x in items.pred])
    if got.all_p and items.pred:
        out.update(calibration(got.p_true, items.label))
    out["by_pattern"] = {
        name: {
            k: v / 100 if isinstance(v, (int, float)) else v
            for k, v in table4_row(rep[name]).items()
        }
        for name in PATTERNS.values()
        if name in rep
    }
    out["random_baseline"] = random_baseline(items, sizes, blocks=blocks)
    out["scorer"] = rep
    return out


# -- tables -----------------------------------------------------------------------------------------
T4_COLS = [
    ("coherence_all", "Coh. All"),
    ("coherence_wo_distractor", "Coh. W/o"),
    ("coherence_w_distractor", "Coh. W/"),
    ("acc", "Acc. All"),
    ("acc_aff_wo", "W/o Aff."),
    ("acc_neg_wo", "W/o Neg."),
    ("acc_aff_w", "W/ Aff."),
    ("acc_neg_w", "W/ Neg."),
]


def _pct(v) -> str:
    return "–" if v is None or v != v else f"{100 * v:.1f}"


def tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    """Table 4 (coherence and accuracy, percent; a Random row on the same sentences), Table 5's
    per-pattern accuracy without distractor, and Table 7's accuracy by negation type."""
    if not rows:
        return ""
    head = (
        "| run | " + " | ".join(c for _, c in T4_COLS) + " |\n|---" + "|---:" * len(T4_COLS) + "|\n"
    )
    lines = []
    rb = rows[0][1].get("random_baseline") or {}
    lines.append(
        "| Random (expected, same sentences) | "
        + " | ".join(f"{rb.get(k, float('nan')):.1f}" for k, _ in T4_COLS)
        + " |"
    )
    for name, m in rows:
        lines.append(f"| {name} | " + " | ".join(_pct(m.get(k)) for k, _ in T4_COLS) + " |")
    out = ["Table 4 shape (zero-shot; percent):\n", head + "\n".join(lines)]
    name, m = rows[-1]
    bp = m.get("by_pattern") or {}
    if bp:
        t = [
            "| pattern | W/o Aff. | W/o Neg. | W/ Aff. | W/ Neg. | Acc. | Coh. All | Coh. W/o | Coh. W/ |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for pid, pname in PATTERNS.items():
            if pname in bp:
                r = bp[pname]
                t.append(
                    f"| #{pid:02d} {pname} | "
                    + " | ".join(
                        _pct(r.get(k))
                        for k in (
                            "acc_aff_wo",
                            "acc_neg_wo",
                            "acc_aff_w",
                            "acc_neg_w",
                            "acc",
                            "coherence_all",
                            "coherence_wo_distractor",
                            "coherence_w_distractor",
                        )
                    )
                    + " |"
                )
        out += [f"\nPer pattern (Table 5 extended), {name}:\n", "\n".join(t)]
    t = [
        "| run | " + " | ".join(NEGATION_TYPES) + " | affirmation |",
        "|---" + "|---:" * (len(NEGATION_TYPES) + 1) + "|",
    ]
    for name, m in rows:
        t.append(
            f"| {name} | "
            + " | ".join(_pct(m.get(f"acc_{x}")) for x in NEGATION_TYPES)
            + f" | {_pct(m.get('acc_affirmation'))} |"
        )
    out += ["\nAccuracy by negation type (Table 7 columns):\n", "\n".join(t)]
    return "\n".join(out)


# -- the task ---------------------------------------------------------------------------------------
MODES = {
    "next_token": ModeSpec(
        render,
        TrueFalseNextToken(),
        "§4.2: P(True)/(P(True)+P(False)) > 0.5 from one next-token distribution",
        render_chat=render_chat,
    ),
    "generate": ModeSpec(
        render,
        Generation(stop=(), max_tokens=6, extract=generated_label),
        "official predict_with_generate: 6 greedy tokens, True iff 'true' in them",
        render_chat=render_chat,
    ),
    "cloze": ModeSpec(
        render,
        ChoiceLoglikelihood(metrics=("acc",)),
        "log-likelihood of ' True' vs ' False' (lm-eval multiple_choice)",
        render_chat=render_chat,
    ),
}

OPTION_ORDER = (
    "source",
    "split",
    "split_seed",
    "sample",
    "seed",
    "patterns",
    "types",
    "polarity",
    "chat",
)
#: ``chat=auto`` (default): the official ``run.py`` uses the chat prompt whenever the tokenizer has
#: a chat template; ``on`` / ``off`` force the chat / plain prompt (``--chat`` does not override).
CHAT_SETTINGS = ("auto", "on", "off")


@dataclass
class NotADatasetTask(Task):
    """The task with its own chat setting, read by ``runner.use_chat``."""

    chat: str = "auto"


def canonical_name(options: dict[str, str]) -> str:
    opts = {
        k: v
        for k, v in options.items()
        if not (k == "source" and not v) and not (k == "chat" and v == "auto")
    }
    if not opts:
        return NAME
    return NAME + "[" + ",".join(f"{k}={opts[k]}" for k in OPTION_ORDER if k in opts) + "]"


class SentenceDocs(Sequence):
    """The selected sentences as Docs built on demand: 12 bytes per sentence (a reference to the
    release's Sentence and its index in the block) instead of a Doc with a dict of fields, so a
    381,300-sentence run holds its records once (in the release)."""

    def __init__(self, sentences: list[Sentence], index: array, sizes: dict[str, int]):
        self._s, self._i, self._sizes = sentences, index, sizes

    def __len__(self) -> int:
        return len(self._s)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return SentenceDocs(self._s[i], self._i[i], self._sizes)
        s = self._s[i]
        return _doc(s, self._i[i], self._sizes[s.block])


def _docs(sel: Selection, split: str) -> SentenceDocs:
    return _docs_cached(sel.resolved(), split)


@lru_cache(maxsize=32)
def _docs_cached(sel: Selection, split: str) -> SentenceDocs:
    rel = load_release(sel.source)
    sents = sel.sentences(split)
    counter: dict[str, int] = {}
    index = array("I")
    for s in sents:
        i = counter.get(s.block, 0)
        counter[s.block] = i + 1
        index.append(i)
    return SentenceDocs(sents, index, {k: b.size for k, b in rel.blocks.items()})


def make_task(options: dict[str, str]) -> Task:
    sel = parse_selection(options)
    name = canonical_name(options)
    chat = options.get("chat", "auto")
    if chat not in CHAT_SETTINGS:
        raise TaskError(
            f"{NAME}: chat={chat!r}",
            where="--tasks",
            fix="chat=auto (chat prompt when the model has a chat template), chat=on "
            "or chat=off (plain prompt)",
        )
    return NotADatasetTask(
        name=name,
        summary="This is not a Dataset: 381,300 true/false sentences, coherence per block "
        "(options: split, sample, seed, patterns, types, source, chat=auto|on|off)",
        load=lambda split: _docs(sel, sel.split if split == "eval" else split),
        modes=MODES,
        test_split="eval",
        fewshot_split=None,
        default_modes=("next_token",),
        extra_metrics=metrics,
        stream_metrics=True,
        tables=tables,
        source=f"{sel.source or '$NEGBENCH_NOTADATASET / ../shared/data/not-a-dataset'} "
        "(This is not a Dataset, Apache-2.0)",
        chat=chat,
        structure=STRUCTURE,
        data=DATA,
        own_subset=lambda split: sel.subset(sel.split if split == "eval" else split),
    )


TASK = make_task({})
