"""Alpaca-format training records (``instruction``, ``input``, ``output``) exported from benchmark
data, for LoRA fine-tuning (NUBench App. N, KoNUBench App. G).

Benchmarks register an :class:`Exporter` (kind ``exporter``, or ``exporter_factory`` for one
that takes options) in :mod:`negbench.scoring.registry`; ``negbench export NAME --split S --out F``
writes its records as JSON lines.  Exporters are pure functions of the loaded records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from negbench.errors import TaskError


@dataclass(frozen=True)
class Exporter:
    name: str
    summary: str
    records: Callable[[str], list[dict]]  # split -> alpaca records
    default_split: str = "train"


@dataclass
class TrainingSelection:
    """What a benchmark's own options of ``negbench train --data NAME[key=value,…]`` select before
    its exporter runs (registry kind ``training_data``, by exporter name): the split to read, the
    options the evaluation after training inherits (same release, same split) and a change of each
    record (KoNUBench's ``target=letter``).  The hook pops the options it reads."""

    split: str
    eval_options: dict[str, str] = field(default_factory=dict)
    transform: Callable[[dict], dict] | None = None


def exporters() -> dict[str, Exporter]:
    """Every registered exporter (an exporter factory appears as itself with no options)."""
    from negbench.scoring.registry import REGISTRY

    out = REGISTRY.entries("exporter")
    for name, factory in REGISTRY.entries("exporter_factory").items():
        out.setdefault(name, factory({}))
    return out


def get_exporter(name: str) -> Exporter:
    """An exporter by name, or ``name[key=value,…]`` for one that takes options."""
    from negbench.scoring.task import parse_spec
    from negbench.scoring.registry import REGISTRY

    base, opts = parse_spec(name)
    if opts and base in REGISTRY.table("exporter_factory"):
        return REGISTRY.get("exporter_factory", base)(opts)
    ex = exporters()
    if name not in ex:
        raise TaskError(
            f"unknown export '{name}'",
            where="negbench export",
            fix="known: " + ", ".join(sorted(ex)),
        )
    return ex[name]


def write_alpaca(records: list[dict], out: str | Path) -> Path:
    """Write records as JSON lines (atomically), checking the Alpaca fields."""
    from negbench.files import write_jsonl

    for i, r in enumerate(records):
        missing = {"instruction", "input", "output"} - set(r)
        if missing:
            raise ValueError(f"exporter bug: record {i} lacks {sorted(missing)}")
    out = Path(out)
    write_jsonl(out, records)
    return out
