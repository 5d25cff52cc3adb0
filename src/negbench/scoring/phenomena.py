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
