"""Which SDPA kernel scores the engine's packed rows on this GPU, and which is fastest.

The engine gives SDPA a boolean mask per layer type (the trie's rule), which rules out the flash
kernel; torch then tries its kernels in a priority order, and torch 2.11 may put cuDNN attention
first (``TORCH_CUDNN_SDPA_DEPRIORITIZED=1`` puts it last).  This script scores the same requests
with torch's own choice and with each kernel forced (``torch.nn.attention.sdpa_kernel``), and
prints per choice: seconds (best of two, after a warm-up), the attention kernels the profiler saw
and their share of GPU time, and the max |Δ log-likelihood| against torch's choice.  A kernel
that cannot take these inputs prints "not eligible" and torch's reason.

    python benchmarks/gpu/sdpa_kernels.py MODEL_DIR [LIMIT]       (default 400 KoNUBench items)
    TORCH_CUDNN_SDPA_DEPRIORITIZED=1 python benchmarks/gpu/sdpa_kernels.py MODEL_DIR [LIMIT]
        (DEV=cpu DTYPE=float32 to try it on a CPU: math and the CPU flash kernel only)
Prints SDPA lines."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.evaluation.runner import RunConfig, build_requests, plan_units

DEV = os.environ.get("DEV", "cuda")
CHOICES = {
    "torch's choice": None,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "math": SDPBackend.MATH,
}
# kernel names: fmha_cutlassF_* (efficient), flash_fwd_* (flash), cudnn_generated_*_sdpa_* (cuDNN)
ATTENTION_WORDS = ("fmha", "flash", "cudnn", "attention", "attn", "efficient", "sdpa")


def kernels_of(prof, cuda: bool) -> tuple[list[tuple[str, float]], float]:
    """The attention kernels a profiled run launched, with their share of the device time."""
    rows = []
    total = 0.0
    for e in prof.key_averages():
        if cuda:  # kernels only (an operator's device time is its kernels', counted once)
            if "CUDA" not in str(getattr(e, "device_type", "CUDA")):
                continue
            t = float(
                getattr(e, "self_device_time_total", 0) or getattr(e, "self_cuda_time_total", 0)
            )
        else:
            t = float(e.self_cpu_time_total)
        total += t
        if any(w in e.key.lower() for w in ATTENTION_WORDS):
            rows.append((e.key, t))
    rows.sort(key=lambda r: -r[1])
    return rows, total


def main() -> None:
    model_dir = sys.argv[1]
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    dtype = os.environ.get("DTYPE", "bfloat16")
    cuda = DEV.startswith("cuda")
    be = HFBackend(model_dir, dtype=dtype, device=DEV, attn_implementation="sdpa")
    cfg = RunConfig(model=model_dir, tasks=["konubench"], modes=["cloze"], shots=[0], limit=limit)
    reqs = [r for u in plan_units(cfg) for rs in build_requests(u, be, cfg)[1] for r in rs]

    def run(rs):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = Engine(be, None, EngineConfig(progress=False)).run(rs)
        if cuda:
            torch.cuda.synchronize()
        return out, time.perf_counter() - t

    dep = os.environ.get("TORCH_CUDNN_SDPA_DEPRIORITIZED", "unset")
    name = torch.cuda.get_device_name() if cuda else "cpu"
    print(
        f"SDPA {model_dir} konubench 0-shot {len(reqs)} requests on {name}, {dtype}, torch "
        f"{torch.__version__}, TORCH_CUDNN_SDPA_DEPRIORITIZED={dep}"
    )
    ref = None
    only = os.environ.get("ONLY")  # e.g. ONLY="torch's choice" for the env-variable rerun
    for label, backend in CHOICES.items():
        if only and label != only:
            continue
        ctx = sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext()
        try:
            with ctx, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run(reqs[:100])  # warm-up: kernels chosen, workspaces allocated
                best, out = float("inf"), None
                for _ in range(2):
                    o, dt = run(reqs)
                    if dt < best:
                        best, out = dt, o
                acts = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
                with profile(activities=acts) as prof:
                    run(reqs[:100])
        except RuntimeError as exc:
            why = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            print(f"SDPA {label:15s} not eligible: {why}")
            continue
        rows, total = kernels_of(prof, cuda)
        att = sum(t for _, t in rows)
        if ref is None:
            ref = out
        assert out is not None
        d = max(abs(x.logprob - y.logprob) for x, y in zip(out, ref))
        names = "; ".join(f"{k[:70]} {t / max(total, 1e-9):.0%}" for k, t in rows[:3]) or "-"
        print(
            f"SDPA {label:15s} {best:7.3f}s  attention {att / max(total, 1e-9):5.1%} of "
            f"{'GPU' if cuda else 'CPU'} time  max|Δ| vs torch's choice {d:.2e}  kernels: {names}"
        )


if __name__ == "__main__":
    main()
