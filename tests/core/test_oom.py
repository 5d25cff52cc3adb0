"""A forward call that runs out of memory is split in halves and retried: the run goes on with
the same answers, and no row is forwarded twice (the error is injected on a CPU)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.oom import is_oom, rows_of
from negbench.errors import ModelError
from tests.core.test_engine import workload


class OomAbove:
    """A backend whose forward calls of more than ``limit`` rows run out of memory (as
    torch.cuda.OutOfMemoryError), and that records the rows of every call that succeeded."""

    def __init__(self, backend, limit: float):
        self._be = backend
        self.limit = limit
        self.forwarded: Counter = Counter()  # (prefix length, row tokens) of successful calls
        self.failed = 0

    def __getattr__(self, name):
        return getattr(self._be, name)

    def forward_batch(self, x, prefix=None, prefix_len: int = 0, keep_kv: bool = False):
        import torch

        batch = getattr(x, "batch", x)
        if len(batch.lengths) > self.limit:
            self.failed += 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        out = self._be.forward_batch(x, prefix, prefix_len, keep_kv)
        for b, n in enumerate(batch.lengths.tolist()):
            self.forwarded[(prefix_len, tuple(batch.ids[b, :n].tolist()))] += 1
        return out


def _run(be, limit: float, **cfg):
    proxy = OomAbove(be, limit)
    eng = Engine(proxy, config=EngineConfig(progress=False, **cfg))
    return eng.run(workload(seed=3, n_ctx=12)), proxy, eng


@pytest.mark.parametrize(
    "cfg, limit",
    [
        ({"share_prefix": False}, 3),  # one row per request: calls of 32 rows
        ({"max_row_tokens": 64, "plan": "trie"}, 1),  # rows after a kept KV prefix (chains)
    ],
)
def test_out_of_memory_splits_and_nothing_is_recomputed(tiny_llama, cfg, limit):
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    cfg = dict(cfg, batch_size=32, max_batch_tokens=1 << 16)
    ref, quiet, _ = _run(be, float("inf"), **cfg)
    out, loud, eng = _run(be, limit, **cfg)
    assert loud.failed > 0 and eng.oom.stats.splits > 0  # the error was met …
    assert eng.oom.stats.max_rows is not None and eng.oom.stats.max_rows <= limit
    for o, r in zip(out, ref):  # … and the answers are the same
        if hasattr(o, "logprob"):
            assert o.logprob == pytest.approx(r.logprob, abs=1e-5)
            assert o.is_greedy == r.is_greedy
        else:
            assert o.logprobs == pytest.approx(r.logprobs, abs=1e-5)
    # the rows forwarded successfully are exactly those of the run that met no error: each
    # once, none lost, none computed again
    assert loud.forwarded == quiet.forwarded
    assert eng.stats.forwarded_tokens == eng.stats.unique_tokens  # this engine ran once


def test_a_call_that_cannot_be_split_is_a_clear_error(tiny_llama):
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    with pytest.raises(ModelError, match="out of memory on a forward call of 1 row"):
        _run(be, 0, batch_size=32)


def test_other_errors_pass_through(tiny_llama):
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")

    class Broken(OomAbove):
        def forward_batch(self, *a, **k):
            raise RuntimeError("shape mismatch")

    eng = Engine(Broken(be, 0), config=EngineConfig(progress=False))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        eng.run(workload(seed=3, n_ctx=2))


def test_is_oom_knows_torch_and_runtime_messages():
    import torch

    assert is_oom(torch.OutOfMemoryError("x"))
    assert is_oom(torch.cuda.OutOfMemoryError("x"))
    assert is_oom(RuntimeError("CUDA error: out of memory"))
    assert is_oom(
        RuntimeError("[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't allocate memory")
    )
    assert not is_oom(RuntimeError("shape mismatch"))
    assert not is_oom(ValueError("out of memory"))


def test_rows_of_keeps_queries_and_targets_in_order():
    from negbench.core.backend import PackedBatch

    ids = np.arange(12).reshape(3, 4)
    b = PackedBatch(
        ids,
        np.tile(np.arange(4), (3, 1)),
        None,
        np.array([4, 3, 2]),
        np.array([0, 0, 1, 2, 2]),
        np.array([1, 3, 2, 0, 1]),
        np.array([0, 1, 1, 2, 3, 4, 4]),
        np.array([5, 6, 7, 8, 9, 10, 11]),
    )
    sub, q_in, t_in = rows_of(b, np.array([1, 2]))
    assert sub.ids.shape == (2, 3)
    assert sub.q_row.tolist() == [0, 1, 1] and sub.q_col.tolist() == [2, 0, 1]
    assert sub.t_query.tolist() == [0, 1, 2, 2] and sub.t_token.tolist() == [8, 9, 10, 11]
    assert q_in.tolist() == [False, False, True, True, True]
