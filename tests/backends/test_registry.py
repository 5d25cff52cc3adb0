"""The backend registry: one entry per kind, a spec parsed once, optional SDKs imported only when
their kind is opened and missing ones named by their extra."""

from __future__ import annotations

import sys

import pytest

from negbench.backends.registry import KINDS, kind_of, open_backend
from negbench.backends.spec import ModelSpec
from negbench.errors import NegbenchError, OptionError


def test_one_entry_per_kind():
    assert set(KINDS) == {
        "transformers-causal",
        "transformers-seq2seq",
        "openai",
        "openai-compatible",
        "anthropic",
        "vllm",
    }
    for spec, kind in (
        ("openai:gpt-4o-mini", "openai"),
        ("openai-compatible:http://h:1/v1#m", "openai-compatible"),
        ("anthropic:claude-x", "anthropic"),
        ("vllm:smollm2-135m-instruct", "vllm"),
    ):
        assert kind_of(spec).name == kind and ModelSpec.parse(spec).is_api


def test_local_kind_is_read_from_the_config(tiny_llama, tiny_t5, tmp_path):
    assert kind_of(tiny_llama).name == "transformers-causal"
    assert kind_of(tiny_t5).name == "transformers-seq2seq"
    assert kind_of(str(tmp_path / "missing")).name == "transformers-causal"  # the loader explains


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # import anthropic fails
    with pytest.raises(NegbenchError) as e:
        open_backend("anthropic:claude-x")
    assert "negbench[api]" in e.value.render()


def test_options_that_do_not_apply(tiny_t5):
    with pytest.raises(OptionError, match="--adapter"):
        open_backend("openai:gpt-4o-mini", adapter="org/lora")
    with pytest.raises(OptionError, match="--quantize"):
        open_backend("openai:gpt-4o-mini", quantize="8bit")
    with pytest.raises(NegbenchError, match="decoder-only"):
        open_backend(tiny_t5, quantize="8bit")
