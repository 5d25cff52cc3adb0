"""lm-evaluation-harness with ``--model hf`` against ``--model negbench``, on the same tasks.

Two local lm-eval tasks are written by this script (text generated here, nothing downloaded):

* ``nbb_mc``: ``--items`` multiple-choice items (default 300): "Sentence: S.\\nNegation:" with
  four choices (the right negation, the sentence itself, a wrong-subject negation, a double
  negation), acc and acc_norm;
* ``nbb_roll``: ``--docs`` documents (default 6) of generated negated and affirmed sentences,
  scored as ``loglikelihood_rolling`` (word/byte perplexity, bits per byte).

Each implementation runs ``lm_eval.simple_evaluate(log_samples=True)`` in its own child process
with ``--threads`` torch threads (the order alternates with ``--repeat``); the parent reads each
child's CPU time and peak RSS from ``os.wait4``.  negbench runs without its response cache (so
it computes everything).  Then per-sample max |Δ log-likelihood| for both tasks, agreement of
the acc / acc_norm predictions, and both sets of metrics.

    python benchmarks/lm_eval_model.py                    # SmolLM2-135M-Instruct, 2 threads
    python benchmarks/lm_eval_model.py --items 100 --docs 3 --repeat 2
    python benchmarks/lm_eval_model.py --model ./some-model-folder --hf-batch 1

Needs ``pip install 'negbench[lm-eval]'``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from lm_eval_side_by_side import run_child  # noqa: E402  (one child runner for both benchmarks)

SUBJECTS = [
    "The cat",
    "A dog",
    "The river",
    "The museum",
    "My neighbour",
    "The old train",
    "Our teacher",
    "The small shop",
    "The committee",
    "Her brother",
    "The printer",
    "The garden",
    "This road",
    "The new bridge",
    "The orchestra",
    "His laptop",
]
#: (affirmative predicate, its negation)
PREDICATES = [
    ("is on the mat", "is not on the mat"),
    ("flows north", "does not flow north"),
    ("opened last year", "did not open last year"),
    ("was happy", "was not happy"),
    ("arrived on time", "did not arrive on time"),
    ("likes the rain", "does not like the rain"),
    ("can swim", "cannot swim"),
    ("has finished the report", "has not finished the report"),
    ("will win the match", "will not win the match"),
    ("works on Sundays", "does not work on Sundays"),
    ("is expensive", "is not expensive"),
    ("made a lot of noise", "did not make any noise"),
    ("remembers the address", "does not remember the address"),
    ("was built in 1900", "was not built in 1900"),
    ("sings every morning", "never sings in the morning"),
]


def mc_docs(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        s = SUBJECTS[i % len(SUBJECTS)]
        pos, neg = PREDICATES[(i // len(SUBJECTS) + i) % len(PREDICATES)]
        other = rng.choice([x for x in SUBJECTS if x != s])
        choices = [
            f"{s} {neg}.",
            f"{s} {pos}.",
            f"{other} {neg}.",
            f"{s} does not not {pos.split()[0]}.",
        ]
        order = list(range(4))
        rng.shuffle(order)
        docs.append(
            {
                "question": f"Negate the sentence.\nSentence: {s} {pos}.\nNegation:",
                "choices": [choices[j] for j in order],
                "answer": order.index(0),
            }
        )
    return docs


def rolling_docs(n: int, sentences: int = 40, seed: int = 2) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        sents = []
        for _ in range(sentences):
            pos, neg = rng.choice(PREDICATES)
            sents.append(f"{rng.choice(SUBJECTS)} {rng.choice((pos, neg))}.")
        out.append({"text": " ".join(sents)})
    return out


def write_tasks(folder: Path, items: int, docs: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("mc", mc_docs(items)), ("roll", rolling_docs(docs))):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in rows))
    common = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {}\ntest_split: test\n"
    (folder / "nbb_mc.yaml").write_text(
        "task: nbb_mc\n"
        + common.format(folder / "mc.jsonl")
        + 'output_type: multiple_choice\ndoc_to_text: "{{question}}"\ndoc_to_target: answer\n'
        'doc_to_choice: "{{choices}}"\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n'
    )
    (folder / "nbb_roll.yaml").write_text(
        "task: nbb_roll\n"
        + common.format(folder / "roll.jsonl")
        + 'output_type: loglikelihood_rolling\ndoc_to_text: ""\ndoc_to_target: "{{text}}"\n'
        "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n"
        "  - metric: bits_per_byte\n"
    )


def child(impl: str, spec: dict) -> None:
    """One simple_evaluate: per-sample responses and metrics as a RESULT line."""
    import logging
    import torch

    torch.set_num_threads(spec["threads"])
    logging.disable(logging.WARNING)
    import lm_eval
    from negbench.integrations.lm_eval import task_manager  # also registers "negbench"

    tasks = ["nbb_mc", "nbb_roll"]
    if impl == "hf":
        args = f"pretrained={spec['weights']},dtype=float32,batch_size={spec['hf_batch']}"
    else:
        args = f"model={spec['weights']},dtype=float32,cache=none,progress=false"
    t = time.perf_counter()
    res = lm_eval.simple_evaluate(
        model=impl,
        model_args=args,
        tasks=tasks,
        device="cpu",
        task_manager=task_manager(tasks, spec["include"]),
        log_samples=True,
        bootstrap_iters=0,
    )
    out = {"eval_s": time.perf_counter() - t, "metrics": {}, "samples": {}}
    for t_ in tasks:
        out["metrics"][t_] = {k: v for k, v in res["results"][t_].items() if isinstance(v, float)}
        out["samples"][t_] = [
            {
                "doc_id": s["doc_id"],
                "ll": [r[0][0] if isinstance(r[0], (list, tuple)) else r[0] for r in s["resps"]],
                "acc": s.get("acc"),
                "acc_norm": s.get("acc_norm"),
            }
            for s in sorted(res["samples"][t_], key=lambda s: s["doc_id"])
        ]
    print("RESULT " + json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="negbench model spec; a GGUF goes to both as negbench's converted copy",
    )
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--docs", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hf-batch", type=int, default=8, help="lm-eval hf batch size (default 8)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--only",
        choices=["hf", "negbench"],
        default=None,
        help="time one implementation only (no comparison)",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--spec", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child, json.loads(Path(a.spec).read_text()))
    from negbench.backends.sources import converted_gguf_folder, resolve

    src = resolve(a.model)
    weights = str(converted_gguf_folder(src)) if src.gguf_file else (src.folder or src.hub_id)
    if src.gguf_file and not (Path(weights) / ".complete").is_file():
        from negbench.backends.hf import HFBackend

        weights = HFBackend(a.model, device="cpu").weights_folder
    tmp = Path(tempfile.mkdtemp(prefix="nb-lmeval-bench-"))
    write_tasks(tmp / "tasks", a.items, a.docs)
    spec = {
        "weights": weights,
        "include": str(tmp / "tasks"),
        "threads": a.threads,
        "hf_batch": a.hf_batch,
    }
    (tmp / "spec.json").write_text(json.dumps(spec))
    env_threads = {"OMP_NUM_THREADS": str(a.threads), "MKL_NUM_THREADS": str(a.threads)}
    os.environ.update(env_threads)
    print(
        f"model {a.model} ({weights}); {a.items} multiple-choice items x 4 choices, {a.docs} "
        f"rolling documents; {a.threads} threads; hf batch {a.hf_batch}; negbench without cache"
    )
    rows, results = [], {}
    for r in range(a.repeat):
        order = ("hf", "negbench") if r % 2 == 0 else ("negbench", "hf")
        for impl in order if a.only is None else (a.only,):
            res, wall, cpu, rss = run_child(
                [sys.executable, __file__, "--child", impl, "--spec", str(tmp / "spec.json")]
            )
            rows.append((impl, r, wall, cpu, rss, res["eval_s"]))
            results[impl] = res
    print(
        f"\n{'impl':<9} {'run':>3} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12} {'evaluate s':>11}"
    )
    for impl, r, wall, cpu, rss, ev in rows:
        print(f"{impl:<9} {r:>3} {wall:>8.1f} {cpu:>8.1f} {rss:>12,.0f} {ev:>11.1f}")
    if a.only:
        return
    hf, nb = results["hf"], results["negbench"]
    ok = True
    for task in ("nbb_mc", "nbb_roll"):
        d = [
            abs(x - y)
            for sa, sb in zip(hf["samples"][task], nb["samples"][task])
            for x, y in zip(sa["ll"], sb["ll"])
        ]
        n = len(hf["samples"][task])
        line = f"\n{task}: {n} samples, {len(d)} log-likelihoods, max |Δ| {max(d):.2e}"
        if task == "nbb_mc":
            acc = sum(
                sa["acc"] == sb["acc"] for sa, sb in zip(hf["samples"][task], nb["samples"][task])
            )
            accn = sum(
                sa["acc_norm"] == sb["acc_norm"]
                for sa, sb in zip(hf["samples"][task], nb["samples"][task])
            )
            am = sum(
                max(range(4), key=sa["ll"].__getitem__) == max(range(4), key=sb["ll"].__getitem__)
                for sa, sb in zip(hf["samples"][task], nb["samples"][task])
            )
            line += f"; argmax agrees {am}/{n}, acc {acc}/{n}, acc_norm {accn}/{n}"
            ok = ok and am == acc == accn == n
        print(line)
        for k in hf["metrics"][task]:
            print(
                f"  {k:<24} hf {hf['metrics'][task][k]:.6f}  negbench {nb['metrics'][task][k]:.6f}"
            )
    print("\nPREDICTIONS AGREE" if ok else "\nPREDICTIONS DIFFER")
    f64_rolling(weights, tmp / "tasks" / "roll.jsonl", hf, nb, a.threads)


def f64_rolling(weights: str, docs: Path, hf: dict, nb: dict, threads: int) -> None:
    """Which rolling log-likelihoods are nearer the exact value?  Each document (one window when
    it fits the model's length) forwarded in float32 with a float64 log-softmax."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tok = AutoTokenizer.from_pretrained(weights)
    model = AutoModelForCausalLM.from_pretrained(weights, dtype=torch.float32).eval()
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    print("\nnbb_roll against a float64 log-softmax:\n doc  tokens  negbench - f64   hf - f64")
    texts = [json.loads(x)["text"] for x in docs.read_text().splitlines()]
    for i, text in enumerate(texts):
        ids = tok(text)["input_ids"]
        if len(ids) > model.config.max_position_embeddings:
            continue
        seq = [prefix] + ids
        with torch.inference_mode():
            lp = torch.log_softmax(model(torch.tensor([seq[:-1]])).logits[0].double(), -1)
        ref = sum(lp[p - 1, seq[p]].item() for p in range(1, len(seq)))
        print(
            f"{i:>4} {len(ids):>7} {nb['samples']['nbb_roll'][i]['ll'][0] - ref:>+14.2e} "
            f"{hf['samples']['nbb_roll'][i]['ll'][0] - ref:>+10.2e}"
        )


if __name__ == "__main__":
    main()
