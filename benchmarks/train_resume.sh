#!/usr/bin/env bash
# kill -9 during `negbench train`, rerun, and compare with an uninterrupted run of the same
# command: the rerun must resume from the last checkpoint and give the same loss curve and the
# same adapter weights.  Needs the not-a-dataset release (NEGBENCH_NOTADATASET or ../shared/data).
#
#   bash benchmarks/train_resume.sh [WORKDIR]        (about 5 minutes on 2 CPU cores)
set -u
W=${1:-$(mktemp -d -t negbench-resume-XXXX)}
ARGS=(--recipe notadataset --model smollm2 --data 'notadataset[sample=2000]' --max-steps 12
      --set per_device_train_batch_size=8 --set save_steps=4 --set logging_steps=1 --no-eval --quiet)
rm -rf "$W/uninterrupted" "$W/killed"
echo "== uninterrupted"
time negbench train "${ARGS[@]}" --out "$W/uninterrupted" 2>&1 | tail -1
echo "== killed with kill -9 during the step after checkpoint-8"
negbench train "${ARGS[@]}" --out "$W/killed" > "$W/killed.log" 2>&1 &
PID=$!
until [ -f "$W/killed/.adapter.partial/checkpoints/checkpoint-8/trainer_state.json" ]; do
  kill -0 $PID 2>/dev/null || { echo "training ended before checkpoint-8"; exit 1; }
  sleep 1
done
sleep 12
kill -9 $PID; wait $PID 2>/dev/null; echo "killed (exit $?); checkpoints: $(ls "$W/killed/.adapter.partial/checkpoints" | tr '\n' ' ')"
echo "== rerun of the same command"
time negbench train "${ARGS[@]}" --out "$W/killed" 2>&1 | tail -2
python - "$W" <<'PY'
import hashlib, json, sys
w = sys.argv[1]
a, b = (json.load(open(f"{w}/{d}/adapter/negbench_train.json")) for d in ("uninterrupted", "killed"))
print("resumed from:", b["resumed_from"], "| steps:", a["steps"], b["steps"])
ha = {h["step"]: h for h in a["loss_history"]}
hb = {h["step"]: h for h in b["loss_history"]}
print("step  loss (uninterrupted)  loss (killed + rerun)  |Δ loss|  |Δ lr|")
for s in sorted(ha):
    x, y = ha[s], hb[s]
    print(f"{s:4d}  {x['loss']:20.6f}  {y['loss']:21.6f}  {abs(x['loss'] - y['loss']):.1e}  "
          f"{abs(x['learning_rate'] - y['learning_rate']):.1e}")
print("max |Δ loss|:", max(abs(ha[s]["loss"] - hb[s]["loss"]) for s in ha))
sha = [hashlib.sha256(open(f"{w}/{d}/adapter/adapter_model.safetensors", "rb").read()).hexdigest()[:16]
       for d in ("uninterrupted", "killed")]
print("adapter weights sha256:", *sha, "(same)" if sha[0] == sha[1] else "(DIFFERENT)")
PY
