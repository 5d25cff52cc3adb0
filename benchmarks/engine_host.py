"""The engine's host time per request: everything it does outside the model's forward calls
(tokenisation, trie, plan, batch and mask preparation, reading results back), measured with a
tiny random model of a real vocabulary, whose forward is nearly free.

Why: on a GPU the forward of a packed batch takes milliseconds and everything else the engine
does per request must hide behind it; a CPU with a tiny model shows how much host work there is,
on any machine.  The model has the real tokenizer, vocabulary and layer types (SmolLM2 49,152,
Gemma 3 262,144 with its sliding window), two layers of width 16 and random weights (the output
head over 262k words is then the forward's main cost, and it is inside the forward).

Workloads (the requests exactly as ``negbench run`` builds them):

* ``konubench``:   KoNUBench cloze 0-shot, all 1,284 items (5,101 log-likelihood requests),
                   Gemma 3 270M's tokenizer;
* ``notadataset``: This is not a Dataset next-token P(True), ``notadataset[sample=20000,seed=0]``
                   (20,000 requests, SmolLM2's chat prompt), SmolLM2-135M's tokenizer.

Host time = the engine's total (``Engine.run``, tokenisation included) minus the time inside the
backend's forward calls, timed from outside by wrapping the backend's forward methods
(``forward_rows`` and, where the engine has them, ``forward_batch`` / ``forward_padded``), so the
script measures old and new engines alike: point ``PYTHONPATH`` at another checkout's ``src``.
Wall and process (CPU) time are both reported; process time is the robust one on a busy machine
(the forward runs on ``--threads`` torch threads, 1 by default; the engine's prefetch thread is
off unless ``--prefetch``, so every host step runs on the timed thread).

    python benchmarks/engine_host.py                               # both workloads, best of 2
    python benchmarks/engine_host.py --workloads notadataset --repeat 3 --save /tmp/after.json
    PYTHONPATH=/tmp/before/src python benchmarks/engine_host.py --compare /tmp/after.json

``--save`` writes every run's answers; ``--compare`` prints the max |Δ| of log-probabilities
against such a file (the same tiny model: its weights are made once, seeded, under
``$NEGBENCH_CACHE/bench-tiny``).  ``--profile N`` prints the N costliest functions of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

WORKLOADS = {
    "konubench": dict(task="konubench", mode="cloze", shots=0, model="gemma3-270m"),
    "notadataset": dict(
        task="notadataset[sample=20000,seed=0]",
        mode="next_token",
        shots=0,
        model="smollm2-135m-instruct",
    ),
}
TINY = dict(
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
)


def tiny_model(name: str) -> str:
    """A two-layer, width-16 random model with ``name``'s tokenizer, vocabulary and layer
    types, made once (seeded) under the negbench cache."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from negbench.backends.hf import HFBackend

    try:  # this layout, or the one before it (to measure "before")
        from negbench.backends.sources import cache_root, converted_gguf_folder, resolve
    except ImportError:
        from negbench.models import cache_root, converted_gguf_folder, resolve
    src = resolve(name)
    folder = converted_gguf_folder(src) if src.gguf_file else Path(src.folder)
    if src.gguf_file and not (folder / ".complete").is_file():  # convert once (shared cache)
        HFBackend(name, dtype="float32", device="cpu", threads=1)
    dst = cache_root() / "bench-tiny" / name
    if (dst / "model.safetensors").is_file():
        return str(dst)
    dst.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():
        if f.name not in ("model.safetensors", ".complete") and f.is_file():
            (dst / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(TINY)
    if cfg.get("layer_types"):  # keep one layer of each kind (Gemma 3)
        cfg["layer_types"] = ["sliding_attention", "full_attention"]
    (dst / "config.json").write_text(json.dumps(cfg))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(dst), dtype=torch.float32)
    model.save_pretrained(dst)
    return str(dst)


def workload_requests(w: dict, backend) -> list:
    try:
        from negbench.evaluation.runner import RunConfig, build_requests, plan_units
    except ImportError:
        from negbench.runner import RunConfig, build_requests, plan_units
    cfg = RunConfig(model=w["model"], tasks=[w["task"]], modes=[w["mode"]], shots=[w["shots"]])
    reqs = []
    for unit in plan_units(cfg):
        _, per_sample = build_requests(unit, backend, cfg)
        reqs.extend(r for rs in per_sample for r in rs)
    return reqs


class Timed:
    """Wraps a backend's methods with wall and process-time counters (from outside: old and
    new engines are measured alike)."""

    FORWARD = ("forward_rows", "forward_batch", "forward_padded")
    TOKENIZE = ("encode_batch",)

    def __init__(self, backend):
        self.totals: dict[str, list[float]] = {}
        for group, names in (("forward", self.FORWARD), ("tokenize", self.TOKENIZE)):
            for name in names:
                if hasattr(backend, name):
                    setattr(backend, name, self._wrap(group, getattr(backend, name)))

    def _wrap(self, group: str, fn):
        def timed(*a, **k):
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                t = self.totals.setdefault(group, [0.0, 0.0, 0])
                t[0] += time.perf_counter() - w
                t[1] += time.process_time() - c
                t[2] += 1

        return timed

    def reset(self) -> None:
        self.totals.clear()

    def get(self, group: str) -> tuple[float, float, int]:
        w, c, n = self.totals.get(group, (0.0, 0.0, 0))
        return w, c, n


def answers_of(out) -> list:
    vals = []
    for a in out:
        if hasattr(a, "logprobs"):
            vals.append([a.logprobs[k] for k in sorted(a.logprobs)])
        else:
            vals.append([a.logprob])
    return vals


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workloads", default="konubench,notadataset")
    ap.add_argument("--repeat", type=int, default=2, help="runs per workload; the best is kept")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the forward")
    ap.add_argument("--limit", type=int, default=None, help="first N requests only (a quick look)")
    ap.add_argument("--save", help="write the answers of each workload to this JSON file")
    ap.add_argument("--compare", help="max |Δ| of the answers against a --save file")
    ap.add_argument("--profile", type=int, default=0, help="cProfile one run; print N functions")
    ap.add_argument(
        "--prefetch",
        action="store_true",
        help="let the engine prepare the next call on its worker thread (where it has "
        "one); off by default, so all host work is on the timed thread",
    )
    args = ap.parse_args()
    import negbench
    import torch
    from negbench.backends.hf import HFBackend

    try:
        from negbench.core.engine import Engine, EngineConfig
    except ImportError:
        from negbench.engine import Engine, EngineConfig
    print(
        f"negbench from {Path(negbench.__file__).parent}; torch {torch.__version__}; "
        f"{args.threads} torch thread(s); load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} cores",
        flush=True,
    )
    extra = {"prefetch": args.prefetch} if hasattr(EngineConfig(), "prefetch") else {}
    saved: dict[str, list] = {}
    other = json.loads(Path(args.compare).read_text()) if args.compare else {}
    table = []
    for name in args.workloads.split(","):
        w = WORKLOADS[name]
        folder = tiny_model(w["model"])
        be = HFBackend(folder, dtype="float32", device="cpu", threads=args.threads)
        reqs = workload_requests(w, be)[: args.limit]
        timed = Timed(be)
        Engine(be, None, EngineConfig(progress=False, **extra)).run(reqs[:64])  # warm-up
        best = None
        for rnd in range(args.repeat):
            timed.reset()
            eng = Engine(be, None, EngineConfig(progress=False, **extra))
            wall, cpu = time.perf_counter(), time.process_time()
            out = eng.run(reqs)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            fw, fc, calls = timed.get("forward")
            tw, tc, _ = timed.get("tokenize")
            st = out.stats
            row = dict(
                workload=name,
                requests=len(reqs),
                wall=wall,
                cpu=cpu,
                fwd_wall=fw,
                fwd_cpu=fc,
                tok_wall=tw,
                tok_cpu=tc,
                calls=calls,
                forwarded=st.forwarded_tokens,
                naive=st.naive_tokens,
            )
            print(
                f"{name} round {rnd + 1}: engine {wall:.2f} s wall / {cpu:.2f} CPU s, forward "
                f"{fw:.2f} s / {fc:.2f} CPU s in {calls} calls, tokenisation {tw:.2f} s / "
                f"{tc:.2f} CPU s; host {1e6 * (wall - fw) / len(reqs):.1f} µs wall, "
                f"{1e6 * (cpu - fc) / len(reqs):.1f} µs CPU per request",
                flush=True,
            )
            if best is None or cpu - fc < best["cpu"] - best["fwd_cpu"]:
                best = row
        table.append(best)
        saved[name] = answers_of(out)
        if name in other and len(other[name]) != len(saved[name]):
            print(
                f"{name}: not compared with {args.compare}: {len(other[name])} answers there, "
                f"{len(saved[name])} here (the task's subset rule chose other records)"
            )
        elif name in other:
            d = max(abs(a - b) for x, y in zip(saved[name], other[name]) for a, b in zip(x, y))
            print(
                f"{name}: max |Δ log-prob| against {args.compare}: {d:.2e} "
                f"({len(other[name])} answers there, {len(saved[name])} here)"
            )
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            eng = Engine(be, None, EngineConfig(progress=False, **extra))
            prof.runcall(eng.run, reqs)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.profile)
        del be
    print(f"\nload average {os.getloadavg()[0]:.2f}; best run per workload (by host CPU time):")
    head = [
        "workload",
        "requests",
        "engine s",
        "engine CPU s",
        "forward s",
        "forward CPU s",
        "tokenise CPU s",
        "calls",
        "tokens fwd",
        "host µs/req",
        "host CPU µs/req",
    ]
    rows = [
        [
            r["workload"],
            f"{r['requests']:,}",
            f"{r['wall']:.2f}",
            f"{r['cpu']:.2f}",
            f"{r['fwd_wall']:.2f}",
            f"{r['fwd_cpu']:.2f}",
            f"{r['tok_cpu']:.2f}",
            str(r["calls"]),
            f"{r['forwarded']:,}",
            f"{1e6 * (r['wall'] - r['fwd_wall']) / r['requests']:.1f}",
            f"{1e6 * (r['cpu'] - r['fwd_cpu']) / r['requests']:.1f}",
        ]
        for r in table
    ]
    wd = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    for line in [head] + rows:
        print("  ".join(c.ljust(n) for c, n in zip(line, wd)))
    if args.save:
        Path(args.save).write_text(json.dumps(saved))


if __name__ == "__main__":
    sys.exit(main())
