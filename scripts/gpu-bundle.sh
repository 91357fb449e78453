#!/usr/bin/env bash
# Prepares the GPU check for a machine without network (the lent GPU machines have none, so no
# apt-get and no build there): the binaries of build-pypi/ (built here against the pinned torch
# wheel, scripts/setup.sh with UNIF_TORCH=pypi) and the shared libraries they need that are neither
# Torch's nor CUDA's nor glibc's (yaml-cpp, spdlog, fmt, utf8proc, libzip, libstdc++, ...) go to
# .cache/gpu-bundle/ (git-ignored; about 25 MB), with a manifest naming the torch version they were
# built against. On the GPU machine, scripts/gpu-check.sh runs them against that machine's
# installed PyTorch (the same version), whose libtorch and CUDA libraries it finds itself.
#   scripts/gpu-bundle.sh            # then carry .cache/gpu-bundle to the GPU machine
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-pypi}
out=${GPU_BUNDLE:-.cache/gpu-bundle}
bins=(unif unit_cuda cuda_engine bench_train_step)
for b in "${bins[@]}"; do
  [ -x "$build/bin/$b" ] || { echo "error: $build/bin/$b missing: build it first (UNIF_TORCH=pypi scripts/setup.sh)" >&2; exit 2; }
done
grep -q "UNIF_WITH_CUDA:.*=ON\|CUDA ON" "$build/CMakeCache.txt" 2>/dev/null ||
  "$build/bin/unif" --version | grep -q "CUDA [0-9]" ||
  { echo "error: $build was built without CUDA ($build/bin/unif --version): nothing to check on a GPU" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for b in "${bins[@]}"; do cp "$build/bin/$b" "$out/bin/"; done
# Libraries: what ldd resolves outside the torch wheel (torch, nvidia-*) and outside glibc.
for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v -e '/site-packages/' -e '/libc\.so' -e '/libm\.so' -e '/libdl\.so' -e '/librt\.so' -e '/libpthread\.so' \
          -e '/ld-linux' -e '/libcuda\.so' -e '/libnvidia' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
venv_python=${UNIF_PYPI_VENV:-$PWD/.cache/venv-pypi}/bin/python
torch_version=$("$venv_python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown)
{
  echo "torch $torch_version"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  "$build/bin/unif" --version
} > "$out/MANIFEST"
echo "[gpu-bundle] $out: $(du -sh "$out" | cut -f1), torch $torch_version; carry it to the GPU machine and run scripts/gpu-check.sh there"
