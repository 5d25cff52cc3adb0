"""lm-evaluation-harness's flags on negbench's command line (``run``, ``profile``, ``train``).

Someone coming from ``lm_eval`` types ``--output_path``, ``--num_fewshot``, ``--batch_size auto``
or ``--limit 0.1``.  Before argparse sees the command line, :func:`translate` rewrites every
lm-eval flag whose meaning negbench shares into negbench's own option (an *alias*), drops the
few that ask for what negbench always does, with a note (``--log_samples``: samples are always
saved), and refuses the ones negbench does differently with one line naming negbench's way (a
*pointer*, exit code 2).  :data:`FLAGS` is the table; ``docs/lm_eval_flags.md`` prints it for
every flag of ``lm_eval run --help`` (lm-eval 0.4.13), and a test keeps the two in step.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from negbench.errors import OptionError

#: What negbench does with an lm-eval flag.
ALIAS, NOTE, POINTER, SAME = "alias", "note", "pointer", "same"


@dataclass(frozen=True)
class Flag:
    """One flag of ``lm_eval run``: its names, how many values it takes (``none``, ``one``,
    ``optional``, ``many``), what negbench does with it and negbench's option(s) for it (the
    first one the command has is used)."""

    name: str
    short: str | None
    takes: str
    action: str
    targets: tuple[str, ...] = ()
    says: str = ""


FLAGS: tuple[Flag, ...] = (
    Flag("--help", "-h", "none", SAME, ("--help",), "the command's help"),
    Flag(
        "--config",
        "-C",
        "one",
        POINTER,
        (),
        "--config reads a YAML file of negbench's own option names "
        "(tasks:, shots: …; docs/yaml_tasks.md), not lm-eval's",
    ),
    Flag(
        "--tasks",
        "-t",
        "many",
        ALIAS,
        ("--tasks",),
        "space- or comma-separated task names, joined by commas; negbench's task names "
        "(negbench tasks) or .jsonl / .yaml task files",
    ),
    Flag(
        "--model",
        "-M",
        "one",
        ALIAS,
        ("--model",),
        "lm-eval's hf / hf-auto / huggingface with --model_args pretrained=X become --model X; "
        "vllm becomes --model vllm:X; a negbench model name passes as it is",
    ),
    Flag(
        "--model_args",
        "-a",
        "many",
        ALIAS,
        ("--model",),
        "pretrained= → --model, dtype= → --dtype, device= → --device, peft= → --adapter, "
        "max_length= → --max-length, add_bos_token= → --add-bos; any other key is refused "
        "with a pointer",
    ),
    Flag(
        "--apply_chat_template",
        None,
        "optional",
        ALIAS,
        ("--chat",),
        "the model's own chat template, lm-eval's layout (--chat-layout); a named template is "
        "refused: negbench uses the template the tokenizer holds",
    ),
    Flag(
        "--limit",
        "-L",
        "one",
        ALIAS,
        ("--limit", "--eval-limit"),
        "a count, or a fraction 0 < x < 1 of each task's records; negbench takes whole units "
        "(contrast groups, blocks, pairs) spread over strata",
    ),
    Flag(
        "--use_cache",
        "-c",
        "one",
        ALIAS,
        ("--cache",),
        "the response cache file (negbench caches every answer by default)",
    ),
    Flag("--num_fewshot", "-f", "one", ALIAS, ("--shots",), "few-shot examples per prompt"),
    Flag(
        "--batch_size",
        "-b",
        "one",
        ALIAS,
        ("--batch-size",),
        "rows per forward call, or auto (found once per model and device, remembered); "
        "auto:N is auto",
    ),
    Flag(
        "--max_batch_size",
        None,
        "one",
        POINTER,
        (),
        "with --batch-size auto negbench bounds calls by memory; give --batch-size N for a "
        "fixed count, --max-batch-tokens for a token bound",
    ),
    Flag("--device", None, "one", ALIAS, ("--device",), "cpu, cuda, cuda:N, mps, auto"),
    Flag(
        "--gen_kwargs",
        None,
        "many",
        POINTER,
        (),
        "greedy decoding with each task's own stop sequences and token budget "
        "(generation_kwargs in a YAML task file, docs/yaml_tasks.md); --api-seed seeds API "
        "sampling",
    ),
    Flag(
        "--output_path",
        "-o",
        "one",
        ALIAS,
        ("--output", "--out"),
        "the run folder (results.json and samples/ inside); a .json file name is refused",
    ),
    Flag(
        "--log_samples",
        "-s",
        "none",
        NOTE,
        (),
        "accepted: negbench always saves every sample (samples/ in the run folder)",
    ),
    Flag(
        "--samples",
        "-E",
        "one",
        POINTER,
        (),
        "subsets keep whole units: --limit N (data order) or --sample N --seed S (random)",
    ),
    Flag(
        "--cache_requests",
        None,
        "optional",
        NOTE,
        (),
        "accepted: negbench builds requests from the records each run and caches the answers "
        "(--cache, --no-cache)",
    ),
    Flag(
        "--check_integrity",
        None,
        "none",
        POINTER,
        (),
        "every task's records are checked before the model loads, on every run",
    ),
    Flag(
        "--system_instruction",
        None,
        "one",
        ALIAS,
        ("--system-prompt",),
        "the system message (with --chat / --apply_chat_template)",
    ),
    Flag(
        "--fewshot_as_multiturn",
        None,
        "optional",
        POINTER,
        (),
        "the few-shot block and the question go in one user turn, the "
        "description in the system turn (--chat-layout lm-eval or user)",
    ),
    Flag(
        "--include_path",
        None,
        "one",
        POINTER,
        (),
        "give YAML task files to --tasks directly (--tasks my_task.yaml; docs/yaml_tasks.md)",
    ),
    Flag(
        "--verbosity",
        "-v",
        "one",
        NOTE,
        (),
        "accepted and ignored: negbench logs progress and warnings; --quiet drops the bars",
    ),
    Flag(
        "--write_out",
        "-w",
        "none",
        POINTER,
        (),
        "the prompts are saved with every sample: negbench show RUN --units, or samples/*.jsonl",
    ),
    Flag(
        "--show_config",
        None,
        "none",
        POINTER,
        (),
        "the run's configuration is saved in results.json (config) and shown by negbench show RUN",
    ),
    Flag(
        "--wandb_args",
        None,
        "many",
        POINTER,
        (),
        "--report-to wandb (WANDB_PROJECT etc. from the environment; docs/tracking.md)",
    ),
    Flag(
        "--wandb_config_args",
        None,
        "many",
        POINTER,
        (),
        "--report-to wandb logs the run's configuration itself (docs/tracking.md)",
    ),
    Flag(
        "--trackio_args",
        None,
        "many",
        POINTER,
        (),
        "--report-to lists the trackers negbench supports (docs/tracking.md)",
    ),
    Flag(
        "--hf_hub_log_args",
        None,
        "many",
        POINTER,
        (),
        "a run folder is written; upload it yourself (huggingface-cli upload)",
    ),
    Flag(
        "--predict_only",
        "-x",
        "none",
        POINTER,
        (),
        "every run is scored; negbench rescore RUN recomputes metrics from saved samples",
    ),
    Flag(
        "--seed",
        None,
        "one",
        SAME,
        ("--sample-seed",),
        "not lm-eval's: negbench's --seed is --sample-seed, the seed of --sample's draw; "
        "few-shot seeds are --seeds (several give one unit each)",
    ),
    Flag(
        "--trust_remote_code",
        None,
        "none",
        POINTER,
        (),
        "models load with the code transformers ships; models that need remote "
        "code are not supported",
    ),
    Flag(
        "--confirm_run_unsafe_code",
        None,
        "none",
        POINTER,
        (),
        "tasks run no task code",
    ),
    Flag(
        "--metadata",
        None,
        "many",
        POINTER,
        (),
        "tasks take their options in the task name (notadataset[sample=2000])",
    ),
)

BY_NAME: dict[str, Flag] = {f.name: f for f in FLAGS}
BY_SHORT: dict[str, Flag] = {f.short: f for f in FLAGS if f.short}

#: lm-eval's --model values that are transformers models (``pretrained=`` is the model).
HF_MODELS = ("hf", "hf-auto", "huggingface")
#: --model_args keys and negbench's option for each.
MODEL_ARGS: dict[str, str] = {
    "dtype": "--dtype",
    "device": "--device",
    "peft": "--adapter",
    "max_length": "--max-length",
    "add_bos_token": "--add-bos",
}


@dataclass
class Command:
    """What :func:`translate` needs to know of the command it rewrites for."""

    name: str
    options: frozenset[str]  # every option string of the command (negbench's own)
    takes_value: frozenset[str]  # those that take a value


def command_of(parser: argparse.ArgumentParser, name: str) -> Command | None:
    """The :class:`Command` of subcommand ``name`` of negbench's parser (None if absent)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            sub = action.choices[name]
            opts, valued = set(), set()
            for a in sub._actions:
                opts.update(a.option_strings)
                if a.option_strings and a.nargs != 0:
                    valued.update(a.option_strings)
            return Command(name, frozenset(opts), frozenset(valued))
    return None


def pointer(flag: str, text: str) -> OptionError:
    """The one-line refusal of an lm-eval flag negbench does differently."""
    return OptionError(f"{flag} is lm-eval's; negbench: {text}")


def translate(
    argv: Sequence[str], cmd: Command, note: Callable[[str], None] | None = None
) -> list[str]:
    """``argv`` (the command's own arguments, after its name) with lm-eval's flags rewritten
    as negbench's options; ``note`` gets a line for each flag accepted but not needed.  Raises
    :class:`OptionError` (exit 2) for a flag negbench does differently.  negbench's own
    options and their values pass unchanged."""
    say = note or (lambda s: print(f"note: {s}", file=sys.stderr))
    out: list[str] = []
    model_args: list[str] = []
    model_at: int | None = None  # where --model's value is in ``out``
    i = 0
    args = list(argv)

    def values(j: int, inline: str | None, takes: str) -> tuple[list[str], int]:
        """The flag's values and the index after them."""
        if inline is not None:
            return [inline], j
        if takes == "none":
            return [], j
        got: list[str] = []
        while j < len(args) and not _is_option(args[j]):
            got.append(args[j])
            j += 1
            if takes in ("one", "optional"):
                break
        return got, j

    while i < len(args):
        tok = args[i]
        if tok == "--":
            out += args[i:]
            break
        head, eq, inline_v = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        inline = inline_v if eq else None
        flag = BY_NAME.get(head) or (BY_SHORT.get(head) if head not in cmd.options else None)
        own = head in cmd.options
        if flag is None or (own and flag.name not in ("--tasks", "--model")):
            out.append(tok)  # negbench's own option (or not an option): as it is
            if head in cmd.takes_value and inline is None and i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
            i += 1
            continue
        vals, i = values(i + 1, inline, flag.takes)
        if flag.takes in ("one", "many") and not vals:
            raise OptionError(f"{head} needs a value", where=head)
        if flag.action == POINTER:
            raise pointer(head, flag.says)
        if flag.action == NOTE:
            if flag.name == "--cache_requests" and vals and vals[0] not in ("true", "True"):
                raise pointer(head, flag.says)
            say(f"{head}: {flag.says}")
            continue
        if flag.name == "--model_args":
            model_args += [kv for v in vals for kv in v.split(",") if kv.strip()]
            continue
        target = next((t for t in flag.targets if t in cmd.options), None)
        if target is None:
            raise pointer(head, f"negbench {cmd.name} has no such option (negbench {cmd.name} -h)")
        if flag.name == "--tasks":
            out += [target, ",".join(t.strip(",") for t in vals if t.strip(","))]
        elif flag.name == "--model":
            model_at = len(out) + 1
            out += [target, vals[0]]
        elif flag.name == "--apply_chat_template":
            if vals and vals[0].lower() not in ("true", "1", "yes"):
                raise pointer(
                    f"{head} {vals[0]}",
                    "--chat applies the chat template the model's tokenizer holds; named "
                    "templates are not supported",
                )
            out.append(target)
        elif flag.name == "--batch_size":
            v = vals[0]
            if v.startswith("auto:"):
                say(f"{head} {v}: negbench's auto finds the largest call once and remembers it")
                v = "auto"
            out += [target, v]
        elif flag.name == "--output_path" and vals[0].endswith(".json"):
            raise pointer(
                f"{head} {vals[0]}",
                "--output names a run folder (results.json and samples/ are written inside)",
            )
        else:
            out += [target] + vals
    if model_args:
        _apply_model_args(out, model_at, model_args, cmd)
    elif model_at is not None and out[model_at] in HF_MODELS + ("vllm",):
        raise pointer(
            f"--model {out[model_at]}",
            "--model names the model itself (--model gpt2, a folder, a hub id); lm-eval's "
            "--model_args pretrained=X is negbench's --model X",
        )
    return out


def _apply_model_args(out: list[str], model_at: int | None, kvs: list[str], cmd: Command):
    """``--model_args`` folded into ``out``: ``pretrained=`` becomes --model's value."""
    kind = out[model_at] if model_at is not None else "hf"
    pairs = {}
    for kv in kvs:
        key, eq, val = kv.partition("=")
        if not eq:
            raise OptionError(f"--model_args: expected key=value, got {kv!r}", where="--model_args")
        pairs[key.strip()] = val.strip()
    pretrained = pairs.pop("pretrained", None)
    if kind not in HF_MODELS + ("vllm",):
        raise pointer(
            f"--model {kind} --model_args",
            "--model takes the model itself (a name, folder or hub id, or a prefix such as "
            "openai:, vllm:, anthropic:; docs/backends.md)",
        )
    if pretrained is None:
        raise pointer("--model_args", "give the model as --model NAME (pretrained= is missing)")
    model = f"vllm:{pretrained}" if kind == "vllm" else pretrained
    if model_at is None:
        out += ["--model", model]
    else:
        out[model_at] = model
    for key, val in pairs.items():
        opt = MODEL_ARGS.get(key)
        if opt is None or opt not in cmd.options:
            raise pointer(
                f"--model_args {key}=",
                f"negbench {cmd.name} has no counterpart of {key} "
                f"(model options: negbench {cmd.name} -h)",
            )
        if key == "dtype":
            val = val.removeprefix("torch.")
        if key == "add_bos_token":
            val = "yes" if val.lower() in ("true", "1", "yes") else "no"
        out += [opt, val]


def _is_option(tok: str) -> bool:
    """An option, not a value (negative numbers are values)."""
    return tok.startswith("-") and tok != "-" and not tok[1:2].isdigit()


#: Commands whose options share lm-eval's meanings.
COMMANDS = ("run", "profile", "train")


def translate_argv(raw: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``negbench``'s whole command line with lm-eval's flags translated for :data:`COMMANDS`
    (the hook :func:`negbench.cli.main` calls before parsing)."""
    if not raw or raw[0] not in COMMANDS:
        return raw
    cmd = command_of(parser, raw[0])
    if cmd is None:
        return raw
    return [raw[0]] + translate(raw[1:], cmd)


def markdown_table() -> str:
    """The table of ``docs/lm_eval_flags.md``."""
    lines = [
        "| lm-eval | negbench | what negbench does |",
        "|---|---|---|",
    ]
    for f in FLAGS:
        names = f"`{f.name}`" + (f" (`{f.short}`)" if f.short else "")
        if f.action == POINTER:
            neg = "— (refused with a pointer)"
        elif f.action == NOTE:
            neg = "— (accepted, a note)"
        else:
            neg = " / ".join(f"`{t}`" for t in f.targets)
        lines.append(f"| {names} | {neg} | {f.says} |")
    return "\n".join(lines) + "\n"
