"""Which benchmark a task belongs to, and which metric heads it.

A profile puts one number per benchmark × mode on its headline: the metric the paper reports for
that mode (KoNUBench cloze: ``acc_norm``; CONDAQA: its §4 ``accuracy``; This is not a Dataset:
``acc``), else ``exact_match`` for a generation mode and ``acc`` for a log-likelihood one.
"""
from __future__ import annotations

import re

#: benchmark → its tasks, in the order a profile shows them
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "nubench": ("nubench", "nubench-definition", "nubench-detail"),
    "konubench": ("konubench",),
    "konubench-diagnostics": ("kmmlu-neg", "kmmlu-pos", "kmmlu-pos-r", "kobest-boolq-neg", "kobest-boolq"),
    "condaqa": ("condaqa",) + tuple(f"condaqa-split{i}" for i in range(1, 6)),
    "notadataset": ("notadataset",),
    "jsts-neg": ("jsts-neg",),
    "jnli-neg": ("jnli-neg",),
    "scone": ("scone-nli", "scone-nlg"),
}
_TASK_BENCHMARK = {t: b for b, ts in BENCHMARKS.items() for t in ts}

#: (benchmark, mode) → the paper's metric where it is not the formulation's default
_PAPER_METRIC = {
    ("konubench", "cloze"): "acc_norm", ("konubench", "symbol"): "acc",
    ("condaqa", "generate"): "accuracy", ("condaqa", "cot"): "accuracy", ("condaqa", "loglik"): "accuracy",
    ("notadataset", "next_token"): "acc", ("notadataset", "generate"): "acc", ("notadataset", "cloze"): "acc",
}


def base_name(task: str) -> str:
    """A task spec without its options: ``notadataset[sample=20]`` → ``notadataset``."""
    return re.sub(r"\[.*\]$", "", str(task)).strip()


def benchmark_of(task: str) -> str:
    """The benchmark of a task (prompt styles, CONDAQA splits and ScoNe's two sets folded); a
    task of no known benchmark (a user's JSONL) is its own benchmark."""
    t = base_name(task)
    return _TASK_BENCHMARK.get(t, t)


def headline_metric(task: str, mode: str) -> str:
    """The metric a profile reports for ``task`` in ``mode``."""
    m = _PAPER_METRIC.get((benchmark_of(task), mode))
    if m:
        return m
    from negbench.tasks import get_task
    formulation = get_task(task).mode(mode).formulation
    return "exact_match" if "exact_match" in formulation.metrics else formulation.metrics[0]
