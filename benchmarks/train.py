"""Training throughput: ``negbench train`` against a plain ``transformers.Trainer`` + peft script
on the same tokenised data with the same hyper-parameters, each in its own process.

* negbench : ``negbench.train.trainer.train`` — negbench's loader (embedded GGUF → its converted
             transformers copy, a folder, a hub id), its data pipeline, progress bar, provenance.
* plain    : ``AutoModelForCausalLM`` + ``peft.get_peft_model`` + ``Trainer`` with
             ``DataCollatorForSeq2Seq``, reading the token ids negbench produced (checked by
             fingerprint), the same LoRA / optimiser / schedule / seed, nothing else.

Reported per implementation: optimiser steps, training tokens (non-padding, as ``Trainer``
counts them), training time (``train_runtime``), tokens/s, end-to-end wall time (process start to
exit), peak RSS (and peak GPU memory on CUDA), final loss; then negbench's overhead in %
(tokens/s).  Both sides see the same batches in the same order, so their losses must agree.

    python benchmarks/train.py [--steps 20] [--sample 2000] [--batch 4] [--threads 2]
    python benchmarks/train.py --device cuda --batch 32 --steps 50      # bf16 on a GPU
    python benchmarks/train.py --model ./SmolLM2-135M-Instruct          # a local HF folder
    python benchmarks/train.py --against /tmp/base/src --steps 5        # the full recipe,
        # this tree against another negbench (e.g. `git archive 0c544eb src | tar -x -C /tmp/base`):
        # peak RSS, time to the first step, tokens/s, every step's loss (--recipe, --data, --set)
    python benchmarks/train.py --against /tmp/base/src --recipe konubench-cloze --steps 2 \
        --rss-limit-gb 18                  # a side that passes 18 GB is killed and reported so

The default data is the notadataset recipe's chat-format true/false sentences (a stratified
sample of train blocks; needs the raw release); ``--recipe``/``--data`` choose others.  The
prompt-weighted loss of the notadataset recipe is turned off (``prompt_loss_weight=0``) unless
``--weighted``: the plain script then uses the same weighted ``compute_loss``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _gpu_peak_mb() -> float | None:
    import torch

    if torch.cuda.is_available() and torch.cuda.max_memory_allocated() > 0:
        return torch.cuda.max_memory_allocated() / 2**20
    return None


# -- the two children ----------------------------------------------------------------------------
def _train(spec: dict, name: str, **extra) -> dict:
    """One ``negbench train`` of the spec's recipe into a fresh folder; its negbench_train.json."""
    from negbench.train.trainer import train

    out = Path(spec["work"]) / f"{name}-{os.getpid()}"  # a fresh one: never reused
    adapter = train(
        spec["recipe"],
        spec["model"],
        out,
        data=spec["data"],
        overrides=spec["overrides"],
        max_steps=spec["steps"],
        eval=False,
        device=spec["device"],
        threads=spec["threads"],
        overwrite=True,
        restart=True,
        log=lambda s: print(s, file=sys.stderr),
        **extra,
    )
    return json.loads((adapter / "negbench_train.json").read_text())


def child_negbench(spec: dict) -> dict:
    import torch

    torch.set_num_threads(spec["threads"])
    info = _train(spec, "negbench-out")
    tp = info["throughput"]
    return {
        "steps": info["steps"],
        "tokens": tp["tokens_this_session"],
        "train_s": tp["train_runtime_s"],
        "final_loss": info["loss_history"][-1]["loss"],
        "tokenized": info["data"]["tokenized"]["fingerprint"],
        "precision": info["precision"],
    }


def child_plain(spec: dict) -> dict:
    import torch

    torch.set_num_threads(spec["threads"])
    from peft import LoraConfig, get_peft_model
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        DataCollatorForSeq2Seq,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    r = spec["recipe_settings"]
    examples = json.loads(Path(spec["examples"]).read_text())
    bf16 = spec["bf16"]
    tok = AutoTokenizer.from_pretrained(spec["weights"])
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(
        spec["weights"], dtype=torch.bfloat16 if bf16 else torch.float32
    ).to(spec["device"])
    model.config.use_cache = False
    set_seed(r["seed"])
    target = "all-linear" if r["lora_target"] == ["all"] else r["lora_target"]
    model = get_peft_model(
        model,
        LoraConfig(
            r=r["lora_rank"],
            lora_alpha=r["lora_alpha"],
            lora_dropout=r["lora_dropout"],
            target_modules=target,
            bias="none",
            task_type="CAUSAL_LM",
        ),
    )
    args = TrainingArguments(
        output_dir=str(Path(spec["work"]) / "plain-out"),
        max_steps=spec["steps"],
        per_device_train_batch_size=r["per_device_train_batch_size"],
        gradient_accumulation_steps=r["gradient_accumulation_steps"],
        learning_rate=r["learning_rate"],
        num_train_epochs=r["num_train_epochs"],
        lr_scheduler_type=r["lr_scheduler_type"],
        warmup_steps=r["warmup_ratio"],
        weight_decay=r["weight_decay"],
        max_grad_norm=r["max_grad_norm"],
        optim=r["optim"],
        bf16=bf16,
        seed=r["seed"],
        logging_steps=r["logging_steps"],
        save_strategy="steps",
        save_steps=r["save_steps"],
        save_total_limit=r["save_total_limit"],
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        include_num_input_tokens_seen="non_padding",
        use_cpu=spec["device"] == "cpu",
    )
    collate = DataCollatorForSeq2Seq(tok, padding=True, label_pad_token_id=-100)
    cls = Trainer
    if r["prompt_loss_weight"] > 0:

        class Weighted(Trainer):  # the official NaD loss, as negbench's
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                w = inputs.pop("loss_weight")
                labels = inputs.pop("labels")
                out = model(**inputs)
                logits = out.logits[..., :-1, :].float()
                ce = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.size(-1)),
                    labels[..., 1:].reshape(-1),
                    reduction="none",
                    ignore_index=-100,
                )
                w = w[..., 1:].reshape(-1).to(ce.dtype)
                loss = (ce * w).sum() / w.sum().clamp_min(1e-12)
                return (loss, out) if return_outputs else loss

        def collate_w(features, base=collate):
            ws = [f["loss_weight"] for f in features]
            b = base([{k: v for k, v in f.items() if k != "loss_weight"} for f in features])
            n = b["input_ids"].shape[1]
            b["loss_weight"] = torch.tensor([w + [0.0] * (n - len(w)) for w in ws])
            return b

        cls, collate = Weighted, collate_w
    trainer = cls(model=model, args=args, train_dataset=examples, data_collator=collate)
    if cls is not Trainer:
        trainer.model_accepts_loss_kwargs = False
    res = trainer.train()
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {
        "steps": trainer.state.global_step,
        "tokens": int(trainer.state.num_input_tokens_seen),
        "train_s": float(res.metrics["train_runtime"]),
        "final_loss": losses[-1],
        "precision": "bf16" if bf16 else "fp32",
    }


def child_recipe(spec: dict) -> dict:
    """A recipe as ``negbench train`` runs it (whatever negbench ``PYTHONPATH`` names: this tree
    or the code it is compared with), timed from the parent's launch of this process."""
    import torch

    torch.set_num_threads(spec["threads"])
    from transformers import TrainerCallback

    marks: dict[str, float] = {}

    class Probe(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            marks.setdefault("first_step_begin", time.time() - spec["t0"])

        def on_step_end(self, args, state, control, **kw):
            marks.setdefault("first_step_end", time.time() - spec["t0"])

    info = _train(spec, "recipe-out", progress=False, callbacks=[Probe()])
    tp = info["throughput"]
    return {
        "steps": info["steps"],
        "tokens": tp["tokens_this_session"],
        "train_s": tp["train_runtime_s"],
        "losses": [h["loss"] for h in info["loss_history"]],
        "final_loss": info["loss_history"][-1]["loss"],
        "n_examples": info["data"]["tokenized"]["n_examples"],
        **marks,
    }


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_child(
    kind: str,
    spec_path: Path,
    quiet: bool,
    src: str | None = None,
    rss_limit_gb: float | None = None,
) -> dict:
    """One child process; with ``rss_limit_gb`` it is killed once its resident memory passes
    that (a run that would not fit the machine), and the result says so."""
    import threading

    t = time.perf_counter()
    env = None
    if src is not None:  # the negbench of another source tree (--against)
        env = {**os.environ, "PYTHONPATH": src}
        spec = json.loads(spec_path.read_text())
        spec_path.write_text(json.dumps({**spec, "t0": time.time()}))
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", kind, "--spec", str(spec_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        text=True,
        env=env,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, _rss_mb(proc.pid))
        if rss_limit_gb is not None and peak > rss_limit_gb * 1024:
            proc.kill()
            proc.wait()
            return {
                "killed": f"resident memory passed {rss_limit_gb:g} GB after "
                f"{time.perf_counter() - t:.0f} s: killed",
                "peak_rss_mb": peak,
                "wall_s": time.perf_counter() - t,
            }
        time.sleep(0.2)
    reader.join()
    if proc.returncode != 0:
        sys.exit(f"{kind} child failed (exit {proc.returncode}); rerun without --quiet to see why")
    line = [x for x in "".join(out).splitlines() if x.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT ") :])
    res["wall_s"] = time.perf_counter() - t
    return res


# -- the parent ----------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="embedded name, a local transformers folder, or a .gguf",
    )
    ap.add_argument("--recipe", default="notadataset")
    ap.add_argument(
        "--data", default=None, help="training data spec (default: notadataset[sample=N])"
    )
    ap.add_argument("--sample", type=int, default=2000, help="notadataset sample size (sentences)")
    ap.add_argument("--steps", type=int, default=20, help="optimiser steps")
    ap.add_argument(
        "--batch",
        type=int,
        default=None,
        help="per-device batch (default: 4 on CPU, the recipe's on a GPU)",
    )
    ap.add_argument("--accumulation", type=int, default=1, help="gradient accumulation steps")
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    ap.add_argument("--weighted", action="store_true", help="keep the recipe's prompt_loss_weight")
    ap.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more recipe settings for both sides",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per implementation, alternating the order; the best is reported",
    )
    ap.add_argument(
        "--warmup-steps",
        type=int,
        default=None,
        help="an untimed plain run of this many steps first (default: 10 on a GPU, "
        "0 on CPU): the first training process on a fresh GPU machine pays "
        "one-off start-up costs (measured: 3,923 tokens/s against 5,887-6,145 "
        "for the same negbench run later on an H100)",
    )
    ap.add_argument(
        "--against",
        metavar="SRC",
        default=None,
        help="compare `negbench train` of the recipe (its full data unless --data) with the "
        "negbench under SRC (a src/ folder, e.g. of the previous commit): peak RSS, time to "
        "the first step, tokens/s, the loss of every step",
    )
    ap.add_argument(
        "--rss-limit-gb",
        type=float,
        default=None,
        help="kill a child whose resident memory passes this (a run that does not fit the "
        "machine is reported as such, not swapped or OOM-killed with everything else)",
    )
    ap.add_argument("--quiet", action="store_true", help="hide the children's logs")
    ap.add_argument("--child", choices=["negbench", "plain", "recipe"], help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        spec = json.loads(Path(args.spec).read_text())
        res = {"negbench": child_negbench, "plain": child_plain, "recipe": child_recipe}[
            args.child
        ](spec)
        res["peak_rss_mb"] = _peak_rss_mb()
        res["gpu_peak_mb"] = _gpu_peak_mb()
        print("RESULT " + json.dumps(res))
        return
    if args.against:
        return against(args)

    import torch
    from negbench.backends.sources import resolve
    from negbench.train.data import load_training_data, tokenize
    from negbench.scoring.recipes import resolve_recipe
    from negbench.train.trainer import weights_folder, load_tokenizer, precision

    threads = args.threads or torch.get_num_threads()
    data = args.data or (
        f"notadataset[sample={args.sample}]" if args.recipe == "notadataset" else None
    )
    batch = args.batch or (4 if args.device == "cpu" else None)
    overrides = [
        f"save_steps={10**6}",
        f"gradient_accumulation_steps={args.accumulation}",
        "logging_steps=1",
        *args.sets,
    ]
    if batch:
        overrides.append(f"per_device_train_batch_size={batch}")
    if not args.weighted:
        overrides.append("prompt_loss_weight=0")
    recipe = resolve_recipe(args.recipe, overrides=overrides, data=data, max_steps=args.steps)
    src = resolve(args.model)
    tok = load_tokenizer(src)
    td = load_training_data(recipe.data, recipe.data_split, recipe.max_samples)
    tdata = tokenize(td, recipe, tok)
    bf16, _ = precision(recipe, args.device)
    with tempfile.TemporaryDirectory(prefix="negbench-train-bench-") as work:
        work_p = Path(work)
        (work_p / "examples.json").write_text(json.dumps(list(tdata.examples)))
        spec = {
            "recipe": args.recipe,
            "model": args.model,
            "data": recipe.data,
            "overrides": overrides,
            "steps": args.steps,
            "device": args.device,
            "threads": threads,
            "work": work,
            "examples": str(work_p / "examples.json"),
            "recipe_settings": {
                k: (list(v) if isinstance(v, tuple) else v) for k, v in recipe.settings().items()
            },
            "bf16": bf16,
        }
        spec_path = work_p / "spec.json"
        spec_path.write_text(json.dumps(spec))
        print(
            f"{args.model} on {args.device} ({'bf16' if bf16 else 'fp32'}, {threads} threads): "
            f"{args.steps} steps × batch {recipe.per_device_train_batch_size} × accumulation "
            f"{recipe.gradient_accumulation_steps}; data {recipe.data}: {len(tdata.examples)} "
            f"examples, {tdata.examples.stats()['n_tokens'] / max(1, len(tdata.examples)):.1f} "
            "tokens each "
            f"({tdata.template} template)",
            flush=True,
        )
        warm = (
            args.warmup_steps
            if args.warmup_steps is not None
            else (0 if args.device == "cpu" else 10)
        )
        if warm:
            spec["weights"] = spec.get("weights") or weights_folder(src)
            if spec["weights"] is not None:  # (a GGUF not converted yet: negbench converts it)
                spec_path.write_text(json.dumps({**spec, "steps": warm}))
                res = run_child("plain", spec_path, args.quiet)
                print(
                    f"  warm-up (plain, {warm} steps, not counted): "
                    f"{res['tokens'] / res['train_s']:.1f} tokens/s",
                    flush=True,
                )
                spec_path.write_text(json.dumps(spec))
            else:
                del spec["weights"]
        runs: dict[str, list[dict]] = {"negbench": [], "plain": []}
        for i in range(args.repeat):  # alternate, so drifting load hits both
            order = ("negbench", "plain") if i % 2 == 0 else ("plain", "negbench")
            for kind in order:
                if kind == "plain" and "weights" not in spec:
                    spec["weights"] = weights_folder(src)  # a GGUF's converted copy exists now
                    if spec["weights"] is None:
                        continue
                    spec_path.write_text(json.dumps(spec))
                res = run_child(kind, spec_path, args.quiet)
                if kind == "negbench" and res["tokenized"] != tdata.fingerprint:
                    sys.exit("negbench tokenised the data differently from this script")
                runs[kind].append(res)
                print(
                    f"  run {i + 1} {kind}: {res['tokens'] / res['train_s']:.1f} tokens/s",
                    flush=True,
                )
            if not runs["plain"]:  # the plain side needed the conversion
                spec["weights"] = weights_folder(src)
                spec_path.write_text(json.dumps(spec))
                runs["plain"].append(run_child("plain", spec_path, args.quiet))
        # the best of the repeats: the least disturbed by other load
        results = {k: max(v, key=lambda r: r["tokens"] / r["train_s"]) for k, v in runs.items()}
    gpu = any(r.get("gpu_peak_mb") for r in results.values())
    head = (
        ["impl", "steps", "tokens", "train s", "tokens/s", "wall s", "peak RSS MB"]
        + (["peak GPU MB"] if gpu else [])
        + ["final loss"]
    )
    rows = []
    for k, r in results.items():
        r["tps"] = r["tokens"] / r["train_s"] if r["train_s"] else float("nan")
        rows.append(
            [
                k,
                str(r["steps"]),
                str(r["tokens"]),
                f"{r['train_s']:.1f}",
                f"{r['tps']:.1f}",
                f"{r['wall_s']:.1f}",
                f"{r['peak_rss_mb']:.0f}",
            ]
            + ([f"{r['gpu_peak_mb'] or 0:.0f}"] if gpu else [])
            + [f"{r['final_loss']:.4f}"]
        )
    w = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    print("  ".join(h.ljust(n) for h, n in zip(head, w)))
    print("  ".join("-" * n for n in w))
    for row in rows:
        print("  ".join(c.ljust(n) for c, n in zip(row, w)))
    nb, pl = results["negbench"], results["plain"]
    over = (pl["tps"] - nb["tps"]) / pl["tps"] * 100
    print(
        f"\nnegbench overhead: {over:+.1f} % tokens/s (positive = slower than plain); "
        f"peak RSS {nb['peak_rss_mb'] - pl['peak_rss_mb']:+.0f} MB; "
        f"same tokens: {nb['tokens'] == pl['tokens']}; "
        f"|Δ final loss| = {abs(nb['final_loss'] - pl['final_loss']):.2e}"
    )


# -- --against: a recipe as `negbench train` runs it, this tree against another --------------------
def against(args) -> None:
    """The recipe (its full data unless ``--data``) through ``negbench train`` with this tree's
    negbench and with the one under ``--against`` (e.g. a checkout of the previous commit),
    each in its own process, one after the other: peak RSS, time from the process start to the
    first optimiser step (its start and its end), tokens/s, and the loss of every step, which
    must agree."""
    here = str(Path(__file__).resolve().parents[1] / "src")
    sets = ["logging_steps=1", f"save_steps={10**6}", *args.sets]
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="negbench-train-against-") as work:
        spec = {
            "recipe": args.recipe,
            "model": args.model,
            "data": args.data,
            "overrides": sets,
            "steps": args.steps,
            "device": args.device,
            "threads": args.threads or os.cpu_count() or 1,
            "work": work,
        }
        spec_path = Path(work) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        print(
            f"{args.recipe} ({args.data or 'its full data'}) on {args.model}, {args.device}, "
            f"{args.steps} steps; before = {args.against}, after = {here}",
            flush=True,
        )
        for i in range(args.repeat):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for kind in order:
                res = run_child(
                    "recipe",
                    spec_path,
                    args.quiet,
                    args.against if kind == "before" else here,
                    args.rss_limit_gb,
                )
                results[kind].append(res)
                if "killed" in res:
                    print(f"  run {i + 1} {kind}: {res['killed']}", flush=True)
                    continue
                print(
                    f"  run {i + 1} {kind}: peak RSS {res['peak_rss_mb']:.0f} MB, first step "
                    f"at {res.get('first_step_begin', float('nan')):.1f} s, "
                    f"{res['tokens'] / res['train_s']:.1f} tokens/s",
                    flush=True,
                )
    head = [
        "code",
        "examples",
        "steps",
        "peak RSS MB",
        "1st step start s",
        "1st step end s",
        "tokens/s",
        "wall s",
    ]
    rows = []
    for kind, rs in results.items():
        done = [x for x in rs if "killed" not in x]
        if not done:
            rows.append(
                [kind, "-", "-", f"> {args.rss_limit_gb:g} GB (killed)", "-", "-", "-", "-"]
            )
            continue
        rs = done
        r = max(rs, key=lambda x: x["tokens"] / x["train_s"])
        rows.append(
            [
                kind,
                str(r["n_examples"]),
                str(r["steps"]),
                f"{max(x['peak_rss_mb'] for x in rs):.0f}",
                f"{min(x.get('first_step_begin', float('nan')) for x in rs):.1f}",
                f"{min(x.get('first_step_end', float('nan')) for x in rs):.1f}",
                f"{r['tokens'] / r['train_s']:.1f}",
                f"{r['wall_s']:.1f}",
            ]
        )
    w = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    print("  ".join(h.ljust(n) for h, n in zip(head, w)))
    print("  ".join("-" * n for n in w))
    for row in rows:
        print("  ".join(c.ljust(n) for c, n in zip(row, w)))
    done = {k: [x for x in rs if "killed" not in x] for k, rs in results.items()}
    if not (done["before"] and done["after"]):
        print("\nno loss comparison: a side was killed")
        return
    a, b = done["before"][0]["losses"], done["after"][0]["losses"]
    print("\nstep  loss before  loss after  |Δ|")
    for k, (x, y) in enumerate(zip(a, b), 1):
        print(f"{k:4d}  {x:11.6f}  {y:10.6f}  {abs(x - y):.1e}")
    d = max((abs(x - y) for x, y in zip(a, b)), default=float("nan"))
    print(f"max |Δ loss| over {min(len(a), len(b))} steps: {d:.2e}")


if __name__ == "__main__":
    main()
