#!/usr/bin/env bash
# On the GPU machine, from the checkout's root, with .gpu/ (made by benchmarks/gpu/prepare.sh) beside it:
#   PHASES=sbs0 bash benchmarks/gpu/run.sh      one phase (one device call per phase: README.md)
#   bash benchmarks/gpu/run.sh                  all phases in one call (risks the 600 s limit of a call)
#   DRY_RUN=1 bash benchmarks/gpu/run.sh        on a CPU: preflight, set-up and the small models, then each
#                                               phase's command printed, not run
#   REHEARSE=1 bash benchmarks/gpu/run.sh       on a CPU: every phase's real commands on tiny models of the
#                                               same vocabularies and a few items (minutes): the whole kit,
#                                               lm-eval's side included, before device time is spent
# The scripts run from the checkout (benchmarks/ and benchmarks/gpu/), so a fresher checkout needs no new .gpu/.
# Phases (every number of issue 26's closing note, item 3; issue 32's targets):
#   tests the core and backend tests on the GPU (≈ 1-2 min; tests/core/test_gpu.py and the sync audit run
#         only where CUDA is): the first call on a GPU, before any timing
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
# Everything lands in $OUT, in two files (the device tool brings back at most 8): every step's whole output,
# one after another between "=== STEP" and "=== END" lines, written as it runs, in $OUT/steps.log, and nvidia-smi samples in $OUT/smi.csv;
# what the steps print is on stdout (tee it to $OUT/log.txt).  Random weights go to $MODELS (default .gpu-models/, git-ignored, kept
# between calls on a warm machine) and are made once.  A failing step stops the run and prints its last lines.
set -euo pipefail
PHASES=${PHASES:-"tests sbs0 nad sbs5 big attn train"}
DRY_RUN=${DRY_RUN:-0}
REHEARSE=${REHEARSE:-0}
# the workloads (REHEARSE=1: a few items on tiny models of the real vocabularies, on the CPU)
N0=1284 N5=200 NBIG=400 NNAD=20000 BNAD=512 NSDPA=400 THREADS=16 TINY=
B0=64 B5=8 BBIG=32  # lm-eval's batch sizes
TRAIN="--batch 32 --steps 30 --sample 4000"
if [ "$REHEARSE" = 1 ]; then
  N0=24 N5=8 NBIG=16 NNAD=300 BNAD=64 NSDPA=16 THREADS=2
  B0=4 B5=2 BBIG=4  # lm-eval's float logits over 262k words: 64 rows would need ~13 GB on a CPU
  TRAIN="--batch 4 --steps 2 --sample 64"
  TINY='"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16'
fi
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
R=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
WORK=$(mktemp -d)  # each step's output, for its printed lines
: > "$OUT/steps.log"; rm -f "$OUT/smi.csv"  # this run's alone
M=${MODELS:-$R/.gpu-models}; [ "$REHEARSE" = 1 ] && M=${MODELS:-$R/.gpu-models/rehearse}; mkdir -p "$M"
[ -d .gpu/site ] || { echo "no .gpu/site here: run benchmarks/gpu/prepare.sh on the CPU machine first" >&2; exit 1; }
mkdir -p /tmp/site && cp -r .gpu/site/. /tmp/site/
export PYTHONPATH=/tmp/site:$R/src PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export NEGBENCH_DATA=$R/.gpu/data NEGBENCH_CACHE=/tmp/nbcache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
DEV=cuda
if [ "$DRY_RUN" = 1 ]; then DEV=cpu; echo "DRY RUN: no GPU used; phases are printed, not run"; fi
if [ "$REHEARSE" = 1 ]; then
  export DEV=cpu  # the kit's scripts read DEV (default cuda)
  echo "REHEARSAL: every phase on the CPU, tiny models, a few items"
fi
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
# run NAME PATTERN CMD...: the command's whole output appended to $OUT/steps.log, the lines matching
# PATTERN (grep -E; "-v:PATTERN" for the lines not matching) printed; on failure
# its last 40 lines and the run stops
run(){
  local name=$1 pat=$2; shift 2
  if [ "$DRY_RUN" = 1 ]; then echo "would run: $*"; return; fi
  local rc=0 log="$WORK/$name.log"
  echo "=== STEP $name (at $(el)s): $*" >> "$OUT/steps.log"
  # streamed into steps.log as it runs: a step killed at the call's time limit leaves what it printed
  "$@" 2>&1 | tee "$log" >> "$OUT/steps.log" || rc=$?
  echo "=== END $name (exit $rc, at $(el)s)" >> "$OUT/steps.log"
  if [ "$pat" = "${pat#-v:}" ]; then grep -E "$pat" "$log" || true
  else grep -Ev "${pat#-v:}" "$log" || true; fi
  if [ "$rc" != 0 ]; then
    echo "FAILED: $name (exit $rc): $*; its last lines (all of it in $OUT/steps.log):" >&2
    tail -n 40 "$log" >&2
    # SOFT=1: a failure is reported and the phases go on (the run still ends non-zero)
    [ "${SOFT:-0}" = 1 ] && { SOFT_FAILED="$SOFT_FAILED $name"; return; }
    exit "$rc"
  fi
}
SOFT_FAILED=
# mk SRC DST [overrides] [device]: random bf16 weights of SRC's shape, once (.complete marks a whole copy)
mk(){
  [ -f "$2/.complete" ] && return
  run "mk_$(basename "$2")" "^MODEL" python3 $KIT/mk_model.py "$@"
  [ "$DRY_RUN" = 1 ] || touch "$2/.complete"
}
SBS="benchmarks/lm_eval_side_by_side.py --device $DEV --dtype bfloat16 --f64-check 0 --threads $THREADS"
# the models: the real shapes (random weights), or in a rehearsal tiny ones of the same vocabularies
GEMMA_OVER="{$TINY${TINY:+,\"layer_types\":[\"sliding_attention\",\"full_attention\"],\"sliding_window\":8}}"
SMOL_OVER="{$TINY}"
QUIET="-v:warn|WARN|Warn|forward_call|Loading weights"
for p in $PHASES; do
  echo "PHASE $p start $(el)s"
  case $p in
    tests) SOFT=1 run tests "passed|failed|error|SKIPPED|FAILED|ERROR" python3 -m pytest -q -p no:cacheprovider \
            -rs tests/core tests/backends ;;  # a failing test does not keep the timings from running
    sbs0) mk .gpu/gemma "$M/gemma" "$GEMMA_OVER"
          run sbs0 "$QUIET" python3 $SBS --model "$M/gemma" --batch $B0 --limit $N0 --f64-check 8 ;;
    nad)  mk .gpu/smol "$M/smol" "$SMOL_OVER"
          run nad "^NAD" python3 $KIT/nad_sbs.py "$M/smol" $NNAD $BNAD ;;
    sbs5) mk .gpu/gemma "$M/gemma" "$GEMMA_OVER"
          run sbs5 "$QUIET" python3 $SBS --model "$M/gemma" --batch $B5 --shots 5 --seed 1234 --limit $N5 --f64-check 8 ;;
    big)  LT=$(python3 -c "import json;print(json.dumps(['full_attention' if i%6==5 else 'sliding_attention' for i in range(34)]))")
          G4B="{\"hidden_size\":2560,\"intermediate_size\":10240,\"num_hidden_layers\":34,\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,\"sliding_window\":1024,\"layer_types\":$LT}"
          if [ "$DRY_RUN" = 1 ]; then echo "would run: python3 $KIT/mk_model.py .gpu/gemma $M/g4b '<4B shape>' cuda"
          elif [ "$REHEARSE" = 1 ]; then mk .gpu/gemma "$M/g4b" "$GEMMA_OVER"
          else mk .gpu/gemma "$M/g4b" "$G4B" cuda; fi
          run big "$QUIET" python3 $SBS --model "$M/g4b" --batch $BBIG --limit $NBIG ;;
    attn) mk .gpu/gemma "$M/gemma" "$GEMMA_OVER"
          [ "$REHEARSE" = 1 ] && export DTYPE=float32  # FlexAttention compiled for the CPU
          run attn "^ATTN" python3 $KIT/attn_sbs.py "$M/gemma" konubench $N0 0
          run sdpa "^SDPA" python3 $KIT/sdpa_kernels.py "$M/gemma" $NSDPA
          TORCH_CUDNN_SDPA_DEPRIORITIZED=1 ONLY="torch's choice" \
            run sdpa_dep "^SDPA" python3 $KIT/sdpa_kernels.py "$M/gemma" $NSDPA ;;
    probe) mk .gpu/gemma "$M/gemma" "$GEMMA_OVER"
          run probe "^FLEX" python3 $KIT/flex_probe.py "$M/gemma" 16 1024 16 64 ;;
    train) mk .gpu/smol "$M/smol" "$SMOL_OVER"
          run train "-v:warn|WARN|Warn|Loading weights" python3 benchmarks/train.py --device $DEV \
            --model "$M/smol" $TRAIN --threads $THREADS --quiet ;;
    *)    echo "unknown phase '$p' (tests sbs0 nad sbs5 big attn probe train)" >&2; exit 2 ;;
  esac
done
echo "PHASE end $(el)s"
[ -z "$SOFT_FAILED" ] || { echo "FAILED (the phases went on):$SOFT_FAILED" >&2; exit 1; }
