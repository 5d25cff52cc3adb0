"""negbench's engine as an lm-evaluation-harness 0.4 model (``--model negbench``).

Any lm-eval task (ARC, HellaSwag, GSM8K, wikitext, a local YAML…) then runs on negbench's
engine: requests deduplicated, answers cached on disk as they are computed (a killed run
resumes; a second run is served from the cache), prefix sharing and packed rows, LoRA adapters
(``adapter=``), every model spec ``negbench run --model`` takes.  lm-eval keeps its own task
logic (prompts, few-shot draws, filters, metrics); only the model calls go through negbench:

* ``loglikelihood``          → :class:`negbench.core.requests.LoglikelihoodRequest` (tokenised as
  lm-eval's ``HFLM._encode_pair``; docs/lm_eval_parity.md);
* ``loglikelihood_rolling``  → :class:`negbench.core.requests.RollingLoglikelihoodRequest` (HFLM's
  windows: prefix token, the model's max length, ``context_len=1``);
* ``generate_until``         → :class:`negbench.core.requests.GenerationRequest` (greedy only).

Importing this module registers the model; ``negbench lm-eval -- ARGS`` imports it and hands
ARGS to lm-eval's own command line.  lm-eval 0.4.13 discovers no models through Python entry
points, so a plain ``lm_eval --model negbench`` cannot find it (docs/lm_eval_model.md).
"""

from __future__ import annotations

import sys
from typing import Any

import lm_eval.models  # noqa: F401  (the built-in models first: lm-eval loads them only into an

# empty registry, and registering ours would leave it non-empty)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from negbench.errors import OptionError
from negbench.core.requests import (
    GenerationRequest,
    LoglikelihoodRequest,
    RollingLoglikelihoodRequest,
)

#: generation settings that leave greedy decoding greedy (lm-eval task YAMLs sometimes set them)
_NEUTRAL_GEN = {
    "top_p": (1, 1.0, None),
    "top_k": (0, None),
    "num_beams": (1, None),
    "repetition_penalty": (1, 1.0, None),
    "min_p": (0, 0.0, None),
}


@register_model("negbench")
class NegbenchLM(LM):
    """lm-eval model whose requests go through :class:`negbench.core.engine.Engine`.

    Model arguments (``--model_args k=v,…``): ``model`` (or ``pretrained``; an embedded name, a
    folder, a .gguf file, a hub id, or an API spec as ``negbench run --model``), ``dtype``,
    ``device``, ``adapter`` (LoRA folder), ``cache`` (SQLite file; ``none``: no cache; default:
    negbench's response cache), ``max_batch_tokens``, ``max_row_tokens``, ``batch_size`` (rows
    per forward call), ``share_prefix``, ``max_length``, ``threads``, ``add_bos``
    (auto/true/false), ``max_gen_toks`` (default 256, as HFLM), ``progress``, and the API
    options of ``negbench run`` (``concurrency``, ``rate_limit``, ``max_retries``, ``timeout``,
    ``tokenizer``, ``api_key_env``, ``api_seed``)."""

    def __init__(
        self,
        model: str | None = None,
        pretrained: str | None = None,
        *,
        dtype: str = "auto",
        device: str | None = None,
        adapter: str | None = None,
        cache: Any = "default",
        max_batch_tokens: int | None = None,
        max_row_tokens: int | None = None,
        batch_size: Any = None,
        max_batch_size: Any = None,
        share_prefix: bool = True,
        max_length: int | None = None,
        threads: int | None = None,
        add_bos: Any = "auto",
        max_gen_toks: int = 256,
        progress: bool = True,
        concurrency: int = 4,
        rate_limit: float | None = None,
        max_retries: int = 6,
        timeout: float = 120.0,
        tokenizer: str | None = None,
        api_key_env: str | None = None,
        api_seed: int = 0,
        **unknown,
    ):
        super().__init__()
        if unknown:
            raise OptionError(
                f"unknown negbench model argument(s): {', '.join(sorted(unknown))}",
                where="--model_args",
                fix="use model, dtype, device, adapter, cache, max_batch_tokens, "
                "max_row_tokens, batch_size, share_prefix, max_length, threads, "
                "add_bos, max_gen_toks, progress (docs/lm_eval_model.md)",
            )
        spec = _spec(model, pretrained)
        from negbench.evaluation.session import Session

        batch = _whole("batch_size", batch_size, None, allow_auto=True)
        self.max_gen_toks = _whole("max_gen_toks", max_gen_toks, 1)
        # lm-eval's argument parser turns cache=none into None and cache=false into False
        use_cache = cache not in (None, False, "none", "None", "no", "false", "")
        cache_path = cache if isinstance(cache, str) and cache != "default" and use_cache else None
        # the same session as `negbench run` (checks, backend, cache, engine)
        self.session = Session(
            spec,
            dtype=str(dtype),
            device=str(device or "auto"),
            adapter=adapter,
            max_length=_whole("max_length", max_length, 2),
            threads=_whole("threads", threads, 1),
            add_bos=_add_bos(add_bos),
            tokenizer=tokenizer,
            api_key_env=api_key_env,
            concurrency=concurrency,
            rate_limit=rate_limit,
            max_retries=max_retries,
            timeout=timeout,
            api_seed=api_seed,
            cache=(cache_path or True) if use_cache else None,
            batch_size=batch or 32,
            max_row_tokens=_whole("max_row_tokens", max_row_tokens, 16),
            max_batch_tokens=_whole("max_batch_tokens", max_batch_tokens, 16),
            share_prefix=bool(share_prefix),
            progress=bool(progress),
            log=lambda s: None,
        )  # it prints its own "loading" line below
        self.cache = self.session.cache
        print(
            f"negbench: loading {spec}" + (f" + adapter {adapter}" if adapter else "") + " …",
            file=sys.stderr,
        )
        self.backend = self.session.backend
        self.engine = self.session.engine
        self.spec, self.adapter = spec, adapter
        self._device = getattr(self.backend, "device", None)

    # -- lm-eval's three request types -------------------------------------------------------------
    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        reqs = [LoglikelihoodRequest(*r.args) for r in requests]
        out = [(a.logprob, a.is_greedy) for a in self._run(reqs, "loglikelihood")]
        for r, a in zip(requests, out):
            self.cache_hook.add_partial("loglikelihood", r.args, a)
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        reqs = [RollingLoglikelihoodRequest(r.args[0]) for r in requests]
        out = [a.logprob for a in self._run(reqs, "loglikelihood_rolling")]
        for r, a in zip(requests, out):
            self.cache_hook.add_partial("loglikelihood_rolling", r.args, a)
        return out

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        reqs = [self._generation(ctx, kw) for ctx, kw in (r.args for r in requests)]
        out = [a.text for a in self._run(reqs, "generate_until")]
        for r, a in zip(requests, out):
            self.cache_hook.add_partial("generate_until", r.args, a)
        return out

    def _run(self, reqs, what: str):
        answers = self.engine.run(reqs, desc=f"negbench {what}")
        st = answers.stats
        print(
            f"negbench {what}: {st.requests} requests, {st.unique} unique, {st.cached} from "
            f"cache, {st.computed} computed in {st.model_calls} model calls "
            f"({st.wall_s:.1f}s)",
            file=sys.stderr,
        )
        return answers

    def _generation(self, context: str, gen_kwargs: dict) -> GenerationRequest:
        """lm-eval's generation settings as a greedy GenerationRequest: stop strings as HFLM
        (the task's ``until`` plus the EOS text), ``max_gen_toks`` and its aliases."""
        from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs

        kw = dict(normalize_gen_kwargs(dict(gen_kwargs or {}), self.max_gen_toks))
        if kw.pop("do_sample", False) or float(kw.pop("temperature", 0.0) or 0.0) > 0:
            raise OptionError(
                "negbench generates greedily; this task asks for sampling "
                f"(generation_kwargs {gen_kwargs})",
                where="generation_kwargs / --gen_kwargs",
                fix="use do_sample=false and temperature=0, or lm-eval's own hf "
                "model for sampled generation",
            )
        until = handle_stop_sequences(kw.pop("until", None), eos=self._eos_text())
        max_tokens = int(kw.pop("max_gen_toks"))
        kw.pop("max_length", None)
        bad = {k: v for k, v in kw.items() if v not in _NEUTRAL_GEN.get(k, ())}
        if bad:
            raise OptionError(
                f"generation settings negbench does not apply: {bad}",
                where="generation_kwargs / --gen_kwargs",
                fix="negbench decodes greedily with stop strings and max_gen_toks "
                "only; drop them or use lm-eval's hf model",
            )
        return GenerationRequest(context, stop=tuple(until), max_tokens=max_tokens)

    def _eos_text(self) -> str | None:
        tok = getattr(self.backend, "tokenizer", None)
        if tok is None or tok.eos_token_id is None:
            return None
        return tok.decode([tok.eos_token_id], skip_special_tokens=False)

    # -- chat templates and bookkeeping lm-eval asks for ------------------------------------------
    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        return self.backend.apply_chat_template(chat_history, add_generation_prompt)

    @property
    def tokenizer_name(self) -> str:
        return f"negbench-{self.backend.fingerprint}"

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        if not chat_template:
            return None
        tok = getattr(self.backend, "tokenizer", None)
        return getattr(tok, "chat_template", None) or ""

    @property
    def max_length(self) -> int:
        return self.backend.max_length

    def get_model_info(self) -> dict:
        st = self.engine.stats
        return {
            "negbench_model": self.spec,
            "negbench_adapter": self.adapter,
            "negbench_fingerprint": self.backend.fingerprint,
            "negbench_cache": str(self.cache.path) if self.cache else None,
            "negbench_engine": {
                "requests": st.requests,
                "unique": st.unique,
                "cached": st.cached,
                "computed": st.computed,
                "model_calls": st.model_calls,
                "forwarded_tokens": st.forwarded_tokens,
            },
        }

    def close(self) -> None:
        self.session.close()
        if self.cache is not None:
            self.cache.close()


def _spec(model, pretrained) -> str:
    if model and pretrained and model != pretrained:
        raise OptionError(
            f"model={model} and pretrained={pretrained} name two models",
            where="--model_args",
            fix="give one of them",
        )
    from negbench.evaluation.session import DEFAULT_MODEL

    return str(model or pretrained or DEFAULT_MODEL)


def _whole(name: str, value, minimum: int | None, allow_auto: bool = False) -> int | None:
    if value is None or (allow_auto and str(value).startswith("auto")):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = None
    if n is None or n != value and str(n) != str(value) or (minimum is not None and n < minimum):
        raise OptionError(
            f"{name}={value} is not a whole number"
            + (f" ≥ {minimum}" if minimum is not None else ""),
            where="--model_args",
            fix=f"e.g. {name}={max(minimum or 1, 1)}",
        )
    return n


def _add_bos(value) -> str | bool:
    if value in ("auto", None):
        return "auto"
    if value in (True, "yes", "true", "True", 1):
        return True
    if value in (False, "no", "false", "False", 0):
        return False
    raise OptionError(f"add_bos={value}", where="--model_args", fix="add_bos=auto, true or false")


# -- negbench train --general-tasks ---------------------------------------------------------------
def task_manager(tasks: list[str], include_path: str | None = None):
    """lm-eval's TaskManager that knows ``tasks``: the local YAMLs of ``include_path`` alone when
    they hold every task (indexing lm-eval's thousands of built-in YAMLs takes 10-40 s), else
    those plus the built-in ones.  A clear error for a missing folder or an unknown task."""
    from pathlib import Path
    from lm_eval.tasks import TaskManager

    if include_path:
        if not Path(include_path).is_dir():
            raise OptionError(
                f"no folder {include_path}",
                where="--general-include-path",
                fix="give a folder of lm-eval task YAML files",
            )
        local = TaskManager(include_path=include_path, include_defaults=False)
        if all(t in local.all_tasks for t in tasks):
            return local
    tm = TaskManager(include_path=include_path)
    unknown = [t for t in tasks if t not in tm.all_tasks]
    if unknown:
        raise OptionError(
            f"unknown lm-eval task(s): {', '.join(unknown)}",
            where="--general-tasks",
            fix="see 'negbench lm-eval -- ls tasks'; local YAMLs need --general-include-path DIR",
        )
    return tm


def general_eval(
    model: str,
    adapter: str | None,
    tasks: list[str],
    out: str,
    *,
    include_path: str | None = None,
    device: str = "auto",
    threads: int | None = None,
    cache: str | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> dict:
    """Run lm-eval ``tasks`` (lm-eval's default settings) through negbench with ``adapter``
    and write lm-eval's results to ``out`` (a .json file); returns them.  Used by
    ``negbench train --general-tasks`` for the papers' general-capability tables."""
    import lm_eval
    from lm_eval.utils import handle_non_serializable, make_table

    lm = NegbenchLM(
        model,
        adapter=adapter,
        device=device,
        threads=threads,
        cache=cache or "default",
        progress=progress,
    )
    try:
        res = lm_eval.simple_evaluate(
            model=lm, tasks=tasks, limit=limit, task_manager=task_manager(tasks, include_path)
        )
    finally:
        lm.close()
    from negbench.files import write_json

    write_json(out, res, default=handle_non_serializable)
    print(make_table(res))
    return res
