# Sourced by the benchmarks that run HF beside unif (bench/hf_compare/run.sh, bench/growth.sh):
# HF's Torch (Debian's python3-torch) calls the same OpenBLAS as unif's default build, and unif
# sets OPENBLAS_CORETYPE where that OpenBLAS does not know the CPU and falls back to its generic
# kernels (framework/common/runtime.h; 6x slower GEMMs on Intel Emerald Rapids). Both sides get
# the kernel set unif chose: ask the binary (OpenBLAS names its core at load when verbose).
# The caller's own OPENBLAS_CORETYPE stands. The caller sets unif_bin, the unif binary (POSIX sh's
# `.` passes no arguments).
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -x "${unif_bin:-}" ]; then
  unif_blas_core=$(OPENBLAS_VERBOSE=2 "$unif_bin" --version 2>&1 | sed -n 's/^Core: //p' | tail -n 1)
  if [ -n "$unif_blas_core" ]; then
    OPENBLAS_CORETYPE=$unif_blas_core
    export OPENBLAS_CORETYPE
  fi
fi
