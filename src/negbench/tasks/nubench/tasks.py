"""Thunder-NUBench (So et al., EACL 2026 Findings): sentence-level negation understanding (English).

Data (App. L): the sentence-negation pairs (``index, premise, hypothesis``; split ``train``) and
the multiple-choice set (``wikipedia_index, index, sentence, choice1..choice4, choice2_type,
choice2_element``; splits ``demonstration`` and ``test``), from a local folder (JSON lines, JSON
arrays, CSV or Parquet files named after the split) or the Hugging Face id
``thunder-research-group/SNU_Thunder-NUBench`` (needs the optional ``datasets`` package).
choice1 = standard negation (gold), choice2 = local negation, choice3 = contradiction, choice4 =
paraphrase; ``choice2_type == "non-applicable"`` items have no choice2 (three options).
See ``src/negbench/tasks/nubench/README.md``.

Modes, one task definition (App. M, Listings 7-9, 13, 14):

* ``completion`` — the paper's completion-based evaluation: the query
  ``Negate the sentence.\\nSentence: {sentence}\\nNegation:`` and the choices
  [choice1, choice2, choice3, choice4] (choice2 dropped when non-applicable) as continuations;
  gold 0; ``acc`` (the paper's metric) and ``acc_norm``.
* ``option`` — the paper's option-selection evaluation: the options shuffled with ONE
  ``random.Random(42)`` consumed by ``rng.shuffle`` sequentially over the split in dataset order
  (each split — test, demonstration — with its own fresh generator, as lm-eval's
  ``process_docs`` does), the Listing 9 prompt, greedy generation until ``"\\n"`` / ``"</s>"``,
  the Listing 8 filter chain, ``exact_match`` ignoring case and punctuation against the gold
  letter.  The shuffle is computed at load time and stored in each record's ``option_keys``, so
  rendering stays a pure function of one record.
* ``letter`` — negbench's addition for base models: the log-likelihood of the option letters
  (" A", " B", ...) after the same option prompt; ``acc``.

Prompt styles (App. O) are three tasks built by :func:`make_tasks`: ``nubench`` (simple),
``nubench-definition`` and ``nubench-detail`` (Listing 12), each with all three modes.

Protocol (§5.1, Table 11): shots 0, 1, 5, 10 from the demonstration split, seeds 42, 1234, 3000,
5000, 7000 (lm-eval sampler); mean and SD over seeds.

Error analysis (§5.3, App. R) via :mod:`negbench.scoring.negation_errors`: error rate, incorrect-choice
distribution, local-negation confusion rate per ``choice2_type``, and in option mode the count of
wrong-format answers.  Alpaca export (App. N, Listing 11): exporter ``nubench-negation``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
import re
import string
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Iterable, Sequence

from negbench.errors import DataError, TaskError
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
from negbench.scoring.negation_errors import error_analysis, format_error_table
from negbench.tasks.data_source import DataSource, hub_config_names, load_hub_dataset
from negbench.records import field, iter_jsonl, read_text
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task

HF_ID = "thunder-research-group/SNU_Thunder-NUBench"
SOURCE = (
    f"Thunder-NUBench, So et al. (Findings of EACL 2026; arXiv 2506.14397); Hugging Face {HF_ID}"
)

# -- schema ----------------------------------------------------------------------------------------
MC_SPLITS = ("demonstration", "test")
PAIR_SPLITS = ("train",)
SPLITS = PAIR_SPLITS + MC_SPLITS
#: Hugging Face configuration per split (Listing 7 names the multiple-choice one).
HF_CONFIGS = {
    "demonstration": "multiple-choice",
    "test": "multiple-choice",
    "train": "sentence-negation",
}

#: Table 5 / Table 10 sizes of the release (not enforced: the loader reads what it is given).
PAPER_COUNTS = {"train": 3772, "demonstration": 50, "test": 1261}
PAPER_TYPE_COUNTS = {
    "demonstration": {
        "relative_part": 12,
        "pp_part": 12,
        "adverb_part": 12,
        "compound_part": 12,
        "non-applicable": 2,
    },
    "test": {
        "relative_part": 312,
        "pp_part": 308,
        "adverb_part": 310,
        "compound_part": 294,
        "non-applicable": 37,
    },
}

NON_APPLICABLE = "non-applicable"
#: The local-negation types of Table 3 / Table 10, in Table 6's column order.
LOCAL_TYPES = ("relative_part", "pp_part", "compound_part", "adverb_part")
CHOICE2_TYPES = ("relative_part", "pp_part", "adverb_part", "compound_part", NON_APPLICABLE)
CHOICE_KEYS = ("choice1", "choice2", "choice3", "choice4")
#: What each choice is (``negation_errors`` option types).
KEY_TYPES = {
    "choice1": "standard",
    "choice2": "local",
    "choice3": "contradiction",
    "choice4": "paraphrase",
}
LETTERS = ("A", "B", "C", "D")

# -- prompts ---------------------------------------------------------------------------------------
#: App. O prompt styles: the instruction that replaces "Negate the sentence.".
INSTRUCTIONS = {
    "simple": "Negate the sentence.",
    "definition": (
        "Negate the main predicate of the main clause so that the proposition is "
        "logically reversed."
    ),
    "detail": (
        "Reverse the truth value of the main predicate (verbal phrase) in the main clause, while "
        "preserving all other elements of the main clause unchanged.\n"
        "\n"
        "1) Identify the main clause and its main verb (main predicate). Ignore subordinate "
        "clauses.\n"
        "2) Preserve all other main-clause content.\n"
        '3) Insert a negative particle such as "not" into the main verb, or replace it with a '
        "complementary antonym only if it forms an absolute binary (e.g., alive/dead, "
        "true/false, possible/impossible).\n"
        "4) If the sentence contains multiple propositions connected by logical operators (e.g., "
        "and, or, conditional constructions), negate it in a way that reverses the entire "
        "proposition (e.g., A and B => not A or not B; If A then B => A and not B)."
    ),
}
#: What separates the instruction from ``Sentence:`` (Listing 9 one newline; Listing 12 a blank line).
SEPARATORS = {"simple": "\n", "definition": "\n", "detail": "\n\n"}
STYLES = tuple(INSTRUCTIONS)
TASK_NAMES = {"simple": "nubench", "definition": "nubench-definition", "detail": "nubench-detail"}

#: Listing 9, option-selection prompt.
OPTION_HEADER = (
    "Given the following instruction and candidate answers, choose the single best answer."
)
#: Listing 8 generation settings (``until``); lm-eval's default ``max_gen_toks``.
STOP = ("</s>", "\n")
MAX_TOKENS = 256
#: Listing 9 ``rng = random.Random(seed)`` with ``seed=42``.
SHUFFLE_SEED = 42
TARGET_DELIMITER = " "
FEWSHOT_DELIMITER = "\n\n"
PROTOCOL_SHOTS = (0, 1, 5, 10)
PROTOCOL_SEEDS = (42, 1234, 3000, 5000, 7000)


# -- data location ---------------------------------------------------------------------------------
DATA = DataSource("Thunder-NUBench", "NEGBENCH_NUBENCH", "nubench", HF_ID)


def data_root() -> Path:
    """``$NEGBENCH_DATA/nubench`` when that variable is set, else ``../shared/data/nubench``
    relative to the current working directory."""
    local = DATA.local()
    assert local is not None  # DATA names a folder
    return local


def default_source() -> str:
    """``$NEGBENCH_NUBENCH`` (a folder, or a Hugging Face id such as
    ``hf:thunder-research-group/SNU_Thunder-NUBench``), else the data tree, else the hub
    (:mod:`negbench.tasks.data_source`)."""
    return DATA.resolve()


# -- record validation -----------------------------------------------------------------------------
def _empty(v: Any) -> bool:
    return (
        v is None
        or (isinstance(v, float) and math.isnan(v))
        or (isinstance(v, str) and not v.strip())
    )


def _ident(obj: dict, name: str, path: str, rec: str) -> int | str:
    """``index`` / ``wikipedia_index``: an int or a non-empty string (a float from a table that
    holds a whole number becomes an int)."""
    if name not in obj or _empty(obj[name]):
        raise DataError(
            "missing field" if name not in obj or obj[name] is None else "empty value",
            path=path,
            record=rec,
            field=name,
        )
    v = obj[name]
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise DataError(
            f"expected int or str, got {type(v).__name__} {v!r:.60}",
            path=path,
            record=rec,
            field=name,
        )
    if isinstance(v, float):
        if not v.is_integer():
            raise DataError(
                f"expected a whole number, got {v!r}", path=path, record=rec, field=name
            )
        v = int(v)
    return v.strip() if isinstance(v, str) else v


def parse_mc(obj: dict, path: str, rec: str) -> dict[str, Any]:
    """Validate one multiple-choice record (App. L.2); returns its fields.

    ``choice2`` must be absent / null / empty exactly when ``choice2_type`` is non-applicable;
    ``choice2_element`` is descriptive and optional."""
    fields: dict[str, Any] = {
        "wikipedia_index": _ident(obj, "wikipedia_index", path, rec),
        "index": _ident(obj, "index", path, rec),
        "sentence": field(obj, "sentence", str, path=path, record=rec),
        "choice1": field(obj, "choice1", str, path=path, record=rec),
    }
    ctype = field(obj, "choice2_type", str, path=path, record=rec)
    if ctype not in CHOICE2_TYPES:
        raise DataError(
            f"unknown choice2_type {ctype!r}",
            path=path,
            record=rec,
            field="choice2_type",
            fix="one of " + ", ".join(CHOICE2_TYPES),
        )
    c2 = obj.get("choice2")
    if ctype == NON_APPLICABLE:
        if not _empty(c2):
            raise DataError(
                "a non-applicable item has a non-empty choice2",
                path=path,
                record=rec,
                field="choice2",
                fix="empty choice2, or give the item its local-negation type",
            )
        fields["choice2"] = None
    else:
        fields["choice2"] = field(obj, "choice2", str, path=path, record=rec)
    fields["choice3"] = field(obj, "choice3", str, path=path, record=rec)
    fields["choice4"] = field(obj, "choice4", str, path=path, record=rec)
    fields["choice2_type"] = ctype
    el = obj.get("choice2_element")
    if not _empty(el) and not isinstance(el, str):
        raise DataError(
            f"expected str, got {type(el).__name__} {el!r:.60}",
            path=path,
            record=rec,
            field="choice2_element",
        )
    fields["choice2_element"] = None if _empty(el) else el
    return fields


def parse_pair(obj: dict, path: str, rec: str) -> dict[str, Any]:
    """Validate one sentence-negation pair (App. L.1)."""
    return {
        "index": _ident(obj, "index", path, rec),
        "premise": field(obj, "premise", str, path=path, record=rec),
        "hypothesis": field(obj, "hypothesis", str, path=path, record=rec),
    }


# -- the option shuffle (Listing 9) ----------------------------------------------------------------
def present_keys(fields: dict) -> list[str]:
    """The choice keys an item has, in order (Listing 9's ``gathered``)."""
    return [
        k
        for k in CHOICE_KEYS
        if fields.get(k) and not (k == "choice2" and fields["choice2_type"] == NON_APPLICABLE)
    ]


def shuffle_orders(items: Sequence[dict], seed: int = SHUFFLE_SEED) -> list[list[str]]:
    """Listing 9's option order for each item of one split, in dataset order: one
    ``random.Random(seed)``, one ``rng.shuffle`` per item.  (Shuffling the keys consumes the
    generator exactly as shuffling Listing 9's (text, key) pairs does: ``shuffle`` depends only on
    the length.)"""
    rng = random.Random(seed)
    out = []
    for f in items:
        keys = present_keys(f)
        if len(keys) < 3:  # Listing 9's assert
            raise ValueError("need at least 3 choices for multiple-choice")
        rng.shuffle(keys)
        out.append(keys)
    return out


def mc_docs(rows: Sequence[tuple[dict, str, str]], split: str) -> list[Doc]:
    """Docs of one multiple-choice split from validated (fields, path, record) rows in dataset
    order; adds ``split`` and the split's option shuffle (``option_keys``)."""
    _check_unique(rows)
    orders = shuffle_orders([f for f, _, _ in rows])
    return [
        Doc(f"{split}-{f['index']}", {**f, "split": split, "option_keys": keys}, p)
        for (f, p, _), keys in zip(rows, orders)
    ]


def pair_docs(rows: Sequence[tuple[dict, str, str]], split: str) -> list[Doc]:
    _check_unique(rows)
    return [Doc(f"{split}-{f['index']}", {**f, "split": split}, p) for f, p, _ in rows]


def _check_unique(rows: Sequence[tuple[dict, str, str]]) -> None:
    seen: dict[str, str] = {}
    for f, p, rec in rows:
        k = str(f["index"])
        if k in seen:
            raise DataError(
                f"duplicate index {f['index']!r} (also {seen[k]})",
                path=p,
                record=rec,
                field="index",
                fix="every record of a split needs its own index",
            )
        seen[k] = rec


def docs_from_objects(objs: Iterable[dict], split: str, path: str = "<records>") -> list[Doc]:
    """Validated Docs of ``split`` from plain dicts in dataset order (records named ``item i``)."""
    parse = parse_pair if split in PAIR_SPLITS else parse_mc
    rows = [(parse(o, path, f"item {i}"), path, f"item {i}") for i, o in enumerate(objs)]
    return pair_docs(rows, split) if split in PAIR_SPLITS else mc_docs(rows, split)


# -- reading files ---------------------------------------------------------------------------------
_EXTS = (".jsonl", ".json", ".csv", ".parquet")
_ALIASES = {"train": ("train",), "demonstration": ("demonstration", "demo"), "test": ("test",)}
_MAX_DEPTH = 3


def _read_objects(path: Path) -> list[tuple[str, dict]]:
    """(record name, object) for each record of one file: JSON lines (``line n``), a JSON array
    (``item i``, 0-based), CSV (``row n``, 1-based after the header) or Parquet (``row i``)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl" or (suffix == ".json" and not _is_json_array(path)):
        return [(f"line {n}", obj) for n, obj in iter_jsonl(path)]
    if suffix == ".json":
        try:
            data = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON ({exc.msg} at line {exc.lineno})",
                path=str(path),
                fix="a JSON array of objects, or one JSON object per line",
            ) from None
        out = []
        for i, obj in enumerate(data):
            if not isinstance(obj, dict):
                raise DataError(
                    "an array item is not a JSON object", path=str(path), record=f"item {i}"
                )
            out.append((f"item {i}", obj))
        return out
    if suffix == ".csv":
        text = read_text(path)
        reader = csv.DictReader(io.StringIO(text))
        out = []
        for n, row in enumerate(reader, 1):
            if None in row:
                raise DataError("more cells than header columns", path=str(path), record=f"row {n}")
            out.append((f"row {n}", {k: v for k, v in row.items() if k}))
        return out
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq  # optional, imported only here
        except ImportError:
            raise DataError(
                "reading Parquet files needs the 'pyarrow' package, which is not installed",
                path=str(path),
                fix="pip install pyarrow, or convert the file to JSON lines",
            ) from None
        return [(f"row {i}", obj) for i, obj in enumerate(pq.read_table(path).to_pylist())]
    raise DataError(
        f"unsupported file type {suffix!r}",
        path=str(path),
        fix="use .jsonl, .json, .csv or .parquet",
    )


def _is_json_array(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096).decode("utf-8", "ignore").lstrip("\ufeff \t\r\n")
    return head.startswith("[")


def _name_matches(name: str, split: str) -> bool:
    low = name.lower()
    for ext in _EXTS:
        if low.endswith(ext):
            stem = low[: -len(ext)]
            return any(stem == a or re.fullmatch(rf"{a}-\d+-of-\d+", stem) for a in _ALIASES[split])
    return False


def find_split_files(root: Path, split: str) -> list[Path]:
    """The files holding ``split`` under ``root``: names ``{split}.{jsonl,json,csv,parquet}``
    (``demo`` also names the demonstration split; Hugging Face shards ``{split}-00000-of-00002``
    are joined in order), searched up to three folders deep; the shallowest folder that has them
    wins.  Two formats of one split in one folder, or two folders at the same depth, are
    ambiguous and raise a DataError."""
    found: dict[Path, list[Path]] = {}

    def walk(d: Path, depth: int) -> None:
        try:
            entries = sorted(d.iterdir())
        except OSError:
            return
        for e in entries:
            if e.name.startswith("."):
                continue
            if e.is_dir():
                if depth < _MAX_DEPTH:
                    walk(e, depth + 1)
            elif _name_matches(e.name, split):
                found.setdefault(d, []).append(e)

    walk(root, 0)
    if not found:
        raise DataError(
            f"Thunder-NUBench {split} split not found",
            path=str(root),
            fix=f"put {split}.jsonl (or .json / .csv) in the folder, or point "
            "NEGBENCH_NUBENCH / NEGBENCH_DATA at the data",
        )
    depth = min(len(d.relative_to(root).parts) for d in found)
    dirs = [d for d in found if len(d.relative_to(root).parts) == depth]
    if len(dirs) > 1:
        raise DataError(
            f"ambiguous {split} split: files in " + ", ".join(str(d) for d in dirs),
            path=str(root),
            fix="point NEGBENCH_NUBENCH at the folder you mean",
        )
    files = found[dirs[0]]
    shards = all(re.search(r"-\d+-of-\d+$", _stem(f)) for f in files)
    if len(files) > 1 and (not shards or len({f.suffix.lower() for f in files}) > 1):
        raise DataError(
            f"ambiguous {split} split: " + ", ".join(f.name for f in files),
            path=str(dirs[0]),
            fix="keep one file (one format) per split",
        )
    return files


def _stem(p: Path) -> str:
    return p.name[: -len(p.suffix)].lower()


def _load_local(root: Path, split: str) -> list[Doc]:
    parse = parse_pair if split in PAIR_SPLITS else parse_mc
    rows = []
    for path in find_split_files(root, split):
        objs = _read_objects(path)
        if not objs:
            raise DataError("no records", path=str(path))
        rows += [(parse(o, str(path), rec), str(path), rec) for rec, o in objs]
    return pair_docs(rows, split) if split in PAIR_SPLITS else mc_docs(rows, split)


def _config_candidates(split: str, names: Sequence[str]) -> list[str]:
    want = ("choice",) if split in MC_SPLITS else ("pair", "negation", "sentence")
    return [
        n
        for n in names
        if any(w in n.lower() for w in want) and (split in MC_SPLITS or "choice" not in n.lower())
    ]


def _load_hf(dataset_id: str, split: str) -> list[Doc]:
    where = f"hf:{dataset_id}"
    config = HF_CONFIGS[split]
    local = "use a local folder of the release (NEGBENCH_DATA / NEGBENCH_NUBENCH)"
    try:
        ds = load_hub_dataset(dataset_id, split, config, what="Thunder-NUBench", local=local)
    except DataError as first:  # the configuration may be named otherwise
        ds = None
        for alt in _config_candidates(split, hub_config_names(dataset_id)):
            if alt == config:
                continue
            try:
                ds = load_hub_dataset(dataset_id, split, alt, what="Thunder-NUBench", local=local)
                config = alt
                break
            except DataError:
                continue
        if ds is None:
            raise first
    src = f"{where}/{config}/{split}"
    objs = [dict(o) for o in ds]
    if not objs:
        raise DataError("no records", path=src)
    parse = parse_pair if split in PAIR_SPLITS else parse_mc
    rows = [(parse(o, src, f"row {n}"), src, f"row {n}") for n, o in enumerate(objs)]
    return pair_docs(rows, split) if split in PAIR_SPLITS else mc_docs(rows, split)


_HF_PAT = re.compile(r"^[\w.-]+/[\w.-]+$")


@lru_cache(maxsize=None)
def _load_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if source.startswith("hf:"):
        return tuple(_load_hf(source[3:], split))
    if root.is_dir():
        return tuple(_load_local(root, split))
    if not root.exists() and _HF_PAT.match(source):
        return tuple(_load_hf(source, split))
    raise DataError(
        "Thunder-NUBench data folder not found",
        path=source,
        fix="set NEGBENCH_DATA (folder holding nubench/), NEGBENCH_NUBENCH (a folder or "
        f"hf:{HF_ID}), or run from the project root next to ../shared/data",
    )


def load_split(split: str, source: str | os.PathLike | None = None) -> list[Doc]:
    """The records of ``train`` (pairs), ``demonstration`` or ``test`` (multiple choice) from a
    folder or a Hugging Face id (``hf:owner/name`` or ``owner/name``); ``source`` defaults to
    :func:`default_source`.  Multiple-choice records carry their split's option shuffle."""
    if split not in SPLITS:
        raise TaskError(
            f"Thunder-NUBench has no split '{split}'",
            where="split",
            fix="one of " + ", ".join(SPLITS),
        )
    src = str(source) if source is not None else default_source()
    if not src.startswith("hf:") and Path(src).is_dir():
        src = str(Path(src).resolve())
    return list(_load_cached(src, split))


def clear_cache() -> None:
    _load_cached.cache_clear()


# -- rendering -------------------------------------------------------------------------------------
def _head(style: str, sentence: str) -> str:
    return f"{INSTRUCTIONS[style]}{SEPARATORS[style]}Sentence: {sentence}"


def completion_query(sentence: str, style: str = "simple") -> str:
    """Listing 9 ``process_docs_completion`` (with the App. O instruction of ``style``)."""
    return f"{_head(style, sentence)}\nNegation:"


def option_query(sentence: str, options: Sequence[str], style: str = "simple") -> str:
    """Listing 9 ``process_docs_option``: the prompt for options already in display order."""
    initial_prompt = f"{_head(style, sentence)}\n"
    labels = LETTERS[: len(options)]
    lines = [OPTION_HEADER, f"Instruction: {initial_prompt}"]
    lines += [f"{lab}. {ch}" for lab, ch in zip(labels, options)]
    lines += [
        "",
        f"Your response should be one of {', '.join(labels)}.",
        "Only output the letter.",
        "Answer:",
    ]
    return "\n".join(lines)


def _meta(d: Doc, keys: Sequence[str]) -> dict[str, Any]:
    return {
        "index": d["index"],
        "wikipedia_index": d["wikipedia_index"],
        "choice2_type": d["choice2_type"],
        "option_keys": list(keys),
        "option_types": [KEY_TYPES[k] for k in keys],
    }


def render_completion(d: Doc, style: str = "simple") -> Rendered:
    keys = present_keys(d.fields)
    return Rendered(
        completion_query(d["sentence"], style), [d[k] for k in keys], 0, meta=_meta(d, keys)
    )


def render_option(d: Doc, style: str = "simple") -> Rendered:
    """Choices are the letters; gold is the position of choice1 in the stored shuffle."""
    keys = list(d["option_keys"])
    labels = list(LETTERS[: len(keys)])
    gold = keys.index("choice1")
    return Rendered(
        option_query(d["sentence"], [d[k] for k in keys], style),
        labels,
        gold,
        target=labels[gold],
        meta=_meta(d, keys),
    )


# -- the Listing 8 answer filter -------------------------------------------------------------------
_FIRST_LINE = re.compile("^(.*?)?(?=\n|$)")  # regex_pattern: "^(.*?)?(?=\n|$)"
_TRAILING_WS = re.compile("^(.*?)\\s*$")  # regex_pattern: "^(.*?)\\s*$"


def _regex_filter(
    pattern: re.Pattern, resp: str, group_select: int = 0, fallback: str = "[invalid]"
) -> str:
    """lm-eval 0.4 ``RegexFilter`` on one response."""
    found = pattern.findall(resp)
    if found:
        match = found[group_select]
        if isinstance(match, tuple):
            groups = [m for m in match if m]
            match = groups[0] if groups else fallback
        return match.strip()
    return fallback


def listing8_filter(output: str) -> str:
    """Listing 8's ``get_response`` chain: regex ``^(.*?)?(?=\\n|$)``, ``remove_whitespace``
    (lstrip), regex ``^(.*?)\\s*$``, ``take_first`` (one response per item)."""
    s = _regex_filter(_FIRST_LINE, output)
    s = s.lstrip()
    return _regex_filter(_TRAILING_WS, s)


_PUNCT = str.maketrans("", "", string.punctuation)


def em_normalize(s: str) -> str:
    """lm-eval ``exact_match`` with ``ignore_case`` and ``ignore_punctuation``: lower-case, delete
    ``string.punctuation``; whitespace is NOT normalised."""
    return s.lower().translate(_PUNCT)


def option_answer(output: str) -> str | None:
    """The option letter the filtered output names (``A``..``D``) or None (wrong format): a
    filtered response scores ``exact_match`` against a letter only if it normalises to that
    letter, so this keeps lm-eval's score while telling which option was picked."""
    n = em_normalize(listing8_filter(output))
    return n.upper() if n in ("a", "b", "c", "d") else None


@dataclass(frozen=True)
class OptionGeneration(Generation):
    """:class:`Generation` with the Listing 8 filter; also records the filtered response
    (``filtered``) and treats a letter the item does not offer (``D`` on a three-option item) as
    a wrong-format answer (``answer`` None)."""

    def score(self, r: Rendered, responses) -> dict:
        out = super().score(r, responses)
        out["filtered"] = listing8_filter(out["output"])
        if out["answer"] is not None and out["answer"] not in r.choices:
            out["answer"] = None
            out["format_ok"] = False
        return out


COMPLETION = ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER)
OPTION = OptionGeneration(
    stop=STOP, max_tokens=MAX_TOKENS, extract=option_answer, normalize=em_normalize
)
LETTER = ChoiceLoglikelihood(
    target_delimiter=TARGET_DELIMITER, metrics=("acc",)
)  # letters: acc_norm = acc
#: Subsets spread over the local-negation categories (``choice2_type``, non-applicable included).
STRUCTURE = Structure(stratum="choice2_type", stratum_name="local-negation category")


# -- error analysis --------------------------------------------------------------------------------
def nubench_metrics(mode: str, records: list[dict]) -> dict:
    """Flat numbers (aggregated over seeds by the runner) plus ``error_analysis`` (§5.3, App. R).

    The prediction is ``pred`` (argmax log-likelihood: the paper's ``acc``) in completion and
    letter mode, the generated letter (``answer``) in option mode."""
    ea = error_analysis(records, pred_field="pred", subtype_key="choice2_type")
    out: dict[str, Any] = {"error_rate": ea["error_rate"]}
    if mode == "option":
        out["n_format_wrong"] = ea["n_format_wrong"]
    for t, v in ea["incorrect_choice"].items():
        out[f"incorrect_{t}_pct"] = v["pct"]
    for s in LOCAL_TYPES:
        c = ea["local_confusion"].get(s)
        out[f"confusion_{s}_pct"] = c["pct"] if c else float("nan")
    out["error_analysis"] = ea
    return out


def _nanmean(xs: Sequence[float]) -> float:
    v = [x for x in xs if x == x]
    return sum(v) / len(v) if v else float("nan")


def _mean_analysis(analyses: Sequence[dict]) -> dict:
    """Seed mean of error analyses (shares averaged over the seeds that have them)."""
    first = analyses[0]
    out = {
        "error_rate": _nanmean([a["error_rate"] for a in analyses]),
        "n_format_wrong": round(_nanmean([a["n_format_wrong"] for a in analyses]), 1),
        "incorrect_choice": {
            t: {"pct": _nanmean([a["incorrect_choice"][t]["pct"] for a in analyses])}
            for t in first["incorrect_choice"]
        },
    }
    subs = sorted({s for a in analyses for s in a.get("local_confusion", {})})
    out["local_confusion"] = {
        s: {
            "pct": _nanmean(
                [
                    a["local_confusion"][s]["pct"]
                    for a in analyses
                    if s in a.get("local_confusion", {})
                ]
            )
        }
        for s in subs
    }
    return out


_PRED = {
    "completion": "completion: argmax log-likelihood (acc)",
    "letter": "letter: argmax log-likelihood of the option letters",
    "option": "option: generated letter after the Listing 8 filter (exact match)",
}


#: App. R: "We report few-shot results using a fixed random seed (1234), which corresponds to the
#: default seed used in the LM Evaluation Harness framework."
ERROR_ANALYSIS_SEED = 1234
_SEED = re.compile(r"\.seed(-?\d+)$")


def error_tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    """Table 6 / Tables 15-22 shape.  First the paper's table: zero-shot units and the few-shot
    units of seed 1234 only (App. R).  Then, when a few-shot setting has other seeds, ours: one
    row per unit (seed) and the seed mean of every few-shot setting run with several seeds."""
    body = [(name, m["error_analysis"]) for name, m in rows if "error_analysis" in m]
    if not body:
        return ""
    seed_of = {name: (int(m.group(1)) if (m := _SEED.search(name)) else None) for name, _ in body}
    paper = [(n, a) for n, a in body if seed_of[n] in (None, ERROR_ANALYSIS_SEED)]
    missing = sorted(
        {_SEED.sub("", n) for n, _ in body if seed_of[n] is not None}
        - {_SEED.sub("", n) for n, _ in paper if seed_of[n] is not None}
    )
    groups: dict[str, list[dict]] = {}
    for name, a in body:
        if seed_of[name] is not None:
            groups.setdefault(_SEED.sub("", name), []).append(a)
    ours = body + [
        (f"{g} (mean of {len(v)} seeds)", _mean_analysis(v))
        for g, v in groups.items()
        if len(v) > 1
    ]
    head = (
        f"Thunder-NUBench error analysis — {_PRED.get(mode, mode)}. Error rate = 1 − accuracy; "
        "incorrect-choice shares are over the wrong answers that name an option; confusion = "
        "items of the type whose local negation was picked, over items of the type."
    )
    out = [
        head,
        f"As the paper (App. R, Table 6 / Tables 15-22): few-shot rows are seed "
        f"{ERROR_ANALYSIS_SEED} only."
        + (f" No seed-{ERROR_ANALYSIS_SEED} unit for: {', '.join(missing)}." if missing else ""),
    ]
    if paper:
        out.append(format_error_table(paper, list(LOCAL_TYPES)))
    if any(seed_of[n] not in (None, ERROR_ANALYSIS_SEED) for n, _ in body):
        out += [
            "Ours (not in the paper): every few-shot seed and the seed mean.",
            format_error_table(ours, list(LOCAL_TYPES)),
        ]
    return "\n\n".join(out)


# -- tasks -----------------------------------------------------------------------------------------
def _modes(style: str) -> dict[str, ModeSpec]:
    return {
        "completion": ModeSpec(
            partial(render_completion, style=style),
            COMPLETION,
            "Listing 7/9: log-likelihood of each choice after '... Negation:'; "
            "gold choice1; acc (paper) and acc_norm",
        ),
        "option": ModeSpec(
            partial(render_option, style=style),
            OPTION,
            "Listing 8/9: options shuffled with Random(42) over the split, greedy "
            "generation, Listing 8 filter, exact match with the gold letter",
        ),
        "letter": ModeSpec(
            partial(render_option, style=style),
            LETTER,
            "negbench addition: log-likelihood of ' A'..' D' after the option prompt",
        ),
    }


_SUMMARY = {
    "simple": "simple prompt 'Negate the sentence.' (the paper's default)",
    "definition": "definition prompt (App. O)",
    "detail": "detail prompt (App. O, Listing 12)",
}


def make_tasks(source: str | os.PathLike | None = None) -> list[Task]:
    """``nubench`` (simple prompt), ``nubench-definition`` and ``nubench-detail``, reading from
    ``source`` (default :func:`default_source`, resolved when the data is first loaded)."""

    def loader(split: str) -> list[Doc]:
        if split not in MC_SPLITS:
            raise TaskError(
                f"the Thunder-NUBench tasks evaluate demonstration / test, not '{split}'",
                where="split",
                fix="the train pairs are for fine-tuning (negbench export)",
            )
        return load_split(split, source)

    return [
        Task(
            name=TASK_NAMES[style],
            summary=f"Thunder-NUBench test (1,261): pick the standard negation among local "
            f"negation / contradiction / paraphrase; {_SUMMARY[style]}",
            load=loader,
            modes=_modes(style),
            test_split="test",
            fewshot_split="demonstration",
            default_modes=("completion", "option"),
            default_shots=(0,),
            default_seeds=(42,),
            protocol_shots=PROTOCOL_SHOTS,
            protocol_seeds=PROTOCOL_SEEDS,
            fewshot_sampler="lm-eval",
            target_delimiter=TARGET_DELIMITER,
            fewshot_delimiter=FEWSHOT_DELIMITER,
            extra_metrics=nubench_metrics,
            tables=error_tables,
            language="en",
            source=SOURCE,
            structure=STRUCTURE,
            data=DATA,
        )
        for style in STYLES
    ]


TASKS: tuple[Task, ...] = tuple(make_tasks())
