#!/usr/bin/env bash
# The GPU checks, unattended, on a machine with NVIDIA GPUs, the CUDA toolkit and PyTorch installed
# (python3 -c 'import torch'; PYTHON overrides): builds unif against that PyTorch into build-gpu/
# (UNIF_TORCH=system, scripts/setup.sh), then runs
#   1. ctest -L cuda: CUDA vs CPU kernels, GPU replica invariance (cuda:0; two replicas sharing it;
#      [cuda:0, cuda:1] through NCCL when two GPUs are visible), bf16 / fp16 forward passes;
#   2. a short training job on cuda:0 (fp32, then bf16, then fp16 with loss scaling) on the demo data;
#   3. with two or more GPUs: the same job as 2 processes (torchrun, NCCL) against 1 process.
# Prints what ran, what was skipped and why, and a summary; exit status 0 only when everything that
# ran passed. Budget: about 10 minutes on 16 cores (the build is most of it; ccache makes reruns fast).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
python=${PYTHON:-python3}
export UNIF_TORCH=system PYTHON="$python" BUILD_DIR=${BUILD_DIR:-build-gpu}
summary=()
failed=0
note() { echo "[gpu-check] $*"; summary+=("$*"); }

"$python" -c 'import torch; print("[gpu-check] PyTorch", torch.__version__, "CUDA", torch.version.cuda,
  "GPUs", torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])' ||
  { echo "error: $python cannot import torch; install PyTorch with CUDA or set PYTHON" >&2; exit 2; }
gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())')
[ "$gpus" -ge 1 ] || note "no GPU visible: the cuda tests will report themselves skipped"

if ! JOBS=${JOBS:-$(nproc)} scripts/setup.sh; then
  echo "error: the build against $python's PyTorch failed (see above)" >&2
  exit 1
fi
"$BUILD_DIR/bin/unif" --version

# 1. The cuda label.
if (cd "$BUILD_DIR" && ctest -L cuda --output-on-failure --timeout 300 -j 2); then
  note "ctest -L cuda: passed ($(cd "$BUILD_DIR" && ctest -L cuda -N | tail -1))"
else
  note "ctest -L cuda: FAILED"; failed=1
fi

# 2. Short training jobs on cuda:0 (tiny model from the fixture vocabulary, 6 steps each).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config="$work/c.yaml"
cat > "$config" <<YAML
task: classification
seed: 1
model:
  vocab: tests/fixtures/tiny-bert-zh/vocab.txt
  bert: {hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 128, max_position_embeddings: 64}
  max_seq_length: 32
data:
  train: data/sib200_zh/train.jsonl
  dev: data/sib200_zh/dev.jsonl
training: {batch_size: 16, max_steps: 6, log_every: 2, save_every: 0, schedule: {name: constant, warmup_ratio: 0.0}}
parallel: {devices: [cuda:0]}
YAML
[ -f data/sib200_zh/train.jsonl ] || { echo "error: data/sib200_zh/train.jsonl missing" >&2; exit 1; }
if [ "$gpus" -ge 1 ]; then
  for precision in fp32 bf16 fp16; do
    out="$work/run-$precision"
    if "$BUILD_DIR/bin/unif" train "$config" --set output_dir="$out" --set training.precision=$precision > "$out.log" 2>&1 &&
       [ -f "$out/final/COMPLETE" ]; then
      note "train on cuda:0 ($precision): passed; last line: $(grep '"split":"train"' "$out/metrics.jsonl" | tail -1)"
    else
      note "train on cuda:0 ($precision): FAILED"; tail -20 "$out.log"; failed=1
    fi
  done
else
  note "train on cuda:0: skipped (no GPU)"
fi

# 3. Two processes on two GPUs (NCCL) must give the loss curve of one process on [cuda:0, cuda:1].
torchrun="$(dirname "$(command -v "$python")")/torchrun"
[ -x "$torchrun" ] || torchrun=$(command -v torchrun || true)
if [ "$gpus" -ge 2 ] && [ -n "$torchrun" ]; then
  one="$work/one" two="$work/two"
  "$BUILD_DIR/bin/unif" train "$config" --set output_dir="$one" --set 'parallel.devices=[cuda:0, cuda:1]' > "$one.log" 2>&1
  "$torchrun" --no-python --nproc_per_node=2 --master_port=29517 "$BUILD_DIR/bin/unif" train "$config" \
      --set output_dir="$two" > "$two.log" 2>&1
  if "$python" - "$one/metrics.jsonl" "$two/metrics.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f) if '"split":"train"' in l] for f in sys.argv[1:3])
print("[gpu-check] 1 process:", a, "2 processes:", b)
sys.exit(0 if a and len(a) == len(b) and all(abs(x - y) <= 1e-4 * max(1.0, abs(x)) for x, y in zip(a, b)) else 1)
PY
  then note "2 processes x 1 GPU (NCCL) = 1 process x 2 GPUs: passed"
  else note "2 processes (NCCL) vs 1 process: FAILED"; tail -20 "$two.log"; failed=1
  fi
else
  note "2-process NCCL job: skipped (needs 2 GPUs and torchrun; GPUs: $gpus)"
fi

echo "[gpu-check] ---- summary ($((SECONDS - start)) s) ----"
printf '[gpu-check] %s\n' "${summary[@]}"
exit $failed
