"""Greedy generation with a shared few-shot block: negbench's engine vs transformers' generate.

Workload: the CONDAQA few-shot protocol — test split 1 with the 9 shots of train split 1 (one
fixed block of ~2,000 tokens shared by every prompt), SmolLM2-135M-Instruct, CPU.  Data is read
from ../shared/data/condaqa (or $NEGBENCH_CONDAQA).

Three ways to answer the same prompts:
  engine      : prompts grouped over their prefix tree, the block forwarded once, its KV cache
                continued by every batch (negbench's default)
  engine-flat : the same greedy loop, every prompt forwarded in full (--no-prefix-sharing)
  hf-generate : transformers' model.generate, left-padded batches (what lm-eval does)

Prints tokens forwarded, wall time, and whether the three agree on every output.

    python benchmarks/generation.py [--items 16] [--max-tokens 16] [--batch 8]
"""

from __future__ import annotations

import argparse
import time

import torch

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.scoring.fewshot import build_context, fewshot_draws
from negbench.core.requests import GenerationRequest
from negbench.tasks import get_task


def workload(n_items: int, max_tokens: int) -> list[GenerationRequest]:
    task = get_task("condaqa-split1")
    spec = task.mode("generate")
    docs = task.load("test1")[:n_items]
    pool = task.load("shots1")
    out = []
    for d, shots in zip(docs, fewshot_draws(docs, pool, 9, 1234, False, "fixed")):
        r = spec.render(d)
        ctx = build_context(
            r.query,
            [spec.render(s) for s in shots],
            task.description("generate"),
            task.target_delimiter,
            task.fewshot_delimiter,
        )
        out.append(GenerationRequest(ctx, ("\n", "###"), max_tokens))
    return out


def hf_generate(be: HFBackend, reqs: list[GenerationRequest], batch: int) -> tuple[list[str], int]:
    tok = be.tokenizer
    texts, forwarded = [], 0
    for s in range(0, len(reqs), batch):
        enc = [be.encode(r.context) for r in reqs[s : s + batch]]
        L = max(map(len, enc))
        ids = torch.full((len(enc), L), tok.pad_token_id)
        att = torch.zeros((len(enc), L), dtype=torch.long)
        for b, e in enumerate(enc):
            ids[b, L - len(e) :] = torch.tensor(e)
            att[b, L - len(e) :] = 1
        forwarded += sum(map(len, enc))
        with torch.inference_mode():
            g = be.model.generate(
                input_ids=ids,
                attention_mask=att,
                do_sample=False,
                max_new_tokens=reqs[0].max_tokens,
                pad_token_id=tok.pad_token_id,
                stop_strings=list(reqs[0].stop),
                tokenizer=tok,
            )
        for b in range(len(enc)):
            new = [t for t in g[b, L:].tolist() if t != tok.pad_token_id]
            if tok.eos_token_id in new:
                new = new[: new.index(tok.eos_token_id)]
            text = be.decode(new)
            for stop in reqs[0].stop:
                text = text.split(stop)[0]
            texts.append(text)
    return texts, forwarded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    args = ap.parse_args()
    be = HFBackend(args.model, dtype="float32", device="cpu")
    reqs = workload(args.items, args.max_tokens)
    rows = []
    outs = {}
    for name, share in (("engine", True), ("engine-flat", False)):
        eng = Engine(
            be, None, EngineConfig(gen_batch_size=args.batch, share_prefix=share, progress=False)
        )
        t0 = time.perf_counter()
        res = eng.run(reqs)
        dt = time.perf_counter() - t0
        outs[name] = [r.text for r in res]
        rows.append((name, res.stats.forwarded_tokens, dt))
    t0 = time.perf_counter()
    outs["hf-generate"], fwd = hf_generate(be, reqs, args.batch)
    rows.append(("hf-generate", fwd, time.perf_counter() - t0))
    print(
        f"{len(reqs)} prompts, {sum(len(be.encode(r.context)) for r in reqs) // len(reqs)} "
        f"tokens each on average, up to {args.max_tokens} new tokens, batch {args.batch}"
    )
    print(f"{'way':<12} {'prompt tokens forwarded':>24} {'wall_s':>8} {'speedup vs hf':>14}")
    base = rows[-1][2]
    for name, f, dt in rows:
        print(f"{name:<12} {f:>24} {dt:>8.1f} {base / dt:>14.2f}")
    same_flat = outs["engine"] == outs["engine-flat"]
    same_hf = sum(a == b for a, b in zip(outs["engine"], outs["hf-generate"]))
    print(
        f"engine == engine-flat on every output: {same_flat}; "
        f"engine == hf-generate on {same_hf}/{len(reqs)} outputs"
    )


if __name__ == "__main__":
    main()
