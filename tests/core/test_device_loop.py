"""The forward loop as a GPU runs it, checked on a CPU (issue 32): FlexAttention compiled a
bounded number of times over realistic call sequences, no hidden host-device synchronisation
in the loop, and results read back once per call, one call behind."""

from __future__ import annotations

import random

import pytest

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import LoglikelihoodRequest, NextTokenRequest

WORDS = "the cat dog not never is was a house river moon True False sentence negation".split()


def cloze_items(rng: random.Random, instruction: str, n: int) -> list:
    """KoNUBench-shaped 0-shot cloze requests: one shared instruction, a sentence of its own
    per item, four candidate continuations each."""
    words = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))
    reqs = []
    for _ in range(n):
        ctx = instruction + " " + words(rng.randint(5, 20))
        reqs += [LoglikelihoodRequest(ctx, " " + words(rng.randint(1, 6))) for _ in range(4)]
    return reqs


def test_flex_attention_compiles_a_bounded_number_of_times(tiny_gemma, monkeypatch):
    """Three KoNUBench-shaped 0-shot runs (a prefix call of one row, then full and partial
    batches of rows of varying length, after the shared instruction's KV cache) through
    transformers' compiled FlexAttention (Dynamo only here; on a GPU each compilation is an
    Inductor + Triton build): at most 2 compilations, far below torch's limit, after which it
    would fall back to the unfused path.  Before issue 32 the same runs compiled 6 times (tensor
    kinds, strides and sizes of 1 changing from call to call).  The answers equal SDPA's."""
    import torch
    import torch._dynamo
    import transformers.integrations.flex_attention as tfa
    from torch._dynamo.testing import CompileCounter
    from torch.nn.attention.flex_attention import flex_attention

    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(flex_attention, backend=counter)

    def flex(query, key, value, training=False, **kw):
        return compiled(query, key, value, **kw)

    monkeypatch.setattr(tfa, "compile_friendly_flex_attention", flex)
    flex_be = HFBackend(
        tiny_gemma, dtype="float32", device="cpu", attn_implementation="flex_attention"
    )
    sdpa_be = HFBackend(tiny_gemma, dtype="float32", device="cpu")
    rng = random.Random(0)
    instruction = " ".join(rng.choice(WORDS) for _ in range(40))
    cfg = EngineConfig(progress=False, max_row_tokens=256, batch_size=8)
    try:
        for n in (40, 25, 60):
            reqs = cloze_items(rng, instruction, n)
            got = Engine(flex_be, config=cfg).run(reqs)
            if n == 25:
                want = Engine(sdpa_be, config=cfg).run(reqs)
                assert max(abs(a.logprob - b.logprob) for a, b in zip(got, want)) < 1e-4
        limit = getattr(torch._dynamo.config, "recompile_limit", None) or getattr(
            torch._dynamo.config, "cache_size_limit"
        )
        assert 1 <= counter.frame_count <= 2 < limit
    finally:
        torch._dynamo.reset()


#: Tensor methods that make the host wait for the device (on a GPU).
SYNCING = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")


@pytest.mark.parametrize("model_fixture", ["tiny_llama", "tiny_gemma"])
def test_no_hidden_sync_in_the_forward_loop(model_fixture, request, monkeypatch):
    """Every tensor method that forces a device sync, hooked while the engine stages and runs
    its forward calls (trie rows with masks, unbranched rows without, a KV prefix, padded
    plans): none is called there.  The one wait per call is its read-back (``result()``),
    made one call later, outside the forward calls.  Before issue 32, transformers' search
    for packed sequences (``(packed_sequence_mask[:, -1] == 0).all()`` in an ``if``) synced once
    per mask type per call without a mask or a cache."""
    import torch

    be = HFBackend(request.getfixturevalue(model_fixture), dtype="float32", device="cpu")
    inside = [0]
    seen: list[str] = []

    def hook(name):
        orig = getattr(torch.Tensor, name)

        def wrapped(self, *args, **kwargs):
            if inside[0]:
                seen.append(name)
            return orig(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapped)

    def audited(method):
        orig = getattr(be, method)

        def run(*args, **kwargs):
            inside[0] += 1
            try:
                return orig(*args, **kwargs)
            finally:
                inside[0] -= 1

        monkeypatch.setattr(be, method, run)

    for name in SYNCING:
        hook(name)
    for method in ("stage", "forward_batch"):
        audited(method)
    rng = random.Random(1)
    instruction = " ".join(rng.choice(WORDS) for _ in range(30))
    reqs = cloze_items(rng, instruction, 12) + [
        NextTokenRequest(f"{i} " + " ".join(rng.choice(WORDS) for _ in range(8)), ("True", "False"))
        for i in range(6)
    ]
    for cfg in (
        dict(max_row_tokens=64, batch_size=4),
        dict(plan="padded"),
        dict(prefetch=True),
    ):
        eng = Engine(be, config=EngineConfig(progress=False, **cfg))
        assert eng.run(reqs).stats.model_calls > 0
    assert seen == []


def test_results_are_read_back_one_call_behind(tiny_llama, monkeypatch):
    """The engine queues call c + 1 before it reads back call c (so a GPU always has the next
    call queued while the host waits), reads each call back exactly once, and its answers equal
    those of reading every call back at once."""
    from negbench.backends import hf

    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    log: list[tuple[str, int]] = []
    forward = be.forward_batch
    result = hf._Pending.result

    def logged_forward(*args, **kwargs):
        pending, kv = forward(*args, **kwargs)
        pending.n = sum(1 for e in log if e[0] == "forward")
        log.append(("forward", pending.n))
        return pending, kv

    def logged_result(self):
        log.append(("result", self.n))
        return result(self)

    monkeypatch.setattr(be, "forward_batch", logged_forward)
    monkeypatch.setattr(hf._Pending, "result", logged_result)
    rng = random.Random(2)
    reqs = cloze_items(rng, "negation " * 10, 10)
    got = Engine(be, config=EngineConfig(progress=False, max_row_tokens=48, batch_size=2)).run(reqs)
    n = sum(1 for e in log if e[0] == "forward")
    assert n >= 3
    assert [e for e in log if e[0] == "result"] == [("result", c) for c in range(n)]
    for c in range(n - 1):  # read back after the next call was queued
        assert log.index(("result", c)) > log.index(("forward", c + 1))
    monkeypatch.undo()
    want = Engine(be, config=EngineConfig(progress=False, prefetch=False)).run(reqs)
    assert max(abs(a.logprob - b.logprob) for a, b in zip(got, want)) < 1e-5


@pytest.mark.parametrize("attention", ["sdpa", "flex_attention"])
def test_no_sync_on_a_gpu(tiny_gemma, attention, monkeypatch):
    """On a GPU (skipped elsewhere): torch's own sync detector (``set_sync_debug_mode("error")``,
    which also sees the syncs of C++ code: copies to the host, ``nonzero``, boolean indexing)
    raises on none while the engine stages and runs its forward calls (after a first run that
    compiles what FlexAttention compiles); the answers equal SDPA's in float32."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    be = HFBackend(tiny_gemma, dtype="float32", device="cuda", attn_implementation=attention)

    def strict(method):
        orig = getattr(be, method)

        def run(*args, **kwargs):
            torch.cuda.set_sync_debug_mode("error")
            try:
                return orig(*args, **kwargs)
            finally:
                torch.cuda.set_sync_debug_mode("default")

        monkeypatch.setattr(be, method, run)

    rng = random.Random(3)
    reqs = cloze_items(rng, "negation " * 20, 20)
    ref = HFBackend(tiny_gemma, dtype="float32", device="cuda")
    want = Engine(ref, config=EngineConfig(progress=False, max_row_tokens=128)).run(reqs)
    Engine(be, config=EngineConfig(progress=False, max_row_tokens=128)).run(reqs[:8])  # compiled
    for method in ("stage", "forward_batch"):
        strict(method)
    got = Engine(be, config=EngineConfig(progress=False, max_row_tokens=128)).run(reqs)
    assert max(abs(a.logprob - b.logprob) for a, b in zip(got, want)) < 1e-3
