"""A run spread over a local 2-worker Ray cluster against the same run in one process.

    python benchmarks/ray_cluster.py [--model smollm2-135m-instruct] [--limit 20] [--sample 400]

Runs `negbench run` three or four times as a user would (separate processes, fresh caches): one
process; `--ray local:2`; `--ray local:2` with one worker SIGKILLed mid-run (the seeded test hook
NEGBENCH_RAY_KILL); all with the same `--group-tokens` and `--threads 1`, so the groups, rows and
batches are the same.  Prints wall times (whole command, and the scoring part from
results.json), whether the samples files are byte-identical to the one-process run, and the
table of retried groups.  Workload: a KoNUBench slice (cloze) and a This-is-not-a-Dataset
sample (next_token).  Ray's cluster start (≈10 s here) is inside the command times.
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


def load(out: Path, wall: float | None) -> dict:
    res = json.loads((out / "results.json").read_text())
    samples = {f.name: f.read_bytes() for f in sorted((out / "samples").glob("*.jsonl"))}
    return {
        "wall": wall,
        "scoring": res["wall_s"],
        "engine": res["engine"],
        "samples": samples,
        "stdout": "",
    }


def run(args, out: Path, extra: list[str], env: dict[str, str] | None = None) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "negbench",
        "run",
        "--model",
        args.model,
        "--tasks",
        f"konubench,notadataset[sample={args.sample},seed=0]",
        "--modes",
        "cloze,next_token",
        "--limit",
        str(args.limit),
        "--threads",
        "1",
        "--group-tokens",
        str(args.group_tokens),
        "--quiet",
        "--output",
        str(out),
        "--cache",
        str(out.parent / (out.name + ".sqlite")),
        *extra,
    ]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    if p.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return {**load(out, wall), "stdout": p.stdout}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--sample", type=int, default=400)
    ap.add_argument("--group-tokens", type=int, default=2048)
    ap.add_argument("--kill", default="after=3,seed=0", help="NEGBENCH_RAY_KILL of the fault run")
    ap.add_argument("--no-plain", action="store_true", help="skip the Ray run without a fault")
    ap.add_argument(
        "--reuse",
        default=None,
        help="a folder of an earlier invocation: its finished one-process run ('one') "
        "is read instead of run again (its command time is then unknown)",
    )
    args = ap.parse_args()
    tmp = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="nb-ray-bench-"))
    print(
        f"model {args.model}; konubench cloze --limit {args.limit} + notadataset[sample="
        f"{args.sample},seed=0] next_token; --group-tokens {args.group_tokens}, --threads 1; "
        f"{os.cpu_count()} CPUs"
    )
    if args.reuse and (tmp / "one" / "results.json").is_file():
        rows = [("one process (earlier)", load(tmp / "one", None))]
    else:
        rows = [("one process", run(args, tmp / "one", []))]
    if not args.no_plain:
        rows.append(("ray local:2", run(args, tmp / "ray", ["--ray", "local:2"])))
    rows.append(
        (
            f"ray local:2, kill {args.kill}",
            run(args, tmp / "kill", ["--ray", "local:2"], {"NEGBENCH_RAY_KILL": args.kill}),
        )
    )
    ref = rows[0][1]
    e = ref["engine"]
    print(
        f"{e['unique']} unique requests, {e['forwarded_tokens']} tokens forwarded in "
        f"{e['model_calls']} model calls"
    )
    print(f"{'run':<34} {'command s':>9} {'scoring s':>9} {'retries':>7}  samples identical")
    for name, r in rows:
        same = r["samples"] == ref["samples"]
        wall = "–" if r["wall"] is None else f"{r['wall']:.1f}"
        print(
            f"{name:<34} {wall:>9} {r['scoring']:>9.1f} {r['engine']['retries']:>7}  "
            f"{'yes' if same else 'NO'} ({len(r['samples'])} files)"
        )
    out = rows[-1][1]["stdout"]
    print("\nretried groups of the fault run:")
    i = out.find("group  worker")
    print(out[i : out.find("results:", i)].rstrip() if i >= 0 else "(none)")
    print(next((ln for ln in out.splitlines() if ln.startswith("ray: ")), ""))


if __name__ == "__main__":
    main()
