"""User-facing errors: one clear message saying what went wrong, where, and how to fix it.

The CLI turns a :class:`NegbenchError` into that message and a non-zero exit; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations


class NegbenchError(Exception):
    """An error caused by the user's input or environment, not by a bug in negbench."""

    exit_code = 2

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"error: {self.what}"]
        if self.where:
            lines.append(f"  where: {self.where}")
        if self.fix:
            lines.append(f"  fix:   {self.fix}")
        return "\n".join(lines)


class DataError(NegbenchError):
    """A malformed data file or record (names the file, the record and the field)."""

    def __init__(
        self,
        what: str,
        *,
        path: str,
        record: str | int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ):
        where = str(path)
        if record is not None:
            where += f", record {record}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(what, where=where, fix=fix)
        self.path, self.record, self.field = path, record, field


class ModelError(NegbenchError):
    """A model that cannot be found or loaded."""


class TaskError(NegbenchError):
    """An unknown task, mode or protocol setting."""


class OutputError(NegbenchError):
    """An output folder or cache that cannot be written."""


class OptionError(NegbenchError):
    """A command-line option with a value that cannot be used."""


def stop_on_ctrl_c() -> None:
    """Make Ctrl-C (SIGINT) raise KeyboardInterrupt, however negbench was started.

    Python turns SIGINT into KeyboardInterrupt only when the parent left it at its default; a
    non-interactive shell starts a background command (``negbench run … &`` in a script) with
    SIGINT ignored, and such a run ignored ``kill -INT`` and Ctrl-C and went on to the end.  A
    killed run resumes, so stopping is always safe.  (To keep a run going when a terminal's
    Ctrl-C should not reach it, start it in its own session: ``setsid negbench run …``.)"""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Optional parts of negbench and the pip extra that installs each: a missing one is a user's
# environment, not a bug, so it gets one message naming the extra.
EXTRAS = {
    "peft": ("lora", "LoRA adapters and fine-tuning"),
    "fugashi": ("multilingual", "Japanese morphological analysis"),
    "unidic_lite": ("multilingual", "Japanese morphological analysis"),
    "kiwipiepy": ("multilingual", "Korean morphological analysis"),
    "lm_eval": ("lm-eval", "lm-evaluation-harness tasks (negbench lm-eval, --general-tasks)"),
    "openai": ("api", "OpenAI / OpenAI-compatible backends"),
    "anthropic": ("api", "the Anthropic backend"),
    "ray": ("ray", "--ray"),
    "tensorboard": ("tensorboard", "TensorBoard logging (--report-to tensorboard)"),
    "wandb": ("wandb", "Weights & Biases logging (--report-to wandb)"),
    "mlflow": ("mlflow", "MLflow logging (--report-to mlflow)"),
    "matplotlib": (None, "report plots"),
    "accelerate": (None, "loading GGUF models"),
    "gguf": (None, "loading GGUF models"),
}


def missing_module_error(name: str) -> NegbenchError | None:
    """The user-facing error for a missing optional module, or None when it is not one of ours."""
    top = (name or "").split(".")[0]
    if top not in EXTRAS:
        return None
    extra, purpose = EXTRAS[top]
    pip_name = top.replace("_", "-")
    fix = (
        f"pip install 'negbench[{extra}]'  (from a checkout: pip install -c constraints.txt "
        f"-e '.[{extra}]')"
        if extra
        else f"reinstall negbench with its dependencies (pip install {pip_name})"
    )
    return NegbenchError(
        f"{purpose} needs the Python package '{pip_name}', which is not installed", fix=fix
    )


def require(module: str):
    """Import an optional module, or raise the clear error that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        err = missing_module_error(exc.name or module)
        if err is None:
            raise
        raise err from exc
