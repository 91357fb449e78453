#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. scripts/test.sh -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -j "${CTEST_JOBS:-1}" "$@"
