"""negbench against lm-evaluation-harness on the same log-likelihood workload, side by side.

Each implementation runs in its own child process (the order alternates with ``--repeat``), and
the parent reads each child's CPU time and peak RSS from ``os.wait4``:

* negbench: ``negbench run`` of the workload (no cache), its engine and transformers backend;
* lm-eval:  ``HFLM.loglikelihood`` (lm-evaluation-harness 0.4, batch ``--batch``) on exactly the
            requests negbench scored — the (context, target delimiter + choice) pairs a
            ``multiple_choice`` task sends — on negbench's converted copy of the same weights.

Printed per implementation: wall s, CPU s (user + sys), peak RSS, tokens forwarded, positions
whose output head was computed, FLOPs (2 × non-embedding parameters × forwarded tokens + 2 × head
parameters × head positions) and FLOP rate per CPU second; then the per-request max |Δ
log-likelihood| and whether acc / acc_norm predictions agree on every sample.

    python benchmarks/lm_eval_side_by_side.py                            # KoNUBench cloze, 0-shot, 40 items
    python benchmarks/lm_eval_side_by_side.py --shots 5 --seed 1234      # the 5-shot workload
    python benchmarks/lm_eval_side_by_side.py --device cuda --dtype bfloat16   # on a GPU

Needs ``pip install 'lm_eval[hf]==0.4.13'`` and the KoNUBench data (``../shared/data`` or
``NEGBENCH_DATA``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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
    res = json.loads(lines[-1][len("RESULT "):]) if lines else {}
    return res, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


# -- children ------------------------------------------------------------------------------------
def child_lm_eval(spec: dict) -> None:
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM
    torch.set_num_threads(spec["threads"])
    lm = HFLM(pretrained=spec["weights"], device=spec["device"], dtype=spec["dtype"],
              batch_size=spec["batch"])
    counts = {"tokens": 0}

    def count(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        counts["tokens"] += int(ids.numel())
    lm.model.register_forward_pre_hook(count, with_kwargs=True)
    reqs = json.loads(Path(spec["requests"]).read_text())
    inst = [Instance(request_type="loglikelihood", doc={}, arguments=(c, k), idx=i)
            for i, (c, k) in enumerate(reqs)]
    t = time.perf_counter()
    out = lm.loglikelihood(inst, disable_tqdm=True)
    print("RESULT " + json.dumps({"ll": [float(x[0]) for x in out], "forwarded": counts["tokens"],
                                  "head_positions": counts["tokens"],     # logits everywhere
                                  "score_s": time.perf_counter() - t}))


def f64_check(weights: str, samples: list[dict], nb: list[float], le: list[float], delim: str,
              n: int, threads: int) -> None:
    """Where negbench and lm-eval differ most, which is nearer the exact value?  A float64
    forward of context + continuation (lm-eval's tokenisation: context, then whole minus
    context) with a float64 log-softmax at the continuation positions."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(weights)
    model = AutoModelForCausalLM.from_pretrained(weights, dtype=torch.float64).eval()
    pairs = [(r["context"], delim + c) for r in samples for c in r["choices"]]
    worst = sorted(range(len(nb)), key=lambda i: -abs(nb[i] - le[i]))[:n]
    print(f"\nfloat64 check on the {len(worst)} requests where the two differ most:")
    print("request  negbench − f64   lm-eval − f64")
    for i in worst:
        ctx, cont = pairs[i]
        c_ids = tok(ctx)["input_ids"]
        w_ids = tok(ctx + cont)["input_ids"]
        k = len(w_ids) - len(c_ids)
        with torch.inference_mode():
            lp = torch.log_softmax(model(torch.tensor([w_ids[:-1]])).logits[0].double(), -1)
        exact = float(sum(lp[p - 1, w_ids[p]] for p in range(len(w_ids) - k, len(w_ids))))
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gemma3-270m")
    ap.add_argument("--task", default="konubench")
    ap.add_argument("--mode", default="cloze")
    ap.add_argument("--shots", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1234, help="few-shot seed (shots > 0)")
    ap.add_argument("--limit", type=int, default=40, help="test items")
    ap.add_argument("--batch", type=int, default=8, help="lm-eval batch size")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=1, help="runs each, alternating; best CPU time kept")
    ap.add_argument("--f64-check", type=int, default=5,
                    help="requests (those where the two differ most) re-scored by a plain float64 "
                         "forward, to say which side is closer to exact (0: skip)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "lm_eval":
        return child_lm_eval(json.loads(Path(args.spec).read_text()))

    from negbench.backends.hf import HFBackend
    from negbench.backends.sources import resolve
    from negbench.tasks import get_task
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        sys.exit("lm-evaluation-harness is needed: pip install 'lm_eval[hf]==0.4.13'")
    src = resolve(args.model)
    weights = src.folder or src.hub_id
    if src.gguf_file:                  # the converted copy both sides read (made once if missing)
        weights = HFBackend(args.model, dtype="float32", device="cpu", threads=1).weights_folder
    nonemb, head = model_params(weights)
    delim = get_task(args.task).mode(args.mode).formulation.target_delimiter
    run_argv = [sys.executable, "-m", "negbench", "run", "--model", args.model, "--tasks", args.task,
                "--modes", args.mode, "--shots", str(args.shots), "--limit", str(args.limit),
                "--device", args.device, "--dtype", args.dtype, "--threads", str(args.threads),
                "--no-cache", "--quiet", "--overwrite"]
    if args.shots:
        run_argv += ["--seeds", str(args.seed)]
    rows: dict[str, list[dict]] = {"negbench": [], "lm-eval": []}
    samples: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="negbench-sbs-") as work:
        w = Path(work)

        def run_negbench(i: int) -> None:
            nonlocal samples
            out = w / f"run{i}"
            _, wall, cpu, rss = run_child(run_argv + ["--output", str(out)])
            eng = json.loads((out / "results.json").read_text())["engine"]
            samples = [json.loads(x) for f in sorted((out / "samples").glob("*.jsonl"))
                       for x in f.read_text().splitlines() if x.strip()]
            rows["negbench"].append({"wall": wall, "cpu": cpu, "rss": rss,
                                     "forwarded": eng["forwarded_tokens"],
                                     "head_positions": eng["scored_positions"],
                                     "ll": [s for r in samples for s in r["scores"]]})

        def run_lm_eval() -> None:              # exactly the requests negbench scored
            reqs = [(r["context"], delim + c) for r in samples for c in r["choices"]]
            (w / "requests.json").write_text(json.dumps(reqs))
            spec = {"weights": weights, "device": args.device, "dtype": args.dtype,
                    "batch": args.batch, "threads": args.threads,
                    "requests": str(w / "requests.json")}
            (w / "spec.json").write_text(json.dumps(spec))
            res, wall, cpu, rss = run_child([sys.executable, __file__, "--child", "lm_eval",
                                             "--spec", str(w / "spec.json")])
            rows["lm-eval"].append({"wall": wall, "cpu": cpu, "rss": rss, **res})

        for i in range(args.repeat):            # negbench first in round 1: lm-eval needs its requests
            if i % 2 == 0:
                run_negbench(i)
                run_lm_eval()
            else:
                run_lm_eval()
                run_negbench(i)
    best = {k: min(v, key=lambda r: r["cpu"]) for k, v in rows.items()}
    n_req = sum(len(r["choices"]) for r in samples)
    print(f"{args.task} {args.mode}, {args.shots}-shot" + (f" (seed {args.seed})" if args.shots else "")
          + f", first {args.limit} items = {n_req} log-likelihood requests; {args.model} "
          f"{args.dtype} on {args.device}, {args.threads} threads; lm-eval batch {args.batch}; "
          f"non-embedding parameters {nonemb:,}, head {head:,}")
    head_row = ["impl", "wall s", "CPU s", "peak RSS MB", "tokens fwd", "head positions", "GFLOP",
                "GFLOP/CPU s"]
    table = []
    for k, r in best.items():
        flop = 2 * nonemb * r["forwarded"] + 2 * head * r["head_positions"]
        r["flop"] = flop
        table.append([k, f"{r['wall']:.1f}", f"{r['cpu']:.1f}", f"{r['rss']:.0f}", f"{r['forwarded']:,}",
                      f"{r['head_positions']:,}", f"{flop / 1e9:,.0f}", f"{flop / 1e9 / r['cpu']:.1f}"])
    wd = [max(len(x[i]) for x in table + [head_row]) for i in range(len(head_row))]
    print("  ".join(h.ljust(n) for h, n in zip(head_row, wd)))
    for row in table:
        print("  ".join(c.ljust(n) for c, n in zip(row, wd)))
    nb, le = best["negbench"], best["lm-eval"]
    d = max(abs(a - b) for a, b in zip(nb["ll"], le["ll"]))
    pos = 0
    agree = agree_norm = 0
    for r in samples:
        k = len(r["choices"])
        a, b = nb["ll"][pos:pos + k], le["ll"][pos:pos + k]
        pos += k
        lens = [float(len(c)) for c in r["choices"]]
        am = lambda xs: max(range(len(xs)), key=lambda i: (xs[i], -i))
        agree += am(a) == am(b)
        agree_norm += am([x / n for x, n in zip(a, lens)]) == am([x / n for x, n in zip(b, lens)])
    if args.f64_check:
        f64_check(weights, samples, nb["ll"], le["ll"], delim, args.f64_check, args.threads)
    print(f"\nCPU time: negbench {le['cpu'] / nb['cpu']:.1f}x less than lm-eval; FLOP rate "
          f"negbench {nb['flop'] / nb['cpu'] / 1e9:.1f} vs lm-eval {le['flop'] / le['cpu'] / 1e9:.1f} "
          f"GFLOP/CPU s; max |Δ log-likelihood| {d:.2e}; predictions agree on {agree}/{len(samples)} "
          f"(acc) and {agree_norm}/{len(samples)} (acc_norm)")


if __name__ == "__main__":
    main()
