"""This is not a Dataset at scale: peak RSS, CPU time and sentences/s of the real ``negbench run``
(child processes; peak RSS and CPU from ``os.wait4``) as the run grows from 2,000 to 20,000
sentences — and, with the flags below, over all 381,300.  RSS must not grow with the run: only
one shard of prompts, requests and records is held at a time.

Rows (default model SmolLM2-135M-Instruct, ``next_token``, the raw release from
``../shared/data/not-a-dataset`` or ``$NEGBENCH_NOTADATASET``; ``--no-cache``, so every sentence
is computed; ``--shard-size`` 2,000 by default so every row streams):

* ``N``            ``negbench run --tasks notadataset --limit N``: the first N sentences; the
                   whole release is still parsed and fingerprinted (as in any run).
* ``381,300 proj`` a projection, not a measurement: the 20k row's run time scaled by
                   381,300 / 20,000 (its measured rate), plus its fixed start-up cost.
* ``--full-shards K``: ``negbench run --tasks notadataset`` on all 381,300 sentences with the same
                   model, stopped (SIGTERM) after K shards: the full-size data preparation and the
                   first K shards of streaming are measured; the end of the run (samples files
                   and metrics over 381,300 records) is not.
* ``--cheap-full``: all 381,300 sentences end to end through the same CLI with a *narrow* random
                   model (2 layers, width 64) built here with SmolLM2's own tokenizer: the same
                   prompts, tokens, trie, shards, files and metrics; only the transformer is tiny
                   (its weights ~13 MB instead of SmolLM2's ~540 MB, so RSS is comparable after
                   adding that fixed amount, and its rate says nothing about SmolLM2's).

    python benchmarks/notadataset_scale.py [--sizes 2000,20000] [--full-shards 3] [--cheap-full]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

FULL = 381_300
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    name: str
    sentences: int
    wall_s: float
    cpu_s: float
    rss_mb: float
    rate: float  # sentences/s of the run itself (results.json wall_s)
    note: str = ""


def child(
    argv: list[str], log: Path, stop_after_shards: int | None = None
) -> tuple[float, float, float, int]:
    """Run ``argv``; (wall s, CPU s, peak RSS MB, exit status) from os.wait4.  With
    ``stop_after_shards`` the child gets SIGTERM once that many shards are logged done (peak RSS
    and CPU of a killed child are reported all the same)."""
    t = time.perf_counter()
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        if stop_after_shards:
            while proc.poll() is None:
                if log.read_text(errors="replace").count(" done: ") >= stop_after_shards:
                    proc.send_signal(signal.SIGTERM)
                    break
                time.sleep(0.5)
        _, status, ru = os.wait4(proc.pid, 0)
    return (
        time.perf_counter() - t,
        ru.ru_utime + ru.ru_stime,
        ru.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
    )


def run_cmd(
    model: str, task: str, out: Path, shard_size: int, threads: int | None, limit: int | None
) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "negbench.cli",
        "run",
        "--model",
        model,
        "--tasks",
        task,
        "--modes",
        "next_token",
        "--output",
        str(out),
        "--no-cache",
        "--quiet",
        "--shard-size",
        str(shard_size),
    ]
    if limit:
        argv += ["--limit", str(limit)]
    if threads:
        argv += ["--threads", str(threads)]
    return argv


def measured(name: str, argv: list[str], out: Path, n: int) -> Row:
    wall, cpu, rss, code = child(argv, out.with_suffix(".log"))
    if code != 0:
        sys.exit(f"{name}: negbench run failed ({code}); see {out.with_suffix('.log')}")
    res = json.loads((out / "results.json").read_text())
    got = res["units"]["notadataset.next_token.0shot"]["metrics"]["n"]
    assert got == n, (got, n)
    return Row(name, n, wall, cpu, rss, n / res["wall_s"], f"{res['shards']} shards")


def narrow_model(folder: Path) -> Path:
    """A 2-layer, width-64 Llama with SmolLM2's tokenizer and vocabulary (random weights)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from negbench.backends.sources import cache_root

    src = sorted((cache_root() / "models").glob("SmolLM2-135M-Instruct*"))
    if not src:
        sys.exit("--cheap-full needs SmolLM2's converted folder: run 'negbench run' once first")
    tok = AutoTokenizer.from_pretrained(src[0])
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,20000", help="sentence counts (--limit) to measure")
    ap.add_argument(
        "--model",
        default="smollm2-135m-instruct",
        help="a negbench model spec, or 'narrow': the --cheap-full model for every row",
    )
    ap.add_argument("--shard-size", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--full-shards",
        type=int,
        default=0,
        help="also run all 381,300 sentences and stop after this many shards",
    )
    ap.add_argument(
        "--cheap-full",
        action="store_true",
        help="also run all 381,300 end to end with a narrow random model",
    )
    ap.add_argument("--work", default=None, help="folder for the runs (default: a temp folder)")
    args = ap.parse_args()
    import negbench.tasks.notadataset.tasks as nad

    if not Path(nad.default_source()).exists():
        sys.exit(f"the release is not at {nad.default_source()} (set NEGBENCH_NOTADATASET)")
    work = Path(args.work or tempfile.mkdtemp(prefix="nad-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    if args.model == "narrow":
        args.model = str(narrow_model(work / "narrow-smollm2-tokenizer"))
    sizes = [int(x) for x in args.sizes.split(",") if x]
    for n in sizes:
        out = work / f"run-{n}"
        rows.append(
            measured(
                f"{n:,}",
                run_cmd(args.model, "notadataset", out, args.shard_size, args.threads, n),
                out,
                n,
            )
        )
        print(rows[-1], flush=True)
    if sizes:
        last = rows[-1]
        run_s = last.sentences / last.rate
        fixed = last.wall_s - run_s  # model load + data preparation
        rows.append(
            Row(
                "381,300 proj",
                FULL,
                fixed + FULL / last.rate,
                float("nan"),
                float("nan"),
                last.rate,
                f"projected from the {last.name} row's rate",
            )
        )
    if args.full_shards:
        out = work / "run-full-partial"
        argv = run_cmd(args.model, "notadataset", out, args.shard_size, args.threads, None)
        wall, cpu, rss, code = child(argv, out.with_suffix(".log"), args.full_shards)
        log = out.with_suffix(".log").read_text(errors="replace")
        rates = [
            float(x.split(" samples/s")[0].rsplit(" ", 1)[1])
            for x in log.splitlines()
            if " done: " in x
        ]
        rows.append(
            Row(
                f"381,300 ({args.full_shards} shards)",
                args.full_shards * args.shard_size,
                wall,
                cpu,
                rss,
                rates[-1] if rates else float("nan"),
                f"stopped after {len(rates)} shards (exit {code}); full data preparation",
            )
        )
        print(rows[-1], flush=True)
    if args.cheap_full:
        model = work / "narrow-smollm2-tokenizer"
        if not (model / "config.json").is_file():
            narrow_model(model)
        out = work / "run-full-narrow"
        rows.append(
            measured(
                "381,300 narrow",
                run_cmd(str(model), "notadataset", out, args.shard_size, args.threads, None),
                out,
                FULL,
            )
        )
        rows[-1].note += "; narrow random model, SmolLM2 tokenizer"
        print(rows[-1], flush=True)
    print(
        f"\nmodel {args.model}, next_token, --shard-size {args.shard_size}, --no-cache, "
        f"{os.cpu_count()} CPUs; runs in {work}"
    )
    print(
        f"| {'sentences':<22} | {'wall s':>8} | {'CPU s':>8} | {'peak RSS MB':>11} | "
        f"{'sentences/s':>11} | note"
    )
    print(f"|{'-' * 24}|{'-' * 10}:|{'-' * 10}:|{'-' * 13}:|{'-' * 13}:|---")
    for r in rows:
        print(
            f"| {r.name:<22} | {r.wall_s:>8.1f} | {r.cpu_s:>8.1f} | {r.rss_mb:>11.0f} | "
            f"{r.rate:>11.1f} | {r.note}"
        )


if __name__ == "__main__":
    main()
