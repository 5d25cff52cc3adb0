"""A ``--model`` string, parsed once: what it names and how it is written into a run folder name.

``openai:NAME``, ``openai-compatible:URL#NAME``, ``anthropic:NAME`` and ``vllm:MODEL`` name
request-level API or server models; anything else (an embedded name, a folder, a ``.gguf`` file, a
hub id) is a local transformers model whose weights :meth:`ModelSpec.source` finds.  Which backend
class opens a spec (decoder-only or encoder-decoder included) is :mod:`negbench.backends.registry`'s
decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Prefixes of request-level models, each the name of its backend kind.
API_KINDS = ("openai-compatible", "openai", "anthropic", "vllm")


@dataclass(frozen=True)
class ModelSpec:
    """``raw``: the spec as given; ``kind``: ``local`` or one of :data:`API_KINDS`; ``target``:
    the rest (the local spec itself, or what follows ``kind:``)."""

    raw: str
    kind: str
    target: str

    @classmethod
    def parse(cls, spec: "str | ModelSpec") -> "ModelSpec":
        if isinstance(spec, ModelSpec):
            return spec
        spec = str(spec)
        for kind in API_KINDS:
            if spec.startswith(kind + ":"):
                return cls(spec, kind, spec[len(kind) + 1 :])
        return cls(spec, "local", spec)

    @property
    def is_api(self) -> bool:
        """A request-level model (an API or a server): no local weights, no packed rows."""
        return self.kind != "local"

    @property
    def slug(self) -> str:
        """The model's part of a default run folder name (``runs/<slug>__<tasks>``)."""
        if self.is_api:  # openai-compatible:http://h:p/v1#name
            rest = self.target
            name = rest.rpartition("#")[2] if "#" in rest else rest.rstrip("/").rpartition("/")[2]
            return safe_name(f"{self.kind}-{name}")
        return slug(self.raw)

    def source(self):
        """The local weights (:func:`negbench.backends.sources.resolve`; raises ModelError when
        they are not there).  API models have none."""
        if self.is_api:
            raise ValueError(f"{self.raw} is an API model: it has no local weights")
        from negbench.backends.sources import resolve

        return resolve(self.raw)

    def __str__(self) -> str:
        return self.raw


def slug(s: str) -> str:
    """A name safe in a folder name: a path or a ``.jsonl`` / ``.gguf`` file becomes its stem,
    then anything but letters, digits and ``-_.`` becomes ``-``."""
    s = Path(s).stem if ("/" in s or s.endswith(".jsonl") or s.endswith(".gguf")) else s
    return safe_name(s)


def safe_name(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in s)


def is_api_spec(spec: "str | ModelSpec") -> bool:
    return ModelSpec.parse(spec).is_api
