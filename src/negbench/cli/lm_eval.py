"""``negbench lm-eval -- ARGS``: lm-evaluation-harness's own command line with negbench's engine
registered as its model ``negbench`` (:mod:`negbench.integrations.lm_eval`)."""
from __future__ import annotations

import argparse
import logging
import sys


def add_parser(sub) -> None:
    le = sub.add_parser("lm-eval", help="run lm-evaluation-harness with negbench's engine as "
                        "its model (--model negbench)",
                        description="Registers negbench's engine as the lm-evaluation-harness "
                        "model 'negbench' and hands everything after -- to lm-eval's own "
                        "command line (docs/lm_eval_model.md). Needs pip install "
                        "'negbench[lm-eval]'.",
                        epilog="example: negbench lm-eval -- --model negbench --model_args "
                        "model=smollm2-135m-instruct --tasks arc_easy --device cpu")
    le.add_argument("lm_eval_args", nargs=argparse.REMAINDER,
                    help="lm-eval's arguments, after --")
    le.set_defaults(func=lambda args: run(args.lm_eval_args))


def run(rest: list[str]) -> int:
    """lm-eval's own command line with the model 'negbench' registered."""
    from negbench.errors import require
    require("lm_eval")
    import negbench.integrations.lm_eval  # noqa: F401  (registers --model negbench)
    from lm_eval.__main__ import cli_evaluate
    rest = rest[1:] if rest[:1] == ["--"] else rest
    argv = sys.argv
    sys.argv = ["lm-eval", *rest]
    lm_log = logging.getLogger("lm_eval")
    handlers = list(lm_log.handlers)         # lm-eval adds one on the current stderr
    try:
        cli_evaluate()
    except SystemExit as exc:               # --help, argparse errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
        lm_log.handlers = handlers
    return 0
