#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. scripts/test.sh -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
# Test-only package: python3-torch provides `torchrun`, which one multi-process test launches.
if ! command -v torchrun >/dev/null; then
  echo "[test] installing python3-torch (torchrun for the multi-process test)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-1}" "$@"
