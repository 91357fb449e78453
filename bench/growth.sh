#!/usr/bin/env bash
# How a training step's cost grows with hidden size, sequence length and replicas, unif against HF.
# For each point of the grid, one process each (so each has its own peak RSS):
#   unif, 1 replica x all cores   build/bin/bench_parallel --replicas 1
#   unif, 2 replicas x 1 thread   build/bin/bench_parallel --replicas 2
#   HF,   all cores               bench/hf_train_step.py (BertForSequenceClassification, AdamW)
# The same model on both sides: random-init BERT, heads hidden/64, intermediate 4 x hidden, vocab
# 30522, dropout 0.1, 2 labels, batch B x seq L, a step = forward + backward + clip + AdamW.
# Prints a markdown table (samples/s, peak MB, unif's best over HF).
#
#   bench/growth.sh                         # the default grid below (about 15 min on 2 idle cores)
#   GRID="384:128 768:128" LAYERS=2 bench/growth.sh
#
# Needs build/bin/bench_parallel and the HF virtual environment of bench/hf_compare
# (bench/hf_compare/run.sh --help makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${HF_PYTHON:-.cache/hf-venv/bin/python}
BENCH=${BENCH_PARALLEL:-build/bin/bench_parallel}
[ -x "$BENCH" ] || { echo "error: $BENCH not built (cmake --build build --target bench_parallel)" >&2; exit 1; }
[ -x "$PY" ] || { echo "error: $PY missing (bench/hf_compare/run.sh --help makes the virtual environment)" >&2; exit 1; }
LAYERS=${LAYERS:-2}
BATCH=${BATCH:-16}
STEPS=${STEPS:-3}
WARMUP=${WARMUP:-1}
# hidden:seq points: hidden 128-768 at seq 128, then seq 64-512 at hidden 384 and 768.
GRID=${GRID:-"128:128 256:128 384:128 512:128 768:128 384:64 384:256 384:512 768:64 768:256 768:512"}
cores=$(nproc)
# The same OpenBLAS kernels for HF as unif runs with (see bench/blas_core.sh).
unif_bin=build/bin/unif
source bench/blas_core.sh

# peak RSS (MB) of a command, its stdout to $2
peak() {
  local out=$1; shift
  /usr/bin/time -f '%M' -o "$out.rss" "$@" > "$out" 2> "$out.err" || { cat "$out.err" >&2; return 1; }
  echo $(( $(tail -1 "$out.rss") / 1024 ))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "BERT L$LAYERS, batch $BATCH, heads hidden/64, intermediate 4 x hidden, vocab 30522, dropout 0.1;" \
     "$STEPS steps after $WARMUP warm-up; $cores cores; load $(cut -d' ' -f1 /proc/loadavg) at start"
echo
echo "| hidden | seq | unif 1 replica samples/s | MB | unif 2 replicas samples/s | MB | HF samples/s | MB | unif best / HF | load |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for point in $GRID; do
  h=${point%%:*} l=${point##*:}
  common=(--hidden "$h" --layers "$LAYERS" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP")
  load=$(cut -d' ' -f1 /proc/loadavg)
  m1=$(peak "$tmp/u1" "$BENCH" "${common[@]}" --length "$l" --threads "$cores" --replicas 1)
  s1=$(awk '/^1 replica/ {print $(NF-5)}' "$tmp/u1")
  m2=$(peak "$tmp/u2" "$BENCH" "${common[@]}" --length "$l" --threads "$cores" --replicas 2)
  s2=$(awk '/replicas x 1 thread/ {print $(NF-5)}' "$tmp/u2")
  mh=$(OMP_WAIT_POLICY=PASSIVE peak "$tmp/hf" "$PY" bench/hf_train_step.py "${common[@]}" --seq "$l" \
       --heads $((h / 64 > 0 ? h / 64 : 1)) --intermediate $((4 * h)) --vocab 30522 --dropout 0.1)
  sh=$(awk '/samples\/s/ {for (i = 1; i < NF; i++) if ($(i + 1) == "samples/s") {print $i; exit}}' "$tmp/hf")
  ratio=$(awk -v a="$s1" -v b="$s2" -v c="$sh" 'BEGIN {m = a > b ? a : b; printf "%.2fx", m / c}')
  echo "| $h | $l | $s1 | $m1 | $s2 | $m2 | $sh | $mh | $ratio | $load |"
done
