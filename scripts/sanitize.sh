#!/usr/bin/env bash
# Builds the libraries, `unif` and the tests of the chosen tiers with AddressSanitizer and
# UndefinedBehaviorSanitizer (Debian's GCC, -O1) into build-asan/ and runs those tiers through
# ctest. Any sanitizer report fails its test. See docs/reliability.md.
#
# Each Catch executable is one ctest (UNIF_TEST_PER_EXECUTABLE): a process that maps LibTorch under
# ASan takes about 2 s to start and end, which once per case (186 in the unit tier) was most of the
# tier's time. A failing executable prints its failing cases; run one alone with Catch's filter,
# e.g. `build-asan/bin/unit_config "an unknown key*"`.
#
#   scripts/sanitize.sh [TIER ...]     tiers: unit parity regression (default: all three)
#
# Only what the tiers need is compiled (no benchmarks, no other tier's tests). LibTorch itself is
# not instrumented; the few reports that belong to it are suppressed in scripts/sanitize/*.supp
# (each entry says why). Extra ctest arguments: SANITIZE_CTEST_ARGS (e.g. "-R unit_config", an executable).
set -euo pipefail
cd "$(dirname "$0")/.."
tiers=("$@")
((${#tiers[@]})) || tiers=(unit parity regression)
BUILD=build-asan

# The packages setup.sh installs (Debian toolchain), without building build/.
SETUP_ONLY=1 scripts/setup.sh

targets=(unif)
for tier in "${tiers[@]}"; do
  [ -f "tests/$tier/CMakeLists.txt" ] || { echo "error: no test tier '$tier' (expected unit, parity or regression)" >&2; exit 2; }
  # The Catch executables of the tier: every unif_test(<name> ...) in its CMakeLists.txt.
  targets+=($(sed -n 's/^ *unif_test(\([A-Za-z0-9_]*\).*/\1/p' "tests/$tier/CMakeLists.txt"))
  [ "$tier" = regression ] && targets+=(textcnn_example)
done
[ -f "$BUILD/build.ninja" ] || SANITIZE_CONFIGURE=1
grep -q '^CMAKE_BUILD_TYPE:STRING=Sanitize$' "$BUILD/CMakeCache.txt" 2>/dev/null || SANITIZE_CONFIGURE=1
grep -q '^UNIF_TEST_PER_EXECUTABLE:BOOL=ON$' "$BUILD/CMakeCache.txt" 2>/dev/null || SANITIZE_CONFIGURE=1

export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR="$PWD"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
start=$SECONDS
if [ -n "${SANITIZE_CONFIGURE:-}" ]; then
  # CMAKE_BUILD_TYPE Sanitize: a type of our own with no flags of its own (CMAKE_CXX_FLAGS_SANITIZE is
  # unset), so the flags above hold, without Release's -O3 -DNDEBUG and with assert()s on. An empty
  # type is not enough: CMakeLists.txt then picks Release.
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_COMPILER=g++ "${launcher[@]}" \
    -DUNIF_BUILD_BENCH=OFF -DUNIF_TEST_PER_EXECUTABLE=ON -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    >/dev/null
fi
# Keep the tiers' executables this configuration has (unit_cuda exists only with CUDA).
have=$(ninja -C "$BUILD" -t targets all | cut -d: -f1)
wanted=()
for t in "${targets[@]}"; do grep -qx "$t" <<<"$have" && wanted+=("$t"); done
targets=("${wanted[@]}")

# A report ends the process with a failure, so ctest sees it. Set for the build too: it runs each
# Catch executable to list its tests.
supp="$PWD/scripts/sanitize"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="suppressions=$supp/ubsan.supp:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
echo "[sanitize] building ${targets[*]}"
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
echo "[sanitize] built $BUILD in $((SECONDS - start)) s"

labels=$(IFS='|'; echo "${tiers[*]}")
cd "$BUILD"
start=$SECONDS
status=0
# shellcheck disable=SC2086
ctest --output-on-failure --timeout 1800 -j "${CTEST_JOBS:-1}" -L "^($labels)\$" ${SANITIZE_CTEST_ARGS:-} || status=$?
echo "[sanitize] ctest (${tiers[*]}) under ASan+UBSan took $((SECONDS - start)) s"
exit $status
