#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. scripts/test.sh -L unit). UNIF_TORCH=pypi tests build-pypi/
# (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/toolchain.sh
# Test-only package: python3-torch provides `torchrun`, which one multi-process test launches (the
# pypi toolchain uses the wheel's own torchrun).
if [ "$UNIF_TORCH" = debian ] && ! command -v torchrun >/dev/null; then
  echo "[test] installing python3-torch (torchrun for the multi-process test)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
scripts/setup.sh
cd "$BUILD_DIR"
# Every unif process (and test executable) started without OMP_WAIT_POLICY re-executes itself once to
# set it (framework/common/runtime.cpp), paying LibTorch's start-up (about 0.7 s) twice; the suite
# starts a few thousand of them. Set here, the re-exec is left to the tests that run without it
# (unit_runtime, unit_version_cli).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
start=$SECONDS
status=0
# No retries: a test that fails once has found a race or a bug, and says so.
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-1}" "$@" || status=$?
echo "[test] ctest ($UNIF_TORCH LibTorch) took $((SECONDS - start)) s"
exit $status
