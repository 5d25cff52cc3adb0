#!/usr/bin/env bash
# On the GPU machine, from the checkout's root, with .gpu/ (made by benchmarks/gpu/prepare.sh) beside it:
#   PHASES=sbs0 bash benchmarks/gpu/run.sh      one phase (one device call per phase: README.md)
#   bash benchmarks/gpu/run.sh                  all phases in one call (risks the 600 s limit of a call)
#   DRY_RUN=1 bash benchmarks/gpu/run.sh        on a CPU: preflight, set-up and the small models, then each
#                                               phase's command printed, not run
# The scripts run from the checkout (benchmarks/ and benchmarks/gpu/), so a fresher checkout needs no new .gpu/.
# Phases (every number of issue 26's closing note, item 3; issue 32's targets):
#   sbs0  KoNUBench cloze 0-shot, 1,284 items, Gemma-3 270M shape, vs lm-eval batch 64
#   nad   This is not a Dataset next-token, 20,000 sentences, SmolLM2 shape, vs plain padded batches
#   sbs5  KoNUBench 5-shot seed 1234, 200 items, 270M, vs lm-eval batch 8
#   big   KoNUBench 0-shot, 400 items, Gemma-3 4B shape, vs lm-eval batch 32 (makes the 4B weights: 8 GB)
#   attn  SDPA vs FlexAttention for the engine (KoNUBench 0-shot, 270M; the attention rule), then
#         which SDPA kernel runs and each one forced (cuDNN first on torch 2.11?), also with
#         TORCH_CUDNN_SDPA_DEPRIORITIZED=1
#   probe the FlexAttention/SDPA tree-mask probe (16 rows of 2,048 tokens, 270M shape)
#   train negbench train (LoRA, bf16, the notadataset recipe's batch of 32, SmolLM2 shape) vs a plain
#         transformers Trainer + peft script: tokens/s, peak GPU memory, the same losses (issue 36, item 4)
# Each side-by-side prints score s (scoring alone), forward s (inside forward calls), % of bf16 peak and GPU busy %.
# Everything lands in $OUT: each phase's whole output in $OUT/PHASE.log, what it prints in $OUT/PHASE.txt,
# nvidia-smi samples in $OUT/smi.csv.  Random weights go to $MODELS (default .gpu-models/, git-ignored, kept
# between calls on a warm machine) and are made once.  A failing step stops the run and prints its last lines.
set -euo pipefail
PHASES=${PHASES:-"sbs0 nad sbs5 big attn train"}
DRY_RUN=${DRY_RUN:-0}
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
R=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
M=${MODELS:-$R/.gpu-models}; mkdir -p "$M"
[ -d .gpu/site ] || { echo "no .gpu/site here: run benchmarks/gpu/prepare.sh on the CPU machine first" >&2; exit 1; }
mkdir -p /tmp/site && cp -r .gpu/site/. /tmp/site/
export PYTHONPATH=/tmp/site:$R/src PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export NEGBENCH_DATA=$R/.gpu/data NEGBENCH_CACHE=/tmp/nbcache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
DEV=cuda
if [ "$DRY_RUN" = 1 ]; then DEV=cpu; echo "DRY RUN: no GPU used; phases are printed, not run"; fi
[ "$DEV" = cpu ] || nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# preflight: everything the phases import, lm-eval's HF model (it imports requests) included
python3 -c "import torch, transformers, lm_eval, lm_eval.models.huggingface, requests, negbench
print('torch', torch.__version__, 'transformers', transformers.__version__, 'negbench', negbench.__file__)"
git log --oneline -1 2>/dev/null || true
SMI=
if [ "$DEV" = cuda ]; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 250 >> "$OUT/smi.csv" 2>&1 &
  SMI=$!
fi
trap '[ -z "$SMI" ] || kill "$SMI" 2>/dev/null || true' EXIT
for d in gemma smol; do
  [ -f .gpu/$d/tokenizer.json ] || python3 -c "import lzma,sys;open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" .gpu/$d/tokenizer.json.xz .gpu/$d/tokenizer.json
done
KIT=benchmarks/gpu
# run NAME PATTERN CMD...: the command's whole output to $OUT/NAME.log, the lines matching PATTERN
# (grep -E; "-v:PATTERN" for the lines not matching) printed and kept in $OUT/NAME.txt; on failure
# its last 40 lines and the run stops
run(){
  local name=$1 pat=$2; shift 2
  if [ "$DRY_RUN" = 1 ]; then echo "would run: $*"; return; fi
  local rc=0
  "$@" > "$OUT/$name.log" 2>&1 || rc=$?
  if [ "$pat" = "${pat#-v:}" ]; then grep -E "$pat" "$OUT/$name.log" | tee "$OUT/$name.txt" || true
  else grep -Ev "${pat#-v:}" "$OUT/$name.log" | tee "$OUT/$name.txt" || true; fi
  if [ "$rc" != 0 ]; then
    echo "FAILED: $name (exit $rc): $*; the last lines of $OUT/$name.log:" >&2
    tail -n 40 "$OUT/$name.log" >&2
    exit "$rc"
  fi
}
# mk SRC DST [overrides] [device]: random bf16 weights of SRC's shape, once (.complete marks a whole copy)
mk(){
  [ -f "$2/.complete" ] && return
  run "mk_$(basename "$2")" "^MODEL" python3 $KIT/mk_model.py "$@"
  [ "$DRY_RUN" = 1 ] || touch "$2/.complete"
}
SBS="benchmarks/lm_eval_side_by_side.py --device $DEV --dtype bfloat16 --f64-check 0 --threads 16"
QUIET="-v:warn|WARN|Warn|forward_call|Loading weights"
for p in $PHASES; do
  echo "PHASE $p start $(el)s"
  case $p in
    sbs0) mk .gpu/gemma "$M/gemma"
          run sbs0 "$QUIET" python3 $SBS --model "$M/gemma" --batch 64 --limit 1284 --f64-check 8 ;;
    nad)  mk .gpu/smol "$M/smol"
          run nad "^NAD" python3 $KIT/nad_sbs.py "$M/smol" 20000 512 ;;
    sbs5) mk .gpu/gemma "$M/gemma"
          run sbs5 "$QUIET" python3 $SBS --model "$M/gemma" --batch 8 --shots 5 --seed 1234 --limit 200 --f64-check 8 ;;
    big)  LT=$(python3 -c "import json;print(json.dumps(['full_attention' if i%6==5 else 'sliding_attention' for i in range(34)]))")
          G4B="{\"hidden_size\":2560,\"intermediate_size\":10240,\"num_hidden_layers\":34,\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,\"sliding_window\":1024,\"layer_types\":$LT}"
          if [ "$DRY_RUN" = 1 ]; then echo "would run: python3 $KIT/mk_model.py .gpu/gemma $M/g4b '<4B shape>' cuda"
          else mk .gpu/gemma "$M/g4b" "$G4B" cuda; fi
          run big "$QUIET" python3 $SBS --model "$M/g4b" --batch 32 --limit 400 ;;
    attn) mk .gpu/gemma "$M/gemma"
          run attn "^ATTN" python3 $KIT/attn_sbs.py "$M/gemma" konubench 1284 0
          run sdpa "^SDPA" python3 $KIT/sdpa_kernels.py "$M/gemma" 400
          TORCH_CUDNN_SDPA_DEPRIORITIZED=1 ONLY="torch's choice" \
            run sdpa_dep "^SDPA" python3 $KIT/sdpa_kernels.py "$M/gemma" 400 ;;
    probe) mk .gpu/gemma "$M/gemma"
          run probe "^FLEX" python3 $KIT/flex_probe.py "$M/gemma" 16 1024 16 64 ;;
    train) mk .gpu/smol "$M/smol"
          run train "-v:warn|WARN|Warn|Loading weights" python3 benchmarks/train.py --device $DEV \
            --model "$M/smol" --batch 32 --steps 30 --sample 4000 --threads 16 --quiet ;;
    *)    echo "unknown phase '$p' (sbs0 nad sbs5 big attn probe train)" >&2; exit 2 ;;
  esac
done
echo "PHASE end $(el)s"
