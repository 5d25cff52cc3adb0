"""Subsets that keep a benchmark's structure: ``--limit N`` and ``--sample N --seed S``.

A task declares its :class:`~negbench.scoring.task.Structure`: which records form an indivisible
unit (a CONDAQA contrast group, a This-is-not-a-Dataset block, a JNLI-Neg / JSTS-Neg group of
minimal pairs, a truefalse-mini pair) and which field stratifies the set (a ScoNe condition, a
NUBench / KoNUBench category, a This-is-not-a-Dataset pattern).  A subset then

* takes **whole units** only — never half a contrast group, so consistency stays defined;
* spreads over the **strata** in proportion to their share of the records (a stratum with few
  records may get none when N is small; the rule says which);
* aims at **N records**: units are added one at a time to the stratum furthest below its share
  (relative to that share) — first only where a unit brings its stratum closer to its share,
  then, for what is left of N, to the strata furthest below theirs — as long as the total stays
  within half a unit of N; so it lands within half a unit of N (at least one unit is taken);
* takes the units in **data order** (``--limit``) or in a **seeded random order** per stratum
  (``--sample``: ``random.Random(f"{seed}:{stratum}")``), and keeps the records in data order.

:func:`select` returns the records and a :class:`Selection` — what results.json stores per unit
(``units[u]["subset"]``) and what every table and summary states: how the records were chosen,
n, the full size, and the rule in one sentence.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Hashable, Sequence

from negbench.scoring.task import Doc, Structure


@dataclass(frozen=True)
class Selection:
    """How a unit's records were chosen from the full set."""

    how: str  # "all", "limit" or "sample"
    n: int  # records evaluated
    full: int  # records in the full set (the split, after the mode's filter)
    seed: int | None = None  # the sampling seed (sample only)
    rule: str = ""  # one sentence: what was kept and why
    asked: int | None = None  # the N given to --limit / --sample
    units: int = 0  # whole units taken …
    units_full: int = 0  # … of this many
    missing_strata: tuple[str, ...] = field(default_factory=tuple)  # strata with no unit

    @property
    def subset(self) -> bool:
        return self.n < self.full

    def to_dict(self) -> dict[str, Any]:
        """``units[u]["subset"]`` of results.json."""
        return {
            "how": self.how,
            "n": self.n,
            "full": self.full,
            "subset": self.subset,
            "seed": self.seed,
            "rule": self.rule,
            "asked": self.asked,
            "units": self.units,
            "units_full": self.units_full,
            "missing_strata": list(self.missing_strata),
        }

    @classmethod
    def from_dict(cls, d: dict | None, n: int | None = None) -> "Selection":
        """Read back ``units[u]["subset"]`` (a run saved before subsets were recorded: all)."""
        if not d:
            return cls("all", n or 0, n or 0, rule="all records")
        return cls(
            d.get("how", "all"),
            int(d.get("n", n or 0)),
            int(d.get("full", n or 0)),
            d.get("seed"),
            d.get("rule", ""),
            d.get("asked"),
            int(d.get("units") or 0),
            int(d.get("units_full") or 0),
            tuple(d.get("missing_strata") or ()),
        )


def allocate(units: Sequence[tuple[Hashable, int]], n: int, seed: int | None = None) -> list[int]:
    """The indices (ascending) of the units to keep: ``units`` is (stratum, size) per unit in
    data order, ``n`` the records asked for, ``seed`` None for data order, else the seed of each
    stratum's random order.  See the module docstring for the rule."""
    by: dict[Hashable, list[int]] = {}
    for i, (s, _) in enumerate(units):
        by.setdefault(s, []).append(i)
    total = sum(size for _, size in units)
    if n >= total:
        return list(range(len(units)))
    order = {}
    for s, idx in by.items():
        idx = list(idx)
        if seed is not None:
            random.Random(f"{seed}:{s}").shuffle(idx)
        order[s] = idx
    share = {s: n * sum(units[i][1] for i in idx) / total for s, idx in by.items()}
    got = {s: 0 for s in by}
    pos = {s: 0 for s in by}
    taken: list[int] = []
    count = 0
    strata = list(by)  # first-appearance order breaks ties: deterministic

    def fill(within_share: bool) -> None:
        nonlocal count
        while True:
            open_ = [s for s in strata if pos[s] < len(order[s]) and got[s] < share[s]]
            open_.sort(key=lambda s: -(share[s] - got[s]) / share[s])
            for s in open_:
                size = units[order[s][pos[s]]][1]
                if count + size / 2 <= n and (not within_share or got[s] + size / 2 <= share[s]):
                    taken.append(order[s][pos[s]])
                    pos[s] += 1
                    got[s] += size
                    count += size
                    break
            else:
                return

    fill(True)  # every stratum towards its share, a unit when it brings it closer
    fill(False)  # what is left of N: the strata furthest below their share
    if not taken:  # N under half a unit: the first unit of the biggest stratum
        s = max(strata, key=lambda s: share[s])
        taken.append(order[s][0])
    return sorted(taken)


def _fmt(n: int) -> str:
    return f"{n:,}"


def plural(word: str) -> str:
    """English plural of the last word (``condition`` → ``conditions``, ``category`` →
    ``categories``)."""
    if word.endswith("y") and not word.endswith(("ay", "ey", "oy", "uy")):
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def select(
    docs: Sequence[Doc],
    structure: Structure,
    limit: int | float | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> tuple[Sequence[Doc], Selection]:
    """The records to evaluate and how they were chosen (``limit`` and ``sample`` exclusive;
    neither: all of them, ``docs`` itself).  A ``limit`` between 0 and 1 is a share of the
    records (lm-eval's ``--limit 0.1``): ``ceil(share × records)``, as lm-eval counts it, then
    taken in whole units like a count."""
    full = len(docs)
    if isinstance(limit, float):
        share = limit
        if not 0 < share < 1:
            raise ValueError(f"a fractional limit lies between 0 and 1, got {share}")
        some, sel = select(docs, structure, max(1, math.ceil(full * share)), None, seed)
        return some, replace(sel, rule=f"{share:g} of the records, so {sel.asked:,}: {sel.rule}")
    if limit is None and sample is None:
        return docs, Selection("all", full, full, rule=f"all {_fmt(full)} records")
    if limit is not None and sample is not None:
        raise ValueError("limit and sample exclude each other")
    how, n = ("limit", limit) if limit is not None else ("sample", sample)
    assert n is not None
    keys: dict[Hashable, int] = {}
    members: list[list[int]] = []
    strata: list[Hashable] = []
    for i, d in enumerate(docs):
        k = structure.unit_key(d, default=("#", i))
        j = keys.get(k)
        if j is None:
            j = keys[k] = len(members)
            members.append([])
            strata.append(structure.stratum_key(d))
        members[j].append(i)
    units = [(s, len(m)) for s, m in zip(strata, members)]
    chosen = allocate(units, n, None if how == "limit" else seed)
    idx = sorted(i for j in chosen for i in members[j])
    picked: Sequence[Doc] = docs if len(idx) == full else [docs[i] for i in idx]
    return picked, describe(structure, how, n, seed, units, chosen)


def describe(
    structure: Structure,
    how: str,
    asked: int,
    seed: int | None,
    units: Sequence[tuple[Hashable, int]],
    chosen: Sequence[int],
) -> Selection:
    """The :class:`Selection` of the ``chosen`` units among ``units`` ((stratum, size) each)."""
    full = sum(size for _, size in units)
    n = sum(units[j][1] for j in chosen)
    all_strata = list(dict.fromkeys(s for s, _ in units))
    have = {units[j][0] for j in chosen}
    missing = tuple(str(s) for s in all_strata if s not in have) if structure.stratum else ()
    return Selection(
        how,
        n,
        full,
        seed if how == "sample" else None,
        _rule(
            structure, how, asked, n, full, len(chosen), len(units), len(all_strata), missing, seed
        ),
        asked,
        len(chosen),
        len(units),
        missing,
    )


def _rule(
    st: Structure,
    how: str,
    asked: int,
    n: int,
    full: int,
    units: int,
    units_full: int,
    n_strata: int,
    missing: tuple[str, ...],
    seed: int | None,
) -> str:
    """One sentence: what a subset holds and why it is not exactly N."""
    if n >= full:
        return f"all {_fmt(full)} records ({how} {_fmt(asked)} ≥ the set)"
    order = "in data order" if how == "limit" else f"in a random order (seed {seed})"
    if st.unit:
        what = f"whole {st.units_name} {order}, {_fmt(units)} of {_fmt(units_full)}"
    else:
        what = f"records {order}"
    if st.stratum and n_strata > 1:
        what += (
            f", spread over the {n_strata} {plural(st.stratum_name or st.stratum)} in proportion"
        )
    text = f"{what}: {_fmt(n)} of {_fmt(full)} records"
    if n != asked:
        text += (
            f" ({how} {_fmt(asked)}: {_fmt(n)} in whole {st.units_name}, "
            f"~{full / max(units_full, 1):.0f} records each)"
            if st.unit
            else f" ({how} {_fmt(asked)})"
        )
    if missing:
        shown = ", ".join(missing[:6]) + (
            f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        )
        text += (
            f"; no {st.unit_name} of {st.stratum_name or st.stratum} {shown} "
            f"(their share of {_fmt(asked)} is under half a {st.unit_name}; ask for more to "
            "cover them)"
        )
    return text


def combine(own: Selection | None, sel: Selection) -> Selection:
    """A task's own sample (``notadataset[sample=…]``) followed by ``--limit`` / ``--sample``:
    the full size is the task's full set, the rules are joined, and a stratum missing from
    either is missing."""
    if own is None or not own.subset:
        return sel
    if sel.how == "all":
        return own
    return Selection(
        sel.how,
        sel.n,
        own.full,
        sel.seed,
        f"{own.rule}; then {sel.rule}",
        sel.asked,
        sel.units,
        own.units_full,
        tuple(
            sorted(
                set(own.missing_strata) | set(sel.missing_strata),
                key=lambda s: (0, int(s), "") if str(s).isdigit() else (1, 0, str(s)),
            )
        ),
    )
