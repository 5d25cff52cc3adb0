"""Requests per second through the OpenAI-compatible backend against a local vLLM server, at
several concurrencies, with the prefix-cache hit rate the server reports (``/metrics``).

Workload: a KoNUBench 5-shot slice (task ``konubench``, cloze mode: log-likelihood of each of
the four options after a 5-shot context), i.e. what ``negbench run --model openai-compatible:…
--tasks konubench --shots 5 --limit N`` sends; and the same prompts as short greedy
generations (8 tokens), where vLLM's prefix cache can share the few-shot block.  Note: vLLM
does not use its prefix cache for requests that ask for prompt log-probabilities, so the
scoring rows show a 0 % hit rate by design; negbench's own dedup is what saves work there.

    NEGBENCH_VLLM_URL=http://127.0.0.1:8011 python benchmarks/api.py --limit 8
    python benchmarks/api.py --limit 8        # starts its own server (NEGBENCH_VLLM_PYTHON)

Each configuration runs with no response cache, so every request reaches the server, and with
its own few-shot draws (seed + a per-row offset), so no row finds prompts an earlier row left in
the server's prefix cache: the hit rate is what sharing inside one workload gives.
"""

from __future__ import annotations

import argparse
import os
import re
import time
import urllib.request

from negbench.backends.api_common import TransportConfig
from negbench.backends.openai_api import OpenAIBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import GenerationRequest
from negbench.evaluation.runner import RunConfig, build_requests, prepare


def metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for name in (
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:prompt_tokens_total",
    ):
        m = re.search(r"^" + re.escape(name) + r"\{[^}]*\} ([0-9.e+]+)$", text, re.M)
        out[name.split(":")[1]] = float(m.group(1)) if m else float("nan")
    return out


def workload(limit: int, shots: int, seed: int):
    cfg = RunConfig(
        model="x", tasks=["konubench"], modes=["cloze"], shots=[shots], seeds=[seed], limit=limit
    )
    plan = prepare(cfg)
    reqs = []
    for data in plan.units:
        _, per = build_requests(data, None, cfg)
        reqs += [r for rs in per for r in rs]
    gens = list(dict.fromkeys(GenerationRequest(r.context, ("\n",), 8) for r in reqs))
    return reqs, gens


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--shots", type=int, default=5)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--concurrency", default="1,4,16")
    p.add_argument(
        "--workloads",
        default="loglikelihood,generate",
        help="which of loglikelihood, generate to run (default: both)",
    )
    a = p.parse_args()
    server = None
    url = os.environ.get("NEGBENCH_VLLM_URL")
    if not url:
        from negbench.backends.vllm_server import VLLMServer, model_folder

        server = VLLMServer(
            model_folder("smollm2-135m-instruct"),
            name="smol",
            extra_args=["--dtype", "float32", "--gpu-memory-utilization", "0.25"],
        ).start()
        url = server.url
    try:
        scored, gens = workload(a.limit, a.shots, a.seed)
        print(
            f"server {url}; KoNUBench cloze {a.shots}-shot, {a.limit} items: "
            f"{len(scored)} log-likelihood requests, {len(gens)} generation prompts per row "
            "(fresh few-shot draws per row)"
        )
        print(
            f"{'workload':<14} {'conc.':>5} {'requests':>8} {'wall s':>7} {'req/s':>6} "
            f"{'prompt tok':>10} {'prefix-cache hit':>16}"
        )
        chosen = a.workloads.split(",")
        row = 0
        for name in ("loglikelihood", "generate(8)"):
            if name.split("(")[0] not in chosen:
                continue
            for c in [int(x) for x in a.concurrency.split(",")]:
                row += 1
                scored, gens = workload(a.limit, a.shots, a.seed + 1000 * row)
                reqs = scored if name == "loglikelihood" else gens
                be = OpenAIBackend(
                    f"openai-compatible:{url}/v1", transport=TransportConfig(concurrency=c)
                )
                eng = Engine(be, None, EngineConfig(progress=False))
                m0 = metrics(url)
                t0 = time.perf_counter()
                eng.run(reqs)
                wall = time.perf_counter() - t0
                m1 = metrics(url)
                q = m1["prefix_cache_queries_total"] - m0["prefix_cache_queries_total"]
                h = m1["prefix_cache_hits_total"] - m0["prefix_cache_hits_total"]
                pt = m1["prompt_tokens_total"] - m0["prompt_tokens_total"]
                hit = f"{100 * h / q:.1f} %" if q else "n/a"
                print(
                    f"{name:<14} {c:>5} {len(reqs):>8} {wall:>7.1f} {len(reqs) / wall:>6.2f} "
                    f"{pt:>10.0f} {hit:>16}",
                    flush=True,
                )
                be.close()
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
