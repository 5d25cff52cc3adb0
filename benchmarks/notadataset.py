"""This is not a Dataset at speed: sentences per second on SmolLM2 (CPU) for a stratified sample,
engine vs a naive loop, and the projected time for all 381,300 sentences.

* engine      : negbench's next_token mode — one NextTokenRequest per sentence; the engine puts
                all sentences in one token trie, forwards the shared prompt prefix (and the
                prefixes sentences of a block share) once, packs the rest into rows with tree
                masks and computes the output head only at each sentence's last position.
* engine-flat : the same requests, prefix sharing off (one padded row per sentence; measured on
                the first --flat sentences).
The sample: a seeded random --sentences of the stratified block sample
``notadataset[sample=N,seed=0]`` (all 11 patterns).  Flat and naive runs take its first sentences
(rates extrapolated).

* naive       : the loop the issue names — " True" and " False" scored as two log-likelihood
                requests per sentence, each a full forward of prompt + answer, one at a time
                (measured on the first --naive sentences, rate extrapolated).

Also checks that the engine's P(True) equals a direct full forward's (max |Δp|) on the naive
subset.  Needs the raw release (../shared/data/not-a-dataset or $NEGBENCH_NOTADATASET).

    python benchmarks/notadataset.py [--sentences 5000] [--naive 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from negbench.backends.registry import open_backend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import NextTokenRequest
from negbench.tasks import get_task

FULL = 381_300


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sentences", type=int, default=5000)
    ap.add_argument("--naive", type=int, default=200, help="sentences timed in the naive loop")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--row-tokens", type=int, default=None, help="engine max_row_tokens (default: engine's)"
    )
    ap.add_argument(
        "--flat", type=int, default=1000, help="sentences timed without sharing (0: skip)"
    )
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N")
    ap.add_argument("--dtype", default="float32", help="float32, bfloat16, float16")
    ap.add_argument(
        "--compare-cpu",
        type=int,
        default=0,
        help="also score the first N sentences on the CPU in float32 and report the "
        "largest |Δ P(True)| and prediction flips against this device/dtype",
    )
    ap.add_argument("--batch-size", type=int, default=None, help="engine rows per forward")
    ap.add_argument("--max-batch-tokens", type=int, default=None, help="engine tokens per forward")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    task = get_task(f"notadataset[sample={args.sentences},seed=0]")
    pool = task.load("eval")  # whole blocks, every pattern present, ≥ --sentences
    keep = set(random.Random(0).sample(range(len(pool)), min(args.sentences, len(pool))))
    docs = [d for i, d in enumerate(pool) if i in keep]
    spec = task.mode("next_token")
    reqs = [NextTokenRequest(spec.render(d).query, ("True", "False")) for d in docs]
    be = open_backend(args.model, dtype=args.dtype, device=args.device)
    where = (
        torch.cuda.get_device_name(be.device)
        if str(be.device).startswith("cuda")
        else f"cpu, torch threads {torch.get_num_threads()}"
    )
    print(
        f"model {args.model} ({args.dtype})  device {where}  sentences {len(reqs)} "
        f"(stratified sample, all 11 patterns: {len({d['pattern_id'] for d in docs})})"
    )
    print(
        f"{'method':<12} {'sentences':>9} {'seconds':>8} {'sent/s':>8} {'tokens fwd':>10} "
        f"{'model calls':>11} {'projected 381,300':>18}"
    )

    def row(name, n, dt, fwd="", calls=""):
        rate = n / dt
        proj = FULL / rate
        print(
            f"{name:<12} {n:>9} {dt:>8.1f} {rate:>8.1f} {fwd!s:>10} {calls!s:>11} "
            f"{proj / 3600:>10.2f} h ({proj / 60:.0f} min)",
            flush=True,
        )

    kw = {
        k: v
        for k, v in (
            ("max_row_tokens", args.row_tokens),
            ("batch_size", args.batch_size),
            ("max_batch_tokens", args.max_batch_tokens),
        )
        if v
    }
    eng = Engine(be, None, EngineConfig(progress=False, **kw))
    t = time.perf_counter()
    got = eng.run(reqs)
    dt = time.perf_counter() - t
    st = got.stats
    row("engine", len(reqs), dt, st.forwarded_tokens, st.model_calls)
    if args.flat:
        flat = Engine(be, None, EngineConfig(progress=False, share_prefix=False, batch_size=64))
        t = time.perf_counter()
        flat_got = flat.run(reqs[: args.flat])
        dt = time.perf_counter() - t
        row(
            "engine-flat",
            len(reqs[: args.flat]),
            dt,
            flat_got.stats.forwarded_tokens,
            flat_got.stats.model_calls,
        )

    # naive: two log-likelihood requests per sentence, one full forward each
    sub = reqs[: args.naive]
    tok = be.tokenizer
    t = time.perf_counter()
    fwd = 0
    max_dp = 0.0
    with torch.inference_mode():
        for r, ans in zip(sub, got):
            ctx = tok(r.context)["input_ids"]
            lls = []
            for cont in (" True", " False"):
                whole = tok(r.context + cont)["input_ids"]
                ids = torch.tensor([whole], device=be.device)
                lp = torch.log_softmax(be.model(ids).logits[0].float(), -1)
                fwd += len(whole)
                lls.append(sum(lp[p - 1, whole[p]].item() for p in range(len(ctx), len(whole))))
            # the same forward's next-token distribution at the prompt's end gives §4.2's P(True)
            p = torch.softmax(lp[len(ctx) - 1], -1)
            pt, pf = p[ans.token_ids["True"]].item(), p[ans.token_ids["False"]].item()
            lt, lf = ans.logprobs["True"], ans.logprobs["False"]
            eng_p = 1 / (1 + torch.exp(torch.tensor(lf - lt)).item())
            max_dp = max(max_dp, abs(pt / (pt + pf) - eng_p))
    dt = time.perf_counter() - t
    row("naive", len(sub), dt, fwd, 2 * len(sub))
    print(f"max |P(True) engine - P(True) direct forward| on {len(sub)} sentences: {max_dp:.2e}")
    if args.compare_cpu and str(be.device) != "cpu":
        n = min(args.compare_cpu, len(reqs))
        ref = Engine(
            open_backend(args.model, dtype="float32", device="cpu"),
            None,
            EngineConfig(progress=False),
        ).run(reqs[:n])

        def p_true(a):
            return 1 / (
                1 + torch.exp(torch.tensor(a.logprobs["False"] - a.logprobs["True"])).item()
            )

        dps = [abs(p_true(a) - p_true(b)) for a, b in zip(got[:n], ref)]
        flips = sum((p_true(a) > 0.5) != (p_true(b) > 0.5) for a, b in zip(got[:n], ref))
        print(
            f"{args.device} {args.dtype} vs cpu float32 on {n} sentences: max |Δ P(True)| "
            f"{max(dps):.2e}, mean {sum(dps) / n:.2e}, prediction flips {flips}"
        )


if __name__ == "__main__":
    main()
