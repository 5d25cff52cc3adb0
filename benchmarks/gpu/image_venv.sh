#!/usr/bin/env bash
# A venv that imports what the GPU machines' image imports, for `REHEARSE=1 bash benchmarks/gpu/run.sh`:
# the packages of the torch 2.11 venv (.ci/torch211_venv: Python 3.12, torch 2.11.0, transformers 5.17.0)
# that image_packages.txt lists, linked in; nothing else (no negbench, gguf, datasets, openai, the
# embedded models).  A module the kit needs and the image lacks then fails here, on the CPU.
#   bash benchmarks/gpu/image_venv.sh [SRC_VENV (.venv-211)] [DST (.venv-gpuimage)]
#   PATH=$PWD/.venv-gpuimage/bin:$PATH REHEARSE=1 bash benchmarks/gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=${1:-.venv-211} DST=${2:-.venv-gpuimage}
[ -x "$SRC/bin/python" ] || { echo "no $SRC: make it with .ci/torch211_venv $SRC" >&2; exit 1; }
BASE=$(sed -n 's/^executable *= *//p' "$SRC/pyvenv.cfg")
rm -rf "$DST" && "$BASE" -m venv --without-pip "$DST"
"$SRC/bin/python" - "$SRC" "$DST" benchmarks/gpu/image_packages.txt <<'PY'
import os, re, sys
from importlib.metadata import distributions
src, dst, listing = sys.argv[1:4]
def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()
wanted = {norm(w) for line in open(listing) if not line.startswith("#") for w in line.split()}
site = next(p for p in sys.path if p.startswith(os.path.abspath(src)) and p.endswith("site-packages"))
out = os.path.join(dst, os.path.relpath(site, src))
kept, left = [], []
for d in distributions(path=[site]):
    name = norm(d.metadata["Name"])
    (kept if name in wanted else left).append(name)
    if name not in wanted:
        continue
    tops = set()
    for f in d.files or []:  # every top-level file or folder the distribution installed
        top = f.parts[0]
        if top != ".." and not top.endswith(".pth") and top != "__pycache__":
            tops.add(top)
    for top in tops:
        link = os.path.join(out, top)
        if not os.path.lexists(link) and os.path.exists(os.path.join(site, top)):
            os.symlink(os.path.join(site, top), link)
print(f"{dst}: {len(kept)} of {len(kept) + len(left)} distributions of {src} (left out: {' '.join(sorted(left))})")
PY
