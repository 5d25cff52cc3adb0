"""The ``negbench`` command line: one module per command, each adding its parser and setting the
function that runs it (``set_defaults(func=…)``); :func:`main` parses and dispatches, and turns a
user's error into one message and exit code 2."""

from __future__ import annotations

import argparse
import logging
import sys

from negbench import __version__
from negbench.errors import NegbenchError, stop_on_ctrl_c

EPILOG = """examples:
  negbench run                                   # embedded SmolLM2 on the built-in negation-mini task
  negbench run --tasks negation-mini,truefalse-mini --shots 0,5 --seeds 1,2,3
  negbench run --model ./my-model --tasks items.jsonl --modes cloze,letter
  negbench show runs/smollm2-135m-instruct__negation-mini
"""


def build_parser() -> argparse.ArgumentParser:
    from negbench.cli import (
        analyze,
        build,
        experiment,
        export,
        human_eval,
        lm_eval,
        models,
        profile,
        report,
        rescore,
        run,
        show,
        tasks,
        train,
    )

    p = argparse.ArgumentParser(
        prog="negbench",
        description="Measure, explain and improve how language models understand negation.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"negbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in (
        tasks,
        models,
        run,
        show,
        rescore,
        export,
        human_eval,
        report,
        build,
        analyze,
        train,
        experiment,
        lm_eval,
        profile,
    ):
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["lm-eval"] and raw[1:2] not in (["--"], ["-h"], ["--help"]):
        raw.insert(1, "--")  # lm-eval's own options follow, '--' or not
    try:
        if raw[:1] == ["run"]:  # run --config FILE: the file's flags first
            from negbench.cli.config import expand

            raw = expand(raw)
    except NegbenchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    parser = build_parser()
    try:  # lm-eval's flags (--output_path, --num_fewshot …): negbench's options, or a pointer
        from negbench.cli.lm_eval_flags import translate_argv

        raw = translate_argv(raw, parser)
    except NegbenchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(raw)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    stop_on_ctrl_c()  # even when started with SIGINT ignored
    try:
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return 0
        return func(args)
    except NegbenchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except ModuleNotFoundError as exc:  # an optional part that is not installed
        from negbench.errors import missing_module_error

        err = missing_module_error(exc.name or "")
        if err is None:
            raise
        print(err.render(), file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:  # `negbench show … | head`
        return 0
    except KeyboardInterrupt:
        print(
            "interrupted: answered requests are cached; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
