#!/usr/bin/env bash
# The GPU checks, unattended, on a machine with NVIDIA GPUs and PyTorch installed, in about
# 8 minutes. Two ways to get the binaries:
#   prepared (the default when .cache/gpu-bundle exists, or GPU_BUNDLE=DIR): scripts/gpu-bundle.sh,
#     run beforehand on a machine with the build (UNIF_TORCH=pypi), collected the binaries built
#     against the pinned torch wheel and the libraries they need; here they run against this
#     machine's installed PyTorch of the same version. No network, no install, no build here.
#   build (no bundle): builds against this machine's PyTorch with UNIF_TORCH=system scripts/setup.sh
#     (needs apt and the CUDA toolkit).
# Then:
#   0. unif --version must show CUDA compiled in and at least EXPECT_GPUS (default 1) GPUs: a
#      machine whose GPU is unusable, or a build that lost CUDA, fails here instead of skipping;
#   1. the cuda tests (CUDA vs CPU kernels, GPU replicas, cross-device losses, GPU dropout streams,
#      masked_lm evaluation, bf16/fp16): each must run; a skip is allowed only for a case that needs
#      more GPUs than are visible;
#   2. training losses per step on cuda:0, on [cuda:0, cuda:0] and in bf16 / fp16 against the same
#      run on the CPU;
#   3. every adversarial method and masked_lm trained a few steps on cuda:0 (exit 0, finite losses);
#   4. resume on cuda:0 with dropout on: straight vs stopped and resumed, final weights bit for bit;
#   5. one BERT-base training-step speed line in fp32 and bf16 (bench_train_step);
#   6. with two or more GPUs: 2 processes (torchrun, NCCL) against 1 process on 2 GPUs.
# Prints what ran and a summary; exit status 0 only when every check ran and passed.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
python=${PYTHON:-python3}
expect_gpus=${EXPECT_GPUS:-1}
summary=()
failed=0
note() { echo "[gpu-check] $*"; summary+=("$*"); }
fail() { note "FAILED: $*"; failed=1; }
finish() {
  echo "[gpu-check] ---- summary ($((SECONDS - start)) s) ----"
  printf '[gpu-check] %s\n' "${summary[@]}"
  [ $failed -eq 0 ] && echo "[gpu-check] all checks passed" || echo "[gpu-check] SOME CHECKS FAILED"
  exit $failed
}

torch_info=$("$python" -c 'import os, torch; print(torch.__version__.split("+")[0], os.path.dirname(torch.__file__),
  torch.cuda.device_count())' 2>/dev/null) ||
  { echo "error: $python cannot import torch; install PyTorch with CUDA or set PYTHON" >&2; exit 2; }
read -r torch_version torch_dir torch_gpus <<< "$torch_info"
note "PyTorch $torch_version at $torch_dir sees $torch_gpus GPU(s)"

bundle=${GPU_BUNDLE:-.cache/gpu-bundle}
if [ -x "$bundle/bin/unif" ]; then
  built_for=$(sed -n 's/^torch \([^+ ]*\).*/\1/p' "$bundle/MANIFEST")
  if [ "$built_for" != "$torch_version" ]; then
    echo "error: $bundle was built against torch $built_for, this machine has $torch_version: rebuild the bundle" \
         "against torch $torch_version (scripts/gpu-bundle.sh) or run without it to build here" >&2
    exit 2
  fi
  export LD_LIBRARY_PATH="$PWD/$bundle/lib:$torch_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  bin="$PWD/$bundle/bin"
  note "binaries: $bundle ($(sed -n 2p "$bundle/MANIFEST"))"
else
  export UNIF_TORCH=system PYTHON="$python" BUILD_DIR=${BUILD_DIR:-build-gpu}
  JOBS=${JOBS:-$(nproc)} scripts/setup.sh || { echo "error: the build against $python's PyTorch failed" >&2; exit 1; }
  bin="$PWD/$BUILD_DIR/bin"
  note "binaries: built here in $BUILD_DIR"
fi
UNIF="$bin/unif"

# 0. CUDA compiled in, GPUs usable.
version=$("$UNIF" --version 2>&1) || { echo "$version"; fail "unif --version does not run"; finish; }
echo "$version"
gpus=$(echo "$version" | sed -n 's/^GPUs: \([0-9]*\).*/\1/p')
echo "$version" | grep -q "^CUDA none" && { fail "this unif was built without CUDA ($(echo "$version" | grep '^CUDA'))"; finish; }
if [ -z "$gpus" ] || [ "$gpus" -lt "$expect_gpus" ]; then
  fail "unif sees ${gpus:-no} GPU(s), expected at least $expect_gpus (EXPECT_GPUS): the GPU is not usable"
  finish
fi
note "unif sees $gpus GPU(s)"

# 1. The cuda tests: every case runs (skips only for a second GPU that is not there).
for t in unit_cuda cuda_engine; do
  log=$(mktemp)
  cases=$("$bin/$t" --list-test-names-only 2>/dev/null | grep -c .)
  if "$bin/$t" > "$log" 2>&1; then
    skipped=$(grep -c "UNIF_SKIPPED_NO_GPU" "$log")
    allowed=0
    [ "$gpus" -lt 2 ] && allowed=$(grep -c "UNIF_SKIPPED_NO_GPU (needs [2-9]" "$log")
    if [ "$cases" -eq 0 ]; then fail "$t: no test case"
    elif [ "$skipped" -gt "$allowed" ]; then fail "$t: $skipped of $cases cases skipped with $gpus GPU(s)"; grep -B2 SKIPPED "$log" | head -20
    else note "$t: $cases cases, $((cases - skipped)) ran, passed"
    fi
  else
    fail "$t"; tail -40 "$log"
  fi
  rm -f "$log"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config="$work/c.yaml"
cat > "$config" <<YAML
task: classification
seed: 1
model:
  vocab: tests/fixtures/tiny-bert-zh/vocab.txt
  bert: {hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 128, max_position_embeddings: 64,
         hidden_dropout_prob: 0.0, attention_probs_dropout_prob: 0.0}
  max_seq_length: 32
data:
  train: data/sib200_zh/train.jsonl
  dev: data/sib200_zh/dev.jsonl
training: {batch_size: 16, max_steps: 6, log_every: 1, eval_every: 6, save_every: 0,
           schedule: {name: constant, warmup_ratio: 0.0}, optimizer: {name: adamw, lr: 1.0e-3}}
parallel: {devices: [cuda:0]}
YAML
train() {  # NAME ARGS...: unif train into $work/NAME; its log in $work/NAME.log
  local name=$1
  shift
  "$UNIF" train "$config" --set output_dir="$work/$name" "$@" > "$work/$name.log" 2>&1
}
losses() { grep '"split":"train"' "$1/metrics.jsonl" | sed 's/.*"loss":\([^,]*\).*/\1/' | tr '\n' ' '; }
# compare A B RTOL: per-step train losses of runs A and B agree within RTOL (relative).
compare() {
  "$python" - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" "$3" <<'PY'
import json, math, sys
a, b = ([json.loads(l)["loss"] for l in open(f) if '"split": "train"' in l or '"split":"train"' in l] for f in sys.argv[1:3])
tol = float(sys.argv[3])
ok = len(a) == len(b) > 0 and all(x is not None and y is not None and math.isfinite(y) and
                                  abs(x - y) <= tol * max(1.0, abs(x)) for x, y in zip(a, b))
print("   ", sys.argv[1].split("/")[-2], a)
print("   ", sys.argv[2].split("/")[-2], b)
sys.exit(0 if ok else 1)
PY
}

# 2. Losses against the CPU.
train cpu --set 'parallel.devices=[cpu]' || { tail -20 "$work/cpu.log"; fail "train on the CPU"; }
for run in "cuda0 1e-4" "cuda00 1e-4 --set parallel.devices=[cuda:0,cuda:0]" "bf16 3e-2 --set training.precision=bf16" \
           "fp16 3e-2 --set training.precision=fp16"; do
  set -- $run
  name=$1 tol=$2
  shift 2
  if train "$name" "$@" && compare cpu "$name" "$tol"; then note "train $name: losses match the CPU's (rtol $tol)"
  else tail -20 "$work/$name.log"; fail "train $name against the CPU"
  fi
done

# 3. Every adversarial method and masked_lm, a few steps on cuda:0.
for method in fgm pgd freelb freeat smart rdrop; do
  if train "adv-$method" --set adversarial.method=$method --set training.max_steps=3 &&
     [ -f "$work/adv-$method/final/COMPLETE" ] && ! losses "$work/adv-$method" | grep -qi "nan\|inf\|null"; then
    note "train $method on cuda:0: passed (losses $(losses "$work/adv-$method"))"
  else tail -20 "$work/adv-$method.log"; fail "train $method on cuda:0"
  fi
done
sed 's/^{"text":"\([^"]*\)".*/\1/' data/sib200_zh/train.jsonl | head -n 200 > "$work/corpus.txt"
if train mlm --set task=masked_lm --set data.train="$work/corpus.txt" --set data.dev=null --set training.max_steps=3 &&
   ! losses "$work/mlm" | grep -qi "nan\|inf"; then
  note "train masked_lm on cuda:0: passed (losses $(losses "$work/mlm"))"
else tail -20 "$work/mlm.log"; fail "train masked_lm on cuda:0"
fi

# 4. Resume with dropout on: straight vs stopped at step 3 and resumed, bit for bit.
export CUBLAS_WORKSPACE_CONFIG=:4096:8  # cuBLAS's deterministic reductions
drop='model.bert.hidden_dropout_prob=0.1'
if train straight --set "$drop" --set training.save_every=3 && train stopped --set "$drop" --set training.max_steps=3 &&
   train stopped --set "$drop" --set training.save_every=3 &&
   cmp -s "$work/straight/final/model.safetensors" "$work/stopped/final/model.safetensors"; then
  note "resume on cuda:0 with dropout: straight = stopped + resumed, bit for bit"
else
  compare straight stopped 0 || true
  fail "resume on cuda:0 with dropout is not exact"
fi
unset CUBLAS_WORKSPACE_CONFIG

# 5. BERT-base speed on cuda:0.
for precision in fp32 bf16; do
  if line=$("$bin/bench_train_step" --device cuda:0 --precision $precision --hidden 768 --layers 12 --heads 12 \
            --intermediate 3072 --vocab 30522 --batch 32 --seq 128 --steps 10 --warmup 3 2>&1); then
    echo "$line"
    note "BERT-base step $precision: $(echo "$line" | grep -o 'step: .*' | head -1); $(echo "$line" | grep -o 'achieved: .*')"
  else echo "$line" | tail -5; fail "bench_train_step $precision on cuda:0"
  fi
done

# 6. Two processes on two GPUs (NCCL) against one process on [cuda:0, cuda:1].
if [ "$gpus" -ge 2 ]; then
  "$UNIF" train "$config" --set output_dir="$work/one" --set 'parallel.devices=[cuda:0, cuda:1]' > "$work/one.log" 2>&1
  "$python" -m torch.distributed.run --no-python --nproc_per_node=2 --master_port=29517 "$UNIF" train "$config" \
      --set output_dir="$work/two" > "$work/two.log" 2>&1
  if compare one two 1e-4; then note "2 processes x 1 GPU (NCCL) = 1 process x 2 GPUs: passed"
  else tail -20 "$work/two.log"; fail "2 processes (NCCL) vs 1 process"
  fi
else
  note "2-process NCCL job: not run ($gpus GPU(s) visible; it needs 2)"
fi
finish
