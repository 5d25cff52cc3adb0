"""What a task is: records + a prompt per scoring mode + the modes' scorers + metrics.

A task renders one record for one mode into a :class:`Rendered` prompt; the mode's
:class:`~negbench.scoring.formulations.Formulation` turns it into requests and scores the answers.  Few-shot
contexts follow lm-evaluation-harness 0.4 (see :mod:`negbench.scoring.fewshot`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, Mapping, Sequence

from negbench.errors import TaskError


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name[key=value,key=value]`` → (name, options).  Options parameterise a task (its split,
    a sample, a selection); the canonical spec is the task's name, so a saved run reloads it."""
    spec = spec.strip()
    if "[" not in spec:
        return spec, {}
    if not spec.endswith("]"):
        raise TaskError(
            f"bad task options in {spec!r}", where="--tasks", fix="write name[key=value,key=value]"
        )
    name, body = spec[:-1].split("[", 1)
    opts: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise TaskError(
                f"bad task option {part!r} in {spec!r}",
                where="--tasks",
                fix="write name[key=value,key=value]",
            )
        opts[k.strip()] = v.strip()
    return name.strip(), opts


@dataclass(frozen=True)
class Doc:
    """One dataset record: a stable id, its validated fields, and where it came from."""

    id: str
    fields: dict[str, Any]
    source: str = ""

    def __getitem__(self, k: str) -> Any:
        return self.fields[k]


@dataclass
class Rendered:
    """A record rendered for one mode.

    ``choices`` are continuation texts (without the target delimiter) for log-likelihood modes,
    labels for next-token modes; ``gold`` is an index into them, or the gold answer string for
    generation.  ``target`` is what a few-shot example shows after the query.
    """

    query: str
    choices: list[str] = field(default_factory=list)
    gold: int | str | None = None
    target: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def target_text(self) -> str:
        if self.target is not None:
            return self.target
        if isinstance(self.gold, int):
            return self.choices[self.gold]
        return str(self.gold)


@dataclass(frozen=True)
class Structure:
    """How a benchmark's records hang together, so that a subset (``--limit``, ``--sample``)
    keeps it: records sharing the values of ``unit`` fields are kept or dropped together (a
    CONDAQA contrast group, a This-is-not-a-Dataset block, a JNLI-Neg minimal-pair group), and
    the subset is spread over the values of the ``stratum`` field in proportion (a ScoNe
    condition, a NUBench category, a This-is-not-a-Dataset pattern).  Fields are read from a
    record (:class:`Doc`) and, with the same names, from a scored sample's ``meta`` — so metrics
    can resample the same units (confidence intervals) without the records."""

    unit: tuple[str, ...] = ()  # () : every record is its own unit
    stratum: str | None = None
    unit_name: str = "record"  # what one unit is called, singular / plural
    units_name: str = "records"
    stratum_name: str = ""  # e.g. "condition"

    def unit_key(self, obj: "Doc | Mapping[str, Any]", default: Hashable = None) -> Hashable:
        """The unit a record (or a sample's ``meta``) belongs to; ``default`` when the structure
        has no unit fields or ``obj`` lacks one."""
        if not self.unit:
            return default
        try:
            return tuple(_get(obj, f) for f in self.unit)
        except KeyError:
            return default

    def stratum_key(self, obj: "Doc | Mapping[str, Any]") -> Hashable:
        if self.stratum is None:
            return None
        try:
            return _get(obj, self.stratum)
        except KeyError:
            return None


def _get(obj: "Doc | Mapping[str, Any]", name: str) -> Any:
    return obj.fields[name] if isinstance(obj, Doc) else obj[name]


@dataclass
class Task:
    """A benchmark: splits of records, modes (name → formulation + renderer), metrics."""

    name: str
    summary: str
    load: Callable[[str], Sequence[Doc]]  # split -> records (a list, or a lazy
    # sequence that builds each Doc on demand)
    modes: dict[str, "ModeSpec"]
    test_split: str = "test"
    fewshot_split: str | None = None
    default_modes: Sequence[str] = ()
    default_shots: Sequence[int] = (0,)
    default_seeds: Sequence[int] = (1234,)
    protocol_shots: Sequence[int] | None = None  # the paper's shot × seed protocol
    protocol_seeds: Sequence[int] | None = None  # (``negbench run --protocol``)
    # "lm-eval", "fixed" (same shots for every item), or a callable (docs, pool, k, seed) ->
    # iterator of shot lists (e.g. JSTS-Neg's stratified selection)
    fewshot_sampler: (
        str | Callable[[Sequence[Doc], Sequence[Doc], int, int | None], Iterator[list[Doc]]]
    ) = "lm-eval"
    description: Callable[[str], str] = lambda mode: ""
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"
    extra_metrics: Callable[[str, list[dict]], dict] | None = None
    # True when extra_metrics reads its records once, in order, from any iterable: a big run
    # then streams them from the saved samples instead of loading the unit's records
    stream_metrics: bool = False
    # Markdown tables saved with a run (e.g. error analysis): (mode, [(unit name, metrics)]) -> str
    tables: Callable[[str, list[tuple[str, dict]]], str] | None = None
    language: str = "en"
    source: str = ""
    # which records belong together and how a subset is spread (subsets, confidence intervals)
    structure: Structure = field(default_factory=Structure)
    # per-cluster (numerator, denominator) of the headline metric where it is not the mean of a
    # per-sample field of the same name (CONDAQA's accuracy, AccChg over minimal pairs …):
    # (mode, records) -> {unit key: (sum, count)}; the headline is sum / count over the clusters
    headline_parts: Callable[[str, list[dict]], dict[Hashable, tuple[float, float]]] | None = None
    # the headline is a proportion of 0/1 items (Wilson intervals); False: a difference such as
    # AccChg (cluster-robust t over the clusters)
    headline_proportion: bool = True
    # (strict metric, lenient metric) pairs whose gap says the model answers in another form
    lenient_metrics: tuple[tuple[str, str], ...] = ()
    # where the benchmark's data is looked for (a tasks.data_source.DataSource; None: shipped)
    data: Any = None
    # the records a task's own options already sampled (notadataset[sample=…]): split -> the
    # selection (a scoring.subsets.Selection), or None when the task evaluates them all
    own_subset: Callable[[str], Any] | None = None

    def mode(self, name: str) -> "ModeSpec":
        if name not in self.modes:
            from negbench.options import did_you_mean

            raise TaskError(
                f"task '{self.name}' has no mode '{name}'" + did_you_mean(name, self.modes),
                where="--modes",
                fix="its modes: " + ", ".join(self.modes),
            )
        return self.modes[name]

    def headline(self, mode: str) -> str:
        """The metric the benchmark's paper reports for ``mode`` (one per unit on the console, in
        reports and in a profile)."""
        spec = self.mode(mode)
        if spec.headline:
            return spec.headline
        metrics = tuple(getattr(spec.formulation, "metrics", ()) or ("acc",))
        return "exact_match" if "exact_match" in metrics else metrics[0]


@dataclass
class ModeSpec:
    """One scoring mode of a task: how a record is rendered, and which formulation scores it."""

    render: Callable[[Doc], Rendered]
    formulation: Any  # negbench.scoring.formulations.Formulation
    summary: str = ""
    include: Callable[[Doc], bool] | None = None  # records this mode applies to (None: all)
    render_chat: Callable[[Doc], Rendered] | None = None  # the prompt variant for chat models
    headline: str = ""  # the paper's metric for this mode ("": the formulation's
    # first metric, exact_match for a generation)
