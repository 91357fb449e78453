#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang + ASan + UBSan) into build-fuzz/ and runs each
# for SECONDS (default 10) on its seed corpus. See docs/reliability.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]     e.g. scripts/fuzz.sh 600 torch_bin safetensors
#
# Per target: seeds are tests/fuzz/corpus/<folders>/ (read only); what a run adds to the corpus
# goes to build-fuzz/corpus/<target>/ and is kept between runs; an input that crashes, hangs
# (> FUZZ_TIMEOUT s, default 10), leaks or breaks a check goes to build-fuzz/findings/<target>/.
# Each target prints one `[fuzz]` line (executions, corpus, findings); the script fails when any
# target found something. A finding becomes a regression input: copy it into the target's corpus
# folder under a name that says what it does (the unit tier replays every corpus file,
# tests/unit/test_fuzz_corpus.cpp) and fix the code until the replay passes.
# FUZZ_JOBS=N runs N targets at a time (default 1). FUZZ_ARGS adds libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(config model_meta jsonl tsv safetensors torch_bin hf_config vocab tokenizer family_tokenizers bpe_files spm_model serve_request tei_request)

# Debian's clang and its libFuzzer runtime (libclang-rt-dev), and the libraries the parsers use.
missing=()
for p in clang libclang-rt-dev cmake ninja-build ccache libtorch-dev libyaml-cpp-dev nlohmann-json3-dev \
         libutf8proc-dev libzip-dev pkg-config libcpp-httplib-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[fuzz] installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD=build-fuzz
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR="$PWD"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$SECONDS
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S tests/fuzz -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE= "${launcher[@]}" >/dev/null
fi
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target $(printf 'fuzz_%s ' "${targets[@]}")
echo "[fuzz] built $BUILD in $((SECONDS - start)) s"

# Seed folders of each target (tests/fuzz/targets.cpp lists the same ones), plus existing files
# that make good seeds.
seeds() {
  local c=tests/fuzz/corpus
  case "$1" in
    config) echo "$c/config configs" ;;
    jsonl) echo "$c/jsonl_data $c/span_data" ;;
    tsv) echo "$c/tsv_data" ;;
    family_tokenizers) echo "$c/tokenizer" ;;
    *) echo "$c/$1" ;;
  esac
}
# Largest generated input: data lines and configs are short; archives need room.
max_len() { case "$1" in torch_bin | safetensors | spm_model) echo 16384 ;; *) echo 4096 ;; esac; }

export OMP_NUM_THREADS=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
run_one() {
  local t=$1 log="$BUILD/logs/$1.log"
  mkdir -p "$BUILD/corpus/$t" "$BUILD/findings/$t" "$BUILD/logs"
  local rc=0
  # shellcheck disable=SC2046,SC2086
  "$BUILD/fuzz_$t" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
    -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$BUILD/findings/$t/" ${FUZZ_ARGS:-} \
    "$BUILD/corpus/$t" $(seeds "$t") >"$log" 2>&1 || rc=$?
  local execs corpus found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$BUILD/corpus/$t" -type f | wc -l)
  found=$(find "$BUILD/findings/$t" -type f | wc -l)
  echo "[fuzz] $t: ${execs:-?} executions in ${seconds} s, corpus $corpus, findings $found (exit $rc; log $log)"
  [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]
}
failed=()
jobs_max=${FUZZ_JOBS:-1}
if [ "$jobs_max" -le 1 ]; then
  for t in "${targets[@]}"; do run_one "$t" || failed+=("$t"); done
else
  declare -A pids=()
  for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 1; done
    run_one "$t" & pids[$t]=$!
  done
  for t in "${!pids[@]}"; do wait "${pids[$t]}" || failed+=("$t"); done
fi
echo "[fuzz] fuzzing took $((SECONDS - start)) s in all (build included)"
if ((${#failed[@]})); then
  echo "error: fuzzing found inputs that fail in: ${failed[*]} (see build-fuzz/findings/ and the logs)" >&2
  exit 1
fi
