"""Which attention implementation scores packed trie rows faster on this device: the engine on
the same requests with the model loaded for SDPA (boolean masks built on the device) and for
FlexAttention (block masks from the same rule), alternating, best of two, plus each with the
engine's padded plan; the warm-up (where FlexAttention compiles) is timed apart.  The measurement
behind ``attention_choice`` in negbench.backends.hf (SDPA by default; FlexAttention with
``NEGBENCH_ATTENTION=flex_attention``).

    python benchmarks/gpu/attn_sbs.py MODEL_DIR [TASK] [LIMIT] [SHOTS]
        (default: konubench, 1284 items, 0-shot; DEV=cpu DTYPE=float32 to try it on a CPU)

Prints ATTN lines: engine seconds, time inside forward calls, calls, forwarded tokens, and the
max |Δ log-likelihood| between the two implementations."""

from __future__ import annotations

import os
import sys
import time

import torch

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.evaluation.runner import RunConfig, build_requests, plan_units

DEV = os.environ.get("DEV", "cuda")


def main() -> None:
    model_dir = sys.argv[1]
    task = sys.argv[2] if len(sys.argv) > 2 else "konubench"
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 1284
    shots = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    dtype = os.environ.get("DTYPE", "bfloat16")
    backends = {
        a: HFBackend(model_dir, dtype=dtype, device=DEV, attn_implementation=a)
        for a in ("sdpa", "flex_attention")
    }
    cfg = RunConfig(
        model=model_dir,
        tasks=[task],
        modes=["cloze"],
        shots=[shots],
        limit=limit,
        seeds=[1234] if shots else None,
    )
    be0 = backends["sdpa"]
    reqs = [r for u in plan_units(cfg) for rs in build_requests(u, be0, cfg)[1] for r in rs]

    def timed(be, plan="auto"):
        eng = Engine(be, None, EngineConfig(progress=False, plan=plan))
        if DEV.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = eng.run(reqs)
        if DEV.startswith("cuda"):
            torch.cuda.synchronize()
        return out, time.perf_counter() - t, out.stats

    warm = {}
    for a, be in backends.items():  # warm-up: kernels, compilation (timed)
        t = time.perf_counter()
        Engine(be, None, EngineConfig(progress=False)).run(reqs[:200])
        Engine(be, None, EngineConfig(progress=False, plan="padded")).run(reqs[200:260])
        warm[a] = time.perf_counter() - t
    best: dict[str, tuple] = {}
    outs: dict[str, list] = {}
    for rnd in range(2):
        for a in ("sdpa", "flex_attention") if rnd == 0 else ("flex_attention", "sdpa"):
            out, dt, st = timed(backends[a])
            outs[a] = out
            if a not in best or dt < best[a][0]:
                best[a] = (dt, st)
    name = torch.cuda.get_device_name() if DEV.startswith("cuda") else "cpu"
    print(f"ATTN {model_dir} {task} {shots}-shot {len(reqs)} requests on {name}, {dtype}")
    for a, (dt, st) in best.items():
        print(
            f"ATTN {a:15s} {dt:6.2f}s  forward {st.forward_s:6.2f}s  calls {st.model_calls}  "
            f"fwd tokens {st.forwarded_tokens:,}  padded {st.padded_tokens:,}  "
            f"warm-up (first 260 requests, compilation included) {warm[a]:.1f}s"
        )
    for a, be in backends.items():
        _, dt, st = timed(be, "padded")
        print(
            f"ATTN {a:15s} plan=padded {dt:6.2f}s  forward {st.forward_s:6.2f}s  calls {st.model_calls}  "
            f"fwd tokens {st.forwarded_tokens:,}"
        )
    d = max(abs(x.logprob - y.logprob) for x, y in zip(outs["sdpa"], outs["flex_attention"]))
    faster = min(best, key=lambda a: best[a][0])
    print(
        f"ATTN faster: {faster} ({max(v[0] for v in best.values()) / min(v[0] for v in best.values()):.2f}x); "
        f"max |Δ log-likelihood| sdpa vs flex {d:.2e}"
    )


if __name__ == "__main__":
    main()
