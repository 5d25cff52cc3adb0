"""``negbench profile --preset quick`` against its target: the whole profile of SmolLM2-135M in at
most ten minutes on two CPU cores.

Runs the command as a user would (a fresh response cache and a fresh profile folder, so nothing
is answered from an earlier run) and reports the wall time, the CPU time, the peak RSS (the
child's ``ru_maxrss``, what ``/usr/bin/time -v`` calls "Maximum resident set size"), each
part's wall time from the profile's manifest, the subset sizes, and the machine's load average
before and after (other processes on the same cores slow every run; with more runnable
processes than cores, torch's spinning OpenMP threads slow it far more than their share — see
the load numbers).

    python benchmarks/negation_profile.py [--model smollm2-135m-instruct] [--out DIR] [--threads N]
                                 [--benchmarks a,b] [-- extra negbench profile options]

(Not named ``profile.py``: a script's folder comes first on ``sys.path``, and that name would
hide the standard library's ``profile`` module, which ``cProfile`` and torch import.)

Needs the benchmarks' data (``$NEGBENCH_DATA`` …); benchmarks without data are listed, not run.
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

TARGET_S = 600


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--out", default=None, help="profile folder (default: a temporary one)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--benchmarks", default=None)
    ap.add_argument("extra", nargs="*", help="more negbench profile options (after --)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="negbench-profile-bench-"))
    out = Path(args.out) if args.out else tmp / "profile"
    cmd = [
        sys.executable,
        "-m",
        "negbench.cli",
        "profile",
        "--model",
        args.model,
        "--preset",
        "quick",
        "--cache",
        str(tmp / "responses.sqlite"),
        "--out",
        str(out),
        "--quiet",
        *args.extra,
    ]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.benchmarks:
        cmd += ["--benchmarks", args.benchmarks]
    print("command:", " ".join(cmd))
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"load average after: {load()}")
    if proc.returncode:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        return proc.returncode
    print(proc.stdout)
    m = json.loads((out / "profile.json").read_text(encoding="utf-8"))
    print(f"{'part':<24} {'status':<12} {'wall s':>8}  items")
    for b in m["benchmarks"]:
        for p in b["parts"]:
            rows = [r for r in m.get("headline", []) if r["units"] and r["benchmark"] == b["key"]]
            items = ", ".join(f"{r['task']} {r['n']}" for r in rows) or "–"
            print(f"{p['name']:<24} {p['status']:<12} {p.get('wall_s') or 0:>8.1f}  {items}")
    print(
        f"\nwall {wall:.1f} s (target {TARGET_S} s: {'met' if wall <= TARGET_S else 'missed'}), "
        f"CPU {ru.ru_utime + ru.ru_stime:.1f} s, peak RSS {ru.ru_maxrss / 1024:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
