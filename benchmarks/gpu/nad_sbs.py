"""This is not a Dataset next-token P(True) on a GPU: negbench's engine against plain padded
batches (length-sorted prompts, left padding, logits at the last position only), the same
requests, weights and process, alternating runs, best of two.  The engine runs its own choice
(``plan=auto``: the trie, or padded rows where its cost model says sharing cannot pay) and, once
each, the trie and its own padded plan forced, to check the cost model's choice.

    python benchmarks/gpu/nad_sbs.py MODEL_DIR [N] [BATCH]        (DEV=cpu DTYPE=float32 to try it on a CPU)

Prints NAD lines: time, prompts/s, forwarded tokens, calls, time inside forward calls (CUDA
events), GPU busy percent while scoring, and max |Δ P(True)| between the two."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lm_eval_side_by_side import GpuBusy
from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import NextTokenRequest
from negbench.tasks import get_task

DEV = os.environ.get("DEV", "cuda")


def sync() -> None:
    if DEV.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    model_dir = sys.argv[1]
    N = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    B = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    task = get_task(f"notadataset[sample={N},seed=0]")
    docs = task.load("eval")[:N]
    spec = task.mode("next_token")
    reqs = [NextTokenRequest(spec.render(d).query, ("True", "False")) for d in docs]
    be = HFBackend(model_dir, dtype=os.environ.get("DTYPE", "bfloat16"), device=DEV)
    warm = [NextTokenRequest(spec.render(d).query + " ", ("True", "False")) for d in docs[:2000]]
    w0 = Engine(be, None, EngineConfig(progress=False)).run(warm)  # warm-up (other prompts)
    tok, model = be.tokenizer, be.model
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    tid, fid = w0[0].token_ids["True"], w0[0].token_ids["False"]

    def engine_pass(plan: str = "auto"):
        eng = Engine(be, None, EngineConfig(progress=False, plan=plan))
        g = GpuBusy(DEV).start()
        sync()
        t = time.perf_counter()
        got = eng.run(reqs)
        sync()
        dt = time.perf_counter() - t
        return got, dt, got.stats, g.stop()

    def baseline_pass():
        g = GpuBusy(DEV).start()
        sync()
        t = time.perf_counter()
        ids = tok([r.context for r in reqs])["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        p = [0.0] * len(ids)
        fwd = 0
        with torch.inference_mode():
            for s in range(0, len(order), B):
                idx = order[s : s + B]
                L = max(len(ids[i]) for i in idx)
                x = torch.full((len(idx), L), pad, dtype=torch.long)
                m = torch.zeros((len(idx), L), dtype=torch.long)
                for j, i in enumerate(idx):
                    x[j, L - len(ids[i]) :] = torch.tensor(ids[i])
                    m[j, L - len(ids[i]) :] = 1
                x, m = x.to(DEV), m.to(DEV)
                pos = (m.cumsum(-1) - 1).clamp(min=0)
                lg = (
                    model(input_ids=x, attention_mask=m, position_ids=pos, logits_to_keep=1)
                    .logits[:, -1]
                    .float()
                )
                lp = torch.log_softmax(lg, -1)
                pt = torch.sigmoid(lp[:, tid] - lp[:, fid]).tolist()
                for j, i in enumerate(idx):
                    p[i] = pt[j]
                fwd += x.numel()
        sync()
        return p, time.perf_counter() - t, fwd, g.stop()

    baseline_pass()  # warm-up
    res: dict[str, list] = {"engine": [], "baseline": []}
    for rnd in range(2):
        for name in ("engine", "baseline") if rnd == 0 else ("baseline", "engine"):
            if name == "engine":
                got, dt, st, busy = engine_pass()
                res[name].append((dt, st, busy))
            else:
                pb, dt, fwd_b, busy_b = baseline_pass()
                res[name].append((dt, fwd_b, busy_b))
    forced = {plan: engine_pass(plan) for plan in ("trie", "padded")}
    pe = [
        1 / (1 + torch.exp(torch.tensor(a.logprobs["False"] - a.logprobs["True"])).item())
        for a in got
    ]
    dmax = max(abs(a - b) for a, b in zip(pe, pb))
    flips = sum((a > 0.5) != (b > 0.5) for a, b in zip(pe, pb))
    e_dt, st, e_busy = min(res["engine"], key=lambda x: x[0])
    b_dt, fwd_b, b_busy = min(res["baseline"], key=lambda x: x[0])
    pct = lambda x: f"{x:.0f}%" if x is not None else "-"
    name = torch.cuda.get_device_name() if DEV.startswith("cuda") else "cpu"
    print(f"NAD {model_dir} N={len(reqs)} {name} attention {be.attention} dtype {be.dtype_name}")
    print(
        f"NAD engine   best {e_dt:.2f}s  {len(reqs) / e_dt:,.0f} sent/s  plan "
        f"{'padded' if st.padded_plans else 'trie'}  fwd tokens {st.forwarded_tokens:,} calls "
        f"{st.model_calls}  forward {st.forward_s:.2f}s  host {e_dt - st.forward_s:.2f}s  GPU busy "
        f"{pct(e_busy)}  runs {[round(x[0], 2) for x in res['engine']]}"
    )
    print(
        f"NAD baseline best {b_dt:.2f}s  {len(reqs) / b_dt:,.0f} sent/s  fwd tokens (padded) "
        f"{fwd_b:,} batch {B}  GPU busy {pct(b_busy)}  runs {[round(x[0], 2) for x in res['baseline']]}"
    )
    for plan, (_, dt, fst, busy) in forced.items():
        print(
            f"NAD engine plan={plan:6s} {dt:.2f}s  fwd tokens {fst.forwarded_tokens:,} calls "
            f"{fst.model_calls}  forward {fst.forward_s:.2f}s  GPU busy {pct(busy)}"
        )
    print(
        f"NAD ratio baseline/engine time {b_dt / e_dt:.2f}x; max |dP(True)| {dmax:.2e}, flips "
        f"{flips}; projected 381,300: engine {381300 / (len(reqs) / e_dt) / 60:.1f} min, "
        f"baseline {381300 / (len(reqs) / b_dt) / 60:.1f} min"
    )


if __name__ == "__main__":
    main()
