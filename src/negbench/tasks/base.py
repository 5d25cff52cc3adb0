"""What a task is: records + a prompt per scoring mode + the modes' scorers + metrics.

A task renders one record for one mode into a :class:`Rendered` prompt; the mode's
:class:`~negbench.evaluation.formulations.Formulation` turns it into requests and scores the answers.  Few-shot
contexts follow lm-evaluation-harness 0.4 (see :mod:`negbench.evaluation.fewshot`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from negbench.errors import TaskError


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name[key=value,key=value]`` → (name, options).  Options parameterise a task (its split,
    a sample, a selection); the canonical spec is the task's name, so a saved run reloads it."""
    spec = spec.strip()
    if "[" not in spec:
        return spec, {}
    if not spec.endswith("]"):
        raise TaskError(f"bad task options in {spec!r}", where="--tasks",
                        fix="write name[key=value,key=value]")
    name, body = spec[:-1].split("[", 1)
    opts: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise TaskError(f"bad task option {part!r} in {spec!r}", where="--tasks",
                            fix="write name[key=value,key=value]")
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


@dataclass
class Task:
    """A benchmark: splits of records, modes (name → formulation + renderer), metrics."""

    name: str
    summary: str
    load: Callable[[str], Sequence[Doc]]               # split -> records (a list, or a lazy
                                                       # sequence that builds each Doc on demand)
    modes: dict[str, "ModeSpec"]
    test_split: str = "test"
    fewshot_split: str | None = None
    default_modes: Sequence[str] = ()
    default_shots: Sequence[int] = (0,)
    default_seeds: Sequence[int] = (1234,)
    protocol_shots: Sequence[int] | None = None        # the paper's shot × seed protocol
    protocol_seeds: Sequence[int] | None = None        # (``negbench run --protocol``)
    # "lm-eval", "fixed" (same shots for every item), or a callable (docs, pool, k, seed) ->
    # iterator of shot lists (e.g. JSTS-Neg's stratified selection)
    fewshot_sampler: str | Callable[[Sequence[Doc], Sequence[Doc], int, int | None],
                                    Iterator[list[Doc]]] = "lm-eval"
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

    def mode(self, name: str) -> "ModeSpec":
        if name not in self.modes:
            raise TaskError(f"task '{self.name}' has no mode '{name}'", where="--modes",
                            fix="choose from: " + ", ".join(self.modes))
        return self.modes[name]


@dataclass
class ModeSpec:
    """One scoring mode of a task: how a record is rendered, and which formulation scores it."""

    render: Callable[[Doc], Rendered]
    formulation: Any                                   # negbench.evaluation.formulations.Formulation
    summary: str = ""
    include: Callable[[Doc], bool] | None = None       # records this mode applies to (None: all)
    render_chat: Callable[[Doc], Rendered] | None = None   # the prompt variant for chat models

