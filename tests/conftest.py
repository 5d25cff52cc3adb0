"""Shared fixtures: tiny random models built in-test (no download), and a scratch cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS = [
    "The cat is not on the mat.",
    "A dog is an animal.",
    "Negate the sentence.",
    "Is the following statement True or False?",
    "The river does not flow north.",
    "Sentence: The museum opened last year.",
    "Negation: The museum did not open last year.",
    "A. B. C. D. Answer: True False yes no",
    "She never arrived, but he did.",
    "0123456789 ,.;:!?'\"()[]{}<>-_/\\",
    "Peter wasn't happy and Mary isn't either.",
]


def _tokenizer(path: Path):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS * 20, vocab_size=400, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    tok.save_pretrained(path)
    return tok


def _save_model(path: Path, kind: str) -> Path:
    import torch

    tok = _tokenizer(path)
    torch.manual_seed(0)
    common = dict(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        cfg = Gemma3TextConfig(
            **common,
            head_dim=16,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
        )
        model = Gemma3ForCausalLM(cfg)
    with torch.no_grad():  # larger weights: peaked, non-trivial distributions
        for p in model.parameters():
            p.mul_(4.0 if p.dim() > 1 else 1.0)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> str:
    return str(_save_model(tmp_path_factory.mktemp("tiny-llama"), "llama"))


@pytest.fixture(scope="session")
def tiny_gemma(tmp_path_factory) -> str:
    return str(_save_model(tmp_path_factory.mktemp("tiny-gemma"), "gemma"))


T5_HEAD_SCALE = 0.1


def _save_t5(path: Path) -> Path:
    """A tiny random Flan-T5-style model (d_model 64, 2+2 layers, gated-GELU, untied head) with
    transformers' own T5Tokenizer over a Unigram vocabulary of CORPUS's words and characters: the
    sentencepiece pipeline of real T5 (metaspace, ``</s>`` appended by default, pad = decoder
    start = 0, eos = 1, unk = 2)."""
    import re

    import torch
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    # whole words (with and without punctuation) score above any split into characters
    words = sorted(
        {w for line in CORPUS for t in line.split() for w in (t, re.sub(r"\W", "", t)) if w}
    )
    chars = sorted({c for line in CORPUS for c in line if not c.isspace()})
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -4.0)]
    vocab += [("\u2581" + w, -6.0 - 0.01 * len(w)) for w in words]
    vocab += [(w, -8.0) for w in words if len(w) > 2]
    vocab += [(c, -5.0) for c in chars]
    tok = T5Tokenizer(vocab=vocab, extra_ids=0)
    tok.save_pretrained(path)
    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=len(tok),
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
    )
    model = T5ForConditionalGeneration(cfg)
    with torch.no_grad():  # T5's init gives logits of ±100: tame the head
        model.lm_head.weight.mul_(T5_HEAD_SCALE)
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> str:
    return str(_save_t5(tmp_path_factory.mktemp("tiny-t5")))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own negbench cache unless it asks for the shared one."""
    if "NEGBENCH_TEST_SHARED_CACHE" not in os.environ:
        monkeypatch.setenv("NEGBENCH_CACHE", str(tmp_path / "nb-cache"))


HUB_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture(autouse=True)
def _hub_mode_restored():
    """A test that finds the hub unreachable switches the process to the hub's offline mode
    (negbench.hub.use_offline); the next test starts as the session did."""
    import sys

    before = {k: os.environ.get(k) for k in HUB_OFFLINE_VARS}
    yield
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    on = lambda *ks: any((before[k] or "").upper() in ("1", "ON", "YES", "TRUE") for k in ks)
    consts = sys.modules.get("huggingface_hub.constants")
    if consts is not None:
        consts.HF_HUB_OFFLINE = on("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    cfg = sys.modules.get("datasets.config")
    if cfg is not None:
        cfg.HF_HUB_OFFLINE = cfg.HF_DATASETS_OFFLINE = on("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    hub = sys.modules.get("negbench.hub")
    if hub is not None:
        hub.forget()


def naive_scores(backend, requests):
    """Reference: one request at a time, full HF forward, log-softmax over all positions, in
    float64 (torch's float32 CPU log-softmax over a large vocabulary is off by up to ~1e-4 per
    token, more than the engine's own error)."""
    import torch
    from negbench.core.engine import Engine
    from negbench.core.requests import NextTokenRequest

    out = []
    for r in requests:
        s = Engine(backend)._prepare([("k", r)])[0]
        with torch.inference_mode():
            logits = backend.model(torch.tensor([s.inputs])).logits[0].float()
        lp = torch.log_softmax(logits.double(), -1)
        if isinstance(r, NextTokenRequest):
            out.append({lab: lp[len(s.inputs) - 1, t].item() for lab, t in s.labels})
        else:
            out.append(
                (
                    sum(lp[p, t].item() for p, t in s.asks),
                    all(lp[p].argmax().item() == t for p, t in s.asks),
                )
            )
    return out
