"""The engine beside other work on the same CPU: a fixed workload timed quiet and beside one and
two busy processes, with torch's default threads (before: a fixed count, all cores) and with
the engine's own choice (after: ``threads="auto"``, the cores other processes leave free,
looked at again during the run), and with one thread for reference.

Why: laptops, shared servers and CI runners are rarely idle.  A forward call on N threads ends
when its slowest thread does, and a thread that shares its core with a busy process is slow;
on a 2-core machine beside one busy process the engine took 2.40 s with torch's 2 threads and
1.00 s with 1 (0.69 s quiet).

Workload: This is not a Dataset next-token P(True), ``notadataset[sample=N,seed=0]``, the
requests exactly as ``negbench run`` builds them, scored by the engine with no cache; the model
is SmolLM2-135M's tokenizer and vocabulary on a two-layer width-16 random model (``--model
tiny``, made once under the negbench cache, as ``benchmarks/engine_host.py``) or the embedded
SmolLM2-135M itself (``--model smollm2``).  Busy processes are spawned Python loops that stop
by themselves after ``--busy-seconds`` (and are terminated when their condition ends).

Target: beside other work a run takes at most 1.3 × its quiet time / the share of the cores
left to it (b busy processes on c cores leave c − b cores, or c / (b + 1) of them when b ≥ c),
and never longer than the same run with one thread.  Times are the median of ``--repeat`` runs,
the variants alternating.  The data: ``$NEGBENCH_DATA`` (a tree of releases) or
``../shared/data``.

    python benchmarks/shared_cpu.py                     # 3,000 sentences, tiny model, 3 repeats
    python benchmarks/shared_cpu.py --n 500 --repeat 1  # a quick look
    python benchmarks/shared_cpu.py --model smollm2 --n 300
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path


def _busy(deadline: float) -> None:
    """A busy process that stops by itself at ``deadline`` (time.time())."""
    x = 0
    while time.time() < deadline:
        x += 1


class Busy:
    """``n`` busy processes for the length of a ``with`` block (at most ``seconds``)."""

    def __init__(self, n: int, seconds: float):
        self.n, self.seconds = n, seconds
        self.procs: list = []

    def __enter__(self) -> "Busy":
        ctx = mp.get_context("spawn")
        deadline = time.time() + self.seconds
        self.procs = [
            ctx.Process(target=_busy, args=(deadline,), daemon=True) for _ in range(self.n)
        ]
        for p in self.procs:
            p.start()
        time.sleep(0.5 if self.n else 0)  # started and spinning
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(5)


def fair_share(cores: int, busy: int) -> float:
    """The share of ``cores`` a run gets beside ``busy`` busy processes."""
    left = cores - busy if busy < cores else cores / (busy + 1)
    return left / cores


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=3000, help="sentences (requests) in the workload")
    ap.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant and condition")
    ap.add_argument("--busy", default="0,1,2", help="busy processes per condition")
    ap.add_argument("--busy-seconds", type=float, default=300.0, help="busy loops' time limit")
    args = ap.parse_args()

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    import torch

    from engine_host import tiny_model, workload_requests
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.core.threads import allowed_cores

    name = "smollm2-135m-instruct"
    folder = tiny_model(name) if args.model == "tiny" else name
    default_threads = torch.get_num_threads()  # torch's fixed default, before any change
    be = HFBackend(folder, dtype="float32", device="cpu")
    w = dict(task=f"notadataset[sample={args.n},seed=0]", mode="next_token", shots=0, model=name)
    reqs = workload_requests(w, be)
    cores = allowed_cores()
    print(
        f"{len(reqs)} requests, model {args.model}; {cores} usable core(s) of "
        f"{os.cpu_count()}; torch default threads {default_threads}; load average "
        f"{os.getloadavg()[0]:.2f} at the start (a shared machine: numbers are noisy)",
        flush=True,
    )
    Engine(be, None, EngineConfig(progress=False)).run(reqs[:64])  # warm-up

    def timed(variant: str) -> tuple[float, str]:
        if variant == "auto":
            torch.set_num_threads(default_threads)
            eng = Engine(be, None, EngineConfig(progress=False, threads="auto"))
        else:
            torch.set_num_threads(default_threads if variant == "default" else 1)
            eng = Engine(be, None, EngineConfig(progress=False))
        t0 = time.perf_counter()
        eng.run(reqs)
        dt = time.perf_counter() - t0
        chosen = "→".join(str(x) for x in getattr(eng.threads, "history", [])) or str(
            torch.get_num_threads()
        )
        torch.set_num_threads(default_threads)
        return dt, chosen

    variants = ("default", "one", "auto")
    results: dict[int, dict[str, list[float]]] = {}
    chosen: dict[int, set[str]] = {}
    for b in [int(x) for x in args.busy.split(",")]:
        got: dict[str, list[float]] = {v: [] for v in variants}
        seen: set[str] = set()
        with Busy(b, args.busy_seconds):
            for _ in range(args.repeat):
                for v in variants:
                    dt, ch = timed(v)
                    got[v].append(dt)
                    if v == "auto":
                        seen.add(ch)
        results[b] = got
        chosen[b] = seen
        print(
            f"  busy {b}: " + ", ".join(f"{v} {statistics.median(got[v]):.2f} s" for v in variants),
            flush=True,
        )

    quiet = statistics.median(results[0]["auto"]) if 0 in results else None
    head = (
        f"{'busy':>4}  {'share':>5}  {'before: default':>15}  {'1 thread':>8}  "
        f"{'after: auto':>11}  {'threads':>7}  {'target':>7}  {'ok':>3}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    ok_all = True
    for b, got in results.items():
        share = fair_share(cores, b)
        before = statistics.median(got["default"])
        one = statistics.median(got["one"])
        after = statistics.median(got["auto"])
        target = 1.3 * quiet / share if quiet else float("nan")
        ok = after <= target and after <= one * 1.05  # 5 %: the noise of a shared machine
        ok_all &= ok
        print(
            f"{b:>4}  {share:>5.2f}  {before:>13.2f} s  {one:>6.2f} s  {after:>9.2f} s  "
            f"{'/'.join(sorted(chosen[b])):>7}  {target:>5.2f} s  {'yes' if ok else 'NO':>3}"
        )
    print(
        "\nshare: the cores left to the run; target: 1.3 × quiet (auto) / share; ok: after ≤ "
        "target and ≤ 1 thread (+5 %)"
    )
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
