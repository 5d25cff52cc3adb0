"""negbench against lm-evaluation-harness on the same log-likelihood workload, side by side.

Each implementation runs in its own child process (the order alternates with ``--repeat``), and
the parent reads each child's CPU time and peak RSS from ``os.wait4``:

* negbench: ``negbench run`` of the workload (no cache), its engine and transformers backend;
* lm-eval:  ``HFLM.loglikelihood`` (lm-evaluation-harness 0.4, batch ``--batch``) on exactly the
            requests negbench scored — the (context, target delimiter + choice) pairs a
            ``multiple_choice`` task sends — on negbench's converted copy of the same weights;
* padded:   for next-token workloads (This is not a Dataset's P(True)), instead of lm-eval: the
            simplest strong baseline, plain padded batches of ``--batch`` length-sorted prompts,
            left padding, ``logits_to_keep=1`` (30 lines of transformers).

Printed per implementation: wall s (process start and model load included), CPU s (user + sys),
peak RSS, *score s* (the scoring alone: ``Engine.run`` for negbench, the ``loglikelihood`` call
for lm-eval, the batches for the padded baseline), *forward s* (negbench: time inside model
forward calls — CUDA events on a GPU, timers on a CPU — so score s − forward s is its host
time), tokens forwarded, positions whose output head was computed, FLOPs (2 × non-embedding
parameters × forwarded tokens + 2 × head parameters × head positions; attention not counted)
and the FLOP rate: per CPU second on a CPU; on a GPU per scoring second, as a fraction of the
GPU's dense bf16 peak (``--peak-tflops`` overrides the table), beside the GPU-busy percent
while scoring (``nvidia-smi`` sampled every 250 ms, else ``torch.cuda.utilization()``).  Then
the per-request max |Δ log-likelihood| and whether acc / acc_norm predictions agree on every
sample (next-token: max |Δ log P(label)| and P(True) > 0.5 flips).

    python benchmarks/lm_eval_side_by_side.py                            # KoNUBench cloze, 0-shot, 40 items
    python benchmarks/lm_eval_side_by_side.py --shots 5 --seed 1234      # the 5-shot workload
    python benchmarks/lm_eval_side_by_side.py --device cuda --dtype bfloat16   # on a GPU
    python benchmarks/lm_eval_side_by_side.py --model smollm2 --task "notadataset[sample=20000,seed=0]" \
        --mode next_token --limit 20000 --batch 512 --f64-check 0            # vs the padded baseline

Needs ``pip install 'lm_eval[hf]==0.4.13'`` and the KoNUBench data (``../shared/data`` or
``NEGBENCH_DATA``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: Dense bf16 tensor peak, TFLOP/s, by GPU name (datasheets; no sparsity).  --peak-tflops overrides.
BF16_PEAK = {
    "H200": 989.0,
    "H100 SXM": 989.0,
    "H100 80GB HBM3": 989.0,
    "H100 NVL": 835.0,
    "H100 PCIe": 756.0,
    "H100": 756.0,
    "GH200": 989.0,
    "A100": 312.0,
    "L40S": 362.0,
    "L40": 181.0,
    "L4": 121.0,
    "A10": 125.0,
    "RTX 4090": 165.0,
    "A6000": 155.0,
}


def run_child(argv: list[str]) -> tuple[dict, float, float, float]:
    """Run a child; its RESULT line, wall s, CPU s and peak RSS (MB), from its own rusage."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"child failed ({' '.join(argv[:4])} …): exit {os.waitstatus_to_exitcode(status)}")
    lines = [x for x in out.splitlines() if x.startswith("RESULT ")]
    res = json.loads(lines[-1][len("RESULT ") :]) if lines else {}
    return res, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


class GpuBusy:
    """GPU utilisation sampled every 250 ms while running (``nvidia-smi``, else
    ``torch.cuda.utilization()``); ``stop()`` returns the mean percent (None without a GPU)."""

    def __init__(self, device: str):
        self.on = device.startswith("cuda")
        self.samples: list[float] = []
        self.proc = None
        self.thread = None
        self.halt = threading.Event()

    def start(self) -> "GpuBusy":
        if not self.on:
            return self
        index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                [
                    "nvidia-smi",
                    "-i",
                    index,
                    "--query-gpu=utilization.gpu",
                    "--format=csv,noheader,nounits",
                    "-lms",
                    "250",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            self.thread = threading.Thread(target=self._read, daemon=True)
        else:
            self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                pass

    def _poll(self) -> None:
        import torch

        while not self.halt.wait(0.25):
            try:
                self.samples.append(float(torch.cuda.utilization()))
            except Exception:
                return

    def stop(self) -> float | None:
        if not self.on:
            return None
        self.halt.set()
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
        if self.thread is not None:
            self.thread.join(timeout=2)
        return sum(self.samples) / len(self.samples) if self.samples else None


def device_name(device: str) -> str:
    if not device.startswith("cuda"):
        return "cpu"
    import torch

    return torch.cuda.get_device_name()


# -- children ------------------------------------------------------------------------------------
def child_negbench(spec: dict) -> None:
    """``negbench run`` (its own CLI, in this process) with the GPU sampled while the engine
    scores."""
    from negbench import cli
    from negbench.core.engine import Engine

    busy: list = []
    real = Engine.run

    def sampled(self, *a, **k):
        g = GpuBusy(spec["device"]).start()
        try:
            return real(self, *a, **k)
        finally:
            busy.append(g.stop())

    Engine.run = sampled
    code = cli.main(spec["argv"])
    if code:
        sys.exit(code)
    vals = [b for b in busy if b is not None]
    print(
        "RESULT "
        + json.dumps(
            {
                "gpu_busy": sum(vals) / len(vals) if vals else None,
                "device_name": device_name(spec["device"]),
            }
        )
    )


def child_lm_eval(spec: dict) -> None:
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    torch.set_num_threads(spec["threads"])
    lm = HFLM(
        pretrained=spec["weights"],
        device=spec["device"],
        dtype=spec["dtype"],
        batch_size=spec["batch"],
    )
    counts = {"tokens": 0}

    def count(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        counts["tokens"] += int(ids.numel())

    lm.model.register_forward_pre_hook(count, with_kwargs=True)
    reqs = json.loads(Path(spec["requests"]).read_text())
    inst = [
        Instance(request_type="loglikelihood", doc={}, arguments=(c, k), idx=i)
        for i, (c, k) in enumerate(reqs)
    ]
    g = GpuBusy(spec["device"]).start()
    t = time.perf_counter()
    out = lm.loglikelihood(inst, disable_tqdm=True)
    score_s = time.perf_counter() - t
    print(
        "RESULT "
        + json.dumps(
            {
                "ll": [float(x[0]) for x in out],
                "forwarded": counts["tokens"],
                "head_positions": counts["tokens"],  # logits everywhere
                "score_s": score_s,
                "gpu_busy": g.stop(),
                "device_name": device_name(spec["device"]),
            }
        )
    )


def child_padded(spec: dict) -> None:
    """Plain padded batches: ``batch`` prompts sorted by length, left padding, logits at the
    last position only (``logits_to_keep=1``), float32 log-softmax; log P of each label's token."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(spec["threads"])
    dev = spec["device"]
    tok = AutoTokenizer.from_pretrained(spec["weights"])
    model = (
        AutoModelForCausalLM.from_pretrained(spec["weights"], dtype=getattr(torch, spec["dtype"]))
        .to(dev)
        .eval()
    )
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    items = json.loads(Path(spec["requests"]).read_text())  # [context, [label ids]]

    def sync():
        if dev.startswith("cuda"):
            torch.cuda.synchronize()

    def score(ctxs: list[str]):
        ids = tok(ctxs)["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list = [None] * len(ids)
        fwd = 0
        with torch.inference_mode():
            for s in range(0, len(order), spec["batch"]):
                idx = order[s : s + spec["batch"]]
                L = max(len(ids[i]) for i in idx)
                x = torch.full((len(idx), L), pad, dtype=torch.long)
                m = torch.zeros((len(idx), L), dtype=torch.long)
                for j, i in enumerate(idx):
                    x[j, L - len(ids[i]) :] = torch.tensor(ids[i])
                    m[j, L - len(ids[i]) :] = 1
                x, m = x.to(dev), m.to(dev)
                pos = (m.cumsum(-1) - 1).clamp(min=0)
                lg = model(
                    input_ids=x, attention_mask=m, position_ids=pos, logits_to_keep=1
                ).logits[:, -1]
                lp = torch.log_softmax(lg.float(), -1).cpu()
                for j, i in enumerate(idx):
                    out[i] = [float(lp[j, t]) for t in items[i][1]]
                fwd += x.numel()
        return out, fwd

    score([c for c, _ in items[: min(len(items), spec["batch"])]])  # warm-up (kernels, allocator)
    sync()
    g = GpuBusy(dev).start()
    t = time.perf_counter()
    lps, fwd = score([c for c, _ in items])
    sync()
    score_s = time.perf_counter() - t
    print(
        "RESULT "
        + json.dumps(
            {
                "lp": lps,
                "forwarded": fwd,
                "head_positions": len(items),
                "score_s": score_s,
                "gpu_busy": g.stop(),
                "device_name": device_name(dev),
            }
        )
    )


def f64_check(
    weights: str,
    samples: list[dict],
    nb: list[float],
    le: list[float],
    delim: str,
    n: int,
    threads: int,
) -> None:
    """Where negbench and lm-eval differ most, which is nearer the exact value?  A float64
    forward of context + continuation (lm-eval's tokenisation: context, then whole minus
    context; cut from the left to the model's length, as both tools cut) with a float64
    log-softmax at the continuation positions."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(weights)
    model = AutoModelForCausalLM.from_pretrained(weights, dtype=torch.float64).eval()
    max_len = getattr(model.config.get_text_config(), "max_position_embeddings", None) or 2048
    pairs = [(r["context"], delim + c) for r in samples for c in r["choices"]]
    worst = sorted(range(len(nb)), key=lambda i: -abs(nb[i] - le[i]))[:n]
    print(f"\nfloat64 check on the {len(worst)} requests where the two differ most:")
    print("request  negbench − f64   lm-eval − f64")
    for i in worst:
        ctx, cont = pairs[i]
        c_ids = tok(ctx)["input_ids"]
        w_ids = tok(ctx + cont)["input_ids"]
        k = len(w_ids) - len(c_ids)
        inp = w_ids[:-1][-max_len:]
        with torch.inference_mode():
            lp = torch.log_softmax(model(torch.tensor([inp])).logits[0].double(), -1)
        first = len(inp) - k  # the positions that predict the continuation's k tokens
        exact = float(sum(lp[first + j, w_ids[len(w_ids) - k + j]] for j in range(k)))
        print(f"{i:7d}  {nb[i] - exact:+.2e}       {le[i] - exact:+.2e}")


# -- the parent ----------------------------------------------------------------------------------
def model_params(weights: str) -> tuple[int, int]:
    """(non-embedding parameters, output-head parameters) of a transformers folder."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.from_pretrained(weights)
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(cfg)
    emb = m.get_input_embeddings().weight.numel()
    head = m.get_output_embeddings().weight.numel()
    total = sum(p.numel() for p in m.parameters())
    tied = m.get_output_embeddings().weight is m.get_input_embeddings().weight
    return total - emb - (0 if tied else head), head


def peak_tflops(name: str, given: float | None) -> float | None:
    if given:
        return given
    for key in sorted(BF16_PEAK, key=len, reverse=True):
        if key.lower() in name.lower():
            return BF16_PEAK[key]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("--task", default="konubench")
    ap.add_argument("--mode", default="cloze")
    ap.add_argument("--shots", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1234, help="few-shot seed (shots > 0)")
    ap.add_argument(
        "--limit",
        type=int,
        default=40,
        help="test items (negbench run --limit: whole units across the strata)",
    )
    ap.add_argument(
        "--batch",
        type=int,
        default=8,
        help="lm-eval batch size (padded baseline: prompts per batch)",
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=1, help="runs each, alternating; best kept")
    ap.add_argument(
        "--f64-check",
        type=int,
        default=5,
        help="requests (those where the two differ most) re-scored by a plain float64 "
        "forward, to say which side is closer to exact (0: skip)",
    )
    ap.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="the GPU's dense bf16 peak (default: from its name)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        spec = json.loads(Path(args.spec).read_text())
        return {"lm_eval": child_lm_eval, "negbench": child_negbench, "padded": child_padded}[
            args.child
        ](spec)

    from negbench.backends.hf import HFBackend
    from negbench.backends.sources import resolve
    from negbench.tasks import get_task

    spec_mode = get_task(args.task).mode(args.mode)
    next_token = getattr(spec_mode.formulation, "kind", "") == "next_token"
    if not next_token:
        try:
            import lm_eval  # noqa: F401
        except ImportError:
            sys.exit("lm-evaluation-harness is needed: pip install 'lm_eval[hf]==0.4.13'")
    src = resolve(args.model)
    weights = src.folder or src.hub_id
    if src.gguf_file:  # the converted copy both sides read (made once if missing)
        weights = HFBackend(args.model, dtype="float32", device="cpu", threads=1).weights_folder
    nonemb, head = model_params(weights)
    delim = getattr(spec_mode.formulation, "target_delimiter", " ")
    run_argv = [
        "run",
        "--model",
        args.model,
        "--tasks",
        args.task,
        "--modes",
        args.mode,
        "--shots",
        str(args.shots),
        "--limit",
        str(args.limit),
        "--device",
        args.device,
        "--dtype",
        args.dtype,
        "--threads",
        str(args.threads),
        "--no-cache",
        "--quiet",
        "--overwrite",
    ]
    if args.shots:
        run_argv += ["--seeds", str(args.seed)]
    other = "padded" if next_token else "lm-eval"
    rows: dict[str, list[dict]] = {"negbench": [], other: []}
    samples: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="negbench-sbs-") as work:
        w = Path(work)

        def child(kind: str, spec: dict):
            (w / f"{kind}.json").write_text(json.dumps(spec))
            return run_child(
                [sys.executable, __file__, "--child", kind, "--spec", str(w / f"{kind}.json")]
            )

        def run_negbench(i: int) -> None:
            nonlocal samples
            out = w / f"run{i}"
            res, wall, cpu, rss = child(
                "negbench", {"argv": run_argv + ["--output", str(out)], "device": args.device}
            )
            eng = json.loads((out / "results.json").read_text())["engine"]
            samples = [
                json.loads(x)
                for f in sorted((out / "samples").glob("*.jsonl"))
                for x in f.read_text().splitlines()
                if x.strip()
            ]
            scores = (
                [lp for r in samples for lp in r["logprobs"]]
                if next_token
                else [s for r in samples for s in r["scores"]]
            )
            rows["negbench"].append(
                {
                    "wall": wall,
                    "cpu": cpu,
                    "rss": rss,
                    "forwarded": eng["forwarded_tokens"],
                    "head_positions": eng["scored_positions"],
                    "score_s": eng.get("wall_s"),
                    "forward_s": eng.get("forward_s"),
                    "ll": scores,
                    **res,
                }
            )

        def run_other() -> None:  # exactly the requests negbench scored
            base = {
                "weights": weights,
                "device": args.device,
                "dtype": args.dtype,
                "batch": args.batch,
                "threads": args.threads,
                "requests": str(w / "requests.json"),
            }
            if next_token:
                reqs = [[r["context"], r["label_token_ids"]] for r in samples]
                (w / "requests.json").write_text(json.dumps(reqs))
                res, wall, cpu, rss = child("padded", base)
                res["ll"] = [x for lp in res.pop("lp") for x in lp]
            else:
                reqs = [(r["context"], delim + c) for r in samples for c in r["choices"]]
                (w / "requests.json").write_text(json.dumps(reqs))
                res, wall, cpu, rss = child("lm_eval", base)
            rows[other].append({"wall": wall, "cpu": cpu, "rss": rss, **res})

        for i in range(args.repeat):  # negbench first in round 1: the other needs its requests
            if i % 2 == 0:
                run_negbench(i)
                run_other()
            else:
                run_other()
                run_negbench(i)
    gpu = args.device.startswith("cuda")
    key = "score_s" if gpu else "cpu"
    best = {k: min(v, key=lambda r: r[key] or float("inf")) for k, v in rows.items()}
    n_req = len(samples) if next_token else sum(len(r["choices"]) for r in samples)
    name = best["negbench"].get("device_name") or "cpu"
    peak = peak_tflops(name, args.peak_tflops) if gpu else None
    print(
        f"{args.task} {args.mode}, {args.shots}-shot"
        + (f" (seed {args.seed})" if args.shots else "")
        + f", --limit {args.limit} (whole units across strata) = {n_req} {'next-token' if next_token else 'log-likelihood'} "
        f"requests; {args.model} {args.dtype} on {args.device} ({name}), {args.threads} threads; "
        f"{other} batch {args.batch}; non-embedding parameters {nonemb:,}, head {head:,}"
        + (f"; bf16 peak {peak:.0f} TFLOP/s" if peak else "")
    )
    head_row = [
        "impl",
        "wall s",
        "CPU s",
        "peak RSS MB",
        "score s",
        "forward s",
        "tokens fwd",
        "head positions",
        "GFLOP",
        "GFLOP/CPU s",
    ]
    if gpu:
        head_row[-1:] = ["TFLOP/score s", "% bf16 peak", "GPU busy %"]
    table = []
    for k, r in best.items():
        flop = 2 * nonemb * r["forwarded"] + 2 * head * r["head_positions"]
        r["flop"] = flop
        fwd = r.get("forward_s")
        row = [
            k,
            f"{r['wall']:.1f}",
            f"{r['cpu']:.1f}",
            f"{r['rss']:.0f}",
            f"{r['score_s']:.2f}" if r.get("score_s") else "-",
            f"{fwd:.2f}" if fwd else "-",
            f"{r['forwarded']:,}",
            f"{r['head_positions']:,}",
            f"{flop / 1e9:,.0f}",
        ]
        if gpu:
            rate = flop / r["score_s"] / 1e12 if r.get("score_s") else None
            busy = r.get("gpu_busy")
            row += [
                f"{rate:.1f}" if rate else "-",
                f"{100 * rate / peak:.1f}" if rate and peak else "-",
                f"{busy:.0f}" if busy is not None else "-",
            ]
        else:
            row.append(f"{flop / 1e9 / r['cpu']:.1f}")
        table.append(row)
    wd = [max(len(x[i]) for x in table + [head_row]) for i in range(len(head_row))]
    print("  ".join(h.ljust(n) for h, n in zip(head_row, wd)))
    for row in table:
        print("  ".join(c.ljust(n) for c, n in zip(row, wd)))
    nb, le = best["negbench"], best[other]
    d = max(abs(a - b) for a, b in zip(nb["ll"], le["ll"]))
    host = (
        f"; negbench host time (score − forward) {nb['score_s'] - nb['forward_s']:.2f} s"
        if nb.get("score_s") and nb.get("forward_s")
        else ""
    )
    if next_token:
        flips = sum(
            (a - b > 0) != (c - e > 0)
            for a, b, c, e in zip(nb["ll"][::2], nb["ll"][1::2], le["ll"][::2], le["ll"][1::2])
        )
        print(
            f"\nscoring time: negbench {le['score_s'] / nb['score_s']:.2f}x faster than the padded "
            f"baseline ({n_req / nb['score_s']:,.0f} vs {n_req / le['score_s']:,.0f} prompts/s){host}; "
            f"CPU time {le['cpu'] / nb['cpu']:.1f}x less; max |Δ log P(label)| {d:.2e}; "
            f"P(True) > 0.5 differs on {flips}/{len(samples)}"
        )
        return
    pos = 0
    agree = agree_norm = 0
    for r in samples:
        k = len(r["choices"])
        a, b = nb["ll"][pos : pos + k], le["ll"][pos : pos + k]
        pos += k
        lens = [float(len(c)) for c in r["choices"]]
        am = lambda xs: max(range(len(xs)), key=lambda i: (xs[i], -i))
        agree += am(a) == am(b)
        agree_norm += am([x / n for x, n in zip(a, lens)]) == am([x / n for x, n in zip(b, lens)])
    if args.f64_check:
        f64_check(weights, samples, nb["ll"], le["ll"], delim, args.f64_check, args.threads)
    speed = (
        f"scoring time: negbench {le['score_s'] / nb['score_s']:.2f}x faster than lm-eval; "
        if nb.get("score_s") and le.get("score_s")
        else ""
    )
    print(
        f"\n{speed}CPU time: negbench {le['cpu'] / nb['cpu']:.1f}x less than lm-eval; FLOP rate "
        f"negbench {nb['flop'] / nb['cpu'] / 1e9:.1f} vs lm-eval {le['flop'] / le['cpu'] / 1e9:.1f} "
        f"GFLOP/CPU s{host}; max |Δ log-likelihood| {d:.2e}; predictions agree on "
        f"{agree}/{len(samples)} (acc) and {agree_norm}/{len(samples)} (acc_norm)"
    )


if __name__ == "__main__":
    main()
