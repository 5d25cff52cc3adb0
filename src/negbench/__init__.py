"""negbench: measure, explain and improve how language models understand negation.

The Python API (``docs/python_api.md``)::

    import negbench
    res = negbench.evaluate(model="smollm2-135m-instruct", tasks=["negation-mini"], shots=[0])
    res.groups["negation-mini.cloze.0shot"].mean("acc")
    prof = negbench.profile("gemma3-270m", preset="quick")   # every negation benchmark, one page

    with negbench.Session("gemma3-270m") as s:          # one loaded model, several evaluations
        a = s.evaluate(["konubench"], modes=["cloze"], limit=100)
        b = s.evaluate(["jsts-neg"], output="runs/jsts")

Names are imported on first use: ``import negbench`` loads neither torch nor transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_API = {
    "evaluate": "negbench.evaluation.session",
    "open_model": "negbench.evaluation.session",
    "Session": "negbench.evaluation.session",
    "Results": "negbench.evaluation.results",
    "ModelSpec": "negbench.backends.spec",
    "NegbenchError": "negbench.errors",
    "profile": "negbench.profile",
}

if TYPE_CHECKING:
    from negbench.backends.spec import ModelSpec
    from negbench.errors import NegbenchError
    from negbench.evaluation.results import Results
    from negbench.evaluation.session import Session, evaluate, open_model
    from negbench import profile


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        module = importlib.import_module(_API[name])
        value = module if module.__name__ == f"negbench.{name}" else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'negbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


__all__ = [
    "__version__",
    "evaluate",
    "open_model",
    "Session",
    "Results",
    "ModelSpec",
    "NegbenchError",
    "profile",
]
