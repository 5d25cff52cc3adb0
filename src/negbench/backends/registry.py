"""From a ``--model`` spec to a backend, in one place (``negbench run``, the JSTS-Neg judge and
training's evaluation all open models this way): ``openai:``, ``openai-compatible:``,
``anthropic:`` and ``vllm:`` specs give request-level API backends; anything else (an embedded
name, a folder, a ``.gguf`` file, a hub id) gives the transformers backend (decoder-only or
encoder-decoder, picked from the model's config)."""
from __future__ import annotations

from typing import Sequence

API_PREFIXES = ("openai:", "openai-compatible:", "anthropic:", "vllm:")


def is_api_spec(spec: str) -> bool:
    return spec.startswith(API_PREFIXES)


def check_quantize_spec(spec: str, quantize: str | None) -> None:
    """8-bit loading is the transformers backend's; API and server models refuse it."""
    if quantize and quantize != "none" and is_api_spec(spec):
        from negbench.errors import OptionError
        raise OptionError("--quantize applies to local transformers models only",
                          where="--quantize", fix="drop --quantize for API and server models")


def open_backend(spec: str, *, dtype: str = "auto", device: str = "auto",
                 adapter: str | None = None, add_bos: str | bool = "auto",
                 max_length: int | None = None, threads: int | None = None,
                 tokenizer: str | None = None, api_key_env: str | None = None,
                 transport=None, vllm_args: Sequence[str] = (), quantize: str | None = None):
    """The backend ``spec`` names.  ``transport`` (an ``api_common.TransportConfig``): concurrency,
    rate limit, retries and timeouts of API backends (default: their defaults)."""
    if not is_api_spec(spec):
        from negbench.backends.hf import HFBackend
        return HFBackend(spec, dtype=dtype, device=device, adapter=adapter, add_bos=add_bos,
                         max_length=max_length, threads=threads,
                         **({"quantize": quantize} if quantize else {}))
    from negbench.backends.api_common import TransportConfig
    from negbench.errors import OptionError
    check_quantize_spec(spec, quantize)
    if adapter:
        raise OptionError("--adapter applies to local transformers models only", where="--adapter",
                          fix="serve the adapter with the server (vLLM: --vllm-arg=--enable-lora …)")
    tc = transport or TransportConfig()
    if spec.startswith("anthropic:"):
        from negbench.backends.anthropic_api import AnthropicBackend
        return AnthropicBackend(spec, api_key_env=api_key_env, transport=tc)
    kw = dict(tokenizer=tokenizer, add_bos=add_bos, max_length=max_length,
              api_key_env=api_key_env, transport=tc)
    if spec.startswith("vllm:"):
        from negbench.backends.vllm_server import ManagedVLLMBackend
        return ManagedVLLMBackend(spec[len("vllm:"):], extra_args=list(vllm_args), dtype=dtype, **kw)
    from negbench.backends.openai_api import OpenAIBackend
    return OpenAIBackend(spec, **kw)
