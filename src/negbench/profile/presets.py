"""What a profile runs: the negation benchmarks, each as one or more *parts* (one evaluation, one
run folder), under a *preset*.

* ``quick`` — every benchmark's headline protocol (its task's first default mode, 0 shots) on a
  fixed, seeded subset that keeps the benchmark's structure (whole contrast groups, blocks and
  minimal pairs, across its strata: :mod:`negbench.evaluation.subsets`), sized so that the whole
  profile of SmolLM2-135M takes at most ten minutes on two CPU cores (``docs/profile.md`` gives
  the sizes, their standard errors and the measurement);
* ``paper`` — every paper's full protocol: all items, the papers' modes, shots and seeds.

A benchmark is named as the task registry names it (:func:`negbench.tasks.benchmark_of`), so a
profile's rows, the reports' tables and the papers' reported results use one name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from negbench.errors import OptionError

#: the presets, with one line each for help texts and errors
PRESETS = {
    "quick": "each benchmark's headline protocol, 0-shot, on a fixed seeded stratified subset "
    "(about ten minutes for SmolLM2-135M on 2 CPU cores)",
    "paper": "every paper's full protocol: all items, the papers' modes, shots × seeds",
}
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
    paper: str  # reported-results paper stem ("" for none)
    quick: tuple[Part, ...]
    full: tuple[Part, ...]
    #: headline mode → the mode a model without prompt log-probabilities can answer instead
    #: (a generation mode of the same task), for the message that names it
    generation_mode: dict[str, str] = field(default_factory=dict)
    how_to_get: str = ""

    def parts(self, preset: str) -> tuple[Part, ...]:
        return self.quick if preset == "quick" else self.full


_CONDAQA_SPLITS = tuple(f"condaqa-split{i}" for i in range(1, 6))
_SCONE_PROMPTS = ("cond-q", "hyp-q", "cond-truth", "brown", "structured")

#: The benchmarks of a profile, in the order the page shows them.  The quick sizes are items
#: (about: subsets take whole units); ``docs/profile.md`` states them with their standard errors.
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "nubench",
        "Thunder-NUBench",
        "thunder-nubench",
        quick=(Part("nubench", ("nubench",), ("completion",), sample=250),),
        full=(
            Part(
                "nubench",
                ("nubench", "nubench-definition", "nubench-detail"),
                ("completion", "option"),
                shots=None,
                protocol=True,
            ),
        ),
        generation_mode={"completion": "option"},
        how_to_get="download the release (arXiv 2506.14397; hub "
        "thunder-research-group/SNU_Thunder-NUBench) and set $NEGBENCH_NUBENCH, or "
        "put it in $NEGBENCH_DATA/nubench",
    ),
    Benchmark(
        "konubench",
        "Thunder-KoNUBench",
        "thunder-konubench",
        quick=(Part("konubench", ("konubench",), ("cloze",), sample=60),),
        full=(Part("konubench", ("konubench",), ("cloze", "symbol"), shots=None, protocol=True),),
        generation_mode={"cloze": "api", "symbol": "api"},
        how_to_get="clone github.com/mcrl/Thunder-KoNUBench (hub "
        "thunder-research-group/SNU_Thunder-KoNUBench) and set $NEGBENCH_KONUBENCH, "
        "or put it in $NEGBENCH_DATA/konubench",
    ),
    Benchmark(
        "konubench-diagnostics",
        "KoNUBench diagnostics",
        "thunder-konubench",
        quick=(
            Part(
                "konubench-diagnostics",
                ("kmmlu-neg", "kmmlu-pos", "kobest-boolq-neg", "kobest-boolq"),
                ("symbol", "cloze"),
                sample=30,
            ),
        ),
        full=(
            Part(
                "konubench-diagnostics",
                ("kmmlu-neg", "kmmlu-pos", "kobest-boolq-neg", "kobest-boolq"),
                ("symbol", "cloze"),
            ),
        ),
        how_to_get="KMMLU and BoolQ-negated come with the Thunder-KoNUBench release "
        "($NEGBENCH_KONUBENCH); the original KoBEST BoolQ comes from the hub "
        "(skt/kobest_v1) or $NEGBENCH_KOBEST_BOOLQ",
    ),
    Benchmark(
        "condaqa",
        "CONDAQA",
        "condaqa",
        quick=(Part("condaqa", ("condaqa",), ("generate",), sample=32),),
        full=(
            Part("condaqa", ("condaqa",), ("generate",)),
            Part("condaqa-fewshot", _CONDAQA_SPLITS, ("generate",), shots=(9,), pooled=True),
        ),
        how_to_get="clone github.com/AbhilashaRavichander/CondaQA (hub lasha-nlp/CONDAQA) and "
        "set $NEGBENCH_CONDAQA, or put it in $NEGBENCH_DATA/condaqa",
    ),
    Benchmark(
        "notadataset",
        "This is not a Dataset",
        "this-is-not-a-dataset",
        quick=(Part("notadataset", ("notadataset",), ("next_token",), sample=600),),
        full=(Part("notadataset", ("notadataset",), ("next_token",)),),
        generation_mode={"next_token": "generate"},
        how_to_get="download the release of github.com/hitz-zentroa/This-is-not-a-Dataset (hub "
        "HiTZ/This-is-not-a-dataset) and set $NEGBENCH_NOTADATASET, or put it in "
        "$NEGBENCH_DATA/not-a-dataset",
    ),
    Benchmark(
        "jsts-neg",
        "JSTS-Neg",
        "jsts-neg",
        quick=(Part("jsts-neg", ("jsts-neg",), ("generate",), sample=100),),
        full=(Part("jsts-neg", ("jsts-neg",), ("generate",), shots=None, protocol=True),),
        how_to_get="get github.com/reiko-y/JSTS-Neg and set $NEGBENCH_JSTS_NEG, or build a set "
        "from JGLUE with 'negbench build jsts-neg' (--inhouse: negbench's own "
        "annotations) and point $NEGBENCH_JSTS_NEG at it",
    ),
    Benchmark(
        "jnli-neg",
        "JNLI-Neg",
        "",
        quick=(Part("jnli-neg", ("jnli-neg",), ("loglik",), sample=150),),
        full=(Part("jnli-neg", ("jnli-neg",), ("loglik", "generate"), shots=None, protocol=True),),
        generation_mode={"loglik": "generate"},
        how_to_get="clone github.com/asahi-y/JNLI-Neg and set $NEGBENCH_JNLI_NEG, or put it in "
        "$NEGBENCH_DATA/jnli-neg",
    ),
    Benchmark(
        "scone-nli",
        "ScoNe-NLI",
        "",
        quick=(Part("scone-nli", ("scone-nli",), ("cloze",), sample=240),),
        full=(
            Part("scone-nli", ("scone-nli",), ("cloze",) + _SCONE_PROMPTS),
            Part(
                "scone-nli-fewshot",
                ("scone-nli",),
                tuple(f"{m}-fs" for m in _SCONE_PROMPTS),
                shots=(4,),
            ),
        ),
        generation_mode={"cloze": "cond-q"},
        how_to_get="clone github.com/selenashe/ScoNe and set $NEGBENCH_SCONE, or put it in "
        "$NEGBENCH_DATA/scone",
    ),
    Benchmark(
        "scone-nlg",
        "ScoNe-NLG",
        "",
        quick=(),
        full=(Part("scone-nlg", ("scone-nlg",), ("loglik",)),),
        generation_mode={"loglik": "generate"},
        how_to_get="clone github.com/selenashe/ScoNe and set $NEGBENCH_SCONE",
    ),
)
BY_KEY = {b.key: b for b in BENCHMARKS}


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
    if names:
        bad = [n for n in names if n not in BY_KEY]
        if bad:
            raise OptionError(
                f"unknown benchmark(s) {', '.join(bad)}",
                where="--benchmarks",
                fix="choose from: " + ", ".join(BY_KEY),
            )
        chosen = [BY_KEY[n] for n in names]
    else:
        chosen = list(BENCHMARKS)
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
    return {b.key: p.sample for b in BENCHMARKS for p in b.quick[:1] if p.sample}


def quick_standard_errors() -> str:
    """``SE 2.0 at 600 items; …``: the standard error (points) of a proportion near 50 % at each
    quick-preset size — the line ``docs/profile.md`` states (a test keeps them equal)."""
    import math

    sizes = sorted(set(quick_sizes().values()), reverse=True)
    return "; ".join(f"SE {50 / math.sqrt(n):.1f} at {n:,} items" for n in sizes)
