"""JNLI-Neg in ``negbench profile``: its part and the minimal-pair phenomena (no paper numbers:
its paper is not among the five)."""

from __future__ import annotations

from negbench.scoring.profile_parts import Benchmark, Part
from negbench.tasks.common.minimal_pairs import pair_phenomena

PROFILE = Benchmark(
    key="jnli-neg",
    title="JNLI-Neg",
    order=70,
    paper="",
    quick=(Part("jnli-neg", ("jnli-neg",), ("loglik",), sample=150),),
    full=(Part("jnli-neg", ("jnli-neg",), ("loglik", "generate"), shots=None, protocol=True),),
    generation_mode={"loglik": "generate"},
    how_to_get="clone github.com/asahi-y/JNLI-Neg and set $NEGBENCH_JNLI_NEG, or put it in "
    "$NEGBENCH_DATA/jnli-neg",
)

PHENOMENA = pair_phenomena()
