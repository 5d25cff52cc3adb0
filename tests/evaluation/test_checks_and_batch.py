"""Options checked before the model loads (the device included), and --batch-size auto: the
largest call that fits, measured once per model and device and remembered."""

from __future__ import annotations

import json

import numpy as np
import pytest

from negbench.cli import main
from negbench.evaluation.autobatch import AUTO_ROWS, CPU_BATCH, resolve_batch, synthetic_batch
from negbench.evaluation.session import Session


def test_a_device_that_is_not_here_is_refused_before_loading(tiny_llama, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    argv = ["run", "--model", tiny_llama, "--device", "cuda", "--quiet", "--no-cache"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "sees no CUDA GPU" in err and "loading" not in err


def test_session_checks_device_dtype_and_batch_size_first(tiny_llama):
    from negbench.errors import ModelError, OptionError

    with pytest.raises(ModelError, match="unknown device"):
        Session(tiny_llama, device="gpu0")
    import torch

    if not torch.backends.mps.is_available():
        with pytest.raises(ModelError, match="no Apple GPU"):
            Session(tiny_llama, device="mps")
    with pytest.raises(ModelError, match="unknown dtype"):
        Session(tiny_llama, dtype="float64")
    with pytest.raises(OptionError, match="batch size must be auto"):
        Session(tiny_llama, batch_size=0)
    s = Session(tiny_llama, device="cpu")
    assert not s.loaded  # checks only


def test_batch_size_auto_is_32_rows_on_a_cpu(tiny_llama):
    with Session(tiny_llama, device="cpu", cache=None, progress=False) as s:
        assert s.engine.config.batch_size == CPU_BATCH
        assert s.engine.config.threads == "auto"
    with Session(tiny_llama, device="cpu", cache=None, threads=1, batch_size=7) as s:
        assert s.engine.config.batch_size == 7 and s.engine.config.threads == 1


class FakeGpu:
    """A 'GPU' backend that runs out of memory above ``capacity`` tokens per call."""

    device = "cuda:0"
    fingerprint = "fp-test"
    dtype = "bfloat16"
    max_length = 512
    batch_tokens = 1024

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.calls: list[int] = []

    def forward_batch(self, batch, prefix=None, prefix_len=0, keep_kv=False):
        import torch

        self.calls.append(int(batch.ids.size))
        if batch.ids.size > self.capacity:
            raise torch.OutOfMemoryError("CUDA out of memory")

        class Done:
            def result(self):
                return np.zeros(len(batch.t_token)), np.zeros(len(batch.q_row), dtype=np.int64)

        return Done(), None


def test_auto_on_a_gpu_probes_once_and_remembers(tmp_path):
    store = tmp_path / "batch_sizes.json"
    be = FakeGpu(capacity=10_000)
    got = resolve_batch(be, log=lambda s: None, path=store)
    assert be.calls == [1024, 2048, 4096, 8192, 16384]  # doubled until out of memory
    assert got == {"batch_size": AUTO_ROWS, "max_batch_tokens": int(8192 * 0.8)}
    saved = json.loads(store.read_text())
    assert list(saved.values()) == [{"tokens": 8192, "row": 512}]
    again = FakeGpu(capacity=10_000)
    assert resolve_batch(again, log=lambda s: None, path=store) == got
    assert again.calls == []  # remembered: no probe
    other = FakeGpu(capacity=10_000)
    other.fingerprint = "another-model"
    resolve_batch(other, log=lambda s: None, path=store)
    assert other.calls and len(json.loads(store.read_text())) == 2


def test_synthetic_batch_is_masked_and_scores_one_position_in_eight():
    b = synthetic_batch(3, 16)
    assert b.ids.shape == (3, 16) and b.end is not None and (b.end == 15).all()
    assert len(b.q_row) == 3 * 2 and len(b.t_token) == len(b.q_row)
