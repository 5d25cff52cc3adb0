"""Few-shot contexts, exactly as lm-evaluation-harness 0.4 builds them.

``lm-eval`` sampler: one ``random.Random(seed)`` per (task, seed), consumed sequentially over the
evaluated records in order; each record draws ``k`` examples with ``rnd.sample(fewshot_docs, k)``
(``k + 1`` when the few-shot split is the evaluated split, then the record itself is dropped).
``fixed`` sampler: one draw of ``k`` examples for the whole trial (same shots for every item).
A task may also give a callable ``sampler(docs, pool, k, seed)`` that yields one list of shots per
record (e.g. the stratified JSTS-Neg / JNLI-Neg draw in :mod:`negbench.tasks.common.minimal_pairs`).

Context = description + Σ(example query + target delimiter + example target + few-shot delimiter)
+ query.
"""

from __future__ import annotations

import random
from typing import Callable, Iterator, Sequence

from negbench.scoring.task import Doc, Rendered


def fewshot_draws(
    docs: Sequence[Doc],
    pool: Sequence[Doc],
    k: int,
    seed: int | None,
    same_split: bool,
    sampler: "str | Sampler" = "lm-eval",
) -> Iterator[list[Doc]]:
    """Yield, for each record in ``docs`` (in order), its few-shot examples.  ``sampler`` is
    ``"lm-eval"``, ``"fixed"`` or a callable ``(docs, pool, k, seed) -> iterator of shot lists``."""
    if k == 0:
        for _ in docs:
            yield []
        return
    if k > len(pool):
        from negbench.errors import TaskError

        raise TaskError(
            f"{k} shots asked but the few-shot split has only {len(pool)} records",
            where="--shots",
            fix=f"use at most {len(pool)} shots",
        )
    if callable(sampler):
        yield from sampler(docs, pool, k, seed)
        return
    rnd = random.Random(seed)
    if sampler == "fixed":
        shots = rnd.sample(list(pool), k)
        for _ in docs:
            yield shots
        return
    n = k + 1 if same_split else k
    for d in docs:
        drawn = rnd.sample(list(pool), min(n, len(pool)))
        yield [x for x in drawn if x.id != d.id][:k]


def build_context(
    query: str,
    examples: list[Rendered],
    description: str = "",
    target_delimiter: str = " ",
    fewshot_delimiter: str = "\n\n",
) -> str:
    block = "".join(
        e.query + target_delimiter + e.target_text() + fewshot_delimiter for e in examples
    )
    return description + block + query


Renderer = Callable[[Doc], Rendered]
#: A pluggable few-shot sampler: ``(docs, pool, k, seed)`` -> one list of shots per record of docs.
Sampler = Callable[[Sequence[Doc], Sequence[Doc], int, "int | None"], Iterator[list[Doc]]]
