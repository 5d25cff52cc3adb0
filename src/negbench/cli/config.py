"""``negbench run --config run.yaml``: the options of ``negbench run`` from a YAML file.

The file maps option names (as on the command line, without the dashes; ``-`` or ``_``) to
values; lists stand for comma-separated values, ``true`` / ``false`` for flags::

    model: gemma3-270m
    tasks: [konubench, my_task.yaml]
    modes: [cloze]
    shots: [0, 5]
    seeds: [1, 2, 3]
    limit: 100
    chat: false
    vllm-arg: ["--max-model-len=4096"]

It is turned into those very flags, placed before the ones typed on the command line: the
command means exactly ``negbench run <the file's flags> <the rest>``, so an option given on the
command line wins, and every value is checked by the same parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from negbench.errors import OptionError


def _run_parser() -> argparse.ArgumentParser:
    from negbench.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def config_path(argv: list[str]) -> tuple[str | None, list[str]]:
    """(the --config file, argv without it) of a ``run`` command line."""
    out, path = [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--config":
            if i + 1 >= len(argv):
                raise OptionError(
                    "--config needs a file", where="--config", fix="--config run.yaml"
                )
            path = argv[i + 1]
            i += 2
            continue
        if a.startswith("--config="):
            path = a.split("=", 1)[1]
        else:
            out.append(a)
        i += 1
    return path, out


def config_flags(path: str | Path, parser: argparse.ArgumentParser | None = None) -> list[str]:
    """The command-line flags a config file stands for."""
    from negbench.errors import require

    yaml = require("yaml")
    from negbench.records import read_text

    p = Path(path)
    if not p.is_file():
        raise OptionError(
            f"config file not found: {p}",
            where="--config",
            fix="give a YAML file of negbench run options",
        )
    try:
        obj = yaml.safe_load(read_text(p))
    except yaml.YAMLError as exc:
        raise OptionError(
            f"{p} is not valid YAML ({exc})",
            where="--config",
            fix="check the indentation and the quoting",
        ) from None
    if obj is None:
        return []
    if not isinstance(obj, dict):
        raise OptionError(
            f"{p}: a config file is a mapping of option names to values",
            where="--config",
            fix="e.g. tasks: [negation-mini]",
        )
    parser = parser or _run_parser()
    actions = {opt: a for a in parser._actions for opt in a.option_strings}
    flags: list[str] = []
    for key, value in obj.items():
        opt = "--" + str(key).replace("_", "-")
        action = actions.get(opt)
        if action is None or opt in ("--config", "--help"):
            import difflib

            names = sorted(
                o[2:] for o in actions if o.startswith("--") and o not in ("--config", "--help")
            )
            close = difflib.get_close_matches(str(key).replace("_", "-"), names, n=1)
            raise OptionError(
                f"{p}: unknown option '{key}'",
                where="--config",
                fix=(f"did you mean '{close[0]}'? " if close else "")
                + "options: "
                + ", ".join(names),
            )
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            if not isinstance(value, bool):
                raise OptionError(
                    f"{p}: '{key}' is a flag: true or false, got {value!r}",
                    where="--config",
                    fix=f"{key}: true",
                )
            if value == isinstance(action, argparse._StoreTrueAction):
                flags.append(opt)
            continue
        if value is None:
            continue
        if isinstance(action, argparse._AppendAction):
            for v in value if isinstance(value, list) else [value]:
                flags.append(f"{opt}={_text(v)}")
            continue
        if isinstance(value, list):
            value = ",".join(_text(v) for v in value)
        flags.append(f"{opt}={_text(value)}")
    return flags


def _text(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def expand(argv: list[str]) -> list[str]:
    """``run --config FILE …`` → ``run <the file's flags> …`` (other command lines unchanged)."""
    if argv[:1] != ["run"]:
        return argv
    path, rest = config_path(argv[1:])
    if path is None:
        return argv
    return ["run", *config_flags(path), *rest]
