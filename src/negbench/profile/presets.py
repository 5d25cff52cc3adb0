"""What a profile runs: the negation benchmarks, each as one or more *parts* (one evaluation, one
run folder), under a *preset*.  Each benchmark folder declares its parts
(``tasks/<name>/profile_part.py``, :mod:`negbench.scoring.profile_parts`); this module chooses
among them.

* ``quick`` — every benchmark's headline protocol (its task's first default mode, 0 shots) on a
  fixed, seeded subset that keeps the benchmark's structure (whole contrast groups, blocks and
  minimal pairs, across its strata: :mod:`negbench.scoring.subsets`), sized so that the whole
  profile of SmolLM2-135M takes at most ten minutes on two CPU cores (``docs/profile.md`` gives
  the sizes, their standard errors and the measurement);
* ``paper`` — every paper's full protocol: all items, the papers' modes, shots and seeds.

A benchmark is named as the task registry names it (:func:`negbench.scoring.registry.benchmark_of`), so a
profile's rows, the reports' tables and the papers' reported results use one name.
"""

from __future__ import annotations

from negbench.errors import OptionError
from negbench.scoring.profile_parts import Benchmark, Part
from negbench.scoring.registry import REGISTRY

#: the presets, with one line each for help texts and errors
PRESETS = {
    "quick": "each benchmark's headline protocol, 0-shot, on a fixed seeded stratified subset "
    "(about ten minutes for SmolLM2-135M on 2 CPU cores)",
    "paper": "every paper's full protocol: all items, the papers' modes, shots × seeds",
}


def benchmarks() -> list[Benchmark]:
    """The benchmarks a profile can run, in the order the page shows them: each benchmark folder
    declares its own (registry kind ``profile``, ``tasks/<name>/profile_part.py``)."""
    return sorted(REGISTRY.entries("profile").values(), key=lambda b: b.order)


def by_key() -> dict[str, Benchmark]:
    return {b.key: b for b in benchmarks()}


def check_preset(preset: str) -> str:
    if preset not in PRESETS:
        raise OptionError(
            f"unknown preset {preset!r}",
            where="--preset",
            fix="choose one of: " + "; ".join(f"{k} ({v})" for k, v in PRESETS.items()),
        )
    return preset


def select(preset: str, names: "list[str] | None" = None) -> list[Benchmark]:
    """The benchmarks a profile runs under ``preset`` (those with parts in it), or the ones
    ``names`` gives (checked)."""
    check_preset(preset)
    known = by_key()
    if names:
        bad = [n for n in names if n not in known]
        if bad:
            raise OptionError(
                f"unknown benchmark(s) {', '.join(bad)}",
                where="--benchmarks",
                fix="choose from: " + ", ".join(known),
            )
        chosen = [known[n] for n in names]
    else:
        chosen = list(known.values())
    return [b for b in chosen if b.parts(preset)]


def with_modes(part: Part, modes: dict[str, str]) -> Part:
    """``part`` with its tasks' headline mode replaced as ``--mode BENCH=MODE`` asks (the
    benchmark key or the part's name)."""
    m = modes.get(part.name)
    if not m:
        return part
    return Part(
        part.name,
        part.tasks,
        (m,),
        part.shots,
        part.seeds,
        part.protocol,
        part.sample,
        part.sample_seed,
        part.pooled,
    )


def quick_sizes() -> dict[str, int]:
    """Each benchmark's quick-preset sample size (items, about: whole units are taken)."""
    return {b.key: p.sample for b in benchmarks() for p in b.quick[:1] if p.sample}


def quick_standard_errors() -> str:
    """``SE 2.0 at 600 items; …``: the standard error (points) of a proportion near 50 % at each
    quick-preset size — the line ``docs/profile.md`` states (a test keeps them equal)."""
    import math

    sizes = sorted(set(quick_sizes().values()), reverse=True)
    return "; ".join(f"SE {50 / math.sqrt(n):.1f} at {n:,} items" for n in sizes)
