"""Alpaca-format training records (``instruction``, ``input``, ``output``) exported from benchmark
data, for LoRA fine-tuning (NUBench App. N, KoNUBench App. G).

Benchmarks register an :class:`Exporter` here; ``negbench export NAME --split S --out F`` writes
its records as JSON lines.  Exporters are pure functions of the loaded records.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from negbench.errors import TaskError


@dataclass(frozen=True)
class Exporter:
    name: str
    summary: str
    records: Callable[[str], list[dict]]      # split -> alpaca records
    default_split: str = "train"


_EXPORTERS: dict[str, Exporter] = {}
_FACTORIES: dict[str, Callable[[dict[str, str]], Exporter]] = {}


def register_exporter(e: Exporter) -> Exporter:
    _EXPORTERS[e.name] = e
    return e


def register_exporter_factory(name: str, factory: Callable[[dict[str, str]], Exporter]) -> None:
    """An exporter that takes options, ``name[key=value,…]`` (e.g. a selection of the data);
    ``name`` alone is the factory with no options."""
    _FACTORIES[name] = factory
    _EXPORTERS[name] = factory({})


def exporters() -> dict[str, Exporter]:
    import negbench.tasks  # noqa: F401  (task modules register their exporters on import)
    return dict(_EXPORTERS)


def get_exporter(name: str) -> Exporter:
    ex = exporters()
    from negbench.tasks.base import parse_spec
    base, opts = parse_spec(name)
    if opts and base in _FACTORIES:
        return _FACTORIES[base](opts)
    if name not in ex:
        raise TaskError(f"unknown export '{name}'", where="negbench export",
                        fix="known: " + ", ".join(sorted(ex)))
    return ex[name]


def write_alpaca(records: list[dict], out: str | Path) -> Path:
    """Write records as JSON lines (atomically), checking the Alpaca fields."""
    from negbench.store import write_jsonl
    for i, r in enumerate(records):
        missing = {"instruction", "input", "output"} - set(r)
        if missing:
            raise ValueError(f"exporter bug: record {i} lacks {sorted(missing)}")
    out = Path(out)
    write_jsonl(out, records)
    return out
