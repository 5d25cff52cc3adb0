"""The negation phenomena a benchmark declares for the profile (registry kind ``phenomena``): each
a contrast of two conditions over the per-sample records of the benchmark's headline units.

A benchmark folder lists :class:`PhenomenonSpec` values; :mod:`negbench.profile.phenomena`
computes them on a run (so each number links to the items behind it) and shows them.  A condition
(:class:`Side`) is the share of records matching ``hit`` (``stat="share"``), the mean of a
per-sample field (``"mean"``; ``field=None``: the unit's own "correct" field,
:func:`negbench.scoring.runs.primary_metric`), or a task metric recomputed from the records
(``"metric"``: group metrics such as consistency, coherence and AccChg) — always over the records
matching ``where``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Items:
    """How a condition decomposes over the benchmark's clusters, for its interval: ``item`` — a
    mean of one value per record matching ``where`` (the record's ``field``, or 1 when it
    matches ``hit``); ``all`` — per cluster 1 when every matching record is right (CONDAQA's
    consistency, This is not a Dataset's coherence), one count per cluster; ``treatment`` /
    ``control`` — the minimal pairs of ``pair_set`` (JSTS-Neg / JNLI-Neg), one count per pair."""

    kind: str  # item / all / treatment / control
    where: dict = field(default_factory=dict)
    field: str | None = None
    hit: dict | None = None
    pair_set: str = "M"


@dataclass(frozen=True)
class Side:
    """One condition of a contrast."""

    label: str
    stat: str  # "share" | "mean" | "metric"
    where: Mapping[str, Any] = field(default_factory=dict)
    hit: Mapping[str, Any] | None = None
    field: str | None = None
    #: the headline units of this task instead of the benchmark's (KoNUBench's diagnostics put
    #: a negated and an affirmative task side by side)
    task: str | None = None
    #: how a task metric splits over clusters (None: a mean or share splits by itself)
    items: Items | None = None
    #: what the side's n counts (items; groups, blocks or pairs for a metric over them)
    counted: str = "items"


@dataclass(frozen=True)
class PhenomenonSpec:
    """One row of a benchmark's phenomena: ``condition`` against ``reference`` (or alone)."""

    name: str
    condition: Side
    reference: Side | None = None
    note: str = ""
    #: shown only when the units' answers are generated text (an answer may name no option)
    generated_only: bool = False
    #: the note when the reference's task has no units (its data was not there)
    missing_reference_note: str = ""
