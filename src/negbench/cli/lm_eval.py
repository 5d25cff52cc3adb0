"""``negbench lm-eval -- ARGS``: lm-evaluation-harness's own command line with negbench's engine
registered as its model ``negbench`` (:mod:`negbench.integrations.lm_eval`)."""

from __future__ import annotations

import argparse
import logging
import sys

from negbench.errors import NegbenchError


def add_parser(sub) -> None:
    le = sub.add_parser(
        "lm-eval",
        help="run lm-evaluation-harness with negbench's engine as its model (--model negbench)",
        description="Registers negbench's engine as the lm-evaluation-harness "
        "model 'negbench' and hands everything after -- to lm-eval's own "
        "command line (docs/lm_eval_model.md). Needs pip install "
        "'negbench[lm-eval]'.",
        epilog="example: negbench lm-eval -- --model negbench --model_args "
        "model=smollm2-135m-instruct --tasks arc_easy --device cpu",
    )
    le.add_argument("lm_eval_args", nargs=argparse.REMAINDER, help="lm-eval's arguments, after --")
    le.set_defaults(func=lambda args: run(args.lm_eval_args))


def run(rest: list[str]) -> int:
    """lm-eval's own command line with the model 'negbench' registered."""
    from negbench.hub import offline_when_unreachable
    from negbench.errors import require

    require("lm_eval")
    offline_when_unreachable()  # no hub: its cache only, no minute of retries
    import negbench.integrations.lm_eval  # noqa: F401  (registers --model negbench)
    from lm_eval.__main__ import cli_evaluate

    rest = rest[1:] if rest[:1] == ["--"] else rest
    argv = sys.argv
    sys.argv = ["lm-eval", *rest]
    lm_log = logging.getLogger("lm_eval")
    handlers = list(lm_log.handlers)  # lm-eval adds one on the current stderr
    try:
        cli_evaluate()
    except SystemExit as exc:  # --help, argparse errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # lm-eval's errors for the user: one line
        err = lm_eval_error(exc)
        if err is None:
            raise
        raise err from None
    finally:
        sys.argv = argv
        lm_log.handlers = handlers
    return 0


# Exceptions another tool raises for its user's input or environment (not for a bug): the
# packages they come from, and the kinds that mean "the user's arguments" or "could not fetch".
_FETCHING = (
    "datasets",
    "huggingface_hub",
    "transformers",
    "httpx",
    "httpx2",
    "requests",
    "urllib3",
    "fsspec",
    "aiohttp",
)


def _raised_in(exc: BaseException) -> str:
    """The top-level package of the code that raised ``exc`` (its innermost frame)."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0]


def lm_eval_error(exc: BaseException) -> "NegbenchError | None":
    """The one-line error for what lm-evaluation-harness raised on a user's mistake (an unknown
    task or model name, no tasks, bad model arguments) or on data and models it could not fetch
    (no network, not cached); None for anything else, which is a bug and keeps its traceback."""
    origin = _raised_in(exc)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, (ConnectionError, OSError, TimeoutError)) and (
        origin in _FETCHING or "lm_eval" in origin
    ):
        from negbench.hub import unreachable

        why = unreachable()
        return NegbenchError(
            f"lm-eval could not load a model or data set: {first}",
            where="lm-eval",
            fix=(
                f"the Hugging Face hub is not available ({why}) and the local cache does not "
                "hold it: where the hub is reachable, download the model (hf download ID; then "
                "pass its folder) or run the task once (its data set is then cached); or use a "
                "task whose dataset_path is a local file (examples/lm_eval/ with "
                "--include_path)"
            )
            if why
            else "check the model and data set names, and the network",
        )
    if isinstance(exc, (ValueError, KeyError)) and origin == "lm_eval":
        return NegbenchError(
            f"lm-eval: {first}",
            where="lm-eval arguments (after --)",
            fix="check --tasks (lm-eval ls tasks lists them; --include_path "
            "adds a folder of task YAMLs), --model and --model_args",
        )
    return None
