"""A model's negation profile: the pieces a profile is built from.

* :mod:`negbench.profile.reported` — the results the five papers report for their models, as
  typed rows, and which of them compare with a negbench unit (same protocol);
* :mod:`negbench.profile.headline` — each benchmark's tasks and headline metric;
* :mod:`negbench.profile.baselines` — chance and majority floors computed from the data;
* :mod:`negbench.profile.lm_eval_layout` — a run's results in lm-evaluation-harness's layout;
* :mod:`negbench.profile.model_card` — a Markdown snippet for a model card.

Nothing here loads a model; importing the package imports none of its modules.
"""
