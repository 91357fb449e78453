#!/usr/bin/env bash
# Shared set-up of demo.sh and test.sh: install what unif needs (only what is missing), configure
# and build (Release) with every core. Re-running is incremental.
#
# Two toolchains, one source tree (UNIF_TORCH selects):
#   debian (default)  Debian's LibTorch 1.13 (CPU, libtorch-dev), built into build/
#   pypi              the pinned PyPI torch wheel's LibTorch (CUDA, cuDNN, NCCL; scripts/pypi_torch.sh
#                     installs it into a git-ignored virtual environment), built into build-pypi/
#                     against the CUDA toolkit in CUDA_HOME (default /usr/local/cuda)
#   system            the PyTorch already installed for python3 (PYTHON overrides), e.g. on a GPU
#                     machine (scripts/gpu-check.sh), built into build-gpu/ for the GPUs it sees
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/toolchain.sh
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config libgloo-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libutf8proc-dev libcli11-dev libzip-dev
  libcpp-httplib-dev curl   # `unif serve`'s HTTP library (see CMakeLists.txt); curl for its tests
  clang-format              # the `format` test (scripts/format.sh --check)
)
[ "$UNIF_TORCH" = debian ] && PACKAGES+=(libtorch-dev libopenblas0-pthread)
# UNIF_EXTRA_PACKAGES: more Debian packages in the same apt run (.ci/run installs the tests' ones
# here, so that no second apt runs beside the PyPI download it starts next).
read -r -a extra_packages <<< "${UNIF_EXTRA_PACKAGES:-}"
PACKAGES+=("${extra_packages[@]}")
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# SETUP_ONLY=1: install, nothing else (scripts/sanitize.sh and fuzz.sh build elsewhere).
[ -n "${SETUP_ONLY:-}" ] && exit 0
JOBS=${JOBS:-$(nproc)}
torch_args=()
if [ "$UNIF_TORCH" != debian ]; then
  arch=9.0
  if [ "$UNIF_TORCH" = pypi ]; then
    scripts/pypi_torch.sh
    python="${UNIF_PYPI_VENV:-$PWD/.cache/venv-pypi}/bin/python"
  else
    python=${PYTHON:-python3}
    "$python" -c 'import torch' 2>/dev/null || { echo "error: UNIF_TORCH=system: $python cannot import torch (set PYTHON)" >&2; exit 2; }
    # The GPUs this machine has (e.g. 9.0 for an H200), else the H200's.
    arch=$("$python" -c 'import torch; c = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else (9, 0); print(f"{c[0]}.{c[1]}")')
  fi
  torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  cuda=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda/bin/nvcc" ] || { echo "error: $cuda/bin/nvcc not found: UNIF_TORCH=$UNIF_TORCH needs the CUDA toolkit (set CUDA_HOME)" >&2; exit 2; }
  torchrun="$(dirname "$python")/torchrun"
  [ -x "$torchrun" ] || torchrun=$(command -v torchrun || true)
  # TORCH_CUDA_ARCH_LIST: the GPUs we target (H200 = sm_90); without it Torch's CMake asks the
  # (absent) GPU. TORCH_LIBRARY, c10_LIBRARY: TorchConfig's find_library would find Debian's
  # libtorch-dev first where both are installed. torchrun: the wheel's own, for the multi-process test.
  torch_args=(-DCMAKE_PREFIX_PATH="$torch_dir/share/cmake" -DTORCH_LIBRARY="$torch_dir/lib/libtorch.so"
              -Dc10_LIBRARY="$torch_dir/lib/libc10.so" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc"
              -DCUDAToolkit_ROOT="$cuda" -DTORCH_CUDA_ARCH_LIST="$arch")
  [ -n "$torchrun" ] && torch_args+=(-DUNIF_TORCHRUN="$torchrun")
fi
# Debian's toolchain (GCC 12, the default build and CI's first) treats warnings in unif's own code as
# errors; other compilers warn.
[ "$UNIF_TORCH" = debian ] && torch_args+=(-DUNIF_WERROR=ON)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR="$PWD"   # clones in other folders share the cache
# UNIF_CMAKE_ARGS: more configure arguments, e.g. -DUNIF_BUILD_BENCH=OFF (read when the build folder
# is first configured, as the arguments of this script).
read -r -a extra_args <<< "${UNIF_CMAKE_ARGS:-}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${torch_args[@]}" \
    "${extra_args[@]}" "$@"
elif [ -n "${torchrun:-}" ] && ! grep -qxF "UNIF_TORCHRUN:FILEPATH=$torchrun" "$BUILD_DIR/CMakeCache.txt"; then
  # A build folder configured before (or with another torchrun on PATH): Debian's torch 1.13
  # torchrun serves a store that LibTorch 2.x's client rejects, so the multi-process test needs the
  # wheel's own.
  cmake "$BUILD_DIR" -DUNIF_TORCHRUN="$torchrun" > /dev/null
fi
# UNIF_BUILD_TARGETS: build only these targets (default all), e.g. "tests_unit tests_parity" (the
# tests of those labels and `unif`, see tests/CMakeLists.txt).
read -r -a targets <<< "${UNIF_BUILD_TARGETS:-}"
((${#targets[@]})) && targets=(--target "${targets[@]}")
echo "[setup] building $BUILD_DIR ($UNIF_TORCH LibTorch) with $JOBS jobs${UNIF_BUILD_TARGETS:+: $UNIF_BUILD_TARGETS}"
start=$SECONDS
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
echo "[setup] built $BUILD_DIR in $((SECONDS - start)) s"
