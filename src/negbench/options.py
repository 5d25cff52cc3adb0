"""The options commands share: value types (a bad number is one argparse message naming the
option, ``argument --limit: must be at least 1, got 0``, never a traceback or a silent misuse) and
typed bundles of options (model, API, engine, cluster), each declared once with one way to add it
to a parser and one to build it from the parsed arguments."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Sequence


def whole_number(lo: int | None = None):
    """argparse type: a whole number ≥ ``lo``."""

    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
        if lo is not None and v < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {v}")
        return v

    return parse


def whole_numbers(lo: int | None = None):
    """argparse type: comma-separated whole numbers ≥ ``lo``, each once."""
    one = whole_number(lo)

    def parse(s: str) -> list[int]:
        return _once([one(x.strip()) for x in s.split(",") if x.strip()], "whole numbers")

    return parse


def names(s: str) -> list[str]:
    """Comma-separated names; commas inside brackets belong to a task's options
    (``notadataset[split=test,sample=20000],negation-mini``)."""
    out, cur, depth = [], "", 0
    for ch in s:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out if x.strip()]


def names_once(s: str) -> list[str]:
    """argparse type: :func:`names`, at least one, each once."""
    return _once(names(s), "names")


def _once(values: list, what: str) -> list:
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got nothing")
    dup = [v for i, v in enumerate(values) if v in values[:i]]
    if dup:
        raise argparse.ArgumentTypeError(
            f"{dup[0]!r} is given twice" if isinstance(dup[0], str) else f"{dup[0]} is given twice"
        )
    return values


def fraction(lo: float = 0.0, hi: float = 1.0, *, open_interval: bool = True):
    """argparse type: a number strictly between ``lo`` and ``hi`` (e.g. a significance level)."""

    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
        if not (lo < v < hi if open_interval else lo <= v <= hi):
            raise argparse.ArgumentTypeError(f"must lie between {lo} and {hi}, got {v}")
        return v

    return parse


def did_you_mean(name: str, known, n: int = 3) -> str:
    """`` (did you mean 'x'?)`` for the known names closest to a misspelt ``name`` (difflib's
    ratio ≥ 0.6, case ignored), or ``""`` when none is close."""
    import difflib

    known = [str(k) for k in known]
    lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lower), n=n, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(lower[c]) for c in close) + "?)"


def limit_value(s: str) -> "int | float":
    """argparse type of ``--limit``: a whole number of records ≥ 1, or a share of each task's
    records strictly between 0 and 1 (lm-eval's ``--limit 0.1``), taken in whole units."""
    try:
        n = int(s)
    except ValueError:
        pass
    else:
        if n < 1:
            raise argparse.ArgumentTypeError(
                f"must be at least 1, got {n} (or a share: a fraction between 0 and 1)"
            )
        return n
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or a fraction between 0 and 1, got {s!r}"
        ) from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number ≥ 1 or a fraction between 0 and 1, got {s}"
        )
    return v


def batch_size_value(s: str) -> "int | str":
    """argparse type of ``--batch-size``: ``auto`` or a whole number of rows ≥ 1."""
    if s.strip().lower() == "auto":
        return "auto"
    try:
        return whole_number(1)(s)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or auto)") from None


# -- typed option bundles ------------------------------------------------------------------------
# The options several commands share, each declared once: ``Bundle.add_to(parser)`` adds them
# (an argument group, or the ``only`` ones), ``Bundle.from_args(args)`` builds the typed bundle
# from what argparse parsed, and ``Session`` / ``evaluate`` take the bundles (or their fields as
# keyword arguments, :func:`split_options`).  A command that lacks a flag gets the field's default.


@dataclass(frozen=True)
class Flag:
    """One option of a bundle: its flags on the command line and argparse's keywords."""

    flags: tuple[str, ...]
    kwargs: dict[str, Any]


class _Bundle:
    """What every bundle shares: adding its flags to a parser, reading them back."""

    TITLE: ClassVar[str] = ""
    FLAGS: ClassVar[dict[str, Flag]] = {}

    @classmethod
    def add_to(
        cls, parser: Any, only: Sequence[str] | None = None, title: str | None = None
    ) -> Any:
        """Add the bundle's options (all, or ``only`` these fields) as one argument group."""
        group = parser.add_argument_group(title or cls.TITLE)
        for name, flag in cls.FLAGS.items():
            if only is None or name in only:
                group.add_argument(
                    *flag.flags,
                    dest=flag.kwargs.get("dest", name),
                    **{k: v for k, v in flag.kwargs.items() if k != "dest"},
                )
        return group

    @classmethod
    def _parsed(cls, args: Any) -> dict[str, Any]:
        out = {}
        for name, flag in cls.FLAGS.items():
            dest = flag.kwargs.get("dest", name)
            if hasattr(args, dest):
                out[name] = getattr(args, dest)
        return out


def _choice(*values: str) -> dict[str, Any]:
    return {"choices": list(values)}


@dataclass(frozen=True)
class ModelOptions(_Bundle):
    """How the model is loaded: dtype, device, 8-bit weights, a LoRA adapter, context length,
    CPU threads, BOS."""

    dtype: str = "auto"
    device: str = "auto"
    quantize: str | None = None
    adapter: str | None = None
    max_length: int | None = None
    threads: int | None = None
    add_bos: str | bool = "auto"

    TITLE: ClassVar[str] = "model loading"
    FLAGS: ClassVar[dict[str, Flag]] = {
        "dtype": Flag(
            ("--dtype",),
            {
                "default": "auto",
                **_choice("auto", "float32", "bfloat16", "float16"),
                "help": "weights dtype (default: auto — bfloat16 on GPU, float32 on CPU)",
            },
        ),
        "device": Flag(
            ("--device",),
            {"default": "auto", "help": "cpu, cuda, cuda:1 … (default: auto — cuda when present)"},
        ),
        "quantize": Flag(
            ("--quantize",),
            {
                "default": "none",
                **_choice("none", "8bit"),
                "help": "load the weights in 8 bits (bitsandbytes LLM.int8(); needs a CUDA GPU), "
                "as This is not a Dataset Table 9 (default: none)",
            },
        ),
        "adapter": Flag(
            ("--adapter",),
            {"default": None, "help": "LoRA adapter folder (PEFT) to apply (default: none)"},
        ),
        "max_length": Flag(
            ("--max-length",),
            {
                "type": whole_number(2),
                "default": None,
                "help": "truncate contexts from the left to this many tokens (default: the "
                "model's)",
            },
        ),
        "threads": Flag(
            ("--threads",),
            {
                "type": whole_number(1),
                "default": None,
                "help": "CPU threads for torch (default: the cores actually free, looked at again "
                "during a run)",
            },
        ),
        "add_bos": Flag(
            ("--add-bos",),
            {
                "default": "auto",
                **_choice("auto", "yes", "no"),
                "help": "prepend BOS to prompts: auto = the tokenizer's default, as lm-eval "
                ">= 0.4.9.2 (use 'no' to match older lm-eval with non-Gemma models)",
            },
        ),
    }

    @classmethod
    def from_args(cls, args: Any) -> "ModelOptions":
        kw = cls._parsed(args)
        if kw.get("quantize") == "none":
            kw["quantize"] = None
        return cls(**kw)


@dataclass(frozen=True)
class ApiOptions(_Bundle):
    """How API and server models (openai:, openai-compatible:, vllm:, anthropic:) are called."""

    tokenizer: str | None = None
    api_key_env: str | None = None
    concurrency: int = 4
    rate_limit: float | None = None
    max_retries: int = 6
    timeout: float = 120.0
    api_seed: int = 0
    vllm_args: tuple[str, ...] = ()

    TITLE: ClassVar[str] = (
        "API and server backends (openai:, openai-compatible:, vllm:, anthropic:)"
    )
    FLAGS: ClassVar[dict[str, Flag]] = {
        "concurrency": Flag(
            ("--concurrency",),
            {
                "type": whole_number(1),
                "default": 4,
                "help": "requests in flight at once (default: %(default)s)",
            },
        ),
        "rate_limit": Flag(
            ("--rate-limit",),
            {
                "type": float,
                "default": None,
                "help": "at most this many requests per second, client side (default: none)",
            },
        ),
        "max_retries": Flag(
            ("--max-retries",),
            {
                "type": whole_number(0),
                "default": 6,
                "help": "retries per request on 429/5xx/timeouts/dropped connections/malformed "
                "answers, with exponential backoff and jitter (default: %(default)s)",
            },
        ),
        "timeout": Flag(
            ("--timeout",),
            {
                "type": float,
                "default": 120.0,
                "help": "seconds per HTTP request (default: %(default)s)",
            },
        ),
        "tokenizer": Flag(
            ("--tokenizer",),
            {
                "default": None,
                "help": "folder of the served model's tokenizer (openai-compatible: default: the "
                "folder the server reports as the model's root, when it exists here)",
            },
        ),
        "api_key_env": Flag(
            ("--api-key-env",),
            {
                "default": None,
                "help": "environment variable holding the API key (default: OPENAI_API_KEY, "
                "OPENAI_COMPATIBLE_API_KEY or ANTHROPIC_API_KEY); keys are never "
                "accepted on the command line nor written anywhere",
            },
        ),
        "api_seed": Flag(
            ("--api-seed",),
            {
                "type": whole_number(0),
                "default": 0,
                "help": "sampling seed sent with generation requests (default: %(default)s)",
            },
        ),
        "vllm_args": Flag(
            ("--vllm-arg",),
            {
                "action": "append",
                "default": [],
                "dest": "vllm_arg",
                "help": "extra argument for the managed vLLM server of --model vllm:… "
                "(repeatable, e.g. --vllm-arg=--max-model-len=4096)",
            },
        ),
    }

    @classmethod
    def from_args(cls, args: Any) -> "ApiOptions":
        kw = cls._parsed(args)
        if "vllm_args" in kw:
            kw["vllm_args"] = tuple(kw["vllm_args"] or ())
        return cls(**kw)


@dataclass(frozen=True)
class EngineOptions(_Bundle):
    """How the engine answers requests: the response cache, batches, rows, prefix sharing."""

    #: True: negbench's cache file; a path: that file; None: no cache
    cache: str | bool | None = True
    #: rows per forward pass, or "auto": 32 on a CPU, on a GPU the largest call that fits
    #: (probed once per model and device, evaluation/autobatch.py)
    batch_size: int | str = "auto"
    max_row_tokens: int | None = None
    max_batch_tokens: int | None = None
    share_prefix: bool = True
    group_tokens: int | None = None

    TITLE: ClassVar[str] = "engine"
    FLAGS: ClassVar[dict[str, Flag]] = {
        "cache": Flag(
            ("--cache",),
            {
                "default": None,
                "help": "response cache file (default: $NEGBENCH_CACHE/responses.sqlite, "
                "~/.cache/negbench)",
            },
        ),
        "no_cache": Flag(
            ("--no-cache",),
            {"action": "store_true", "help": "do not read or write the response cache"},
        ),
        "batch_size": Flag(
            ("--batch-size",),
            {
                "type": batch_size_value,
                "default": "auto",
                "help": "rows per forward pass, or auto: 32 on a CPU; on a GPU the largest call "
                "that fits, found once per model and device and remembered (default: auto)",
            },
        ),
        "max_row_tokens": Flag(
            ("--max-row-tokens",),
            {
                "type": whole_number(16),
                "default": None,
                "help": "tokens packed into one row (default: auto — the cheapest of 256, 512, "
                "1024 and 2048 by the engine's cost model of tokens, attended keys and calls)",
            },
        ),
        "max_batch_tokens": Flag(
            ("--max-batch-tokens",),
            {
                "type": whole_number(16),
                "default": None,
                "help": "upper bound on rows × (prefix + row length) per forward pass (default: "
                "the backend's — transformers: 2048 on CPU, where larger batches only "
                "add memory, 32768 on GPU)",
            },
        ),
        "share_prefix": Flag(
            ("--no-prefix-sharing",),
            {
                "action": "store_true",
                "dest": "no_prefix_sharing",
                "help": "score every request in its own row (for comparison; slower)",
            },
        ),
        "group_tokens": Flag(
            ("--group-tokens",),
            {
                "type": whole_number(16),
                "default": None,
                "help": "tokens per prefix-sharing group, the unit of work handed to a Ray "
                "worker (default: the engine's chunk size, 200000); also valid without --ray, "
                "where the same value gives the same groups and hence identical samples",
            },
        ),
    }

    @classmethod
    def from_args(cls, args: Any) -> "EngineOptions":
        kw = cls._parsed(args)
        no_cache = kw.pop("no_cache", False)
        path = kw.pop("cache", None)
        kw["cache"] = None if no_cache else (path or True)
        if "share_prefix" in kw:
            kw["share_prefix"] = not kw["share_prefix"]
        return cls(**kw)


@dataclass(frozen=True)
class ClusterOptions(_Bundle):
    """Spreading the work over a Ray cluster (docs/ray.md)."""

    ray: str | None = None
    ray_workers: int | None = None
    ray_cpus_per_worker: float | None = None
    ray_gpus_per_worker: float | None = None

    TITLE: ClassVar[str] = "cluster (Ray; pip install 'negbench[ray]'; docs/ray.md)"
    FLAGS: ClassVar[dict[str, Flag]] = {
        "ray": Flag(
            ("--ray",),
            {
                "default": None,
                "metavar": "auto|HOST:PORT|local[:N]",
                "help": "spread the work over a Ray cluster: local[:N] starts one here with N "
                "workers (default 2), auto joins the one `ray start --head` started, "
                "HOST:PORT joins that head; results are identical to a one-process run "
                "with the same --group-tokens and --threads",
            },
        ),
        "ray_workers": Flag(
            ("--ray-workers",),
            {
                "type": whole_number(1),
                "default": None,
                "help": "workers (model replicas; default: local: 2, a cluster: as many as its "
                "CPUs/GPUs allow)",
            },
        ),
        "ray_cpus_per_worker": Flag(
            ("--ray-cpus-per-worker",),
            {"type": float, "default": None, "help": "CPUs reserved per worker (default: 1)"},
        ),
        "ray_gpus_per_worker": Flag(
            ("--ray-gpus-per-worker",),
            {
                "type": float,
                "default": None,
                "help": "GPUs per worker, e.g. 1 or 0.5 (default: 0)",
            },
        ),
    }

    @classmethod
    def from_args(cls, args: Any) -> "ClusterOptions":
        return cls(**cls._parsed(args))


BUNDLES: tuple[type[_Bundle], ...] = (ModelOptions, ApiOptions, EngineOptions, ClusterOptions)


@dataclass(frozen=True)
class SessionOptions:
    """Everything that makes a session besides the model: the four bundles."""

    model: ModelOptions = ModelOptions()
    api: ApiOptions = ApiOptions()
    engine: EngineOptions = EngineOptions()
    cluster: ClusterOptions = ClusterOptions()

    @classmethod
    def from_args(cls, args: Any) -> "SessionOptions":
        """The bundles from a parsed command line (the flags it lacks keep their defaults)."""
        return cls(
            ModelOptions.from_args(args),
            ApiOptions.from_args(args),
            EngineOptions.from_args(args),
            ClusterOptions.from_args(args),
        )

    @classmethod
    def of(cls, **options: Any) -> "SessionOptions":
        """The bundles from keyword arguments named as the bundles' fields (the Python API's
        ``evaluate(model, dtype=…, batch_size=…)``); an unknown name is a TypeError naming it."""
        parts: dict[type, dict[str, Any]] = {b: {} for b in BUNDLES}
        fields_of = {b: {f.name for f in fields(b)} for b in BUNDLES}  # type: ignore[arg-type]
        for k, v in options.items():
            owner = next((b for b in BUNDLES if k in fields_of[b]), None)
            if owner is None:
                known = sorted(set().union(*fields_of.values()))
                raise TypeError(
                    f"unknown session option {k!r}{did_you_mean(k, known)} (known: "
                    + ", ".join(known)
                    + ")"
                )
            parts[owner][k] = v
        if "vllm_args" in parts[ApiOptions]:
            parts[ApiOptions]["vllm_args"] = tuple(parts[ApiOptions]["vllm_args"])
        return cls(
            ModelOptions(**parts[ModelOptions]),
            ApiOptions(**parts[ApiOptions]),
            EngineOptions(**parts[EngineOptions]),
            ClusterOptions(**parts[ClusterOptions]),
        )
