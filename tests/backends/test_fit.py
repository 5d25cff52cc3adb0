"""A model too large for its GPU (issue 32): the size read from the safetensors headers, one clear
error naming vLLM's tensor parallelism before any weight is read, and an out-of-memory error
while loading said the same way, never a CUDA traceback.  The GPU's free memory is the one thing
faked (``fit.gpu_memory``): this machine has no GPU; the checkpoint headers, the sizes and the
backend's loading path are real."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from negbench.backends import fit
from negbench.backends.sources import ModelSource
from negbench.errors import ModelError

GIB = 1024**3
H100 = (79 * GIB, 80 * GIB)  # (free, total) as torch.cuda.mem_get_info reports them


def write_header_only(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A .safetensors file with a real header and no data: the size check reads headers only."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = fit.SAFETENSORS_BYTES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def llama_shapes(layers: int, hidden: int, inter: int, heads: int, kv: int, vocab: int) -> dict:
    """The tensors of a Llama checkpoint (bf16), as its safetensors headers list them."""
    hd = hidden // heads
    t: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": ("BF16", [vocab, hidden]),
        "model.norm.weight": ("BF16", [hidden]),
        "lm_head.weight": ("BF16", [vocab, hidden]),
    }
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "self_attn.q_proj.weight"] = ("BF16", [heads * hd, hidden])
        t[p + "self_attn.k_proj.weight"] = ("BF16", [kv * hd, hidden])
        t[p + "self_attn.v_proj.weight"] = ("BF16", [kv * hd, hidden])
        t[p + "self_attn.o_proj.weight"] = ("BF16", [hidden, heads * hd])
        t[p + "mlp.gate_proj.weight"] = ("BF16", [inter, hidden])
        t[p + "mlp.up_proj.weight"] = ("BF16", [inter, hidden])
        t[p + "mlp.down_proj.weight"] = ("BF16", [hidden, inter])
        t[p + "input_layernorm.weight"] = ("BF16", [hidden])
        t[p + "post_attention_layernorm.weight"] = ("BF16", [hidden])
    return t


@pytest.fixture
def llama70b(tmp_path) -> Path:
    """Llama-3-70B's shapes in two header-only shards (70.6 B parameters)."""
    shapes = llama_shapes(80, 8192, 28672, 64, 8, 128256)
    names = list(shapes)
    folder = tmp_path / "llama-70b"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    half = len(names) // 2
    for i, part in enumerate((names[:half], names[half:])):
        write_header_only(
            folder / f"model-0000{i + 1}-of-00002.safetensors", {n: shapes[n] for n in part}
        )
    return folder


def test_only_the_files_transformers_reads_are_counted(llama70b):
    """A repository may hold the same weights twice (Mistral's ``consolidated.safetensors``
    beside the shards): the shards the index names are counted, once."""
    src = ModelSource(str(llama70b), folder=str(llama70b))
    tensors = fit.checkpoint_tensors(src)
    assert tensors is not None
    shards = sorted(p.name for p in llama70b.glob("model-*.safetensors"))
    weight_map = {}
    for shard in shards:
        for name in fit.safetensors_header(llama70b / shard):
            if name != "__metadata__":
                weight_map[name] = shard
    (llama70b / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    shutil.copy(llama70b / shards[0], llama70b / "consolidated.safetensors")
    again = fit.checkpoint_tensors(src)
    assert again is not None and sorted(again, key=str) == sorted(tensors, key=str)


def test_weight_bytes_equal_the_loaded_model(tiny_llama):
    """The headers of a saved fp32 checkpoint give the bytes the model holds once loaded in
    bfloat16 and in float32 (every parameter counted once, tied or not)."""
    import torch
    from transformers import AutoModelForCausalLM

    tensors = fit.checkpoint_tensors(ModelSource(tiny_llama, folder=tiny_llama))
    assert tensors is not None
    for dtype, torch_dtype in (("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        model = AutoModelForCausalLM.from_pretrained(tiny_llama, dtype=torch_dtype)
        loaded = sum(p.numel() * p.element_size() for p in model.parameters())
        assert fit.weight_bytes(tensors, dtype) == loaded


def test_a_70b_model_does_not_fit_one_h100(llama70b, monkeypatch):
    monkeypatch.setattr(fit, "gpu_memory", lambda device: H100)
    src = ModelSource(str(llama70b), folder=str(llama70b))
    tensors = fit.checkpoint_tensors(src)
    assert tensors is not None
    params = sum(t.numel for t in tensors)
    assert 70.0e9 < params < 71.0e9
    with pytest.raises(ModelError) as e:
        fit.check_fits(src, "cuda:0", "bfloat16")
    err = e.value
    text = f"{err} {err.fix}"
    assert "does not fit on cuda:0" in text
    assert f"{params * 2 / GIB:.1f} GiB in bfloat16" in text
    assert "79.0 GiB free of 80.0 GiB" in text
    assert f"--model vllm:{llama70b} --vllm-arg=--tensor-parallel-size=2" in text
    # 8-bit (decoder linears in one byte): about 67 GiB, which fits an 80 GiB GPU
    assert "--quantize 8bit" in text
    assert err.where == "--model"


def test_a_model_that_fits_is_sized_and_passes(tiny_llama, monkeypatch):
    monkeypatch.setattr(fit, "gpu_memory", lambda device: H100)
    src = ModelSource(tiny_llama, folder=tiny_llama)
    assert fit.check_fits(src, "cuda:0", "bfloat16") > 0
    assert fit.check_fits(src, "cpu", "float32") is None  # only a GPU's memory is checked


def test_tensor_parallel_size_is_a_power_of_two_that_holds_the_weights():
    total = 80 * GIB
    per_gpu = total - fit.HEADROOM_BYTES - int(fit.HEADROOM_SHARE * total)
    for weights_gib in (90, 141, 250, 810):
        tp = fit.tensor_parallel_size(weights_gib * GIB, total)
        assert tp & (tp - 1) == 0 and tp >= 2
        assert tp * per_gpu >= weights_gib * GIB  # enough GPUs …
        assert tp == 2 or (tp // 2) * per_gpu < weights_gib * GIB  # … and no more than needed


def test_the_8bit_size_of_the_70b_model(llama70b):
    """LLM.int8() keeps embeddings, norms and the head in 16 bits; the decoder's linears take one
    byte per weight."""
    tensors = fit.checkpoint_tensors(ModelSource(str(llama70b), folder=str(llama70b)))
    assert tensors is not None
    int8 = fit.weight_bytes(tensors, "bfloat16", "8bit")
    kept = sum(t.numel for t in tensors if not fit._int8_linear(t.name))
    linear = sum(t.numel for t in tensors if fit._int8_linear(t.name))
    assert int8 == 2 * kept + linear
    assert kept == 2 * 128256 * 8192 + 8192 * (1 + 2 * 80)


def test_unknown_size_is_not_checked(tmp_path, monkeypatch):
    """A .bin checkpoint, or a hub model neither cached nor reachable: no size, the load goes
    ahead (and its out-of-memory error is still said clearly)."""
    monkeypatch.setattr(fit, "gpu_memory", lambda device: (1, 1))
    folder = tmp_path / "bin-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "pytorch_model.bin").write_bytes(b"\0" * 16)
    assert fit.check_fits(ModelSource(str(folder), folder=str(folder)), "cuda", "bfloat16") is None


def test_a_cached_hub_model_is_sized_from_its_snapshot(llama70b, tmp_path, monkeypatch):
    repo = tmp_path / "hf" / "hub" / "models--org--big"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "snapshots").mkdir(parents=True)
    shutil.copytree(llama70b, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    tensors = fit.checkpoint_tensors(ModelSource("org/big", hub_id="org/big"))
    assert tensors is not None and 70.0e9 < sum(t.numel for t in tensors) < 71.0e9


def test_the_backend_stops_before_reading_a_weight(llama70b, monkeypatch):
    """Through HFBackend: the error comes from the headers, and transformers never starts to
    load the model."""
    import transformers

    from negbench.backends import hf

    monkeypatch.setattr(hf, "check_device", lambda device: None)  # "cuda:0" on a CPU machine
    monkeypatch.setattr(fit, "gpu_memory", lambda device: H100)

    def never(*a, **k):
        raise AssertionError("weights read before the size check")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", never)
    with pytest.raises(ModelError, match="does not fit on cuda:0") as e:
        hf.HFBackend(str(llama70b), device="cuda:0", dtype="bfloat16")
    assert "tensor-parallel-size=2" in e.value.fix


def fake_cuda_load(monkeypatch, free: int = 10 * GIB, oom: bool = False) -> list[dict]:
    """HFBackend on "cuda:0" on this CPU machine: the device check passes, the GPU reports
    ``free`` bytes, and transformers' loader records its arguments and loads on the CPU (or
    raises torch's out-of-memory error where a GPU would run out).  Returns the recorded
    arguments."""
    import torch
    import transformers

    from negbench.backends import hf

    monkeypatch.setattr(hf, "check_device", lambda device: None)
    monkeypatch.setattr(fit, "gpu_memory", lambda device: (free, 80 * GIB))
    real = transformers.AutoModelForCausalLM.from_pretrained
    calls: list[dict] = []

    def load(where, **kw):
        calls.append(kw)
        if oom:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.96 GiB")
        return real(where, dtype=kw["dtype"], attn_implementation=kw["attn_implementation"])

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", load)
    return calls


def test_weights_are_read_straight_onto_the_gpu(tiny_llama, monkeypatch):
    """On a GPU the weights load in place (``device_map``): no host copy of every weight first
    (141 GB for a 70B model, more than the GPU machine's memory), no ``.to(device)`` after."""
    import torch

    from negbench.backends import hf

    calls = fake_cuda_load(monkeypatch)
    moved: list[str] = []
    real_to = torch.nn.Module.to

    def to(self, *args, **kwargs):
        moved.append(str(args[0]) if args else str(kwargs))
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "to", to)
    be = hf.HFBackend(tiny_llama, device="cuda:0", dtype="bfloat16")
    assert calls and calls[0]["device_map"] == {"": "cuda:0"}
    assert not any(m.startswith("cuda") for m in moved)
    assert be.weight_bytes == sum(p.numel() * 2 for p in be.model.parameters())


def test_running_out_of_memory_while_loading_is_one_clear_error(tiny_llama, monkeypatch):
    """The load fails with torch's out-of-memory error (the size was not known beforehand, or
    another process holds the GPU): the same clear error, naming vLLM's tensor parallelism."""
    from negbench.backends import hf

    fake_cuda_load(monkeypatch, oom=True)
    with pytest.raises(ModelError) as e:
        hf.HFBackend(tiny_llama, device="cuda:0", dtype="bfloat16")
    assert "ran out of memory on cuda:0 while loading" in str(e.value)
    assert "10.0 GiB free of 80.0 GiB" in str(e.value)
    assert "--vllm-arg=--tensor-parallel-size=N" in e.value.fix
