"""An evaluation run: a :class:`~negbench.evaluation.session.Session` (backend, cache, engine,
store), the runner (tasks × modes × shots × seeds → requests → records → metrics), few-shot
contexts, scoring formulations, metrics, run folders and the Ray pool."""
