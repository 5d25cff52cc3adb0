"""The engine on a CUDA GPU (issue 32), skipped where there is none: the GPU kit runs these on
the GPU machine first (``PHASES=tests bash benchmarks/gpu/run.sh``).  What only a GPU shows:
the answers of the device-built masks, the pinned read-back and the GPU output head equal the
CPU's; a real CUDA out-of-memory error is split and retried with nothing lost; the weights load
in place; the size check reads the GPU's real free memory; forward time comes from CUDA events
of the backend's own device."""

from __future__ import annotations

import random
import time

import pytest
import torch

from negbench.backends.hf import HFBackend, _Pending
from negbench.core.backend import Query, RowInput, packed_batch
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import NextTokenRequest
from negbench.errors import ModelError
from tests.backends.test_fit import llama_shapes, write_header_only
from tests.core.test_device_loop import WORDS, cloze_items

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

MIB = 1024**2


def mixed_requests(seed: int) -> list:
    rng = random.Random(seed)
    instruction = " ".join(rng.choice(WORDS) for _ in range(30))
    return cloze_items(rng, instruction, 16) + [
        NextTokenRequest(f"{i} " + " ".join(rng.choice(WORDS) for _ in range(8)), ("True", "False"))
        for i in range(8)
    ]


def assert_same_answers(got: list, want: list, tol: float) -> None:
    for g, w in zip(got, want, strict=True):
        if hasattr(w, "logprob"):
            assert g.logprob == pytest.approx(w.logprob, abs=tol)
        else:
            assert g.logprobs == pytest.approx(w.logprobs, abs=tol)


@pytest.mark.parametrize("attention", ["sdpa", "flex_attention"])
@pytest.mark.parametrize("model_fixture", ["tiny_llama", "tiny_gemma"])
def test_gpu_answers_equal_the_cpu(model_fixture, attention, request):
    """float32 on both sides: trie rows with device-built masks, a kept KV prefix, the padded
    plan and the default plan give the CPU's answers."""
    path = request.getfixturevalue(model_fixture)
    cpu = HFBackend(path, dtype="float32", device="cpu")
    gpu = HFBackend(path, dtype="float32", device="cuda", attn_implementation=attention)
    reqs = mixed_requests(5)
    for cfg in (dict(max_row_tokens=64, batch_size=4), dict(plan="padded"), dict()):
        want = Engine(cpu, config=EngineConfig(progress=False, **cfg)).run(reqs)
        got = Engine(gpu, config=EngineConfig(progress=False, **cfg)).run(reqs)
        assert_same_answers(got, want, 2e-3)


def test_results_are_read_back_through_pinned_memory(tiny_llama):
    """A forward call's results are copied into pinned memory as the call is queued, and
    :meth:`_Pending.result` waits on that copy's event alone."""
    be = HFBackend(tiny_llama, dtype="float32", device="cuda")
    ids = be.tokenizer("The cat is not on the mat.")["input_ids"]
    n = len(ids)
    row = RowInput(ids, list(range(-1, n - 1)), list(range(n)), [Query(n - 2, [ids[-1]])])
    batch, _ = packed_batch([row])
    pending, _ = be.forward_batch(batch)
    assert isinstance(pending, _Pending) and pending._event is not None
    assert pending._host is not None and pending._host.is_pinned()
    lp, am = pending.result()
    assert lp.shape == (1,) and am.shape == (1,)


class ScratchPerRow:
    """A backend whose forward calls first take ``per_row`` bytes of real CUDA memory per row:
    under a memory cap, calls above a number of rows meet torch's own out-of-memory error."""

    def __init__(self, backend, per_row: int):
        self._be, self.per_row, self.failed = backend, per_row, 0

    def __getattr__(self, name):
        return getattr(self._be, name)

    def forward_batch(self, x, prefix=None, prefix_len: int = 0, keep_kv: bool = False):
        rows = len(getattr(x, "batch", x).lengths)
        try:
            scratch = torch.empty(rows * self.per_row, dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError:
            self.failed += 1
            raise
        out = self._be.forward_batch(x, prefix, prefix_len, keep_kv)
        del scratch
        return out


def test_a_real_cuda_out_of_memory_error_is_split_with_nothing_lost(tiny_llama):
    be = HFBackend(tiny_llama, dtype="float32", device="cuda")
    reqs = mixed_requests(6)
    cfg = EngineConfig(progress=False, share_prefix=False, batch_size=32)
    want = Engine(be, config=cfg).run(reqs)
    per_row = 512 * MIB
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    cap = torch.cuda.memory_reserved() + 3 * per_row + 256 * MIB  # 3 rows fit, 4 do not
    torch.cuda.set_per_process_memory_fraction(cap / total)
    try:
        proxy = ScratchPerRow(be, per_row)
        eng = Engine(proxy, config=cfg)
        got = eng.run(reqs)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    assert proxy.failed > 0 and eng.oom.stats.splits > 0
    assert eng.oom.stats.max_rows is not None and eng.oom.stats.max_rows <= 3
    assert_same_answers(got, want, 2e-4)  # other call shapes: other kernels


def test_weights_load_in_place_sized_beforehand(tiny_gemma):
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    be = HFBackend(tiny_gemma, dtype="bfloat16", device="cuda")
    assert {p.device.type for p in be.model.parameters()} == {"cuda"}
    held = sum(p.numel() * p.element_size() for p in be.model.parameters())
    assert be.weight_bytes == held
    assert torch.cuda.memory_allocated() - before >= held


def test_a_model_larger_than_the_gpu_is_refused_from_its_real_free_memory(tmp_path):
    """A Llama-3-405B-shaped checkpoint (headers only): 756 GiB in bfloat16, more than any one
    GPU; the error names vLLM's tensor parallelism and the GPU's memory as the driver says it."""
    folder = tmp_path / "llama-405b"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    write_header_only(folder / "model.safetensors", llama_shapes(126, 16384, 53248, 128, 8, 128256))
    free, total = torch.cuda.mem_get_info()
    with pytest.raises(ModelError, match="does not fit on cuda") as e:
        HFBackend(str(folder), dtype="bfloat16", device="cuda")
    assert f"free of {total / 1024**3:.1f} GiB" in str(e.value)
    assert "--vllm-arg=--tensor-parallel-size=" in e.value.fix


def test_forward_time_comes_from_the_backends_own_device(tiny_llama):
    be = HFBackend(tiny_llama, dtype="float32", device="cuda:0")
    reqs = mixed_requests(7)
    t = time.perf_counter()
    out = Engine(be, config=EngineConfig(progress=False, max_row_tokens=64)).run(reqs)
    wall = time.perf_counter() - t
    assert 0 < out.stats.forward_s <= wall
