"""From a model spec to a backend, in one place: one entry per backend kind.

Kinds: ``transformers-causal`` and ``transformers-seq2seq`` (a local model: an embedded name, a
folder, a ``.gguf`` file or a hub id — which of the two is read from the model's config, here and
nowhere else), ``openai``, ``openai-compatible``, ``anthropic`` and ``vllm`` (request-level API
and server backends).  Each kind's module is imported only when a spec of that kind is opened,
and a missing optional package is one clear error naming the extra that installs it.
``negbench run``, :class:`negbench.evaluation.session.Session`, the Ray workers, the builders'
LLM stages and training's evaluation all open models here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Sequence

from negbench.backends.spec import ModelSpec, is_api_spec


@dataclass(frozen=True)
class BackendKind:
    """One way to run a model: the class that does it and the optional package it needs."""

    name: str
    module: str
    cls: str
    needs: str | None = None  # import name of the optional package (errors.EXTRAS)
    summary: str = ""

    def load(self) -> Any:
        if self.needs:
            from negbench.errors import require

            require(self.needs)
        return getattr(importlib.import_module(self.module), self.cls)


KINDS: dict[str, BackendKind] = {
    k.name: k
    for k in (
        BackendKind(
            "transformers-causal",
            "negbench.backends.hf",
            "HFBackend",
            None,
            "a decoder-only transformers model, scored in packed rows",
        ),
        BackendKind(
            "transformers-seq2seq",
            "negbench.backends.seq2seq",
            "Seq2SeqBackend",
            None,
            "an encoder-decoder transformers model (T5, Flan-T5, BART)",
        ),
        BackendKind(
            "openai",
            "negbench.backends.openai_api",
            "OpenAIBackend",
            "openai",
            "the OpenAI API (openai:MODEL)",
        ),
        BackendKind(
            "openai-compatible",
            "negbench.backends.openai_api",
            "OpenAIBackend",
            "openai",
            "an OpenAI-compatible server (openai-compatible:URL#MODEL)",
        ),
        BackendKind(
            "anthropic",
            "negbench.backends.anthropic_api",
            "AnthropicBackend",
            "anthropic",
            "the Anthropic API (anthropic:MODEL)",
        ),
        BackendKind(
            "vllm",
            "negbench.backends.vllm_server",
            "ManagedVLLMBackend",
            "openai",
            "a vLLM server negbench starts and stops (vllm:MODEL)",
        ),
    )
}


def is_encoder_decoder(spec: "str | ModelSpec", revision: str | None = None) -> bool:
    """Whether a local spec names an encoder-decoder model (``config.is_encoder_decoder``), read
    from its config only (no weights).  GGUF files and unreadable configs count as causal: the
    causal loader then reports any problem as before."""
    from negbench.errors import ModelError

    spec = ModelSpec.parse(spec)
    if spec.is_api:
        return False
    try:
        src = spec.source()
    except ModelError:
        return False
    if src.gguf_file:
        return False
    try:
        from negbench.backends.tokenizing import quiet_transformers

        quiet_transformers()
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(src.folder or src.hub_id, revision=revision)
    except Exception:  # offline hub id, damaged config: the causal path explains
        return False
    return bool(getattr(cfg, "is_encoder_decoder", False))


def kind_of(spec: "str | ModelSpec", revision: str | None = None) -> BackendKind:
    """The backend kind that opens ``spec``."""
    spec = ModelSpec.parse(spec)
    if spec.is_api:
        return KINDS[spec.kind]
    return KINDS[
        "transformers-seq2seq" if is_encoder_decoder(spec, revision) else "transformers-causal"
    ]


def check_quantize_spec(spec: "str | ModelSpec", quantize: str | None) -> None:
    """8-bit loading is the transformers backend's; API and server models refuse it."""
    if quantize and quantize != "none" and ModelSpec.parse(spec).is_api:
        from negbench.errors import OptionError

        raise OptionError(
            "--quantize applies to local transformers models only",
            where="--quantize",
            fix="drop --quantize for API and server models",
        )


def open_backend(
    spec: "str | ModelSpec",
    *,
    dtype: str = "auto",
    device: str = "auto",
    adapter: str | None = None,
    add_bos: str | bool = "auto",
    max_length: int | None = None,
    threads: int | None = None,
    tokenizer: str | None = None,
    api_key_env: str | None = None,
    transport=None,
    vllm_args: Sequence[str] = (),
    quantize: str | None = None,
    kind: BackendKind | None = None,
):
    """The backend ``spec`` names.  ``transport`` (an ``api_common.TransportConfig``): concurrency,
    rate limit, retries and timeouts of API backends (default: their defaults).  ``kind``: the
    caller's :func:`kind_of` (so the model's config is read once)."""
    spec = ModelSpec.parse(spec)
    kind = kind or kind_of(spec)
    if kind.name == "transformers-seq2seq" and quantize:
        from negbench.errors import ModelError

        raise ModelError(
            f"--quantize {quantize}: only decoder-only models load in 8 bits here",
            where="--quantize",
            fix="drop --quantize for encoder-decoder models (T5, BART)",
        )
    if not spec.is_api:
        return kind.load()(
            spec.raw,
            dtype=dtype,
            device=device,
            adapter=adapter,
            add_bos=add_bos,
            max_length=max_length,
            threads=threads,
            **({"quantize": quantize} if quantize else {}),
        )
    from negbench.backends.api_common import TransportConfig
    from negbench.errors import OptionError

    check_quantize_spec(spec, quantize)
    if adapter:
        raise OptionError(
            "--adapter applies to local transformers models only",
            where="--adapter",
            fix="serve the adapter with the server (vLLM: --vllm-arg=--enable-lora …)",
        )
    tc = transport or TransportConfig()
    cls = kind.load()
    if kind.name == "anthropic":
        return cls(spec.raw, api_key_env=api_key_env, transport=tc)
    kw = dict(
        tokenizer=tokenizer,
        add_bos=add_bos,
        max_length=max_length,
        api_key_env=api_key_env,
        transport=tc,
    )
    if kind.name == "vllm":
        return cls(spec.target, extra_args=list(vllm_args), dtype=dtype, **kw)
    return cls(spec.raw, **kw)


__all__ = [
    "BackendKind",
    "KINDS",
    "ModelSpec",
    "check_quantize_spec",
    "is_api_spec",
    "is_encoder_decoder",
    "kind_of",
    "open_backend",
]
