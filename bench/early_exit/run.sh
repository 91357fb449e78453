#!/usr/bin/env bash
# Early exit (FastBERT, model.early_exit): the speed / accuracy curve over --exit-threshold U on
# banking77_en (configs/minilm/classification.yaml) and snli_en (configs/minilm/pair_classification.yaml)
# with all-MiniLM-L6-v2 (6 layers). Per set-up: fine-tune (stage 1), train the exits from it
# (stage 2: model.early_exit, encoder and head frozen; 5 epochs at lr 2e-3: only the small exit
# classifiers train), then `unif eval` on the dev set one record at
# a time (training.eval_batch_size 1, where an exit saves the most) for each U: accuracy, the mean
# exit layer, and records/s against the plain model's (no --exit-threshold) in the same run.
# Prints a markdown table.
#
#   bench/early_exit/run.sh                     # both
#   SETUPS=banking77 bench/early_exit/run.sh    # one (banking77 | snli)
#   THRESHOLDS="0 0.2 0.4" bench/early_exit/run.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
need_unif
need_minilm
setups=${SETUPS:-banking77 snli}
thresholds=${THRESHOLDS:-0 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9}
seed=${SEED:-42}
out=$root/.cache/bench-early-exit
mkdir -p "$out"
echo "| data | U | dev accuracy | mean exit layer | records/s | speed-up |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for setup in $setups; do
  case $setup in
    # The first stage as docs/objectives.md's distillation teacher (8 epochs: a confident head).
    banking77) config=configs/minilm/classification.yaml dev=data/banking77_en/dev.jsonl first=(--set training.epochs=8) ;;
    snli) config=configs/minilm/pair_classification.yaml dev=data/snli_en/dev.jsonl first=() ;;
    *) echo "error: unknown setup '$setup' (banking77 | snli)" >&2; exit 2 ;;
  esac
  s1=$out/$setup-$seed-finetuned s2=$out/$setup-$seed-exits
  [ -f "$s1/final/model.safetensors" ] ||
    "$unif" train "$config" --set "output_dir=$s1" --set training.resume=overwrite --set "seed=$seed" "${first[@]}" \
      > "$s1.log" 2>&1 || { cat "$s1.log"; exit 1; }
  [ -f "$s2/final/model.safetensors" ] ||
    "$unif" train "$config" --set "output_dir=$s2" --set training.resume=overwrite --set "seed=$seed" \
      --set model.early_exit=true --set "model.pretrained=$s1/final" --set training.epochs=5 \
      --set training.optimizer.lr=2e-3 > "$s2.log" 2>&1 || { cat "$s2.log"; exit 1; }
  n=$(wc -l < "$dev")
  base=""
  for u in plain $thresholds; do
    flag=()
    [ "$u" = plain ] || flag=(--exit-threshold "$u")
    t0=$(now)
    "$unif" eval --model "$s2/final" --data "$dev" --set training.eval_batch_size=1 "${flag[@]}" > "$out/$setup-$u.json"
    t1=$(now)
    rate=$(python3 -c "print($n / ($t1 - $t0))")
    [ -n "$base" ] || base=$rate
    python3 - "$out/$setup-$u.json" "$setup" "$u" "$rate" "$base" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
u = "none (the head)" if sys.argv[3] == "plain" else sys.argv[3]
layer = f"{m['exit_layer']:.2f}" if "exit_layer" in m else "6"
print(f"| {sys.argv[2]} | {u} | {m['accuracy']:.4f} | {layer} | {float(sys.argv[4]):.1f} | "
      f"{float(sys.argv[4]) / float(sys.argv[5]):.2f}x |")
PY
  done
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores; records/s of the whole \`unif eval\` (model loading included);"
echo "command: bench/early_exit/run.sh (SETUPS='$setups' THRESHOLDS='$thresholds' SEED=$seed)"
