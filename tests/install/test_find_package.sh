#!/bin/sh
# `cmake --install` then find_package(unif) from a separate project (C++14 by its own settings: the
# exported targets carry cxx_std_17): it configures, builds, links unif::framework, and runs
# `consumer` (tokenizes and loads the fixture checkpoint) and `train_api`, docs/cpp-api.md's example,
# on configs/demo.yaml for a few steps: every save leaves a complete directory, config.yaml is written;
# `predict_api`, docs/cpp-api.md's inference example, answers as the installed `unif predict` does.
# Usage: test_find_package.sh BUILD_DIR SOURCE_DIR [CMAKE_ARG...] (extra arguments configure the
# consumer: the CUDA compiler and architectures of a CUDA build)
set -eu
build=$1
src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
grep -q 'INTERFACE_COMPILE_FEATURES "cxx_std_17"' "$tmp"/prefix/lib*/cmake/unif/unifTargets.cmake ||
  { echo "FAIL: the exported targets do not carry cxx_std_17"; exit 1; }
# Public headers only: <unif/unif.h> and what it includes; an internal header of the trainer is not there.
inc=$tmp/prefix/include/unif
test -f "$inc/unif.h" || { echo "FAIL: include/unif/unif.h not installed"; exit 1; }
for internal in framework/train/run_log.h framework/train/checkpoints.h framework/parallel/process_group.h; do
  test -f "$src/$internal" || { echo "FAIL: $internal is not in the source tree (update this test)"; exit 1; }
  ! test -e "$inc/$internal" || { echo "FAIL: internal header $internal was installed"; exit 1; }
done
echo "installed headers: $(find "$inc" -name '*.h' ! -path "$inc/unif.h" | grep -c '') of $(cd "$src" && find framework models adversarial -name '*.h' | grep -c '') (+ unif.h)"
# The consumer's own code at -O1: it only calls the installed (optimized) libraries, and compiles faster.
cmake -S "$src/tests/install/consumer" -B "$tmp/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/b" > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
out=$("$tmp/b/consumer" "$src/tests/fixtures/tiny-bert-zh")
echo "$out"
echo "$out" | grep -q "今 天 天 气 很 好" && echo "$out" | grep -q "params: 41"
# The inference example: the JSON lines of unif::Predictor equal the installed `unif predict`'s.
"$tmp/b/predict_api" "$src/tests/fixtures/tiny-bert-zh" "今天天气很好" "明天下雨" > "$tmp/api.jsonl" 2> "$tmp/api.err" ||
  { cat "$tmp/api.err"; echo "FAIL: predict_api exited $?"; exit 1; }
printf '{"text": "今天天气很好"}\n{"text": "明天下雨"}\n' |
  "$tmp/prefix/bin/unif" predict --model "$src/tests/fixtures/tiny-bert-zh" --input - --top-k 2 > "$tmp/cli.jsonl"
cmp -s "$tmp/api.jsonl" "$tmp/cli.jsonl" && grep -q '"top"' "$tmp/api.jsonl" ||
  { cat "$tmp/api.jsonl" "$tmp/cli.jsonl"; echo "FAIL: predict_api's answers differ from unif predict's"; exit 1; }
echo "predict_api: ok ($(head -1 "$tmp/api.err"))"
# The API example, run as the doc says, from the repository root (relative paths in the config).
cd "$src"
"$tmp/b/train_api" configs/demo.yaml --set output_dir="$tmp/run" --set training.max_steps=6 \
    --set training.save_every=3 --set training.eval_every=3 --set training.log_every=3 2> "$tmp/train.log" ||
  { cat "$tmp/train.log"; echo "FAIL: train_api exited $?"; exit 1; }
for d in checkpoints/step-3 checkpoints/step-6 best final; do
  test -f "$tmp/run/$d/COMPLETE" && test -f "$tmp/run/$d/model.safetensors" ||
    { cat "$tmp/train.log"; echo "FAIL: train_api left no complete $d"; exit 1; }
done
test -f "$tmp/run/checkpoints/step-6/trainer_state.json" && test -s "$tmp/run/config.yaml" &&
  grep -q '"split": *"dev"' "$tmp/run/metrics.jsonl" ||
  { ls -R "$tmp/run"; echo "FAIL: train_api's output_dir lacks trainer state, config.yaml or dev metrics"; exit 1; }
echo "train_api: ok ($(grep -c '' "$tmp/run/metrics.jsonl") metrics lines)"
