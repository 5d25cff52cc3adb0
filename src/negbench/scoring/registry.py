"""One registry for everything a benchmark contributes, filled by a scan of the benchmark folders.

Every sub-package of :mod:`negbench.tasks` that defines ``register(r: Contributions)`` is a
benchmark home; the first lookup imports each one (in ``ORDER``, then name) and calls its hook,
which adds what the benchmark brings under one of :data:`KINDS`.  Adding a benchmark therefore
means adding one folder — nothing else names it.  A value is the object itself, or a
``"module:attribute"`` string imported on first use (paper tables, builders and sheets pull in
report or model code that a run does not need); and a hook can leave whole kinds to a function
called the first time one of them is asked for (:meth:`Contributions.later`: recipes and
exporters are not imported by a run).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from negbench.errors import TaskError

#: What a benchmark can register, by kind (the value each kind holds).
KINDS: dict[str, str] = {
    "task": "a Task, by task name",
    "task_factory": "name → callable(options: dict[str, str]) -> Task, for name[key=value,…]",
    "paper_tables": "benchmark → callable(ctx, task names) -> list[Table] (negbench report)",
    "run_section": "title → callable(results.json dict) -> str | None (run-level tables)",
    "paper_metric": "benchmark → {mode: per-sample field} behind 'correct' in reports",
    "subtype_labels": "benchmark → ((clause type, display name), …) of its error analysis",
    "recipe": "a training Recipe, by recipe name",
    "recipe_alias": "short recipe name → recipe name",
    "exporter": "an Alpaca Exporter, by name",
    "exporter_factory": "name → callable(options) -> Exporter, for name[key=value,…]",
    "training_data": "exporter name → callable(options, split) -> TrainingSelection: the "
    "benchmark's own options of negbench train --data",
    "sheet": "task → human-evaluation sheet maker (negbench human-eval sheet)",
    "builder": "name → Builder (negbench build NAME)",
    "mcq_language": "language code → McqLanguage (negbench build mcq --lang CODE)",
    "profile": "benchmark → profile Benchmark: its parts under each preset (negbench profile)",
    "phenomena": "benchmark → [PhenomenonSpec]: its negation contrasts (negbench profile)",
    "reported": "paper stem → ReportedPaper: the numbers its paper reports (negbench profile)",
}


#: Opens a model for a builder's LLM stages: ``(spec, *, dtype, device, cache, progress, log)`` →
#: a session with ``.backend`` and ``.engine``.  It is :func:`negbench.open_model`, handed to a
#: builder by the command that runs it, so that a benchmark folder never imports the run layer.
OpenModel = Callable[..., Any]


@dataclass(frozen=True)
class Builder:
    """A ``negbench build`` target: its parser and the function that runs it."""

    add_parser: Callable[[Any], None]  # (the ``build`` sub-parsers) -> None
    run: Callable[[Any, OpenModel], int]  # (parsed arguments, model opener) -> exit code


class Registry:
    """Kind → name → value, with the benchmark each entry came from."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, Any]] = {k: {} for k in KINDS}
        self._bench: dict[str, dict[str, str]] = {k: {} for k in KINDS}
        self._later: list[tuple[tuple[str, ...], str, str]] = []  # (kinds, provider, benchmark)
        self._scanned = False
        #: name → Task for any task name a run may carry (registered names, options in brackets,
        #: YAML and JSON-lines files): set by the benchmarks package when the scan imports it.
        self.task_resolver: Callable[[str], Any] | None = None

    def add(self, kind: str, name: str, value: Any, benchmark: str | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown registry kind {kind!r} (known: {', '.join(KINDS)})")
        old = self._values[kind].get(name)
        if old is not None and old is not value and old != value:
            first = self._bench[kind].get(name) or "code"
            raise TaskError(
                f"{kind} {name!r} is registered twice (by {first} and by {benchmark or 'code'})",
                where="the benchmark folders' register() hooks",
                fix="give one of them another name",
            )
        self._values[kind][name] = value
        if benchmark:
            self._bench[kind][name] = benchmark

    def table(self, kind: str) -> dict[str, Any]:
        """The live mapping of one kind (values may still be ``module:attr`` strings)."""
        self.scan()
        if any(kind in kinds for kinds, _, _ in self._later):
            due = [x for x in self._later if kind in x[0]]
            self._later = [x for x in self._later if kind not in x[0]]
            for _, provider, bench in due:
                _import(provider)(Contributions(self, bench))
        return self._values[kind]

    def get(self, kind: str, name: str, default: Any = None) -> Any:
        table = self.table(kind)
        if name not in table:
            return default
        value = table[name]
        if isinstance(value, str) and _REF.fullmatch(value):
            value = table[name] = _import(value)
        return value

    def entries(self, kind: str) -> dict[str, Any]:
        return {name: self.get(kind, name) for name in list(self.table(kind))}

    def names(self, kind: str) -> list[str]:
        return list(self.table(kind))

    def benchmark(self, kind: str, name: str) -> str | None:
        self.table(kind)
        return self._bench[kind].get(name)

    def task(self, name: str) -> Any:
        """The Task a run's unit names (see :attr:`task_resolver`)."""
        self.scan()
        if self.task_resolver is None:
            raise RuntimeError(f"no task resolver: {BENCHMARKS_PACKAGE} did not install one")
        return self.task_resolver(name)

    def scan(self) -> None:
        """Import every benchmark home once and let it register what it brings."""
        if self._scanned:
            return
        self._scanned = True
        importlib.import_module(BENCHMARKS_PACKAGE)  # installs the task resolver
        for mod in benchmark_packages():
            hook = getattr(mod, "register", None)
            if callable(hook):
                hook(
                    Contributions(self, getattr(mod, "BENCHMARK", mod.__name__.rpartition(".")[2]))
                )


@dataclass(frozen=True)
class Contributions:
    """What a benchmark home's ``register`` hook receives: adds entries under its benchmark."""

    registry: Registry
    benchmark: str

    def add(self, kind: str, name: str, value: Any, benchmark: str | None = None) -> None:
        self.registry.add(kind, name, value, benchmark or self.benchmark)

    def tasks(self, tasks: Any, benchmark: str | None = None) -> None:
        for t in tasks:
            self.add("task", t.name, t, benchmark)

    def later(self, kinds: "str | tuple[str, ...]", provider: str) -> None:
        """Leave ``kinds`` to ``provider`` (``"module:function"``, called with these
        contributions the first time one of those kinds is asked for)."""
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"unknown registry kind {k!r}")
        self.registry._later.append((kinds, provider, self.benchmark))


#: The package whose sub-packages are the benchmark homes.  Named, not imported: the registry sits
#: below the benchmarks (they declare into it) and finds their folders the way lm-eval finds its
#: task folders — by a scan, so that adding a benchmark is adding a folder.
BENCHMARKS_PACKAGE = "negbench.tasks"


def benchmark_packages() -> Iterator[Any]:
    """The sub-packages of :data:`BENCHMARKS_PACKAGE`, in their ``ORDER`` (then by name)."""
    pkg = importlib.import_module(BENCHMARKS_PACKAGE)
    mods = [
        importlib.import_module(f"{pkg.__name__}.{info.name}")
        for info in pkgutil.iter_modules(pkg.__path__)
        if info.ispkg
    ]
    yield from sorted(mods, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


_REF = re.compile(r"negbench(\.\w+)+:\w+(\.\w+)*")


def _import(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


REGISTRY = Registry()


def benchmark_of(task: str) -> str:
    """The benchmark a task belongs to (the key of its paper tables): options in brackets
    dropped, then the benchmark that registered the task or its factory (``nubench-detail`` →
    ``nubench``, ``condaqa-split3`` → ``condaqa``); a task no benchmark registered is its own."""
    t = re.sub(r"\[.*\]$", "", str(task)).strip()
    return REGISTRY.benchmark("task", t) or REGISTRY.benchmark("task_factory", t) or t
