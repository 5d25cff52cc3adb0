"""Run-level report sections: tables that span several tasks of a run (e.g. CONDAQA's Table 4,
which averages five split tasks).  Each section is a pure function of ``results.json``;
benchmarks register theirs (registry kind ``run_section``, by title)."""

from __future__ import annotations

from typing import Callable

Section = Callable[[dict], "str | None"]


def run_sections(results: dict) -> dict[str, str]:
    from negbench.scoring.registry import REGISTRY

    out = {}
    for title, fn in REGISTRY.entries("run_section").items():
        text = fn(results)
        if text:
            out[title] = text
    return out
