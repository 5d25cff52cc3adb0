"""Engine vs naive loop on a 4-option multiple-choice workload (SmolLM2-135M-Instruct, CPU).

Workloads (built from negbench's own negation-mini items):
  shared   : a long shared instruction block, then each item's query and 4 short options
  5-shot   : the same, plus one 5-shot block shared by all items (fixed-shot protocol)
  5-shot-lm: per-item 5-shot draws, as lm-eval's sampler makes them (little sharing across items)

Prints, per workload: tokens forwarded by the engine, unique prefix-trie tokens, naive tokens
(every request forwarded alone), engine and naive wall time, and the max |Δ log-likelihood|.

    python benchmarks/engine.py [--items 32] [--model smollm2-135m-instruct] [--skip-naive]
"""

from __future__ import annotations

import argparse
import time

import torch

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.scoring.fewshot import build_context, fewshot_draws
from negbench.core.requests import LoglikelihoodRequest
from negbench.tasks import get_task

INSTRUCTIONS = (
    "You will read an English sentence and four candidate rewrites. Exactly one candidate is the "
    "standard negation of the sentence: it negates the main predicate of the main clause, so that "
    "the proposition becomes logically reversed, and it leaves every other part of the sentence "
    "unchanged. Other candidates may negate a relative clause, a participle phrase or an adverbial "
    "clause instead of the main clause; they may state a contradiction by changing content words "
    "without any negation; or they may paraphrase the sentence so that its meaning does not "
    "change. Read all candidates carefully before answering, and remember that a sentence with "
    "two coordinated predicates is negated by negating the predicates of the main clause.\n\n"
)


def workload(kind: str, n_items: int) -> list[LoglikelihoodRequest]:
    task = get_task("negation-mini")
    spec = task.mode("cloze")
    docs = task.load("test")[:n_items]
    pool = task.load("dev")
    sampler = "lm-eval" if kind == "5-shot-lm" else "fixed"
    k = 0 if kind == "shared" else 5
    reqs = []
    for d, shots in zip(docs, fewshot_draws(docs, pool, k, 1234, False, sampler)):
        r = spec.render(d)
        ctx = build_context(r.query, [spec.render(s) for s in shots], INSTRUCTIONS)
        reqs.extend(LoglikelihoodRequest(ctx, " " + c) for c in r.choices)
    return reqs


def naive(backend, reqs):
    """One request at a time: a full forward of context + continuation, full logits tensor."""
    eng = Engine(backend)
    out = []
    for r in reqs:
        s = eng._prepare([("k", r)])[0]
        with torch.inference_mode():
            lp = torch.log_softmax(backend.model(torch.tensor([s.inputs])).logits[0].float(), -1)
        out.append(sum(lp[p, t].item() for p, t in s.asks))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--items", type=int, default=32)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--skip-naive", action="store_true")
    args = ap.parse_args()
    be = HFBackend(args.model, dtype="float32", device="cpu")
    print(f"model {args.model}  torch threads {torch.get_num_threads()}  items {args.items}")
    print(
        f"{'workload':<10} {'requests':>8} {'forwarded':>9} {'unique':>7} {'naive':>7} "
        f"{'fwd/uniq':>8} {'engine_s':>8} {'naive_s':>8} {'speedup':>7} {'max|d|':>8}"
    )
    for kind in ("shared", "5-shot", "5-shot-lm"):
        reqs = workload(kind, args.items)
        eng = Engine(be, None, EngineConfig(batch_size=args.batch_size, progress=False))
        t = time.perf_counter()
        got = eng.run(reqs)
        te = time.perf_counter() - t
        st = got.stats
        if args.skip_naive:
            tn, diff = float("nan"), float("nan")
        else:
            t = time.perf_counter()
            ref = naive(be, reqs)
            tn = time.perf_counter() - t
            diff = max(abs(a.logprob - b) for a, b in zip(got, ref))
        print(
            f"{kind:<10} {len(reqs):>8} {st.forwarded_tokens:>9} {st.unique_tokens:>7} "
            f"{st.naive_tokens:>7} {st.forwarded_tokens / st.unique_tokens:>8.3f} {te:>8.2f} "
            f"{tn:>8.2f} {tn / te:>7.1f} {diff:>8.1e}"
        )


if __name__ == "__main__":
    main()
