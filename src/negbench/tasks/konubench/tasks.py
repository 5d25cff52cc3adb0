"""Thunder-KoNUBench (Jung, So, Lee et al.): Korean sentence-level negation understanding, and the
§3.3 negation diagnostics on KMMLU and KoBEST BoolQ.

Data: the official release (github mcrl/Thunder-KoNUBench, ``dataset/``) in a folder, or the
Hugging Face id ``thunder-research-group/SNU_Thunder-KoNUBench`` (needs the optional ``datasets``
package).  Splits ``train`` / ``validation`` / ``test`` (2,500 / 1,000 / 1,284).  See
``src/negbench/tasks/konubench/README.md`` for every choice made where the paper is silent.

Task ``konubench`` has one record renderer per mode, all after the official lm-eval task code
(``lm_eval/Thunder_KoNUBench_{cloze,symbol,api}``):

* ``cloze`` — log-likelihood of each option text after ``…\\n부정문:``; ``acc`` / ``acc_norm``
  (the paper reports ``acc_norm``).
* ``symbol`` — the options listed ``A. …`` in a per-item order (Python's ``random.seed(int(idx))``
  then ``random.shuffle``, reproduced with a private ``random.Random``), log-likelihood of the
  letters; ``acc`` (the paper's).
* ``generate`` — the symbol prompt, greedy generation, first ``[A-D]`` in the output,
  ``exact_match`` (SPEC §2's generation mode).
* ``api`` — the official ``ko_nubench_api`` task exactly (its own instruction suffix and its
  description, which spells ``-말다``); the paper's GPT / Claude numbers come from it.

The task description is prepended to every context (lm-eval ``description``); few-shot examples
come from ``validation`` (lm-eval sampler; the paper's seeds 1234, 308, 1028; 0/1/2/5/10 shots).

Diagnostics (§3.3, official yaml files): ``kmmlu-neg`` / ``kmmlu-pos`` (two-option KMMLU items
with a negated / affirmative question, letter log-likelihood, ``acc``), ``kmmlu-pos-r`` (the
official repository's ``kmmlu_pos_r``: kmmlu-pos with the options swapped), ``kobest-boolq-neg``
(negated KoBEST BoolQ questions, ``acc``) and ``kobest-boolq`` (the original, from the hub id
``skt/kobest_v1`` config ``boolq``, as lm-eval's ``kobest_boolq``).

Error analysis (§5.2, Table 8 as the paper labels it and with corrected labels, App. I) through
:mod:`negbench.scoring.negation_errors`; Alpaca export of the train split in the two SFT formats of the
official ``sft/load.py`` (§5.1, App. G); the §4.3 human-evaluation sheet and Table 7.
"""

from __future__ import annotations

import json
import os
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypedDict

from negbench.errors import DataError, TaskError
from negbench.scoring.metrics import by_group, mean
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation
from negbench.scoring.intervals import MIN_ITEMS, rate_text, share_interval
from negbench.scoring.negation_errors import (
    ERROR_TABLE_NOTE,
    TYPE_LABELS,
    WRONG_TYPES,
    error_analysis,
    error_cells,
    format_error_table,
)
from negbench.tasks.data_source import DataSource, load_hub_dataset
from negbench.records import field, iter_jsonl, read_text
from negbench.scoring.task import Doc, ModeSpec, Rendered, Structure, Task

HF_ID = "thunder-research-group/SNU_Thunder-KoNUBench"
KOBEST_HF_ID = "skt/kobest_v1"
KOBEST_CONFIG = "boolq"
SOURCE = (
    "Thunder-KoNUBench, Jung, So, Lee et al.; github mcrl/Thunder-KoNUBench "
    f"(CC BY-NC-SA 4.0); Hugging Face {HF_ID}"
)
KOBEST_SOURCE = (
    f"KoBEST BoolQ (Jang et al., COLING 2022); Hugging Face {KOBEST_HF_ID} (config {KOBEST_CONFIG})"
)

SPLITS = ("train", "validation", "test")
SPLIT_ALIASES = {"val": "validation", "dev": "validation"}
#: Table 6 of the paper.
SPLIT_SIZES = {"train": 2500, "validation": 1000, "test": 1284}
SPLIT_FILES = {
    "train": ("train", "train.json"),
    "validation": ("validation", "val.json"),
    "test": ("test", "test.json"),
}
_HF_PAT = re.compile(r"^[\w.-]+/[\w.-]+$")

# -- prompts (official lm-eval task files; SPEC §2) --------------------------------------------------
#: The ``description`` of ``ko_nubench_cloze`` / ``ko_nubench_symbol`` (two spaces before ``¬P``).
DESCRIPTION = (
    "standard negation:\n"
    "- 주절의 서술어를 한국어의 부정 표현을 활용해 부정함으로써 원문 P를  ¬P로 만든다.\n"
    "- 주절의 서술어 외의 나머지 부분은 수정하지 않는다.\n"
    "- 원문이 조건문일 때는 논리적 규칙(¬(P → Q) ≡ P ∧ ¬Q)을 따라 부정한다.\n"
    "- 주절이 여러 개일 경우 드모르간의 법칙(예. ¬(P ∧ Q) ≡ ¬P ∨ ¬Q)에 따라 모든 주절의 서술어를 부정한다.\n"
    "\n"
    "한국어의 부정 표현:\n"
    "- 안 계열: 안, -지 않다\n"
    "- 못 계열: 못, -지 못하다\n"
    "- 말다\n"
    "- 어휘적 부정: 상보 반의어를 활용한 부정(이다/아니다, 있다/없다, 참석하다/불참하다 등)\n"
    "\n"
)
#: ``ko_nubench_api`` and the official SFT code write ``-말다`` without the space.
DESCRIPTION_API = DESCRIPTION.replace("\n- 말다\n", "\n-말다\n")
CLOZE_INSTRUCTION = "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정하시오."
SYMBOL_INSTRUCTION = (
    "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정한 문장을 고르시오."
)
API_INSTRUCTION = (
    "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정한 문장을 고르시오"
    "(정답 선지(A, B, C, D)만 답하고, 그 외에 다른 말은 하지 말 것)."
)
TARGET_DELIMITER = " "
FEWSHOT_DELIMITER = "\n\n"
LETTERS = "ABCD"
#: Option types in the release's canonical order (choice position in cloze mode).
OPTION_TYPES = ("standard", "local", "contradiction", "paraphrase")
_OPTION_FIELDS = {
    "standard": "standard_negation",
    "local": "local_negation",
    "contradiction": "contradiction",
    "paraphrase": "paraphrase",
}
#: ``local_negation_type`` values of the release → the paper's English names (Table 1, Table 5).
LOCAL_TYPES = {
    "관형절": "adnominal",
    "부사절": "adverbial",
    "명사절": "noun",
    "인용절": "quotation",
    "종속절": "subordinate",
    "대등절 일부": "coordinated",
}
NO_LOCAL = "none"
#: lm-eval ``generate_until`` for ``ko_nubench_api``: ``until: ["</s>", "\n"]``, default 256 tokens.
STOP = ("</s>", "\n")
MAX_TOKENS = 256
PAPER_SHOTS = (0, 1, 2, 5, 10)
PAPER_SEEDS = (1234, 308, 1028)
#: The metric the paper reports per mode (§5.1, App. H).
PAPER_METRIC = {
    "cloze": "acc_norm",
    "symbol": "acc",
    "generate": "exact_match",
    "api": "exact_match",
}

# -- diagnostics (official lm_eval/kmmlu_{neg,pos}, kobest_boolq_neg; lm-eval kobest_boolq) -------
KMMLU_ANSWER = "정답："  # full-width colon (U+FF1A), as in the official yaml
BOOLQ_CHOICES = ("아니오", "예")  # label 0 = False, 1 = True
DIAG_FILES = {
    "kmmlu-neg": ("kmmlu_neg", "kmmlu_neg.json"),
    "kmmlu-pos": ("kmmlu_pos", "kmmlu_pos.json"),
    "kobest-boolq-neg": ("kobest_boolq_neg", "kobest_boolq_neg.json"),
}
#: Counts in the release (the paper says 7,153 KMMLU items; the files hold 7,154).
DIAG_SIZES = {"kmmlu-neg": 7154, "kmmlu-pos": 7154, "kobest-boolq-neg": 1404}


# -- data location -----------------------------------------------------------------------------------
DATA = DataSource("Thunder-KoNUBench", "NEGBENCH_KONUBENCH", "konubench", HF_ID)
#: The diagnostic sets are in the GitHub release only: the variable counts when it is a folder.
DIAG_DATA = DataSource(
    "Thunder-KoNUBench diagnostics", "NEGBENCH_KONUBENCH", "konubench", env_folder_only=True
)
KOBEST_DATA = DataSource("KoBEST BoolQ", "NEGBENCH_KOBEST_BOOLQ", None, KOBEST_HF_ID)


def data_root() -> Path:
    """Default folder of the official release: ``$NEGBENCH_DATA/konubench`` when that variable is
    set, else ``../shared/data/konubench`` relative to the current working directory."""
    local = DATA.local()
    assert local is not None  # DATA names a folder
    return local


def default_source() -> str:
    """Where ``konubench`` reads from: ``$NEGBENCH_KONUBENCH`` (a folder, or a Hugging Face id such
    as ``hf:thunder-research-group/SNU_Thunder-KoNUBench``), else the data tree, else the hub
    (:mod:`negbench.tasks.data_source`)."""
    return DATA.resolve()


def default_diag_source() -> str:
    """Where the diagnostics read from: ``$NEGBENCH_KONUBENCH`` when it is a folder, else the
    data tree."""
    return DIAG_DATA.resolve()


def default_kobest_source() -> str:
    """Where ``kobest-boolq`` reads from: ``$NEGBENCH_KOBEST_BOOLQ`` (a folder holding
    ``{split}.jsonl`` / ``{split}.json``, or a hub id) when set, else ``hf:skt/kobest_v1``."""
    return KOBEST_DATA.resolve()


def _is_hf(source: str) -> bool:
    return source.startswith("hf:") or (not Path(source).exists() and bool(_HF_PAT.match(source)))


def _hf_id(source: str) -> str:
    return source[3:] if source.startswith("hf:") else source


def _canonical_split(split: str) -> str:
    s = SPLIT_ALIASES.get(split, split)
    if s not in SPLITS:
        raise TaskError(
            f"Thunder-KoNUBench has no split '{split}'",
            where="split",
            fix="one of " + ", ".join(SPLITS),
        )
    return s


def find_split_file(root: Path, split: str) -> Path | None:
    sub, name = SPLIT_FILES[split]
    for p in (
        root / "dataset" / "Thunder_KoNUBench" / sub / name,
        root / "Thunder_KoNUBench" / sub / name,
        root / sub / name,
        root / name,
    ):
        if p.is_file():
            return p
    return None


def find_diag_file(root: Path, task: str) -> Path | None:
    folder, name = DIAG_FILES[task]
    for p in (
        root / "dataset" / folder / "test" / name,
        root / folder / "test" / name,
        root / folder / name,
        root / name,
    ):
        if p.is_file():
            return p
    return None


def _read_json_array(path: Path) -> list:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(
            f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            path=str(path),
            fix="the release files are JSON arrays of objects",
        ) from None
    if not isinstance(data, list):
        raise DataError(
            f"expected a JSON array of records, got {type(data).__name__}", path=str(path)
        )
    if not data:
        raise DataError("no records", path=str(path))
    return data


# -- records ------------------------------------------------------------------------------------------
_IDX = re.compile(r"^G?\d+$")


def shuffle_seed(idx: str) -> int:
    """The official seed of an item's option order: ``int(idx)`` without a leading ``G``."""
    return int(idx[1:] if idx.startswith("G") else idx)


def parse_record(obj: Any, path: str, rec: str) -> dict[str, Any]:
    """Validate one release record; returns the fields negbench keeps.  An empty or null
    ``local_negation`` means a three-option item (then ``local_negation_type`` must be null)."""
    if not isinstance(obj, dict):
        raise DataError(
            f"a record is not a JSON object ({type(obj).__name__})", path=path, record=rec
        )
    idx = field(obj, "idx", (str, int), path=path, record=rec)
    idx = str(idx)
    if not _IDX.match(idx):
        raise DataError(
            f"idx must be digits with an optional leading 'G', got {idx!r}",
            path=path,
            record=rec,
            field="idx",
            fix="the official shuffle seeds from int(idx)",
        )
    rec = f"{rec} (idx {idx})"
    out: dict[str, Any] = {"idx": idx}
    for k in ("original_sentence", "standard_negation", "contradiction", "paraphrase"):
        out[k] = field(obj, k, str, path=path, record=rec)
    local = field(obj, "local_negation", str, path=path, record=rec, optional=True, nonempty=False)
    if local is not None and local != "" and not local.strip():
        raise DataError(
            "blank local_negation (only whitespace)",
            path=path,
            record=rec,
            field="local_negation",
            fix='use null or "" for a three-option item',
        )
    local = local or None
    ltype = field(
        obj, "local_negation_type", str, path=path, record=rec, optional=True, nonempty=False
    )
    ltype = ltype or None
    if local is not None:
        if ltype is None:
            raise DataError(
                "missing field (a local negation needs its type)",
                path=path,
                record=rec,
                field="local_negation_type",
                fix="one of " + ", ".join(LOCAL_TYPES),
            )
        if ltype not in LOCAL_TYPES:
            raise DataError(
                f"unknown local_negation_type {ltype!r}",
                path=path,
                record=rec,
                field="local_negation_type",
                fix="one of " + ", ".join(LOCAL_TYPES),
            )
    elif ltype is not None:
        raise DataError(
            f"local_negation_type {ltype!r} given but local_negation is empty",
            path=path,
            record=rec,
            field="local_negation_type",
            fix="a three-option item has null local_negation and local_negation_type",
        )
    out["local_negation"] = local
    out["local_negation_type"] = ltype
    return out


def make_docs(rows: list[dict], src: str) -> list[Doc]:
    seen: dict[str, int] = {}
    docs = []
    for i, f in enumerate(rows):
        if f["idx"] in seen:
            raise DataError(
                f"duplicate idx {f['idx']!r} (also record {seen[f['idx']]})",
                path=src,
                record=i,
                field="idx",
            )
        seen[f["idx"]] = i
        docs.append(Doc(f["idx"], f, src))
    return docs


def _load_local(root: Path, split: str) -> list[Doc]:
    p = find_split_file(root, split)
    if p is None:
        sub, name = SPLIT_FILES[split]
        raise DataError(
            f"Thunder-KoNUBench {split} file not found",
            path=str(root),
            fix=f"expected dataset/Thunder_KoNUBench/{sub}/{name} of the official release "
            "(set NEGBENCH_DATA or NEGBENCH_KONUBENCH)",
        )
    rows = [parse_record(o, str(p), str(i)) for i, o in enumerate(_read_json_array(p))]
    return make_docs(rows, str(p))


def _hf_dataset(
    dataset_id: str,
    split: str,
    config: str | None,
    what: str,
    local: str = "use a local folder of the official release",
):
    return load_hub_dataset(dataset_id, split, config, what=what, local=local)


def _load_hf(dataset_id: str, split: str) -> list[Doc]:
    ds = _hf_dataset(dataset_id, split, None, "Thunder-KoNUBench")
    src = f"hf:{dataset_id}/{split}"
    rows = [parse_record(dict(o), src, str(i)) for i, o in enumerate(ds)]
    if not rows:
        raise DataError("no records", path=src)
    return make_docs(rows, src)


@lru_cache(maxsize=None)
def _load_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if root.is_dir():
        return tuple(_load_local(root, split))
    if _is_hf(source):
        return tuple(_load_hf(_hf_id(source), split))
    raise DataError(
        "Thunder-KoNUBench data folder not found",
        path=source,
        fix="set NEGBENCH_DATA (folder holding konubench/), NEGBENCH_KONUBENCH (a folder "
        f"or hf:{HF_ID}), or run from the project root next to ../shared/data",
    )


def _resolve(source: str | os.PathLike | None, default) -> str:
    src = str(source) if source is not None else default()
    return str(Path(src).resolve()) if Path(src).is_dir() else src


def load_split(split: str, source: str | os.PathLike | None = None) -> list[Doc]:
    """The records of ``train`` / ``validation`` / ``test`` from a folder (the release root, its
    ``dataset/Thunder_KoNUBench`` or a folder of split files) or a Hugging Face id."""
    return list(_load_cached(_resolve(source, default_source), _canonical_split(split)))


def clear_cache() -> None:
    _load_cached.cache_clear()
    _load_diag_cached.cache_clear()
    _load_kobest_cached.cache_clear()


# -- rendering ------------------------------------------------------------------------------------
def options(d: Doc | dict) -> list[tuple[str, str]]:
    """(type, text) in the release order; the local negation is left out when empty."""
    return [(t, d[_OPTION_FIELDS[t]]) for t in OPTION_TYPES if t != "local" or d["local_negation"]]


def shuffled_options(d: Doc | dict) -> list[tuple[str, str]]:
    """The official symbol-mode order: ``random.seed(seed); random.shuffle(options)`` on the global
    generator, done here on a private ``random.Random(seed)`` — the global functions are bound
    methods of one hidden ``Random`` instance, so the same seed gives the same permutation, and the
    process's global random state is left alone."""
    opts = options(d)
    random.Random(shuffle_seed(d["idx"])).shuffle(opts)
    return opts


def local_type_en(d: Doc | dict) -> str:
    return LOCAL_TYPES[d["local_negation_type"]] if d["local_negation"] else NO_LOCAL


def _meta(d: Doc, types: list[str]) -> dict[str, Any]:
    return {
        "idx": d["idx"],
        "option_types": types,
        "local_negation_type": d["local_negation_type"] or NO_LOCAL,
        "local_type": local_type_en(d),
        "n_options": len(types),
    }


def cloze_query(sentence: str) -> str:
    return f"{CLOZE_INSTRUCTION}\n원문: {sentence}\n부정문:"


def symbol_query(sentence: str, texts: Sequence[str], instruction: str = SYMBOL_INSTRUCTION) -> str:
    lines = "".join(f"{LETTERS[i]}. {t}\n" for i, t in enumerate(texts))
    return f"{instruction}\n원문: {sentence}\n{lines}\n정답:"


def render_cloze(d: Doc) -> Rendered:
    opts = options(d)
    return Rendered(
        cloze_query(d["original_sentence"]),
        [t for _, t in opts],
        0,
        meta=_meta(d, [k for k, _ in opts]),
    )


def _render_letters(d: Doc, instruction: str) -> Rendered:
    opts = shuffled_options(d)
    texts = [t for _, t in opts]
    gold = texts.index(d["standard_negation"])  # official: choices_str.index(std)
    return Rendered(
        symbol_query(d["original_sentence"], texts, instruction),
        list(LETTERS[: len(opts)]),
        gold,
        meta=_meta(d, [k for k, _ in opts]),
    )


def render_symbol(d: Doc) -> Rendered:
    return _render_letters(d, SYMBOL_INSTRUCTION)


def render_api(d: Doc) -> Rendered:
    return _render_letters(d, API_INSTRUCTION)


_LETTER = re.compile(r"([A-D])")


def official_letter(s: str) -> str | None:
    """The official answer filter: lm-eval ``regex`` with ``([A-D])`` then ``take_first`` — the
    first capital A–D anywhere in the output (no word boundary); None when there is none
    (lm-eval's ``[invalid]``)."""
    m = _LETTER.search(s)
    return m.group(1).strip() if m else None


def description(mode: str = "") -> str:
    return DESCRIPTION_API if mode == "api" else DESCRIPTION


CLOZE = ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER, metrics=("acc", "acc_norm"))
SYMBOL = ChoiceLoglikelihood(
    target_delimiter=TARGET_DELIMITER, metrics=("acc",)
)  # letters: acc_norm = acc
#: Subsets spread over the local-negation clause types (three-option items included).
STRUCTURE = Structure(stratum="local_negation_type", stratum_name="local-negation clause type")
GENERATE = Generation(stop=STOP, max_tokens=MAX_TOKENS, extract=official_letter)


# -- error analysis (Table 8, App. I) ----------------------------------------------------------------
#: The prediction behind the paper's error tables: the raw log-likelihood argmax (``pred``) for
#: cloze and symbol — the official ``analyze.py`` takes ``max(resps)``, and Table 8's cloze
#: "performance" is ``acc``, not Table 16's ``acc_norm``; generation records have no ``pred``, so
#: :func:`negbench.scoring.negation_errors.predicted_index` reads their filtered ``answer``.
ERROR_PRED_FIELD = "pred"


def official_cloze_types(records: Iterable[dict]) -> list[dict]:
    """Copies of cloze records labelled as the official ``analyze.py`` labels them: by choice
    position as [standard, local, contradiction, paraphrase] even for three-option items (where
    position 1 is really the contradiction and 2 the paraphrase)."""
    out = []
    for r in records:
        n = len(r["meta"]["option_types"])
        out.append({**r, "meta": {**r["meta"], "option_types": list(OPTION_TYPES[:n])}})
    return out


def _score_field(mode: str, records: Sequence[dict]) -> str:
    m = PAPER_METRIC.get(mode, "acc")
    if records and m not in records[0]:
        return "exact_match" if "exact_match" in records[0] else "acc"
    return m


def konubench_metrics(mode: str, records: list[dict]) -> dict:
    """``Task.extra_metrics`` for ``konubench``: the Table 8 error analysis (flat percentages
    too, so they average over seeds), accuracy by local-negation clause type and by number of
    options.  The paper's score of the mode is its headline (``PAPER_METRIC``: ``acc_norm`` in
    cloze …), a metric of the formulation already."""
    records = list(records)
    key = _score_field(mode, records)
    ea = error_analysis(
        records, pred_field=ERROR_PRED_FIELD, subtype_key="local_type", no_local_subtype=NO_LOCAL
    )
    out: dict[str, Any] = {"error_rate": ea["error_rate"], "n_format_wrong": ea["n_format_wrong"]}
    for t in WRONG_TYPES:
        out[f"incorrect_{t}_pct"] = ea["incorrect_choice"][t]["pct"]
    out["error_analysis"] = ea
    if mode == "cloze" and records and "pred_norm" in records[0]:
        out["error_analysis_norm"] = error_analysis(
            records, pred_field="pred_norm", subtype_key="local_type", no_local_subtype=NO_LOCAL
        )
    if mode == "cloze" and records and "pred" in records[0]:
        out["error_analysis_official"] = error_analysis(
            official_cloze_types(records), pred_field="pred"
        )
    # Table 8 as printed: the official analyze.py labelling (differs from ours in cloze only) and
    # "performance" = accuracy of the raw argmax (exact match for generation), not acc_norm
    out["error_analysis_paper"] = out.get("error_analysis_official", ea)
    pf = "acc" if records and "acc" in records[0] else "exact_match"
    out["table8_performance"] = mean([float(r[pf]) for r in records]) if records else float("nan")
    out["by_local_type"] = by_group(records, "local_type", key)
    out["by_n_options"] = by_group(records, "n_options", key)
    return out


def table8_markdown(
    rows: list[tuple[str, dict]], ea_key: str = "error_analysis_paper", note: bool = True
) -> str:
    """Table 8's columns: performance (%), incorrect-choice distribution (%) — the paper's
    values, each with its 95 % Wilson interval and n (:func:`error_cells`)."""
    lines = [
        "| setting | performance | "
        + " | ".join(f"{TYPE_LABELS[t]} (%)" for t in WRONG_TYPES)
        + " |",
        "|---|---:|" + "---:|" * len(WRONG_TYPES),
    ]
    for name, m in rows:
        ea = m[ea_key]
        cells = error_cells(ea)
        perf = m.get("table8_performance", float("nan"))
        n = ea.get("n")
        perf_text = (
            rate_text(100 * perf, 2, share_interval(round(perf * n), n), n, 100.0)
            if isinstance(n, int) and perf == perf
            else _pct(100 * perf)
        )
        lines.append(
            f"| {name} | {perf_text} | " + " | ".join(cells[t] for t in WRONG_TYPES) + " |"
        )
    if note:
        lines += ["", ERROR_TABLE_NOTE.format(min_items=MIN_ITEMS)]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def run_tables(mode: str, rows: list[tuple[str, dict]]) -> str:
    """Markdown: Table 8 as the paper computes it (official ``analyze.py`` labels: three-option
    cloze items by position; performance = raw-argmax accuracy), then ours with the corrected
    labels (error rate, format-wrong count, distribution), then the local-negation confusion rate
    per clause type; the note on n and intervals once, under the last."""
    rows = [(name, m) for name, m in rows if "error_analysis" in m]
    if not rows:
        return ""
    kinds = list(LOCAL_TYPES.values())
    out = []
    if all("error_analysis_paper" in m for _, m in rows):
        out += [
            f"Thunder-KoNUBench {mode}: Table 8 as in the paper (the official analyze.py "
            "labelling; performance = accuracy of the raw log-likelihood argmax, or exact match "
            "for generation)",
            table8_markdown(rows, note=False),
        ]
    ea_rows = [(name, m["error_analysis"]) for name, m in rows]
    out += [
        f"Thunder-KoNUBench {mode}: incorrect-choice distribution, ours (corrected labels for "
        "the three-option items; not the paper's table); wrong answers from the raw "
        "log-likelihood argmax (cloze, symbol) or the filtered generation",
        format_error_table(ea_rows, note=False),
        "Local-negation confusion by clause type (items of that type where the local "
        "negation was picked, %)",
        format_error_table(ea_rows, subtypes=kinds),
    ]
    return "\n\n".join(out) + "\n"


# -- Alpaca export (§5.1, App. G; official sft/load.py) ---------------------------------------------
# -- diagnostics (§3.3) -------------------------------------------------------------------------------
def _parse_kmmlu(obj: Any, path: str, rec: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise DataError(
            f"a record is not a JSON object ({type(obj).__name__})", path=path, record=rec
        )
    out = {k: field(obj, k, str, path=path, record=rec) for k in ("question", "A", "B")}
    ans = field(obj, "answer", int, path=path, record=rec)
    if ans not in (0, 1):
        raise DataError(
            f"answer must be 0 (A) or 1 (B), got {ans!r}", path=path, record=rec, field="answer"
        )
    out["answer"] = ans
    out["Category"] = field(obj, "Category", str, path=path, record=rec, optional=True)
    return out


def _parse_boolq(obj: Any, path: str, rec: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise DataError(
            f"a record is not a JSON object ({type(obj).__name__})", path=path, record=rec
        )
    out = {k: field(obj, k, str, path=path, record=rec) for k in ("paragraph", "question")}
    lab = field(obj, "label", int, path=path, record=rec)
    if lab not in (0, 1):
        raise DataError(
            f"label must be 0 (아니오) or 1 (예), got {lab!r}", path=path, record=rec, field="label"
        )
    out["label"] = lab
    return out


_DIAG_PARSERS = {
    "kmmlu-neg": _parse_kmmlu,
    "kmmlu-pos": _parse_kmmlu,
    "kobest-boolq-neg": _parse_boolq,
}


@lru_cache(maxsize=None)
def _load_diag_cached(source: str, task: str) -> tuple[Doc, ...]:
    root = Path(source)
    if not root.is_dir():
        raise DataError(
            f"{task}: data folder not found (the diagnostic sets are in the GitHub release only)",
            path=source,
            fix="set NEGBENCH_DATA (folder holding konubench/) or NEGBENCH_KONUBENCH "
            "to a folder of the official release",
        )
    p = find_diag_file(root, task)
    if p is None:
        folder, name = DIAG_FILES[task]
        raise DataError(
            f"{task} file not found",
            path=str(root),
            fix=f"expected dataset/{folder}/test/{name} of the official release",
        )
    parse = _DIAG_PARSERS[task]
    return tuple(
        Doc(str(i), {**parse(o, str(p), str(i)), "row": i}, str(p))
        for i, o in enumerate(_read_json_array(p))
    )


def load_diagnostic(
    task: str, split: str = "test", source: str | os.PathLike | None = None
) -> list[Doc]:
    """Records of ``kmmlu-neg`` / ``kmmlu-pos`` / ``kobest-boolq-neg`` (test only)."""
    if split != "test":
        raise TaskError(f"{task} has only a test split", where="split", fix="use 'test'")
    return list(_load_diag_cached(_resolve(source, default_diag_source), task))


def _read_records_file(p: Path) -> list:
    text = read_text(p)
    if text.lstrip().startswith("["):
        return _read_json_array(p)
    return [obj for _, obj in iter_jsonl(p)]


KOBEST_SPLITS = ("train", "validation", "test")


@lru_cache(maxsize=None)
def _load_kobest_cached(source: str, split: str) -> tuple[Doc, ...]:
    root = Path(source)
    if root.is_dir():
        for name in (f"{split}.jsonl", f"{split}.json"):
            p = root / name
            if p.is_file():
                return tuple(
                    Doc(str(i), {**_parse_boolq(o, str(p), str(i)), "row": i}, str(p))
                    for i, o in enumerate(_read_records_file(p))
                )
        raise DataError(
            f"KoBEST BoolQ {split} file not found",
            path=str(root),
            fix=f"expected {split}.jsonl or {split}.json with paragraph, question, label",
        )
    if _is_hf(source):
        ds = _hf_dataset(
            _hf_id(source),
            split,
            KOBEST_CONFIG,
            "KoBEST BoolQ",
            local=f"point NEGBENCH_KOBEST_BOOLQ at a folder with {split}.jsonl "
            "(paragraph, question, label)",
        )
        src = f"hf:{_hf_id(source)}/{KOBEST_CONFIG}/{split}"
        return tuple(
            Doc(str(i), {**_parse_boolq(dict(o), src, str(i)), "row": i}, src)
            for i, o in enumerate(ds)
        )
    raise DataError(
        "KoBEST BoolQ source not found",
        path=source,
        fix=f"set NEGBENCH_KOBEST_BOOLQ to a folder or a hub id (default hf:{KOBEST_HF_ID})",
    )


def load_kobest_boolq(split: str = "test", source: str | os.PathLike | None = None) -> list[Doc]:
    if split not in KOBEST_SPLITS:
        raise TaskError(
            f"KoBEST BoolQ has no split '{split}'",
            where="split",
            fix="one of " + ", ".join(KOBEST_SPLITS),
        )
    return list(_load_kobest_cached(_resolve(source, default_kobest_source), split))


def kmmlu_query(d: Doc | dict) -> str:
    """Official ``{{question.strip()}}\\nA. {{A}}\\nB. {{B}}\\n정답：`` (full-width colon)."""
    return f"{d['question'].strip()}\nA. {d['A']}\nB. {d['B']}\n{KMMLU_ANSWER}"


def kmmlu_query_r(d: Doc | dict) -> str:
    """Official ``kmmlu_pos_r``: ``{{question.strip()}}\\nA. {{B}}\\nB. {{A}}\\n정답：`` (the two
    options swapped; the gold letter swaps with them)."""
    return f"{d['question'].strip()}\nA. {d['B']}\nB. {d['A']}\n{KMMLU_ANSWER}"


def boolq_query(d: Doc | dict) -> str:
    """lm-eval ``{{paragraph}} 질문: {{question}} 답변: `` — the trailing space stays in the context;
    the engine (as lm-eval's ``_encode_pair``) moves it into the continuation: ``"  아니오"``."""
    return f"{d['paragraph']} 질문: {d['question']} 답변: "


def render_kmmlu(d: Doc) -> Rendered:
    return Rendered(
        kmmlu_query(d), ["A", "B"], d["answer"], meta={"row": d["row"], "Category": d["Category"]}
    )


def render_kmmlu_r(d: Doc) -> Rendered:
    """``doc_to_target: "{{ 1 if answer == 0 else 0 }}"``."""
    return Rendered(
        kmmlu_query_r(d),
        ["A", "B"],
        1 if d["answer"] == 0 else 0,
        meta={"row": d["row"], "Category": d["Category"]},
    )


def render_boolq(d: Doc) -> Rendered:
    return Rendered(boolq_query(d), list(BOOLQ_CHOICES), d["label"], meta={"row": d["row"]})


def macro_f1(records: Sequence[dict], pred_field: str = "pred", n_classes: int = 2) -> float:
    """Macro-averaged F1 of ``pred`` against ``gold_index`` (lm-eval KoBEST's ``f1``; a class with
    no gold and no predicted item scores 0, as scikit-learn's default)."""
    f1s = []
    for c in range(n_classes):
        tp = sum(1 for r in records if r[pred_field] == c and r["gold_index"] == c)
        fp = sum(1 for r in records if r[pred_field] == c and r["gold_index"] != c)
        fn = sum(1 for r in records if r[pred_field] != c and r["gold_index"] == c)
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return mean(f1s)


def kmmlu_metrics(mode: str, records: list[dict]) -> dict:
    return {"by_category": by_group(records, "Category", "acc")}


def boolq_metrics(mode: str, records: list[dict]) -> dict:
    return {
        "f1": macro_f1(records),
        "by_gold": by_group(
            [{**r, "meta": {**r["meta"], "gold": BOOLQ_CHOICES[r["gold_index"]]}} for r in records],
            "gold",
            "acc",
        ),
    }


# -- tasks ------------------------------------------------------------------------------------------
class _DiagnosticOptions(TypedDict):
    """The :class:`Task` options the KMMLU diagnostic tasks share."""

    modes: dict[str, ModeSpec]
    test_split: str
    fewshot_split: str | None
    default_modes: Sequence[str]
    default_shots: Sequence[int]
    extra_metrics: Callable[[str, list[dict]], dict] | None
    language: str
    source: str
    data: Any


def make_tasks(
    source: str | os.PathLike | None = None,
    diag_source: str | os.PathLike | None = None,
    kobest_source: str | os.PathLike | None = None,
) -> tuple[Task, ...]:
    """``konubench``, ``kmmlu-neg``, ``kmmlu-pos``, ``kobest-boolq-neg``, ``kobest-boolq``; each
    source defaults to :func:`default_source` / :func:`default_diag_source` /
    :func:`default_kobest_source`, resolved when data is first loaded."""

    def kb(split: str) -> list[Doc]:
        return load_split(split, source)

    def diag(name: str):
        return lambda split: load_diagnostic(name, split, diag_source)

    def kobest(split: str) -> list[Doc]:
        return load_kobest_boolq(split, kobest_source)

    konu = Task(
        name="konubench",
        summary="Thunder-KoNUBench test (1,284): pick the standard negation of a Korean sentence "
        "(cloze: acc_norm; symbol: acc); few-shot from validation",
        load=kb,
        modes={
            "cloze": ModeSpec(
                render_cloze,
                CLOZE,
                "log-likelihood of each option after '…\\n부정문:'; the paper reports acc_norm",
                headline="acc_norm",
            ),
            "symbol": ModeSpec(
                render_symbol,
                SYMBOL,
                "options listed A-D in the official per-idx "
                "order, log-likelihood of the letters; the paper reports acc",
            ),
            "generate": ModeSpec(
                render_symbol,
                GENERATE,
                "symbol prompt, greedy generation until "
                "newline, first [A-D] in the output, exact_match",
            ),
            "api": ModeSpec(
                render_api,
                GENERATE,
                "the official ko_nubench_api task (its prompt "
                "and description), greedy, first [A-D], exact_match; the paper's "
                "GPT / Claude setting",
            ),
        },
        test_split="test",
        fewshot_split="validation",
        default_modes=("cloze", "symbol"),
        default_shots=(0,),
        default_seeds=(PAPER_SEEDS[0],),
        protocol_shots=PAPER_SHOTS,
        protocol_seeds=PAPER_SEEDS,
        fewshot_sampler="lm-eval",
        description=description,
        target_delimiter=TARGET_DELIMITER,
        fewshot_delimiter=FEWSHOT_DELIMITER,
        extra_metrics=konubench_metrics,
        tables=run_tables,
        language="ko",
        source=SOURCE,
        structure=STRUCTURE,
        data=DATA,
    )
    kmmlu_common: _DiagnosticOptions = dict(
        modes={
            "symbol": ModeSpec(
                render_kmmlu,
                SYMBOL,
                "'…\\nA. …\\nB. …\\n정답：', log-likelihood of A / B; the paper reports acc",
            )
        },
        test_split="test",
        fewshot_split=None,
        default_modes=("symbol",),
        default_shots=(0,),
        extra_metrics=kmmlu_metrics,
        language="ko",
        source=SOURCE,
        data=DIAG_DATA,
    )
    # official lm_eval/kmmlu_pos_r/kmmlu_pos_r.yaml: kmmlu_pos's records, options swapped, acc only
    kmmlu_r: _DiagnosticOptions = {
        **kmmlu_common,
        "modes": {
            "symbol": ModeSpec(
                render_kmmlu_r,
                ChoiceLoglikelihood(target_delimiter=TARGET_DELIMITER, metrics=("acc",)),
                "'…\\nA. {B}\\nB. {A}\\n정답：' (options swapped), log-likelihood of A / B; acc",
            )
        },
    }
    boolq_mode = {
        "cloze": ModeSpec(
            render_boolq,
            CLOZE,
            "'{paragraph} 질문: {question} 답변: ', "
            "log-likelihood of 아니오 / 예; the paper reports acc",
        )
    }
    return (
        konu,
        Task(
            name="kmmlu-neg",
            summary="KMMLU items with a negated question as two-option "
            "questions (7,154; §3.3 diagnostic)",
            load=diag("kmmlu-neg"),
            **kmmlu_common,
        ),
        Task(
            name="kmmlu-pos",
            summary="the same KMMLU items with the question made affirmative "
            "(7,154; §3.3 diagnostic)",
            load=diag("kmmlu-pos"),
            **kmmlu_common,
        ),
        Task(
            name="kmmlu-pos-r",
            summary="kmmlu-pos with the two options swapped (official "
            "kmmlu_pos_r; a position-bias control, not in the paper)",
            load=diag("kmmlu-pos"),
            **kmmlu_r,
        ),
        Task(
            name="kobest-boolq-neg",
            summary="KoBEST BoolQ test with negated questions (1,404; §3.3 diagnostic)",
            load=diag("kobest-boolq-neg"),
            modes=boolq_mode,
            test_split="test",
            fewshot_split=None,
            default_modes=("cloze",),
            default_shots=(0,),
            extra_metrics=boolq_metrics,
            language="ko",
            source=SOURCE,
            data=DIAG_DATA,
        ),
        Task(
            name="kobest-boolq",
            summary="KoBEST BoolQ test (1,404), original questions, from the "
            f"hub ({KOBEST_HF_ID}, {KOBEST_CONFIG}) as lm-eval kobest_boolq",
            load=kobest,
            modes=boolq_mode,
            test_split="test",
            fewshot_split="train",
            default_modes=("cloze",),
            default_shots=(0,),
            extra_metrics=boolq_metrics,
            language="ko",
            source=KOBEST_SOURCE,
            data=KOBEST_DATA,
        ),
    )


TASKS: tuple[Task, ...] = make_tasks()
