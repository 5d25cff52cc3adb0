"""The results the five papers report for their own models, as typed rows.

Each benchmark folder's ``reported_results.csv`` (declared in its ``profile_part.py``) holds one
row per printed number: which paper and table it comes from, the model, the negbench task(s), mode, shots, seeds and metric that
reproduce its protocol, and the value exactly as printed.  It is package data, transcribed from
``shared/papers/*.md`` and checked against them by ``tests/test_profile_reported.py``;
``docs/reported_results.md`` says how each paper's protocol maps onto negbench and lists every
place where a paper is ambiguous.

A profile shows a paper's number beside the user's only when the protocols are the same:
:func:`comparable` decides that, so the rule lives in one place.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from negbench.errors import DataError
from negbench.scoring.profile_parts import ReportedPaper
from negbench.scoring.registry import REGISTRY


def papers() -> dict[str, ReportedPaper]:
    """The papers whose numbers the profile shows, by file stem (in ``shared/papers``): each
    benchmark folder declares its own (registry kind ``reported``), with its CSV."""
    return {p.stem: p for p in sorted(REGISTRY.entries("reported").values(), key=lambda p: p.order)}


def paper_title(stem: str) -> str:
    p = papers().get(stem)
    return p.title if p else stem


COLUMNS = (
    "paper",
    "source",
    "also_in",
    "model",
    "row_label",
    "model_id",
    "model_kind",
    "benchmark",
    "tasks",
    "task_options",
    "subset",
    "training",
    "condition",
    "mode",
    "shots",
    "seeds",
    "prompt",
    "chat",
    "metric",
    "paper_metric",
    "value",
    "unit",
    "spread",
    "spread_kind",
    "delta",
    "notes",
)
#: a real model; the mean of a table's models; a non-model baseline (random, majority,
#: heuristic); people
MODEL_KINDS = ("model", "average", "baseline", "human")
#: how the model was trained for the row: as released, or fine-tuned as the paper describes
TRAININGS = (
    "none",
    "sft-lora",
    "sft-lora-cloze",
    "sft-lora-symbol",
    "finetuned-full",
    "finetuned-fewshot",
    "finetuned-lora",
)
#: ``fraction`` 0–1, ``percent`` 0–100, ``points`` (percentage points), ``count``
UNITS = ("fraction", "percent", "points", "count")
#: chat template: ``yes`` / ``no``; ``auto`` = as the tokenizer has one (notadataset's official
#: code); ``unstated`` = the paper does not say; ``n/a`` = no prompt (baselines, people, classifiers)
CHATS = ("yes", "no", "auto", "unstated", "n/a")
#: protocols a paper ran that negbench has no mode for: rows with them are shown as context,
#: never as comparable to a negbench unit
PAPER_ONLY_MODES = {
    "heuristic": "CONDAQA Table 4 heuristics (majority answer; UnifiedQA trained without the passage)",
    "human": "people answering the items",
    "random": "random predictions (This is not a Dataset's Random row)",
    "unifiedqa": "CONDAQA's UnifiedQA-v2 input format (App. C.2), not implemented in negbench",
    "classifier": "CONDAQA's BERT-like classifiers fine-tuned on the train set",
    "flan-t5-rationale": "CONDAQA's FLAN-T5 prompt 'Give the rationale before answering.'",
    "cot-explained": (
        "CONDAQA's few-shot chain of thought with the authors' 45 shot explanations, "
        "which are not released (negbench's cot mode shows shots without them)"
    ),
}
#: task options that select a subset of the same protocol: a unit with them still compares
SUBSET_OPTIONS = frozenset({"sample", "seed"})
#: task options that may differ from a row's without changing its protocol's meaning:
#: ``chat`` is matched through the unit's chat flag, ``pool`` is CONDAQA's demonstration pool
#: (the paper's, the train set, is not released; docs/reported_results.md)
TOLERATED_OPTIONS = SUBSET_OPTIONS | {"chat", "pool"}


@dataclass(frozen=True)
class ReportedResult:
    """One number a paper prints, with the protocol that produced it."""

    paper: str  # file stem in shared/papers (a key of papers())
    source: str  # "Table 11"
    also_in: tuple[str, ...]  # other tables printing the same number
    model: str  # readable model name (as printed where legible)
    row_label: str  # the row's label exactly as the paper's text prints it
    model_id: str  # hub / API id where the paper gives one
    model_kind: str  # one of MODEL_KINDS
    benchmark: str  # negbench benchmark (negbench.scoring.registry.benchmark_of of each task)
    tasks: tuple[str, ...]  # negbench tasks whose protocol this is
    task_options: tuple[tuple[str, str], ...]  # task options the protocol needs (sorted)
    subset: str  # evaluated items when not the whole test set
    training: str  # one of TRAININGS
    condition: str  # protocol detail negbench does not encode (shown, not matched)
    mode: str  # negbench mode, or a key of PAPER_ONLY_MODES
    shots: int
    seeds: str  # few-shot seeds, ";"-separated, or a description
    prompt: str
    chat: str  # one of CHATS
    metric: str  # negbench metric key (dotted path into nested metrics)
    paper_metric: str  # the paper's own label for the column
    value: str  # exactly as printed
    unit: str  # one of UNITS
    spread: str  # as printed (e.g. SD over seeds), or ""
    spread_kind: str
    delta: str  # a printed gain over a baseline (KoNUBench SFT), or ""
    notes: str

    @property
    def number(self) -> float:
        """The printed value as a number (thousands separators dropped)."""
        return float(self.value.replace(",", ""))

    @property
    def seed_list(self) -> tuple[int, ...]:
        """The few-shot seeds when the paper names them (empty when it does not)."""
        parts = [s for s in self.seeds.split(";") if s]
        return tuple(int(s) for s in parts) if all(s.isdigit() for s in parts) else ()

    @property
    def options(self) -> dict[str, str]:
        return dict(self.task_options)

    def negbench_value(self) -> float:
        """The value on negbench's scale for its metric: percentages for ``*pct`` keys, counts as
        counts, fractions otherwise (negbench stores accuracies and AccChg as fractions)."""
        x = self.number
        target = (
            "count"
            if self.unit == "count"
            else "percent"
            if self.metric.endswith("pct")
            else "fraction"
        )
        if target == "fraction" and self.unit in ("percent", "points"):
            return x / 100.0
        if target == "percent" and self.unit == "fraction":
            return x * 100.0
        return x

    def citation(self) -> str:
        return f"{paper_title(self.paper)}, {self.source}"


def _options(text: str, path: str, where: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise DataError(
                f"bad task option {part!r}",
                path=path,
                record=where,
                field="task_options",
                fix="write key=value,key=value",
            )
        out.append((k.strip(), v.strip()))
    return tuple(sorted(out))


def _row(raw: Mapping[str, str], path: str, where: str) -> ReportedResult:
    def check(field: str, allowed) -> str:
        v = raw[field]
        if v not in allowed:
            raise DataError(
                f"{field} {v!r} is not one of {', '.join(allowed)}",
                path=path,
                record=where,
                field=field,
            )
        return v

    try:
        shots = int(raw["shots"])
        value = raw["value"]
        float(value.replace(",", ""))
    except ValueError as exc:
        raise DataError(
            f"not a number ({exc})", path=path, record=where, field="shots/value"
        ) from None
    return ReportedResult(
        paper=check("paper", tuple(papers())),
        source=raw["source"],
        also_in=tuple(s for s in raw["also_in"].split(";") if s),
        model=raw["model"],
        row_label=raw["row_label"],
        model_id=raw["model_id"],
        model_kind=check("model_kind", MODEL_KINDS),
        benchmark=raw["benchmark"],
        tasks=tuple(t for t in raw["tasks"].split(";") if t),
        task_options=_options(raw["task_options"], path, where),
        subset=raw["subset"],
        training=check("training", TRAININGS),
        condition=raw["condition"],
        mode=raw["mode"],
        shots=shots,
        seeds=raw["seeds"],
        prompt=raw["prompt"],
        chat=check("chat", CHATS),
        metric=raw["metric"],
        paper_metric=raw["paper_metric"],
        value=value,
        unit=check("unit", UNITS),
        spread=raw["spread"],
        spread_kind=raw["spread_kind"],
        delta=raw["delta"],
        notes=raw["notes"],
    )


@lru_cache(maxsize=16)
def _load(path: str) -> tuple[ReportedResult, ...]:
    p = Path(path)
    with p.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise DataError(
                "unexpected columns", path=path, fix="the header must be: " + ",".join(COLUMNS)
            )
        return tuple(_row(raw, path, f"line {n}") for n, raw in enumerate(reader, start=2))


def load_reported(path: str | Path | None = None) -> tuple[ReportedResult, ...]:
    """Every reported result: every benchmark's table, or the one CSV ``path`` names."""
    if path is not None:
        return _load(str(path))
    return tuple(r for p in papers().values() for r in _load(str(p.csv)))


def _split_spec(task: str) -> tuple[str, dict[str, str]]:
    from negbench.scoring.task import parse_spec

    return parse_spec(task)


def protocol_matches(
    row: ReportedResult,
    task: str,
    mode: str,
    shots: int,
    metric: str,
    *,
    seed: int | None = None,
    chat: bool | None = None,
    training: str = "none",
) -> bool:
    """Whether ``row`` was measured with the protocol of a negbench unit.

    Same task (a task of the row's protocol, with the row's task options; a unit may add only
    :data:`TOLERATED_OPTIONS`, e.g. ``sample``), mode, shots, metric and training.  A row measured with
    one named seed (NUBench App. R: seed 1234) matches only a unit of that seed when the unit's
    seed is given; a seed mean matches any draw.  ``chat``: the unit's chat flag, checked
    against rows that state theirs (``yes`` / ``no``)."""
    name, opts = _split_spec(task)
    if name not in row.tasks or row.mode != mode or row.shots != shots or row.metric != metric:
        return False
    if row.training != training or row.mode in PAPER_ONLY_MODES:
        return False
    want = row.options
    if any(opts.get(k) != v for k, v in want.items()):
        return False
    if any(k not in want and k not in TOLERATED_OPTIONS for k in opts):
        return False
    if seed is not None and shots and len(row.seed_list) == 1 and row.seed_list[0] != seed:
        return False
    if chat is not None and row.chat in ("yes", "no") and (row.chat == "yes") != chat:
        return False
    return True


def comparable(
    task: str,
    mode: str,
    shots: int,
    metric: str,
    *,
    seed: int | None = None,
    chat: bool | None = None,
    training: str = "none",
    rows: Sequence[ReportedResult] | None = None,
) -> list[ReportedResult]:
    """The reported rows measured with the same protocol as a negbench unit (see
    :func:`protocol_matches`), in table order."""
    return [
        r
        for r in (load_reported() if rows is None else rows)
        if protocol_matches(r, task, mode, shots, metric, seed=seed, chat=chat, training=training)
    ]


def comparable_to_unit(
    unit: Mapping[str, Any],
    metric: str,
    *,
    training: str = "none",
    rows: Sequence[ReportedResult] | None = None,
) -> list[ReportedResult]:
    """:func:`comparable` for an entry of ``results.json``'s ``units`` (or ``groups``, whose
    seed mean compares with any seed)."""
    return comparable(
        unit["task"],
        unit["mode"],
        int(unit["shots"]),
        metric,
        seed=unit.get("seed"),
        chat=unit.get("chat"),
        training=training,
        rows=rows,
    )


def references(
    benchmark: str,
    *,
    kinds: Sequence[str] = ("baseline", "human"),
    rows: Sequence[ReportedResult] | None = None,
) -> list[ReportedResult]:
    """A benchmark's non-model reference rows (the papers' random / majority / human rows),
    whatever their protocol: context for a profile's chance and majority columns."""
    return [
        r
        for r in (load_reported() if rows is None else rows)
        if r.benchmark == benchmark and r.model_kind in kinds
    ]
