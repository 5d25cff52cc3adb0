"""Chance and majority baselines of a benchmark's headline metric, computed from its items.

A score means little without its floor.  **Chance** is the expected score of a uniform random
pick among each item's answer options (1/k for a k-option item, so KoNUBench's three-option
items count 1/3).  **Majority** is the score of always giving the same answer, the most frequent
gold answer of the evaluated items: defined only where the answers form a small closed set
(letters, True/False, YES/NO/DON'T KNOW, 0–5), not where each item's options are its own
sentences (cloze modes).  A generation mode with no options of its own (CONDAQA, JSTS-Neg) takes
the label set of the task's log-likelihood mode when most gold answers are among those labels,
else the distinct gold answers when they are few (ScoNe's generation modes); an item whose gold
answer is outside the set (a CONDAQA span) can then be matched by neither baseline and counts
0, as it counts wrong in the task's accuracy.  Both are computed from the data, never typed in.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence


if TYPE_CHECKING:
    from negbench.scoring.task import Doc

#: at most this many distinct answers across items make a closed answer set
MAX_LABELS = 10


@dataclass(frozen=True)
class Item:
    """What a baseline needs of one evaluated item: its answer options and its gold answer."""

    options: tuple[str, ...]
    gold: str


@dataclass(frozen=True)
class Baseline:
    task: str
    mode: str
    metric: str  # the headline metric the baselines are floors of
    n: int  # items the metric counts
    chance: float | None  # None: no options to pick from
    majority: float | None  # None: no closed answer set
    majority_answer: str | None
    labels: tuple[str, ...]  # the closed answer set (empty when there is none)
    basis: str  # where the options came from, or why a baseline is undefined


def _norm(s: str) -> str:
    return " ".join(str(s).split()).casefold()


Scores = tuple[int, float | None, float | None, str | None, tuple[str, ...]]


def score_baselines(items: Iterable[Item]) -> Scores:
    """(n, chance, majority, majority answer, closed label set) over ``items`` (a pure function
    of the items; answers compared ignoring case and spacing, as the generation metrics do)."""
    items = list(items)
    n = len(items)
    if not n:
        return 0, None, None, None, ()
    with_options = [it for it in items if it.options]
    chance = None
    if len(with_options) == n:
        chance = (
            sum(
                (1.0 / len(it.options)) if _norm(it.gold) in {_norm(o) for o in it.options} else 0.0
                for it in items
            )
            / n
        )
    labels: dict[str, str] = {}
    for it in with_options:
        for o in it.options:
            labels.setdefault(_norm(o), o)
    if not with_options or len(labels) > MAX_LABELS:
        return n, chance, None, None, ()
    counts = Counter(_norm(it.gold) for it in items)
    best = max(labels, key=lambda lab: counts.get(lab, 0))  # ties: the first label
    return n, chance, counts.get(best, 0) / n, labels[best], tuple(labels.values())


def items_for(
    task: str, mode: str, docs: Sequence["Doc"] | None = None, limit: int | None = None
) -> tuple[list[Item], str]:
    """The evaluated items of ``task`` in ``mode`` as :class:`Item` (the mode's own rendering and
    record filter), and where their options come from.  ``docs``: the records to use (e.g. a
    profile's subset), else the task's test split (its first ``limit`` records)."""
    from negbench.scoring.formulations import Generation
    from negbench.tasks import get_task

    t = get_task(task)
    spec = t.mode(mode)
    if docs is None:
        docs = t.load(t.test_split)
    if spec.include is not None:
        docs = [d for d in docs if spec.include(d)]
    if limit:
        docs = docs[:limit]
    out: list[Item] = []
    kept = []
    for d in docs:
        r = spec.render(d)
        if r.gold is None:  # excluded from the mode's metrics (e.g. spans)
            continue
        gold = r.choices[r.gold] if isinstance(r.gold, int) else str(r.gold)
        out.append(Item(tuple(r.choices), gold))
        kept.append(d)
    if not out or any(it.options for it in out) or not isinstance(spec.formulation, Generation):
        return out, f"the options of mode '{mode}'"
    # an open generation mode: the task's label set, if its golds are labels
    label_spec = next(
        (m for m in t.modes.values() if not isinstance(m.formulation, Generation)), None
    )
    if label_spec is not None:
        labelled = [Item(tuple(label_spec.render(d).choices), it.gold) for d, it in zip(kept, out)]
        covered = sum(_norm(it.gold) in {_norm(o) for o in it.options} for it in labelled)
        if covered * 2 >= len(labelled):
            return labelled, (
                "the label set of the task's log-likelihood mode (the generation "
                "mode offers no options)"
            )
    golds = tuple(dict.fromkeys(it.gold for it in out))
    if len(golds) <= MAX_LABELS:
        return [Item(golds, it.gold) for it in out], (
            "the distinct gold answers (the mode offers no options)"
        )
    return out, "no options"


def baseline(
    task: str, mode: str, docs: Sequence["Doc"] | None = None, limit: int | None = None
) -> Baseline:
    """Chance and majority of the headline metric of ``task`` in ``mode`` on its evaluated
    items (see :func:`items_for`)."""
    items, basis = items_for(task, mode, docs, limit)
    n, chance, majority, answer, labels = score_baselines(items)
    if chance is None:
        basis = "no answer options: chance is undefined"
    elif majority is None:
        basis += "; majority is undefined (each item's options are its own texts)"
    from negbench.tasks import get_task

    return Baseline(
        task, mode, get_task(task).headline(mode), n, chance, majority, answer, labels, basis
    )
