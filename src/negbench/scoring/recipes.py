"""The papers' LoRA fine-tuning recipes as typed, overridable configurations.

A :class:`Recipe` holds every setting of a training run: the data, the prompt format, LoRA, the
optimiser and schedule, checkpoints, and the evaluation that follows.  The registered recipes
reproduce the papers (values and where each comes from are in the comments below and in
``docs/training.md``); any field can be changed from a YAML file (``--config``) or the command
line (``--set key=value``), and the effective recipe is saved with the adapter.

Where a paper is silent, the value comes from the paper's own code or tool (LLaMA-Factory for
Thunder-NUBench, the official ``sft/`` scripts for Thunder-KoNUBench, the official repository's
``configs/train/*.yaml`` and ``config.py`` for This is not a Dataset), and the comment says so.

No torch import here: ``negbench recipes`` and the validation of a command run before any model
is loaded.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from negbench.errors import OptionError

#: Fields that name and describe a recipe; everything else is a setting that can be overridden.
META_FIELDS = ("name", "paper", "summary", "language", "variant")
#: Settings that change what is trained (a finished adapter with the same values is reused, an
#: unfinished one with the same values is resumed).  The rest only change logging, checkpoints and
#: the evaluation.
NOT_IDENTITY = (
    "logging_steps",
    "save_steps",
    "save_total_limit",
    "eval_task",
    "eval_modes",
    "eval_chat",
    "eval_limit",
    # how the effective batch is computed (micro-batches, checkpointing), not what it is
    "micro_batch_size",
    "memory_budget_gb",
    "gradient_checkpointing",
)
GRADIENT_CHECKPOINTING = ("auto", "on", "off")

TEMPLATES = ("auto", "chat", "plain")
EVAL_CHAT = ("auto", "yes", "no")
SCHEDULERS = (
    "linear",
    "cosine",
    "cosine_with_restarts",
    "polynomial",
    "constant",
    "constant_with_warmup",
    "inverse_sqrt",
    "reduce_lr_on_plateau",
    "cosine_with_min_lr",
    "warmup_stable_decay",
)


@dataclass(frozen=True)
class Recipe:
    """One fine-tuning configuration.  ``negbench recipes`` lists them; ``docs/training.md``
    explains every field."""

    # -- what it is (not overridable) -------------------------------------------------------------
    name: str
    paper: str  # where the values come from
    summary: str = ""
    language: str = "en"  # picks the default model (en: smollm2, ko: gemma3)
    variant: str = "paper"  # "paper" or "official" (the authors' code)

    # -- training data ------------------------------------------------------------------------------
    data: str = ""  # exporter spec (negbench export) or a .json/.jsonl file
    data_split: str = "train"
    max_samples: int | None = None  # LLaMA-Factory max_samples: the first N records

    # -- prompt format -------------------------------------------------------------------------------
    template: str = "auto"  # chat: the model's chat template; plain: raw text;
    # auto: chat when the model has a template
    prompt_join: str = "\n"  # instruction + prompt_join + input (input non-empty)
    response_prefix: str = ""  # plain template: text between prompt and response
    append_eos: bool = True  # plain template: end the response with EOS
    instruction_chat: str | None = None  # replaces the instruction under a chat template
    cutoff_len: int = 512  # tokens of prompt + response (response is cut)
    prompt_loss_weight: float = 0.0  # 0: loss on the response only; w > 0: prompt
    # tokens carry a share w of the loss (official NaD)
    # -- LoRA ------------------------------------------------------------------------------------------
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_dropout: float = 0.0
    lora_target: tuple[str, ...] = ("all",)  # "all": every linear layer but the output head
    quantization: int | None = None  # 8 / 4: bitsandbytes base (GPU only), else none

    # -- optimisation ----------------------------------------------------------------------------------
    num_train_epochs: float = 3.0
    max_steps: int | None = None  # optimiser steps; overrides the epochs when set
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 8
    learning_rate: float = 1e-4
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch"
    bf16: bool = True  # where the device supports it, else fp32 + a note
    seed: int = 42

    # -- memory (the same gradients: per_device_train_batch_size is split, not changed) ----------
    micro_batch_size: int | None = None  # examples per forward pass; None: the largest divisor
    # of per_device_train_batch_size whose activations fit memory_budget_gb
    memory_budget_gb: float | None = None  # activations of one micro-batch; None: auto (CPU:
    # 1 GB or a quarter of the free memory; GPU: half the free memory after loading)
    gradient_checkpointing: str = "auto"  # auto: where the micro-batch would not fit otherwise

    # -- checkpoints and logging ---------------------------------------------------------------------
    logging_steps: int = 10
    save_steps: int = 500
    save_total_limit: int | None = 2

    # -- evaluation after training ---------------------------------------------------------------------
    eval_task: str = ""
    eval_modes: tuple[str, ...] = ()
    eval_chat: str = "auto"  # auto: --chat when training used the chat template
    eval_limit: int | None = None  # about N records, whole units (notadataset: whole blocks)

    # -- views -------------------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Every overridable field and its value."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in META_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def identity(self) -> dict[str, Any]:
        """The settings that decide what is trained (see :data:`NOT_IDENTITY`)."""
        return {k: _plain(v) for k, v in self.settings().items() if k not in NOT_IDENTITY}

    @property
    def effective_batch(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps

    def llamafactory(
        self, model_name_or_path: str, dataset: str, template: str, output_dir: str
    ) -> tuple[dict[str, Any], list[str]]:
        """The recipe as a LLaMA-Factory ``llamafactory-cli train`` YAML (Listing 10's keys), and
        the settings LLaMA-Factory cannot express (each a sentence for the user)."""
        y: dict[str, Any] = {
            "model_name_or_path": model_name_or_path,
            "trust_remote_code": True,
            "stage": "sft",
            "do_train": True,
            "finetuning_type": "lora",
            "lora_rank": self.lora_rank,
            "lora_alpha": _num(self.lora_alpha),
            "lora_dropout": self.lora_dropout,
            "lora_target": "all" if self.lora_target == ("all",) else ",".join(self.lora_target),
        }
        if self.quantization:
            y["quantization_bit"] = self.quantization
        y.update({"dataset": dataset, "template": template, "cutoff_len": self.cutoff_len})
        if self.max_samples:
            y["max_samples"] = self.max_samples
        y.update(
            {
                "overwrite_cache": True,
                "output_dir": output_dir,
                "logging_steps": self.logging_steps,
                "save_steps": self.save_steps,
                "plot_loss": True,
                "overwrite_output_dir": True,
                "save_only_model": False,
                "report_to": "none",
                "per_device_train_batch_size": self.per_device_train_batch_size,
                "gradient_accumulation_steps": self.gradient_accumulation_steps,
                "learning_rate": self.learning_rate,
                "num_train_epochs": self.num_train_epochs,
                "lr_scheduler_type": self.lr_scheduler_type,
                "warmup_ratio": self.warmup_ratio,
                "weight_decay": self.weight_decay,
                "max_grad_norm": self.max_grad_norm,
                "optim": self.optim,
                "bf16": self.bf16,
                "seed": self.seed,
                "train_on_prompt": False,
                "resume_from_checkpoint": None,
            }
        )
        if self.max_steps:
            y["max_steps"] = self.max_steps
        if self.save_total_limit:
            y["save_total_limit"] = self.save_total_limit
        caveats = []
        if self.prompt_loss_weight:
            caveats.append(
                f"prompt_loss_weight={self.prompt_loss_weight}: LLaMA-Factory trains "
                "on the response only (train_on_prompt: false) or on everything "
                "(true), not on a weighted prompt"
            )
        if self.template == "plain" or template == "empty":
            if self.prompt_join != "\n":
                caveats.append(
                    f"prompt_join={self.prompt_join!r}: LLaMA-Factory joins "
                    "instruction and input with one newline; put the joined prompt "
                    "in 'instruction' and leave 'input' empty"
                )
            if self.response_prefix:
                caveats.append(
                    f"response_prefix={self.response_prefix!r}: add it to the start of "
                    "every 'output'"
                )
            if self.append_eos:  # LLaMA-Factory's 'empty' template: "{{content}}"
                caveats.append(
                    "append_eos=true: LLaMA-Factory's 'empty' template adds no EOS "
                    "after the response; end every 'output' with the model's EOS "
                    "token"
                )
        if self.instruction_chat and self.template != "plain":
            caveats.append(
                f"instruction_chat: write {self.instruction_chat!r} as the "
                "instruction of the exported records"
            )
        return y, caveats


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


# -- the registry (the papers' recipes live in their benchmark homes) ---------------------------------
def _registry():
    from negbench.scoring.registry import REGISTRY

    return REGISTRY


def _alias(name: str) -> str:
    return _registry().get("recipe_alias", name, name)


def recipes() -> dict[str, Recipe]:
    return _registry().entries("recipe")


def register_recipe(recipe: Recipe) -> Recipe:
    """Add a recipe (e.g. from an experiment); it is validated first."""
    validate(recipe)
    _registry().add("recipe", recipe.name, recipe)
    return recipe


def get_recipe(name: str) -> Recipe:
    name = _alias(name)
    known = recipes()
    if name not in known:
        aliases = _registry().names("recipe_alias")
        close = difflib.get_close_matches(name, list(known) + aliases, n=1)
        raise OptionError(
            f"unknown recipe '{name}'",
            where="--recipe",
            fix=(f"did you mean '{close[0]}'? " if close else "")
            + "known: "
            + ", ".join(known)
            + " (negbench recipes lists them)",
        )
    return known[name]


# -- overrides ---------------------------------------------------------------------------------------
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Recipe)


def setting_names() -> list[str]:
    return [f.name for f in fields(Recipe) if f.name not in META_FIELDS]


def _unknown(key: str, where: str) -> OptionError:
    if key in META_FIELDS:
        return OptionError(
            f"'{key}' names the recipe and cannot be set",
            where=where,
            fix="choose another --recipe, or set its hyper-parameters",
        )
    close = difflib.get_close_matches(key, setting_names(), n=1)
    return OptionError(
        f"unknown recipe setting '{key}'",
        where=where,
        fix=(f"did you mean '{close[0]}'? " if close else "")
        + "settings: "
        + ", ".join(setting_names()),
    )


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_NONE = {"none", "null", "~", ""}


def _unescape(s: str) -> str:
    """``\\n``, ``\\t`` and ``\\\\`` in a command-line string (a shell cannot type a newline)."""
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in "nt\\":
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[s[i + 1]])
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def coerce(key: str, value: Any, where: str, from_text: bool = False) -> Any:
    """``value`` as the type of setting ``key`` (text from ``--set``, or a YAML value)."""
    hints = _hints()
    if key not in hints or key in META_FIELDS:
        raise _unknown(key, where)
    typ = hints[key]
    args = typing.get_args(typ)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), typ) if optional else typ
    origin = typing.get_origin(base)

    def bad(expect: str) -> OptionError:
        return OptionError(
            f"{key}: expected {expect}, got {value!r}",
            where=where,
            fix=f"e.g. --set {key}={_example(key)}",
        )

    if isinstance(value, str) and from_text:
        low = value.strip().lower()
        if optional and low in _NONE:
            return None
        if base is bool:
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise bad("true or false")
        if base is int:
            try:
                return int(value)
            except ValueError:
                raise bad("a whole number") from None
        if base is float:
            try:
                return float(value)
            except ValueError:
                raise bad("a number") from None
        if origin is tuple:
            return tuple(x.strip() for x in value.split(",") if x.strip())
        return _unescape(value)
    if value is None:
        if optional:
            return None
        raise bad(_type_name(base))
    if base is bool:
        if isinstance(value, bool):
            return value
        raise bad("true or false")
    if base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad("a whole number")
    if base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML reads 1e-4 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise bad("a number")
    if origin is tuple:
        if isinstance(value, str):
            return tuple(x.strip() for x in value.split(",") if x.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
            return tuple(value)
        raise bad("a list of names")
    if isinstance(value, str):
        return value
    raise bad("text")


def _type_name(t: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "text"}.get(
        t, str(t)
    )


def _example(key: str) -> str:
    v = getattr(get_recipe("nubench-simple"), key, None)
    if isinstance(v, tuple):
        return ",".join(v) or "a,b"
    if v is None:
        return "none"
    return str(v).replace("\n", "\\n") or "''"


def parse_set(items: Iterable[str]) -> list[tuple[str, str, str]]:
    """``--set key=value`` items → (key, text value, where)."""
    out = []
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(
                f"--set {item!r} is not key=value",
                where="--set",
                fix="write --set learning_rate=2e-4 (one setting per --set)",
            )
        out.append((key.strip(), val, f"--set {key.strip()}"))
    return out


def load_config(path: str | Path) -> dict[str, Any]:
    """A YAML (or JSON) file of settings: ``{learning_rate: 2e-4, lora_rank: 16, …}``; an
    optional ``recipe:`` key names the recipe it starts from."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise OptionError(
            f"config file not found: {p}",
            where="--config",
            fix="give a YAML file of recipe settings (negbench recipes NAME --yaml "
            "writes one to start from)",
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(
            f"cannot read the config file {p} ({exc})",
            where="--config",
            fix="give a readable UTF-8 YAML file",
        ) from None
    import yaml

    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise OptionError(
            f"the config file is not valid YAML ({problem})",
            where=f"{p}{at}",
            fix="fix the YAML syntax (key: value, one per line)",
        ) from None
    if obj is None:
        return {}
    if not isinstance(obj, dict):
        raise OptionError(
            f"the config file must be a mapping of settings, not a {type(obj).__name__}",
            where=str(p),
            fix="write one 'key: value' per line",
        )
    return obj


def apply(
    recipe: Recipe,
    values: Mapping[str, Any] | Iterable[tuple[str, Any, str]],
    where: str = "overrides",
    from_text: bool = False,
) -> Recipe:
    """A copy of ``recipe`` with settings changed (unknown keys and bad values are errors)."""
    items = (
        [(k, v, f"{where}: {k}") for k, v in values.items()]
        if isinstance(values, Mapping)
        else list(values)
    )
    changes: dict[str, Any] = {}
    for key, val, w in items:
        changes[key] = coerce(key, val, w, from_text=from_text)
    out = replace(recipe, **changes)
    validate(out, {k: w for k, _, w in items})
    return out


def resolve_recipe(
    recipe: str | Recipe | None,
    *,
    config: str | Path | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    data: str | None = None,
    max_steps: int | None = None,
    eval_limit: int | None = None,
) -> Recipe:
    """The effective recipe: the named one (or the config file's ``recipe:``), then the YAML
    ``config``, then ``overrides`` (a mapping, or ``key=value`` strings as ``--set`` takes), then
    ``data`` / ``max_steps`` / ``eval_limit``."""
    cfg = load_config(config) if config else {}
    cname = cfg.pop("recipe", None)
    if isinstance(recipe, Recipe):
        r = recipe
    else:
        if recipe is None and cname is None:
            raise OptionError(
                "no recipe given",
                where="--recipe",
                fix="--recipe NAME (negbench recipes lists them)",
            )
        if recipe is not None and cname is not None and _alias(str(cname)) != _alias(recipe):
            raise OptionError(
                f"the config file is for recipe '{cname}', not '{recipe}'",
                where=str(config),
                fix="drop --recipe or the file's 'recipe:' line",
            )
        r = get_recipe(recipe if recipe is not None else str(cname))
    if cfg:
        r = apply(r, [(str(k), v, f"{config}: {k}") for k, v in cfg.items()])
    if overrides:
        if isinstance(overrides, Mapping):
            r = apply(r, [(k, v, f"override {k}") for k, v in overrides.items()])
        else:
            r = apply(r, parse_set(overrides), from_text=True)
    extra = [
        (k, v, w)
        for k, v, w in (
            ("data", data, "--data"),
            ("max_steps", max_steps, "--max-steps"),
            ("eval_limit", eval_limit, "--eval-limit"),
        )
        if v is not None
    ]
    return apply(r, extra) if extra else r


def validate(r: Recipe, where: Mapping[str, str] | None = None) -> Recipe:
    """Check every setting's range; the error names the setting and where it was set."""
    where = where or {}

    def err(key: str, what: str, fix: str) -> OptionError:
        return OptionError(f"{key}: {what}", where=where.get(key, f"recipe {r.name}"), fix=fix)

    def at_least(key: str, lo: float, optional: bool = False) -> None:
        v = getattr(r, key)
        if v is None and optional:
            return
        if v is None or v < lo:
            raise err(key, f"must be at least {lo}, got {v!r}", f"--set {key}=<a value ≥ {lo}>")

    at_least("lora_rank", 1)
    at_least("cutoff_len", 2)
    at_least("per_device_train_batch_size", 1)
    at_least("gradient_accumulation_steps", 1)
    at_least("logging_steps", 1)
    at_least("save_steps", 1)
    at_least("seed", 0)
    at_least("max_samples", 1, optional=True)
    at_least("max_steps", 1, optional=True)
    at_least("save_total_limit", 1, optional=True)
    at_least("eval_limit", 1, optional=True)
    at_least("micro_batch_size", 1, optional=True)
    if r.memory_budget_gb is not None and not r.memory_budget_gb > 0:
        raise err(
            "memory_budget_gb",
            f"must be positive, got {r.memory_budget_gb!r}",
            "--set memory_budget_gb=2 (or none: chosen from the free memory)",
        )
    if r.gradient_checkpointing not in GRADIENT_CHECKPOINTING:
        raise err(
            "gradient_checkpointing",
            f"{r.gradient_checkpointing!r}",
            "one of " + ", ".join(GRADIENT_CHECKPOINTING),
        )
    for key in ("lora_alpha", "learning_rate", "num_train_epochs"):
        if not getattr(r, key) > 0:
            raise err(
                key,
                f"must be positive, got {getattr(r, key)!r}",
                f"--set {key}=<a positive number>",
            )
    for key in ("weight_decay", "max_grad_norm"):
        if getattr(r, key) < 0:
            raise err(key, f"must not be negative, got {getattr(r, key)!r}", f"--set {key}=0")
    for key, hi in (("lora_dropout", 1.0), ("warmup_ratio", 1.0), ("prompt_loss_weight", 1.0)):
        v = getattr(r, key)
        if not 0 <= v < hi:
            raise err(key, f"must lie in [0, {hi}), got {v!r}", f"--set {key}=0.1")
    if r.template not in TEMPLATES:
        raise err("template", f"unknown template {r.template!r}", "one of " + ", ".join(TEMPLATES))
    if r.eval_chat not in EVAL_CHAT:
        raise err("eval_chat", f"{r.eval_chat!r}", "one of " + ", ".join(EVAL_CHAT))
    if r.quantization not in (None, 4, 8):
        raise err("quantization", f"{r.quantization!r} bits", "8, 4 or none")
    if r.lr_scheduler_type not in SCHEDULERS:
        raise err(
            "lr_scheduler_type",
            f"unknown scheduler {r.lr_scheduler_type!r}",
            "one of " + ", ".join(SCHEDULERS),
        )
    if not r.lora_target or any(not t for t in r.lora_target):
        raise err("lora_target", "no module named", "--set lora_target=all, or q_proj,v_proj,…")
    if "all" in r.lora_target and len(r.lora_target) > 1:
        raise err(
            "lora_target",
            "'all' cannot be combined with module names",
            "--set lora_target=all, or list the modules",
        )
    if not r.data:
        raise err(
            "data", "no training data", "--data NAME (negbench export lists them) or FILE.jsonl"
        )
    if not r.data_split:
        raise err("data_split", "empty", "--set data_split=train")
    if not r.eval_task:
        raise err("eval_task", "no evaluation task", "--set eval_task=TASK, or --no-eval")
    try:
        from transformers.training_args import OptimizerNames

        optims = [o.value for o in OptimizerNames]
    except Exception:  # transformers missing: the trainer says so later
        optims = None
    if optims is not None and r.optim not in optims:
        close = difflib.get_close_matches(r.optim, optims, n=1)
        raise err(
            "optim",
            f"unknown optimiser {r.optim!r}",
            (f"did you mean '{close[0]}'? " if close else "") + "e.g. adamw_torch",
        )
    return r


# -- listing -----------------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(v) if v else "-"
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    s = str(v)
    return repr(s) if ("\n" in s or s.strip() != s or not s) else s


def table(rs: Iterable[Recipe] | None = None, width: int = 32) -> str:
    """Plain text: a summary line per recipe, then every setting, one column per recipe
    (recipes of the same paper side by side)."""
    rs = list(rs if rs is not None else recipes().values())
    lines = []
    w = max(len(r.name) for r in rs)
    for r in rs:
        lines.append(f"{r.name:<{w}}  {r.paper}")
    families: dict[str, list[Recipe]] = {}
    for r in rs:
        families.setdefault(r.name.split("-")[0], []).append(r)
    keys = setting_names()
    kw = max(len(k) for k in keys)
    for fam in families.values():
        cols = [[_clip(_fmt(getattr(r, k)), width) for k in keys] for r in fam]
        cw = [max(len(r.name), *(len(c) for c in col)) for r, col in zip(fam, cols)]
        lines += [
            "",
            "  ".join(
                [f"{'setting':<{kw}}"] + [f"{r.name:<{c}}" for r, c in zip(fam, cw)]
            ).rstrip(),
            "  ".join(["-" * kw] + ["-" * c for c in cw]),
        ]
        for i, k in enumerate(keys):
            lines.append(
                "  ".join([f"{k:<{kw}}"] + [f"{col[i]:<{c}}" for col, c in zip(cols, cw)]).rstrip()
            )
    return "\n".join(lines)


def _clip(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def describe(r: Recipe) -> str:
    """One recipe: what it is, then ``key = value`` for every setting."""
    lines = [f"{r.name}: {r.summary}", f"  paper:   {r.paper}", f"  variant: {r.variant}", ""]
    kw = max(len(k) for k in setting_names())
    for k, v in r.settings().items():
        lines.append(f"  {k:<{kw}} = {_fmt(v)}")
    lines.append(f"\n  effective batch = {r.effective_batch}")
    return "\n".join(lines)


def to_yaml(r: Recipe) -> str:
    """A YAML config that reproduces ``r`` (``--config``)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper, s: str):
        quoted = "\n" in s or s.strip() != s or not s
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style='"' if quoted else None)

    Dumper.add_representer(str, text)
    body = {"recipe": r.name, **{k: _plain(v) for k, v in r.settings().items()}}
    return f"# negbench recipe {r.name} ({r.paper}); edit and pass with --config\n" + yaml.dump(
        body, Dumper=Dumper, sort_keys=False, allow_unicode=True
    )


__all__ = [
    "Recipe",
    "recipes",
    "get_recipe",
    "register_recipe",
    "resolve_recipe",
    "apply",
    "coerce",
    "parse_set",
    "load_config",
    "validate",
    "table",
    "describe",
    "to_yaml",
    "setting_names",
    "META_FIELDS",
    "NOT_IDENTITY",
]
