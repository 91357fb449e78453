#!/usr/bin/env bash
# Installs the pinned PyPI torch wheel (and HF transformers and TensorBoard, for the tests that check they read unif's output) (LibTorch with CUDA 13, cuDNN and NCCL, C++11 ABI) and the
# nvidia-* wheels it needs into a virtual environment, by default .cache/venv-pypi (git-ignored;
# UNIF_PYPI_VENV overrides). Used by `UNIF_TORCH=pypi scripts/setup.sh`; does nothing when the
# environment already holds the pin.
#
# The nvidia-* wheels are installed although no GPU is here: libtorch_cuda.so needs them to load
# (cuSPARSELt, cuFile and NVSHMEM are not in the CUDA toolkit, and the wheel's RPATH points at its
# own copies of the rest). About 2.6 GB to download, 4.6 GB installed.
set -euo pipefail
cd "$(dirname "$0")/.."

# transformers (+ tokenizers, sentencepiece, protobuf): HF's own classes read the model directories
# unif writes in tests/regression/test_families.sh; tensorboard: its reader reads the event files of
# training.report_to in tests/regression/test_eval_report.sh (tests that need them skip without them).
PIN="torch==2.11.0 transformers==5.25.0 tokenizers==0.23.3 sentencepiece==0.2.3 protobuf==7.36.2 tensorboard==2.21.0"
venv=${UNIF_PYPI_VENV:-$PWD/.cache/venv-pypi}
stamp="$venv/.unif-pin"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$PIN" ]; then
  exit 0
fi
python=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    echo "[pypi] installing python3-venv"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$venv"
    "$python" -m venv "$venv"
  fi
fi
echo "[pypi] installing $PIN and its CUDA libraries into $venv"
start=$SECONDS
# No pip cache: the environment is the cache (a second copy of the wheels would double the disk).
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install --no-cache-dir --progress-bar off -q $PIN
echo "$PIN" > "$stamp"
echo "[pypi] installed in $((SECONDS - start)) s"
