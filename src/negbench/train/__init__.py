"""LoRA fine-tuning in the loop: the papers' recipes (:mod:`negbench.scoring.recipes`), their
training data (:mod:`negbench.train.data`), training on peft + transformers ``Trainer`` and the
before / after evaluation (:mod:`negbench.train.trainer`), and ``negbench train`` /
``negbench recipes`` (:mod:`negbench.cli.train`).  See ``docs/training.md``.

Importing this package loads neither torch nor transformers.
"""

from __future__ import annotations

from negbench.scoring.recipes import Recipe, get_recipe, resolve_recipe

__all__ = ["Recipe", "get_recipe", "resolve_recipe", "train"]


def train(*args, **kwargs):
    """:func:`negbench.train.trainer.train` (imported lazily: it needs torch)."""
    from negbench.train.trainer import train as _train

    return _train(*args, **kwargs)
