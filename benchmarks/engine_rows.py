"""Engine CPU time per row length, on the requests of a saved run (one process, one model load).

Loads the model once, then scores the same log-likelihood requests with each packing setting in
turn, repeated and interleaved (this machine's speed drifts by ±10% between runs, so the best of
several interleaved rounds is what compares).  ``auto`` is the engine's planner (``Engine._plan``).

    negbench run --model gemma3-270m --tasks konubench --modes cloze --shots 0 --limit 40 \\
        --dtype float32 --threads 2 --no-cache --output /tmp/kb0
    python benchmarks/engine_rows.py /tmp/kb0 --rows auto,256,512,1024,2048 --repeat 2

Prints CPU s, wall s and forward calls per setting and round, then the best CPU s per setting and
the max |Δ log-likelihood| against the first setting.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import LoglikelihoodRequest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a negbench run folder of a multiple-choice task (its samples/)")
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("--rows", default="auto,512,2048", help="comma-separated: auto or a length")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--delimiter", default=" ", help="target delimiter of the task's mode")
    args = ap.parse_args()
    samples = [
        json.loads(x)
        for f in sorted(Path(args.run, "samples").glob("*.jsonl"))
        for x in f.read_text().splitlines()
        if x.strip()
    ]
    reqs = [
        LoglikelihoodRequest(s["context"], args.delimiter + c)
        for s in samples
        for c in s["choices"]
    ]
    be = HFBackend(args.model, dtype="float32", device="cpu", threads=args.threads)
    names = args.rows.split(",")
    configs = {n: ({} if n == "auto" else {"max_row_tokens": int(n)}) for n in names}
    Engine(be, config=EngineConfig(progress=False)).run(reqs[:4])  # warm-up
    best: dict[str, float] = {}
    first: list[float] | None = None
    worst = 0.0
    for rnd in range(args.repeat):
        for n in names:
            eng = Engine(be, config=EngineConfig(progress=False, **configs[n]))
            t, w = time.process_time(), time.perf_counter()
            out = eng.run(reqs)
            cpu, wall = time.process_time() - t, time.perf_counter() - w
            lls = [o.logprob for o in out]
            first = first or lls
            worst = max([worst] + [abs(a - b) for a, b in zip(lls, first)])
            best[n] = min(best.get(n, cpu), cpu)
            print(
                f"round {rnd + 1} rows {n:>5}: {cpu:7.1f} CPU s {wall:7.1f} wall s "
                f"{eng.stats.model_calls:4d} calls",
                flush=True,
            )
    print(
        f"{len(reqs)} requests; best CPU s: "
        + ", ".join(f"{n} {best[n]:.1f}" for n in names)
        + f"; max |Δ log-likelihood| between settings {worst:.2e}"
    )


if __name__ == "__main__":
    main()
