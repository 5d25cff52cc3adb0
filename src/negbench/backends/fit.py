"""Whether a model's weights fit on the GPU it is asked to run on, decided before any weight is read.

The papers' largest models do not fit one GPU (a 70B model in bfloat16 holds 141 GB of weights; an
H100 has 80). Loaded anyway, transformers reads every weight into host memory and copies it to the
device: minutes later a CUDA out-of-memory traceback, or the host's OOM killer. So the size is
known first, from the safetensors headers (each file starts with a small JSON of every tensor's
dtype and shape): a model folder's own files, a hub model's cached snapshot, or, online, the hub's
header endpoint. When it cannot fit, one clear error says how large it is, how much is free, and
what does fit: vLLM with tensor parallelism over several GPUs (``--model vllm:NAME
--vllm-arg=--tensor-parallel-size=N``), the 8-bit base, or a larger GPU. An out-of-memory error
while loading (the estimate is of the weights alone) gets the same message.
"""

from __future__ import annotations

import json
import logging
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from negbench import hub
from negbench.backends.sources import ModelSource, converted_gguf_folder
from negbench.errors import ModelError

log = logging.getLogger("negbench")

GIB = 1024**3
# Room the scoring needs beside the weights: cuBLAS workspaces, one call's activations (a call
# that does not fit is split in halves: core/oom.py) and the output head's tile of logits (1 GiB
# at most).  Llama-3-70B in bfloat16 (131.4 GiB) then fits one 140 GiB H200, not an 80 GiB H100.
HEADROOM_BYTES = 2 * GIB
HEADROOM_SHARE = 0.02  # …and 2 % of the GPU, for the allocator's fragmentation

# bytes per element of the safetensors dtype codes (their own size where not floating point)
SAFETENSORS_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
FLOATING = {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class TensorShape:
    """One checkpoint tensor: its name, safetensors dtype code and element count."""

    name: str
    dtype: str
    numel: int


def safetensors_header(path: Path) -> dict:
    """The JSON header of one .safetensors file (8-byte little-endian length, then the JSON)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > 100 * 1024 * 1024:  # not a safetensors header
            raise ValueError(f"{path.name}: header of {n} bytes")
        return json.loads(f.read(n))


def tensors_of_header(header: dict) -> list[TensorShape]:
    return [
        TensorShape(name, meta["dtype"], math.prod(meta["shape"]))
        for name, meta in header.items()
        if name != "__metadata__"
    ]


def weight_bytes(tensors: list[TensorShape], dtype: str, quantize: str | None = None) -> int:
    """Bytes the weights take once loaded in ``dtype``: floating tensors at the load dtype, the
    rest at their own size.  8-bit (bitsandbytes LLM.int8()) stores the decoder's linear
    weights in one byte each; embeddings, norms and the output head stay in ``dtype``."""
    per = DTYPE_BYTES[dtype]
    total = 0
    for t in tensors:
        if t.dtype not in FLOATING:
            total += t.numel * SAFETENSORS_BYTES.get(t.dtype, 4)
        elif quantize == "8bit" and _int8_linear(t.name):
            total += t.numel
        else:
            total += t.numel * per
    return total


def _int8_linear(name: str) -> bool:
    return name.endswith(".weight") and not any(
        s in name for s in ("embed", "lm_head", "norm", "wte", "wpe", "shared")
    )


def checkpoint_tensors(
    source: ModelSource, revision: str | None = None
) -> list[TensorShape] | None:
    """Every tensor of the checkpoint a source loads, from safetensors headers, or None when
    they cannot be read without downloading the weights (a .bin checkpoint; a hub model neither
    cached nor reachable; a GGUF not yet converted)."""
    folder: Path | None = None
    if source.gguf_file:
        folder = converted_gguf_folder(source)
    elif source.folder:
        folder = Path(source.folder)
    elif source.hub_id:
        folder = hub.snapshot(source.hub_id, revision)
        if folder is None:
            return _hub_tensors(source.hub_id, revision)
    if folder is None or not folder.is_dir():
        return None
    files = checkpoint_files(folder)
    if not files:
        return None
    tensors: list[TensorShape] = []
    for f in files:
        try:
            tensors += tensors_of_header(safetensors_header(f))
        except (OSError, ValueError, KeyError, struct.error) as exc:
            log.debug("cannot read the safetensors header of %s: %s", f, exc)
            return None  # a damaged file: the load names it
    return tensors


def checkpoint_files(folder: Path) -> list[Path]:
    """The safetensors files transformers reads from a folder: the shards its index names, else
    ``model.safetensors``, else every ``*.safetensors`` (a repository may also hold a
    ``consolidated.safetensors`` of the same weights for another tool, never read)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError):
            return []  # a damaged index: the load names it
        return [folder / s for s in sorted(shards)]
    if (folder / "model.safetensors").is_file():
        return [folder / "model.safetensors"]
    return sorted(folder.glob("*.safetensors"))


def _hub_tensors(repo_id: str, revision: str | None) -> list[TensorShape] | None:
    """The hub's header endpoint: a few range requests, no weights downloaded."""
    if hub.unreachable() is not None:
        return None
    try:
        from huggingface_hub import get_safetensors_metadata

        meta = get_safetensors_metadata(repo_id, revision=revision)
    except Exception as exc:  # no safetensors, gated, …: the load reports what matters
        log.debug("no safetensors metadata for %s: %s", repo_id, exc)
        return None
    return [
        TensorShape(name, t.dtype, math.prod(t.shape))
        for fm in meta.files_metadata.values()
        for name, t in fm.tensors.items()
    ]


def needed_room(weights: int, total: int) -> int:
    """Free device memory a model of ``weights`` bytes needs to score on a GPU of ``total`` bytes."""
    return weights + HEADROOM_BYTES + int(HEADROOM_SHARE * total)


def tensor_parallel_size(weights: int, total: int) -> int:
    """GPUs of ``total`` bytes each that vLLM needs for these weights (a power of two, as
    attention heads divide evenly by one)."""
    per_gpu = max(total - HEADROOM_BYTES - int(HEADROOM_SHARE * total), 1)
    n = max(2, math.ceil(weights / per_gpu))
    return 1 << (n - 1).bit_length()


def too_large(
    spec: str,
    weights: int,
    free: int,
    total: int,
    device: str,
    dtype: str,
    quantize: str | None,
    int8_weights: int | None,
) -> ModelError:
    """The error for a model whose weights do not fit: how large, how much is free, what fits."""
    tp = tensor_parallel_size(weights, total)
    ways = [
        f"score it on {tp} GPUs with vLLM's tensor parallelism: --model vllm:{spec} "
        f"--vllm-arg=--tensor-parallel-size={tp} (negbench starts and stops the server)"
    ]
    if not quantize and int8_weights is not None and needed_room(int8_weights, total) <= free:
        ways.append(f"load it 8-bit (--quantize 8bit: about {int8_weights / GIB:.1f} GiB)")
    ways.append("or use a GPU with more free memory")
    what = "8-bit" if quantize else dtype
    return ModelError(
        f"model '{spec}' does not fit on {device}: its weights need {weights / GIB:.1f} GiB in "
        f"{what} (plus {(needed_room(weights, total) - weights) / GIB:.1f} GiB to score), and "
        f"{device} has {free / GIB:.1f} GiB free of {total / GIB:.1f} GiB",
        where="--model",
        fix="; ".join(ways),
    )


def gpu_memory(device: str) -> tuple[int, int]:
    """(free, total) bytes of a CUDA device, as the driver reports them."""
    import torch

    return torch.cuda.mem_get_info(torch.device(device))


def check_fits(
    source: ModelSource,
    device: str,
    dtype: str,
    quantize: str | None = None,
    revision: str | None = None,
) -> int | None:
    """Raise :func:`too_large`'s error when the weights cannot fit the CUDA ``device``; returns
    the weights' bytes (None off CUDA, or when the checkpoint's headers cannot be read: the
    load then goes ahead and an out-of-memory error is still reported clearly)."""
    if not device.startswith("cuda"):
        return None
    tensors = checkpoint_tensors(source, revision)
    if tensors is None:
        log.info("the size of %s is not known before loading; not checked", source.spec)
        return None
    weights = weight_bytes(tensors, dtype, quantize)
    free, total = gpu_memory(device)
    if needed_room(weights, total) > free:
        int8 = weight_bytes(tensors, dtype, "8bit")
        raise too_large(source.spec, weights, free, total, device, dtype, quantize, int8)
    return weights


def load_oom(spec: str, device: str, exc: BaseException) -> ModelError:
    """An out-of-memory error while the weights were read or moved to the GPU, said as
    :func:`too_large` says it (the size was not known beforehand, or the GPU is shared)."""
    free, total = gpu_memory(device)
    return ModelError(
        f"model '{spec}' ran out of memory on {device} while loading "
        f"({free / GIB:.1f} GiB free of {total / GIB:.1f} GiB now; {type(exc).__name__})",
        where="--model",
        fix=f"score it on several GPUs with vLLM's tensor parallelism: --model vllm:{spec} "
        "--vllm-arg=--tensor-parallel-size=N; or --quantize 8bit; or free the GPU "
        "(another process may hold it: nvidia-smi)",
    )
