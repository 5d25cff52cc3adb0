"""What a benchmark declares for ``negbench profile``: its *parts* (one evaluation, one run folder
each) under the ``quick`` and ``paper`` presets (registry kind ``profile``), and its paper's
reported numbers (kind ``reported``).  The profile itself is :mod:`negbench.profile`'s."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: the sampling seed of the quick preset's subsets (fixed: two models' quick profiles pair item
#: by item)
QUICK_SEED = 0


@dataclass(frozen=True)
class Part:
    """One evaluation of a profile (one ``Session.evaluate`` call, one run folder
    ``PROFILE/runs/<name>``): tasks × modes × shots × seeds, optionally on a subset."""

    name: str
    tasks: tuple[str, ...]
    modes: tuple[str, ...]
    shots: tuple[int, ...] | None = (0,)  # None: the tasks' own (with protocol: the paper's)
    seeds: tuple[int, ...] | None = None
    protocol: bool = False
    sample: int | None = None  # about this many items (whole units, all strata)
    sample_seed: int = QUICK_SEED
    pooled: bool = False  # the tasks are splits of one test set (CONDAQA's
    # five): one headline row, the mean over them

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark as a profile runs it."""

    key: str  # the registry's benchmark name
    title: str
    #: where the profile page shows it (smaller first)
    order: int
    paper: str  # reported-results paper stem ("" for none)
    quick: tuple[Part, ...]
    full: tuple[Part, ...]
    #: headline mode → the mode a model without prompt log-probabilities can answer instead
    #: (a generation mode of the same task), for the message that names it
    generation_mode: dict[str, str] = field(default_factory=dict)
    how_to_get: str = ""
    #: meta fields that make records one cluster for a phenomenon's interval when the task's
    #: subset structure has none (ScoNe-NLI: the six conditions of a row rewrite one example)
    cluster_fields: tuple[str, ...] = ()

    def parts(self, preset: str) -> tuple[Part, ...]:
        return self.quick if preset == "quick" else self.full


@dataclass(frozen=True)
class ReportedPaper:
    """The numbers a benchmark's paper reports for its own models (registry kind ``reported``):
    one CSV row per printed number (columns: :data:`negbench.profile.reported.COLUMNS`),
    transcribed from the paper and checked against it by the tests."""

    stem: str  # the paper's file stem in shared/papers
    title: str
    csv: Path
    order: int  # rows of several papers are read in this order
