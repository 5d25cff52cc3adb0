"""A model's negation profile: every negation benchmark with data, one session, one page.

``negbench.profile(model, preset="quick", out=…)`` runs it (this package is callable: it is
:func:`negbench.profile.runner.profile`) and returns a :class:`~negbench.profile.runner.Profile`;
``docs/profile.md`` describes the presets, the page and the folder.  The pieces:

* :mod:`negbench.profile.presets` — the benchmarks, their parts and the presets;
* :mod:`negbench.profile.runner` — the run over one session, resumable, and its checks;
* :mod:`negbench.profile.folder` — the profile folder and its manifest; a profile read as one run;
* :mod:`negbench.profile.page` — the page: headline, figures, phenomena, standings, not run;
* :mod:`negbench.profile.phenomena` — the negation phenomena across benchmarks;
* :mod:`negbench.profile.compare` — several profiles compared (``negbench profile compare``);
* :mod:`negbench.profile.reported` — the results the five papers report, and which compare;
* :mod:`negbench.profile.baselines` — chance and majority floors computed from the data;
* :mod:`negbench.profile.lm_eval_layout` — results in lm-evaluation-harness's layout;
* :mod:`negbench.profile.model_card` — a Markdown snippet for a model card.

Importing the package imports none of its modules (and no model code).
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _ProfileModule(types.ModuleType):
    """The package, callable as ``negbench.profile(...)`` (the name of the idea is the name of
    the call and of the package)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from negbench.profile.runner import profile

        return profile(*args, **kwargs)


sys.modules[__name__].__class__ = _ProfileModule
