"""Shared fixtures: tiny random models built in-test (no download), and a scratch cache."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS = [
    "The cat is not on the mat.", "A dog is an animal.", "Negate the sentence.",
    "Is the following statement True or False?", "The river does not flow north.",
    "Sentence: The museum opened last year.", "Negation: The museum did not open last year.",
    "A. B. C. D. Answer: True False yes no", "She never arrived, but he did.",
    "0123456789 ,.;:!?'\"()[]{}<>-_/\\", "Peter wasn't happy and Mary isn't either.",
]


def _tokenizer(path: Path):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 20, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "</s>", "<pad>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>",
                                  eos_token="</s>", pad_token="<pad>")
    tok.save_pretrained(path)
    return tok


def _save_model(path: Path, kind: str) -> Path:
    import torch
    tok = _tokenizer(path)
    torch.manual_seed(0)
    common = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id)
    if kind == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig
        cfg = Gemma3TextConfig(**common, head_dim=16, sliding_window=8,
                               layer_types=["sliding_attention", "full_attention"])
        model = Gemma3ForCausalLM(cfg)
    with torch.no_grad():                      # larger weights: peaked, non-trivial distributions
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


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own negbench cache unless it asks for the shared one."""
    if "NEGBENCH_TEST_SHARED_CACHE" not in os.environ:
        monkeypatch.setenv("NEGBENCH_CACHE", str(tmp_path / "nb-cache"))


def naive_scores(backend, requests):
    """Reference: one request at a time, full HF forward, log-softmax over all positions."""
    import torch
    from negbench.engine import Engine
    from negbench.requests import NextTokenRequest
    out = []
    for r in requests:
        s = Engine(backend)._prepare([("k", r)])[0]
        with torch.inference_mode():
            logits = backend.model(torch.tensor([s.inputs])).logits[0].float()
        lp = torch.log_softmax(logits, -1)
        if isinstance(r, NextTokenRequest):
            out.append({lab: lp[len(s.inputs) - 1, t].item() for lab, t in s.labels})
        else:
            out.append((sum(lp[p, t].item() for p, t in s.asks),
                        all(lp[p].argmax().item() == t for p, t in s.asks)))
    return out
