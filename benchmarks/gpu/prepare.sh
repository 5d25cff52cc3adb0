#!/usr/bin/env bash
# Prepare .gpu/ (git-ignored) in a negbench checkout (run from its root, on the CPU machine, with negbench installed
# with its multilingual extra in the active venv): what a GPU machine without network needs to measure negbench
# against lm-evaluation-harness, in a copy small enough to send (tens of MiB).
#   .gpu/site     lm_eval 0.4.13 + dill, and requests with its four dependencies (charset_normalizer,
#                 idna, urllib3, certifi: lm_eval's HF loader imports requests), unpacked, without
#                 lm_eval's task folders (the GPU image has torch, transformers, accelerate, peft, numpy;
#                 not lm_eval, dill, gguf, requests); versions from the lock (constraints.txt)
#   .gpu/smol     SmolLM2-135M config + tokenizer (xz), from negbench's converted copy of the embedded GGUF
#   .gpu/gemma    Gemma-3 270M config + tokenizer (xz), likewise
#   .gpu/data     the KoNUBench and This-is-not-a-Dataset releases from ../shared/data (or $NEGBENCH_DATA)
#   .gpu/kit      this folder's scripts (benchmarks/gpu of this checkout: run.sh uses them from there)
# Weights are not copied: mk_model.py makes random bf16 weights of the same shape on the GPU machine
# (throughput does not depend on the weights).  Then, on the GPU machine, with .gpu/ beside the checkout:
#   bash benchmarks/gpu/run.sh (or one phase per device call: README.md)
set -euo pipefail
KIT=$(cd "$(dirname "$0")" && pwd)
git check-ignore -q .gpu/ || { echo ".gpu/ must be git-ignored (the checkout's .gitignore has it)" >&2; exit 1; }
rm -rf .gpu && mkdir -p .gpu/site .gpu/smol .gpu/gemma .gpu/data .gpu/kit
cp "$KIT"/*.py "$KIT"/run.sh "$KIT"/README.md .gpu/kit/
w=$(mktemp -d)
pins=$(grep -iE '^(lm-eval|dill|requests|charset-normalizer|idna|urllib3|certifi)==' constraints.txt)
[ "$(echo "$pins" | wc -l)" = 7 ] || { echo "constraints.txt lacks a pin among: $pins" >&2; exit 1; }
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d "$w" $pins
(cd .gpu/site && for f in "$w"/*.whl; do python3 -m zipfile -e "$f" .; done)
find .gpu/site/lm_eval/tasks -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
rm -rf .gpu/site/*.dist-info/RECORD "$w"
for pair in smollm2-135m-instruct:smol gemma3-270m:gemma; do
  name=${pair%%:*}; dst=.gpu/${pair##*:}
  folder=$(python3 -c "from negbench.backends.hf import HFBackend; print(HFBackend('$name', dtype='float32', device='cpu', threads=1).weights_folder)" | tail -1)
  for f in "$folder"/*; do
    case $(basename "$f") in model.safetensors|.complete) ;; tokenizer.json) xz -6 -c "$f" > "$dst/tokenizer.json.xz" ;; *) cp "$f" "$dst/" ;; esac
  done
done
DATA=${NEGBENCH_DATA:-../shared/data}
cp -r "$DATA/konubench" "$DATA/not-a-dataset" .gpu/data/
# the GPU machine's Python imports what run.sh's preflight imports, from .gpu/site alone
for m in lm_eval dill requests charset_normalizer idna urllib3 certifi; do
  [ -d ".gpu/site/$m" ] || { echo "prepare.sh: $m is missing from .gpu/site" >&2; exit 1; }
done
du -sh .gpu
