#!/bin/bash
# On the GPU machine, from the checkout's root, with .gpu/ (made by benchmarks/gpu/prepare.sh) beside it:
#   bash .gpu/kit/run.sh              all phases (about 5 minutes on an H100/H200, model start-up included)
#   PHASES="sbs0 nad" bash .gpu/kit/run.sh
# The scripts run from the checkout (benchmarks/ and benchmarks/gpu/), so a fresher checkout needs no new .gpu/.
# Phases (every number of issue 26's closing note, item 3):
#   sbs0  KoNUBench cloze 0-shot, 1,284 items, Gemma-3 270M shape, vs lm-eval batch 64
#   nad   This is not a Dataset next-token, 20,000 sentences, SmolLM2 shape, vs plain padded batches
#   sbs5  KoNUBench 5-shot seed 1234, 200 items, 270M, vs lm-eval batch 8
#   big   KoNUBench 0-shot, 400 items, Gemma-3 4B shape, vs lm-eval batch 32
#   attn  SDPA vs FlexAttention for the engine (KoNUBench 0-shot, 270M; the attention rule)
#   probe the FlexAttention/SDPA tree-mask probe (16 rows of 2,048 tokens, 270M shape)
# Each side-by-side prints score s (scoring alone), forward s (inside forward calls), % of bf16 peak and GPU busy %.
# Everything it prints also lands in $OUT (nvidia-smi samples in $OUT/smi.csv).
set -u
PHASES=${PHASES:-"sbs0 nad sbs5 big attn"}
T0=$(date +%s); el(){ echo $(( $(date +%s)-T0 )); }
R=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p /tmp/site && cp -r .gpu/site/. /tmp/site/ || exit 1
export PYTHONPATH=/tmp/site:$R/src PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export NEGBENCH_DATA=$R/.gpu/data NEGBENCH_CACHE=/tmp/nbcache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch,transformers,lm_eval,negbench;print('torch',torch.__version__,'transformers',transformers.__version__, 'negbench', negbench.__file__)" || exit 1
git log --oneline -1 2>/dev/null
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 250 > "$OUT/smi.csv" 2>&1 &
for d in gemma smol; do
  [ -f .gpu/$d/tokenizer.json ] || python3 -c "import lzma,sys;open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" .gpu/$d/tokenizer.json.xz .gpu/$d/tokenizer.json
done
KIT=benchmarks/gpu
mk(){ [ -f "$2/model.safetensors" ] || python3 $KIT/mk_model.py "$@" 2>&1 | grep MODEL; }
mk .gpu/smol /tmp/m/smol; mk .gpu/gemma /tmp/m/gemma
SBS="benchmarks/lm_eval_side_by_side.py --device cuda --dtype bfloat16 --f64-check 0 --threads 16"
quiet(){ grep -v -i "warn\|forward_call\|Loading weights"; }
for p in $PHASES; do
  echo "PHASE $p start $(el)s"
  case $p in
    sbs0) python3 $SBS --model /tmp/m/gemma --batch 64 --limit 1284 2>&1 | quiet | tee "$OUT/sbs0.txt" ;;
    nad)  python3 $KIT/nad_sbs.py /tmp/m/smol 20000 512 2>&1 | grep "^NAD" | tee "$OUT/nad.txt" ;;
    sbs5) python3 $SBS --model /tmp/m/gemma --batch 8 --shots 5 --seed 1234 --limit 200 2>&1 | quiet | tee "$OUT/sbs5.txt" ;;
    big)  LT=$(python3 -c "import json;print(json.dumps(['full_attention' if i%6==5 else 'sliding_attention' for i in range(34)]))")
          mk .gpu/gemma /tmp/m/g4b "{\"hidden_size\":2560,\"intermediate_size\":10240,\"num_hidden_layers\":34,\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,\"sliding_window\":1024,\"layer_types\":$LT}" cuda
          python3 $SBS --model /tmp/m/g4b --batch 32 --limit 400 2>&1 | quiet | tee "$OUT/big.txt" ;;
    attn) python3 $KIT/attn_sbs.py /tmp/m/gemma konubench 1284 0 2>&1 | grep "^ATTN" | tee "$OUT/attn.txt" ;;
    probe) python3 $KIT/flex_probe.py /tmp/m/gemma 16 1024 16 64 2>&1 | grep "^FLEX" | tee "$OUT/probe.txt" ;;
  esac
done
echo "PHASE end $(el)s"
kill %1 2>/dev/null
