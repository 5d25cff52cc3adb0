"""Recompute a saved negbench run's log-likelihoods with lm-evaluation-harness (HFLM) and compare.

For the first N log-likelihood samples of a run folder (``runs/X/samples/*.jsonl``, records with
``context``, ``choices`` and ``scores``), every choice is scored again by lm-eval's own
``HFLM.loglikelihood`` on the request ``(context, delimiter + choice)`` — the strings a
``multiple_choice`` task sends — with float32, batch size 1 and lm-eval's default BOS policy
(not overridden: the point is that negbench's policy equals lm-eval's default).  Prints
sample, choice, negbench (stored), lm-eval and |Δ|, then max |Δ| and whether the argmax (acc),
the length-normalised argmax (acc_norm) and is_greedy agree.

    python benchmarks/lm_eval_parity.py runs/gemma3-270m__ko-nubench [--model gemma3-270m]
        [--n 20] [--unit 'ko-nubench.cloze.*'] [--live] [--device cpu] [--tol 1e-4] [--json out.json]

The model defaults to the run's ``config.json`` ``model``.  An embedded GGUF model (``gemma3-270m``)
or a ``.gguf`` file is given to lm-eval as negbench's converted safetensors folder
(``~/.cache/negbench/models/…``), so both read the same dequantised weights.  ``--live`` also
recomputes negbench's scores now (same dtype/device), which separates "the stored run was made
differently (e.g. bf16 on a GPU)" from "the engine differs from lm-eval".

Exit status: 0 when every |Δ| <= --tol and every argmax agrees, 1 otherwise.
Needs ``pip install 'lm_eval[hf]==0.4.13'`` (see docs/lm_eval_parity.md).
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import json
import sys
from pathlib import Path

from negbench.scoring.formulations import argmax  # numpy.argmax semantics, as lm-eval


def load_samples(run: Path, n: int, unit: str) -> list[dict]:
    """The first ``n`` log-likelihood records (sorted unit files), each tagged with its unit."""
    files = sorted((run / "samples").glob("*.jsonl"))
    if not files:
        sys.exit(f"error: no samples/*.jsonl under {run}")
    out: list[dict] = []
    for f in files:
        stem = f.name[: -len(".jsonl")]
        if not fnmatch.fnmatch(stem, unit):
            continue
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                if not all(k in rec for k in ("context", "choices", "scores")):
                    break  # generate / next_token units: not log-likelihood
                rec["_unit"] = stem
                out.append(rec)
                if len(out) >= n:
                    return out
    if not out:
        sys.exit(
            f"error: no log-likelihood samples (records with context/choices/scores) "
            f"in {run}/samples matching --unit {unit!r}"
        )
    return out


def target_delimiter(rec: dict, override: str | None) -> str:
    """The task's target delimiter (as the run used it), or --delimiter, else " "."""
    if override is not None:
        return override
    try:
        from negbench.tasks import get_task

        return get_task(rec["task"]).mode(rec["mode"]).formulation.target_delimiter
    except Exception:  # task not registered here (e.g. a .jsonl task moved): lm-eval's default
        return " "


def model_location(spec: str, backend=None) -> str:
    """What to give HFLM(pretrained=...): a folder, negbench's converted GGUF folder, or a hub id."""
    from negbench.backends.sources import resolve

    src = resolve(spec)
    if src.gguf_file:
        if backend is None:
            raise ValueError("GGUF sources need the backend (it owns the converted copy)")
        # HFBackend keeps the dequantised safetensors copy it loads (converting once if missing)
        return backend.weights_folder
    return src.folder or src.hub_id


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a negbench run folder (with samples/*.jsonl)")
    ap.add_argument(
        "--model",
        help="model spec (embedded name, folder, .gguf, hub id); "
        "default: the run's config.json model",
    )
    ap.add_argument("--n", type=int, default=20, help="samples to recompute (default 20)")
    ap.add_argument("--unit", default="*", help="glob on unit names, e.g. 'ko-nubench.cloze.*'")
    ap.add_argument("--delimiter", default=None, help="target delimiter (default: the task's, ' ')")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--tol", type=float, default=1e-4, help="max |Δ| accepted (default 1e-4)")
    ap.add_argument(
        "--live",
        action="store_true",
        help="also recompute negbench's scores now with the same dtype/device",
    )
    ap.add_argument("--json", type=Path, help="write every row and the summary here")
    args = ap.parse_args(argv)

    from importlib.metadata import version

    import torch

    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError as exc:
        sys.exit(
            f"error: lm-evaluation-harness is needed ({exc}): pip install 'lm_eval[hf]==0.4.13'"
        )

    if not (args.run / "samples").is_dir():
        sys.exit(f"error: {args.run} is not a negbench run folder (no samples/)")
    cfg_path = args.run / "config.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.is_file() else {}
    spec = args.model or cfg.get("model")
    if not spec:
        sys.exit("error: no --model and no model in the run's config.json")
    bcfg = cfg.get("backend") or {}
    res_path = args.run / "results.json"
    details = (
        (json.loads(res_path.read_text()).get("model") or {}).get("details") or {}
        if res_path.is_file()
        else {}
    )
    run_dtype = details.get("dtype") or bcfg.get("dtype", "auto")  # what the run really used
    adapter, max_length = bcfg.get("adapter"), bcfg.get("max_length")

    samples = load_samples(args.run, args.n, args.unit)
    reqs: list[tuple[int, int, str, str]] = []  # (sample, choice, context, continuation)
    for si, rec in enumerate(samples):
        if len(rec["scores"]) != len(rec["choices"]):
            sys.exit(
                f"error: {rec['_unit']} {rec.get('doc_id')}: scores and choices differ in length"
            )
        delim = target_delimiter(rec, args.delimiter)
        for ci, choice in enumerate(rec["choices"]):
            reqs.append((si, ci, rec["context"], delim + choice))

    from negbench.backends.sources import resolve

    backend = live = None
    if args.live or resolve(spec).gguf_file:
        from negbench.backends.hf import HFBackend

        backend = HFBackend(
            spec, dtype=args.dtype, device=args.device, adapter=adapter, max_length=max_length
        )
    where = model_location(spec, backend)
    if args.live:
        from negbench.core.engine import Engine, EngineConfig
        from negbench.core.requests import LoglikelihoodRequest

        res = Engine(backend, config=EngineConfig(progress=False)).run(
            [LoglikelihoodRequest(c, k) for _, _, c, k in reqs]
        )
        live = [(r.logprob, r.is_greedy) for r in res]
        add_bos = backend.add_bos
    else:
        add_bos = details.get("add_bos")
    backend = None
    gc.collect()

    kw = {"peft": adapter} if adapter else {}
    if max_length:
        kw["max_length"] = max_length
    lm = HFLM(pretrained=where, device=args.device, dtype=args.dtype, batch_size=1, **kw)
    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=(c, k), idx=i)
        for i, (_, _, c, k) in enumerate(reqs)
    ]
    ref = [(float(ll), bool(g)) for ll, g in lm.loglikelihood(instances, disable_tqdm=True)]

    model_type = getattr(lm.config, "model_type", "?")
    first = lm.tok_encode(samples[0]["context"].rstrip())[:3]
    print(f"lm-eval {version('lm_eval')}, torch {torch.__version__}; model {spec} -> {where}")
    print(
        f"model_type {model_type}; lm-eval add_bos_token={lm.add_bos_token} (None = tokenizer "
        f"default); its first context tokens {first} (BOS id {lm.tokenizer.bos_token_id})"
        + (f"; negbench add_bos={add_bos}" if add_bos is not None else "")
    )
    if run_dtype != args.dtype:
        print(
            f"note: the run used dtype={run_dtype!r} ('auto': bfloat16 on a GPU), this check "
            f"{args.dtype}: stored scores may differ by ~1e-2; --live compares the engine itself"
        )

    rows = []
    head = f"{'sample':<40} {'ch':>2} {'negbench':>12} {'lm-eval':>12} {'|Δ|':>9}"
    if live:
        head += f" {'live':>12} {'|Δlive|':>9}"
    print(head)
    for i, (si, ci, _, k) in enumerate(reqs):
        rec = samples[si]
        stored = float(rec["scores"][ci])
        row = {
            "unit": rec["_unit"],
            "doc_id": rec.get("doc_id"),
            "choice": ci,
            "negbench": stored,
            "lm_eval": ref[i][0],
            "delta": abs(stored - ref[i][0]),
            "greedy_negbench": (rec.get("is_greedy") or [None] * len(rec["choices"]))[ci],
            "greedy_lm_eval": ref[i][1],
        }
        if live:
            row.update(
                live=live[i][0], delta_live=abs(live[i][0] - ref[i][0]), greedy_live=live[i][1]
            )
        rows.append(row)
        name = f"{rec['_unit']}:{rec.get('doc_id', si)}"
        gold = "*" if rec.get("gold_index") == ci else " "
        line = f"{name[-40:]:<40} {ci:>1}{gold} {stored:>12.5f} {ref[i][0]:>12.5f} {row['delta']:>9.2e}"
        if live:
            line += f" {live[i][0]:>12.5f} {row['delta_live']:>9.2e}"
        print(line)

    # per sample: acc / acc_norm as lm-eval multiple_choice computes them (argmax of the sums;
    # argmax of sum / characters of the choice), from the stored and from lm-eval's scores
    by_sample: dict[int, list[int]] = {}
    for i, (si, *_) in enumerate(reqs):
        by_sample.setdefault(si, []).append(i)
    agree = {"pred": 0, "pred_norm": 0, "acc": 0, "acc_norm": 0, "greedy": 0}
    acc = {"negbench": [0, 0], "lm_eval": [0, 0]}
    n_greedy = 0
    for si, rec in enumerate(samples):
        ours_ll = [float(x) for x in rec["scores"]]
        ref_ll = [ref[i][0] for i in by_sample[si]]
        lens = [float(len(c)) for c in rec["choices"]]
        p_o, p_r = argmax(ours_ll), argmax(ref_ll)
        n_o = argmax([a / b for a, b in zip(ours_ll, lens)])
        n_r = argmax([a / b for a, b in zip(ref_ll, lens)])
        gold = rec.get("gold_index")
        agree["pred"] += p_o == p_r
        agree["pred_norm"] += n_o == n_r
        agree["acc"] += (p_o == gold) == (p_r == gold)
        agree["acc_norm"] += (n_o == gold) == (n_r == gold)
        for who, p, q in (("negbench", p_o, n_o), ("lm_eval", p_r, n_r)):
            acc[who][0] += p == gold
            acc[who][1] += q == gold
        if rec.get("is_greedy") is not None:
            n_greedy += 1
            agree["greedy"] += [bool(g) for g in rec["is_greedy"]] == [
                ref[i][1] for i in by_sample[si]
            ]
    ns = len(samples)
    max_d = max(r["delta"] for r in rows)
    worst = max(rows, key=lambda r: r["delta"])
    summary = {
        "lm_eval_version": version("lm_eval"),
        "model": spec,
        "pretrained": str(where),
        "samples": ns,
        "requests": len(rows),
        "max_abs_delta": max_d,
        "mean_abs_delta": sum(r["delta"] for r in rows) / len(rows),
        "worst": {k: worst[k] for k in ("unit", "doc_id", "choice")},
        "argmax_agree": agree["pred"],
        "argmax_norm_agree": agree["pred_norm"],
        "acc_agree": agree["acc"],
        "acc_norm_agree": agree["acc_norm"],
        "is_greedy_agree": agree["greedy"],
        "is_greedy_samples": n_greedy,
        "acc": {k: v[0] / ns for k, v in acc.items()},
        "acc_norm": {k: v[1] / ns for k, v in acc.items()},
    }
    if live:
        summary["max_abs_delta_live"] = max(r["delta_live"] for r in rows)
    print()
    print(
        f"max |Δ| {max_d:.3e} (mean {summary['mean_abs_delta']:.3e}; worst "
        f"{worst['unit']}:{worst['doc_id']} choice {worst['choice']})"
        + (f"; live max |Δ| {summary['max_abs_delta_live']:.3e}" if live else "")
    )
    print(
        f"argmax (acc) agrees on {agree['pred']}/{ns} samples, acc on {agree['acc']}/{ns}; "
        f"argmax/len (acc_norm) on {agree['pred_norm']}/{ns}, acc_norm on {agree['acc_norm']}/{ns}; "
        f"is_greedy on {agree['greedy']}/{n_greedy}"
    )
    print(
        f"acc      negbench {summary['acc']['negbench']:.4f}  lm-eval {summary['acc']['lm_eval']:.4f}"
    )
    print(
        f"acc_norm negbench {summary['acc_norm']['negbench']:.4f}  lm-eval {summary['acc_norm']['lm_eval']:.4f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "rows": rows}, ensure_ascii=False, indent=1)
        )
    ok = max_d <= args.tol and agree["pred"] == ns and agree["pred_norm"] == ns
    if live:
        ok = (
            ok
            and summary["max_abs_delta_live"] <= args.tol
            and all(r["greedy_live"] == r["greedy_lm_eval"] for r in rows)
        )
    print("PARITY OK" if ok else f"PARITY FAILED (tol {args.tol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
